/* Unit tests of what hprof reads of a Go binary for the kernel (user/go/layout.h), on ELF
 * images built here: the version from .go.buildinfo (Go 1.18's inline strings, 1.17's
 * pointers), the table's range, g's TLS slot; then hostile build info and images cut short,
 * which must be refused, never read outside. And the record's Go section (common/sample.h):
 * a record that does not hold it whole is not well formed. */
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "go/layout.h"
#include "sample.h"

#define PHDR_AT 64
#define SHSTR_AT 128
#define INFO_AT 256
#define INFO_MAX 256
#define SHDR_AT 512
#define IMAGE_SIZE (SHDR_AT + 3 * sizeof(Elf64_Shdr))
#define INFO_VADDR 0x515000u

static const char SHSTR[] = "\0.shstrtab\0.go.buildinfo";

struct image {
	uint8_t bytes[IMAGE_SIZE];
};

/* An image whose .go.buildinfo holds info (len bytes); tls_memsz 0: no PT_TLS. */
static void build(struct image *im, const uint8_t *info, size_t len, uint64_t tls_memsz)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)im->bytes;
	Elf64_Phdr *ph = (Elf64_Phdr *)(im->bytes + PHDR_AT);
	Elf64_Shdr *sh = (Elf64_Shdr *)(im->bytes + SHDR_AT);

	memset(im, 0, sizeof(*im));
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_EXEC;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_ehsize = sizeof(*eh);
	eh->e_phoff = PHDR_AT;
	eh->e_phentsize = sizeof(*ph);
	eh->e_phnum = 1;
	eh->e_shoff = SHDR_AT;
	eh->e_shentsize = sizeof(*sh);
	eh->e_shnum = 3;
	eh->e_shstrndx = 1;
	ph->p_type = tls_memsz ? PT_TLS : PT_NULL;
	ph->p_memsz = tls_memsz;
	ph->p_align = 8;
	memcpy(im->bytes + SHSTR_AT, SHSTR, sizeof(SHSTR));
	sh[1] = (Elf64_Shdr){ .sh_name = 1, .sh_type = SHT_STRTAB, .sh_offset = SHSTR_AT,
			      .sh_size = sizeof(SHSTR), .sh_addralign = 1 };
	sh[2] = (Elf64_Shdr){ .sh_name = 11, .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC,
			      .sh_addr = INFO_VADDR, .sh_offset = INFO_AT, .sh_size = len,
			      .sh_addralign = 16 };
	memcpy(im->bytes + INFO_AT, info, len);
}

/* Go 1.18+'s build info: the header, then the version as a varint-prefixed string. */
static size_t inline_info(uint8_t *info, const char *version)
{
	size_t len = strlen(version);

	memset(info, 0, INFO_MAX);
	memcpy(info, "\xff Go buildinf:", 14);
	info[14] = 8;
	info[15] = 2;
	info[32] = (uint8_t)len;
	memcpy(info + 33, version, len);
	return 33 + len + 1;
}

static enum go_layout_reason read_image(const struct image *im, size_t size,
					struct hprof_go_proc *p, char *version)
{
	return go_layout__from_image(im->bytes, size, p, version, 32);
}

static void test_versions(void)
{
	static const struct { const char *v; enum go_layout_reason r; } cases[] = {
		{ "go1.17.13", GO_LAYOUT_OK }, { "go1.19.8", GO_LAYOUT_OK },
		{ "go1.21rc2", GO_LAYOUT_OK }, { "go1.23.4", GO_LAYOUT_OK },
		{ "go1.16.15", GO_LAYOUT_UNKNOWN_VERSION }, { "go1.24.0", GO_LAYOUT_UNKNOWN_VERSION },
		{ "go2.0", GO_LAYOUT_NO_VERSION }, { "devel +abc", GO_LAYOUT_NO_VERSION },
		{ "go1.", GO_LAYOUT_NO_VERSION }, { "go1.12345", GO_LAYOUT_NO_VERSION },
	};
	uint8_t info[INFO_MAX];
	struct hprof_go_proc p = { 0 };
	struct image im;
	char version[32];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		build(&im, info, inline_info(info, cases[i].v), 0);
		check(read_image(&im, sizeof(im.bytes), &p, version) == cases[i].r,
		      "%s: %s", cases[i].v, go_layout__reason_name(cases[i].r));
	}
	build(&im, info, inline_info(info, "go1.19.8"), 0);
	check(read_image(&im, sizeof(im.bytes), &p, version) == GO_LAYOUT_OK &&
		      strcmp(version, "go1.19.8") == 0,
	      "go1.19.8 read as %s", version);
	check(p.tls_g == -8 && p.g_m == 48 && p.g_sched == 56 && p.gobuf_bp == 48 &&
		      p.g_stack_hi == 8 && p.m_g0 == 0 && p.m_curg == 192,
	      "Go 1.19's offsets, g at -8 without a TLS segment");
}

/* Go 1.17's: a pointer to a string header {data, len} in the image. */
static void test_pointer_info(void)
{
	uint8_t info[INFO_MAX] = { 0 };
	struct hprof_go_proc p = { 0 };
	struct image im;
	char version[32];
	uint64_t word;

	memcpy(info, "\xff Go buildinf:", 14);
	info[14] = 8;
	word = INFO_VADDR + 64;
	memcpy(info + 16, &word, 8);
	word = INFO_VADDR + 80;
	memcpy(info + 64, &word, 8);
	word = 9;
	memcpy(info + 72, &word, 8);
	memcpy(info + 80, "go1.17.13", 9);
	build(&im, info, 96, 0);
	check(read_image(&im, sizeof(im.bytes), &p, version) == GO_LAYOUT_OK &&
		      strcmp(version, "go1.17.13") == 0,
	      "Go 1.17's build info through its pointers: %s", version);
	/* a string past the section, or a pointer to nowhere */
	word = 4096;
	memcpy(info + 72, &word, 8);
	build(&im, info, 96, 0);
	check(read_image(&im, sizeof(im.bytes), &p, version) == GO_LAYOUT_NO_VERSION,
	      "a version string longer than its section is refused");
	word = 0xdead0000;
	memcpy(info + 16, &word, 8);
	build(&im, info, 96, 0);
	check(read_image(&im, sizeof(im.bytes), &p, version) == GO_LAYOUT_NO_VERSION,
	      "a pointer outside the image is refused");
}

static void test_tls(void)
{
	uint8_t info[INFO_MAX];
	struct hprof_go_proc p = { 0 };
	struct image im;
	char version[32];

	enum go_layout_reason r;

	build(&im, info, inline_info(info, "go1.20.1"), 8);
	r = read_image(&im, sizeof(im.bytes), &p, version);
	check(r == GO_LAYOUT_OK && p.tls_g == -8,
	      "a TLS segment of runtime.tlsg alone: g at -8 (%d)", p.tls_g);
	build(&im, info, inline_info(info, "go1.20.1"), 64);
	check(read_image(&im, sizeof(im.bytes), &p, version) == GO_LAYOUT_TLS_UNKNOWN,
	      "C's thread-locals too, no runtime.tlsg symbol: refused");
}

static void test_hostile(void)
{
	uint8_t info[INFO_MAX];
	struct hprof_go_proc p = { 0 };
	struct image im;
	char version[32];
	size_t len;

	len = inline_info(info, "go1.19.8");
	info[32] = 0xff; /* a varint that never ends within the section */
	memset(info + 33, 0xff, len - 33);
	build(&im, info, len, 0);
	check(read_image(&im, sizeof(im.bytes), &p, version) == GO_LAYOUT_NO_VERSION,
	      "an unending varint is refused");
	len = inline_info(info, "go1.19.8");
	info[32] = 200; /* longer than the section */
	build(&im, info, len, 0);
	check(read_image(&im, sizeof(im.bytes), &p, version) == GO_LAYOUT_NO_VERSION,
	      "a length past the section is refused");
	len = inline_info(info, "go1.19\x01x");
	build(&im, info, len, 0);
	check(read_image(&im, sizeof(im.bytes), &p, version) == GO_LAYOUT_NO_VERSION,
	      "a version with a control byte is refused");
	len = inline_info(info, "go1.19.8");
	info[0] = 0;
	build(&im, info, len, 0);
	check(read_image(&im, sizeof(im.bytes), &p, version) == GO_LAYOUT_NO_VERSION,
	      "a build info without its magic is refused");
	build(&im, info, 16, 0);
	check(read_image(&im, sizeof(im.bytes), &p, version) == GO_LAYOUT_NO_VERSION,
	      "a build info shorter than its header is refused");
	/* cut anywhere: never OK short of the section headers' end, never a crash */
	len = inline_info(info, "go1.19.8");
	build(&im, info, len, 0);
	for (size_t size = 0; size < sizeof(im.bytes); size++) {
		uint8_t *copy = malloc(size ? size : 1);

		memcpy(copy, im.bytes, size);
		if (go_layout__from_image(copy, size, &p, version, sizeof(version)) == GO_LAYOUT_OK) {
			check(false, "an image cut at %zu bytes read", size);
			free(copy);
			break;
		}
		free(copy);
	}
	check(go_layout__from_image((const uint8_t *)"not an ELF", 10, &p, version, 32) ==
		      GO_LAYOUT_NOT_GO,
	      "not an ELF: not Go");
}

/* A record with SAMPLE_GO_SWITCH holds its section whole, or is not well formed. */
static void test_record_section(void)
{
	size_t size = sizeof(struct hprof_sample) + 8 + sizeof(struct hprof_go_switch) + 64;
	struct hprof_sample *s = calloc(1, size);
	struct hprof_go_switch go = { .sched_sp = 0x1000, .len = 64, .status = HPROF_GO_OK }, out;

	s->nr_user = 1;
	s->flags = SAMPLE_USER_REGS | SAMPLE_GO_SWITCH;
	memcpy((uint8_t *)s + sizeof(*s) + 8, &go, sizeof(go));
	check(hprof_sample__well_formed(s, size) && hprof_sample__go_switch(s, &out) &&
		      out.len == 64 && hprof_sample__after_tail_len(s) == sizeof(go) + 64,
	      "a whole Go section is read back");
	check(!hprof_sample__well_formed(s, size - 1), "a section cut short is not well formed");
	check(!hprof_sample__well_formed(s, sizeof(*s) + 8 + 8), "a header cut short neither");
	go.len = HPROF_GO_STACK_MAX + 8;
	memcpy((uint8_t *)s + sizeof(*s) + 8, &go, sizeof(go));
	check(!hprof_sample__well_formed(s, size + HPROF_GO_STACK_MAX),
	      "a window longer than the kernel copies is not well formed");
	free(s);
}

int main(void)
{
	test_versions();
	test_pointer_info();
	test_tls();
	test_hostile();
	test_record_section();
	return failures ? 1 : 0;
}
