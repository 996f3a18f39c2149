/* Unit tests for the jitdump reader (user/binary/jitdump.h): images written here record by
 * record, as perf's jitdump.h lays them out. Names and overlaps (the later load wins), code
 * bytes at their file offsets, unwinding info for the next load only, its .eh_frame
 * compiled into rows with the rules it was written with, moves, files cut short at every
 * length and read in pieces, hostile sizes, bad headers, and the live file's owner and
 * type rules. The .eh_frame is assembled here byte by byte: the CFI CPython 3.13 writes
 * for its trampoline (push %rbp; mov %rsp,%rbp; call *%rcx; pop %rbp; ret), so every
 * expected rule comes from this file, not from hprof's compiler. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "binary/jitdump.h"
#include "cfi/unwind_table.h"
#include "fixture.h"

/* No process has this pid, so nothing reads /tmp/jit-PID.dump for it. */
#define NO_PID UINT32_MAX

enum { REC_LOAD = 0, REC_MOVE = 1, REC_DEBUG_INFO = 2, REC_CLOSE = 3, REC_UNWIND = 4 };

/* ---- a jitdump writer ---- */

struct image {
	uint8_t *b;
	size_t len, cap;
};

static void put(struct image *im, const void *p, size_t n)
{
	if (im->len + n > im->cap) {
		im->cap = (im->len + n) * 2 + 64;
		im->b = realloc(im->b, im->cap);
		if (!im->b)
			abort();
	}
	memcpy(im->b + im->len, p, n);
	im->len += n;
}

static void put32(struct image *im, uint32_t v)
{
	put(im, &v, 4);
}

static void put64(struct image *im, uint64_t v)
{
	put(im, &v, 8);
}

static void header_with(struct image *im, uint32_t magic, uint32_t version, uint32_t total,
			uint32_t mach, uint64_t flags)
{
	put32(im, magic);
	put32(im, version);
	put32(im, total);
	put32(im, mach);
	put32(im, 0);
	put32(im, 4242);
	put64(im, 1);
	put64(im, flags);
	for (uint32_t i = 40; i < total && total < 4096; i++)
		put(im, "", 1);
}

static void header(struct image *im)
{
	header_with(im, 0x4A695444, 1, 40, EM_X86_64, 0);
}

static void prefix(struct image *im, uint32_t id, uint32_t size, uint64_t ts)
{
	put32(im, id);
	put32(im, size);
	put64(im, ts);
}

/* A code load whose code bytes are (addr + i) & 0xff; returns the bytes' file offset. */
static size_t load(struct image *im, const char *name, uint64_t addr, uint64_t size,
		   uint64_t index)
{
	size_t name_len = strlen(name) + 1, off;

	prefix(im, REC_LOAD, (uint32_t)(16 + 40 + name_len + size), 100 + index);
	put32(im, 4242);
	put32(im, 4243);
	put64(im, addr);
	put64(im, addr);
	put64(im, size);
	put64(im, index);
	put(im, name, name_len);
	off = im->len;
	for (uint64_t i = 0; i < size; i++) {
		uint8_t byte = (uint8_t)(addr + i);

		put(im, &byte, 1);
	}
	return off;
}

static void move(struct image *im, uint64_t index, uint64_t old_addr, uint64_t new_addr,
		 uint64_t size)
{
	prefix(im, REC_MOVE, 16 + 48, 0);
	put32(im, 4242);
	put32(im, 4243);
	put64(im, new_addr);
	put64(im, old_addr);
	put64(im, new_addr);
	put64(im, size);
	put64(im, index);
}

/* An unwinding-info record: eh_frame then hdr, padded to 8 as CPython and V8 pad it. */
static void unwind(struct image *im, const uint8_t *eh, size_t eh_len, const uint8_t *hdr,
		   size_t hdr_len, uint64_t mapped)
{
	size_t content = 16 + 24 + eh_len + hdr_len, padded = (content + 7) & ~(size_t)7;
	static const uint8_t zeros[8];

	prefix(im, REC_UNWIND, (uint32_t)padded, 0);
	put64(im, eh_len + hdr_len);
	put64(im, hdr_len);
	put64(im, mapped);
	put(im, eh, eh_len);
	put(im, hdr, hdr_len);
	put(im, zeros, padded - content);
}

static void raw_record(struct image *im, uint32_t id, uint32_t size)
{
	prefix(im, id, size, 0);
	for (uint32_t i = 16; i < size; i++)
		put(im, "\xab", 1);
}

/* ---- the trampoline's .eh_frame, byte by byte ---- */

#define TRAMP_SIZE 16u /* push %rbp; mov %rsp,%rbp; call *%rcx; pop %rbp; ret; and padding */
#define CIE_BYTES 24u
#define FDE_PC_FIELD (CIE_BYTES + 8) /* past the FDE's length and CIE pointer */

static size_t align8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* CIE "zR", code alignment 1, data alignment -8, return address r16, FDE pointers
 * pcrel|sdata4; CFA = rsp + 8, ra at CFA - 8. FDE: at +1 CFA = rsp + 16 and rbp at
 * CFA - 16; at +4 CFA = rbp + 16; at +7 CFA = rsp + 8. Its pc_begin points back to the
 * code, code_size rounded up to 8 before the .eh_frame (perf's layout). With terminate,
 * a zero terminator follows, as V8 writes it. Returns the length. */
static size_t tramp_eh_frame(uint8_t *out, uint64_t code_size, bool terminate)
{
	static const uint8_t cie[CIE_BYTES] = {
		20, 0, 0, 0,             /* length */
		0, 0, 0, 0,              /* CIE id */
		1, 'z', 'R', 0,          /* version, augmentation */
		1, 0x78, 16,             /* code align 1, data align -8, ra column 16 */
		1, 0x1b,                 /* augmentation data: FDE encoding pcrel|sdata4 */
		0x0c, 7, 8,              /* DW_CFA_def_cfa rsp 8 */
		0x90, 1,                 /* DW_CFA_offset r16 at cfa-8 */
		0, 0,                    /* DW_CFA_nop padding */
	};
	uint8_t fde[32] = {
		28, 0, 0, 0,             /* length */
		CIE_BYTES + 4, 0, 0, 0,  /* CIE pointer: back to offset 0 */
		0, 0, 0, 0,              /* pc_begin, below */
		0, 0, 0, 0,              /* pc_range, below */
		0,                       /* augmentation data length */
		0x41, 0x0e, 16,          /* advance 1; DW_CFA_def_cfa_offset 16 */
		0x86, 2,                 /* DW_CFA_offset rbp at cfa-16 */
		0x43, 0x0d, 6,           /* advance 3; DW_CFA_def_cfa_register rbp */
		0x43, 0x0c, 7, 8,        /* advance 3; DW_CFA_def_cfa rsp 8 */
		0, 0, 0,                 /* padding */
	};
	int32_t pc_begin = -(int32_t)(align8(code_size) + FDE_PC_FIELD);
	uint32_t range = (uint32_t)code_size;
	size_t len = 0;

	memcpy(fde + 8, &pc_begin, 4);
	memcpy(fde + 12, &range, 4);
	memcpy(out, cie, sizeof(cie));
	len += sizeof(cie);
	memcpy(out + len, fde, sizeof(fde));
	len += sizeof(fde);
	if (terminate) {
		memset(out + len, 0, 4);
		len += 4;
	}
	return len;
}

/* The .eh_frame_hdr after it: eh_frame_ptr pcrel|sdata4, one FDE, a datarel|sdata4 table. */
static size_t tramp_eh_frame_hdr(uint8_t *out, uint64_t code_size, size_t eh_len)
{
	int32_t eh_ptr = -(int32_t)(eh_len + 4), from = -(int32_t)(align8(code_size) + eh_len);
	int32_t to = -(int32_t)(eh_len - CIE_BYTES);
	uint32_t count = 1;

	out[0] = 1;
	out[1] = 0x1b;
	out[2] = 0x03;
	out[3] = 0x3b;
	memcpy(out + 4, &eh_ptr, 4);
	memcpy(out + 8, &count, 4);
	memcpy(out + 12, &from, 4);
	memcpy(out + 16, &to, 4);
	return 20;
}

static void tramp_unwind(struct image *im, uint64_t code_size, bool terminate)
{
	uint8_t eh[128], hdr[20];
	size_t eh_len = tramp_eh_frame(eh, code_size, terminate);
	size_t hdr_len = tramp_eh_frame_hdr(hdr, code_size, eh_len);

	unwind(im, eh, eh_len, hdr, hdr_len, align8(eh_len + hdr_len));
}

/* ---- helpers ---- */

static struct jitdump *new_table(void)
{
	struct jitdump *jd;

	if (jitdump__new(NO_PID, NULL, &jd) != 0)
		abort();
	return jd;
}

static struct jitdump *parse(const struct image *im, size_t len, int *err, size_t *consumed)
{
	struct jitdump *jd = new_table();
	size_t dummy;

	*err = jitdump__add_bytes(jd, im->b, len, consumed ? consumed : &dummy);
	return jd;
}

static bool names(struct jitdump *jd, uint64_t addr, const char *want)
{
	const char *got = jitdump__lookup(jd, addr);

	if (!want || !got)
		return got == want;
	return strcmp(got, want) == 0;
}

static struct jitdump_stats stats_of(const struct jitdump *jd)
{
	struct jitdump_stats st = { 0 };

	jitdump__stats(jd, &st);
	return st;
}

/* ---- tests ---- */

static void test_names_and_overlaps(void)
{
	struct image im = { 0 };
	struct jitdump_code c;
	struct jitdump *jd;
	size_t off_big, off_small, consumed;
	int err;

	header(&im);
	off_big = load(&im, "py::big:/app/x.py", 0x3000, 0x100, 1);
	off_small = load(&im, "small", 0x3040, 0x10, 2);
	load(&im, "early", 0x4000, 0x10, 3);
	load(&im, "late", 0x3ff0, 0x100, 4);
	jd = parse(&im, im.len, &err, &consumed);
	check(err == 0 && consumed == im.len, "names: the whole image is taken (%d, %zu of %zu)",
	      err, consumed, im.len);
	check(names(jd, 0x3000, "py::big:/app/x.py") && names(jd, 0x3045, "small") &&
		      names(jd, 0x3050, "py::big:/app/x.py") && names(jd, 0x30ff, "py::big:/app/x.py"),
	      "overlaps: a later small load punches into an earlier big one");
	check(names(jd, 0x4005, "late") && names(jd, 0x40ef, "late") && names(jd, 0x40f0, NULL) &&
		      names(jd, 0x2fff, NULL),
	      "overlaps: a later big load covers an earlier small one; nothing outside");
	check(jitdump__find(jd, 0x3001, &c) == 0 && c.start == 0x3000 && c.size == 0x100 &&
		      c.code_index == 1 && c.timestamp == 101 && c.has_bytes && c.bytes_off == off_big &&
		      !c.has_unwind,
	      "code: range, index, timestamp and the bytes' file offset (%" PRIu64 ")", c.bytes_off);
	check(im.b[off_big] == 0x00 && im.b[off_big + 0xff] == 0xff && jitdump__find(jd, 0x3041, &c) == 0 &&
		      c.bytes_off == off_small && im.b[c.bytes_off] == 0x40,
	      "code: the offset leads to the code bytes the record holds");
	check(stats_of(jd).code_loads == 4 && stats_of(jd).records == 4 && stats_of(jd).bad_records == 0 &&
		      stats_of(jd).cut_records == 0,
	      "stats: 4 records, 4 code loads, nothing bad or cut");
	jitdump__free(jd);
	free(im.b);
}

/* Every rule of the trampoline, from the bytes above. */
static bool rules_at(const struct unwind_table *t, uint64_t pc, enum unwind_cfa_kind cfa,
		     int64_t cfa_off, enum unwind_rbp_kind rbp, int64_t rbp_off)
{
	const struct unwind_row *row = unwind_table__find(t, pc);
	struct unwind_rules r;

	if (!row)
		return false;
	unwind_table__decode(t, row, &r);
	return r.cfa == cfa && r.cfa_offset == cfa_off && r.rbp == rbp &&
	       (rbp != UNWIND_RBP_AT_CFA || r.rbp_offset == rbp_off) && r.ra == UNWIND_RA_AT_CFA &&
	       r.ra_offset == -8;
}

static void check_tramp_rows(const struct unwind_table *t, uint64_t base, const char *what)
{
	size_t nr;

	check(rules_at(t, base, UNWIND_CFA_SP_OFFSET, 8, UNWIND_RBP_UNCHANGED, 0),
	      "%s: at entry CFA = rsp + 8, ra at CFA - 8", what);
	check(rules_at(t, base + 1, UNWIND_CFA_SP_OFFSET, 16, UNWIND_RBP_AT_CFA, -16) &&
		      rules_at(t, base + 3, UNWIND_CFA_SP_OFFSET, 16, UNWIND_RBP_AT_CFA, -16),
	      "%s: after push %%rbp CFA = rsp + 16, rbp at CFA - 16", what);
	check(rules_at(t, base + 4, UNWIND_CFA_BP_OFFSET, 16, UNWIND_RBP_AT_CFA, -16) &&
		      rules_at(t, base + 6, UNWIND_CFA_BP_OFFSET, 16, UNWIND_RBP_AT_CFA, -16),
	      "%s: after mov %%rsp,%%rbp CFA = rbp + 16", what);
	check(rules_at(t, base + 7, UNWIND_CFA_SP_OFFSET, 8, UNWIND_RBP_AT_CFA, -16) &&
		      rules_at(t, base + TRAMP_SIZE - 1, UNWIND_CFA_SP_OFFSET, 8, UNWIND_RBP_AT_CFA, -16),
	      "%s: after pop %%rbp CFA = rsp + 8 to the last byte", what);
	check(!unwind_table__find(t, base + TRAMP_SIZE) && !unwind_table__find(t, base - 1),
	      "%s: no row outside the code", what);
	unwind_table__rows(t, &nr);
	check(nr == 5, "%s: 4 rows and an end marker (%zu)", what, nr);
}

static void test_unwinding_info(void)
{
	const uint64_t base = 0x7f12345e0000ull, second = base + 0x40, moved = 0x7f1234600000ull;
	const struct unwind_table *t, *t_moved;
	struct image im = { 0 };
	struct jitdump_code c;
	struct jitdump *jd;
	char err_msg[256];
	int err;

	header(&im);
	tramp_unwind(&im, TRAMP_SIZE, false);           /* CPython: no terminator */
	raw_record(&im, REC_DEBUG_INFO, 40);            /* between the two: still the load's */
	load(&im, "py::f:/app/f.py", base, TRAMP_SIZE, 7);
	load(&im, "no_unwind", base + 0x20, 8, 8);      /* the info applied to one load only */
	tramp_unwind(&im, TRAMP_SIZE, true);            /* V8: terminated */
	load(&im, "v8_style", second, TRAMP_SIZE, 9);
	move(&im, 9, second, moved, TRAMP_SIZE);
	jd = parse(&im, im.len, &err, NULL);
	check(err == 0 && stats_of(jd).unwind_infos == 2 && stats_of(jd).code_moves == 1,
	      "unwinding: 2 unwinding infos, 1 move (%d)", err);
	check(jitdump__find(jd, base, &c) == 0 && c.has_unwind && c.eh_frame_size == 56 &&
		      c.eh_frame_hdr_size == 20 && c.eh_frame_addr == base + 16 && c.eh_frame[0] == 20 &&
		      c.eh_frame_hdr[0] == 1 && c.mapped_size == 80,
	      "unwinding: the next load has the .eh_frame, its header, and where it lies");
	check(jitdump__find(jd, base + 0x20, &c) == 0 && !c.has_unwind &&
		      jitdump__unwind_table(jd, base + 0x20, &t, NULL, 0) == -ENOENT,
	      "unwinding: the load after it has none");
	err = jitdump__unwind_table(jd, base + 5, &t, err_msg, sizeof(err_msg));
	check(err == 0 && t, "unwinding: CPython's layout compiles (%d %s)", err, err_msg);
	if (t)
		check_tramp_rows(t, base, "cpython rows");
	err = jitdump__unwind_table(jd, second, &t, err_msg, sizeof(err_msg));
	check(err == 0 && t, "unwinding: V8's layout (terminated) compiles (%d %s)", err, err_msg);
	if (t)
		check_tramp_rows(t, second, "v8 rows");
	check(names(jd, moved + 3, "v8_style") && jitdump__find(jd, moved, &c) == 0 &&
		      c.eh_frame_addr == moved + 16,
	      "move: the code is named at its new address");
	err = jitdump__unwind_table(jd, moved, &t_moved, err_msg, sizeof(err_msg));
	check(err == 0 && t_moved && t_moved != t, "move: its unwinding info compiles again there (%d %s)",
	      err, err_msg);
	if (t_moved)
		check_tramp_rows(t_moved, moved, "moved rows");
	check(jitdump__unwind_table(jd, base + 1, &t, NULL, 0) == 0 && stats_of(jd).unwind_tables == 3 &&
		      stats_of(jd).unwind_failed == 0 && stats_of(jd).unwind_misplaced == 0,
	      "unwinding: compiled once per load, 3 tables, none failed or misplaced");
	jitdump__free(jd);
	free(im.b);
}

/* An .eh_frame whose pointers assume another layout compiles, but covers other code. */
static void test_misplaced_and_bad_unwind(void)
{
	const uint64_t base = 0x500000;
	const struct unwind_table *t;
	struct image im = { 0 };
	struct jitdump *jd;
	uint8_t eh[128], hdr[20];
	size_t eh_len;
	int err;

	header(&im);
	/* written for an 8-byte function, loaded as a 16-byte one: it covers the last 8 */
	eh_len = tramp_eh_frame(eh, 8, false);
	unwind(&im, eh, eh_len, hdr, tramp_eh_frame_hdr(hdr, 8, eh_len), 0);
	load(&im, "misplaced", base, TRAMP_SIZE, 1);
	/* a CIE pointer leading nowhere */
	eh_len = tramp_eh_frame(eh, TRAMP_SIZE, false);
	eh[CIE_BYTES + 4] = 0x7f;
	unwind(&im, eh, eh_len, hdr, 20, 0);
	load(&im, "broken_cfi", base + 0x100, TRAMP_SIZE, 2);
	/* V8's code without unwinding info: the header alone */
	unwind(&im, eh, 0, hdr, 20, 0);
	load(&im, "header_only", base + 0x200, TRAMP_SIZE, 3);
	jd = parse(&im, im.len, &err, NULL);
	err = jitdump__unwind_table(jd, base, &t, NULL, 0);
	check(err == 0 && stats_of(jd).unwind_misplaced == 1 && !unwind_table__find(t, base),
	      "misplaced: compiled, counted, no row for the code's first byte (%d)", err);
	err = jitdump__unwind_table(jd, base + 0x100, &t, NULL, 0);
	check(err == -EINVAL && !t && stats_of(jd).unwind_failed == 1,
	      "bad CFI: the compiler's error, counted (%d)", err);
	check(jitdump__unwind_table(jd, base + 0x100, &t, NULL, 0) == -EINVAL && stats_of(jd).unwind_failed == 1,
	      "bad CFI: not compiled again");
	err = jitdump__unwind_table(jd, base + 0x200, &t, NULL, 0);
	check(err == -ENOENT && stats_of(jd).unwind_failed == 1, "header only: no rows, not a failure (%d)", err);
	jitdump__free(jd);
	free(im.b);
}

/* Every length of a file cut short gives what was complete, in one piece or in many. */
static void test_cut_short(void)
{
	struct image im = { 0 };
	size_t ends[8], nr_ends = 0, wrong = 0, wrong_pieces = 0;

	header(&im);
	ends[nr_ends++] = im.len;
	tramp_unwind(&im, TRAMP_SIZE, false);
	ends[nr_ends++] = im.len;
	load(&im, "a", 0x1000, TRAMP_SIZE, 1);
	ends[nr_ends++] = im.len;
	load(&im, "b", 0x2000, 0x20, 2);
	ends[nr_ends++] = im.len;
	move(&im, 2, 0x2000, 0x3000, 0x20);
	ends[nr_ends++] = im.len;
	for (size_t len = 0; len <= im.len; len++) {
		size_t complete = 0, consumed, pos = 0, step = 1 + len % 7;
		struct jitdump_stats st;
		struct jitdump *jd;
		int err;

		for (size_t i = 0; i < nr_ends; i++)
			complete = ends[i] <= len ? ends[i] : complete;
		jd = parse(&im, len, &err, &consumed);
		st = stats_of(jd);
		wrong += err != 0 || consumed != complete || st.cut_records != (complete < len) ||
			 (names(jd, 0x1000, "a") != (len >= ends[2])) ||
			 (names(jd, 0x3010, "b") != (len >= ends[4]));
		jitdump__free(jd);
		/* the same bytes arriving in pieces, an unfinished record coming again */
		jd = new_table();
		while (pos < len) {
			size_t end = pos + step < len ? pos + step : len;

			if (jitdump__add_bytes(jd, im.b + pos, end - pos, &consumed) != 0)
				break;
			pos += consumed;
			if (end == len && consumed == 0)
				break;
			if (consumed == 0)
				step *= 2;
		}
		st = stats_of(jd);
		wrong_pieces += pos != complete ||
				st.records != (uint64_t)(complete >= ends[1]) + (complete >= ends[2]) +
						      (complete >= ends[3]) + (complete >= ends[4]);
		jitdump__free(jd);
	}
	check(wrong == 0, "cut short: %zu of %zu lengths not what was complete", wrong, im.len + 1);
	check(wrong_pieces == 0, "cut short, in pieces: %zu lengths differ", wrong_pieces);
	free(im.b);
}

/* Sizes a hostile file can give: each record is skipped by its size and counted, and
 * nothing after it is lost, except after a size that cannot frame the next record. */
static void test_hostile_sizes(void)
{
	struct image im = { 0 };
	struct jitdump_code c;
	struct jitdump *jd;
	size_t mark;
	int err;

	header(&im);
	/* a load too short for its fixed fields */
	raw_record(&im, REC_LOAD, 16 + 20);
	/* a name without its NUL */
	mark = im.len;
	load(&im, "unterminated", 0x1000, 0, 1);
	im.len--; /* drop the NUL */
	memcpy(im.b + mark + 4, &(uint32_t){ (uint32_t)(im.len - mark) }, 4);
	/* an empty name */
	load(&im, "", 0x1100, 0x10, 2);
	/* a range past 2^64 */
	load(&im, "wraps", UINT64_MAX - 4, 0x10, 3);
	/* a code size larger than the record: named, but no bytes */
	mark = im.len;
	load(&im, "no_bytes", 0x2000, 0x10, 4);
	memcpy(im.b + mark + 40, &(uint64_t){ 0x1000 }, 8);
	/* unwinding infos: data past the record, header larger than the data, too large */
	mark = im.len;
	tramp_unwind(&im, TRAMP_SIZE, false);
	memcpy(im.b + mark + 16, &(uint64_t){ 4096 }, 8);
	load(&im, "after_bad_unwind", 0x3000, 0x10, 5);
	mark = im.len;
	tramp_unwind(&im, TRAMP_SIZE, false);
	memcpy(im.b + mark + 24, &(uint64_t){ 1000 }, 8);
	mark = im.len;
	tramp_unwind(&im, TRAMP_SIZE, false);
	memcpy(im.b + mark + 16, &(uint64_t){ (uint64_t)JITDUMP_MAX_UNWIND_BYTES + 1 }, 8);
	/* a bad unwinding info after a good one: the next load takes neither */
	tramp_unwind(&im, TRAMP_SIZE, false);
	raw_record(&im, REC_UNWIND, 16 + 8);
	load(&im, "after_two_unwinds", 0x3100, 0x10, 6);
	/* a move of a code_index never loaded */
	move(&im, 999, 0x9000, 0xa000, 0x10);
	/* unknown kinds, a close: skipped by their size */
	raw_record(&im, 77, 24);
	raw_record(&im, REC_CLOSE, 16);
	raw_record(&im, UINT32_MAX, 40);
	load(&im, "after_unknown", 0x4000, 0x10, 7);
	/* a size below a record header's: the end of what can be read */
	prefix(&im, REC_LOAD, 8, 0);
	load(&im, "unreachable", 0x5000, 0x10, 8);
	jd = parse(&im, im.len, &err, NULL);
	check(err == 0 && names(jd, 0x1000, NULL) && names(jd, 0x1100, NULL) &&
		      names(jd, UINT64_MAX - 1, NULL),
	      "hostile: no entry from a short load, a name without NUL, an empty name, a wrap (%d)", err);
	check(names(jd, 0x2000, "no_bytes") && jitdump__find(jd, 0x2000, &c) == 0 && !c.has_bytes &&
		      c.size == 0x1000,
	      "hostile: a code size past the record is named, without bytes");
	check(names(jd, 0x3000, "after_bad_unwind") && jitdump__find(jd, 0x3000, &c) == 0 && !c.has_unwind &&
		      jitdump__find(jd, 0x3100, &c) == 0 && !c.has_unwind,
	      "hostile: bad unwinding infos reach no load, nor do the good ones before them");
	check(names(jd, 0xa000, NULL) && names(jd, 0x4000, "after_unknown") && names(jd, 0x5000, NULL),
	      "hostile: an orphan move names nothing; unknown kinds are skipped; an unframed "
	      "record ends the file");
	check(stats_of(jd).bad_records == 10 && stats_of(jd).unknown == 2 && stats_of(jd).code_loads == 4,
	      "hostile: 10 bad records, 2 unknown, 4 code loads (%" PRIu64 ", %" PRIu64 ", %" PRIu64 ")",
	      stats_of(jd).bad_records, stats_of(jd).unknown, stats_of(jd).code_loads);
	jitdump__free(jd);
	free(im.b);
}

static void test_bad_headers(void)
{
	static const struct {
		uint32_t magic, version, total, mach;
		uint64_t flags;
		const char *what;
	} bad[] = {
		{ 0x4454694A, 1, 40, EM_X86_64, 0, "the other byte order" },
		{ 0x4A695445, 1, 40, EM_X86_64, 0, "a wrong magic" },
		{ 0x4A695444, 2, 40, EM_X86_64, 0, "version 2" },
		{ 0x4A695444, 1, 40, EM_AARCH64, 0, "an AArch64 file" },
		{ 0x4A695444, 1, 39, EM_X86_64, 0, "a header size below 40" },
		{ 0x4A695444, 1, JITDUMP_MAX_HEADER_BYTES + 1, EM_X86_64, 0, "a header size past the bound" },
		{ 0x4A695444, 1, 40, EM_X86_64, 2, "an unknown flag" },
	};
	struct image im = { 0 };
	struct jitdump *jd;
	size_t consumed;
	int err;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		im.len = 0;
		header_with(&im, bad[i].magic, bad[i].version, bad[i].total, bad[i].mach, bad[i].flags);
		load(&im, "never", 0x1000, 0x10, 1);
		jd = parse(&im, im.len, &err, &consumed);
		check(err == -EINVAL && consumed == 0 && names(jd, 0x1000, NULL) && stats_of(jd).bad_header == 1 &&
			      jitdump__add_bytes(jd, im.b, im.len, &consumed) == -EINVAL,
		      "header: %s is refused, for good (%d)", bad[i].what, err);
		jitdump__free(jd);
	}
	im.len = 0;
	header_with(&im, 0x4A695444, 1, 40, EM_NONE, 0);
	load(&im, "unset_machine", 0x1000, 0x10, 1);
	jd = parse(&im, im.len, &err, &consumed);
	check(err == 0 && names(jd, 0x1000, "unset_machine"),
	      "header: machine 0, as CPython 3.13.0 writes it, is taken (%d)", err);
	jitdump__free(jd);
	im.len = 0;
	header_with(&im, 0x4A695444, 1, 64, EM_X86_64, 1);
	load(&im, "after_long_header", 0x1000, 0x10, 1);
	jd = parse(&im, 50, &err, &consumed);
	check(err == 0 && consumed == 0 && stats_of(jd).cut_records == 1,
	      "header: an unfinished header waits (%d, %zu)", err, consumed);
	check(jitdump__add_bytes(jd, im.b, im.len, &consumed) == 0 && consumed == im.len &&
		      names(jd, 0x1000, "after_long_header"),
	      "header: a longer header, TSC timestamps: the records start after it");
	jitdump__free(jd);
	free(im.b);
}

/* Many loads over reused memory, against the rule: the last load holding an address. */
static void test_random_against_last_load(void)
{
	enum { LOADS = 2000, SPACE = 4096 };
	static uint64_t starts[LOADS], sizes[LOADS];
	struct image im = { 0 };
	struct jitdump *jd;
	unsigned seed = 777, wrong = 0;
	char name[16];
	int err;

	header(&im);
	for (int i = 0; i < LOADS; i++) {
		seed = seed * 1103515245u + 12345u;
		starts[i] = (seed >> 8) % SPACE;
		seed = seed * 1103515245u + 12345u;
		sizes[i] = 1 + (seed >> 8) % (i % 10 == 0 ? 512 : 16);
		snprintf(name, sizeof(name), "f%d", i);
		load(&im, name, starts[i], sizes[i], (uint64_t)i);
	}
	jd = parse(&im, im.len, &err, NULL);
	for (uint64_t a = 0; a < SPACE + 600; a++) {
		int last = -1;

		for (int j = 0; j < LOADS; j++) {
			if (a >= starts[j] && a < starts[j] + sizes[j])
				last = j;
		}
		snprintf(name, sizeof(name), "f%d", last);
		wrong += !names(jd, a, last < 0 ? NULL : name);
	}
	check(err == 0 && wrong == 0, "random: %u addresses named by other than their last load", wrong);
	jitdump__free(jd);
	free(im.b);
}

/* The compiler's new entry point against its ELF one, on the same .eh_frame: the same rows. */
static void test_from_eh_frame_matches_image(void)
{
	const struct unwind_row *a_rows, *b_rows;
	struct unwind_table *a = NULL, *b = NULL;
	const char *path = fixture_path("chain_nofp");
	size_t a_nr, b_nr, size = 0;
	uint8_t *img = NULL;
	Elf64_Ehdr eh;
	Elf64_Shdr sh, strtab;
	FILE *f = fopen(path, "rb");
	bool found = false;

	if (f && fseek(f, 0, SEEK_END) == 0) {
		size = (size_t)ftell(f);
		img = malloc(size);
		rewind(f);
		if (!img || fread(img, 1, size, f) != size)
			size = 0;
	}
	if (f)
		fclose(f);
	if (size < sizeof(eh)) {
		check(false, "from_eh_frame: cannot read %s", path);
		free(img);
		return;
	}
	memcpy(&eh, img, sizeof(eh));
	memcpy(&strtab, img + eh.e_shoff + eh.e_shstrndx * sizeof(sh), sizeof(sh));
	for (unsigned i = 1; i < eh.e_shnum && !found; i++) {
		memcpy(&sh, img + eh.e_shoff + i * sizeof(sh), sizeof(sh));
		found = strcmp((const char *)img + strtab.sh_offset + sh.sh_name, ".eh_frame") == 0;
	}
	check(found && unwind_table__from_image(img, size, path, UNWIND_SRC_EH_FRAME, &a, NULL, 0) == 0 &&
		      unwind_table__from_eh_frame(img + sh.sh_offset, sh.sh_size, sh.sh_addr, path, &b, NULL,
						  0) == 0,
	      "from_eh_frame: chain_nofp's .eh_frame compiles both ways");
	a_rows = unwind_table__rows(a, &a_nr);
	b_rows = unwind_table__rows(b, &b_nr);
	check(a_nr > 10 && a_nr == b_nr && memcmp(a_rows, b_rows, a_nr * sizeof(*a_rows)) == 0,
	      "from_eh_frame: the same %zu rows as from the ELF image (%zu)", a_nr, b_nr);
	unwind_table__free(a);
	unwind_table__free(b);
	check(unwind_table__from_eh_frame(img, 0, 0, "empty", &b, NULL, 0) == -ENOENT && !b,
	      "from_eh_frame: an empty .eh_frame is -ENOENT");
	free(img);
}

/* ---- the live file ---- */

static void write_file(const char *path, const struct image *im, size_t len, const char *mode)
{
	FILE *f = fopen(path, mode);

	if (!f || fwrite(im->b, 1, len, f) != len)
		abort();
	fclose(f);
}

static void test_live_file(void)
{
	struct image im = { 0 };
	struct jitdump_stats st = { 0 };
	struct jitdump *jd;
	char path[64], link_path[80];
	uint8_t code[TRAMP_SIZE * 2];
	size_t first, n;
	int err;

	snprintf(path, sizeof(path), "/tmp/jit-%d.dump", (int)getpid());
	snprintf(link_path, sizeof(link_path), "%s.second-name", path);
	header(&im);
	tramp_unwind(&im, TRAMP_SIZE, false);
	load(&im, "py::first:/app/a.py", 0x10000, TRAMP_SIZE, 1);
	first = im.len;
	load(&im, "py::second:/app/a.py", 0x20000, TRAMP_SIZE, 2);
	/* the second record half written */
	write_file(path, &im, first + 20, "wb");
	if (jitdump__new((uint32_t)getpid(), NULL, &jd) != 0)
		abort();
	err = jitdump__load(jd);
	jitdump__stats(jd, &st);
	check(err == 0 && names(jd, 0x10000, "py::first:/app/a.py") && names(jd, 0x20000, NULL) &&
		      st.read == 1 && st.cut_records == 1,
	      "live: the complete record is read, the half-written one waits (%d)", err);
	write_file(path, &im, im.len, "wb");
	err = jitdump__load(jd);
	memset(&st, 0, sizeof(st));
	jitdump__stats(jd, &st);
	check(err == 0 && names(jd, 0x20000, "py::second:/app/a.py") && st.records == 3 && st.cut_records == 0,
	      "live: grown, the rest of it is read (%d, %" PRIu64 " records)", err, st.records);
	check(jitdump__read_code(jd, 0x10000, code, sizeof(code), &n) == 0 && n == TRAMP_SIZE &&
		      code[0] == 0x00 && code[TRAMP_SIZE - 1] == TRAMP_SIZE - 1,
	      "live: the code bytes are read from the file (%zu)", n);
	check(jitdump__unwind_table(jd, 0x10000, &(const struct unwind_table *){ NULL }, NULL, 0) == 0,
	      "live: its unwinding info compiles");
	jitdump__free(jd);

	/* replaced by another file: read again from its start */
	unlink(path);
	im.len = 0;
	header(&im);
	load(&im, "replacement", 0x10000, 8, 1);
	write_file(path, &im, im.len, "wb");
	if (jitdump__new((uint32_t)getpid(), path, &jd) != 0)
		abort();
	check(jitdump__load(jd) == 0 && names(jd, 0x10000, "replacement"), "live: a path given is read");
	if (link(path, link_path) == 0) {
		unlink(path);
		write_file(path, &im, im.len, "wb");
		/* a new file at the name: the old table goes */
		check(jitdump__load(jd) == 0 && names(jd, 0x10004, "replacement"), "live: a new file is read whole");
		unlink(path);
		if (link(link_path, path) == 0) {
			err = jitdump__load(jd);
			memset(&st, 0, sizeof(st));
			jitdump__stats(jd, &st);
			check(err == -EPERM && st.refused == 1, "live: a file with a second name is refused (%d)", err);
		}
		unlink(link_path);
	}
	unlink(path);
	if (symlink("/etc/hostname", path) == 0) {
		err = jitdump__load(jd);
		check(err == -EPERM, "live: a symlink at the name is refused (%d)", err);
		unlink(path);
	}
	if (mkfifo(path, 0600) == 0) {
		err = jitdump__load(jd);
		check(err == -EPERM, "live: a FIFO is refused without blocking (%d)", err);
		unlink(path);
	}
	im.len = 0;
	header_with(&im, 0x4A695444, 1, 40, EM_AARCH64, 0);
	write_file(path, &im, im.len, "wb");
	err = jitdump__load(jd);
	memset(&st, 0, sizeof(st));
	jitdump__stats(jd, &st);
	check(err == -EINVAL && st.bad_header == 1 && jitdump__load(jd) == -EINVAL,
	      "live: a bad header is -EINVAL, again on the next read (%d)", err);
	unlink(path);
	jitdump__free(jd);
	free(im.b);
}

static void test_empty(void)
{
	struct jitdump *jd = new_table();
	struct jitdump_code c;

	check(jitdump__find(jd, 0x1000, &c) == -ENOENT && names(jd, 0x1000, NULL),
	      "empty: a table with no file names nothing");
	check(jitdump__lookup(NULL, 1) == NULL && jitdump__find(NULL, 1, &c) == -ENOENT,
	      "empty: no table names nothing");
	jitdump__free(NULL);
	jitdump__free(jd);
}

int main(void)
{
	test_names_and_overlaps();
	test_unwinding_info();
	test_misplaced_and_bad_unwind();
	test_cut_short();
	test_hostile_sizes();
	test_bad_headers();
	test_random_against_last_load();
	test_from_eh_frame_matches_image();
	test_live_file();
	test_empty();
	return failures ? 1 : 0;
}
