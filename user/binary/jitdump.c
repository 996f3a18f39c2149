#include "binary/jitdump.h"
#include "binary/jit_file.h"
#include "util/grow.h"
#include "util/range_map.h"

#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The file as perf's jitdump.h lays it out: every field little-endian (a file in the other
 * byte order comes from another machine and is refused), records packed back to back. */
#define JITDUMP_MAGIC 0x4A695444u /* "JiTD" */
#define JITDUMP_MAGIC_SWAPPED 0x4454694Au
#define JITDUMP_VERSION 1u
#define JITDUMP_FLAG_ARCH_TIMESTAMP 1ull /* timestamps are the TSC's: nothing here reads them */

/* struct jitheader: magic, version, total_size, elf_mach, pad1, pid (u32), timestamp,
 * flags (u64) */
#define HEADER_BYTES 40u
#define HDR_MAGIC 0
#define HDR_VERSION 4
#define HDR_TOTAL_SIZE 8
#define HDR_ELF_MACH 12
#define HDR_FLAGS 32

/* struct jr_prefix: id, total_size (u32), timestamp (u64) */
#define PREFIX_BYTES 16u
#define PREFIX_ID 0
#define PREFIX_SIZE 4
#define PREFIX_TIMESTAMP 8

enum jit_record_id {
	JIT_CODE_LOAD = 0,
	JIT_CODE_MOVE = 1,
	JIT_CODE_DEBUG_INFO = 2,
	JIT_CODE_CLOSE = 3,
	JIT_CODE_UNWINDING_INFO = 4,
};

/* JIT_CODE_LOAD after the prefix: pid, tid (u32), vma, code_addr, code_size, code_index
 * (u64), then the name with its NUL, then the code bytes */
#define LOAD_ADDR 32 /* code_addr: V8 leaves vma 0 */
#define LOAD_SIZE 40
#define LOAD_INDEX 48
#define LOAD_NAME 56
/* JIT_CODE_MOVE: pid, tid (u32), vma, old_code_addr, new_code_addr, code_size,
 * code_index (u64) */
#define MOVE_NEW_ADDR 40
#define MOVE_SIZE 48
#define MOVE_INDEX 56
#define MOVE_BYTES 64u
/* JIT_CODE_UNWINDING_INFO: unwinding_size, eh_frame_hdr_size, mapped_size (u64), then the
 * unwinding data */
#define UNWIND_SIZE 16
#define UNWIND_HDR_SIZE 24
#define UNWIND_MAPPED_SIZE 32
#define UNWIND_DATA 40u

/* No load: the code bytes are not in the file, no unwinding info. */
#define NONE UINT32_MAX
#define NO_BYTES UINT64_MAX

struct unwind_info {
	uint8_t *data; /* .eh_frame, then .eh_frame_hdr */
	uint64_t size, hdr_size, mapped_size;
};

/* A code load, or a move of one (a copy at the new address). */
struct load {
	uint64_t start, size, code_index, timestamp;
	uint64_t bytes_off;         /* NO_BYTES: the record does not hold them */
	uint32_t name;              /* offset in names */
	uint32_t unwind;            /* index in unwinds, or NONE */
	struct unwind_table *table; /* compiled on first use */
	int table_err;              /* 0: not tried yet */
};

/* code_index -> the latest load with it, for moves. Open addressing; the hash is seeded so
 * that a hostile file cannot make its indices collide. */
struct index_slot {
	uint64_t code_index;
	uint32_t load; /* NONE: empty */
};

struct index_map {
	struct index_slot *slots;
	size_t cap, used; /* cap: 0 or a power of two */
	uint64_t seed;
};

struct jitdump {
	char *path;
	struct jit_file_owner owner; /* whose files are trusted */
	struct range_map table;      /* each range's value: its index in loads */
	struct load *loads;
	size_t nr_loads, cap_loads;
	struct unwind_info *unwinds;
	size_t nr_unwinds, cap_unwinds;
	char *names; /* NUL-terminated names, back to back */
	size_t names_len, names_cap;
	struct index_map by_index;
	uint32_t pending_unwind;     /* for the next code load, or NONE */
	bool have_header, bad_header;
	bool broken;                 /* a record's size cannot be right: the rest is unframed */
	bool by_hand;                /* given bytes by its caller: tied to no file */
	bool cut_record;             /* the bytes read end inside a record */
	/* The file as last read: complete records up to read_off are in the table. */
	dev_t dev;
	ino_t ino;
	uint64_t size, read_off;
	bool tried, ever_read, refused, cut_short;
	uint64_t checked_ns;
	uint64_t records, code_loads, code_moves, unwind_infos, unknown, bad_records;
	uint64_t unwind_tables, unwind_failed, unwind_misplaced;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* ---- code_index -> load ---- */

static uint64_t mix(uint64_t x)
{
	/* splitmix64's finalizer */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static struct index_slot *index_slot(const struct index_map *m, uint64_t code_index)
{
	size_t mask = m->cap - 1, i = mix(code_index ^ m->seed) & mask;

	/* the map is at most half full, so an empty slot ends every probe */
	while (m->slots[i].load != NONE && m->slots[i].code_index != code_index)
		i = (i + 1) & mask;
	return &m->slots[i];
}

static int index_grow(struct index_map *m)
{
	struct index_map bigger = { .cap = m->cap ? 2 * m->cap : 64, .seed = m->seed };

	bigger.slots = malloc(bigger.cap * sizeof(*bigger.slots));
	if (!bigger.slots)
		return -ENOMEM;
	for (size_t i = 0; i < bigger.cap; i++)
		bigger.slots[i].load = NONE;
	for (size_t i = 0; i < m->cap; i++) {
		if (m->slots[i].load != NONE)
			*index_slot(&bigger, m->slots[i].code_index) = m->slots[i];
	}
	bigger.used = m->used;
	free(m->slots);
	*m = bigger;
	return 0;
}

static int index_set(struct index_map *m, uint64_t code_index, uint32_t load)
{
	struct index_slot *s;

	if (2 * (m->used + 1) > m->cap && index_grow(m))
		return -ENOMEM;
	s = index_slot(m, code_index);
	m->used += s->load == NONE;
	*s = (struct index_slot){ code_index, load };
	return 0;
}

static uint32_t index_get(const struct index_map *m, uint64_t code_index)
{
	return m->cap ? index_slot(m, code_index)->load : NONE;
}

/* ---- the table ---- */

int jitdump__new(uint32_t pid, const char *path, struct jitdump **out)
{
	char tmp_path[64];
	struct jitdump *jd;

	*out = NULL;
	jd = calloc(1, sizeof(*jd));
	if (!jd)
		return -ENOMEM;
	jd->owner.pid = pid;
	if (!path)
		snprintf(tmp_path, sizeof(tmp_path), "/tmp/jit-%u.dump", jit_file__ns_pid(&jd->owner));
	jd->path = strdup(path ? path : tmp_path);
	if (!jd->path) {
		free(jd);
		return -ENOMEM;
	}
	jd->pending_unwind = NONE;
	jd->by_index.seed = mix(now_ns() ^ (uint64_t)(uintptr_t)jd);
	*out = jd;
	return 0;
}

int jitdump__new_fixed(struct jitdump **out)
{
	int err = jitdump__new(0, "", out);

	if (!err)
		(*out)->by_hand = true;
	return err;
}

static jitdump_read_hook_fn read_hook;
static void *read_hook_ctx;

void jitdump__set_read_hook(jitdump_read_hook_fn fn, void *ctx)
{
	read_hook = fn;
	read_hook_ctx = ctx;
}

/* The file was rewritten (truncated or replaced): its old records no longer apply. */
static void reset_table(struct jitdump *jd)
{
	for (size_t i = 0; i < jd->nr_loads; i++)
		unwind_table__free(jd->loads[i].table);
	for (size_t i = 0; i < jd->nr_unwinds; i++)
		free(jd->unwinds[i].data);
	range_map__release(&jd->table);
	free(jd->by_index.slots);
	jd->by_index = (struct index_map){ .seed = jd->by_index.seed };
	jd->nr_loads = jd->nr_unwinds = jd->names_len = 0;
	jd->pending_unwind = NONE;
	jd->have_header = jd->bad_header = jd->broken = jd->cut_record = jd->cut_short = false;
	jd->size = jd->read_off = 0;
	jd->records = jd->code_loads = jd->code_moves = jd->unwind_infos = 0;
	jd->unknown = jd->bad_records = 0;
	jd->unwind_tables = jd->unwind_failed = jd->unwind_misplaced = 0;
}

/* Checks the header at bytes, once all of it is there: *used is its size, 0 while it is
 * incomplete. */
static int parse_header(struct jitdump *jd, const uint8_t *bytes, size_t len, size_t *used)
{
	uint32_t magic, total;

	*used = 0;
	if (len < HEADER_BYTES)
		return 0;
	magic = rd32(bytes + HDR_MAGIC);
	total = rd32(bytes + HDR_TOTAL_SIZE);
	/* perf swaps a file of the other byte order; this one never ran here. perf does not
	 * look at elf_mach, and CPython 3.13.0 leaves it 0: only another machine is refused. */
	if (magic != JITDUMP_MAGIC || rd32(bytes + HDR_VERSION) != JITDUMP_VERSION ||
	    (rd32(bytes + HDR_ELF_MACH) != EM_X86_64 && rd32(bytes + HDR_ELF_MACH) != EM_NONE) ||
	    (rd64(bytes + HDR_FLAGS) & ~JITDUMP_FLAG_ARCH_TIMESTAMP) != 0 ||
	    total < HEADER_BYTES || total > JITDUMP_MAX_HEADER_BYTES) {
		jd->bad_header = true;
		return -EINVAL;
	}
	if (len < total)
		return 0;
	jd->have_header = true;
	*used = total;
	return 0;
}

static int add_name(struct jitdump *jd, const char *name, size_t len, uint32_t *off)
{
	if (len > JITDUMP_MAX_NAME)
		len = JITDUMP_MAX_NAME;
	if (grow_array((void **)&jd->names, &jd->names_cap, jd->names_len + len + 1, 1))
		return -ENOMEM;
	memcpy(jd->names + jd->names_len, name, len);
	jd->names[jd->names_len + len] = '\0';
	*off = (uint32_t)jd->names_len;
	jd->names_len += len + 1;
	return 0;
}

/* Appends load to loads and its range (if any) to added. */
static int add_load(struct jitdump *jd, const struct load *load, struct range_map_seg **added,
		    size_t *nr_added, size_t *cap_added)
{
	uint32_t i = (uint32_t)jd->nr_loads;
	int err;

	if (grow_array((void **)&jd->loads, &jd->cap_loads, jd->nr_loads + 1, sizeof(*jd->loads)))
		return -ENOMEM;
	err = index_set(&jd->by_index, load->code_index, i);
	if (err)
		return err;
	jd->loads[jd->nr_loads++] = *load;
	/* an empty function ("the format supports empty functions") covers no address */
	if (load->size == 0)
		return 0;
	if (grow_array((void **)added, cap_added, *nr_added + 1, sizeof(**added)))
		return -ENOMEM;
	(*added)[(*nr_added)++] = (struct range_map_seg){ load->start, load->start + load->size, i };
	return 0;
}

/* JIT_CODE_LOAD: the name runs from LOAD_NAME to its NUL; the code bytes are the record's
 * last code_size bytes, as perf takes them. Takes the pending unwinding info, bad or not:
 * it was this record's. */
static int code_load(struct jitdump *jd, const uint8_t *rec, uint32_t size, uint64_t off,
		     struct range_map_seg **added, size_t *nr_added, size_t *cap_added)
{
	struct load load = { .unwind = jd->pending_unwind, .bytes_off = NO_BYTES };
	const uint8_t *nul;
	size_t name_len;
	int err;

	jd->pending_unwind = NONE;
	if (size <= LOAD_NAME)
		goto bad;
	nul = memchr(rec + LOAD_NAME, '\0', size - LOAD_NAME);
	name_len = nul ? (size_t)(nul - (rec + LOAD_NAME)) : 0;
	load.start = rd64(rec + LOAD_ADDR);
	load.size = rd64(rec + LOAD_SIZE);
	load.code_index = rd64(rec + LOAD_INDEX);
	load.timestamp = rd64(rec + PREFIX_TIMESTAMP);
	if (name_len == 0 || load.size > UINT64_MAX - load.start)
		goto bad;
	if (load.size <= size - (LOAD_NAME + name_len + 1))
		load.bytes_off = off + size - load.size;
	err = add_name(jd, (const char *)rec + LOAD_NAME, name_len, &load.name);
	if (err)
		return err;
	jd->code_loads++;
	return add_load(jd, &load, added, nr_added, cap_added);
bad:
	jd->bad_records++;
	return 0;
}

/* JIT_CODE_MOVE: the load with its code_index, at a new address. Its unwinding info moved
 * with it (V8 moves a code object whole), and is compiled again for the new address. */
static int code_move(struct jitdump *jd, const uint8_t *rec, uint32_t size,
		     struct range_map_seg **added, size_t *nr_added, size_t *cap_added)
{
	struct load load;
	uint32_t from;

	if (size < MOVE_BYTES)
		goto bad;
	from = index_get(&jd->by_index, rd64(rec + MOVE_INDEX));
	if (from == NONE)
		goto bad; /* a move of code never loaded */
	load = jd->loads[from];
	load.start = rd64(rec + MOVE_NEW_ADDR);
	load.timestamp = rd64(rec + PREFIX_TIMESTAMP);
	load.table = NULL;
	load.table_err = 0;
	if (rd64(rec + MOVE_SIZE) != load.size) {
		/* the specification says a move keeps the size: the old bytes are not these */
		load.size = rd64(rec + MOVE_SIZE);
		load.bytes_off = NO_BYTES;
	}
	if (load.size > UINT64_MAX - load.start)
		goto bad;
	jd->code_moves++;
	return add_load(jd, &load, added, nr_added, cap_added);
bad:
	jd->bad_records++;
	return 0;
}

/* JIT_CODE_UNWINDING_INFO: kept for the next code load, in place of one that got none. */
static int unwinding_info(struct jitdump *jd, const uint8_t *rec, uint32_t size)
{
	struct unwind_info info;
	uint32_t slot = jd->pending_unwind;

	jd->pending_unwind = NONE;
	if (size < UNWIND_DATA)
		goto bad;
	info.size = rd64(rec + UNWIND_SIZE);
	info.hdr_size = rd64(rec + UNWIND_HDR_SIZE);
	info.mapped_size = rd64(rec + UNWIND_MAPPED_SIZE);
	if (info.size > size - UNWIND_DATA || info.size > JITDUMP_MAX_UNWIND_BYTES ||
	    info.hdr_size > info.size)
		goto bad;
	info.data = malloc(info.size ? info.size : 1);
	if (!info.data)
		return -ENOMEM;
	memcpy(info.data, rec + UNWIND_DATA, info.size);
	if (slot == NONE) {
		if (grow_array((void **)&jd->unwinds, &jd->cap_unwinds, jd->nr_unwinds + 1,
			       sizeof(*jd->unwinds))) {
			free(info.data);
			return -ENOMEM;
		}
		slot = (uint32_t)jd->nr_unwinds++;
	} else {
		free(jd->unwinds[slot].data);
	}
	jd->unwinds[slot] = info;
	jd->pending_unwind = slot;
	jd->unwind_infos++;
	return 0;
bad:
	/* the next code load must not take an older record's unwinding info */
	if (slot != NONE) {
		free(jd->unwinds[slot].data);
		jd->unwinds[slot] = (struct unwind_info){ 0 };
	}
	jd->bad_records++;
	return 0;
}

static int add_record(struct jitdump *jd, const uint8_t *rec, uint32_t size, uint64_t off,
		      struct range_map_seg **added, size_t *nr_added, size_t *cap_added)
{
	jd->records++;
	switch (rd32(rec + PREFIX_ID)) {
	case JIT_CODE_LOAD:
		return code_load(jd, rec, size, off, added, nr_added, cap_added);
	case JIT_CODE_MOVE:
		return code_move(jd, rec, size, added, nr_added, cap_added);
	case JIT_CODE_UNWINDING_INFO:
		return unwinding_info(jd, rec, size);
	case JIT_CODE_DEBUG_INFO: /* source lines: not used */
	case JIT_CODE_CLOSE:      /* the JIT may still write after it: read on */
		return 0;
	default:
		jd->unknown++;
		return 0;
	}
}

/* The complete records in bytes, which start at file offset read_off. */
static int add_records(struct jitdump *jd, const uint8_t *bytes, size_t len, size_t *consumed)
{
	struct range_map_seg *added = NULL;
	size_t nr_added = 0, cap_added = 0, pos = 0;
	int err = 0;

	while (len - pos >= PREFIX_BYTES) {
		uint32_t size = rd32(bytes + pos + PREFIX_SIZE);

		if (jd->records >= JITDUMP_MAX_RECORDS) {
			jd->cut_short = true;
			break;
		}
		if (size < PREFIX_BYTES) {
			/* nothing says where the next record starts */
			jd->bad_records++;
			jd->broken = true;
			pos = len;
			break;
		}
		if (size > len - pos)
			break;
		err = add_record(jd, bytes + pos, size, jd->read_off + pos, &added, &nr_added,
				 &cap_added);
		if (err)
			break;
		pos += size;
	}
	/* the records read so far stay, even when memory ran out for the next one */
	if (nr_added) {
		int merge_err = range_map__add(&jd->table, added, nr_added);

		err = err ? err : merge_err;
	}
	free(added);
	*consumed = pos;
	return err;
}

/* As jitdump__add_bytes, for bytes from the file or from the caller. */
static int add_bytes(struct jitdump *jd, const uint8_t *bytes, size_t len, size_t *consumed)
{
	size_t header = 0, records = 0;
	int err = 0;

	*consumed = 0;
	if (jd->bad_header)
		return -EINVAL;
	if (jd->broken || jd->cut_short) {
		/* nothing more is taken from this file */
		*consumed = len;
		jd->read_off += len;
		return 0;
	}
	if (!jd->have_header) {
		err = parse_header(jd, bytes, len, &header);
		if (err || !jd->have_header) {
			jd->cut_record = !err && len > 0;
			return err;
		}
		jd->read_off += header;
	}
	err = add_records(jd, bytes + header, len - header, &records);
	jd->read_off += records;
	*consumed = header + records;
	jd->cut_record = *consumed < len && !jd->broken;
	return err;
}

int jitdump__add_bytes(struct jitdump *jd, const uint8_t *bytes, size_t len, size_t *consumed)
{
	jd->by_hand = true;
	return add_bytes(jd, bytes, len, consumed);
}

/* ---- the file ---- */

/* Reads the file's bytes from read_off up to end into the table. */
static int read_new(struct jitdump *jd, int fd, uint64_t end)
{
	size_t len = end - jd->read_off, got, consumed;
	uint8_t *buf = malloc(len ? len : 1);
	uint64_t from = jd->read_off;
	int err;

	if (!buf)
		return -ENOMEM;
	got = jit_file__pread(fd, buf, len, jd->read_off);
	err = add_bytes(jd, buf, got, &consumed);
	if (read_hook && consumed)
		read_hook(read_hook_ctx, jd->owner.pid, from, buf, consumed);
	free(buf);
	return err;
}

int jitdump__load(struct jitdump *jd)
{
	struct stat st;
	uint64_t end;
	int fd, err = 0;

	jd->tried = true;
	jd->checked_ns = now_ns();
	if (jd->by_hand) /* tied to no file */
		return -ENOENT;
	fd = jit_file__open(jd->path, &jd->owner, &st);
	if (fd < 0) {
		jd->refused = fd == -EPERM;
		return fd;
	}
	jd->refused = false;
	if (st.st_dev != jd->dev || st.st_ino != jd->ino || (uint64_t)st.st_size < jd->size) {
		reset_table(jd);
		jd->dev = st.st_dev;
		jd->ino = st.st_ino;
	}
	if (jd->ever_read && (uint64_t)st.st_size == jd->size)
		goto cleanup;
	jd->ever_read = true;
	jd->size = (uint64_t)st.st_size;
	end = jd->size < JITDUMP_MAX_BYTES ? jd->size : JITDUMP_MAX_BYTES;
	if (end > jd->read_off && !jd->bad_header)
		err = read_new(jd, fd, end);
	/* only now: these are the first 64 MiB's records, and no more are taken */
	if (end < jd->size)
		jd->cut_short = true;
cleanup:
	close(fd);
	return err ? err : jd->bad_header ? -EINVAL : 0;
}

/* ---- lookups ---- */

static void describe(const struct jitdump *jd, const struct load *load, struct jitdump_code *c)
{
	memset(c, 0, sizeof(*c));
	c->name = jd->names + load->name;
	c->start = load->start;
	c->size = load->size;
	c->code_index = load->code_index;
	c->timestamp = load->timestamp;
	c->has_bytes = load->bytes_off != NO_BYTES;
	c->bytes_off = c->has_bytes ? load->bytes_off : 0;
	if (load->unwind != NONE) {
		const struct unwind_info *u = &jd->unwinds[load->unwind];
		size_t eh_size = (size_t)(u->size - u->hdr_size);

		c->has_unwind = true;
		c->eh_frame = eh_size ? u->data : NULL;
		c->eh_frame_size = eh_size;
		c->eh_frame_hdr = u->hdr_size ? u->data + eh_size : NULL;
		c->eh_frame_hdr_size = (size_t)u->hdr_size;
		/* perf's genelf.c puts .eh_frame at ALIGN_8(text start + code size) */
		c->eh_frame_addr = load->start + ((load->size + 7) & ~7ull);
		c->mapped_size = u->mapped_size;
	}
}

/* The index in loads of the latest load covering addr, rereading a changed file on a miss. */
static uint32_t find_load(struct jitdump *jd, uint64_t addr)
{
	uint32_t i;

	if (range_map__find(&jd->table, addr, &i))
		return i;
	if (jd->by_hand || (jd->tried && now_ns() - jd->checked_ns < JITDUMP_RECHECK_MS * 1000000ull))
		return NONE;
	jitdump__load(jd);
	return range_map__find(&jd->table, addr, &i) ? i : NONE;
}

int jitdump__find(struct jitdump *jd, uint64_t addr, struct jitdump_code *code)
{
	uint32_t i;

	if (!jd)
		return -ENOENT;
	i = find_load(jd, addr);
	if (i == NONE)
		return -ENOENT;
	describe(jd, &jd->loads[i], code);
	return 0;
}

const char *jitdump__lookup(struct jitdump *jd, uint64_t addr)
{
	struct jitdump_code code;

	return jitdump__find(jd, addr, &code) == 0 ? code.name : NULL;
}

size_t jitdump__nr_codes(const struct jitdump *jd)
{
	return jd ? jd->nr_loads : 0;
}

int jitdump__code_at(const struct jitdump *jd, size_t i, struct jitdump_code *code)
{
	if (!jd || i >= jd->nr_loads)
		return -ENOENT;
	describe(jd, &jd->loads[i], code);
	return 0;
}

/* Compiles a load's .eh_frame where its pointers assume it lies. */
static int compile_unwind(struct jitdump *jd, struct load *load, char *err, size_t errlen)
{
	struct jitdump_code c;
	char name[64];
	int ret;

	describe(jd, load, &c);
	snprintf(name, sizeof(name), "jitdump code load %llu", (unsigned long long)c.code_index);
	if (!c.eh_frame) {
		if (errlen)
			snprintf(err, errlen, "%s: no .eh_frame, only its header", name);
		return -ENOENT;
	}
	if (c.eh_frame_addr < c.start) {
		if (errlen)
			snprintf(err, errlen, "%s: .eh_frame would lie past the address space", name);
		return -EINVAL;
	}
	ret = unwind_table__from_eh_frame(c.eh_frame, c.eh_frame_size, c.eh_frame_addr, name,
					  &load->table, err, errlen);
	if (ret)
		return ret;
	/* pointers resolved against the wrong address: the layout is not perf's */
	if (c.size && !unwind_table__find(load->table, c.start))
		jd->unwind_misplaced++;
	return 0;
}

int jitdump__unwind_table(struct jitdump *jd, uint64_t addr, const struct unwind_table **table,
			  char *err, size_t errlen)
{
	struct load *load;
	uint32_t i;

	*table = NULL;
	if (errlen)
		err[0] = '\0';
	if (!jd || (i = find_load(jd, addr)) == NONE || jd->loads[i].unwind == NONE)
		return -ENOENT;
	load = &jd->loads[i];
	if (!load->table && !load->table_err) {
		load->table_err = compile_unwind(jd, load, err, errlen);
		if (load->table_err == 0)
			jd->unwind_tables++;
		else if (load->table_err != -ENOENT)
			jd->unwind_failed++;
	}
	*table = load->table;
	return load->table ? 0 : load->table_err;
}

int jitdump__read_code(struct jitdump *jd, uint64_t addr, void *buf, size_t len, size_t *n)
{
	const struct load *load;
	struct stat st;
	uint32_t i;
	int fd;

	*n = 0;
	if (!jd || (i = find_load(jd, addr)) == NONE || jd->loads[i].bytes_off == NO_BYTES ||
	    jd->by_hand)
		return -ENOENT;
	load = &jd->loads[i];
	fd = jit_file__open(jd->path, &jd->owner, &st);
	if (fd < 0)
		return fd;
	/* a file rewritten since: its bytes at that offset are another function's */
	if (st.st_dev != jd->dev || st.st_ino != jd->ino || (uint64_t)st.st_size < jd->size) {
		close(fd);
		return -ESTALE;
	}
	if (len > load->size)
		len = (size_t)load->size;
	*n = jit_file__pread(fd, buf, len, load->bytes_off);
	close(fd);
	return 0;
}

void jitdump__stats(const struct jitdump *jd, struct jitdump_stats *acc)
{
	acc->read += jd->ever_read;
	acc->refused += jd->refused;
	acc->bad_header += jd->bad_header;
	acc->cut_short += jd->cut_short;
	acc->records += jd->records;
	acc->code_loads += jd->code_loads;
	acc->code_moves += jd->code_moves;
	acc->unwind_infos += jd->unwind_infos;
	acc->unknown += jd->unknown;
	acc->bad_records += jd->bad_records;
	acc->cut_records += jd->cut_record;
	acc->unwind_tables += jd->unwind_tables;
	acc->unwind_failed += jd->unwind_failed;
	acc->unwind_misplaced += jd->unwind_misplaced;
}

void jitdump__free(struct jitdump *jd)
{
	if (!jd)
		return;
	reset_table(jd);
	free(jd->loads);
	free(jd->unwinds);
	free(jd->names);
	free(jd->path);
	free(jd);
}
