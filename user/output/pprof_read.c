/* Reading pprof profiles back into stacks by name, for hprof diff. Every index the message
 * holds (string table, location and function ids) is checked before use. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "output/pprof.h"
#include "output/stack_set.h"
#include "profile.pb-c.h"
#include "util/grow.h"

typedef Perftools__Profiles__Profile pb_profile;

struct id_index {
	uint64_t id;
	size_t index;
};

struct reader {
	const pb_profile *msg;
	struct stack_set *set;
	struct id_index *locations, *functions;
	size_t value_index;
	int64_t comm_key; /* -1: no such label */
	uint32_t *ids;
	size_t ids_cap;
	char *name;
	size_t name_cap;
	char *err;
	size_t errlen;
};

static int fail(char *err, size_t errlen, int ret, const char *msg)
{
	snprintf(err, errlen, "%s", msg);
	return ret;
}

/* Inflates a gzip stream into a buffer grown as needed, up to PPROF_MAX_BYTES. */
static int gunzip(const uint8_t *data, size_t len, uint8_t **out, size_t *out_len, char *err,
		  size_t errlen)
{
	size_t cap = len < PPROF_MAX_BYTES / 4 ? len * 4 + 4096 : PPROF_MAX_BYTES, used = 0;
	z_stream z = { 0 };
	uint8_t *buf;
	int zret, ret = 0;

	if (len < 2 || data[0] != 0x1f || data[1] != 0x8b)
		return fail(err, errlen, -EINVAL, "not gzip-compressed");
	if (len > PPROF_MAX_BYTES)
		return fail(err, errlen, -EFBIG, "compressed profile larger than the limit");
	buf = malloc(cap);
	if (!buf || inflateInit2(&z, 15 + 16) != Z_OK) {
		free(buf);
		return -ENOMEM;
	}
	z.next_in = (uint8_t *)data;
	z.avail_in = (uInt)len;
	for (;;) {
		if (used == cap) {
			uint8_t *bigger;

			if (cap >= PPROF_MAX_BYTES) {
				ret = fail(err, errlen, -EFBIG, "more than 1 GiB uncompressed");
				break;
			}
			cap = cap > PPROF_MAX_BYTES / 2 ? PPROF_MAX_BYTES : cap * 2;
			bigger = realloc(buf, cap);
			if (!bigger) {
				ret = -ENOMEM;
				break;
			}
			buf = bigger;
		}
		z.next_out = buf + used;
		z.avail_out = (uInt)(cap - used);
		zret = inflate(&z, Z_NO_FLUSH);
		used = (size_t)(z.next_out - buf);
		if (zret == Z_STREAM_END)
			break;
		/* no progress with room to write: the input ran out */
		if (zret == Z_BUF_ERROR && z.avail_out) {
			ret = fail(err, errlen, -EINVAL, "truncated gzip stream");
			break;
		}
		if (zret != Z_OK && zret != Z_BUF_ERROR) {
			ret = fail(err, errlen, -EINVAL, "corrupt gzip stream");
			break;
		}
	}
	inflateEnd(&z);
	if (ret) {
		free(buf);
		return ret;
	}
	*out = buf;
	*out_len = used;
	return 0;
}

static int compare_id(const void *a, const void *b)
{
	const struct id_index *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static const char *string_at(const struct reader *r, int64_t index)
{
	if (index < 0 || (uint64_t)index >= r->msg->n_string_table)
		return NULL;
	return r->msg->string_table[index];
}

__attribute__((format(printf, 2, 3)))
static int bad(struct reader *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->err, r->errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Sorted (id, index) pairs for ids a sample or a line refers to; ids must be unique. */
static int index_ids(struct reader *r, const char *what, size_t n, uint64_t (*id_of)(const pb_profile *, size_t),
		     struct id_index **out)
{
	struct id_index *ix = calloc(n + 1, sizeof(*ix));

	if (!ix)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		ix[i] = (struct id_index){ id_of(r->msg, i), i };
	qsort(ix, n, sizeof(*ix), compare_id);
	*out = ix;
	for (size_t i = 1; i < n; i++) {
		if (ix[i].id == ix[i - 1].id) {
			snprintf(r->err, r->errlen, "%s id %" PRIu64 " defined twice", what, ix[i].id);
			return -EINVAL;
		}
	}
	return 0;
}

static uint64_t location_id(const pb_profile *m, size_t i)
{
	return m->location[i]->id;
}

static uint64_t function_id(const pb_profile *m, size_t i)
{
	return m->function[i]->id;
}

static const struct id_index *lookup(const struct id_index *ix, size_t n, uint64_t id)
{
	struct id_index key = { id, 0 };

	return bsearch(&key, ix, n, sizeof(*ix), compare_id);
}

/* Which value counts samples, and which label holds the command name. */
static int find_columns(struct reader *r)
{
	const pb_profile *m = r->msg;

	if (m->n_string_table == 0 || m->string_table[0][0] != '\0')
		return bad(r, "string table does not start with \"\"");
	if (m->n_sample_type == 0)
		return bad(r, "no sample types");
	r->value_index = 0;
	for (size_t i = 0; i < m->n_sample_type; i++) {
		const char *type = string_at(r, m->sample_type[i]->type);

		if (!type)
			return bad(r, "sample type %zu: string index %" PRId64 " out of range", i,
				   m->sample_type[i]->type);
		if (strcmp(type, "samples") == 0) {
			r->value_index = i;
			break;
		}
	}
	r->comm_key = -1;
	for (size_t i = 1; i < m->n_string_table; i++) {
		if (strcmp(m->string_table[i], PPROF_COMM_LABEL) == 0) {
			r->comm_key = (int64_t)i;
			break;
		}
	}
	return 0;
}

/* Interns a name as a folded frame would carry it: no ';', no control characters. */
static int intern_name(struct reader *r, const char *s, uint32_t *id)
{
	size_t len = strlen(s);
	int err;

	if (len == 0) {
		s = "[unknown]";
		len = strlen(s);
	}
	if (len + 1 > r->name_cap) {
		char *bigger = realloc(r->name, len + 1);

		if (!bigger)
			return -ENOMEM;
		r->name = bigger;
		r->name_cap = len + 1;
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		r->name[i] = c == ';' ? ':' : (c < 0x20 || c == 0x7f) ? '?' : (char)c;
	}
	err = stack_set__intern(r->set, r->name, len, id);
	if (err == -E2BIG)
		snprintf(r->err, r->errlen, "too many distinct frames");
	return err;
}

/* name + "_[i]", interned. */
static int intern_inlined(struct reader *r, const char *name, uint32_t *id)
{
	char *marked = NULL;
	int err;

	if (asprintf(&marked, "%s_[i]", name) < 0)
		return -ENOMEM;
	err = intern_name(r, marked, id);
	free(marked);
	return err;
}

static int push_id(struct reader *r, size_t *n, uint32_t id)
{
	if (*n >= UINT32_MAX)
		return bad(r, "sample deeper than %u frames", UINT32_MAX);
	if (grow_array((void **)&r->ids, &r->ids_cap, *n + 1, sizeof(*r->ids)))
		return -ENOMEM;
	r->ids[(*n)++] = id;
	return 0;
}

/* A location's frames, outermost first: its lines run from the innermost inlined function
 * to the caller they were inlined into; the inlined ones are named "func_[i]", as folded
 * stacks name them (output/profile.h). An unsymbolized location is named by address. */
static int push_location(struct reader *r, uint64_t sample, uint64_t loc_id, size_t *n)
{
	const struct id_index *hit = lookup(r->locations, r->msg->n_location, loc_id);
	const Perftools__Profiles__Location *loc;
	uint32_t id;
	int err;

	if (!hit)
		return bad(r, "sample %" PRIu64 ": no location with id %" PRIu64, sample, loc_id);
	loc = r->msg->location[hit->index];
	if (loc->n_line == 0) {
		char name[64];

		snprintf(name, sizeof(name), "[unknown]+0x%" PRIx64, loc->address);
		err = intern_name(r, name, &id);
		return err ? err : push_id(r, n, id);
	}
	for (size_t l = loc->n_line; l-- > 0;) {
		const struct id_index *fn = lookup(r->functions, r->msg->n_function,
						   loc->line[l]->function_id);
		const char *name = fn ? string_at(r, r->msg->function[fn->index]->name) : NULL;

		if (!name)
			return bad(r, "location %" PRIu64 ": bad function id %" PRIu64, loc_id,
				   loc->line[l]->function_id);
		err = l + 1 < loc->n_line ? intern_inlined(r, name, &id) : intern_name(r, name, &id);
		if (!err)
			err = push_id(r, n, id);
		if (err)
			return err;
	}
	return 0;
}

static int read_sample(struct reader *r, uint64_t i)
{
	const Perftools__Profiles__Sample *s = r->msg->sample[i];
	size_t n = 0;
	uint32_t id;
	int err = 0;

	if (s->n_value <= r->value_index)
		return bad(r, "sample %" PRIu64 " has %zu values, fewer than the sample types", i,
			   s->n_value);
	if (s->value[r->value_index] < 0)
		return bad(r, "sample %" PRIu64 ": negative count %" PRId64, i,
			   s->value[r->value_index]);
	for (size_t l = 0; l < s->n_label && r->comm_key >= 0; l++) {
		const char *comm;

		if (s->label[l]->key != r->comm_key)
			continue;
		comm = string_at(r, s->label[l]->str);
		if (!comm)
			return bad(r, "sample %" PRIu64 ": label string %" PRId64 " out of range", i,
				   s->label[l]->str);
		err = intern_name(r, comm, &id);
		if (!err)
			err = push_id(r, &n, id);
		break;
	}
	for (size_t l = s->n_location_id; !err && l-- > 0;)
		err = push_location(r, i, s->location_id[l], &n);
	if (!err && n == 0 && !(err = intern_name(r, "[unknown]", &id)))
		err = push_id(r, &n, id);
	if (err)
		return err;
	err = stack_set__add(r->set, r->ids, (uint32_t)n, (uint64_t)s->value[r->value_index]);
	if (err == -EOVERFLOW)
		snprintf(r->err, r->errlen, "sample total exceeds 2^64-1");
	return err;
}

int pprof__read(const void *data, size_t len, struct stack_set *set, char *err, size_t errlen)
{
	struct reader r = { .set = set, .err = err, .errlen = errlen };
	pb_profile *msg = NULL;
	uint8_t *raw = NULL;
	size_t raw_len = 0;
	int ret;

	err[0] = '\0';
	ret = gunzip(data, len, &raw, &raw_len, err, errlen);
	if (ret)
		goto cleanup;
	msg = perftools__profiles__profile__unpack(NULL, raw_len, raw);
	if (!msg) {
		snprintf(err, errlen, "not a profile.proto message");
		ret = -EINVAL;
		goto cleanup;
	}
	r.msg = msg;
	ret = find_columns(&r);
	if (!ret)
		ret = index_ids(&r, "location", msg->n_location, location_id, &r.locations);
	if (!ret)
		ret = index_ids(&r, "function", msg->n_function, function_id, &r.functions);
	for (uint64_t i = 0; !ret && i < msg->n_sample; i++)
		ret = read_sample(&r, i);
cleanup:
	if (ret && !err[0])
		snprintf(err, errlen, "%s", strerror(-ret));
	free(r.locations);
	free(r.functions);
	free(r.ids);
	free(r.name);
	if (msg)
		perftools__profiles__profile__free_unpacked(msg, NULL);
	free(raw);
	return ret;
}
