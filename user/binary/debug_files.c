#include "binary/debug_files.h"
#include "binary/elf_facts.h"
#include "binary/libelf_sections.h"
#include "util/file_view.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* The largest file read to check its build-id (libLLVM's debug file is about 1 GiB). */
#define ALT_FILE_MAX_BYTES (4ull << 30)

/* The directories --debug-dir named, searched before the system's; and the files fetched
 * for build-ids (debuginfod), searched after every local place. */
static char *user_dirs[DEBUG_DIRS_MAX];
static size_t nr_user_dirs;

struct fetched_file {
	uint8_t id[BUILD_ID_MAX];
	size_t id_len;
	char *path;
};
static struct fetched_file *fetched;
static size_t nr_fetched;

/* The root of separate debug files: HPROF_DEBUG_DIR, else gdb's default. */
static const char *debug_dir(void)
{
	const char *dir = getenv("HPROF_DEBUG_DIR");

	return dir && dir[0] == '/' ? dir : "/usr/lib/debug";
}

int debug_files__add_dir(const char *dir)
{
	char *copy;

	if (!dir || !dir[0])
		return -EINVAL;
	if (nr_user_dirs >= DEBUG_DIRS_MAX)
		return -E2BIG;
	copy = realpath(dir, NULL);
	if (!copy)
		return -errno;
	user_dirs[nr_user_dirs++] = copy;
	return 0;
}

void debug_files__reset(void)
{
	for (size_t i = 0; i < nr_user_dirs; i++)
		free(user_dirs[i]);
	nr_user_dirs = 0;
	for (size_t i = 0; i < nr_fetched; i++)
		free(fetched[i].path);
	free(fetched);
	fetched = NULL;
	nr_fetched = 0;
}

int debug_files__add_fetched(const uint8_t *id, size_t id_len, const char *path)
{
	struct fetched_file *bigger;

	if (id_len == 0 || id_len > BUILD_ID_MAX || !path || path[0] != '/')
		return -EINVAL;
	bigger = realloc(fetched, (nr_fetched + 1) * sizeof(*fetched));
	if (!bigger)
		return -ENOMEM;
	fetched = bigger;
	fetched[nr_fetched].path = strdup(path);
	if (!fetched[nr_fetched].path)
		return -ENOMEM;
	memcpy(fetched[nr_fetched].id, id, id_len);
	fetched[nr_fetched].id_len = id_len;
	nr_fetched++;
	return 0;
}

static const char *fetched_path(const uint8_t *id, size_t id_len)
{
	for (size_t i = 0; i < nr_fetched; i++) {
		if (fetched[i].id_len == id_len && memcmp(fetched[i].id, id, id_len) == 0)
			return fetched[i].path;
	}
	return NULL;
}

/* ROOT/.build-id/xx/yyyy.debug */
static int build_id_path_in(const char *root, const uint8_t *id, size_t id_len, char *path,
			    size_t size)
{
	size_t len;
	int n;

	n = snprintf(path, size, "%s/.build-id/%02x/", root, id[0]);
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

size_t debug_files__build_id_places(void)
{
	return nr_user_dirs + 2;
}

/* The --debug-dir directories, then DEBUG_DIR, then a fetched file. */
int debug_files__build_id_path(const uint8_t *id, size_t id_len, size_t place, char *path,
			       size_t size)
{
	const char *file;
	int n;

	if (id_len < 2 || id_len > BUILD_ID_MAX)
		return -ENOENT;
	if (place < nr_user_dirs)
		return build_id_path_in(user_dirs[place], id, id_len, path, size);
	if (place == nr_user_dirs)
		return build_id_path_in(debug_dir(), id, id_len, path, size);
	if (place != nr_user_dirs + 1 || !(file = fetched_path(id, id_len)))
		return -ENOENT;
	n = snprintf(path, size, "%s", file);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
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

size_t debug_files__debuglink_places(void)
{
	return nr_user_dirs + DEBUGLINK_SYSTEM_PLACES;
}

/* In each --debug-dir by its name; then next to the binary, in .debug/ next to it, and
 * under the debug directory followed by the binary's directory. */
int debug_files__debuglink_path(const struct debuglink *link, const char *binary, size_t place,
				char *path, size_t size)
{
	static const char *const forms[DEBUGLINK_SYSTEM_PLACES] = { "%s%.*s%s", "%s%.*s.debug/%s",
								    "%s%.*s%s" };
	const char *slash = binary ? strrchr(binary, '/') : NULL;
	int n;

	if (!slash || place >= debug_files__debuglink_places())
		return -ENOENT;
	if (place < nr_user_dirs) {
		n = snprintf(path, size, "%s/%s", user_dirs[place], link->name);
	} else {
		place -= nr_user_dirs;
		n = snprintf(path, size, forms[place], place == 2 ? debug_dir() : "",
			     (int)(slash - binary + 1), binary, link->name);
	}
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

/* Reads .gnu_debugaltlink: the supplementary file's path, NUL, its build-id (the rest of
 * the section). Returns 0 or -errno. */
static int parse_altlink(Elf *elf, char name[PATH_MAX], uint8_t id[BUILD_ID_MAX],
			 size_t *id_len)
{
	const char *p, *nul;
	Elf_Data *data;
	size_t len;

	if (!libelf_sections__named(elf, ".gnu_debugaltlink", &data))
		return -ENOENT;
	p = data->d_buf;
	nul = memchr(p, '\0', data->d_size < PATH_MAX ? data->d_size : PATH_MAX);
	if (!nul || nul == p)
		return -EINVAL;
	len = (size_t)(nul - p);
	*id_len = data->d_size - len - 1;
	if (*id_len < 2 || *id_len > BUILD_ID_MAX)
		return -EINVAL;
	memcpy(name, p, len + 1);
	memcpy(id, nul + 1, *id_len);
	return 0;
}

int debug_files__check_build_id(const char *path, const uint8_t *id, size_t id_len)
{
	struct file_view *view = NULL;
	struct elf_facts *facts = NULL;
	const uint8_t *actual;
	Elf *elf;
	int err = file_view__open(path, ALT_FILE_MAX_BYTES, &view, NULL, 0);

	if (err)
		return err;
	elf = elf_memory((char *)file_view__data(view), file_view__size(view));
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_facts__read(elf, &facts) != 0)
		err = -ENOEXEC;
	else if (elf_facts__build_id(facts, &actual) != id_len || memcmp(actual, id, id_len) != 0)
		err = -EBADMSG;
	elf_facts__free(facts);
	elf_end(elf);
	file_view__close(view);
	return err;
}

/* The candidate places of an altlink's file, in order: its path as written (relative to
 * the debug file's directory when relative), that path moved under HPROF_DEBUG_DIR when
 * it lies under /usr/lib/debug, then by its build-id. */
static int altlink_candidate(const char *name, const char *debug_file, const uint8_t *id,
			     size_t id_len, size_t place, char *path, size_t size)
{
	static const char system_dir[] = "/usr/lib/debug/";
	const char *slash = strrchr(debug_file, '/');
	int n = -1;

	if (place == 0 && name[0] == '/')
		n = snprintf(path, size, "%s", name);
	else if (place == 0 && slash)
		n = snprintf(path, size, "%.*s%s", (int)(slash - debug_file + 1), debug_file, name);
	else if (place == 1 && strncmp(name, system_dir, sizeof(system_dir) - 1) == 0 &&
		 strcmp(debug_dir(), "/usr/lib/debug") != 0)
		n = snprintf(path, size, "%s/%s", debug_dir(), name + sizeof(system_dir) - 1);
	else if (place >= 2)
		return debug_files__build_id_path(id, id_len, place - 2, path, size);
	return n < 0 || (size_t)n >= size ? -ENOENT : 0;
}

int debug_files__altlink(Elf *debug_elf, const char *debug_file, char *path, size_t size)
{
	char name[PATH_MAX];
	uint8_t id[BUILD_ID_MAX];
	size_t id_len, places;
	int err;

	if (!debug_file || size == 0)
		return -ENOENT;
	err = parse_altlink(debug_elf, name, id, &id_len);
	if (err)
		return err;
	places = 2 + debug_files__build_id_places();
	for (size_t place = 0; place < places; place++) {
		/* a supplementary file is never the debug file itself (a loop) */
		if (altlink_candidate(name, debug_file, id, id_len, place, path, size) == 0 &&
		    strcmp(path, debug_file) != 0 &&
		    debug_files__check_build_id(path, id, id_len) == 0)
			return 0;
	}
	path[0] = '\0';
	return -ENOENT;
}

/* Opens path (a regular file only) for libelf. Returns the descriptor or -errno. */
static int open_elf(const char *path, Elf **elf)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;

	*elf = NULL;
	if (fd < 0)
		return -errno;
	/* a FIFO planted under a debug name must not hang the profiler */
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -ENOENT;
	}
	elf_version(EV_CURRENT);
	*elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!*elf || elf_kind(*elf) != ELF_K_ELF) {
		elf_end(*elf);
		*elf = NULL;
		close(fd);
		return -ENOEXEC;
	}
	return fd;
}

int debug_files__altlink_of(const char *debug_file, char *path, size_t size)
{
	Elf *elf;
	int fd = open_elf(debug_file, &elf), err;

	if (fd < 0)
		return fd;
	err = debug_files__altlink(elf, debug_file, path, size);
	elf_end(elf);
	close(fd);
	return err;
}

int debug_files__altlink_build_id(const char *debug_file, uint8_t id[BUILD_ID_MAX],
				  size_t *id_len)
{
	char name[PATH_MAX];
	Elf *elf;
	int fd = open_elf(debug_file, &elf), err;

	if (fd < 0)
		return fd;
	err = parse_altlink(elf, name, id, id_len);
	elf_end(elf);
	close(fd);
	return err;
}

/* Whether the file at path is the one link names (its CRC-32). */
static bool debuglink_file_matches(const struct debuglink *link, const char *path)
{
	struct file_view *view = NULL;
	bool same;

	if (file_view__open(path, ALT_FILE_MAX_BYTES, &view, NULL, 0) != 0)
		return false;
	same = debug_files__debuglink_matches(link, view);
	file_view__close(view);
	return same;
}

int debug_files__find(Elf *elf, const char *binary, const uint8_t *id, size_t id_len, char *path,
		      size_t size)
{
	struct debuglink link;

	for (size_t i = 0; id_len && i < debug_files__build_id_places(); i++) {
		if (debug_files__build_id_path(id, id_len, i, path, size) == 0 &&
		    debug_files__check_build_id(path, id, id_len) == 0)
			return 0;
	}
	if (debug_files__debuglink(elf, binary, &link) == 0) {
		for (size_t i = 0; i < debug_files__debuglink_places(); i++) {
			if (debug_files__debuglink_path(&link, binary, i, path, size) == 0 &&
			    debuglink_file_matches(&link, path))
				return 0;
		}
	}
	path[0] = '\0';
	return -ENOENT;
}

int debug_files__altlink_of_binary(const char *binary, char *debug_file, size_t debug_size,
				   char *path, size_t size)
{
	struct elf_facts *facts = NULL;
	const uint8_t *id = NULL;
	size_t id_len = 0;
	Elf_Data *data;
	Elf *elf;
	int fd = open_elf(binary, &elf), err;

	if (fd < 0)
		return fd;
	if (elf_facts__read(elf, &facts) == 0)
		id_len = elf_facts__build_id(facts, &id);
	/* an unstripped binary holds its DWARF; a stripped one keeps .gnu_debugaltlink (strip
	 * leaves it) but not the DWARF that needs it: its debug file's is the one */
	if (libelf_sections__named(elf, ".debug_info", &data)) {
		snprintf(debug_file, debug_size, "%s", binary);
		err = debug_files__altlink(elf, binary, path, size);
	} else {
		err = debug_files__find(elf, binary, id, id_len, debug_file, debug_size);
		if (!err)
			err = debug_files__altlink_of(debug_file, path, size);
	}
	elf_facts__free(facts);
	elf_end(elf);
	close(fd);
	return err;
}
