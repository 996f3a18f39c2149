/* JIT code from perf's jitdump files (tools/perf/Documentation/jitdump-specification.txt),
 * as CPython 3.13+ (-X perf_jit) and V8 (--perf-prof, --perf-prof-unwinding-info) write
 * them: a header, then records. Of the records, JIT_CODE_LOAD names a function's code (and
 * holds its bytes), JIT_CODE_MOVE moves it, and JIT_CODE_UNWINDING_INFO gives the .eh_frame
 * of the next code load; the others are skipped by their size. One table per process; the
 * file grows while the process runs.
 *
 * The unwinding data is the .eh_frame then its .eh_frame_hdr (the specification says the
 * other way round; perf, CPython and V8 all put .eh_frame first). Its pc-relative pointers
 * assume that it lies right after the code, at code_addr + code_size rounded up to 8, as
 * perf lays out the ELF file it makes of each load (perf's genelf.c). */
#ifndef HPROF_JITDUMP_H
#define HPROF_JITDUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cfi/unwind_table.h"

/* Beyond these the file is cut short: a jitdump file is input from the profiled process. */
#define JITDUMP_MAX_BYTES (64u << 20)
#define JITDUMP_MAX_RECORDS (4u << 20)
/* A header larger than this is refused (CPython and V8 write 40 bytes). */
#define JITDUMP_MAX_HEADER_BYTES 4096u
/* Longer names are cut to this many bytes. */
#define JITDUMP_MAX_NAME 4096u
/* A larger unwinding-info record is skipped as bad (V8's are hundreds of bytes). */
#define JITDUMP_MAX_UNWIND_BYTES (1u << 20)
/* A miss looks at the file again at most this often (a JIT appends as it compiles). */
#define JITDUMP_RECHECK_MS 50

struct jitdump;

struct jitdump_stats {
	uint64_t read;          /* files read */
	uint64_t refused;       /* files not used: not a regular file, a stranger's, a second name */
	uint64_t bad_header;    /* files with a wrong magic (another byte order included), version,
				 * machine (neither x86-64 nor unset), flags, or header size */
	uint64_t cut_short;     /* files read only up to a limit (bytes, records) */
	uint64_t records;       /* complete records read, of any kind */
	uint64_t code_loads;
	uint64_t code_moves;
	uint64_t unwind_infos;
	uint64_t unknown;       /* records of an unknown kind, skipped */
	uint64_t bad_records;   /* malformed records, skipped (or ending the file, when their size
				 * is below a record header's) */
	uint64_t cut_records;   /* files that end inside a record (a JIT writing it, or a crash) */
	uint64_t unwind_tables; /* unwinding infos compiled into rows */
	uint64_t unwind_failed; /* unwinding infos that would not compile */
	uint64_t unwind_misplaced; /* compiled, but no row covers the code's first byte */
};

/* A function's code, as a code load (or move) gives it. Pointers stay valid until the next
 * call on the table that may read the file (jitdump__load, or a lookup that misses) or
 * jitdump__free. */
struct jitdump_code {
	const char *name;
	uint64_t start, size;     /* [start, start + size) */
	uint64_t code_index;
	uint64_t timestamp;       /* the record's, on the JIT's clock (CLOCK_MONOTONIC or the TSC) */
	/* The code bytes as the record holds them, at this offset in the file. CPython
	 * overwrites the last 8 of them with a marker that makes each synthetic ELF's
	 * build-id unique: for the code itself, read the process's memory. */
	bool has_bytes;
	uint64_t bytes_off;
	/* The code load's unwinding info, when a JIT_CODE_UNWINDING_INFO came before it. */
	bool has_unwind;
	const uint8_t *eh_frame;  /* NULL when the record holds only the header */
	size_t eh_frame_size;
	const uint8_t *eh_frame_hdr;
	size_t eh_frame_hdr_size;
	uint64_t eh_frame_addr;   /* where its pc-relative pointers assume it lies */
	uint64_t mapped_size;     /* the JIT's own word on whether it is in memory (0: not) */
};

/* The (not yet read) jitdump of process pid at path (copied), or /tmp/jit-PID.dump when
 * path is NULL: V8 writes it to its working directory, CPython to /tmp, and both map it
 * (perf finds it through that mapping). Returns 0 or -ENOMEM. */
int jitdump__new(uint32_t pid, const char *path, struct jitdump **out);

/* A table tied to no file, that only jitdump__add_bytes fills: a replay's, of the bytes its
 * recording read (jitdump__set_read_hook). Returns 0 or -ENOMEM. */
int jitdump__new_fixed(struct jitdump **out);
/* Called with the bytes of every read of a jitdump file, of process pid, at their offset
 * in the file (0: a file read from its start, anew), as they are added: what a raw capture
 * keeps for replays. NULL: none. One for the program. */
typedef void (*jitdump_read_hook_fn)(void *ctx, uint32_t pid, uint64_t offset,
				     const uint8_t *bytes, size_t len);
void jitdump__set_read_hook(jitdump_read_hook_fn fn, void *ctx);
/* Reads the file on first use, and again when its size or identity changed (only the new
 * records of a grown file). The file must pass jit_file.h's rules and be at most
 * JITDUMP_MAX_BYTES. Returns 0, -ENOENT (no file, or a table given bytes by hand, tied to
 * none), -EPERM (refused), -EINVAL (a bad header), or another -errno. */
int jitdump__load(struct jitdump *jd);

/* Adds bytes, the file's next len bytes (from its first byte on the first call), to the
 * table: the header, then every complete record; *consumed is how far that got (a record
 * cut short waits for the rest). Returns 0, -EINVAL when the header is bad (nothing more is
 * taken from this file), or -ENOMEM. */
int jitdump__add_bytes(struct jitdump *jd, const uint8_t *bytes, size_t len, size_t *consumed);

/* The latest code load covering addr, into *code; -ENOENT when there is none. A miss rereads
 * a changed file first, at most every JITDUMP_RECHECK_MS (never for a table that was only
 * given bytes). */
int jitdump__find(struct jitdump *jd, uint64_t addr, struct jitdump_code *code);

/* How many code loads and moves the table holds, later ones shadowing earlier ones or not;
 * jitdump__code_at gives the i-th in file order (-ENOENT past the end). Neither reads the
 * file. */
size_t jitdump__nr_codes(const struct jitdump *jd);
int jitdump__code_at(const struct jitdump *jd, size_t i, struct jitdump_code *code);

/* The name of the latest code load covering addr, or NULL; as jitdump__find. */
const char *jitdump__lookup(struct jitdump *jd, uint64_t addr);

/* The rows of the unwinding info of the code load covering addr, compiled on first use
 * (pcs are addresses in the process: its load bias is 0). Returns 0, -ENOENT (no code load
 * or no unwinding info), or the compiler's -errno (err, if errlen > 0, says why). The table
 * belongs to jd, with the lifetime of jitdump_code's pointers. */
int jitdump__unwind_table(struct jitdump *jd, uint64_t addr, const struct unwind_table **table,
			  char *err, size_t errlen);

/* Reads the code bytes of the code load covering addr into buf, at most len of them (*n says
 * how many), from the file as jitdump__load opens it. Returns 0; -ENOENT when there is no
 * such load, the record holds no bytes or the table was only given bytes; -ESTALE when the
 * file is no longer the one read; or another -errno. */
int jitdump__read_code(struct jitdump *jd, uint64_t addr, void *buf, size_t len, size_t *n);

/* Adds jd's counts to *acc. */
void jitdump__stats(const struct jitdump *jd, struct jitdump_stats *acc);

void jitdump__free(struct jitdump *jd);

#endif
