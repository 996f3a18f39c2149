#include "binary/debug_image.h"

#include <elf.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <pthread.h>
#include <libdeflate.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* DEFLATE expands at most ~1032:1; a ch_size past that (or past 2 GiB) is a lie, and the
 * section is left compressed for libelf to refuse. */
#define MAX_INFLATE_RATIO 1032u
#define MAX_SECTION_BYTES (2ull << 30)
#define IMAGE_ALIGN 8u
/* A debug file has a few dozen sections; past this many (share_out is quadratic in them)
 * the file is left to libelf as it is. */
#define MAX_SECTIONS 4096u

enum kind { KEEP_NOBITS, COPY, INFLATE };

struct plan {
	Elf64_Shdr shdr;     /* as the image will say */
	const uint8_t *from; /* the file's bytes (compressed ones after their Chdr) */
	uint64_t from_len;
	uint64_t slot; /* bytes kept for it in the image: room for either outcome */
	enum kind kind;
	unsigned worker; /* which of the two inflating threads writes it */
};

/* Below this many bytes to inflate, a second thread costs more than it saves. */
#define MIN_PARALLEL_BYTES (1u << 20)

/* The sections libdw reads: DWARF, the dwz link, notes (build-ids), the names' table. */
static bool libdw_reads(const char *name)
{
	return strncmp(name, ".debug_", 7) == 0 || strncmp(name, ".zdebug_", 8) == 0 ||
	       strcmp(name, ".gnu_debugaltlink") == 0 || strncmp(name, ".note", 5) == 0;
}

static uint64_t align_up_to(uint64_t n, uint64_t to)
{
	return (n + to - 1) & ~(to - 1);
}

static uint64_t align_up(uint64_t n)
{
	return align_up_to(n, IMAGE_ALIGN);
}

/* Plans one section from the file's header; returns its bytes in the image. Sections that
 * lie outside the file, or that libdw never reads, keep their header but no bytes. */
static uint64_t plan_section(struct plan *p, const uint8_t *file, size_t file_size,
			     const char *name, bool is_names, bool (*unneeded)(const char *))
{
	const Elf64_Shdr *s = &p->shdr;
	Elf64_Chdr chdr;

	p->kind = KEEP_NOBITS;
	if (s->sh_type == SHT_NOBITS || s->sh_offset > file_size ||
	    s->sh_size > file_size - s->sh_offset)
		goto nobits;
	if (!is_names && (!name || !libdw_reads(name) || unneeded(name))) {
		if (name && unneeded(name))
			p->shdr.sh_name = 0; /* libdw would inflate it whole at open */
		goto nobits;
	}
	p->from = file + s->sh_offset;
	p->from_len = s->sh_size;
	p->kind = COPY;
	if (!(s->sh_flags & SHF_COMPRESSED) || s->sh_size < sizeof(chdr))
		return p->from_len;
	memcpy(&chdr, p->from, sizeof(chdr));
	if (chdr.ch_type != ELFCOMPRESS_ZLIB || chdr.ch_size > MAX_SECTION_BYTES ||
	    chdr.ch_size / MAX_INFLATE_RATIO > s->sh_size)
		return p->from_len;
	p->kind = INFLATE;
	p->from += sizeof(chdr);
	p->from_len -= sizeof(chdr);
	p->shdr.sh_size = chdr.ch_size;
	p->shdr.sh_addralign = chdr.ch_addralign;
	/* room for the compressed bytes too, should they not inflate */
	return chdr.ch_size > s->sh_size ? chdr.ch_size : s->sh_size;
nobits:
	if (p->shdr.sh_type != SHT_NULL)
		p->shdr.sh_type = SHT_NOBITS;
	else
		p->shdr.sh_offset = p->shdr.sh_size = 0;
	return 0;
}

/* Writes p's bytes at image + at; returns how many. A section that does not inflate to its
 * stated size is copied as it is (compressed): libelf then gives libdw its own error. */
static uint64_t write_section(struct plan *p, struct libdeflate_decompressor *d, uint8_t *out)
{
	size_t got = 0;

	if (p->kind == INFLATE &&
	    (libdeflate_zlib_decompress(d, p->from, p->from_len, out, p->shdr.sh_size, &got) !=
		     LIBDEFLATE_SUCCESS ||
	     got != p->shdr.sh_size)) {
		p->from -= sizeof(Elf64_Chdr);
		p->from_len += sizeof(Elf64_Chdr);
		p->kind = COPY;
		p->shdr.sh_size = p->from_len;
	}
	if (p->kind == COPY)
		memcpy(out, p->from, p->from_len);
	else
		p->shdr.sh_flags &= ~(uint64_t)SHF_COMPRESSED;
	return p->shdr.sh_size;
}

/* The file's pages of bytes now copied or inflated: nothing reads them again. */
static void drop_pages(const struct plan *p)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t from, to;

	if (p->kind == KEEP_NOBITS || page == 0)
		return;
	from = ((uintptr_t)p->from + page - 1) & ~(uintptr_t)(page - 1);
	to = ((uintptr_t)p->from + p->from_len) & ~(uintptr_t)(page - 1);
	if (to > from)
		madvise((void *)from, to - from, MADV_DONTNEED);
}

/* Plans every section; returns the image's size, 0 when none inflates (or on bad input). */
static uint64_t plan_all(Elf *elf, const uint8_t *file, size_t file_size, struct plan *plans,
			 size_t shnum, size_t shstrndx, bool (*unneeded)(const char *))
{
	uint64_t total = sizeof(Elf64_Ehdr);
	bool any_inflated = false;

	for (size_t i = 0; i < shnum; i++) {
		Elf_Scn *scn = elf_getscn(elf, i);
		Elf64_Shdr *sh = scn ? elf64_getshdr(scn) : NULL;
		const char *name;

		if (!sh)
			return 0;
		plans[i].shdr = *sh;
		if (i == 0) {
			plans[i].kind = KEEP_NOBITS;
			continue;
		}
		name = elf_strptr(elf, shstrndx, sh->sh_name);
		plans[i].slot = plan_section(&plans[i], file, file_size, name, i == shstrndx,
					     unneeded);
		total += align_up(plans[i].slot);
		any_inflated |= plans[i].kind == INFLATE;
		if (total > MAX_SECTION_BYTES * 4)
			return 0;
	}
	return any_inflated ? align_up(total) + shnum * sizeof(Elf64_Shdr) : 0;
}

#define HUGE_PAGE (2u << 20)

/* total bytes, 2 MiB-aligned where transparent huge pages may back them (madvise mode):
 * a page fault per 2 MiB, not per 4 KiB, while inflating into them (faults were a quarter
 * of inflating's time). Freed by debug_image__free. */
static uint8_t *map_image(uint64_t total)
{
	size_t len = align_up_to(total, HUGE_PAGE) + HUGE_PAGE;
	uint8_t *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uintptr_t start, end;

	if (map == MAP_FAILED)
		return NULL;
	start = align_up_to((uintptr_t)map, HUGE_PAGE);
	end = start + align_up_to(total, HUGE_PAGE);
	if (start > (uintptr_t)map)
		munmap(map, start - (uintptr_t)map);
	if ((uintptr_t)map + len > end)
		munmap((void *)end, (uintptr_t)map + len - end);
	madvise((void *)start, end - start, MADV_HUGEPAGE);
	return (uint8_t *)start;
}

void debug_image__free(void *image, size_t bytes)
{
	if (image)
		munmap(image, align_up_to(bytes, HUGE_PAGE));
}

/* Shares the sections out between the two threads, each next largest to the one with
 * fewer bytes so far. Returns whether each has enough to be worth a thread. */
static bool share_out(struct plan *plans, size_t shnum)
{
	uint64_t load[2] = { 0, 0 };

	/* quadratic in the sections: at most MAX_SECTIONS */
	for (;;) {
		struct plan *largest = NULL;

		for (size_t i = 1; i < shnum; i++) {
			struct plan *p = &plans[i];

			if (p->kind != KEEP_NOBITS && p->worker == 0 && (!largest || p->slot > largest->slot))
				largest = p;
		}
		if (!largest)
			break;
		largest->worker = load[0] <= load[1] ? 1 : 2;
		load[largest->worker - 1] += largest->slot;
	}
	return load[1] >= MIN_PARALLEL_BYTES && load[0] >= MIN_PARALLEL_BYTES;
}

struct inflate_job {
	struct plan *plans;
	size_t shnum;
	uint8_t *image;
	unsigned worker;
};

/* Writes the job's worker's sections into the image (zlib's streams inflate one way
 * only: a section is one thread's). */
static void *inflate_job(void *arg)
{
	struct inflate_job *job = arg;
	struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();

	for (size_t i = 1; i < job->shnum; i++) {
		struct plan *p = &job->plans[i];

		if (p->kind == KEEP_NOBITS || p->worker != job->worker)
			continue;
		if (p->kind == INFLATE && !d) {
			p->kind = KEEP_NOBITS; /* out of memory: a section libdw will find empty */
			p->shdr.sh_type = SHT_NOBITS;
			continue;
		}
		write_section(p, d, job->image + p->shdr.sh_offset);
		drop_pages(p);
	}
	libdeflate_free_decompressor(d);
	return NULL;
}

/* The image: the file's ELF header (no program headers), each planned section's bytes,
 * then the section headers, in the file's order (indexes, and so links, unchanged). The
 * sections inflate on two threads where there is enough of them: a core each, when the
 * machine has them free. */
static uint8_t *build_image(Elf *elf, struct plan *plans, size_t shnum, uint64_t total)
{
	uint8_t *image = map_image(total);
	struct inflate_job jobs[2];
	uint64_t at = sizeof(Elf64_Ehdr);
	pthread_t second;
	bool two;
	Elf64_Ehdr *eh;

	if (!image)
		return NULL;
	eh = (Elf64_Ehdr *)image;
	memcpy(eh, elf64_getehdr(elf), sizeof(*eh));
	eh->e_phoff = 0;
	eh->e_phnum = 0;
	eh->e_shentsize = sizeof(Elf64_Shdr);
	for (size_t i = 1; i < shnum; i++) {
		if (plans[i].kind == KEEP_NOBITS)
			continue;
		plans[i].shdr.sh_offset = at;
		at += align_up(plans[i].slot);
	}
	eh->e_shoff = align_up(at);
	two = share_out(plans, shnum);
	for (unsigned w = 0; w < 2; w++)
		jobs[w] = (struct inflate_job){ plans, shnum, image, w + 1 };
	two = two && pthread_create(&second, NULL, inflate_job, &jobs[1]) == 0;
	inflate_job(&jobs[0]);
	if (two)
		pthread_join(second, NULL);
	else
		inflate_job(&jobs[1]);
	for (size_t i = 0; i < shnum; i++)
		memcpy(image + eh->e_shoff + i * sizeof(Elf64_Shdr), &plans[i].shdr,
		       sizeof(Elf64_Shdr));
	return image;
}

Elf *debug_image__open(int fd, bool (*unneeded)(const char *name), void **image_out,
		       size_t *image_bytes)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL), *mem = NULL;
	size_t file_size = 0, shnum, shstrndx;
	const uint8_t *file = elf ? (const uint8_t *)elf_rawfile(elf, &file_size) : NULL;
	struct plan *plans = NULL;
	uint8_t *image = NULL;
	uint64_t total = 0;

	*image_out = NULL;
	*image_bytes = 0;
	if (!file || elf_kind(elf) != ELF_K_ELF || gelf_getclass(elf) != ELFCLASS64 ||
	    file[EI_DATA] != ELFDATA2LSB || elf_getshdrnum(elf, &shnum) != 0 ||
	    elf_getshdrstrndx(elf, &shstrndx) != 0 || shnum == 0 || shnum > MAX_SECTIONS ||
	    !(plans = calloc(shnum, sizeof(*plans))))
		goto out;
	total = plan_all(elf, file, file_size, plans, shnum, shstrndx, unneeded);
	if (total && (image = build_image(elf, plans, shnum, total)) &&
	    (mem = elf_memory((char *)image, total)) && elf_kind(mem) == ELF_K_ELF) {
		*image_out = image;
		*image_bytes = total;
		image = NULL;
	} else if (mem) {
		elf_end(mem);
		mem = NULL;
	}
out:
	debug_image__free(image, total);
	free(plans);
	elf_end(elf);
	return mem;
}

/* libdw resolves a relative .gnu_debugaltlink (dwz -M names one so) from the directory of
 * the file it read (the link of /proc/self/fd/FD), which an image in memory has not: found
 * from fd's the same way. */
void debug_image__find_alt(Dwarf *dwarf, int fd, struct debug_alt *alt)
{
	char link[64], path[PATH_MAX], joined[PATH_MAX];
	const char *altname, *slash;
	const void *build_id;
	struct stat st;
	ssize_t len;
	int n;

	*alt = (struct debug_alt){ .fd = -1 };
	if (dwelf_dwarf_gnu_debugaltlink(dwarf, &altname, &build_id) <= 0 || altname[0] == '/' ||
	    dwarf_getalt(dwarf))
		return;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	len = readlink(link, path, sizeof(path) - 1);
	if (len <= 0)
		return;
	path[len] = '\0';
	slash = strrchr(path, '/');
	n = snprintf(joined, sizeof(joined), "%.*s/%s", slash ? (int)(slash - path) : 0, path,
		     altname);
	if (n < 0 || (size_t)n >= sizeof(joined))
		return;
	alt->fd = open(joined, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (alt->fd < 0)
		return;
	/* not a FIFO or device planted under the name */
	if (fstat(alt->fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    (alt->elf = elf_begin(alt->fd, ELF_C_READ_MMAP, NULL)) &&
	    (alt->dwarf = dwarf_begin_elf(alt->elf, DWARF_C_READ, NULL))) {
		dwarf_setalt(dwarf, alt->dwarf);
		return;
	}
	debug_image__close_alt(alt);
}

void debug_image__close_alt(struct debug_alt *alt)
{
	if (alt->dwarf)
		dwarf_end(alt->dwarf);
	if (alt->elf)
		elf_end(alt->elf);
	if (alt->fd >= 0)
		close(alt->fd);
	*alt = (struct debug_alt){ .fd = -1 };
}
