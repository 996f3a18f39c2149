/* The names of Python frames: each (module, function, file, line) a frame was named with,
 * interned once, so that a struct frame of MODULE_PYTHON carries its id as its address.
 * Kept by content, not by code object: a program that makes code objects all the time
 * (exec in a loop) adds no entry for a name it already has. */
#ifndef HPROF_BINARY_PYTHON_NAMES_H
#define HPROF_BINARY_PYTHON_NAMES_H

#include <stddef.h>
#include <stdint.h>

struct python_location {
	const char *module;   /* "json", "app.handlers" */
	const char *function; /* qualname (3.11+) or name: "Parser.parse", "<lambda>" */
	const char *file;     /* co_filename */
	int firstlineno;      /* co_firstlineno: where the function starts (pprof's start_line) */
	int line;             /* of the instruction run; 0: not known */
};

/* What outputs name the "binary" of a Python frame: pprof's mapping, --top's module. */
#define PYTHON_NAMES_MODULE_LABEL "[python]"

struct python_names;

struct python_names *python_names__new(void);
/* The id of loc, added on first sight. Returns 0 or -ENOMEM. */
int python_names__intern(struct python_names *n, const struct python_location *loc,
			 uint64_t *id);
/* The location of id, NULL for an id it never gave. Valid while n lives. */
const struct python_location *python_names__get(const struct python_names *n, uint64_t id);
/* Orders ids by their locations (module, function, file, first line, line), not by id,
 * which follows the order they were first seen; unknown ids first. */
int python_names__compare(const struct python_names *n, uint64_t a, uint64_t b);
/* The frame's name as every output shows it: "module.function"; malloc'd, NULL when out
 * of memory or id is unknown. */
char *python_names__format(const struct python_names *n, uint64_t id);
size_t python_names__count(const struct python_names *n);
size_t python_names__bytes(const struct python_names *n);
void python_names__free(struct python_names *n);

#endif
