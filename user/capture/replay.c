#include "capture/replay.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "binary/ksyms.h"
#include "binary/modules.h"
#include "binary/slice.h"
#include "output/profile.h"
#include "util/grow.h"

struct recorded_build_id {
	const char *path;
	const uint8_t *id;
	uint32_t len;
};

struct replay {
	struct replay_opts opts;
	const char *path;
	struct capture_reader *reader; /* kept: build-id records point into it */
	struct session *session;
	uint8_t *scratch; /* a sample's copy when stack_limit shortens it */
	struct capture_info info;
	struct recorded_build_id *build_ids;
	size_t nr_build_ids, cap_build_ids;
};

static int check_record(const char *path, uint32_t type, uint32_t len, char *err, size_t errlen)
{
	size_t need = type == CAPTURE_INFO ? sizeof(struct capture_info)
		      : type == CAPTURE_MAPS ? 8
		      : type == CAPTURE_BUILD_ID ? 4 + BUILD_ID_MAX + 1
		      : type == CAPTURE_SAMPLE ? sizeof(struct hprof_sample)
		      : type == CAPTURE_MAP_EVENT ? sizeof(struct map_event) + 1
		      : type == CAPTURE_CODE || type == CAPTURE_BEAM_EXIT ||
				type == CAPTURE_GDB_JIT_OBJECT || type == CAPTURE_JITDUMP ||
				type == CAPTURE_PYTHON_MEMORY ? 16
		      : type == CAPTURE_GDB_JIT_DROP ? 24
		      : type == CAPTURE_PERF_MAP ? 8
		      : type == CAPTURE_KSYMS ? 0 : SIZE_MAX;

	if (need == SIZE_MAX) {
		snprintf(err, errlen, "%s: unknown record type %u", path, type);
		return -EINVAL;
	}
	if (len < need) {
		snprintf(err, errlen, "%s: record of type %u is %u bytes, needs %zu", path, type, len,
			 need);
		return -EINVAL;
	}
	return 0;
}

static int add_build_id(struct replay *r, const uint8_t *payload, uint32_t len)
{
	struct recorded_build_id b;

	if (!capture__decode_build_id(CAPTURE_BUILD_ID, payload, len, &b.id, &b.len, &b.path))
		return 0; /* path not terminated or id too long: ignore the record */
	if (grow_array((void **)&r->build_ids, &r->cap_build_ids, r->nr_build_ids + 1,
		       sizeof(*r->build_ids)))
		return -ENOMEM;
	r->build_ids[r->nr_build_ids++] = b;
	return 0;
}

/* Bytes the recording read of process pid at addr (an offset in its jitdump file for
 * CAPTURE_JITDUMP), handed to what reads them again: JIT code for the walks, a jitdump and
 * gdb JIT objects for names and rows, a CPython process's memory for its frames. */
static int add_process_bytes(struct replay *r, uint32_t type, const uint8_t *payload,
			     uint32_t len)
{
	struct module_registry *modules = session__modules(r->session);
	const uint8_t *bytes;
	uint64_t addr;
	uint32_t pid;
	size_t n;

	if (!capture__decode_code(type, payload, len, &pid, &addr, &bytes, &n))
		return 0;
	switch (type) {
	case CAPTURE_CODE:
		return module_registry__add_code(modules, pid, addr, bytes, n);
	case CAPTURE_JITDUMP:
		return module_registry__add_jitdump(modules, pid, addr, bytes, n);
	case CAPTURE_GDB_JIT_OBJECT:
		return module_registry__add_gdb_jit_object(modules, pid, addr, bytes, n);
	case CAPTURE_PYTHON_MEMORY:
		return session__add_python_memory(r->session, pid, addr, bytes, n);
	}
	return 0;
}

/* A shorter copy is the same record with the end of its stack bytes cut out. */
static int replay_sample(struct replay *r, const uint8_t *payload, uint32_t len)
{
	struct hprof_sample *sample;
	__u64 size = len;

	memcpy(r->scratch, payload, len);
	sample = (struct hprof_sample *)r->scratch;
	if (r->opts.stack_limit && hprof_sample__well_formed(sample, size))
		hprof_sample__limit_copy(sample, &size, r->opts.stack_limit);
	if (r->opts.on_sample) {
		int ret = r->opts.on_sample(r->opts.on_sample_ctx, r->session, sample, size);

		if (ret)
			return ret;
	}
	return session__handle_sample(r->session, sample, size);
}

static int replay_map_event(struct session *s, const uint8_t *payload, uint32_t len)
{
	struct map_event e;
	const char *path;

	if (!capture__decode_map_event(CAPTURE_MAP_EVENT, payload, len, &e, &path))
		return -EINVAL;
	return session__handle_map_event(s, &e, path);
}

/* The kernel symbols the capture carries, written after its samples, read before them: kernel
 * frames are then named as the recording's machine named them. A capture without them (or
 * whose text names no function) leaves *ksyms NULL: the session reads its own kallsyms.
 * Returns 0 or -errno with the reason in err. */
static int read_kernel_symbols(struct replay *r, struct ksyms **ksyms, char *err, size_t errlen)
{
	const uint8_t *payload;
	uint32_t type, len;
	char *text = NULL, *bigger;
	size_t text_len = 0;
	int ret;

	*ksyms = NULL;
	while ((ret = capture_reader__next(r->reader, &type, &payload, &len, err, errlen)) > 0) {
		if (type != CAPTURE_KSYMS || len == 0)
			continue;
		bigger = realloc(text, text_len + len);
		if (!bigger) {
			ret = -ENOMEM;
			break;
		}
		text = bigger;
		memcpy(text + text_len, payload, len);
		text_len += len;
	}
	capture_reader__rewind(r->reader);
	if (ret == 0 && text_len)
		ksyms__load_text(text, text_len, ksyms);
	free(text);
	if (ret == -ENOMEM)
		snprintf(err, errlen, "%s: %s", r->path, strerror(ENOMEM));
	return ret;
}

/* Feeds every record to the session in file order, which is time order: maps and mapping
 * events before the samples that need them. Returns 0 or -errno with the reason in err. */
static int feed(struct replay *r, char *err, size_t errlen)
{
	const uint8_t *payload;
	const char *text;
	uint32_t type, len, pid;
	uint64_t exit, addr, size;
	size_t text_len;
	int ret;

	while ((ret = capture_reader__next(r->reader, &type, &payload, &len, err, errlen)) > 0) {
		ret = check_record(r->path, type, len, err, errlen);
		if (ret)
			return ret;
		switch (type) {
		case CAPTURE_INFO:
			capture__decode_info(type, payload, len, &r->info);
			break;
		case CAPTURE_MAPS:
			capture__decode_maps(type, payload, len, &pid, &text, &text_len);
			ret = session__load_maps(r->session, pid, text, text_len);
			break;
		case CAPTURE_SAMPLE:
			ret = replay_sample(r, payload, len);
			break;
		case CAPTURE_MAP_EVENT:
			ret = replay_map_event(r->session, payload, len);
			break;
		case CAPTURE_BUILD_ID:
			ret = add_build_id(r, payload, len);
			break;
		case CAPTURE_CODE:
		case CAPTURE_JITDUMP:
		case CAPTURE_GDB_JIT_OBJECT:
		case CAPTURE_PYTHON_MEMORY:
			ret = add_process_bytes(r, type, payload, len);
			break;

		case CAPTURE_PERF_MAP:
			capture__decode_perf_map(type, payload, len, &pid, &text, &text_len);
			ret = module_registry__add_perf_map(session__modules(r->session), pid, text,
							    text_len);
			break;



		case CAPTURE_GDB_JIT_DROP:
			capture__decode_gdb_jit_drop(type, payload, len, &pid, &addr, &size);
			module_registry__drop_gdb_jit_object(session__modules(r->session), pid, addr,
							     size);
			break;
		case CAPTURE_KSYMS: /* read before the samples: read_kernel_symbols */
			break;
		case CAPTURE_BEAM_EXIT:
			capture__decode_beam_exit(type, payload, len, &pid, &exit);
			ret = module_registry__set_beam_exit(session__modules(r->session), pid, exit);
			break;
		}
		if (ret) {
			snprintf(err, errlen, "%s: %s", r->path, strerror(-ret));
			return ret;
		}
	}
	return ret;
}

int replay__run(const char *path, const struct replay_opts *o, struct replay **out, char *err,
		size_t errlen)
{
	struct replay *r = calloc(1, sizeof(*r));
	struct ksyms *ksyms;
	int ret;

	*out = NULL;
	if (!r)
		return -ENOMEM;
	r->opts = *o;
	r->path = path;
	ret = capture_reader__open(path, &r->reader, err, errlen);
	if (!ret)
		ret = read_kernel_symbols(r, &ksyms, err, errlen);
	if (!ret)
		ret = session__new_with_ksyms(!o->no_dwarf, ksyms, &r->session);
	if (!ret && !o->frame_addresses)
		ret = profile__key_by_name(session__profile(r->session));
	if (!ret && !(o->no_inline && o->no_lines))
		ret = profile__expand_inline(session__profile(r->session), !o->no_inline, !o->no_lines);
	if (ret)
		goto cleanup;
	session__set_replay(r->session);
	session__set_debuginfod(r->session, o->debuginfod);
	if (o->slices) {
		struct module_slices *slices;

		ret = module_slices__read(o->slices, &slices, err, errlen);
		if (ret)
			goto cleanup;
		module_registry__use_slices(session__modules(r->session), slices);
	}
	r->scratch = malloc(CAPTURE_MAX_RECORD);
	if (!r->scratch) {
		ret = -ENOMEM;
		goto cleanup;
	}
	ret = feed(r, err, errlen);
	if (ret)
		goto cleanup;
	*out = r;
	return 0;
cleanup:
	replay__free(r);
	return ret;
}

struct session *replay__session(struct replay *r)
{
	return r->session;
}

const struct capture_info *replay__info(const struct replay *r)
{
	return &r->info;
}

void replay__for_each_changed(struct replay *r, void (*fn)(void *ctx, const char *path),
			      void *ctx)
{
	struct module_registry *reg = session__modules(r->session);

	for (size_t i = 0; i < r->nr_build_ids; i++) {
		const struct recorded_build_id *b = &r->build_ids[i];
		struct module *mod = module_registry__get(reg, b->path);
		const uint8_t *now = NULL;
		size_t now_len = mod && mod->syms ? elf_symbols__build_id(mod->syms, &now) : 0;

		if (now_len != b->len || memcmp(now, b->id, b->len) != 0)
			fn(ctx, b->path);
	}
}

void replay__free(struct replay *r)
{
	if (!r)
		return;
	session__free(r->session);
	capture_reader__free(r->reader);
	free(r->build_ids);
	free(r->scratch);
	free(r);
}
