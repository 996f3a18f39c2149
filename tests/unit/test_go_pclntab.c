/* Unit tests of Go's function tables (user/cfi/go_pclntab.h) on a table built here, in Go
 * 1.18's layout: two functions, their names, their pcsp tables; then the same table cut
 * short or with hostile offsets, which must give no function or an error, never a read
 * outside it (run under the fuzz build's sanitizers by tests/fuzz/fuzz_gopclntab.c). */
#include <errno.h>
#include <string.h>

#include "cfi/go_pclntab.h"
#include "check.h"

#define TEXT 0x401000u
#define HEADER 72
/* "\0main.a\0main.b\0": main.a at 1, main.b at 8 */
static const char NAMES[] = "\0main.a\0main.b";
/* pcsp tables, at 1 and 7 (0 means none): (zigzag value delta, pc delta) pairs, 0 ends.
 * main.a: 0 for 4 bytes, 24 for 0x1c, 0 for 1 (its ret); main.b: 0 for 0x10. */
static const uint8_t PCTAB[] = { 0, 2, 4, 48, 0x1c, 47, 1, 0, 2, 0x10, 0 };
#define FUNC_SIZE 40

struct table {
	uint8_t bytes[512];
	size_t size, names, pctab, pcln;
};

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* One function's record: entry offset, name offset, pcsp offset, flag. */
static void put_func(uint8_t *p, uint32_t entry, uint32_t name, uint32_t pcsp, uint8_t flag)
{
	memset(p, 0, FUNC_SIZE);
	put32(p, entry);
	put32(p + 4, name);
	put32(p + 16, pcsp);
	p[37] = flag;
}

static void build(struct table *t)
{
	uint8_t *b = t->bytes;

	memset(t, 0, sizeof(*t));
	t->names = HEADER;
	t->pctab = t->names + sizeof(NAMES);
	t->pcln = t->pctab + sizeof(PCTAB);
	put32(b, 0xfffffff0u);
	b[6] = 1;
	b[7] = 8;
	put64(b + 8, 2);                  /* nfunc */
	put64(b + 24, TEXT);              /* textStart */
	put64(b + 32, t->names);          /* funcnameOffset */
	put64(b + 40, t->pctab);          /* cuOffset: the tables between are empty */
	put64(b + 48, t->pctab);          /* filetabOffset */
	put64(b + 56, t->pctab);          /* pctabOffset */
	put64(b + 64, t->pcln);           /* pclnOffset */
	memcpy(b + t->names, NAMES, sizeof(NAMES));
	memcpy(b + t->pctab, PCTAB, sizeof(PCTAB));
	/* functab: (entry, record) pairs, then the end of the text */
	put32(b + t->pcln, 0);
	put32(b + t->pcln + 4, 24);
	put32(b + t->pcln + 8, 0x40);
	put32(b + t->pcln + 12, 24 + FUNC_SIZE);
	put32(b + t->pcln + 16, 0x60);
	put_func(b + t->pcln + 24, 0, 1, 1, 0);
	put_func(b + t->pcln + 24 + FUNC_SIZE, 0x40, 8, 8, GO_FUNC_TOPFRAME);
	t->size = t->pcln + 24 + 2 * FUNC_SIZE;
}

struct stretches {
	uint64_t lo[8], hi[8];
	int32_t delta[8];
	int n;
};

static int collect(void *arg, uint64_t lo, uint64_t hi, int32_t delta)
{
	struct stretches *s = arg;

	if (s->n == 8)
		return -E2BIG;
	s->lo[s->n] = lo;
	s->hi[s->n] = hi;
	s->delta[s->n++] = delta;
	return 0;
}

static void test_good_table(void)
{
	struct table t;
	struct go_pclntab go;
	struct go_func f;
	struct stretches s = { 0 };
	const char *name;

	build(&t);
	check(go_pclntab__parse(t.bytes, t.size, &go) == 0 && go.nfunc == 2 && go.text == TEXT,
	      "go_pclntab: a Go 1.18 table parses: 2 functions from 0x%x", TEXT);
	check(go_pclntab__func_at(&go, TEXT + 0x10, &f) && f.entry == TEXT && f.end == TEXT + 0x40 &&
		      (name = go_pclntab__name(&go, &f)) && strcmp(name, "main.a") == 0 && f.flag == 0,
	      "go_pclntab: a pc in the first function finds main.a [0x401000, 0x401040)");
	check(go_pclntab__func_at(&go, TEXT + 0x5f, &f) && f.entry == TEXT + 0x40 &&
		      (name = go_pclntab__name(&go, &f)) && strcmp(name, "main.b") == 0 &&
		      f.flag == GO_FUNC_TOPFRAME,
	      "go_pclntab: the last byte of the text finds main.b, flagged TOPFRAME");
	check(!go_pclntab__func_at(&go, TEXT - 1, &f) && !go_pclntab__func_at(&go, TEXT + 0x60, &f),
	      "go_pclntab: no function below the first or at the end of the text");
	go_pclntab__func_at(&go, TEXT, &f);
	check(go_pclntab__sp_deltas(&go, &f, collect, &s) == 0 && s.n == 3 &&
		      s.lo[0] == TEXT && s.hi[0] == TEXT + 4 && s.delta[0] == 0 &&
		      s.lo[1] == TEXT + 4 && s.hi[1] == TEXT + 0x20 && s.delta[1] == 24 &&
		      s.lo[2] == TEXT + 0x20 && s.hi[2] == TEXT + 0x21 && s.delta[2] == 0,
	      "go_pclntab: main.a's pcsp: 0, then 24 from +4, then 0 at its ret; none in its padding");
}

static void test_hostile_tables(void)
{
	struct table t;
	struct go_pclntab go;
	struct go_func f;
	struct stretches s = { 0 };

	build(&t);
	check(go_pclntab__parse(t.bytes, HEADER - 1, &go) == -EINVAL,
	      "go_pclntab: a header cut short is refused");
	check(go_pclntab__parse(t.bytes, t.pcln + 16, &go) == -EINVAL,
	      "go_pclntab: a function table past the section's end is refused");
	put32(t.bytes, 0xfffffffbu);
	check(go_pclntab__parse(t.bytes, t.size, &go) == -ENOTSUP,
	      "go_pclntab: Go 1.2's layout is named unsupported");
	build(&t);
	t.bytes[7] = 4;
	check(go_pclntab__parse(t.bytes, t.size, &go) == -EINVAL,
	      "go_pclntab: a 32-bit table is refused");
	build(&t);
	put64(t.bytes + 8, 1ull << 40);
	check(go_pclntab__parse(t.bytes, t.size, &go) == -EINVAL,
	      "go_pclntab: a function count the section cannot hold is refused");

	/* a function's record outside the section, a name outside the names */
	build(&t);
	put32(t.bytes + t.pcln + 4, 4096);
	go_pclntab__parse(t.bytes, t.size, &go);
	check(!go_pclntab__func_at(&go, TEXT, &f) && go_pclntab__func_at(&go, TEXT + 0x40, &f),
	      "go_pclntab: a record outside the section gives no function, its neighbour still one");
	build(&t);
	put32(t.bytes + t.pcln + 24 + 4, 1000);
	go_pclntab__parse(t.bytes, t.size, &go);
	check(!go_pclntab__func_at(&go, TEXT, &f), "go_pclntab: a name outside the names: no function");
	/* a record whose entry is not its table entry's */
	build(&t);
	put32(t.bytes + t.pcln + 24, 0x8);
	go_pclntab__parse(t.bytes, t.size, &go);
	check(!go_pclntab__func_at(&go, TEXT + 0x10, &f),
	      "go_pclntab: a record that disagrees with the table on its entry: no function");
	/* entries out of order */
	build(&t);
	put32(t.bytes + t.pcln + 8, 0x70);
	go_pclntab__parse(t.bytes, t.size, &go);
	check(!go_pclntab__func(&go, 1, &f),
	      "go_pclntab: a function whose entry lies past the next one's is refused");

	/* pcsp tables that run off the table, or do not move the pc */
	build(&t);
	go_pclntab__parse(t.bytes, t.size, &go);
	go_pclntab__func_at(&go, TEXT, &f);
	f.pcsp = (uint32_t)sizeof(PCTAB) - 1;
	check(go_pclntab__sp_deltas(&go, &f, collect, &s) == -EINVAL,
	      "go_pclntab: a pcsp table that runs past pctab's end is an error");
	f.pcsp = 0;
	check(go_pclntab__sp_deltas(&go, &f, collect, &s) == -EINVAL,
	      "go_pclntab: a function without a pcsp table is an error");
	t.bytes[t.pctab + 2] = 0;
	f.pcsp = 1;
	check(go_pclntab__sp_deltas(&go, &f, collect, &s) == -EINVAL,
	      "go_pclntab: a step that does not move the pc is an error");
	build(&t);
	memset(t.bytes + t.pctab + 1, 0xff, 6);
	go_pclntab__parse(t.bytes, t.size, &go);
	s.n = 0;
	check(go_pclntab__sp_deltas(&go, &f, collect, &s) == -EINVAL && s.n == 0,
	      "go_pclntab: a varint longer than 32 bits is an error");
}

int main(void)
{
	test_good_table();
	test_hostile_tables();
	return failures ? 1 : 0;
}
