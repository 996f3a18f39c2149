#include "capture/writer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/atomic_file.h"

struct capture_writer {
	const char *path;
	struct atomic_file *file;
	int err; /* the first write error */
};

static FILE *stream(struct capture_writer *w)
{
	return atomic_file__stream(w->file);
}

int capture_writer__open(const char *path, struct capture_writer **out)
{
	struct capture_writer *w = calloc(1, sizeof(*w));
	int err;

	if (!w)
		return -ENOMEM;
	w->path = path;
	err = atomic_file__open(path, 0600, &w->file);
	if (!err)
		err = capture__write_header(stream(w));
	if (err) {
		fprintf(stderr, "hprof: cannot write %s: %s\n", path, strerror(-err));
		capture_writer__free(w);
		return err;
	}
	*out = w;
	return 0;
}

void capture_writer__maps(struct capture_writer *w, uint32_t pid, const char *text, size_t len)
{
	if (!w->err)
		w->err = capture__write_maps(stream(w), pid, text, len);
}

void capture_writer__sample(struct capture_writer *w, const struct hprof_sample *s, size_t len)
{
	if (!w->err)
		w->err = capture__write_sample(stream(w), s, len);
}

void capture_writer__map_event(struct capture_writer *w, const struct map_event *e,
			       const char *path)
{
	if (!w->err)
		w->err = capture__write_map_event(stream(w), e, path);
}

void capture_writer__python_memory(struct capture_writer *w, uint32_t pid, uint64_t addr,
				   const void *bytes, size_t len)
{
	if (!w->err)
		w->err = capture__write_python_memory(stream(w), pid, addr, bytes, len);
}

void capture_writer__code(struct capture_writer *w, uint32_t pid, uint64_t addr,
			  const uint8_t *bytes, size_t len)
{
	if (!w->err)
		w->err = capture__write_code(stream(w), pid, addr, bytes, len);
}

void capture_writer__perf_map(struct capture_writer *w, uint32_t pid, const char *text,
			      size_t len)
{
	if (!w->err)
		w->err = capture__write_perf_map(stream(w), pid, text, len);
}

void capture_writer__beam_exit(struct capture_writer *w, uint32_t pid, uint64_t exit)
{
	if (!w->err)
		w->err = capture__write_beam_exit(stream(w), pid, exit);
}

void capture_writer__gdb_jit_object(struct capture_writer *w, uint32_t pid, uint64_t addr,
				    const uint8_t *bytes, size_t len)
{
	if (!w->err)
		w->err = capture__write_gdb_jit_object(stream(w), pid, addr, bytes, len);
}

void capture_writer__gdb_jit_drop(struct capture_writer *w, uint32_t pid, uint64_t addr,
				  uint64_t size)
{
	if (!w->err)
		w->err = capture__write_gdb_jit_drop(stream(w), pid, addr, size);
}

void capture_writer__jitdump(struct capture_writer *w, uint32_t pid, uint64_t offset,
			     const uint8_t *bytes, size_t len)
{
	if (!w->err)
		w->err = capture__write_jitdump(stream(w), pid, offset, bytes, len);
}

/* So a report can tell when a file changed since the capture. */
static int write_build_ids(struct capture_writer *w, struct module_registry *reg)
{
	int err = 0;

	for (uint32_t i = 0; !err && i < module_registry__count(reg); i++) {
		struct module *mod = module_registry__by_id(reg, MODULE_FIRST_FILE + i);
		const uint8_t *build_id;
		uint32_t len;

		if (!mod->syms || !(len = elf_symbols__build_id(mod->syms, &build_id)))
			continue;
		err = capture__write_build_id(stream(w), build_id, len, mod->path);
	}
	return err;
}

int capture_writer__finish(struct capture_writer *w, struct module_registry *reg,
			   const struct capture_info *info)
{
	int err = w->err;

	if (!err)
		err = write_build_ids(w, reg);
	if (!err)
		err = capture__write_info(stream(w), info);
	if (!err) {
		err = atomic_file__commit(w->file);
		w->file = NULL;
	}
	if (err)
		fprintf(stderr, "hprof: cannot write %s: %s\n", w->path, strerror(-err));
	capture_writer__free(w);
	return err;
}

void capture_writer__free(struct capture_writer *w)
{
	if (!w)
		return;
	atomic_file__abort(w->file);
	free(w);
}
