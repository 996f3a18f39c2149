/* Writing pprof profiles. The message is built in memory (protobuf-c structs pointing into
 * arrays owned by the builder), packed, then gzip-compressed onto the stream. */
#include "output/pprof.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>
#include <zlib.h>

#include "util/atomic_file.h"
#include "profile.pb-c.h"
#include "util/grow.h"

#define KERNEL_MAPPING_NAME "[kernel.kallsyms]"

typedef Perftools__Profiles__Profile pb_profile;
typedef Perftools__Profiles__Sample pb_sample;
typedef Perftools__Profiles__Location pb_location;
typedef Perftools__Profiles__Line pb_line;
typedef Perftools__Profiles__Function pb_function;
typedef Perftools__Profiles__Mapping pb_mapping;
typedef Perftools__Profiles__ValueType pb_value_type;
typedef Perftools__Profiles__Label pb_label;

struct string_entry {
	char *s;
	int64_t index;
	UT_hash_handle hh;
};

struct function_key {
	int64_t name, filename, start_line;
};

struct function_entry {
	struct function_key key;
	uint64_t id;
	UT_hash_handle hh;
};

/* A stack as profile__for_each_stack handed it over: its frames are copied to the
 * builder's all_frames from first on (comm and root point into the profile). */
struct stack_copy {
	const char *comm;
	const char *root;
	size_t first;
	uint32_t nr_frames;
	uint64_t count;
	bool labeled;
	struct profile_labels labels; /* strings point into the profile */
};

struct builder {
	struct profile *profile;
	struct module_registry *reg;
	struct string_entry *strings;
	char **string_table;
	size_t nstrings, strings_cap;
	struct stack_copy *stacks;
	size_t nstacks, stacks_cap;
	struct frame *all_frames; /* every stack's frames, one after the other */
	size_t nall_frames, all_frames_cap;
	struct frame *frames; /* distinct frames, sorted: location i + 1 */
	size_t nframes;
	const char **roots;   /* distinct roots, sorted: location nframes + i + 1 */
	size_t nroots;
	pb_location *locations;
	pb_location **location_ptrs;
	pb_line *lines;
	pb_line **line_ptrs;
	struct function_entry *functions;
	pb_function *function_arr;
	pb_function **function_ptrs;
	size_t nfunctions;
	pb_mapping *mappings;
	pb_mapping **mapping_ptrs;
	size_t nmappings;
	char **owned; /* build-id strings */
	size_t nowned;
};

/* The string table index of s, added on first use (index 0 is ""). -1 when out of memory. */
static int64_t string_index(struct builder *b, const char *s)
{
	struct string_entry *e;

	HASH_FIND_STR(b->strings, s, e);
	if (e)
		return e->index;
	if (grow_array((void **)&b->string_table, &b->strings_cap, b->nstrings + 1,
		 sizeof(*b->string_table)))
		return -1;
	e = calloc(1, sizeof(*e));
	if (!e || !(e->s = strdup(s))) {
		free(e);
		return -1;
	}
	e->index = (int64_t)b->nstrings;
	b->string_table[b->nstrings++] = e->s;
	HASH_ADD_KEYPTR(hh, b->strings, e->s, strlen(e->s), e);
	return e->index;
}

/* A stack's frames but its inline frames: those are Lines of the location of the frame
 * they were inlined into, as pprof shows inlined calls. */
static int collect_stack(void *ctx, const struct profile_stack *s)
{
	struct builder *b = ctx;
	uint32_t n = 0;

	if (grow_array((void **)&b->stacks, &b->stacks_cap, b->nstacks + 1, sizeof(*b->stacks)) ||
	    grow_array((void **)&b->all_frames, &b->all_frames_cap, b->nall_frames + s->nr_frames,
		       sizeof(*b->all_frames)))
		return -ENOMEM;
	for (uint32_t i = 0; i < s->nr_frames; i++) {
		if (s->frames[i].module != MODULE_INLINE)
			b->all_frames[b->nall_frames + n++] = s->frames[i];
	}
	b->stacks[b->nstacks] = (struct stack_copy){ .comm = s->comm, .root = s->root,
						    .first = b->nall_frames,
						    .nr_frames = n, .count = s->count,
						    .labeled = s->labels != NULL };
	if (s->labels)
		b->stacks[b->nstacks].labels = *s->labels;
	b->nstacks++;
	b->nall_frames += n;
	return 0;
}

/* Files first, so that pprof, which takes the first mapping for the main binary, names a
 * file rather than the kernel. */
static uint64_t module_rank(uint32_t module)
{
	return module >= MODULE_FIRST_FILE ? module : (uint64_t)UINT32_MAX + 1 + module;
}

static int compare_frame(const void *a, const void *b)
{
	const struct frame *x = a, *y = b;

	if (x->module != y->module)
		return module_rank(x->module) < module_rank(y->module) ? -1 : 1;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->flags < y->flags ? -1 : x->flags > y->flags;
}

static int compare_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Distinct frames and roots of every stack, sorted: their positions are location ids. */
static int collect_locations(struct builder *b)
{
	size_t nframes = 0, nroots = 0;

	for (size_t i = 0; i < b->nstacks; i++) {
		nframes += b->stacks[i].nr_frames;
		nroots += b->stacks[i].root != NULL;
	}
	b->frames = malloc((nframes + 1) * sizeof(*b->frames));
	b->roots = malloc((nroots + 1) * sizeof(*b->roots));
	if (!b->frames || !b->roots)
		return -ENOMEM;
	for (size_t i = 0; i < b->nstacks; i++) {
		memcpy(b->frames + b->nframes, b->all_frames + b->stacks[i].first,
		       b->stacks[i].nr_frames * sizeof(*b->frames));
		b->nframes += b->stacks[i].nr_frames;
		if (b->stacks[i].root)
			b->roots[b->nroots++] = b->stacks[i].root;
	}
	qsort(b->frames, b->nframes, sizeof(*b->frames), compare_frame);
	qsort(b->roots, b->nroots, sizeof(*b->roots), compare_str);
	nframes = nroots = 0;
	for (size_t i = 0; i < b->nframes; i++) {
		if (!nframes || compare_frame(&b->frames[nframes - 1], &b->frames[i]))
			b->frames[nframes++] = b->frames[i];
	}
	for (size_t i = 0; i < b->nroots; i++) {
		if (!nroots || strcmp(b->roots[nroots - 1], b->roots[i]))
			b->roots[nroots++] = b->roots[i];
	}
	b->nframes = nframes;
	b->nroots = nroots;
	return 0;
}

static uint64_t frame_location(const struct builder *b, const struct frame *f)
{
	const struct frame *hit = bsearch(f, b->frames, b->nframes, sizeof(*f), compare_frame);

	return hit ? (uint64_t)(hit - b->frames) + 1 : 0;
}

static uint64_t root_location(const struct builder *b, const char *root)
{
	const char **hit = bsearch(&root, b->roots, b->nroots, sizeof(*b->roots), compare_str);

	return hit ? b->nframes + (uint64_t)(hit - b->roots) + 1 : 0;
}

/* The function of (name, filename, start_line), numbered in order of first use. 0 when out
 * of memory. */
static uint64_t function_id(struct builder *b, const char *name, const char *filename,
			    int64_t start_line)
{
	struct function_key key = { string_index(b, name), string_index(b, filename), start_line };
	struct function_entry *e;
	pb_function *fn;

	if (key.name < 0 || key.filename < 0)
		return 0;
	HASH_FIND(hh, b->functions, &key, sizeof(key), e);
	if (e)
		return e->id;
	e = calloc(1, sizeof(*e));
	if (!e)
		return 0;
	e->key = key;
	e->id = ++b->nfunctions;
	HASH_ADD(hh, b->functions, key, sizeof(e->key), e);
	fn = &b->function_arr[e->id - 1];
	perftools__profiles__function__init(fn);
	fn->id = e->id;
	fn->name = fn->system_name = key.name;
	fn->filename = key.filename;
	fn->start_line = start_line;
	return e->id;
}

static char *hex(const uint8_t *id, size_t len)
{
	char *s = malloc(len * 2 + 1);

	for (size_t i = 0; s && i < len; i++)
		snprintf(s + 2 * i, 3, "%02x", id[i]);
	if (s)
		s[len * 2] = '\0';
	return s;
}

/* Where a frame's mapping lies: a file's segment, else the span of the module's frames. */
struct mapping_span {
	uint32_t module;
	uint64_t start, end, file_offset;
	bool from_segment;
};

static struct mapping_span frame_span(const struct builder *b, const struct frame *f)
{
	struct module *mod = module_registry__by_id(b->reg, f->module);
	struct mapping_span s = { .module = f->module, .start = f->addr, .end = f->addr + 1 };

	/* a Python frame's id is no address: its locations have none (0) */
	if (f->module == MODULE_PYTHON)
		s.start = 0, s.end = 1;
	if (f->module >= MODULE_FIRST_FILE && mod && !mod->anon_code &&
	    elf_symbols__segment(mod->syms, f->addr, &s.start, &s.end, &s.file_offset) == 0)
		s.from_segment = true;
	if (s.end <= s.start)
		s.end = s.start + 1;
	return s;
}

static int new_mapping(struct builder *b, const struct mapping_span *s)
{
	struct module *mod = module_registry__by_id(b->reg, s->module);
	pb_mapping *m = &b->mappings[b->nmappings];
	const uint8_t *id;
	size_t id_len;

	perftools__profiles__mapping__init(m);
	m->id = ++b->nmappings;
	m->memory_start = s->start;
	m->memory_limit = s->end;
	m->file_offset = s->file_offset;
	m->filename = string_index(b, s->module == MODULE_KERNEL   ? KERNEL_MAPPING_NAME
				       : s->module == MODULE_PYTHON ? PYTHON_NAMES_MODULE_LABEL
				       : mod && mod->anon_code	    ? mod->name
				       : mod			    ? mod->path
								    : "?");
	m->has_functions = true;
	/* Python frames come with their code's file and line */
	m->has_filenames = m->has_line_numbers = s->module == MODULE_PYTHON;
	if (m->filename < 0)
		return -ENOMEM;
	if (mod && !mod->anon_code && (id_len = elf_symbols__build_id(mod->syms, &id)) > 0) {
		char *s_id = hex(id, id_len);

		if (!s_id)
			return -ENOMEM;
		b->owned[b->nowned++] = s_id;
		m->build_id = string_index(b, s_id);
		if (m->build_id < 0)
			return -ENOMEM;
	}
	return 0;
}

/* The Lines of the calls inlined at f, innermost first, from lines[*at] on. */
static int add_inlined_lines(struct builder *b, const struct frame *f, size_t *at)
{
	const struct frame *inlined;
	uint32_t nr;

	profile__inline_frames(b->profile, f, &inlined, &nr);
	for (uint32_t k = nr; k-- > 0;) {
		const struct python_location *loc = profile__frame_location(b->profile, &inlined[k]);
		pb_line *l = &b->lines[*at];

		perftools__profiles__line__init(l);
		if (!loc)
			continue;
		l->line = loc->line;
		l->function_id = function_id(b, loc->function, loc->file, 0);
		if (!l->function_id)
			return -ENOMEM;
		b->line_ptrs[(*at)++] = l;
	}
	return 0;
}

/* One location per distinct frame (address, mapping, function), then one per root. Frames
 * are sorted by module and address, so each mapping's frames come in one run. */
static int build_locations(struct builder *b)
{
	size_t n = b->nframes + b->nroots, nlines, line = 0;
	struct mapping_span cur = { 0 };
	bool have_cur = false;

	b->locations = calloc(n + 1, sizeof(*b->locations));
	b->location_ptrs = calloc(n + 1, sizeof(*b->location_ptrs));
	nlines = n;
	for (size_t i = 0; i < b->nframes; i++) {
		const struct frame *inlined;
		uint32_t nr;

		profile__inline_frames(b->profile, &b->frames[i], &inlined, &nr);
		nlines += nr;
	}
	b->lines = calloc(nlines + 1, sizeof(*b->lines));
	b->line_ptrs = calloc(nlines + 1, sizeof(*b->line_ptrs));
	/* a function per line at most */
	b->function_arr = calloc(nlines + 1, sizeof(*b->function_arr));
	b->mappings = calloc(b->nframes + 1, sizeof(*b->mappings));
	b->owned = calloc(b->nframes + 1, sizeof(*b->owned));
	if (!b->locations || !b->location_ptrs || !b->lines || !b->line_ptrs ||
	    !b->function_arr || !b->mappings || !b->owned)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		pb_location *loc = &b->locations[i];
		const struct frame *f = i < b->nframes ? &b->frames[i] : NULL;
		const char *name = f ? profile__frame_name(b->profile, f) : b->roots[i - b->nframes];
		const char *filename = "";
		const struct python_location *py = NULL;
		pb_line *own;
		int err;

		perftools__profiles__location__init(loc);
		loc->id = i + 1;
		if (!name)
			return -ENOMEM;
		if (f && f->module != MODULE_UNMAPPED && f->module != MODULE_ANON) {
			struct mapping_span s = frame_span(b, f);

			if (!have_cur || s.module != cur.module || s.from_segment != cur.from_segment ||
			    (s.from_segment && s.start != cur.start)) {
				err = new_mapping(b, &s);
				if (err)
					return err;
				cur = s;
				have_cur = true;
			}
			/* spans without a segment grow to cover the module's frames */
			if (!s.from_segment && f->module != MODULE_PYTHON &&
			    f->addr >= b->mappings[b->nmappings - 1].memory_limit)
				b->mappings[b->nmappings - 1].memory_limit = f->addr + 1;
			loc->mapping_id = b->nmappings;
			filename = b->string_table[b->mappings[b->nmappings - 1].filename];
			loc->address = f->module == MODULE_PYTHON ? 0 : f->addr;
		}
		loc->line = &b->line_ptrs[line];
		/* the calls inlined here, innermost first, then the frame's own function */
		if (f && (err = add_inlined_lines(b, f, &line)) != 0)
			return err;
		own = &b->lines[line];
		perftools__profiles__line__init(own);
		/* a Python frame is its code's function at one line, as pprof shows Go's; a
		 * binary's frame with DWARF its function at its line */
		if (f)
			py = profile__frame_location(b->profile, f);
		if (py) {
			filename = py->file;
			own->line = py->line;
		}
		own->function_id = function_id(b, name, filename, py ? py->firstlineno : 0);
		if (!own->function_id)
			return -ENOMEM;
		b->line_ptrs[line++] = own;
		loc->n_line = (size_t)(&b->line_ptrs[line] - loc->line);
		if (loc->mapping_id && loc->n_line > 1)
			b->mappings[loc->mapping_id - 1].has_filenames = true;
		if (loc->mapping_id && own->line)
			b->mappings[loc->mapping_id - 1].has_filenames =
				b->mappings[loc->mapping_id - 1].has_line_numbers = true;
		b->location_ptrs[i] = loc;
	}
	b->function_ptrs = calloc(b->nfunctions + 1, sizeof(*b->function_ptrs));
	b->mapping_ptrs = calloc(b->nmappings + 1, sizeof(*b->mapping_ptrs));
	if (!b->function_ptrs || !b->mapping_ptrs)
		return -ENOMEM;
	for (size_t i = 0; i < b->nfunctions; i++)
		b->function_ptrs[i] = &b->function_arr[i];
	for (size_t i = 0; i < b->nmappings; i++)
		b->mapping_ptrs[i] = &b->mappings[i];
	return 0;
}

/* gzip (RFC 1952) with zlib's fixed header: no name, no time, so the bytes depend only on
 * the message. */
static int write_gzip(const uint8_t *data, size_t len, FILE *out)
{
	uint8_t buf[64 * 1024];
	z_stream z = { 0 };
	int zret, err = 0;

	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	z.next_in = (uint8_t *)data;
	do {
		/* avail_in is 32 bits: feed large messages in slices */
		size_t slice = len > UINT32_MAX ? UINT32_MAX : len;

		z.avail_in = (uInt)slice;
		len -= slice;
		do {
			z.next_out = buf;
			z.avail_out = sizeof(buf);
			zret = deflate(&z, len ? Z_NO_FLUSH : Z_FINISH);
			if (zret == Z_STREAM_ERROR) {
				err = -EIO;
				goto cleanup;
			}
			if (fwrite(buf, 1, sizeof(buf) - z.avail_out, out) != sizeof(buf) - z.avail_out) {
				err = -EIO;
				goto cleanup;
			}
		} while (z.avail_out == 0);
	} while (len);
cleanup:
	deflateEnd(&z);
	return err;
}

static void builder__free(struct builder *b)
{
	struct string_entry *s, *stmp;
	struct function_entry *f, *ftmp;

	HASH_ITER(hh, b->strings, s, stmp) {
		HASH_DEL(b->strings, s);
		free(s->s);
		free(s);
	}
	HASH_ITER(hh, b->functions, f, ftmp) {
		HASH_DEL(b->functions, f);
		free(f);
	}
	for (size_t i = 0; i < b->nowned; i++)
		free(b->owned[i]);
	free(b->owned);
	free(b->string_table);
	free(b->stacks);
	free(b->all_frames);
	free(b->frames);
	free(b->roots);
	free(b->locations);
	free(b->location_ptrs);
	free(b->lines);
	free(b->line_ptrs);
	free(b->function_arr);
	free(b->function_ptrs);
	free(b->mappings);
	free(b->mapping_ptrs);
}

/* Samples: leaf first, the root frame (if any) outermost; values and labels. */
struct sample_arrays {
	pb_sample *samples;
	pb_sample **ptrs;
	uint64_t *ids;
	int64_t *values;
	pb_label *labels;
	pb_label **label_ptrs;
};

/* The most labels a sample carries: comm, and with labels thread_name, pid, tid, cgroup. */
#define LABELS_MAX 5

/* The label keys' string indexes. */
struct label_keys {
	int64_t comm, thread, pid, tid, cgroup;
};

/* Appends the label key = str to s; -ENOMEM when a string could not be added. */
static int add_label(struct builder *b, pb_sample *s, pb_label *l, int64_t key, const char *str)
{
	perftools__profiles__label__init(l);
	l->key = key;
	l->str = string_index(b, str);
	if (key < 0 || l->str < 0)
		return -ENOMEM;
	s->label[s->n_label++] = l;
	return 0;
}

/* The sample's labels: its command name as "comm"; counted with labels (hprof serve), the
 * process's name as "comm", the thread's as "thread_name", "pid", "tid" and "cgroup". The
 * keys other than "comm" enter the string table with the first stack that has labels, so
 * a profile without any is written as before. */
static int add_labels(struct builder *b, struct label_keys *k, const struct stack_copy *st,
		      pb_sample *s, pb_label *l)
{
	char num[16];
	int err;

	if (!st->labeled)
		return add_label(b, s, l, k->comm, st->comm);
	if (k->thread < 0) {
		k->thread = string_index(b, PPROF_THREAD_LABEL);
		k->pid = string_index(b, PPROF_PID_LABEL);
		k->tid = string_index(b, PPROF_TID_LABEL);
		k->cgroup = string_index(b, PPROF_CGROUP_LABEL);
	}
	err = add_label(b, s, l++, k->comm, st->labels.process ? st->labels.process : st->comm);
	if (!err)
		err = add_label(b, s, l++, k->thread, st->comm);
	snprintf(num, sizeof(num), "%u", st->labels.pid);
	if (!err)
		err = add_label(b, s, l++, k->pid, num);
	snprintf(num, sizeof(num), "%u", st->labels.tid);
	if (!err)
		err = add_label(b, s, l++, k->tid, num);
	if (!err && st->labels.cgroup)
		err = add_label(b, s, l++, k->cgroup, st->labels.cgroup);
	return err;
}

static int build_samples(struct builder *b, const struct pprof_opts *o, struct sample_arrays *a,
			 struct label_keys *keys)
{
	int64_t period = o->frequency ? (int64_t)(1000000000ull / o->frequency) : 0;
	size_t nids = 0, pos = 0;

	for (size_t i = 0; i < b->nstacks; i++)
		nids += b->stacks[i].nr_frames + 1;
	a->samples = calloc(b->nstacks + 1, sizeof(*a->samples));
	a->ptrs = calloc(b->nstacks + 1, sizeof(*a->ptrs));
	a->ids = calloc(nids + 1, sizeof(*a->ids));
	a->values = calloc(2 * b->nstacks + 1, sizeof(*a->values));
	a->labels = calloc(LABELS_MAX * b->nstacks + 1, sizeof(*a->labels));
	a->label_ptrs = calloc(LABELS_MAX * b->nstacks + 1, sizeof(*a->label_ptrs));
	if (!a->samples || !a->ptrs || !a->ids || !a->values || !a->labels || !a->label_ptrs)
		return -ENOMEM;
	for (size_t i = 0; i < b->nstacks; i++) {
		const struct stack_copy *st = &b->stacks[i];
		pb_sample *s = &a->samples[i];
		int err;

		perftools__profiles__sample__init(s);
		s->location_id = a->ids + pos;
		for (uint32_t f = 0; f < st->nr_frames; f++)
			a->ids[pos++] = frame_location(b, &b->all_frames[st->first + f]);
		if (st->root)
			a->ids[pos++] = root_location(b, st->root);
		s->n_location_id = (size_t)(a->ids + pos - s->location_id);
		s->value = a->values + 2 * i;
		s->n_value = 2;
		s->value[0] = st->count > INT64_MAX ? INT64_MAX : (int64_t)st->count;
		/* int64 values: a count no real profile reaches saturates rather than wraps */
		s->value[1] = period && st->count > (uint64_t)(INT64_MAX / period)
				      ? INT64_MAX : (int64_t)st->count * period;
		s->label = &a->label_ptrs[LABELS_MAX * i];
		err = add_labels(b, keys, st, s, &a->labels[LABELS_MAX * i]);
		if (err)
			return err;
		a->ptrs[i] = s;
	}
	return 0;
}

static void sample_arrays__free(struct sample_arrays *a)
{
	free(a->samples);
	free(a->ptrs);
	free(a->ids);
	free(a->values);
	free(a->labels);
	free(a->label_ptrs);
}

int pprof__write(struct profile *p, struct module_registry *reg, const struct pprof_opts *o,
		 FILE *out)
{
	struct builder b = { .profile = p, .reg = reg };
	struct sample_arrays a = { 0 };
	pb_profile msg = PERFTOOLS__PROFILES__PROFILE__INIT;
	pb_value_type types[2] = { PERFTOOLS__PROFILES__VALUE_TYPE__INIT,
				   PERFTOOLS__PROFILES__VALUE_TYPE__INIT };
	pb_value_type period_type = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	pb_value_type *type_ptrs[2] = { &types[0], &types[1] };
	uint8_t *packed = NULL;
	size_t len;
	struct label_keys keys;
	int err;

	err = string_index(&b, "") == 0 ? 0 : -ENOMEM;
	types[0].type = string_index(&b, "samples");
	types[0].unit = string_index(&b, "count");
	types[1].type = period_type.type = string_index(&b, "cpu");
	types[1].unit = period_type.unit = string_index(&b, "nanoseconds");
	keys = (struct label_keys){ .comm = string_index(&b, PPROF_COMM_LABEL), .thread = -1,
				    .pid = -1, .tid = -1, .cgroup = -1 };
	if (!err && (keys.comm < 0 || types[0].type < 0 || types[0].unit < 0 ||
		     types[1].type < 0 || types[1].unit < 0))
		err = -ENOMEM;
	if (!err)
		err = profile__for_each_stack(p, collect_stack, &b);
	if (!err)
		err = collect_locations(&b);
	if (!err)
		err = build_locations(&b);
	if (!err)
		err = build_samples(&b, o, &a, &keys);
	if (err)
		goto cleanup;
	msg.n_sample_type = 2;
	msg.sample_type = type_ptrs;
	msg.n_sample = b.nstacks;
	msg.sample = a.ptrs;
	msg.n_mapping = b.nmappings;
	msg.mapping = b.mapping_ptrs;
	msg.n_location = b.nframes + b.nroots;
	msg.location = b.location_ptrs;
	msg.n_function = b.nfunctions;
	msg.function = b.function_ptrs;
	msg.n_string_table = b.nstrings;
	msg.string_table = b.string_table;
	msg.duration_nanos = (int64_t)o->duration_ns;
	msg.period_type = &period_type;
	msg.period = o->frequency ? (int64_t)(1000000000ull / o->frequency) : 0;
	len = perftools__profiles__profile__get_packed_size(&msg);
	packed = malloc(len + 1);
	if (!packed) {
		err = -ENOMEM;
		goto cleanup;
	}
	perftools__profiles__profile__pack(&msg, packed);
	err = write_gzip(packed, len, out);
	if (!err && (fflush(out) == EOF || ferror(out)))
		err = -EIO;
cleanup:
	free(packed);
	sample_arrays__free(&a);
	builder__free(&b);
	return err;
}

struct write_args {
	struct profile *p;
	struct module_registry *reg;
	const struct pprof_opts *o;
};

static int write_to(FILE *out, void *ctx)
{
	struct write_args *a = ctx;

	return pprof__write(a->p, a->reg, a->o, out);
}

int pprof__write_file(const char *path, struct profile *p, struct module_registry *reg,
		      const struct pprof_opts *o)
{
	struct write_args a = { p, reg, o };

	return atomic_file__write(path, 0644, write_to, &a);
}
