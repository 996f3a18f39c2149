/* No frame pointers; JIT code laid out as QEMU's TCG lays it out, and described to
 * debuggers through gdb's JIT interface, for tests/t_nocfi.sh. Usage: nofp_gdbjit SECONDS
 * [--no-register], SECONDS of CPU time. True call chains:
 *
 *   main -> run_block -> gdbjit_block
 *   main -> run_block -> the prologue or epilogue ([jit]: no FDE, no symbol covers them)
 *   main -> setup -> (libc)                        code and its ELF image, before the loop
 *   main -> parse_options -> (libc)
 *   main -> workload_seconds, workload_cpu_now (workload.h) -> (libc)
 *
 * A 1 MiB executable buffer holds a prologue at its start (pushes the six callee-saved
 * registers, takes 1 KiB of zeroed frame, jumps to the block its second argument names),
 * the epilogue right after it, and gdbjit_block 512 KiB further: a loop that counts its
 * first argument down and jumps back to the epilogue. The block runs in the prologue's
 * frame, as a translated block does: its code alone never shows a return (the jump back
 * lies far outside anything read around it), so only the CFI the program registers says
 * where its caller is. The registration is an ELF image built in memory, as QEMU's
 * tcg_register_jit builds one: .text as NOBITS at the buffer's address, a .debug_frame
 * whose FDE covers gdbjit_block (CFA = rsp + 1088, the caller's rbp and rbx saved in the
 * frame) and a .symtab naming it; it is linked into __jit_debug_descriptor's list and
 * __jit_debug_register_code is called. With --no-register nothing is registered. */
#define _GNU_SOURCE
#include <elf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "workload.h"

#define BUFFER_SIZE (1u << 20)
#define BLOCK_OFFSET (512u << 10)
#define FRAME_BYTES 1032 /* with the six pushes and the return address: 1088 */

/* gdb's JIT interface, version 1 (the gdb manual, "JIT Compilation Interface"). */
struct jit_code_entry {
	struct jit_code_entry *next_entry, *prev_entry;
	const char *symfile_addr;
	uint64_t symfile_size;
};

struct jit_descriptor {
	uint32_t version;
	uint32_t action_flag; /* 1: JIT_REGISTER_FN */
	struct jit_code_entry *relevant_entry, *first_entry;
};

struct jit_descriptor __jit_debug_descriptor = { 1, 0, NULL, NULL };

/* A debugger breaks here to read the list. */
__attribute__((noinline)) void __jit_debug_register_code(void)
{
	__asm__ volatile("" ::: "memory");
}

typedef void (*entry_fn)(unsigned long n, const void *block);

static volatile unsigned long sink;

#define PUT(p, ...)                                                     \
	do {                                                            \
		static const unsigned char bytes_[] = { __VA_ARGS__ };  \
		memcpy(p, bytes_, sizeof(bytes_));                      \
		p += sizeof(bytes_);                                    \
	} while (0)

static void put_rel32(unsigned char **p, const unsigned char *target)
{
	int32_t rel = (int32_t)(target - (*p + 4));

	memcpy(*p, &rel, sizeof(rel));
	*p += sizeof(rel);
}

/* The prologue and epilogue at base, the block at base + BLOCK_OFFSET; *block_len is the
 * block's length. */
static void emit_code(unsigned char *base, size_t *block_len)
{
	unsigned char *p = base, *epilogue, *block = base + BLOCK_OFFSET;

	PUT(p, 0x55, 0x53, 0x41, 0x54, 0x41, 0x55, 0x41, 0x56, 0x41, 0x57); /* push rbp, rbx, r12-r15 */
	PUT(p, 0x48, 0x81, 0xec, FRAME_BYTES & 0xff, FRAME_BYTES >> 8, 0, 0); /* sub $FRAME,%rsp */
	PUT(p, 0x31, 0xc0,                          /* xor %eax,%eax */
	       0x48, 0x89, 0xe1,                    /* mov %rsp,%rcx */
	       0x48, 0x89, 0x01,                    /* 1: mov %rax,(%rcx) */
	       0x48, 0x83, 0xc1, 0x08,              /* add $8,%rcx */
	       0x48, 0x8d, 0x94, 0x24, FRAME_BYTES & 0xff, FRAME_BYTES >> 8, 0, 0, /* lea FRAME(%rsp),%rdx */
	       0x48, 0x39, 0xd1,                    /* cmp %rdx,%rcx */
	       0x72, 0xec,                          /* jb 1b */
	       0xff, 0xe6);                         /* jmp *%rsi */
	epilogue = p;
	PUT(p, 0x48, 0x81, 0xc4, FRAME_BYTES & 0xff, FRAME_BYTES >> 8, 0, 0); /* add $FRAME,%rsp */
	PUT(p, 0x41, 0x5f, 0x41, 0x5e, 0x41, 0x5d, 0x41, 0x5c, 0x5b, 0x5d, 0xc3); /* pop ...; ret */
	p = block;
	PUT(p, 0x48, 0xff, 0xcf,                    /* 1: dec %rdi */
	       0x48, 0x89, 0x7c, 0x24, 0x10,        /* mov %rdi,0x10(%rsp) */
	       0x75, 0xf6,                          /* jne 1b */
	       0xe9);                               /* jmp epilogue */
	put_rel32(&p, epilogue);
	*block_len = (size_t)(p - block);
}

/* The ELF image the program registers: section contents, then the section headers. */
struct image {
	Elf64_Ehdr ehdr;
	uint8_t debug_frame[64];
	Elf64_Sym syms[2];
	char strtab[16];
	char shstrtab[64];
	Elf64_Shdr shdrs[6];
};

/* .debug_frame: a CIE (CFA = rsp + 8, return address at CFA - 8), then an FDE for the
 * block: CFA = rsp + 1088, rbp at CFA - 16, rbx at CFA - 24. Returns its length. */
static size_t emit_debug_frame(uint8_t *out, uint64_t start, uint64_t len)
{
	static const uint8_t cie[] = {
		0x14, 0, 0, 0,          /* length 20 */
		0xff, 0xff, 0xff, 0xff, /* CIE id */
		1, 0,                   /* version 1, augmentation "" */
		1, 0x78, 16,            /* code align 1, data align -8, return column 16 */
		0x0c, 7, 8,             /* DW_CFA_def_cfa rsp, 8 */
		0x90, 1,                /* DW_CFA_offset rip, cfa - 8 */
		0, 0, 0, 0, 0, 0,       /* DW_CFA_nop padding to 24 bytes */
	};
	const uint8_t fde_cfa[] = {
		0x0e, 0xc0, 0x08, /* DW_CFA_def_cfa_offset 1088 (uleb128) */
		0x86, 2,          /* DW_CFA_offset rbp, cfa - 16 */
		0x83, 3,          /* DW_CFA_offset rbx, cfa - 24 */
		0, 0, 0, 0, 0,    /* DW_CFA_nop padding */
	};
	uint32_t fde_len = 4 + 8 + 8 + sizeof(fde_cfa), cie_pointer = 0;
	uint8_t *p = out;

	memcpy(p, cie, sizeof(cie));
	p += sizeof(cie);
	memcpy(p, &fde_len, 4);
	memcpy(p + 4, &cie_pointer, 4);
	memcpy(p + 8, &start, 8);
	memcpy(p + 16, &len, 8);
	memcpy(p + 24, fde_cfa, sizeof(fde_cfa));
	p += 4 + fde_len;
	return (size_t)(p - out);
}

static void set_shdr(Elf64_Shdr *sh, uint32_t name, uint32_t type, uint64_t flags, uint64_t addr,
		     uint64_t offset, uint64_t size)
{
	*sh = (Elf64_Shdr){ .sh_name = name, .sh_type = type, .sh_flags = flags, .sh_addr = addr,
			    .sh_offset = offset, .sh_size = size, .sh_addralign = 1 };
}

static struct image *build_image(uint64_t buffer, uint64_t block, uint64_t block_len)
{
	static const char shstrtab[] = "\0.text\0.debug_frame\0.symtab\0.strtab\0.shstrtab";
	struct image *im = calloc(1, sizeof(*im));
	size_t frame_len;

	if (!im)
		return NULL;
	memcpy(im->ehdr.e_ident, ELFMAG, SELFMAG);
	im->ehdr.e_ident[EI_CLASS] = ELFCLASS64;
	im->ehdr.e_ident[EI_DATA] = ELFDATA2LSB;
	im->ehdr.e_ident[EI_VERSION] = EV_CURRENT;
	im->ehdr.e_type = ET_EXEC;
	im->ehdr.e_machine = EM_X86_64;
	im->ehdr.e_version = EV_CURRENT;
	im->ehdr.e_ehsize = sizeof(Elf64_Ehdr);
	im->ehdr.e_shoff = offsetof(struct image, shdrs);
	im->ehdr.e_shentsize = sizeof(Elf64_Shdr);
	im->ehdr.e_shnum = 6;
	im->ehdr.e_shstrndx = 5;
	frame_len = emit_debug_frame(im->debug_frame, block, block_len);
	memcpy(im->strtab, "\0gdbjit_block", 14);
	im->syms[1] = (Elf64_Sym){ .st_name = 1, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
				   .st_shndx = 1, .st_value = block, .st_size = block_len };
	memcpy(im->shstrtab, shstrtab, sizeof(shstrtab));
	set_shdr(&im->shdrs[1], 1, SHT_NOBITS, SHF_ALLOC | SHF_EXECINSTR, buffer, 0, BUFFER_SIZE);
	set_shdr(&im->shdrs[2], 7, SHT_PROGBITS, 0, 0, offsetof(struct image, debug_frame), frame_len);
	set_shdr(&im->shdrs[3], 20, SHT_SYMTAB, 0, 0, offsetof(struct image, syms), sizeof(im->syms));
	im->shdrs[3].sh_link = 4;
	im->shdrs[3].sh_info = 1;
	im->shdrs[3].sh_entsize = sizeof(Elf64_Sym);
	set_shdr(&im->shdrs[4], 28, SHT_STRTAB, 0, 0, offsetof(struct image, strtab), sizeof(im->strtab));
	set_shdr(&im->shdrs[5], 36, SHT_STRTAB, 0, 0, offsetof(struct image, shstrtab), sizeof(shstrtab));
	return im;
}

/* Links the image into the descriptor's list and tells the debugger. */
static void register_image(const struct image *im)
{
	static struct jit_code_entry entry;

	entry.symfile_addr = (const char *)im;
	entry.symfile_size = sizeof(*im);
	entry.next_entry = __jit_debug_descriptor.first_entry;
	__jit_debug_descriptor.first_entry = &entry;
	__jit_debug_descriptor.relevant_entry = &entry;
	__jit_debug_descriptor.action_flag = 1;
	__jit_debug_register_code();
}

/* Everything before the loop: the code, then its registration. */
__attribute__((noinline)) unsigned char *setup(bool do_register)
{
	unsigned char *base = mmap(NULL, BUFFER_SIZE, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	size_t block_len;
	struct image *im;

	if (base == MAP_FAILED)
		return NULL;
	memset(base, 0xcc, BUFFER_SIZE);
	emit_code(base, &block_len);
	if (mprotect(base, BUFFER_SIZE, PROT_READ | PROT_EXEC) < 0)
		return NULL;
	if (do_register) {
		im = build_image((uint64_t)base, (uint64_t)(base + BLOCK_OFFSET), block_len);
		if (!im)
			return NULL;
		register_image(im);
	}
	return base;
}

__attribute__((noinline)) void run_block(unsigned char *base, unsigned long n)
{
	((entry_fn)base)(n, base + BLOCK_OFFSET);
	sink++;
}

/* Whether to register the code (not with --no-register). */
__attribute__((noinline)) bool parse_options(int argc, char **argv)
{
	return !(argc > 2 && strcmp(argv[2], "--no-register") == 0);
}

int main(int argc, char **argv)
{
	double seconds = workload_seconds(argc, argv, 3.0), start;
	unsigned char *base = setup(parse_options(argc, argv));
	unsigned seed = 1;

	if (!base) {
		perror("nofp_gdbjit: code");
		return 1;
	}
	start = workload_cpu_now();
	/* Calls well under a sample period, of varying length (see fp_jit.c). */
	while (workload_cpu_now() - start < seconds) {
		seed = seed * 1103515245u + 12345u;
		run_block(base, 100 * 1000 + (seed >> 8) % (100 * 1000));
	}
	return 0;
}
