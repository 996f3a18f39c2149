/* Where code without CFI or symbols starts its functions (user/binary/code_starts.c), on
 * pinned code: the bytes below are this assembly at 0x2000 (as, objcopy -O binary).
 *
 *   f_a:  0x2000  push %rbx; call f_e; call f_c; pop %rbx; ret; int3 x3
 *   f_b:  0x2010  test %edi,%edi; je 1f; ret; 1: xor %eax,%eax; ret     (1: at 0x2015)
 *                 nopl 0x0(%rax,%rax,1)
 *   f_c:  0x2020  mov $100,%eax; 2: dec %eax; jne 2b; jmp 3f
 *                 .byte 6, 6 (no instruction in 64-bit mode); nopl (%rax) x2
 *                 3: ret                                               (3: at 0x2033)
 *   f_e:  0x2034  mov %rdi,%rax; ret; int3 x8
 *   f_f:  0x2040  ud2
 *
 * f_a starts the stretch; f_b, f_c and f_f follow a ret and padding at a 16-byte
 * boundary; f_e follows a ret with no padding, off a boundary, and only f_a's call
 * shows it; f_c is also called. 1: and 3: are inside functions: after a ret with no
 * padding, and after bytes that do not decode. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "binary/code_starts.h"
#include "check.h"

static const uint8_t code[] = {
	0x53, 0xe8, 0x2e, 0x00, 0x00, 0x00, 0xe8, 0x15, 0x00, 0x00, 0x00, 0x5b,
	0xc3, 0xcc, 0xcc, 0xcc, 0x85, 0xff, 0x74, 0x01, 0xc3, 0x31, 0xc0, 0xc3,
	0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00, 0xb8, 0x64, 0x00, 0x00,
	0x00, 0xff, 0xc8, 0x75, 0xfc, 0xeb, 0x08, 0x06, 0x06, 0x0f, 0x1f, 0x00,
	0x0f, 0x1f, 0x00, 0xc3, 0x48, 0x89, 0xf8, 0xc3, 0xcc, 0xcc, 0xcc, 0xcc,
	0xcc, 0xcc, 0xcc, 0xcc, 0x0f, 0x0b,
};

#define BASE 0x2000u
enum { F_A = 0x2000, F_B = 0x2010, F_B_TAIL = 0x2015, F_C = 0x2020, F_C_TAIL = 0x2033,
       F_E = 0x2034, F_F = 0x2040 };

struct starts {
	uint64_t v[64];
	size_t n;
};

/* The sweep's boundaries and call targets: its candidate starts. */
static void add(void *arg, enum code_mark mark, uint64_t at, uint64_t from)
{
	struct starts *s = arg;

	(void)from;
	if (s->n < 64 && (mark == CODE_MARK_BOUNDARY || mark == CODE_MARK_CALLED))
		s->v[s->n++] = at;
}

static bool has(const struct starts *s, uint64_t start)
{
	for (size_t i = 0; i < s->n; i++) {
		if (s->v[i] == start)
			return true;
	}
	return false;
}

/* Sweeps the code fed window bytes at a time (as a file is read in chunks). */
static bool sweep(size_t window, bool known_start, struct starts *out)
{
	struct code_sweep s;
	bool done = false;

	memset(out, 0, sizeof(*out));
	code_sweep__init(&s, BASE, BASE + sizeof(code), known_start);
	while (!done && s.pc < BASE + sizeof(code)) {
		uint64_t at = s.pc;
		size_t off = at - BASE, len = sizeof(code) - off < window ? sizeof(code) - off : window;
		struct code_bytes w = { code + off, at, len };

		done = code_sweep__run(&s, &w, add, out);
		if (!done && s.pc == at)
			return false; /* no progress: a window too small to hold an instruction */
	}
	return true;
}

static void check_starts(const char *how, const struct starts *s, bool known_start)
{
	static const struct { uint64_t at; const char *what; bool start; } want[] = {
		{ F_B, "f_b (after ret and int3, aligned)", true },
		{ F_C, "f_c (after ret and nop, aligned; called)", true },
		{ F_E, "f_e (only a call shows it)", true },
		{ F_F, "f_f (after ret and int3, aligned)", true },
		{ F_B_TAIL, "f_b's code after its first ret (no padding, not aligned)", false },
		{ F_C_TAIL, "f_c's code after bytes that do not decode", false },
	};

	check(has(s, F_A) == known_start, "%s: f_a, the stretch's first instruction, is a start %s",
	      how, known_start ? "when the stretch begins at a function's end" : "only when known");
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		check(has(s, want[i].at) == want[i].start, "%s: %s %s a start", how, want[i].what,
		      want[i].start ? "is" : "is not");
	check(s->n <= 6, "%s: no other start (%zu reports, calls counted again)", how, s->n);
}

static void test_sweep(void)
{
	struct starts s;

	check(sweep(sizeof(code), true, &s), "whole: the sweep reaches the end");
	check_starts("whole", &s, true);
	check(sweep(sizeof(code), false, &s), "whole, start unknown: the sweep reaches the end");
	check_starts("whole, start unknown", &s, false);
	/* 16-byte windows: instructions near a window's end wait for the next */
	check(sweep(16, true, &s), "16-byte windows: the sweep reaches the end");
	check_starts("16-byte windows", &s, true);
}

/* A source reading the pinned bytes, failing past fail_at (a file cut short). */
struct pinned {
	uint64_t fail_at;
	unsigned reads;
};

static ssize_t read_pinned(void *arg, uint64_t vaddr, uint8_t *buf, size_t len)
{
	struct pinned *p = arg;

	p->reads++;
	if (vaddr < BASE || vaddr >= p->fail_at)
		return -EIO;
	if (len > p->fail_at - vaddr)
		len = p->fail_at - vaddr;
	memcpy(buf, code + (vaddr - BASE), len);
	return (ssize_t)len;
}

static void test_find(void)
{
	struct pinned p = { .fail_at = BASE + sizeof(code) };
	struct code_source src = { .table = NULL, .seg_start = BASE,
				   .seg_end = BASE + sizeof(code), .read = read_pinned, .arg = &p };
	struct code_starts *cache = NULL;
	uint64_t start = 0;
	unsigned reads;

	int err = code_starts__find(&cache, &src, F_B_TAIL, &start);

	check(err == 0 && start == F_B, "find: f_b's tail is named after f_b (0x%llx)",
	      (unsigned long long)start);
	reads = p.reads;
	check(code_starts__find(&cache, &src, F_C_TAIL, &start) == 0 && start == F_C &&
		      p.reads == reads,
	      "find: f_c's tail after f_c, from the stretch swept before (%u more reads)",
	      p.reads - reads);
	check(code_starts__find(&cache, &src, F_E + 3, &start) == 0 && start == F_E,
	      "find: f_e's ret after f_e");
	/* no CFI at all: the segment's start is not known to start a function */
	check(code_starts__find(&cache, &src, F_A + 6, &start) == -ENOENT,
	      "find: code before the first start found has no start");
	check(code_starts__find(&cache, &src, BASE + sizeof(code), &start) == -ENOENT,
	      "find: an address outside the segment has no start");
	check(code_starts__bytes(cache) > 0, "find: the sweeps' bytes are counted");
	code_starts__free(cache);

	/* a file cut short: what lies past the cut is not named after a start before it */
	cache = NULL;
	p = (struct pinned){ .fail_at = F_E };
	check(code_starts__find(&cache, &src, F_C + 1, &start) == 0 && start == F_C,
	      "cut short: code before the cut is named");
	check(code_starts__find(&cache, &src, F_F, &start) == -ENOENT,
	      "cut short: code past the cut is not named after a start before it");
	code_starts__free(cache);
}

/* Labels inside functions that assemblers align after a jump: the loops of GMP and x86inc,
 * and a computed jump's target. At 0x3000:
 *
 *   g_0:  0x3000  ret; int3 x15
 *   g_a:  0x3010  push %rbx; jmp 2f; (nop) 1: add %rax,%rbx; 2: dec %rdi; jne 1b; pop %rbx;
 *                 ret                                   (1: at 0x3020, a branch's target)
 *   g_b:  0x3030  mov %rdi,%rax; jmp 4f; (nop) 3: inc %rax; cmp %rsi,%rax; jmp 3b; 4: ret
 *                                                       (3: at 0x3040, a jump back's target)
 *   g_c:  0x3050  lea 5f(%rip),%rax; jmp *%rax; (nop) 5: ret   (5: at 0x3060, lea's target)
 *   g_d:  0x3070  ud2
 */
static const uint8_t labels[] = {
	0xc3, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc,
	0xcc, 0xcc, 0xcc, 0xcc, 0x53, 0xeb, 0x10, 0x66, 0x66, 0x2e, 0x0f, 0x1f,
	0x84, 0x00, 0x00, 0x00, 0x00, 0x00, 0x66, 0x90, 0x48, 0x01, 0xc3, 0x48,
	0xff, 0xcf, 0x75, 0xf8, 0x5b, 0xc3, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc,
	0x48, 0x89, 0xf8, 0xeb, 0x13, 0x66, 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x48, 0xff, 0xc0, 0x48, 0x39, 0xf0, 0xeb, 0xf8,
	0xc3, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0x48, 0x8d, 0x05, 0x09,
	0x00, 0x00, 0x00, 0xff, 0xe0, 0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00,
	0xc3, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc,
	0xcc, 0xcc, 0xcc, 0xcc, 0x0f, 0x0b,
};

enum { G_A = 0x3010, G_A_LOOP = 0x3020, G_B = 0x3030, G_B_LOOP = 0x3040, G_C = 0x3050,
       G_C_LABEL = 0x3060, G_D = 0x3070 };

static ssize_t read_labels(void *arg, uint64_t vaddr, uint8_t *buf, size_t len)
{
	(void)arg;
	if (vaddr < 0x3000 || vaddr >= 0x3000 + sizeof(labels))
		return -EIO;
	if (len > 0x3000 + sizeof(labels) - vaddr)
		len = 0x3000 + sizeof(labels) - vaddr;
	memcpy(buf, labels + (vaddr - 0x3000), len);
	return (ssize_t)len;
}

static void test_labels(void)
{
	static const struct { uint64_t at, start; const char *what; } want[] = {
		{ G_A_LOOP + 1, G_A, "a loop's head after a jump, a branch's target, is g_a's" },
		{ G_B_LOOP + 1, G_B, "a loop's head a jump comes back to is g_b's" },
		{ G_C_LABEL, G_C, "a label a lea takes just ahead is g_c's" },
		{ G_D, G_D, "g_d, after them, starts a function" },
	};
	struct code_source src = { .seg_start = 0x3000, .seg_end = 0x3000 + sizeof(labels),
				   .read = read_labels };
	struct code_starts *cache = NULL;

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		uint64_t start = 0;
		int err = code_starts__find(&cache, &src, want[i].at, &start);

		check(err == 0 && start == want[i].start, "labels: %s (0x%llx)", want[i].what,
		      (unsigned long long)start);
	}
	code_starts__free(cache);
}

int main(void)
{
	test_sweep();
	test_find();
	test_labels();
	return failures ? 1 : 0;
}
