#include "capture/format.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct capture_reader {
	char *path;
	uint8_t *data;
	size_t size;
	size_t pos;
	uint32_t last_type; /* a whole capture ends with its CAPTURE_INFO record */
	bool mapped;        /* data is a mapping of the file, not the heap's */
	uint32_t version;
	uint8_t *converted; /* a version 6 sample in this version's layout (CAPTURE_MAX_RECORD) */
};

/* The header of a sample in captures of version 6: struct hprof_sample up to user_r8. */
#define SAMPLE_V6_HEADER offsetof(struct hprof_sample, user_r8)
_Static_assert(sizeof(struct hprof_sample) == SAMPLE_V6_HEADER + 8,
	       "version 7 added user_r8 at the end of the header, and nothing else");

/* Reads len bytes of fd into buf; returns 0, or -1 when the file ends before them. */
static int read_all(int fd, uint8_t *buf, size_t len)
{
	while (len) {
		ssize_t got = read(fd, buf, len);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return -1;
		buf += got;
		len -= (size_t)got;
	}
	return 0;
}

int capture__write_header(FILE *f)
{
	uint32_t words[2] = { CAPTURE_VERSION, 0 };

	if (fwrite(CAPTURE_MAGIC, 1, 8, f) != 8 || fwrite(words, sizeof(words), 1, f) != 1)
		return -EIO;
	return 0;
}

static int write_record(FILE *f, uint32_t type, const void *payload, size_t len,
			  const void *payload2, size_t len2)
{
	static const uint8_t zeros[8];
	uint32_t header[2] = { type, (uint32_t)(len + len2) };
	size_t pad = (8 - (len + len2) % 8) % 8;

	if (len + len2 > CAPTURE_MAX_RECORD)
		return -E2BIG;
	if (fwrite(header, sizeof(header), 1, f) != 1 || (len && fwrite(payload, len, 1, f) != 1) ||
	    (len2 && fwrite(payload2, len2, 1, f) != 1) || (pad && fwrite(zeros, pad, 1, f) != 1))
		return -EIO;
	return 0;
}

int capture__write_info(FILE *f, const struct capture_info *info)
{
	return write_record(f, CAPTURE_INFO, info, sizeof(*info), NULL, 0);
}

int capture__write_maps(FILE *f, uint32_t pid, const char *text, size_t len)
{
	uint32_t header[2] = { pid, 0 };

	return write_record(f, CAPTURE_MAPS, header, sizeof(header), text, len);
}

int capture__write_sample(FILE *f, const struct hprof_sample *sample, size_t len)
{
	return write_record(f, CAPTURE_SAMPLE, sample, len, NULL, 0);
}

int capture__write_map_event(FILE *f, const struct map_event *e, const char *path)
{
	return write_record(f, CAPTURE_MAP_EVENT, e, sizeof(*e), path,
			    strnlen(path, MAP_EVENT_PATH_MAX - 1) + 1);
}

/* The id sits in a fixed BUILD_ID_MAX-byte field, so the path's offset is fixed. */
int capture__write_build_id(FILE *f, const uint8_t *id, uint32_t len, const char *path)
{
	uint8_t field[4 + BUILD_ID_MAX] = { 0 };

	if (len > BUILD_ID_MAX)
		return -EINVAL;
	memcpy(field, &len, 4);
	memcpy(field + 4, id, len);
	return write_record(f, CAPTURE_BUILD_ID, field, sizeof(field), path, strlen(path) + 1);
}

/* u32 pid, u32 reserved, u64 addr, then what follows. */
static int write_process_bytes(FILE *f, uint32_t type, uint32_t pid, uint64_t addr,
			       const void *bytes, size_t len)
{
	uint8_t header[16] = { 0 };

	memcpy(header, &pid, 4);
	memcpy(header + 8, &addr, 8);
	return write_record(f, type, header, sizeof(header), bytes, len);
}

int capture__write_python_memory(FILE *f, uint32_t pid, uint64_t addr, const void *bytes,
				 size_t len)
{
	return write_process_bytes(f, CAPTURE_PYTHON_MEMORY, pid, addr, bytes, len);
}

int capture__write_code(FILE *f, uint32_t pid, uint64_t addr, const uint8_t *bytes, size_t len)
{
	return write_process_bytes(f, CAPTURE_CODE, pid, addr, bytes, len);
}

int capture__write_gdb_jit_object(FILE *f, uint32_t pid, uint64_t addr, const uint8_t *bytes,
				  size_t len)
{
	return write_process_bytes(f, CAPTURE_GDB_JIT_OBJECT, pid, addr, bytes, len);
}

int capture__write_jitdump(FILE *f, uint32_t pid, uint64_t offset, const uint8_t *bytes,
			   size_t len)
{
	return write_process_bytes(f, CAPTURE_JITDUMP, pid, offset, bytes, len);
}

int capture__write_gdb_jit_drop(FILE *f, uint32_t pid, uint64_t addr, uint64_t size)
{
	return write_process_bytes(f, CAPTURE_GDB_JIT_DROP, pid, addr, &size, sizeof(size));
}

bool capture__decode_gdb_jit_drop(uint32_t type, const uint8_t *payload, uint32_t len,
				  uint32_t *pid, uint64_t *addr, uint64_t *size)
{
	if (type != CAPTURE_GDB_JIT_DROP || len < 24)
		return false;
	memcpy(pid, payload, 4);
	memcpy(addr, payload + 8, 8);
	memcpy(size, payload + 16, 8);
	return true;
}

int capture__write_perf_map(FILE *f, uint32_t pid, const char *text, size_t len)
{
	uint32_t header[2] = { pid, 0 };

	return write_record(f, CAPTURE_PERF_MAP, header, sizeof(header), text, len);
}

int capture__write_ksyms(FILE *f, const char *text, size_t len)
{
	return write_record(f, CAPTURE_KSYMS, text, len, NULL, 0);
}

int capture__write_beam_exit(FILE *f, uint32_t pid, uint64_t exit)
{
	uint8_t payload[16] = { 0 };

	memcpy(payload, &pid, 4);
	memcpy(payload + 8, &exit, 8);
	return write_record(f, CAPTURE_BEAM_EXIT, payload, sizeof(payload), NULL, 0);
}

bool capture__decode_perf_map(uint32_t type, const uint8_t *payload, uint32_t len, uint32_t *pid,
			      const char **text, size_t *text_len)
{
	if (type != CAPTURE_PERF_MAP || len < 8)
		return false;
	memcpy(pid, payload, 4);
	*text = (const char *)payload + 8;
	*text_len = len - 8;
	return true;
}

bool capture__decode_beam_exit(uint32_t type, const uint8_t *payload, uint32_t len,
			       uint32_t *pid, uint64_t *exit)
{
	if (type != CAPTURE_BEAM_EXIT || len < 16)
		return false;
	memcpy(pid, payload, 4);
	memcpy(exit, payload + 8, 8);
	return true;
}

bool capture__decode_code(uint32_t type, const uint8_t *payload, uint32_t len, uint32_t *pid,
			  uint64_t *addr, const uint8_t **bytes, size_t *n)
{
	if ((type != CAPTURE_CODE && type != CAPTURE_GDB_JIT_OBJECT && type != CAPTURE_JITDUMP &&
	     type != CAPTURE_PYTHON_MEMORY) ||
	    len < 16)
		return false;
	memcpy(pid, payload, 4);
	memcpy(addr, payload + 8, 8);
	*bytes = payload + 16;
	*n = len - 16;
	return true;
}

bool capture__decode_info(uint32_t type, const uint8_t *payload, uint32_t len,
			  struct capture_info *info)
{
	if (type != CAPTURE_INFO || len < sizeof(*info))
		return false;
	memcpy(info, payload, sizeof(*info));
	return true;
}

bool capture__decode_maps(uint32_t type, const uint8_t *payload, uint32_t len, uint32_t *pid,
			  const char **text, size_t *text_len)
{
	if (type != CAPTURE_MAPS || len < 8)
		return false;
	memcpy(pid, payload, 4);
	*text = (const char *)payload + 8;
	*text_len = len - 8;
	return true;
}

const struct hprof_sample *capture__decode_sample(uint32_t type, const uint8_t *payload,
						  uint32_t len)
{
	if (type != CAPTURE_SAMPLE || len < sizeof(struct hprof_sample))
		return NULL;
	return (const struct hprof_sample *)payload;
}

bool capture__decode_map_event(uint32_t type, const uint8_t *payload, uint32_t len,
			       struct map_event *e, const char **path)
{
	if (type != CAPTURE_MAP_EVENT || len < sizeof(*e) + 1 || payload[len - 1] != '\0')
		return false;
	memcpy(e, payload, sizeof(*e));
	*path = (const char *)payload + sizeof(*e);
	return true;
}

bool capture__decode_build_id(uint32_t type, const uint8_t *payload, uint32_t len,
			      const uint8_t **id, uint32_t *id_len, const char **path)
{
	if (type != CAPTURE_BUILD_ID || len < 4 + BUILD_ID_MAX + 1 || payload[len - 1] != '\0')
		return false;
	memcpy(id_len, payload, 4);
	if (*id_len > BUILD_ID_MAX)
		return false;
	*id = payload + 4;
	*path = (const char *)payload + 4 + BUILD_ID_MAX;
	return true;
}

/* The capture's bytes, mapped rather than read: a 17 MB capture read into the heap costs
 * a copy and the zeroing of its fresh pages, a tenth of a report's time (bench/README.md),
 * where mapping it maps the page cache's own. Private and writable, so that nothing written
 * through it reaches the file. Like the debug files libelf maps, a capture cut short by
 * another process while it is read stops the report (SIGBUS); records are bounds-checked
 * against the size it had when opened. An empty file, or one that cannot be mapped, is
 * read (r->mapped false). */
static int read_whole_file(struct capture_reader *r, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err = 0;
	struct stat st;
	void *map;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0) {
		err = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		err = -EINVAL;
		goto out;
	}
	r->size = (size_t)st.st_size;
	map = r->size ? mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_POPULATE,
			     fd, 0)
		      : MAP_FAILED;
	if (map != MAP_FAILED) {
		r->data = map;
		r->mapped = true;
		goto out;
	}
	r->data = malloc(r->size ? r->size : 1);
	if (!r->data)
		err = -ENOMEM;
	else if (r->size && read_all(fd, r->data, r->size) != 0)
		err = -EIO;
out:
	close(fd);
	return err;
}

int capture_reader__open(const char *path, struct capture_reader **out, char *err,
			 size_t errlen)
{
	struct capture_reader *r;
	uint32_t version;
	int ret;

	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r || !(r->path = strdup(path))) {
		free(r);
		return -ENOMEM;
	}
	ret = read_whole_file(r, path);
	if (ret) {
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		goto cleanup;
	}
	ret = -EINVAL;
	if (memcmp(r->data, CAPTURE_MAGIC, r->size < 8 ? r->size : 8) != 0) {
		snprintf(err, errlen, "%s: not an hprof capture (no %s header)", path, CAPTURE_MAGIC);
		goto cleanup;
	}
	if (r->size < 16) {
		snprintf(err, errlen, "%s: truncated at offset %zu, in its 16-byte header", path,
			 r->size);
		goto cleanup;
	}
	memcpy(&version, r->data + 8, sizeof(version));
	if (version < CAPTURE_VERSION_OLDEST || version > CAPTURE_VERSION) {
		snprintf(err, errlen, "%s: written by %s hprof (capture version %u; this hprof reads versions %u to %u)",
			 path, version > CAPTURE_VERSION ? "a newer" : "an older", version,
			 CAPTURE_VERSION_OLDEST, CAPTURE_VERSION);
		goto cleanup;
	}
	r->version = version;
	if (version < CAPTURE_VERSION && !(r->converted = malloc(CAPTURE_MAX_RECORD))) {
		ret = -ENOMEM;
		snprintf(err, errlen, "%s: %s", path, strerror(ENOMEM));
		goto cleanup;
	}
	r->pos = 16;
	*out = r;
	return 0;
cleanup:
	capture_reader__free(r);
	return ret;
}

/* A version 6 sample in this version's layout: user_r8 (0) inserted after its header,
 * flagged SAMPLE_NO_R8. One too short for the header is left as it is (the reader of the
 * record refuses it); -1 for one the buffer cannot hold. */
static int convert_v6_sample(struct capture_reader *r, const uint8_t **payload, uint32_t *len)
{
	struct hprof_sample *s = (struct hprof_sample *)r->converted;

	if (*len < SAMPLE_V6_HEADER)
		return 0;
	if (*len > CAPTURE_MAX_RECORD - 8)
		return -1;
	memcpy(r->converted, *payload, SAMPLE_V6_HEADER);
	s->user_r8 = 0;
	s->flags |= SAMPLE_NO_R8;
	memcpy(r->converted + sizeof(*s), *payload + SAMPLE_V6_HEADER, *len - SAMPLE_V6_HEADER);
	*payload = r->converted;
	*len += 8;
	return 0;
}

int capture_reader__next(struct capture_reader *r, uint32_t *type, const uint8_t **payload,
			 uint32_t *len, char *err, size_t errlen)
{
	uint32_t header[2];
	size_t padded;

	if (r->pos == r->size && r->last_type != CAPTURE_INFO) {
		/* records are whole up to here: the file was cut at a record boundary */
		snprintf(err, errlen, "%s: truncated at offset %zu: it ends without its closing record",
			 r->path, r->pos);
		return -EINVAL;
	}
	if (r->pos == r->size)
		return 0;
	if (r->size - r->pos < sizeof(header)) {
		snprintf(err, errlen, "%s: truncated at offset %zu, in a record header", r->path,
			 r->pos);
		return -EINVAL;
	}
	memcpy(header, r->data + r->pos, sizeof(header));
	padded = ((size_t)header[1] + 7) & ~(size_t)7;
	if (header[1] > CAPTURE_MAX_RECORD) {
		snprintf(err, errlen, "%s: offset %zu: a record of %u bytes, more than hprof writes",
			 r->path, r->pos, header[1]);
		return -EINVAL;
	}
	if (padded > r->size - r->pos - sizeof(header)) {
		snprintf(err, errlen, "%s: truncated at offset %zu, in a record of %u bytes", r->path,
			 r->pos, header[1]);
		return -EINVAL;
	}
	*type = r->last_type = header[0];
	*len = header[1];
	*payload = r->data + r->pos + sizeof(header);
	if (r->version < CAPTURE_VERSION && *type == CAPTURE_SAMPLE &&
	    convert_v6_sample(r, payload, len) != 0) {
		snprintf(err, errlen, "%s: offset %zu: a sample of %u bytes, more than hprof writes",
			 r->path, r->pos, header[1]);
		return -EINVAL;
	}
	r->pos += sizeof(header) + padded;
	return 1;
}

void capture_reader__rewind(struct capture_reader *r)
{
	r->pos = 16;
	r->last_type = 0;
}

void capture_reader__free(struct capture_reader *r)
{
	if (!r)
		return;
	if (r->mapped)
		munmap(r->data, r->size);
	else
		free(r->data);
	free(r->converted);
	free(r->path);
	free(r);
}
