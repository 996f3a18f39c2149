#include "output/json.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void json__init(struct json_writer *w, FILE *out)
{
	memset(w, 0, sizeof(*w));
	w->out = out;
	w->first[0] = true;
}

static void newline_indent(struct json_writer *w)
{
	fputc('\n', w->out);
	for (int i = 0; i < w->depth; i++)
		fputs("  ", w->out);
}

/* Separates a value from the one before it; a value right after its key stays on the line. */
static void before_value(struct json_writer *w)
{
	if (w->after_key) {
		w->after_key = false;
		return;
	}
	if (w->depth == 0) {
		if (!w->first[0])
			w->err = w->err ? w->err : -EINVAL; /* one document, one top-level value */
		w->first[0] = false;
		return;
	}
	if (!w->first[w->depth])
		fputc(',', w->out);
	w->first[w->depth] = false;
	newline_indent(w);
}

static void begin(struct json_writer *w, char c)
{
	before_value(w);
	if (w->depth >= JSON_MAX_DEPTH) {
		w->err = w->err ? w->err : -E2BIG;
		return;
	}
	fputc(c, w->out);
	w->first[++w->depth] = true;
}

static void end(struct json_writer *w, char c)
{
	if (w->depth == 0) {
		w->err = w->err ? w->err : -E2BIG;
		return;
	}
	w->depth--;
	if (!w->first[w->depth + 1])
		newline_indent(w);
	fputc(c, w->out);
}

void json__begin_object(struct json_writer *w)
{
	begin(w, '{');
}

void json__end_object(struct json_writer *w)
{
	end(w, '}');
}

void json__begin_array(struct json_writer *w)
{
	begin(w, '[');
}

void json__end_array(struct json_writer *w)
{
	end(w, ']');
}

/* Length of the valid UTF-8 sequence at s (1 to 4), or 0 when it is not one. */
static size_t utf8_valid(const unsigned char *s, size_t len)
{
	unsigned char c = s[0];
	uint32_t v, min;
	size_t n;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		n = 2, v = c & 0x1F, min = 0x80;
	else if ((c & 0xF0) == 0xE0)
		n = 3, v = c & 0x0F, min = 0x800;
	else if (c >= 0xF0 && c <= 0xF4)
		n = 4, v = c & 0x07, min = 0x10000;
	else
		return 0;
	if (n > len)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3F);
	}
	if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
		return 0;
	return n;
}

static void put_string(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s);

	fputc('"', out);
	for (size_t i = 0; i < len;) {
		size_t n = utf8_valid(p + i, len - i);

		if (n == 0) {
			fputs("\\ufffd", out);
			i++;
		} else if (p[i] == '"' || p[i] == '\\') {
			fputc('\\', out);
			fputc(p[i++], out);
		} else if (p[i] < 0x20 || p[i] == 0x7f) {
			fprintf(out, "\\u%04x", p[i++]);
		} else {
			fwrite(p + i, 1, n, out);
			i += n;
		}
	}
	fputc('"', out);
}

void json__key(struct json_writer *w, const char *key)
{
	before_value(w);
	put_string(w->out, key);
	fputs(": ", w->out);
	w->after_key = true;
}

void json__string(struct json_writer *w, const char *s)
{
	before_value(w);
	put_string(w->out, s ? s : "");
}

void json__uint(struct json_writer *w, uint64_t v)
{
	before_value(w);
	fprintf(w->out, "%" PRIu64, v);
}

void json__key_uint(struct json_writer *w, const char *key, uint64_t v)
{
	json__key(w, key);
	json__uint(w, v);
}

void json__int(struct json_writer *w, int64_t v)
{
	before_value(w);
	fprintf(w->out, "%" PRId64, v);
}

void json__format_double(double v, char *buf, size_t len)
{
	if (v == 0) {
		snprintf(buf, len, "0"); /* also -0, which JSON readers need not keep */
		return;
	}
	/* whole numbers as such: "100", not the shorter "1e+02" */
	if (fabs(v) < 1e15 && v == trunc(v)) {
		snprintf(buf, len, "%.0f", v);
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, len, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

void json__double(struct json_writer *w, double v)
{
	char buf[40];

	before_value(w);
	if (!isfinite(v)) {
		fputs("null", w->out);
		return;
	}
	json__format_double(v, buf, sizeof(buf));
	fputs(buf, w->out);
}

void json__bool(struct json_writer *w, bool v)
{
	before_value(w);
	fputs(v ? "true" : "false", w->out);
}

void json__null(struct json_writer *w)
{
	before_value(w);
	fputs("null", w->out);
}

int json__finish(struct json_writer *w)
{
	if (!w->err && (w->depth != 0 || w->after_key))
		w->err = -E2BIG;
	fputc('\n', w->out);
	if (!w->err && (fflush(w->out) == EOF || ferror(w->out)))
		w->err = -EIO;
	return w->err;
}
