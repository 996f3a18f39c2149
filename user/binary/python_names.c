#include "binary/python_names.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "util/grow.h"

struct entry {
	struct python_location loc;
	char *key; /* module NUL function NUL file NUL firstlineno line NUL: what loc's strings
		    * point into */
	size_t key_len;
	uint64_t id;
	UT_hash_handle hh;
};

struct python_names {
	struct entry *by_key;
	struct entry **by_id;
	size_t nr, cap, bytes;
};

struct python_names *python_names__new(void)
{
	return calloc(1, sizeof(struct python_names));
}

/* The key's bytes (malloc'd): the three strings and the two line numbers, NUL-terminated. */
static char *make_key(const struct python_location *loc, size_t *len)
{
	size_t m = strlen(loc->module) + 1, f = strlen(loc->function) + 1, p = strlen(loc->file) + 1;
	char *key = malloc(m + f + p + 32);
	int l;

	if (!key)
		return NULL;
	memcpy(key, loc->module, m);
	memcpy(key + m, loc->function, f);
	memcpy(key + m + f, loc->file, p);
	l = snprintf(key + m + f + p, 32, "%d %d", loc->firstlineno, loc->line);
	*len = m + f + p + (size_t)l + 1;
	return key;
}

int python_names__intern(struct python_names *n, const struct python_location *loc,
			 uint64_t *id)
{
	struct entry *e;
	size_t len;
	char *key = make_key(loc, &len);

	if (!key)
		return -ENOMEM;
	HASH_FIND(hh, n->by_key, key, len, e);
	if (e) {
		free(key);
		*id = e->id;
		return 0;
	}
	e = calloc(1, sizeof(*e));
	if (!e || grow_array((void **)&n->by_id, &n->cap, n->nr + 1, sizeof(*n->by_id))) {
		free(e);
		free(key);
		return -ENOMEM;
	}
	e->key = key;
	e->key_len = len;
	e->loc.module = key;
	e->loc.function = key + strlen(key) + 1;
	e->loc.file = e->loc.function + strlen(e->loc.function) + 1;
	e->loc.firstlineno = loc->firstlineno;
	e->loc.line = loc->line;
	e->id = n->nr;
	n->by_id[n->nr++] = e;
	n->bytes += sizeof(*e) + len;
	HASH_ADD_KEYPTR(hh, n->by_key, e->key, e->key_len, e);
	*id = e->id;
	return 0;
}

const struct python_location *python_names__get(const struct python_names *n, uint64_t id)
{
	return n && id < n->nr ? &n->by_id[id]->loc : NULL;
}

int python_names__compare(const struct python_names *n, uint64_t a, uint64_t b)
{
	const struct python_location *x = python_names__get(n, a), *y = python_names__get(n, b);
	int c;

	if (!x || !y)
		return x ? 1 : y ? -1 : 0;
	if ((c = strcmp(x->module, y->module)) || (c = strcmp(x->function, y->function)) ||
	    (c = strcmp(x->file, y->file)))
		return c;
	if (x->firstlineno != y->firstlineno)
		return x->firstlineno < y->firstlineno ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

char *python_names__format(const struct python_names *n, uint64_t id)
{
	const struct python_location *loc = python_names__get(n, id);
	char *name;

	if (!loc)
		return NULL;
	if (!loc->module[0])
		return strdup(loc->function);
	return asprintf(&name, "%s.%s", loc->module, loc->function) < 0 ? NULL : name;
}

size_t python_names__count(const struct python_names *n)
{
	return n ? n->nr : 0;
}

size_t python_names__bytes(const struct python_names *n)
{
	return n ? n->bytes : 0;
}

void python_names__free(struct python_names *n)
{
	if (!n)
		return;
	HASH_CLEAR(hh, n->by_key);
	for (size_t i = 0; i < n->nr; i++) {
		free(n->by_id[i]->key);
		free(n->by_id[i]);
	}
	free(n->by_id);
	free(n);
}
