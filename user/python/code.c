#include "python/code.h"
#include "python/lines.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

/* Code units of a code object (3.11+ ob_size) beyond which it is not believed. */
#define CODE_UNITS_MAX (1u << 26)
/* Instructions whose line an entry remembers: a sample's frames repeat a few instructions
 * of each function (its call sites), so that a warm lookup decodes no table. */
#define LINE_SLOTS 4

struct code_key {
	uint32_t pid;
	uint32_t zero;
	uint64_t addr;
};

struct entry {
	UT_hash_handle hh;
	struct code_key key;
	struct entry *lru_prev, *lru_next; /* most recently used first */
	struct entry *pid_prev, *pid_next; /* the process's entries */
	size_t bytes;                      /* what the entry takes, counted in c->bytes */
	uint32_t check;                    /* of the object read (a failed read: of the frame) */
	int err;                           /* 0, or why no code object was read */
	/* a frame check known stale against this entry: refused without a read */
	bool stale_known;
	uint32_t stale_check;
	/* what was read */
	uint32_t version;
	int firstlineno;
	uint32_t units;          /* code units (3.11+), 0: not known */
	int32_t firsttraceable;  /* 3.11-3.12, else 0 */
	const char *module, *qualname, *filename;
	const uint8_t *table;
	uint32_t table_len;
	bool no_table; /* the table was over its cap: lines not known */
	struct {
		uint32_t instr;
		int line;
		bool valid;
	} lines[LINE_SLOTS];
	char data[]; /* module, qualname, filename (NUL-terminated), the table */
};

struct pid_list {
	UT_hash_handle hh;
	uint32_t pid;
	struct entry *head;
};

struct python_code_cache {
	struct entry *by_key;
	struct pid_list *by_pid;
	struct entry *newest, *oldest; /* the LRU list's ends */
	size_t max_bytes, bytes;
	struct python_code_cache_stats stats;
};

int python_code_cache__new(size_t max_bytes, struct python_code_cache **out)
{
	struct python_code_cache *c;

	*out = NULL;
	if (max_bytes < PYTHON_CODE_CACHE_MIN_BYTES)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->max_bytes = max_bytes;
	*out = c;
	return 0;
}

static void lru_unlink(struct python_code_cache *c, struct entry *e)
{
	if (e->lru_prev)
		e->lru_prev->lru_next = e->lru_next;
	else
		c->newest = e->lru_next;
	if (e->lru_next)
		e->lru_next->lru_prev = e->lru_prev;
	else
		c->oldest = e->lru_prev;
}

static void lru_push(struct python_code_cache *c, struct entry *e)
{
	e->lru_prev = NULL;
	e->lru_next = c->newest;
	if (c->newest)
		c->newest->lru_prev = e;
	else
		c->oldest = e;
	c->newest = e;
}

static void drop(struct python_code_cache *c, struct entry *e)
{
	struct pid_list *p;
	uint32_t pid = e->key.pid;

	HASH_DEL(c->by_key, e);
	lru_unlink(c, e);
	if (e->pid_prev)
		e->pid_prev->pid_next = e->pid_next;
	if (e->pid_next)
		e->pid_next->pid_prev = e->pid_prev;
	HASH_FIND(hh, c->by_pid, &pid, sizeof(pid), p);
	if (p && p->head == e) {
		p->head = e->pid_next;
		if (!p->head) {
			HASH_DEL(c->by_pid, p);
			free(p);
		}
	}
	c->bytes -= e->bytes;
	c->stats.entries--;
	free(e);
}

/* Makes room for need more bytes, dropping least recently used entries. */
static void make_room(struct python_code_cache *c, size_t need)
{
	while (c->bytes + need > c->max_bytes && c->oldest) {
		drop(c, c->oldest);
		c->stats.evicted++;
	}
}

static int insert(struct python_code_cache *c, struct entry *e)
{
	struct pid_list *p;

	HASH_FIND(hh, c->by_pid, &e->key.pid, sizeof(e->key.pid), p);
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return -ENOMEM;
		p->pid = e->key.pid;
		HASH_ADD(hh, c->by_pid, pid, sizeof(p->pid), p);
	}
	e->pid_prev = NULL;
	e->pid_next = p->head;
	if (p->head)
		p->head->pid_prev = e;
	p->head = e;
	HASH_ADD(hh, c->by_key, key, sizeof(e->key), e);
	lru_push(c, e);
	c->bytes += e->bytes;
	c->stats.entries++;
	return 0;
}

/* ---- reading ---- */

struct reader {
	python_read_fn read;
	void *ctx;
	const struct python_layout *l;
};

static bool get(const struct reader *r, uint64_t addr, void *buf, size_t len)
{
	if (addr == 0 || addr > UINT64_MAX - len)
		return false;
	return r->read(r->ctx, addr, buf, len);
}

static uint64_t u64_at(const uint8_t *b, uint32_t off)
{
	uint64_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

static uint32_t u32_at(const uint8_t *b, uint32_t off)
{
	uint32_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

/* Appends code point cp as UTF-8; lone surrogates and NUL (the names are C strings) become
 * U+FFFD. */
static size_t put_utf8(char *out, uint32_t cp)
{
	if (cp == 0 || (cp >= 0xd800 && cp <= 0xdfff))
		cp = 0xfffd;
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 63));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | (cp >> 6 & 63));
		out[2] = (char)(0x80 | (cp & 63));
		return 3;
	}
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | (cp >> 12 & 63));
	out[2] = (char)(0x80 | (cp >> 6 & 63));
	out[3] = (char)(0x80 | (cp & 63));
	return 4;
}

/* The str object at addr as UTF-8 in a malloc'd string (*out, *out_len bytes). Only a
 * compact str (how CPython makes every str of a code object) of at most cap code points. */
static int read_str(const struct reader *r, uint64_t addr, size_t cap, char **out,
		    size_t *out_len)
{
	const struct python_layout *l = r->l;
	uint8_t head[128], *chars;
	uint32_t state, kind;
	int64_t length;
	size_t data, n = 0;
	char *s;

	if (l->str_compact_data > sizeof(head) || !get(r, addr, head, l->str_ascii_data))
		return -EFAULT;
	length = (int64_t)u64_at(head, l->str_length);
	state = u32_at(head, l->str_state);
	kind = state >> PYTHON_STR_KIND_SHIFT & PYTHON_STR_KIND_MASK;
	if (!(state & PYTHON_STR_COMPACT) || (kind != 1 && kind != 2 && kind != 4) ||
	    ((state & PYTHON_STR_ASCII) && kind != 1) || length < 0 || (size_t)length > cap)
		return -EINVAL;
	/* 3.12 dropped the ready bit: every str is ready */
	if (l->version < 0x030c && !(state & PYTHON_STR_READY))
		return -EINVAL;
	data = state & PYTHON_STR_ASCII ? l->str_ascii_data : l->str_compact_data;
	chars = malloc((size_t)length * kind + 1);
	s = malloc((size_t)length * 4 + 1);
	if (!chars || !s) {
		free(chars);
		free(s);
		return -ENOMEM;
	}
	if (length && !get(r, addr + data, chars, (size_t)length * kind)) {
		free(chars);
		free(s);
		return -EFAULT;
	}
	for (int64_t i = 0; i < length; i++) {
		uint32_t cp;

		if (kind == 1) {
			cp = chars[i];
			if ((state & PYTHON_STR_ASCII) && cp >= 0x80)
				goto bad;
		} else if (kind == 2) {
			cp = (uint32_t)chars[2 * i] | (uint32_t)chars[2 * i + 1] << 8;
		} else {
			cp = u32_at(chars, (uint32_t)(4 * i));
			if (cp > 0x10ffff)
				goto bad;
		}
		n += put_utf8(s + n, cp);
	}
	s[n] = '\0';
	free(chars);
	*out = s;
	*out_len = n;
	return 0;
bad:
	free(chars);
	free(s);
	return -EINVAL;
}

/* The bytes object at addr: its size, and its bytes (malloc'd) when at most cap. */
static int read_bytes(const struct reader *r, uint64_t addr, size_t cap, uint8_t **out,
		      size_t *len)
{
	uint8_t head[64];
	int64_t size;

	*out = NULL;
	if (r->l->bytes_size + 8 > sizeof(head) || !get(r, addr, head, r->l->bytes_size + 8))
		return -EFAULT;
	size = (int64_t)u64_at(head, r->l->bytes_size);
	if (size < 0)
		return -EINVAL;
	*len = (size_t)size;
	if ((size_t)size > cap)
		return 0;
	*out = malloc(size ? (size_t)size : 1);
	if (!*out)
		return -ENOMEM;
	if (size && !get(r, addr + r->l->bytes_data, *out, (size_t)size)) {
		free(*out);
		*out = NULL;
		return -EFAULT;
	}
	return 0;
}

void python_code__module(const char *filename, char *out, size_t cap)
{
	const char *base, *end = filename + strlen(filename);
	size_t n;

	if (!cap)
		return;
	if (filename[0] == '<') {
		base = filename;
	} else {
		base = strrchr(filename, '/');
		base = base ? base + 1 : filename;
		if (!strcmp(base, "__init__.py") && base > filename + 1) {
			/* the package: the directory's name */
			end = base - 1;
			base = end;
			while (base > filename && base[-1] != '/')
				base--;
		} else if (end - base > 3 && !strcmp(end - 3, ".py")) {
			end -= 3;
		}
	}
	n = (size_t)(end - base) < cap - 1 ? (size_t)(end - base) : cap - 1;
	memcpy(out, base, n);
	out[n] = '\0';
}

/* A live object's reference count. Freed, pymalloc keeps its free list's link in that
 * word (an address, or 0 at the end of the pool's list) and leaves the rest of the object
 * as it was; static and immortal objects count below 2^32. */
static bool refcount_live(uint64_t refcnt)
{
	return refcnt > 0 && refcnt <= UINT32_MAX;
}

/* The words of a code object's head that read_code takes: the same in two reads of a live
 * object (its reference count and its caches change; these do not). */
static bool code_head_same(const struct python_layout *l, const uint8_t *a, const uint8_t *b)
{
	const uint32_t fields[] = { l->object_type, l->code_check, l->code_name,
				    l->code_qualname, l->code_filename, l->code_linetable };

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		if ((i == 0 || fields[i]) && u64_at(a, fields[i]) != u64_at(b, fields[i]))
			return false;
	}
	return (!l->check_name || u64_at(a, l->check_name) == u64_at(b, l->check_name)) &&
	       u32_at(a, l->code_firstlineno) == u32_at(b, l->code_firstlineno);
}

/* The code object whose head is head is still alive at addr, with that head: its strings
 * and line table, read after the head, were its own (it holds them) and not the bytes of
 * objects freed with it and made anew at their addresses. */
static bool code_still_alive(const struct reader *r, uint64_t addr, const uint8_t *head)
{
	uint8_t again[PYTHON_CODE_HEADER_MAX];

	return get(r, addr, again, r->l->code_header) && refcount_live(u64_at(again, 0)) &&
	       code_head_same(r->l, head, again);
}

/* Reads the code object at addr into a new entry (*out); with an error, nothing. */
static int read_code(const struct reader *r, uint64_t code_type, uint64_t addr,
		     struct entry **out)
{
	const struct python_layout *l = r->l;
	uint8_t head[PYTHON_CODE_HEADER_MAX], *table = NULL;
	char *name = NULL, *file = NULL, module[256];
	size_t name_len, file_len, module_len, table_len = 0, size;
	uint64_t name_addr, check_word;
	struct entry *e;
	int err;

	*out = NULL;
	if (l->code_header > sizeof(head))
		return -EINVAL;
	if (!get(r, addr, head, l->code_header))
		return -EFAULT;
	if (u64_at(head, l->object_type) != code_type || !refcount_live(u64_at(head, 0)))
		return -EINVAL;
	/* the check's word as the kernel folds it (common/python.h) */
	check_word = u64_at(head, l->code_check);
	if (l->check_name) {
		uint64_t hash;

		if (!get(r, u64_at(head, l->check_name) + HPROF_PY_STR_HASH, &hash, sizeof(hash)))
			return -EFAULT;
		check_word ^= hash;
	}
	name_addr = u64_at(head, l->code_qualname ? l->code_qualname : l->code_name);
	err = read_str(r, name_addr, PYTHON_NAME_MAX, &name, &name_len);
	if (!err)
		err = read_str(r, u64_at(head, l->code_filename), PYTHON_FILENAME_MAX, &file,
			       &file_len);
	if (!err)
		err = read_bytes(r, u64_at(head, l->code_linetable), PYTHON_LINETABLE_MAX,
				 &table, &table_len);
	if (!err && !code_still_alive(r, addr, head))
		err = -EAGAIN;
	if (err)
		goto out;
	python_code__module(file, module, sizeof(module));
	module_len = strlen(module);
	size = sizeof(*e) + module_len + 1 + name_len + 1 + file_len + 1 + (table ? table_len : 0);
	e = calloc(1, size);
	if (!e) {
		err = -ENOMEM;
		goto out;
	}
	e->bytes = size;
	e->check = hprof_py__check(check_word);
	e->version = l->version;
	e->firstlineno = (int)u32_at(head, l->code_firstlineno);
	if (l->code_size) {
		uint64_t units = u64_at(head, l->code_size);

		e->units = units > 0 && units < CODE_UNITS_MAX ? (uint32_t)units : 0;
	}
	if (l->code_firsttraceable)
		e->firsttraceable = (int32_t)u32_at(head, l->code_firsttraceable);
	e->module = e->data;
	memcpy(e->data, module, module_len + 1);
	e->qualname = e->module + module_len + 1;
	memcpy(e->data + module_len + 1, name, name_len + 1);
	e->filename = e->qualname + name_len + 1;
	memcpy((char *)e->filename, file, file_len + 1);
	if (table) {
		e->table = (const uint8_t *)e->filename + file_len + 1;
		memcpy((uint8_t *)e->table, table, table_len);
		e->table_len = (uint32_t)table_len;
	} else {
		e->no_table = true;
	}
	*out = e;
out:
	free(name);
	free(file);
	free(table);
	return err;
}

/* ---- lookups ---- */

/* The frame's instruction as python_lines__line takes it, or false when it is not one of
 * the code object's (the line is then not known). */
static bool frame_offset(const struct python_layout *l, const struct entry *e, uint32_t instr,
			 int32_t *offset)
{
	int64_t rel;

	if (l->kind == HPROF_PY_FRAME_OBJECT) {
		/* f_lasti, 31-bit two's complement: -1 before the first instruction */
		*offset = (int32_t)(instr << 1) >> 1;
		return *offset >= -1;
	}
	/* prev_instr (3.11-3.12: the last instruction run, one before the first at the start)
	 * or instr_ptr (3.13+: the one running) as an offset from the code object; CPython's
	 * PyFrame_GetLineNumber takes the line of that instruction in both */
	rel = (int64_t)instr - l->code_adaptive;
	if (rel < -2 || rel % 2)
		return false;
	*offset = (int32_t)(rel / 2);
	return !e->units || *offset < (int32_t)e->units;
}

static int entry_line(const struct python_layout *l, struct entry *e, uint32_t instr,
		      bool *incomplete)
{
	unsigned slot;
	int32_t offset;
	int line;

	instr &= HPROF_PY_INSTR_MASK;
	slot = (instr ^ instr >> 7) % LINE_SLOTS;
	*incomplete = false;
	if (!frame_offset(l, e, instr, &offset))
		return -1;
	*incomplete = e->firsttraceable > 0 && offset < e->firsttraceable;
	if (e->lines[slot].valid && e->lines[slot].instr == instr)
		return e->lines[slot].line;
	if (e->no_table && offset >= 0)
		line = -1;
	else if (python_lines__line(e->version, e->table, e->table_len, e->firstlineno, offset,
				    &line))
		line = -1;
	e->lines[slot].instr = instr;
	e->lines[slot].line = line;
	e->lines[slot].valid = true;
	return line;
}

static void fill(const struct python_layout *l, struct entry *e, uint32_t instr,
		 struct python_frame_name *out)
{
	out->module = e->module;
	out->qualname = e->qualname;
	out->filename = e->filename;
	out->firstlineno = e->firstlineno;
	out->line = entry_line(l, e, instr, &out->incomplete);
}

/* An entry remembering a failed read of (pid, addr) for frames of check. */
static int remember_failure(struct python_code_cache *c, const struct code_key *key,
			    uint32_t check, int err)
{
	struct entry *e = calloc(1, sizeof(*e));

	if (!e)
		return -ENOMEM;
	e->key = *key;
	e->bytes = sizeof(*e);
	e->check = check;
	e->err = err;
	make_room(c, e->bytes);
	if (insert(c, e)) {
		free(e);
		return -ENOMEM;
	}
	return 0;
}

int python_code_cache__name(struct python_code_cache *c, uint32_t pid,
			    const struct python_layout *l, uint64_t code_type,
			    const struct hprof_py_frame *f, python_read_fn read, void *ctx,
			    struct python_frame_name *out)
{
	struct code_key key = {.pid = pid, .addr = f->code};
	struct reader r = {.read = read, .ctx = ctx, .l = l};
	struct entry *e, *fresh;
	int err;

	HASH_FIND(hh, c->by_key, &key, sizeof(key), e);
	if (e) {
		if (e != c->newest) {
			lru_unlink(c, e);
			lru_push(c, e);
		}
		if (e->check == f->check) {
			if (e->err) {
				c->stats.failed++;
				return e->err;
			}
			c->stats.hits++;
			fill(l, e, f->instr, out);
			return 0;
		}
		if (!e->err && e->stale_known && e->stale_check == f->check) {
			c->stats.stale++;
			return -ESTALE;
		}
	}
	/* not known, or the object there is another than the entry's: read it again */
	c->stats.reads++;
	err = read_code(&r, code_type, f->code, &fresh);
	if (err == -ENOMEM)
		return err;
	if (e)
		drop(c, e);
	if (err) {
		c->stats.failed++;
		/* one that died while it was read is not remembered: another made at its
		 * address may have its check, and be read */
		if (err != -EAGAIN && remember_failure(c, &key, f->check, err))
			return -ENOMEM;
		return err;
	}
	fresh->key = key;
	make_room(c, fresh->bytes);
	if (insert(c, fresh)) {
		free(fresh);
		return -ENOMEM;
	}
	if (fresh->check != f->check) {
		/* the object there now is not the frame's: keep it for the frames of it */
		fresh->stale_known = true;
		fresh->stale_check = f->check;
		c->stats.stale++;
		return -ESTALE;
	}
	fill(l, fresh, f->instr, out);
	return 0;
}

void python_code_cache__forget_pid(struct python_code_cache *c, uint32_t pid)
{
	struct pid_list *p;

	if (!c)
		return;
	HASH_FIND(hh, c->by_pid, &pid, sizeof(pid), p);
	/* drop() frees p with the last entry */
	while (p) {
		bool last = !p->head->pid_next;

		drop(c, p->head);
		if (last)
			break;
	}
}

void python_code_cache__stats(const struct python_code_cache *c,
			      struct python_code_cache_stats *out)
{
	*out = c->stats;
	out->bytes = c->bytes;
}

void python_code_cache__free(struct python_code_cache *c)
{
	struct entry *e, *tmp;
	struct pid_list *p, *ptmp;

	if (!c)
		return;
	HASH_ITER(hh, c->by_key, e, tmp) {
		HASH_DEL(c->by_key, e);
		free(e);
	}
	HASH_ITER(hh, c->by_pid, p, ptmp) {
		HASH_DEL(c->by_pid, p);
		free(p);
	}
	free(c);
}
