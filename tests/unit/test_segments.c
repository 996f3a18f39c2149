/* Unit tests for translating addresses in executable mappings to ELF virtual addresses
 * (elf_symbols__offset_to_vaddr, module__addr_to_vaddr, module__bias) over hand-built
 * program headers: GNU ld's page-aligned layout, LLD's and Rust's (the executable segment's
 * file offset is not page-aligned, so the mapping's page offset falls in the read-only
 * segment before it), and hostile headers. Prints one "ok - NAME" / "not ok - NAME" line
 * per check. */
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "binary/modules.h"
#include "binary/symbols.h"
#include "check.h"

#define MAX_PHDRS 8

struct image {
	Elf64_Ehdr ehdr;
	Elf64_Phdr phdrs[MAX_PHDRS];
};

struct seg {
	uint64_t offset, vaddr, filesz;
	uint32_t flags;
};

/* An ELF image with only program headers: all the translation reads. */
static struct elf_symbols *load(const struct seg *segs, int n)
{
	static struct image img;
	struct elf_symbols *syms = NULL;
	char err[160];

	memset(&img, 0, sizeof(img));
	memcpy(img.ehdr.e_ident, ELFMAG, SELFMAG);
	img.ehdr.e_ident[EI_CLASS] = ELFCLASS64;
	img.ehdr.e_ident[EI_DATA] = ELFDATA2LSB;
	img.ehdr.e_ident[EI_VERSION] = EV_CURRENT;
	img.ehdr.e_type = ET_DYN;
	img.ehdr.e_machine = EM_X86_64;
	img.ehdr.e_version = EV_CURRENT;
	img.ehdr.e_phoff = offsetof(struct image, phdrs);
	img.ehdr.e_ehsize = sizeof(Elf64_Ehdr);
	img.ehdr.e_phentsize = sizeof(Elf64_Phdr);
	img.ehdr.e_phnum = (Elf64_Half)n;
	for (int i = 0; i < n; i++)
		img.phdrs[i] = (Elf64_Phdr){
			.p_type = PT_LOAD,
			.p_flags = segs[i].flags,
			.p_offset = segs[i].offset,
			.p_vaddr = segs[i].vaddr,
			.p_paddr = segs[i].vaddr,
			.p_filesz = segs[i].filesz,
			.p_memsz = segs[i].filesz,
			.p_align = 0x1000,
		};
	if (elf_symbols__load_image(&img, sizeof(img), &syms, err, sizeof(err)) != 0) {
		printf("# load: %s\n", err);
		return NULL;
	}
	return syms;
}

/* vaddr of addr in an executable mapping [start, ...) at page offset pgoff, or ~0. */
static uint64_t translate(struct elf_symbols *syms, uint64_t start, uint64_t pgoff, uint64_t addr)
{
	struct module mod = { .syms = syms };
	struct mapping m = { .start = start, .end = start + 0x100000, .file_offset = pgoff };
	uint64_t vaddr;

	return module__addr_to_vaddr(&mod, &m, addr, &vaddr) ? ~0ull : vaddr;
}

static int64_t bias(struct elf_symbols *syms, uint64_t start, uint64_t pgoff)
{
	struct module mod = { .syms = syms };
	struct mapping m = { .start = start, .end = start + 0x1000, .file_offset = pgoff };
	int64_t b = 0;

	return module__bias(&mod, &m, &b) ? -1 : b;
}

/* GNU ld: the executable segment starts on a page of the file. */
static void test_page_aligned(void)
{
	const struct seg segs[] = {
		{ 0x0, 0x0, 0x628, PF_R },
		{ 0x1000, 0x1000, 0x1b5, PF_R | PF_X },
		{ 0x2000, 0x2000, 0x100, PF_R },
		{ 0x2db8, 0x3db8, 0x258, PF_R | PF_W },
	};
	struct elf_symbols *syms = load(segs, 4);

	check(syms, "page-aligned: image loads");
	if (!syms)
		return;
	check(translate(syms, 0x555555555000, 0x1000, 0x555555555139) == 0x1139,
	      "page-aligned: text address -> its vaddr");
	check(bias(syms, 0x555555555000, 0x1000) == 0x555555554000, "page-aligned: load bias");
	elf_symbols__free(syms);
}

/* LLD (clang -fuse-ld=lld): LOAD R E at offset 0x7d0, vaddr 0x17d0; the kernel maps it from
 * file page 0, which the read-only segment at offset 0 holds too. */
static void test_lld(void)
{
	const struct seg segs[] = {
		{ 0x0, 0x0, 0x7c4, PF_R },
		{ 0x7d0, 0x17d0, 0x2a0, PF_R | PF_X },
		{ 0xa70, 0x2a70, 0x1e8, PF_R | PF_W },
	};
	struct elf_symbols *syms = load(segs, 3);

	check(syms, "lld: image loads");
	if (!syms)
		return;
	check(translate(syms, 0x555555555000, 0x0, 0x5555555558f9) == 0x18f9,
	      "lld: text address -> the executable segment's vaddr, not the read-only one's");
	check(bias(syms, 0x555555555000, 0x0) == 0x555555554000, "lld: load bias");
	elf_symbols__free(syms);
}

/* rust-lld: LOAD R E at offset 0x13a30, vaddr 0x14a30, mapped from file page 0x13000. */
static void test_rust_lld(void)
{
	const struct seg segs[] = {
		{ 0x0, 0x0, 0x13a24, PF_R },
		{ 0x13a30, 0x14a30, 0x3e480, PF_R | PF_X },
		{ 0x51eb0, 0x53eb0, 0x2908, PF_R | PF_W },
		{ 0x547b8, 0x577b8, 0x9c0, PF_R | PF_W },
	};
	struct elf_symbols *syms = load(segs, 4);

	check(syms, "rust-lld: image loads");
	if (!syms)
		return;
	/* The mapping's first page holds the end of the read-only segment's bytes too. */
	check(translate(syms, 0x7f0000014000, 0x13000, 0x7f0000014a30) == 0x14a30,
	      "rust-lld: the segment's first byte");
	check(translate(syms, 0x7f0000014000, 0x13000, 0x7f0000014b94) == 0x14b94,
	      "rust-lld: a text address");
	/* A mapping split by mprotect starts inside the segment. */
	check(translate(syms, 0x7f0000020000, 0x1f000, 0x7f0000020010) == 0x20010,
	      "rust-lld: a mapping starting mid-segment");
	check(bias(syms, 0x7f0000014000, 0x13000) == 0x7f0000000000, "rust-lld: load bias");
	elf_symbols__free(syms);
}

/* Hostile or odd headers: no wrap-around, no executable segment, nothing that holds it. */
static void test_hostile(void)
{
	const struct seg huge[] = {
		{ 0x0, 0x0, 0x1000, PF_R },
		{ 0x1010, 0x2010, UINT64_MAX, PF_R | PF_X },
	};
	const struct seg no_exec[] = {
		{ 0x0, 0x0, 0x3000, PF_R },
	};
	struct elf_symbols *syms = load(huge, 2);
	uint64_t vaddr;

	check(syms && translate(syms, 0x400000, 0x1000, 0x400020) == 0x2020,
	      "hostile: a segment size of 2^64-1 does not wrap");
	check(syms && elf_symbols__offset_to_vaddr(syms, 0x0, 0x0, &vaddr) == 0 && vaddr == 0,
	      "hostile: a page before every executable segment falls back to the segment holding it");
	elf_symbols__free(syms);
	syms = load(no_exec, 1);
	/* Mapped executable against its flags (READ_IMPLIES_EXEC): the segment holding it. */
	check(syms && translate(syms, 0x400000, 0x1000, 0x400123) == 0x1123,
	      "no executable segment: the segment holding the offset");
	check(syms && elf_symbols__offset_to_vaddr(syms, 0x5000, 0x5000, &vaddr) == -ENOENT,
	      "no segment holds the offset: -ENOENT");
	elf_symbols__free(syms);
}

int main(void)
{
	test_page_aligned();
	test_lld();
	test_rust_lld();
	test_hostile();
	return failures ? 1 : 0;
}
