/* Code objects read and cached (user/python/code.h) over a synthetic memory image: code,
 * str and bytes objects built by hand as CPython 3.10, 3.11, 3.12 and 3.13 lay them out
 * (user/python/layout.h, itself checked against the headers by tests/t_python_layout.sh).
 * Names of each str kind, module names, lines, caps, another type's object, a string cut by
 * the end of memory, stale frames, remembered failures, the cache's bound, warm speed. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "python/code.h"
#include "python/layout.h"
#include "check.h"

#define BASE 0x7f0000000000ull
#define IMAGE_SIZE (4u << 20)
#define CODE_TYPE 0x55550000a000ull
#define STR_TYPE 0x55550000b000ull
#define BYTES_TYPE 0x55550000c000ull

#include "python_image.h"

/* A compact str of n code points, each kind bytes; ascii: the ASCII form. */
static uint64_t make_str_kind(const struct python_layout *l, const uint32_t *cps, size_t n,
			      unsigned kind, bool ascii)
{
	size_t data = ascii ? l->str_ascii_data : l->str_compact_data;
	uint64_t s = alloc(data + (n + 1) * kind);
	uint32_t state = PYTHON_STR_COMPACT | kind << PYTHON_STR_KIND_SHIFT;

	if (ascii)
		state |= PYTHON_STR_ASCII;
	if (l->version < 0x030c)
		state |= PYTHON_STR_READY;
	put64(s, 1);
	put64(s + l->object_type, STR_TYPE);
	uint64_t hash = 14695981039346656037ull;

	put64(s + l->str_length, n);
	put32(s + l->str_state, state);
	for (size_t i = 0; i < n; i++) {
		memcpy(at(s + data + i * kind), &cps[i], kind); /* little-endian */
		hash = (hash ^ cps[i]) * 1099511628211ull;
	}
	/* hashed, as CPython's identifiers are when interned */
	put64(s + HPROF_PY_STR_HASH, hash);
	return s;
}

static uint64_t make_str(const struct python_layout *l, const char *ascii)
{
	uint32_t cps[8192];
	size_t n = strlen(ascii);

	for (size_t i = 0; i < n; i++)
		cps[i] = (unsigned char)ascii[i];
	return make_str_kind(l, cps, n, 1, true);
}

static uint64_t make_bytes(const struct python_layout *l, const uint8_t *b, size_t n)
{
	uint64_t o = alloc(l->bytes_data + n + 1);

	put64(o + l->object_type, BYTES_TYPE);
	put64(o + l->bytes_size, n);
	memcpy(at(o + l->bytes_data), b, n);
	return o;
}

/* 3.11+ location table: units 0-1 on firstlineno + 1 (code 13, delta +1), units 2-4 on
 * firstlineno + 2 (code 11, one line, delta +1, two column bytes). */
static const uint8_t loc_table[] = {0x80 | 13 << 3 | 1, 0x02, 0x80 | 11 << 3 | 2, 4, 9};
/* 3.10: 4 bytes (units 0-1) on +1, 6 bytes (units 2-4) on +2 */
static const uint8_t table310[] = {4, 1, 6, 1};

static uint32_t code_serial;

static uint64_t make_code(const struct python_layout *l, const char *name, const char *qualname,
			  uint64_t filename, int firstlineno, uint32_t units)
{
	size_t size = l->code_adaptive ? l->code_adaptive + units * 2 : l->code_header;
	uint64_t c = alloc(size);
	const uint8_t *t = l->version >= 0x030b ? loc_table : table310;
	size_t tlen = l->version >= 0x030b ? sizeof(loc_table) : sizeof(table310);

	put64(c, 1);
	put64(c + l->object_type, CODE_TYPE);
	if (l->code_size)
		put64(c + l->code_size, units);
	put32(c + l->code_firstlineno, (uint32_t)firstlineno);
	/* the other half of the check word: co_nlocalsplus / co_stacksize, set once */
	put32(c + (l->code_firstlineno ^ 4), 5);
	/* 3.12+: the serial CPython gives each code object it makes */
	if (l->code_version)
		put32(c + l->code_version, ++code_serial);
	put64(c + l->code_name, make_str(l, name));
	if (l->code_qualname)
		put64(c + l->code_qualname, make_str(l, qualname));
	put64(c + l->code_filename, filename);
	put64(c + l->code_linetable, make_bytes(l, t, tlen));
	if (l->code_firsttraceable)
		put32(c + l->code_firsttraceable, 1);
	return c;
}

static struct hprof_py_frame frame_of(const struct python_layout *l, uint64_t code,
				      uint32_t instr)
{
	struct hprof_py_frame f = {.code = code, .instr = instr};
	uint64_t w;

	memcpy(&w, at(code + l->code_check), 8);
	if (l->check_name) {
		uint64_t name, hash;

		memcpy(&name, at(code + l->check_name), 8);
		memcpy(&hash, at(name + HPROF_PY_STR_HASH), 8);
		w ^= hash;
	}
	f.check = hprof_py__check(w);
	return f;
}

/* 3.11+: the instruction field of a frame at code unit u (prev_instr / instr_ptr) */
static uint32_t unit(const struct python_layout *l, int u)
{
	return (uint32_t)((int)l->code_adaptive + 2 * u) | HPROF_PY_ENTRY;
}

static void check_names(uint32_t minor)
{
	struct python_layout l = layout(minor);
	struct python_code_cache *c;
	struct python_frame_name n;
	struct hprof_py_frame f;
	uint64_t code;
	int rc;
	bool new_style = l.version >= 0x030b;

	python_code_cache__new(1u << 20, &c);
	code = make_code(&l, "method", "K.method", make_str(&l, "/srv/app/pkg/mod.py"), 33, 5);
	f = frame_of(&l, code, new_style ? unit(&l, 3) : 3);
	rc = python_code_cache__name(c, 7, &l, CODE_TYPE, &f, read_image, NULL, &n);
	check(rc == 0 && !strcmp(n.qualname, new_style ? "K.method" : "method") &&
		      !strcmp(n.module, "mod") && !strcmp(n.filename, "/srv/app/pkg/mod.py") &&
		      n.firstlineno == 33 && n.line == 35,
	      "code 3.%u: qualname, module, file, line of unit 3 (%d: %s %s %s %d %d)", minor, rc,
	      rc ? "" : n.qualname, rc ? "" : n.module, rc ? "" : n.filename,
	      rc ? 0 : n.firstlineno, rc ? 0 : n.line);
	f = frame_of(&l, code, new_style ? unit(&l, -1) : 0x7fffffff);
	rc = python_code_cache__name(c, 7, &l, CODE_TYPE, &f, read_image, NULL, &n);
	check(rc == 0 && n.line == 33,
	      "code 3.%u: a frame before its first instruction is on co_firstlineno (%d)", minor,
	      rc ? -2 : n.line);
	if (new_style) {
		f = frame_of(&l, code, unit(&l, 5));
		rc = python_code_cache__name(c, 7, &l, CODE_TYPE, &f, read_image, NULL, &n);
		check(rc == 0 && n.line == -1, "code 3.%u: an instruction past the code: no line",
		      minor);
		f = frame_of(&l, code, unit(&l, 0));
		rc = python_code_cache__name(c, 7, &l, CODE_TYPE, &f, read_image, NULL, &n);
		check(rc == 0 && n.line == 34 && n.incomplete == (l.code_firsttraceable != 0),
		      "code 3.%u: unit 0 on line 34, before _co_firsttraceable where known", minor);
	}
	python_code_cache__free(c);
}

static void check_kinds(void)
{
	struct python_layout l = layout(12);
	struct python_code_cache *c;
	struct python_frame_name n;
	struct hprof_py_frame f;
	static const uint32_t cafe[] = {'c', 'a', 'f', 0xe9};
	static const uint32_t namae[] = {0x540d, 0x524d, 0xd800};
	static const uint32_t fraktur[] = {0x1d523, '_', 0};
	uint64_t code;
	int rc;

	python_code_cache__new(1u << 20, &c);
	code = make_code(&l, "x", "x", make_str_kind(&l, namae, 3, 2, false), 1, 4);
	put64(code + l.code_qualname, make_str_kind(&l, cafe, 4, 1, false));
	f = frame_of(&l, code, unit(&l, 0));
	rc = python_code_cache__name(c, 1, &l, CODE_TYPE, &f, read_image, NULL, &n);
	check(rc == 0 && !strcmp(n.qualname, "caf\xc3\xa9") &&
		      !strcmp(n.filename, "\xe5\x90\x8d\xe5\x89\x8d\xef\xbf\xbd"),
	      "code: UCS1 and UCS2 strings as UTF-8, a lone surrogate as U+FFFD (%d)", rc);
	code = make_code(&l, "x", "x", make_str(&l, "/lib/python3.12/json/__init__.py"), 1, 4);
	put64(code + l.code_qualname, make_str_kind(&l, fraktur, 3, 4, false));
	f = frame_of(&l, code, unit(&l, 0));
	rc = python_code_cache__name(c, 1, &l, CODE_TYPE, &f, read_image, NULL, &n);
	check(rc == 0 && !strcmp(n.qualname, "\xf0\x9d\x94\xa3_\xef\xbf\xbd") &&
		      !strcmp(n.module, "json"),
	      "code: a UCS4 string, NUL as U+FFFD; __init__.py's module is its package (%d %s)",
	      rc, rc ? "" : n.module);
	code = make_code(&l, "<module>", "<module>", make_str(&l, "<frozen importlib._bootstrap>"),
			 1, 4);
	f = frame_of(&l, code, unit(&l, 0));
	rc = python_code_cache__name(c, 1, &l, CODE_TYPE, &f, read_image, NULL, &n);
	check(rc == 0 && !strcmp(n.module, "<frozen importlib._bootstrap>"),
	      "code: a file name in <> is its own module");
	python_code_cache__free(c);
}

static void check_refusals(void)
{
	struct python_layout l = layout(11);
	struct python_code_cache *c;
	struct python_frame_name n;
	struct hprof_py_frame f;
	char long_name[PYTHON_NAME_MAX + 2];
	uint64_t code, s;
	unsigned before;
	int rc;

	python_code_cache__new(1u << 20, &c);
	code = make_code(&l, "f", "f", make_str(&l, "a.py"), 1, 4);
	put64(code + l.object_type, STR_TYPE);
	f = frame_of(&l, code, unit(&l, 0));
	rc = python_code_cache__name(c, 1, &l, CODE_TYPE, &f, read_image, NULL, &n);
	check(rc == -EINVAL, "code: an object of another type is refused (%d)", rc);
	before = reads;
	rc = python_code_cache__name(c, 1, &l, CODE_TYPE, &f, read_image, NULL, &n);
	check(rc == -EINVAL && reads == before,
	      "code: the same frame again fails without a read (%d, %u reads)", rc, reads - before);

	memset(long_name, 'a', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	code = make_code(&l, "f", long_name, make_str(&l, "a.py"), 1, 4);
	f = frame_of(&l, code, unit(&l, 0));
	rc = python_code_cache__name(c, 1, &l, CODE_TYPE, &f, read_image, NULL, &n);
	check(rc == -EINVAL, "code: a name over %u code points is refused (%d)", PYTHON_NAME_MAX, rc);

	/* a str whose characters run past the end of readable memory */
	code = make_code(&l, "f", "f", make_str(&l, "a.py"), 1, 4);
	s = BASE + IMAGE_SIZE - l.str_ascii_data - 4;
	put64(s + l.str_length, 100);
	put32(s + l.str_state, PYTHON_STR_COMPACT | PYTHON_STR_ASCII | PYTHON_STR_READY |
				       1 << PYTHON_STR_KIND_SHIFT);
	put64(code + l.code_qualname, s);
	f = frame_of(&l, code, unit(&l, 0));
	rc = python_code_cache__name(c, 1, &l, CODE_TYPE, &f, read_image, NULL, &n);
	check(rc == -EFAULT, "code: a string cut by the end of memory is refused (%d)", rc);

	/* not compact, not ready, a kind of 3, ASCII of kind 2 */
	static const uint32_t bad_states[] = {
		PYTHON_STR_READY | 1 << PYTHON_STR_KIND_SHIFT,
		PYTHON_STR_COMPACT | 1 << PYTHON_STR_KIND_SHIFT,
		PYTHON_STR_COMPACT | PYTHON_STR_READY | 3 << PYTHON_STR_KIND_SHIFT,
		PYTHON_STR_COMPACT | PYTHON_STR_READY | PYTHON_STR_ASCII | 2 << PYTHON_STR_KIND_SHIFT,
	};
	for (size_t i = 0; i < sizeof(bad_states) / sizeof(bad_states[0]); i++) {
		code = make_code(&l, "f", "f", make_str(&l, "a.py"), 1, 4);
		memcpy(&s, at(code + l.code_qualname), 8);
		put32(s + l.str_state, bad_states[i]);
		f = frame_of(&l, code, unit(&l, 0));
		rc = python_code_cache__name(c, 1, &l, CODE_TYPE, &f, read_image, NULL, &n);
		check(rc == -EINVAL, "code: a str of state %#x is refused (%d)", bad_states[i], rc);
	}
	/* an ASCII str holding a byte >= 0x80 */
	code = make_code(&l, "f", "f", make_str(&l, "a.py"), 1, 4);
	memcpy(&s, at(code + l.code_filename), 8);
	at(s + l.str_ascii_data)[1] = 0xe9;
	f = frame_of(&l, code, unit(&l, 0));
	rc = python_code_cache__name(c, 1, &l, CODE_TYPE, &f, read_image, NULL, &n);
	check(rc == -EINVAL, "code: an ASCII str with a byte over 0x7f is refused (%d)", rc);
	/* a line table over its cap: named, line not known */
	code = make_code(&l, "f", "f", make_str(&l, "a.py"), 1, 4);
	memcpy(&s, at(code + l.code_linetable), 8);
	put64(s + l.bytes_size, PYTHON_LINETABLE_MAX + 1);
	f = frame_of(&l, code, unit(&l, 1));
	rc = python_code_cache__name(c, 1, &l, CODE_TYPE, &f, read_image, NULL, &n);
	check(rc == 0 && n.line == -1 && !strcmp(n.qualname, "f"),
	      "code: a line table over its cap: the frame named, its line not known (%d)", rc);
	python_code_cache__free(c);
}

/* Code compiled from one template in a loop: each object freed and the next made at its
 * address, of the same shape and first line, only its name (and, 3.12+, its co_version)
 * another. A frame of the new one is never named after the old. */
static void check_template(int minor)
{
	struct python_layout l = layout(minor);
	struct python_code_cache *c;
	struct python_frame_name n;
	struct hprof_py_frame old, now;
	uint64_t code, file = make_str(&l, "<gen>"), name2;
	int rc;

	python_code_cache__new(1u << 20, &c);
	code = make_code(&l, "inner_1", "inner_1", file, 5, 4);
	old = frame_of(&l, code, unit(&l, 0));
	rc = python_code_cache__name(c, 3, &l, CODE_TYPE, &old, read_image, NULL, &n);
	check(rc == 0 && !strcmp(n.qualname, "inner_1"), "code template 3.%d: the first named", minor);
	name2 = make_str(&l, "inner_2");
	put64(code + l.code_name, name2);
	if (l.code_qualname)
		put64(code + l.code_qualname, name2);
	if (l.code_version)
		put32(code + l.code_version, ++code_serial);
	now = frame_of(&l, code, unit(&l, 0));
	check(now.check != old.check, "code template 3.%d: the next one's check differs", minor);
	rc = python_code_cache__name(c, 3, &l, CODE_TYPE, &now, read_image, NULL, &n);
	check(rc == 0 && !strcmp(n.qualname, "inner_2"),
	      "code template 3.%d: the next one named anew, not after the cached one (%d, %s)",
	      minor, rc, rc ? "-" : n.qualname);
	rc = python_code_cache__name(c, 3, &l, CODE_TYPE, &old, read_image, NULL, &n);
	check(rc == -ESTALE, "code template 3.%d: a late frame of the first refused (%d)", minor, rc);
	python_code_cache__free(c);
}

static void check_stale(void)
{
	struct python_layout l = layout(12);
	struct python_code_cache *c;
	struct python_frame_name n;
	struct hprof_py_frame old, now;
	uint64_t code, name2;
	unsigned before;
	int rc;

	python_code_cache__new(1u << 20, &c);
	code = make_code(&l, "f", "first", make_str(&l, "a.py"), 10, 4);
	old = frame_of(&l, code, unit(&l, 0));
	rc = python_code_cache__name(c, 3, &l, CODE_TYPE, &old, read_image, NULL, &n);
	check(rc == 0 && !strcmp(n.qualname, "first"), "code stale: the first object named");
	/* freed, and another made at its address */
	put32(code + l.code_firstlineno, 20);
	put32(code + l.code_version, ++code_serial);
	name2 = make_str(&l, "second");
	put64(code + l.code_qualname, name2);
	now = frame_of(&l, code, unit(&l, 0));
	rc = python_code_cache__name(c, 3, &l, CODE_TYPE, &now, read_image, NULL, &n);
	check(rc == 0 && !strcmp(n.qualname, "second") && n.firstlineno == 20,
	      "code stale: a frame of the new object is read again, named anew (%d)", rc);
	rc = python_code_cache__name(c, 3, &l, CODE_TYPE, &old, read_image, NULL, &n);
	check(rc == -ESTALE, "code stale: a frame of the old object is refused (%d)", rc);
	before = reads;
	rc = python_code_cache__name(c, 3, &l, CODE_TYPE, &old, read_image, NULL, &n);
	check(rc == -ESTALE && reads == before,
	      "code stale: again, without a read (%d, %u reads)", rc, reads - before);
	rc = python_code_cache__name(c, 4, &l, CODE_TYPE, &old, read_image, NULL, &n);
	check(rc == -ESTALE, "code stale: a frame never cached whose check differs (%d)", rc);
	rc = python_code_cache__name(c, 3, &l, CODE_TYPE, &now, read_image, NULL, &n);
	check(rc == 0 && !strcmp(n.qualname, "second"), "code stale: the new object still named");
	python_code_cache__forget_pid(c, 3);
	before = reads;
	rc = python_code_cache__name(c, 3, &l, CODE_TYPE, &now, read_image, NULL, &n);
	check(rc == 0 && reads > before, "code: forget_pid drops the process's entries");
	python_code_cache__forget_pid(c, 99);
	python_code_cache__forget_pid(NULL, 3);
	python_code_cache__free(c);
	python_code_cache__free(NULL);
}

static void check_bound_and_speed(void)
{
	struct python_layout l = layout(11);
	struct python_code_cache *c;
	struct python_code_cache_stats st, before;
	struct python_frame_name n;
	struct hprof_py_frame f[16];
	uint64_t file = make_str(&l, "/usr/lib/python3.11/some/module.py");
	size_t max = PYTHON_CODE_CACHE_MIN_BYTES;
	bool bounded = true, named = true;
	int rc;

	check(python_code_cache__new(max - 1, &c) == -EINVAL && !c,
	      "code cache: a size below the minimum is refused");
	python_code_cache__new(max, &c);
	/* exec in a loop: a new code object every time */
	for (int i = 0; i < 6000; i++) {
		char name[32];
		uint64_t code;
		struct hprof_py_frame fr;

		snprintf(name, sizeof(name), "f%d", i);
		code = make_code(&l, name, name, file, i + 1, 4);
		fr = frame_of(&l, code, unit(&l, 2));
		rc = python_code_cache__name(c, 1, &l, CODE_TYPE, &fr, read_image, NULL, &n);
		named &= rc == 0 && !strcmp(n.qualname, name) && n.line == i + 3;
		python_code_cache__stats(c, &st);
		bounded &= st.bytes <= max;
	}
	python_code_cache__stats(c, &st);
	check(named && bounded && st.evicted > 0,
	      "code cache: 6000 code objects named, the cache within %zu bytes throughout "
	      "(%lu entries, %lu bytes, %lu evicted)",
	      max, (unsigned long)st.entries, (unsigned long)st.bytes, (unsigned long)st.evicted);
	for (int i = 0; i < 16; i++) {
		uint64_t code = make_code(&l, "g", "g", file, 5, 4);

		f[i] = frame_of(&l, code, unit(&l, i % 5));
		python_code_cache__name(c, 2, &l, CODE_TYPE, &f[i], read_image, NULL, &n);
	}
	/* warm: named from the cache, the process's memory not read again (what a warm
	 * lookup costs is bench/bench_pynames.c's) */
	python_code_cache__stats(c, &before);
	rc = 0;
	for (int i = 0; i < 10000; i++)
		rc |= python_code_cache__name(c, 2, &l, CODE_TYPE, &f[i & 15], read_image, NULL, &n);
	python_code_cache__stats(c, &st);
	check(rc == 0 && st.hits - before.hits == 10000 && st.reads == before.reads,
	      "code cache: 10000 warm lookups are hits that read nothing (%lu hits, %lu reads)",
	      (unsigned long)(st.hits - before.hits), (unsigned long)(st.reads - before.reads));
	python_code_cache__free(c);
}

/* A code object freed while it is read, its strings with it: pymalloc keeps its free
 * list's link in the object's reference count, and their memory may be made anew before
 * the strings are read. read_then_free frees it (link) after the first read (the head). */
static uint64_t dying_code;
static unsigned reads_until_free;

static bool read_then_free(void *ctx, uint64_t addr, void *buf, size_t len)
{
	bool ok = read_image(ctx, addr, buf, len);

	if (dying_code && reads_until_free && --reads_until_free == 0)
		put64(dying_code, 0x7f3a5c001040ull); /* the pool's next free block */
	return ok;
}

static void check_died_while_read(int minor)
{
	struct python_layout l = layout(minor);
	struct python_code_cache *c;
	struct python_frame_name n;
	struct hprof_py_frame f;
	uint64_t code = make_code(&l, "outer_1", "outer_1", make_str(&l, "<gen>"), 3, 4);
	int rc;

	python_code_cache__new(1u << 20, &c);
	f = frame_of(&l, code, unit(&l, 0));
	dying_code = code;
	reads_until_free = 1;
	rc = python_code_cache__name(c, 3, &l, CODE_TYPE, &f, read_then_free, NULL, &n);
	check(rc != 0, "code died while read 3.%d: no name taken from its strings (%d)", minor, rc);
	dying_code = 0;
	put64(code, 1);
	rc = python_code_cache__name(c, 3, &l, CODE_TYPE, &f, read_image, NULL, &n);
	check(rc == 0 && !strcmp(n.qualname, "outer_1"),
	      "code died while read 3.%d: the failure not kept, a live one there named (%d)", minor, rc);
	python_code_cache__free(c);

	python_code_cache__new(1u << 20, &c);
	put64(code, 0); /* freed, the last block of its pool's free list */
	rc = python_code_cache__name(c, 3, &l, CODE_TYPE, &f, read_image, NULL, &n);
	check(rc != 0, "code freed 3.%d: its reference count 0, refused (%d)", minor, rc);
	put64(code, 1);
	python_code_cache__free(c);
}

int main(void)
{
	image = calloc(1, IMAGE_SIZE);
	if (!image)
		return 1;
	for (uint32_t minor = 10; minor <= 13; minor++)
		check_names(minor);
	check_kinds();
	check_refusals();
	check_stale();
	check_template(10);
	check_template(11);
	check_template(12);
	check_template(13);
	for (int minor = 10; minor <= 13; minor++)
		check_died_while_read(minor);
	check_bound_and_speed();
	free(image);
	return failures ? 1 : 0;
}
