#include "output/stack_set.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "output/profile.h"
#include "util/grow.h"

/* Name ids are u32 indices; tables store id + 1 so that 0 marks an empty slot. */
#define MAX_NAMES (UINT32_MAX - 2)

struct name_slot {
	uint32_t hash;
	uint32_t id1;
};

struct name_ent {
	uint64_t off; /* into strs, NUL-terminated */
	uint64_t len;
};

struct name_table {
	char *strs;
	size_t strs_len, strs_cap;
	struct name_ent *ents; /* per id */
	size_t count, cap;
	struct name_slot *slots; /* open addressing, load <= 1/2 */
	size_t nslots;
};

struct stack_ref {
	uint64_t off; /* into frames */
	uint32_t n;
	uint64_t count;
};

struct stack_set {
	struct name_table *names;
	bool normalize;
	uint32_t *frames;
	size_t nframes, frames_cap;
	struct stack_ref *stacks;
	size_t nstacks, stacks_cap;
	uint64_t total;
	/* per name id: inclusive and self samples; the last stack that counted it */
	uint64_t *incl, *self, *seen;
	size_t per_name_cap;
};

static uint32_t fnv1a(const char *s, size_t len)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

int name_table__new(struct name_table **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void name_table__free(struct name_table *t)
{
	if (!t)
		return;
	free(t->strs);
	free(t->ents);
	free(t->slots);
	free(t);
}

static int rehash(struct name_table *t)
{
	size_t n = t->nslots ? t->nslots * 2 : 1024;
	struct name_slot *slots = calloc(n, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < t->nslots; i++) {
		size_t j;

		if (!t->slots[i].id1)
			continue;
		for (j = t->slots[i].hash & (n - 1); slots[j].id1; j = (j + 1) & (n - 1))
			;
		slots[j] = t->slots[i];
	}
	free(t->slots);
	t->slots = slots;
	t->nslots = n;
	return 0;
}

int name_table__intern(struct name_table *t, const char *s, size_t len, uint32_t *id)
{
	uint32_t hash = fnv1a(s, len);
	size_t i;
	int err;

	if (len >= UINT32_MAX || t->count >= MAX_NAMES)
		return -E2BIG;
	if ((t->count + 1) * 2 > t->nslots && (err = rehash(t)))
		return err;
	for (i = hash & (t->nslots - 1); t->slots[i].id1; i = (i + 1) & (t->nslots - 1)) {
		uint32_t cand = t->slots[i].id1 - 1;

		if (t->slots[i].hash == hash && t->ents[cand].len == len &&
		    memcmp(t->strs + t->ents[cand].off, s, len) == 0) {
			*id = cand;
			return 0;
		}
	}
	err = grow_array((void **)&t->strs, &t->strs_cap, t->strs_len + len + 1, 1);
	if (!err)
		err = grow_array((void **)&t->ents, &t->cap, t->count + 1, sizeof(*t->ents));
	if (err)
		return err;
	memcpy(t->strs + t->strs_len, s, len);
	t->strs[t->strs_len + len] = '\0';
	t->ents[t->count] = (struct name_ent){ t->strs_len, len };
	t->strs_len += len + 1;
	t->slots[i] = (struct name_slot){ hash, (uint32_t)t->count + 1 };
	*id = (uint32_t)t->count++;
	return 0;
}

const char *name_table__name(const struct name_table *t, uint32_t id)
{
	return id < t->count ? t->strs + t->ents[id].off : "";
}

uint32_t name_table__count(const struct name_table *t)
{
	return (uint32_t)t->count;
}

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* A module that is no file: its addresses are wherever this run's allocator put the code.
 * The vDSO is an image whose offsets stay put, like a file's. */
static bool anonymous_module(const char *s, size_t len)
{
	if (len >= 2 && s[0] == '[' && s[len - 1] == ']')
		return !(len == 6 && memcmp(s, "[vdso]", 6) == 0) &&
		       !(len == 10 && memcmp(s, "[vsyscall]", 10) == 0);
	return (len > 6 && memcmp(s, "memfd:", 6) == 0) ||
	       (len == 6 && memcmp(s, "//anon", 6) == 0);
}

size_t frame_name__normalize(char *s, size_t len)
{
	size_t end = len, plus, digits;

	/* kernel frames keep their suffix */
	if (len > 4 && memcmp(s + len - 4, "_[k]", 4) == 0)
		end = len - 4;
	for (digits = end; digits > 0 && is_hex(s[digits - 1]); digits--)
		;
	if (digits == end || digits < 3 || s[digits - 1] != 'x' || s[digits - 2] != '0' ||
	    s[digits - 3] != '+')
		return len;
	plus = digits - 3;
	if (!anonymous_module(s, plus))
		return len;
	memmove(s + plus, s + end, len - end);
	return plus + (len - end);
}

int stack_set__new(struct name_table *names, bool normalize, struct stack_set **out)
{
	struct stack_set *s = calloc(1, sizeof(*s));

	*out = s;
	if (!s)
		return -ENOMEM;
	s->names = names;
	s->normalize = normalize;
	return 0;
}

void stack_set__free(struct stack_set *s)
{
	if (!s)
		return;
	free(s->frames);
	free(s->stacks);
	free(s->incl);
	free(s->self);
	free(s->seen);
	free(s);
}

int stack_set__intern(struct stack_set *s, char *name, size_t len, uint32_t *id)
{
	if (s->normalize)
		len = frame_name__normalize(name, len);
	return name_table__intern(s->names, name, len, id);
}

/* Makes the per-name counters cover every id the shared table has handed out. */
static int cover_names(struct stack_set *s)
{
	size_t need = name_table__count(s->names), old = s->per_name_cap, cap = old;
	int err;

	if (need <= old)
		return 0;
	err = grow_array((void **)&s->incl, &cap, need, sizeof(*s->incl));
	if (err)
		return err;
	if (!(s->self = realloc(s->self, cap * sizeof(*s->self))) ||
	    !(s->seen = realloc(s->seen, cap * sizeof(*s->seen))))
		return -ENOMEM;
	memset(s->incl + old, 0, (cap - old) * sizeof(*s->incl));
	memset(s->self + old, 0, (cap - old) * sizeof(*s->self));
	memset(s->seen + old, 0, (cap - old) * sizeof(*s->seen));
	s->per_name_cap = cap;
	return 0;
}

int stack_set__add(struct stack_set *s, const uint32_t *ids, uint32_t n, uint64_t count)
{
	uint64_t serial;
	int err;

	if (n == 0)
		return -EINVAL;
	if (count == 0)
		return 0;
	if (s->total > UINT64_MAX - count)
		return -EOVERFLOW;
	err = cover_names(s);
	if (!err)
		err = grow_array((void **)&s->frames, &s->frames_cap, s->nframes + n, sizeof(*s->frames));
	if (!err)
		err = grow_array((void **)&s->stacks, &s->stacks_cap, s->nstacks + 1, sizeof(*s->stacks));
	if (err)
		return err;
	serial = s->nstacks + 1;
	for (uint32_t i = 0; i < n; i++) {
		if (ids[i] >= s->per_name_cap)
			return -EINVAL; /* not an id of the shared table */
	}
	for (uint32_t i = 0; i < n; i++) {
		/* a recursive function counts once per sample */
		if (s->seen[ids[i]] != serial) {
			s->seen[ids[i]] = serial;
			s->incl[ids[i]] += count;
		}
	}
	s->self[ids[n - 1]] += count;
	memcpy(s->frames + s->nframes, ids, n * sizeof(*ids));
	s->stacks[s->nstacks++] = (struct stack_ref){ s->nframes, n, count };
	s->nframes += n;
	s->total += count;
	return 0;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static int fail(char *err, size_t errlen, int ret, const char *msg)
{
	snprintf(err, errlen, "%s", msg);
	return ret;
}

/* A decimal u64 filling [p, p + len): 0, -EINVAL or -ERANGE. */
static int parse_count(const char *p, size_t len, uint64_t *out)
{
	uint64_t v = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned d = (unsigned char)p[i] - '0';

		if (d > 9)
			return -EINVAL;
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

/* Interns each ';'-separated frame of line[0..len) into the scratch id list. */
static int intern_frames(struct stack_set *s, char *line, size_t len, uint32_t **ids,
			 size_t *cap, uint32_t *n, char *err, size_t errlen)
{
	char *p = line, *end = line + len;
	int ret;

	*n = 0;
	while (p <= end) {
		char *semi = memchr(p, ';', (size_t)(end - p));
		char *fe = semi ? semi : end;

		if (fe == p)
			return fail(err, errlen, -EINVAL, "empty frame name");
		if (*n == UINT32_MAX)
			return fail(err, errlen, -E2BIG, "too many frames");
		ret = grow_array((void **)ids, cap, (size_t)*n + 1, sizeof(**ids));
		if (!ret)
			ret = stack_set__intern(s, p, (size_t)(fe - p), &(*ids)[*n]);
		if (ret)
			return fail(err, errlen, ret, ret == -E2BIG ? "too many distinct frames"
								     : strerror(-ret));
		(*n)++;
		p = fe + 1;
	}
	return 0;
}

static int add_folded(struct stack_set *s, char *line, size_t len, uint32_t **ids,
		      size_t *cap, char *err, size_t errlen)
{
	size_t sep, stack_len;
	uint64_t count;
	uint32_t n;
	int ret;

	while (len && is_blank(line[len - 1]))
		len--;
	if (len == 0)
		return 0;
	if (memchr(line, '\0', len))
		return fail(err, errlen, -EINVAL, "NUL byte in line");
	for (sep = len; sep > 0 && line[sep - 1] != ' ' && line[sep - 1] != '\t'; sep--)
		;
	if (sep == 0)
		return fail(err, errlen, -EINVAL, "missing sample count");
	ret = parse_count(line + sep, len - sep, &count);
	if (ret == -EINVAL)
		return fail(err, errlen, ret, "invalid sample count (want a decimal integer)");
	if (ret)
		return fail(err, errlen, ret, "sample count out of range");
	for (stack_len = sep; stack_len && is_blank(line[stack_len - 1]); stack_len--)
		;
	if (stack_len == 0)
		return fail(err, errlen, -EINVAL, "missing stack");
	if (count == 0)
		return 0;
	ret = intern_frames(s, line, stack_len, ids, cap, &n, err, errlen);
	if (ret)
		return ret;
	ret = stack_set__add(s, *ids, n, count);
	if (ret == -EOVERFLOW)
		return fail(err, errlen, ret, "sample total exceeds 2^64-1");
	return ret ? fail(err, errlen, ret, strerror(-ret)) : 0;
}

int stack_set__add_folded(struct stack_set *s, char *line, size_t len, char *err,
			  size_t errlen)
{
	uint32_t *ids = NULL;
	size_t cap = 0;
	int ret = add_folded(s, line, len, &ids, &cap, err, errlen);

	free(ids);
	return ret;
}

/* Lines out of 64 KiB blocks: memchr finds the newlines, and NUL bytes stay visible. */
struct line_reader {
	FILE *in;
	char block[64 * 1024];
	size_t pos, end;
	char *line;
	size_t cap;
};

/* One line without its newline into r->line: 1, 0 at the end, -E2BIG past the limit,
 * -errno. */
static int read_line(struct line_reader *r, size_t *len)
{
	bool any = false;
	int err;

	*len = 0;
	for (;;) {
		char *nl;
		size_t take;

		if (r->pos == r->end) {
			r->pos = 0;
			r->end = fread(r->block, 1, sizeof(r->block), r->in);
			if (r->end == 0)
				break;
		}
		any = true;
		nl = memchr(r->block + r->pos, '\n', r->end - r->pos);
		take = (nl ? (size_t)(nl - r->block) : r->end) - r->pos;
		if (*len + take > STACK_SET_MAX_LINE)
			return -E2BIG;
		if ((err = grow_array((void **)&r->line, &r->cap, *len + take + 1, 1)))
			return err;
		memcpy(r->line + *len, r->block + r->pos, take);
		*len += take;
		r->pos += take;
		if (nl) {
			r->pos++;
			return 1;
		}
	}
	if (ferror(r->in))
		return errno ? -errno : -EIO;
	return any ? 1 : 0;
}

int stack_set__read_folded(struct stack_set *s, FILE *in, char *err, size_t errlen)
{
	struct line_reader *r = calloc(1, sizeof(*r));
	char msg[128];
	uint32_t *ids = NULL;
	size_t ids_cap = 0, len, lineno = 0;
	int ret;

	if (!r)
		return -ENOMEM;
	r->in = in;
	for (;;) {
		lineno++;
		ret = read_line(r, &len);
		if (ret == 0)
			break;
		if (ret == -E2BIG) {
			snprintf(err, errlen, "line %zu: longer than %u bytes", lineno,
				 STACK_SET_MAX_LINE);
			goto cleanup;
		}
		if (ret < 0) {
			snprintf(err, errlen, "%s", strerror(-ret));
			goto cleanup;
		}
		ret = add_folded(s, r->line, len, &ids, &ids_cap, msg, sizeof(msg));
		if (ret) {
			snprintf(err, errlen, "line %zu: %s", lineno, msg);
			goto cleanup;
		}
	}
cleanup:
	free(r->line);
	free(r);
	free(ids);
	return ret;
}

int stack_set__add_profile(struct stack_set *s, struct profile *p, char *err, size_t errlen)
{
	char *text = NULL;
	size_t len = 0;
	FILE *mem, *in = NULL;
	int ret;

	mem = open_memstream(&text, &len);
	if (!mem)
		return -errno;
	ret = profile__write_folded(p, mem);
	if (fclose(mem) && !ret)
		ret = -errno;
	if (!ret && len) {
		in = fmemopen(text, len, "r");
		ret = in ? stack_set__read_folded(s, in, err, errlen) : -errno;
	}
	if (in)
		fclose(in);
	free(text);
	return ret;
}

struct name_table *stack_set__names(const struct stack_set *s)
{
	return s->names;
}

uint64_t stack_set__total(const struct stack_set *s)
{
	return s->total;
}

uint64_t stack_set__inclusive(const struct stack_set *s, uint32_t id)
{
	return id < s->per_name_cap ? s->incl[id] : 0;
}

uint64_t stack_set__self(const struct stack_set *s, uint32_t id)
{
	return id < s->per_name_cap ? s->self[id] : 0;
}

size_t stack_set__nr_stacks(const struct stack_set *s)
{
	return s->nstacks;
}

void stack_set__stack(const struct stack_set *s, size_t i, const uint32_t **ids, uint32_t *n,
		      uint64_t *count)
{
	*ids = s->frames + s->stacks[i].off;
	*n = s->stacks[i].n;
	*count = s->stacks[i].count;
}
