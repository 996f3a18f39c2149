/* The ELF symbol reader: .symtab, .dynsym, build-id, PT_LOAD segments and MiniDebugInfo
 * from an image in memory; then the same bytes as a file (a memfd), which also looks for
 * separate debug files through .gnu_debuglink and the build-id, in empty directories; its
 * names are read from the file's mapping, so the file is then cut in half under the
 * symbols and looked up again (reads past the end find zeros, names are refused). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "binary/symbols.h"

static char dir[] = "/tmp/hprof-fuzz-symbols.XXXXXX";

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (!mkdtemp(dir))
		exit(1);
	setenv("HPROF_DEBUG_DIR", dir, 1);
	return 0;
}

static void exercise(const struct elf_symbols *syms)
{
	const uint8_t *id;
	uint64_t off, vaddr, start, size;

	elf_symbols__build_id(syms, &id);
	elf_symbols__source(syms);
	elf_symbols__bytes(syms);
	for (uint64_t a = 0; a < 0x4000; a += 0x100) {
		elf_symbols__lookup(syms, a, &off);
		elf_symbols__function(syms, a, &start, &size);
		elf_symbols__offset_to_vaddr(syms, a & ~0xfffull, a, &vaddr);
	}
	elf_symbols__lookup(syms, elf_symbols__entry(syms), &off);
	elf_symbols__lookup(syms, UINT64_MAX, &off);
}

static void load_as_file(const uint8_t *data, size_t size)
{
	struct elf_symbols *syms;
	char fd_path[64], bin[128], err[256];
	int fd = memfd_create("fuzz-elf", MFD_CLOEXEC);

	if (fd < 0)
		return;
	if (write(fd, data, size) == (ssize_t)size) {
		snprintf(fd_path, sizeof(fd_path), "/proc/self/fd/%d", fd);
		snprintf(bin, sizeof(bin), "%s/bin", dir);
		if (elf_symbols__load_from(fd_path, bin, &syms, err, sizeof(err)) == 0) {
			exercise(syms);
			if (ftruncate(fd, (off_t)(size / 2)) == 0)
				exercise(syms);
			elf_symbols__drop_functions(syms);
			exercise(syms);
			elf_symbols__free(syms);
		}
	}
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_symbols *syms;
	char err[256];

	if (size == 0)
		return 0;
	if (elf_symbols__load_image(data, size, &syms, err, sizeof(err)) == 0) {
		exercise(syms);
		elf_symbols__free(syms);
	}
	load_as_file(data, size);
	return 0;
}
