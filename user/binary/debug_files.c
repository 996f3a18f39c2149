#include "binary/debug_files.h"
#include "binary/libelf_sections.h"
#include "util/file_view.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* The root of separate debug files: HPROF_DEBUG_DIR, else gdb's default. */
static const char *debug_dir(void)
{
	const char *dir = getenv("HPROF_DEBUG_DIR");

	return dir && dir[0] == '/' ? dir : "/usr/lib/debug";
}

/* DEBUG_DIR/.build-id/xx/yyyy.debug */
int debug_files__build_id_path(const uint8_t *id, size_t id_len, char *path, size_t size)
{
	size_t len;
	int n;

	if (id_len < 2)
		return -ENOENT;
	n = snprintf(path, size, "%s/.build-id/%02x/", debug_dir(), id[0]);
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	len = (size_t)n;
	for (size_t i = 1; i < id_len && len + 2 < size; i++)
		len += (size_t)snprintf(path + len, size - len, "%02x", id[i]);
	n = snprintf(path + len, size - len, ".debug");
	if (n < 0 || (size_t)n >= size - len)
		return -ENAMETOOLONG;
	return 0;
}

/* Reads .gnu_debuglink: a file name, NUL, padding to 4 bytes, the file's CRC-32 in the
 * ELF's byte order. Returns 0 or -errno. */
static int parse_debuglink(Elf *elf, char name[NAME_MAX + 1], uint32_t *crc)
{
	const unsigned char *ident = (const unsigned char *)elf_getident(elf, NULL);
	const uint8_t *p;
	const char *nul;
	Elf_Data *data;
	size_t len, crc_off;
	uint8_t b[4];

	if (!ident || !libelf_sections__named(elf, ".gnu_debuglink", &data))
		return -ENOENT;
	p = data->d_buf;
	nul = memchr(p, '\0', data->d_size < NAME_MAX + 1 ? data->d_size : NAME_MAX + 1);
	if (!nul)
		return -EINVAL;
	len = (size_t)(nul - (const char *)p);
	crc_off = (len + 1 + 3) & ~(size_t)3;
	/* objcopy writes a bare file name; a path would leave the directories searched */
	if (len == 0 || memchr(p, '/', len) || strcmp((const char *)p, ".") == 0 ||
	    strcmp((const char *)p, "..") == 0 || crc_off + 4 > data->d_size)
		return -EINVAL;
	memcpy(name, p, len + 1);
	memcpy(b, p + crc_off, 4);
	*crc = ident[EI_DATA] == ELFDATA2MSB
		       ? (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3]
		       : (uint32_t)b[3] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[1] << 8 | b[0];
	return 0;
}

int debug_files__debuglink(Elf *elf, const char *binary, struct debuglink *link)
{
	/* the places are found from the binary's directory */
	if (!binary || binary[0] != '/')
		return -ENOENT;
	return parse_debuglink(elf, link->name, &link->crc);
}

/* Next to the binary, in .debug/ next to it, and under the debug directory followed by
 * the binary's directory. */
int debug_files__debuglink_path(const struct debuglink *link, const char *binary, size_t place,
				char *path, size_t size)
{
	static const char *const forms[DEBUGLINK_PLACES] = { "%s%.*s%s", "%s%.*s.debug/%s",
							     "%s%.*s%s" };
	const char *slash = binary ? strrchr(binary, '/') : NULL;
	int n;

	if (!slash || place >= DEBUGLINK_PLACES)
		return -ENOENT;
	n = snprintf(path, size, forms[place], place == 2 ? debug_dir() : "",
		     (int)(slash - binary + 1), binary, link->name);
	if (n < 0 || (size_t)n >= size || strcmp(path, binary) == 0)
		return -ENOENT;
	return 0;
}

bool debug_files__debuglink_matches(const struct debuglink *link, struct file_view *view)
{
	const uint8_t *data = file_view__data(view);
	size_t size = file_view__size(view);
	/* .gnu_debuglink's checksum: zlib's polynomial and conditioning, as binutils computes
	 * it */
	uint32_t actual = (uint32_t)crc32_z(crc32_z(0, Z_NULL, 0), data, size);

	/* the whole file was read for it: its pages go back */
	file_view__drop_pages(view, 0, size);
	return actual == link->crc;
}
