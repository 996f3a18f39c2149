/* Reads a live CPython process with hprof's Python layouts and code object reader
 * (user/python/), for tests/t_python_code.sh:
 *   pycode PID MAJOR.MINOR RUNTIME CODE_TYPE code ADDR:OFFSET...
 *       names each code object at ADDR (its check read from it, as the kernel folds it);
 *       OFFSET is an instruction as CPython counts it (bytes 3.8-3.9, code units 3.10+),
 *       turned into the frame's instruction field as the kernel records it. Prints
 *       "code ADDR QUALNAME MODULE FILENAME FIRSTLINENO LINE", or "code ADDR error N".
 *   pycode PID MAJOR.MINOR RUNTIME CODE_TYPE walk
 *       follows _PyRuntime to every thread's frames through the offsets the kernel is
 *       given (struct hprof_python_proc), as the BPF program does, printing per thread
 *       "thread ID" then "frame QUALNAME LINE" innermost first, "+" after the outermost
 *       frame of each evaluator call.
 * RUNTIME and CODE_TYPE are addresses in the process (_PyRuntime, PyCode_Type); for 3.13+
 * the layout comes from the _Py_DebugOffsets read there. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "python/code.h"
#include "python/layout.h"
#include "util/process_memory.h"

static bool read_pid(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return process_memory__read(*(uint32_t *)ctx, addr, buf, len);
}

static uint64_t word(uint32_t pid, uint64_t addr)
{
	uint64_t v = 0;

	if (!addr || !process_memory__read(pid, addr, &v, sizeof(v)))
		return 0;
	return v;
}

static struct hprof_py_frame frame_at(uint32_t pid, const struct hprof_python_proc *k,
				      uint64_t code, uint32_t instr)
{
	struct hprof_py_frame f = {.code = code, .instr = instr & HPROF_PY_INSTR_MASK};

	uint64_t w = word(pid, code + k->code_check);

	/* the name's hash, as the kernel folds it (common/python.h) */
	if (k->code_name)
		w ^= word(pid, word(pid, code + k->code_name) + HPROF_PY_STR_HASH);
	f.check = hprof_py__check(w);
	return f;
}

static void print_name(uint64_t addr, int rc, const struct python_frame_name *n)
{
	if (rc)
		printf("code 0x%" PRIx64 " error %d\n", addr, rc);
	else
		printf("code 0x%" PRIx64 " %s %s %s %d %d\n", addr, n->qualname, n->module,
		       n->filename, n->firstlineno, n->line);
}

static int name_codes(uint32_t pid, const struct python_layout *l,
		      const struct hprof_python_proc *k, uint64_t code_type, int argc, char **argv)
{
	struct python_code_cache *c;
	struct python_frame_name n;

	if (python_code_cache__new(1u << 20, &c))
		return 1;
	for (int i = 0; i < argc; i++) {
		uint64_t addr = strtoull(argv[i], NULL, 0);
		const char *colon = strchr(argv[i], ':');
		long offset = colon ? strtol(colon + 1, NULL, 0) : -1;
		uint32_t instr;
		struct hprof_py_frame f;
		int rc;

		if (l->kind == HPROF_PY_FRAME_OBJECT)
			instr = (uint32_t)offset; /* f_lasti */
		else
			instr = (uint32_t)(l->code_adaptive + 2 * offset); /* prev_instr - code */
		f = frame_at(pid, k, addr, instr);
		rc = python_code_cache__name(c, pid, l, code_type, &f, read_pid, &pid, &n);
		print_name(addr, rc, &n);
	}
	python_code_cache__free(c);
	return 0;
}

static int walk(uint32_t pid, const struct python_layout *l, const struct hprof_python_proc *k,
		uint64_t code_type)
{
	struct python_code_cache *c;
	struct python_frame_name n;
	uint64_t interp, tstate;

	if (python_code_cache__new(1u << 20, &c))
		return 1;
	interp = word(pid, k->runtime + k->runtime_interp);
	tstate = word(pid, interp + k->interp_threads);
	for (int t = 0; tstate && t < HPROF_PY_MAX_THREADS; t++) {
		uint64_t frame = word(pid, tstate + k->tstate_frame);

		if (k->cframe_frame != HPROF_PY_NO_CFRAME)
			frame = word(pid, frame + k->cframe_frame);
		printf("thread %" PRIu64 "\n", word(pid, tstate + k->tstate_thread_id));
		for (int d = 0; frame && d < HPROF_PY_MAX_FRAMES; d++) {
			uint64_t code = word(pid, frame + k->frame_code);
			uint64_t previous = word(pid, frame + k->frame_previous);
			uint8_t entry = 0, prev_owner = 0;
			uint32_t instr;
			struct hprof_py_frame f;
			int rc;

			if (k->kind == HPROF_PY_FRAME_OBJECT) {
				instr = (uint32_t)word(pid, frame + k->frame_instr); /* int f_lasti */
				entry = 1;
			} else {
				instr = (uint32_t)(word(pid, frame + k->frame_instr) - code);
				process_memory__read(pid, frame + k->frame_entry, &entry, 1);
			}
			if (k->kind == HPROF_PY_FRAME_CSTACK_SHIM) {
				/* the evaluator's own frame under those it runs: not a frame
				 * of the program; the one above it is an entry */
				if (entry == HPROF_PY_OWNED_BY_CSTACK) {
					frame = previous;
					continue;
				}
				if (previous)
					process_memory__read(pid, previous + k->frame_entry,
							     &prev_owner, 1);
				entry = prev_owner == HPROF_PY_OWNED_BY_CSTACK;
			}
			f = frame_at(pid, k, code, instr);
			rc = python_code_cache__name(c, pid, l, code_type, &f, read_pid, &pid, &n);
			if (rc)
				printf("frame ? error %d\n", rc);
			else
				printf("frame %s %d%s\n", n.qualname, n.line, entry ? " +" : "");
			frame = previous;
		}
		tstate = word(pid, tstate + k->tstate_next);
	}
	python_code_cache__free(c);
	return 0;
}

int main(int argc, char **argv)
{
	static uint8_t runtime_bytes[PYTHON_DEBUG_OFFSETS_SIZE];
	struct hprof_python_proc k;
	struct python_layout l;
	unsigned major, minor;
	uint64_t runtime, code_type;
	uint32_t pid;
	int rc;

	if (argc < 6 || sscanf(argv[2], "%u.%u", &major, &minor) != 2) {
		fprintf(stderr, "usage: pycode PID MAJOR.MINOR RUNTIME CODE_TYPE code|walk ...\n");
		return 2;
	}
	pid = (uint32_t)strtoul(argv[1], NULL, 0);
	runtime = strtoull(argv[3], NULL, 0);
	code_type = strtoull(argv[4], NULL, 0);
	if (!process_memory__read(pid, runtime, runtime_bytes, sizeof(runtime_bytes))) {
		fprintf(stderr, "pycode: cannot read _PyRuntime of %u\n", pid);
		return 1;
	}
	rc = python_layout__for_version(major << 24 | minor << 16, runtime_bytes,
					sizeof(runtime_bytes), &l);
	if (rc) {
		fprintf(stderr, "pycode: %u.%u: %s\n", major, minor, strerror(-rc));
		return 1;
	}
	python_layout__kernel(&l, runtime, &k);
	if (!strcmp(argv[5], "walk"))
		return walk(pid, &l, &k, code_type);
	return name_codes(pid, &l, &k, code_type, argc - 6, argv + 6);
}
