/* CPython layouts (user/python/layout.h) without the headers: versions named by file
 * names, versions refused, _Py_DebugOffsets refused when it is not 3.13's or its offsets
 * leave their structs, the BPF map value filled from a layout. The offsets themselves are
 * compared with each version's headers by tests/t_python_layout.sh. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "python/layout.h"
#include "check.h"
#include "python_debug_offsets.h"


static int parse(uint32_t version, int word, uint64_t value, struct python_layout *l)
{
	uint8_t rt[PYTHON_DEBUG_OFFSETS_SIZE] = "xdebugpy";

	memcpy(rt + 8, debug_offsets_313, sizeof(debug_offsets_313));
	if (word >= 0)
		memcpy(rt + 8 + 8 * word, &value, 8);
	return python_layout__for_version(version, rt, sizeof(rt), l);
}

static void check_paths(void)
{
	static const struct {
		const char *path;
		int rc;
		uint32_t version;
	} cases[] = {
		{"/usr/bin/python3.11", 0, 0x030b0000},
		{"python3.8", 0, 0x03080000},
		{"/root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0", 0, 0x030c0000},
		{"libpython3.9.so.1.0", 0, 0x03090000},
		{"/usr/lib/libpython3.12d.so", -ENOTSUP, 0},
		{"/usr/bin/python3.13d", 0, 0x030d0000},
		{"python3.13t", 0, 0x030d0000},
		{"libpython3.7m.so.1.0", 0, 0x03070000},
		{"/usr/bin/python3", -ENOENT, 0},
		{"/usr/bin/python3.11-config", -ENOENT, 0},
		{"python3.x", -ENOENT, 0},
		{"python3.011", -ENOENT, 0},
		{"python3.999", -ENOENT, 0},
		{"mypython3.11", -ENOENT, 0},
		{"/opt/python3.11/bin/node", -ENOENT, 0},
		{"libpython3.11.a", -ENOENT, 0},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint32_t v = 0;
		int rc = python_version__from_path(cases[i].path, &v);

		check(rc == cases[i].rc && (rc || v == cases[i].version),
		      "python version of %s: %d %#x", cases[i].path, rc, v);
	}
}

int main(void)
{
	struct python_layout l;
	struct hprof_python_proc k;
	int rc;

	check_paths();
	check(python_layout__for_version(0x030700f0, NULL, 0, &l) == -ENOTSUP,
	      "python layout: 3.7 refused");
	check(python_layout__for_version(0x030b0000, NULL, 0, &l) == 0 && l.version == 0x030b &&
		      l.kind == HPROF_PY_FRAME_IS_ENTRY,
	      "python layout: 3.11 from its table, without _PyRuntime");
	check(python_layout__for_version(0x030d0000, NULL, 0, &l) == -ENOTSUP,
	      "python layout: 3.13 without _PyRuntime refused");
	check(python_layout__for_version(0x030e0000, NULL, 0, &l) == -ENOTSUP,
	      "python layout: 3.14 without _PyRuntime refused");
	check(python_layout__for_version(0x02070000, NULL, 0, &l) == -ENOTSUP &&
		      python_layout__for_version(0xffffffff, NULL, 0, &l) == -ENOTSUP,
	      "python layout: 2.7 and garbage refused");
	rc = parse(0x030d0000, -1, 0, &l);
	check(rc == 0 && l.frame_instr == 56 && l.tstate_frame == 72 && l.code_version == 92 &&
		      l.code_check == 88 && l.check_name == 0 &&
		      l.cframe_frame == HPROF_PY_NO_CFRAME && l.str_compact_data == 56,
	      "python layout: 3.13.0's debug offsets parsed (%d)", rc);
	check(parse(0x030d0000, 0, 0x030e00a0, &l) == -ENOTSUP,
	      "python layout: debug offsets of 3.14 refused");
	check(parse(0x030e0000, -1, 0, &l) == -EINVAL,
	      "python layout: 3.13's debug offsets in a 3.14 refused");
	check(parse(0x030d0000, 1, 1, &l) == -ENOTSUP, "python layout: a free-threaded build refused");
	check(parse(0x030d0000, 30, 80, &l) == -EINVAL,
	      "python layout: instr_ptr past the frame's size refused");
	check(parse(0x030d0000, 33, 1u << 21, &l) == -EINVAL,
	      "python layout: a code object of 2 MiB refused");
	check(parse(0x030d0000, 38, 206, &l) == -EINVAL,
	      "python layout: co_firstlineno's word past the code object refused");
	check(parse(0x030d0000, 33, 4096, &l) == 0 && parse(0x030d0000, 35, 2048, &l) == -EINVAL,
	      "python layout: a larger code object taken, co_name past its end refused");
	check(parse(0x030d0000, 42, 300, &l) == -EINVAL,
	      "python layout: co_code_adaptive past the code object refused");
	check(python_layout__for_version(0x030d0000, "xdebugpy", 9, &l) == -ENOTSUP,
	      "python layout: a short _PyRuntime refused");

	python_layout__for_version(0x030c0000, NULL, 0, &l);
	python_layout__kernel(&l, 0x1234, &k);
	check(k.runtime == 0x1234 && k.version == 0x030c && k.kind == HPROF_PY_FRAME_CSTACK_SHIM &&
		      k.interp_threads == 72 && k.tstate_thread_id == 136 && k.frame_entry == 70 &&
		      k.cframe_frame == 0 && k.code_check == 88 && k.code_name == 0 &&
		      k.start_time == 0,
	      "python layout: 3.12's BPF map value (the check: co_version's word)");
	python_layout__for_version(0x03080000, NULL, 0, &l);
	python_layout__kernel(&l, 1, &k);
	check(k.kind == HPROF_PY_FRAME_OBJECT && k.cframe_frame == HPROF_PY_NO_CFRAME &&
		      k.frame_instr == 104 && k.code_check == 40 && k.code_name == 112,
	      "python layout: 3.8's BPF map value (the check: co_firstlineno's word, co_name's hash)");
	return failures ? 1 : 0;
}
