#include "binary/python_names.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "util/grow.h"

struct entry {
	struct python_location loc;
	char *key; /* module NUL function NUL file NUL, then firstlineno and line (int each, in
		    * the host's order): what loc's strings point into */
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

/* A key that fits this is looked up without an allocation (a warm frame's is found). */
#define KEY_ON_STACK 512

/* The key's length: the three strings, NUL-terminated, and the two line numbers. */
static size_t key_length(const struct python_location *loc, size_t lens[3])
{
	lens[0] = strlen(loc->module) + 1;
	lens[1] = strlen(loc->function) + 1;
	lens[2] = strlen(loc->file) + 1;
	return lens[0] + lens[1] + lens[2] + 2 * sizeof(int);
}

/* Writes the key (key_length bytes) to key. */
static void write_key(const struct python_location *loc, const size_t lens[3], char *key)
{
	memcpy(key, loc->module, lens[0]);
	key += lens[0];
	memcpy(key, loc->function, lens[1]);
	key += lens[1];
	memcpy(key, loc->file, lens[2]);
	key += lens[2];
	memcpy(key, &loc->firstlineno, sizeof(int));
	memcpy(key + sizeof(int), &loc->line, sizeof(int));
}

static int add(struct python_names *n, const struct python_location *loc, const char *key,
	       size_t len, uint64_t *id)
{
	struct entry *e = calloc(1, sizeof(*e));

	if (!e || grow_array((void **)&n->by_id, &n->cap, n->nr + 1, sizeof(*n->by_id)) ||
	    !(e->key = malloc(len))) {
		free(e);
		return -ENOMEM;
	}
	memcpy(e->key, key, len);
	e->key_len = len;
	e->loc.module = e->key;
	e->loc.function = e->key + strlen(e->key) + 1;
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

int python_names__intern(struct python_names *n, const struct python_location *loc,
			 uint64_t *id)
{
	char on_stack[KEY_ON_STACK], *key = on_stack;
	size_t lens[3], len = key_length(loc, lens);
	struct entry *e;
	int err;

	if (len > sizeof(on_stack) && !(key = malloc(len)))
		return -ENOMEM;
	write_key(loc, lens, key);
	HASH_FIND(hh, n->by_key, key, len, e);
	if (e) {
		*id = e->id;
		err = 0;
	} else {
		err = add(n, loc, key, len, id);
	}
	if (key != on_stack)
		free(key);
	return err;
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
