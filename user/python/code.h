/* CPython code objects read from a profiled process, cached: what names a Python frame of a
 * sample (struct hprof_py_frame: a code object's address, its instruction and check).
 *
 * Everything read is the process's to choose: hostile. A code object is taken only when its
 * ob_type is the process's PyCode_Type, its strings are well-formed compact str objects
 * within caps, and the check the kernel folded from it when it took the sample equals the
 * one folded from what is read now: a code object freed and another made at its address is
 * stale, refused, never given the other's name. Memory is bounded (least recently used
 * entries go), so a program that makes code objects all the time (exec in a loop) keeps the
 * cache at its size (entries and their strings are counted; the hash tables' own buckets
 * are not). A cache is used by one thread at a time. */
#ifndef HPROF_PYTHON_CODE_H
#define HPROF_PYTHON_CODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "python.h"
#include "python/layout.h"

/* Caps on what is read of one code object. Longer names and file names are refused;
 * a longer line table is not kept (the frame is named, its line not known). */
#define PYTHON_NAME_MAX 1024      /* code points of co_qualname / co_name */
#define PYTHON_FILENAME_MAX 4096  /* code points of co_filename */
#define PYTHON_LINETABLE_MAX (64u << 10)
/* Below this a cache cannot hold one entry of the largest size. */
#define PYTHON_CODE_CACHE_MIN_BYTES (256u << 10)

/* Reads exactly len bytes at addr of the process into buf; false when any cannot be read.
 * The real one is process_memory__read (user/util/process_memory.h). */
typedef bool (*python_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

struct python_code_cache;

/* A frame's name; the strings (UTF-8) belong to the cache and stay valid until the next
 * call of python_code_cache__name, __forget_pid or __free. */
struct python_frame_name {
	const char *module;   /* from the file name: its base name without ".py", the
			       * package's directory for "__init__.py"; "<string>",
			       * "<frozen ...>" and other names in <> as they are */
	const char *qualname; /* co_qualname (3.11+), co_name before */
	const char *filename; /* co_filename */
	int firstlineno;      /* co_firstlineno */
	int line;             /* the line of the frame's instruction, -1 when not known */
	/* 3.11-3.12: the frame is before the code's first traceable instruction (still
	 * copying arguments into cells): CPython's own frame walks skip such a frame */
	bool incomplete;
};

struct python_code_cache_stats {
	uint64_t hits;       /* frames named from an entry */
	uint64_t reads;      /* code objects read from a process */
	uint64_t stale;      /* frames refused: the object at the address is another now */
	uint64_t failed;     /* frames refused: no code object could be read there */
	uint64_t evicted;    /* entries dropped for room */
	uint64_t entries;    /* entries now */
	uint64_t bytes;      /* bytes they take now */
};

/* A cache using at most max_bytes (at least PYTHON_CODE_CACHE_MIN_BYTES). Returns 0,
 * -EINVAL or -ENOMEM. */
int python_code_cache__new(size_t max_bytes, struct python_code_cache **out);
/* Names frame f of process pid, whose CPython has layout l and whose PyCode_Type is at
 * code_type, reading the process's memory through read(ctx, ...) on a miss. Returns 0,
 * -ESTALE (the code object at f->code is not the one the kernel saw: its check differs),
 * -EINVAL (no code object there: another type, malformed strings, a name over its cap),
 * -EFAULT (what it points to cannot be read) or -ENOMEM. A failed read is remembered for
 * that (pid, address, check), so that a frame of it that comes again fails at once. */
int python_code_cache__name(struct python_code_cache *c, uint32_t pid,
			    const struct python_layout *l, uint64_t code_type,
			    const struct hprof_py_frame *f, python_read_fn read, void *ctx,
			    struct python_frame_name *out);
/* Drops every entry of process pid (it exited, or exec'd). */
void python_code_cache__forget_pid(struct python_code_cache *c, uint32_t pid);
void python_code_cache__stats(const struct python_code_cache *c,
			      struct python_code_cache_stats *out);
void python_code_cache__free(struct python_code_cache *c);

/* The module a file name gives (as python_frame_name.module), written to out (cap bytes,
 * NUL-terminated, cut at cap). */
void python_code__module(const char *filename, char *out, size_t cap);

#endif
