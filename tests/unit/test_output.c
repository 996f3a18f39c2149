/* Unit tests for hprof's output formats: the JSON writer (escaping, numbers, nesting) and
 * pprof (a profile written and read back by name; the message's mappings, locations and
 * sample types; hostile files refused with a reason). Prints one "ok - NAME" /
 * "not ok - NAME" line per check. */
#include <errno.h>
#include <link.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "binary/modules.h"
#include "output/json.h"
#include "output/pprof.h"
#include "output/stack_set.h"
#include "output/profile.h"
#include "check.h"
#include "pprof_message.h"

static void test_json(void)
{
	struct json_writer w;
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	json__init(&w, out);
	json__begin_object(&w);
	json__key(&w, "s");
	json__string(&w, "q\"b\\\n\x01\x7f caf\xc3\xa9 bad\xff\xc3 end");
	json__key(&w, "n");
	json__begin_array(&w);
	json__uint(&w, UINT64_MAX);
	json__int(&w, -5);
	json__double(&w, 0.1);
	json__double(&w, 1.0 / 3);
	json__double(&w, 100);
	json__double(&w, NAN);
	json__double(&w, -0.0);
	json__bool(&w, true);
	json__null(&w);
	json__end_array(&w);
	json__key(&w, "e");
	json__begin_object(&w);
	json__end_object(&w);
	json__end_object(&w);
	check(json__finish(&w) == 0, "json: balanced document");
	fclose(out);
	check(strcmp(buf, "{\n  \"s\": \"q\\\"b\\\\\\u000a\\u0001\\u007f caf\xc3\xa9 bad\\ufffd\\ufffd end\",\n"
			  "  \"n\": [\n    18446744073709551615,\n    -5,\n    0.1,\n    0.3333333333333333,\n"
			  "    100,\n    null,\n    0,\n    true,\n    null\n  ],\n  \"e\": {}\n}\n") == 0,
	      "json: escapes, UTF-8 repaired, shortest doubles, layout");
	free(buf);

	out = open_memstream(&buf, &len);
	json__init(&w, out);
	for (int i = 0; i < JSON_MAX_DEPTH + 1; i++)
		json__begin_array(&w);
	check(json__finish(&w) == -E2BIG, "json: nesting too deep refused");
	fclose(out);
	free(buf);

	out = open_memstream(&buf, &len);
	json__init(&w, out);
	json__begin_object(&w);
	check(json__finish(&w) == -E2BIG, "json: unclosed object refused");
	fclose(out);
	free(buf);
}

/* The ELF virtual address of a function of this test binary. */
static uint64_t self_vaddr(const void *fn)
{
	struct link_map *map = NULL;
	Dl_info info;

	if (!dladdr1(fn, &info, (void **)&map, RTLD_DL_LINKMAP) || !map)
		abort();
	return (uint64_t)(uintptr_t)fn - map->l_addr;
}

static int pack_profile(struct profile *p, struct module_registry *reg, char **buf, size_t *len)
{
	FILE *out = open_memstream(buf, len);
	int err = pprof__write(p, reg, &(struct pprof_opts){ 99, 2000000000 }, out);

	fclose(out);
	return err;
}

static void test_pprof_message(const char *gz, size_t len, uint64_t mod_vaddr)
{
	size_t raw_len;
	uint8_t *raw = gunzip_all(gz, len, &raw_len);
	Perftools__Profiles__Profile *m = perftools__profiles__profile__unpack(NULL, raw_len, raw);
	bool file_mapping = false, located = false;

	check(m != NULL, "pprof: a profile.proto message inside gzip");
	if (!m) {
		free(raw);
		return;
	}
	check(m->n_sample_type == 2 && strcmp(pb_string(m, m->sample_type[0]->type), "samples") == 0 &&
		      strcmp(pb_string(m, m->sample_type[0]->unit), "count") == 0 &&
		      strcmp(pb_string(m, m->sample_type[1]->type), "cpu") == 0 &&
		      strcmp(pb_string(m, m->sample_type[1]->unit), "nanoseconds") == 0,
	      "pprof: sample types samples/count and cpu/nanoseconds");
	check(m->period == 1000000000 / 99 && m->duration_nanos == 2000000000 &&
		      m->sample[0]->value[1] == m->sample[0]->value[0] * m->period,
	      "pprof: period from the frequency, cpu value = samples x period");
	check(m->n_string_table > 0 && m->string_table[0][0] == '\0', "pprof: string table starts with \"\"");
	for (size_t i = 0; i < m->n_mapping; i++) {
		const Perftools__Profiles__Mapping *mp = m->mapping[i];

		if (strstr(pb_string(m, mp->filename), "test_output") && strlen(pb_string(m, mp->build_id)) == 40 &&
		    mp->memory_start <= mod_vaddr && mod_vaddr < mp->memory_limit && mp->has_functions)
			file_mapping = true;
	}
	check(file_mapping, "pprof: this binary's mapping with its build-id and segment");
	check(m->n_mapping > 0 && strstr(pb_string(m, m->mapping[0]->filename), "test_output"),
	      "pprof: a file's mapping comes first (pprof's main binary)");
	for (size_t i = 0; i < m->n_location; i++)
		located |= m->location[i]->address == mod_vaddr && m->location[i]->mapping_id != 0;
	check(located, "pprof: locations carry addresses");
	perftools__profiles__profile__free_unpacked(m, NULL);
	free(raw);
}

static void test_pprof_round_trip(void)
{
	struct module_registry *reg;
	struct profile *p;
	struct module *mod;
	struct name_table *names;
	struct stack_set *from_pprof, *from_folded;
	uint64_t vaddr = self_vaddr((const void *)test_pprof_round_trip);
	char *a = NULL, *b = NULL, err[256] = "";
	size_t alen = 0, blen = 0;
	bool same = true;

	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	exe[n > 0 ? n : 0] = '\0';
	module_registry__new(&reg);
	mod = module_registry__get(reg, exe);
	profile__new(reg, NULL, &p);
	{
		struct frame stack1[] = { { mod->id, 0, vaddr }, { MODULE_UNMAPPED, 0, 0x7f0012340000 } };
		struct frame stack2[] = { { MODULE_UNMAPPED, 0, 0x7f0012340000 } };

		for (int i = 0; i < 7; i++)
			profile__add(p, "app", NULL, stack1, 2);
		profile__add(p, "app", "[truncated: copy too short]", stack2, 1);
		profile__add(p, "other;x", NULL, stack2, 1);
	}
	check(pack_profile(p, reg, &a, &alen) == 0 && pack_profile(p, reg, &b, &blen) == 0,
	      "pprof: writes");
	check(alen == blen && memcmp(a, b, alen) == 0, "pprof: same profile, same bytes");
	test_pprof_message(a, alen, vaddr);

	name_table__new(&names);
	stack_set__new(names, false, &from_pprof);
	stack_set__new(names, false, &from_folded);
	check(pprof__read(a, alen, from_pprof, err, sizeof(err)) == 0, "pprof: reads back (%s)", err);
	stack_set__add_profile(from_folded, p, err, sizeof(err));
	for (uint32_t id = 0; id < name_table__count(names); id++) {
		same &= stack_set__inclusive(from_pprof, id) == stack_set__inclusive(from_folded, id) &&
			stack_set__self(from_pprof, id) == stack_set__self(from_folded, id);
	}
	check(same && stack_set__total(from_pprof) == 9 && stack_set__total(from_folded) == 9,
	      "pprof: read back, the same functions and counts as the folded output");
	{
		uint32_t id;

		name_table__intern(names, "other:x", 7, &id);
		check(stack_set__inclusive(from_pprof, id) == 1, "pprof: ';' in a comm read as ':' as folded writes it");
	}
	stack_set__free(from_pprof);
	stack_set__free(from_folded);
	name_table__free(names);
	free(a);
	free(b);
	profile__free(p);
	module_registry__free(reg);
}

/* pprof__read of data must fail with a message containing want. */
static void expect_refused(const char *name, const void *data, size_t len, const char *want)
{
	struct name_table *names;
	struct stack_set *set;
	char err[256] = "";
	int ret;

	name_table__new(&names);
	stack_set__new(names, false, &set);
	ret = pprof__read(data, len, set, err, sizeof(err));
	check(ret < 0 && strstr(err, want), "hostile pprof: %s (%s)", name, err);
	stack_set__free(set);
	name_table__free(names);
}

static size_t gzip_bytes(const void *in, size_t len, uint8_t *out, size_t cap)
{
	z_stream z = { 0 };

	deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
	z.next_in = (uint8_t *)in;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	deflate(&z, Z_FINISH);
	deflateEnd(&z);
	return cap - z.avail_out;
}

/* A message with one sample of one location and a function name at string index name. */
static size_t crafted(uint8_t *out, size_t cap, uint64_t sample_location, int64_t name,
		      int64_t count)
{
	Perftools__Profiles__Profile m = PERFTOOLS__PROFILES__PROFILE__INIT;
	Perftools__Profiles__ValueType vt = PERFTOOLS__PROFILES__VALUE_TYPE__INIT, *vtp = &vt;
	Perftools__Profiles__Sample s = PERFTOOLS__PROFILES__SAMPLE__INIT, *sp = &s;
	Perftools__Profiles__Location l = PERFTOOLS__PROFILES__LOCATION__INIT, *lp = &l;
	Perftools__Profiles__Line line = PERFTOOLS__PROFILES__LINE__INIT, *linep = &line;
	Perftools__Profiles__Function f = PERFTOOLS__PROFILES__FUNCTION__INIT, *fp = &f;
	char *strings[] = { "", "samples", "count", "fn" };
	uint64_t loc_ids[] = { sample_location };
	int64_t values[] = { count };
	uint8_t raw[4096];
	size_t len;

	vt.type = 1, vt.unit = 2;
	m.n_sample_type = 1, m.sample_type = &vtp;
	s.n_location_id = 1, s.location_id = loc_ids, s.n_value = 1, s.value = values;
	m.n_sample = 1, m.sample = &sp;
	line.function_id = 1;
	l.id = 1, l.n_line = 1, l.line = &linep;
	m.n_location = 1, m.location = &lp;
	f.id = 1, f.name = name;
	m.n_function = 1, m.function = &fp;
	m.n_string_table = 4, m.string_table = strings;
	len = perftools__profiles__profile__pack(&m, raw);
	return gzip_bytes(raw, len, out, cap);
}

static void test_pprof_hostile(void)
{
	uint8_t buf[8192], junk[4096];
	size_t len;

	len = crafted(buf, sizeof(buf), 1, 3, 5);
	{
		struct name_table *names;
		struct stack_set *set;
		char err[128] = "";
		uint32_t id;

		name_table__new(&names);
		stack_set__new(names, false, &set);
		check(pprof__read(buf, len, set, err, sizeof(err)) == 0 && stack_set__total(set) == 5 &&
			      !name_table__intern(names, "fn", 2, &id) && stack_set__self(set, id) == 5,
		      "hostile pprof: the crafted message itself reads (%s)", err);
		stack_set__free(set);
		name_table__free(names);
	}
	expect_refused("truncated gzip", buf, len / 2, "truncated gzip stream");
	expect_refused("not gzip", "a;b 1\n", 6, "not gzip-compressed");
	expect_refused("empty", "", 0, "not gzip-compressed");
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 7919 + 13);
	len = gzip_bytes(junk, sizeof(junk), buf, sizeof(buf));
	expect_refused("gzip of junk", buf, len, "not a profile.proto message");
	memcpy(junk, buf, len);
	junk[len / 2] ^= 0x55;
	expect_refused("corrupt gzip", junk, len, "gzip");
	len = crafted(buf, sizeof(buf), 99, 3, 5);
	expect_refused("unknown location id", buf, len, "no location with id 99");
	len = crafted(buf, sizeof(buf), 1, 40, 5);
	expect_refused("string index out of range", buf, len, "bad function id");
	len = crafted(buf, sizeof(buf), 1, 3, -5);
	expect_refused("negative count", buf, len, "negative count");
}

int main(void)
{
	test_json();
	test_pprof_round_trip();
	test_pprof_hostile();
	return failures ? 1 : 0;
}
