#include "capture/writer.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/atomic_file.h"

/* Kernel frame addresses are kept sorted and unique from here on, compacted when the array
 * fills: memory grows with the distinct addresses, not with the samples. */
#define KERNEL_IPS_MIN 4096

struct capture_writer {
	const char *path;
	struct atomic_file *file;
	int err; /* the first write error */
	/* the kernel frames' addresses (and each caller's call instruction, addr - 1), whose
	 * functions' names go into the capture */
	uint64_t *kernel_ips;
	size_t nr_kernel_ips, kernel_ips_cap;
};

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void compact_kernel_ips(struct capture_writer *w)
{
	size_t n = 0;

	qsort(w->kernel_ips, w->nr_kernel_ips, sizeof(*w->kernel_ips), compare_u64);
	for (size_t i = 0; i < w->nr_kernel_ips; i++) {
		if (n == 0 || w->kernel_ips[n - 1] != w->kernel_ips[i])
			w->kernel_ips[n++] = w->kernel_ips[i];
	}
	w->nr_kernel_ips = n;
}

/* Room for one more address: compacted first, grown when compacting freed less than half.
 * Returns 0 or -ENOMEM. */
static int kernel_ips_room(struct capture_writer *w)
{
	uint64_t *bigger;
	size_t cap;

	if (w->nr_kernel_ips < w->kernel_ips_cap)
		return 0;
	compact_kernel_ips(w);
	if (w->nr_kernel_ips < w->kernel_ips_cap / 2)
		return 0;
	cap = w->kernel_ips_cap ? w->kernel_ips_cap * 2 : KERNEL_IPS_MIN;
	bigger = realloc(w->kernel_ips, cap * sizeof(*bigger));
	if (!bigger)
		return -ENOMEM;
	w->kernel_ips = bigger;
	w->kernel_ips_cap = cap;
	return 0;
}

/* The sample's kernel frames, as the session names them: the leaf at its address, each
 * caller at its call instruction. */
static int add_kernel_ips(struct capture_writer *w, const struct hprof_sample *s, size_t len)
{
	if (!hprof_sample__well_formed(s, len))
		return 0;
	for (uint32_t i = 0; i < s->nr_kernel; i++) {
		uint64_t ip = hprof_sample__kernel_ip(s, i);

		if (kernel_ips_room(w))
			return -ENOMEM;
		w->kernel_ips[w->nr_kernel_ips++] = i > 0 ? ip - 1 : ip;
	}
	return 0;
}

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
	if (!w->err)
		w->err = add_kernel_ips(w, s, len);
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

/* Appends "START T NAME" for the function holding ip, unless it is the last one appended.
 * Returns 0 or -ENOMEM. */
static int append_symbol(const struct ksyms *ksyms, uint64_t ip, char **text, size_t *len,
			 size_t *cap, uint64_t *last)
{
	uint64_t off;
	const char *name = ksyms__lookup(ksyms, ip, &off);
	char line[320];
	int n;

	if (!name || ip - off == *last)
		return 0;
	*last = ip - off;
	n = snprintf(line, sizeof(line), "%016" PRIx64 " T %s\n", *last, name);
	if (n < 0 || (size_t)n >= sizeof(line))
		return 0;
	if (*len + (size_t)n > *cap) {
		size_t new_cap = (*len + (size_t)n) * 2;
		char *bigger = realloc(*text, new_cap);

		if (!bigger)
			return -ENOMEM;
		*text = bigger;
		*cap = new_cap;
	}
	memcpy(*text + *len, line, (size_t)n);
	*len += (size_t)n;
	return 0;
}

/* The kernel functions the samples ran in, as ksyms names them, in records of whole lines. */
static int write_kernel_symbols(struct capture_writer *w, const struct ksyms *ksyms)
{
	char *text = NULL;
	size_t len = 0, cap = 0, start = 0;
	uint64_t last = 0;
	int err = 0;

	if (!ksyms)
		return 0;
	compact_kernel_ips(w);
	/* addresses in order give functions in order: each is appended once */
	for (size_t i = 0; !err && i < w->nr_kernel_ips; i++)
		err = append_symbol(ksyms, w->kernel_ips[i], &text, &len, &cap, &last);
	while (!err && start < len) {
		size_t end = len - start <= CAPTURE_MAX_RECORD ? len : start + CAPTURE_MAX_RECORD;

		while (end > start && end < len && text[end - 1] != '\n')
			end--;
		err = capture__write_ksyms(stream(w), text + start, end - start);
		start = end;
	}
	free(text);
	return err;
}

int capture_writer__finish(struct capture_writer *w, struct module_registry *reg,
			   const struct ksyms *ksyms, const struct capture_info *info)
{
	int err = w->err;

	if (!err)
		err = write_kernel_symbols(w, ksyms);
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
	free(w->kernel_ips);
	free(w);
}
