/* bench_code_starts [--as-if-no-cfi] ELF [SYMBOLS]: how well the function starts that
 * binary/code_starts.c finds in code without CFI or symbols name its frames, against the
 * function symbols of ELF (or of SYMBOLS, its separate debug file).
 *
 * Every byte of every function symbol that no FDE covers (with --as-if-no-cfi, of every
 * function symbol: the file taken to have no CFI at all) is looked up as a frame there
 * would be named without symbols; it is named right when the start found is the symbol's.
 * Per function: whole (every byte right), split (some byte named after a start inside the
 * function: one function shown as two or more), merged (some byte named after an earlier
 * function's start, or none). Prints one "bench:" line per file for bench/b_nocfi.sh. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "binary/code_starts.h"
#include "cfi/unwind_table.h"

struct file {
	const uint8_t *bytes;
	size_t size;
	Elf *elf;
};

struct text {
	const uint8_t *bytes; /* the executable segment's file bytes */
	uint64_t vaddr, size;
};

struct function {
	uint64_t start, size;
};

struct tally {
	uint64_t functions, whole, split, merged, bytes, bytes_right;
};

static int open_file(const char *path, struct file *f)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	void *map;

	if (fd < 0 || fstat(fd, &st) != 0) {
		perror(path);
		return -1;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -1;
	*f = (struct file){ map, (size_t)st.st_size, elf_memory(map, (size_t)st.st_size) };
	return f->elf ? 0 : -1;
}

static int find_text(const struct file *f, struct text *t)
{
	size_t n;

	if (elf_getphdrnum(f->elf, &n) != 0)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(f->elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    !(ph.p_flags & PF_X))
			continue;
		if (ph.p_offset > f->size || ph.p_filesz > f->size - ph.p_offset)
			return -EINVAL;
		*t = (struct text){ f->bytes + ph.p_offset, ph.p_vaddr, ph.p_filesz };
		return 0;
	}
	return -ENOENT;
}

static int cmp_function(const void *a, const void *b)
{
	const struct function *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* The function symbols in the text (.symtab's, else .dynsym's), one per start, ascending. */
static size_t read_functions(const struct file *f, const struct text *t, struct function **out)
{
	Elf_Scn *scn = NULL;
	Elf64_Word type = SHT_SYMTAB;

	while ((scn = elf_nextscn(f->elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
			break;
	}
	if (!scn)
		type = SHT_DYNSYM;
	scn = NULL;
	size_t n = 0, cap = 0, kept = 0;
	struct function *v = NULL;

	while ((scn = elf_nextscn(f->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type ||
		    !(data = elf_getdata(scn, NULL)) || sh.sh_entsize == 0)
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;

			if (!gelf_getsym(data, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    sym.st_size == 0 || sym.st_value < t->vaddr ||
			    sym.st_value - t->vaddr >= t->size)
				continue;
			if (n == cap) {
				cap = cap ? 2 * cap : 1024;
				v = realloc(v, cap * sizeof(*v));
				if (!v)
					exit(1);
			}
			v[n++] = (struct function){ sym.st_value, sym.st_size };
		}
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_function);
	for (size_t i = 0; i < n; i++) {
		if (kept == 0 || v[kept - 1].start != v[i].start)
			v[kept++] = v[i];
	}
	*out = v;
	return kept;
}

static ssize_t read_text(void *arg, uint64_t vaddr, uint8_t *buf, size_t len)
{
	const struct text *t = arg;

	if (vaddr < t->vaddr || vaddr - t->vaddr >= t->size)
		return -EIO;
	if (len > t->size - (vaddr - t->vaddr))
		len = t->size - (vaddr - t->vaddr);
	memcpy(buf, t->bytes + (vaddr - t->vaddr), len);
	return (ssize_t)len;
}

static void judge_function(struct code_starts **cache, const struct code_source *src,
			   const struct function *fn, struct tally *tl)
{
	bool split = false, merged = false;
	uint64_t end = fn->start + fn->size, start;

	if (fn->size > src->seg_end - fn->start)
		end = src->seg_end;
	tl->functions++;
	for (uint64_t a = fn->start; a < end; a++) {
		tl->bytes++;
		if (code_starts__find(cache, src, a, &start) != 0 || start < fn->start)
			merged = true;
		else if (start > fn->start)
			split = true;
		else
			tl->bytes_right++;
	}
	if ((split || merged) && getenv("BENCH_CODE_STARTS_SHOW"))
		fprintf(stderr, "%s function %#lx+%#lx\n", split ? "split" : "merged",
			(unsigned long)fn->start, (unsigned long)fn->size);
	tl->whole += !split && !merged;
	tl->split += split;
	tl->merged += merged;
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static int bench(const char *path, const char *symbols, bool as_if_no_cfi)
{
	struct unwind_table *table = NULL;
	struct code_starts *cache = NULL;
	struct file bin, syms;
	struct function *fns = NULL;
	struct tally tl = { 0 };
	struct timespec t0, t1;
	struct text t;
	size_t n;
	char err[256];

	if (open_file(path, &bin) != 0 || find_text(&bin, &t) != 0 ||
	    (symbols && open_file(symbols, &syms) != 0)) {
		fprintf(stderr, "bench_code_starts: cannot read %s\n", symbols ? symbols : path);
		return 1;
	}
	if (!as_if_no_cfi &&
	    unwind_table__from_file(path, UNWIND_SRC_ALL, &table, err, sizeof(err)) != 0)
		table = NULL; /* no CFI: every function is judged */
	n = read_functions(symbols ? &syms : &bin, &t, &fns);
	struct code_source src = { .table = table, .seg_start = t.vaddr,
				   .seg_end = t.vaddr + t.size, .read = read_text, .arg = &t };

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (size_t i = 0; i < n; i++) {
		if (!unwind_table__find(table, fns[i].start))
			judge_function(&cache, &src, &fns[i], &tl);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("bench: %s%s functions %lu whole %.1f%% split %.1f%% merged %.1f%% bytes_named_right %.1f%% "
	       "starts_kib %.1f ms %.1f\n",
	       path, as_if_no_cfi ? " (as if no CFI)" : "", (unsigned long)tl.functions,
	       pct(tl.whole, tl.functions), pct(tl.split, tl.functions), pct(tl.merged, tl.functions),
	       pct(tl.bytes_right, tl.bytes), (double)code_starts__bytes(cache) / 1024.0,
	       (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
	code_starts__free(cache);
	unwind_table__free(table);
	free(fns);
	return 0;
}

int main(int argc, char **argv)
{
	bool as_if_no_cfi = argc > 1 && strcmp(argv[1], "--as-if-no-cfi") == 0;
	int first = as_if_no_cfi ? 2 : 1;

	if (argc - first < 1 || argc - first > 2) {
		fprintf(stderr, "usage: bench_code_starts [--as-if-no-cfi] ELF [SYMBOLS]\n");
		return 2;
	}
	elf_version(EV_CURRENT);
	return bench(argv[first], argc - first == 2 ? argv[first + 1] : NULL, as_if_no_cfi);
}
