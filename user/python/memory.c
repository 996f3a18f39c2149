#include "python/memory.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "util/process_memory.h"

/* A read as the recording made it: the same reads come again in the same order in a replay,
 * which names the same frames the same way. */
struct read_key {
	uint32_t pid;
	uint32_t len;
	uint64_t addr;
};

struct recorded_read {
	struct read_key key;
	UT_hash_handle hh;
	uint8_t bytes[];
};

struct python_memory {
	bool replay;
	struct recorded_read *reads;
	python_memory_hook_fn hook;
	void *hook_ctx;
};

struct python_memory *python_memory__new(void)
{
	return calloc(1, sizeof(struct python_memory));
}

void python_memory__set_hook(struct python_memory *m, python_memory_hook_fn fn, void *ctx)
{
	m->hook = fn;
	m->hook_ctx = ctx;
}

void python_memory__set_replay(struct python_memory *m)
{
	m->replay = true;
}

static struct read_key key_of(uint32_t pid, uint64_t addr, size_t len)
{
	struct read_key k;

	memset(&k, 0, sizeof(k));
	k.pid = pid;
	k.addr = addr;
	k.len = (uint32_t)len;
	return k;
}

int python_memory__add(struct python_memory *m, uint32_t pid, uint64_t addr, const void *bytes,
		       size_t len)
{
	struct read_key k = key_of(pid, addr, len);
	struct recorded_read *r;

	if (len > UINT32_MAX)
		return 0;
	HASH_FIND(hh, m->reads, &k, sizeof(k), r);
	if (r)
		return 0;
	r = malloc(sizeof(*r) + len);
	if (!r)
		return -ENOMEM;
	r->key = k;
	memcpy(r->bytes, bytes, len);
	HASH_ADD(hh, m->reads, key, sizeof(r->key), r);
	return 0;
}

bool python_memory__read(struct python_memory *m, uint32_t pid, uint64_t addr, void *buf,
			 size_t len)
{
	struct read_key k = key_of(pid, addr, len);
	struct recorded_read *r;

	if (!m->replay) {
		if (!process_memory__read(pid, addr, buf, len))
			return false;
		if (m->hook)
			m->hook(m->hook_ctx, pid, addr, buf, len);
		return true;
	}
	if (len > UINT32_MAX)
		return false;
	HASH_FIND(hh, m->reads, &k, sizeof(k), r);
	if (!r)
		return false;
	memcpy(buf, r->bytes, len);
	return true;
}

void python_memory__forget_pid(struct python_memory *m, uint32_t pid)
{
	struct recorded_read *r, *tmp;

	HASH_ITER(hh, m->reads, r, tmp) {
		if (r->key.pid != pid)
			continue;
		HASH_DEL(m->reads, r);
		free(r);
	}
}

void python_memory__free(struct python_memory *m)
{
	struct recorded_read *r, *tmp;

	if (!m)
		return;
	HASH_ITER(hh, m->reads, r, tmp) {
		HASH_DEL(m->reads, r);
		free(r);
	}
	free(m);
}
