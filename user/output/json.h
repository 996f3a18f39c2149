/* A streaming JSON writer: nesting, commas and indentation are its business, so callers
 * write values in order and cannot produce invalid JSON. Strings come out as valid UTF-8
 * whatever bytes go in (invalid sequences become U+FFFD); numbers are formatted the same
 * way on every run, doubles as the shortest text that reads back as the same double. */
#ifndef HPROF_OUTPUT_JSON_H
#define HPROF_OUTPUT_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Deeper nesting is refused (-E2BIG) rather than tracked. */
#define JSON_MAX_DEPTH 32

struct json_writer {
	FILE *out;
	int depth;
	bool first[JSON_MAX_DEPTH + 1]; /* no value yet at this level */
	bool after_key;                 /* a key was written: its value follows on the line */
	int err;                        /* first error, sticky */
};

void json__init(struct json_writer *w, FILE *out);
void json__begin_object(struct json_writer *w);
void json__end_object(struct json_writer *w);
void json__begin_array(struct json_writer *w);
void json__end_array(struct json_writer *w);
/* An object member's key; the next call writes its value. */
void json__key(struct json_writer *w, const char *key);
void json__string(struct json_writer *w, const char *s);
void json__uint(struct json_writer *w, uint64_t v);
/* "key": v */
void json__key_uint(struct json_writer *w, const char *key, uint64_t v);
void json__int(struct json_writer *w, int64_t v);
/* NaN and infinities, which JSON lacks, are written as null. */
void json__double(struct json_writer *w, double v);
void json__bool(struct json_writer *w, bool v);
void json__null(struct json_writer *w);
/* Ends the document with a newline. Returns 0 or the first error (-E2BIG for nesting too
 * deep or unbalanced, -EIO for the stream's). */
int json__finish(struct json_writer *w);

/* The shortest "%.Ng" text of v that strtod reads back as v, into buf (at least 32
 * bytes). Shared with text outputs that must print the same figure. */
void json__format_double(double v, char *buf, size_t len);

#endif
