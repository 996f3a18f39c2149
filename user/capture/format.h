/* Raw captures (--raw FILE): the samples as the kernel sent them (registers, FP chains,
 * stack slices) with the process mappings and build-ids needed to unwind them later with
 * `hprof report`. Stack bytes can hold secrets: files are created mode 0600.
 *
 * Layout: "HPROFCAP" u32 version u32 reserved, then records of
 * u32 type, u32 length, payload, zero padding to 8 bytes. All integers little-endian. */
#ifndef HPROF_CAPTURE_H
#define HPROF_CAPTURE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>

#include "proc/map_event.h"
#include "sample.h"

#define CAPTURE_MAGIC "HPROFCAP"
/* 2: samples carry the window at the FP chain's end; map events. 3: samples carry the
 * stack a signal interrupted, and their copies' holes. 4: samples carry rbx and rdi.
 * 5: r10 and r12-r15. 6: copies of up to 128 KiB, their maps of holes 64 bits; later,
 * CAPTURE_CODE, _PERF_MAP, _BEAM_EXIT, _GDB_JIT_*, _JITDUMP, _PYTHON_MEMORY and _KSYMS
 * records, which an hprof that predates them refuses as unknown types. 7: r8, at the end of
 * the sample's header; a version 6 capture is still read (capture_reader__next gives its
 * samples in this layout, r8 0 and flagged SAMPLE_NO_R8). */
#define CAPTURE_VERSION 7
#define CAPTURE_VERSION_OLDEST 6
/* Largest record accepted when reading: a sample or a maps file. */
#define CAPTURE_MAX_RECORD (4u << 20)

enum capture_record_type {
	CAPTURE_INFO = 1,     /* struct capture_info */
	CAPTURE_MAPS = 2,     /* u32 pid, u32 reserved, /proc/PID/maps text */
	CAPTURE_SAMPLE = 3,   /* struct hprof_sample with its data */
	CAPTURE_BUILD_ID = 4, /* u32 id length, u8 id[20], path (NUL-terminated) */
	CAPTURE_MAP_EVENT = 5, /* struct map_event, path (NUL-terminated) */
	/* u32 pid, u32 reserved, u64 address, the bytes of JIT code hprof read there from the
	 * process (binary/code.h): a replay has no process to read them from. Written while a
	 * sample is handled, so before it. */
	CAPTURE_CODE = 6,
	/* u32 pid, u32 reserved, text hprof read from the process's perf map file (complete
	 * lines): its JIT code's names and bounds, which the walks use */
	CAPTURE_PERF_MAP = 7,
	/* u32 pid, u32 reserved, u64 the address where its Erlang processes' stacks end
	 * (module_registry__beam_exit), once found */
	CAPTURE_BEAM_EXIT = 8,
	/* u32 pid, u32 reserved, u64 address, the bytes of an object the process registered
	 * through gdb's JIT interface (binary/gdb_jit.h), as hprof read it */
	CAPTURE_GDB_JIT_OBJECT = 9,
	/* u32 pid, u32 reserved, u64 address, u64 size: an object it unregistered */
	CAPTURE_GDB_JIT_DROP = 10,
	/* u32 pid, u32 reserved, u64 offset, the bytes hprof read there from the process's
	 * jitdump file (complete records; offset 0: the file read from its start, anew) */
	CAPTURE_JITDUMP = 11,
	/* u32 pid, u32 reserved, u64 address, the bytes hprof read there from a CPython process
	 * (python/memory.h: its version, runtime, code objects and their strings), one record
	 * a read, written while a sample is handled, so before it */
	CAPTURE_PYTHON_MEMORY = 12,
	/* kallsyms text ("ADDR T NAME" lines, complete) of the kernel functions the samples'
	 * kernel frames are in, as the recording's /proc/kallsyms named them: a report names
	 * kernel frames from them, not from the machine it runs on. Written at the end, in
	 * records of at most CAPTURE_MAX_RECORD bytes; a replay reads them first. */
	CAPTURE_KSYMS = 13,
};

struct capture_info {
	uint32_t frequency;
	uint32_t stack_size; /* 0: frame pointers only */
	uint64_t duration_ns;
};
_Static_assert(sizeof(struct capture_info) == 16, "capture_info is a file format");

/* Writing: the header, then one record per call. Each returns 0, -E2BIG (a record over
 * CAPTURE_MAX_RECORD) or -EIO. */
int capture__write_header(FILE *f);
int capture__write_info(FILE *f, const struct capture_info *info);
int capture__write_maps(FILE *f, uint32_t pid, const char *text, size_t len);
int capture__write_sample(FILE *f, const struct hprof_sample *sample, size_t len);
int capture__write_map_event(FILE *f, const struct map_event *e, const char *path);
int capture__write_build_id(FILE *f, const uint8_t *id, uint32_t len, const char *path);
int capture__write_python_memory(FILE *f, uint32_t pid, uint64_t addr, const void *bytes,
				 size_t len);
int capture__write_code(FILE *f, uint32_t pid, uint64_t addr, const uint8_t *bytes, size_t len);
int capture__write_perf_map(FILE *f, uint32_t pid, const char *text, size_t len);
int capture__write_beam_exit(FILE *f, uint32_t pid, uint64_t exit);
int capture__write_gdb_jit_object(FILE *f, uint32_t pid, uint64_t addr, const uint8_t *bytes,
				  size_t len);
int capture__write_gdb_jit_drop(FILE *f, uint32_t pid, uint64_t addr, uint64_t size);
int capture__write_ksyms(FILE *f, const char *text, size_t len);
int capture__write_jitdump(FILE *f, uint32_t pid, uint64_t offset, const uint8_t *bytes,
			   size_t len);

/* Decoding one record's payload (as capture_reader__next gives it): false when the record
 * is of another type or too short for what it says it holds. Pointers point into the
 * payload. */
bool capture__decode_info(uint32_t type, const uint8_t *payload, uint32_t len,
			  struct capture_info *info);
bool capture__decode_maps(uint32_t type, const uint8_t *payload, uint32_t len, uint32_t *pid,
			  const char **text, size_t *text_len);
/* Only the header is checked: hprof_sample__well_formed says whether the rest is there. */
const struct hprof_sample *capture__decode_sample(uint32_t type, const uint8_t *payload,
						  uint32_t len);
/* The event is copied out (payloads are not aligned); the path ends the record. */
bool capture__decode_map_event(uint32_t type, const uint8_t *payload, uint32_t len,
			       struct map_event *e, const char **path);
/* The bytes run to the record's end (CAPTURE_CODE, CAPTURE_GDB_JIT_OBJECT,
 * CAPTURE_PYTHON_MEMORY and CAPTURE_JITDUMP, whose address is an offset: type says which). */
bool capture__decode_code(uint32_t type, const uint8_t *payload, uint32_t len, uint32_t *pid,
			  uint64_t *addr, const uint8_t **bytes, size_t *n);
/* The text runs to the record's end. */
bool capture__decode_perf_map(uint32_t type, const uint8_t *payload, uint32_t len, uint32_t *pid,
			      const char **text, size_t *text_len);
bool capture__decode_gdb_jit_drop(uint32_t type, const uint8_t *payload, uint32_t len,
				  uint32_t *pid, uint64_t *addr, uint64_t *size);
bool capture__decode_beam_exit(uint32_t type, const uint8_t *payload, uint32_t len,
			       uint32_t *pid, uint64_t *exit);
/* The path ends the record; *id_len is at most BUILD_ID_MAX. */
bool capture__decode_build_id(uint32_t type, const uint8_t *payload, uint32_t len,
			      const uint8_t **id, uint32_t *id_len, const char **path);

struct capture_reader;

/* Reads the records again from the first. */
void capture_reader__rewind(struct capture_reader *r);
/* Reads a whole capture into memory and checks its header. On error returns -errno with
 * a one-line message (naming the file and offset) in err. */
int capture_reader__open(const char *path, struct capture_reader **out, char *err,
			 size_t errlen);
/* The next record: 1 with type, payload and len set, 0 at the end, or -EINVAL (message in
 * err, saying "truncated" and where) for a record that runs past the end of the file or a
 * capture that ends before its closing CAPTURE_INFO record. A sample of a version 6 capture
 * comes in this version's layout, in a buffer of the reader's that the next call reuses. */
int capture_reader__next(struct capture_reader *r, uint32_t *type, const uint8_t **payload,
			 uint32_t *len, char *err, size_t errlen);
void capture_reader__free(struct capture_reader *r);

#endif
