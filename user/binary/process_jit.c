/* A process's code without a file (modules.h): its anonymous code, one module per mapping
 * name, named by its perf map, jitdump or gdb JIT registrations, and BEAM's exit address;
 * kept until the process exits or execs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uthash.h>

#include "binary/jit_file.h"
#include "binary/modules_internal.h"
#include "util/grow.h"

/* pid's anonymous code, created on first sight (its perf map too, with_perf_map). NULL
 * when out of memory. */
static struct process_code *process_code(struct module_registry *reg, uint32_t pid,
					 bool with_perf_map)
{
	struct process_code *pc;

	HASH_FIND(hh, reg->processes, &pid, sizeof(pid), pc);
	if (pc)
		return pc;
	pc = calloc(1, sizeof(*pc));
	/* copies, a perf map and a jitdump in replays too, of what their recordings read
	 * (module_registry__add_code, __add_perf_map, __add_jitdump) */
	if (!pc || !(pc->copies = code_copies__new()) ||
	    (with_perf_map ? perf_map__new(pid, &pc->map) != 0 ||
				     jitdump__new(pid, NULL, &pc->jitdump) != 0
			   : perf_map__new_fixed(&pc->map) != 0 ||
				     jitdump__new_fixed(&pc->jitdump) != 0)) {
		if (pc) {
			perf_map__free(pc->map);
			jitdump__free(pc->jitdump);
			code_copies__free(pc->copies);
		}
		free(pc);
		return NULL;
	}
	pc->pid = pid;
	pc->live = with_perf_map;
	HASH_ADD(hh, reg->processes, pid, sizeof(pc->pid), pc);
	return pc;
}

struct module *module_registry__anon_code(struct module_registry *reg, uint32_t pid,
					  const char *mapping_name, bool with_perf_map)
{
	/* Named anonymous mappings keep their name; other code outside files is a JIT's. */
	const char *name = mapping_name[0] == '[' ? mapping_name : "[jit]";
	struct process_code *pc;
	struct module_entry *e;
	char *key, path[64];

	if (asprintf(&key, "%u %s", pid, name) < 0)
		return NULL;
	HASH_FIND_STR(reg->by_anon, key, e);
	if (e) {
		free(key);
		return &e->mod;
	}
	snprintf(path, sizeof(path), "/tmp/perf-%u.map", pid);
	pc = process_code(reg, pid, with_perf_map);
	if (!pc || grow_array((void **)&pc->modules, &pc->modules_cap, pc->nr_modules + 1,
			      sizeof(*pc->modules)) ||
	    !(e = module_entry__add(reg, path))) {
		free(key);
		return NULL;
	}
	pc->modules[pc->nr_modules++] = e;
	e->anon_key = key;
	e->mod.name = strchr(key, ' ') + 1;
	e->mod.anon_code = true;
	e->mod.anon_pid = pid;
	e->mod.load_err = -ENOENT;
	/* Without its perf map the module still names frames by mapping. */
	e->mod.perf_map = pc->map;
	e->mod.jitdump = pc->jitdump;
	e->mod.code_copies = pc->copies;
	e->mod.gdb_jit = pc->gdb_jit;
	HASH_ADD_KEYPTR(hh, reg->by_anon, e->anon_key, strlen(e->anon_key), e);
	return &e->mod;
}

bool module_registry__has_anon_code(const struct module_registry *reg, uint32_t pid)
{
	struct process_code *pc;

	HASH_FIND(hh, reg->processes, &pid, sizeof(pid), pc);
	return pc && pc->nr_modules > 0;
}

int module_registry__add_code(struct module_registry *reg, uint32_t pid, uint64_t addr,
			      const uint8_t *bytes, size_t len)
{
	struct process_code *pc = process_code(reg, pid, false);

	if (!pc)
		return -ENOMEM;
	code_copies__add(pc->copies, addr, bytes, len);
	return 0;
}

int module_registry__add_perf_map(struct module_registry *reg, uint32_t pid, const char *text,
				  size_t len)
{
	struct process_code *pc = process_code(reg, pid, false);
	size_t consumed;

	if (!pc)
		return -ENOMEM;
	return pc->live ? 0 : perf_map__add_text(pc->map, text, len, &consumed);
}

int module_registry__add_jitdump(struct module_registry *reg, uint32_t pid, uint64_t offset,
				 const uint8_t *bytes, size_t len)
{
	struct process_code *pc = process_code(reg, pid, false);
	struct jitdump *fresh;
	size_t consumed;

	if (!pc)
		return -ENOMEM;
	if (pc->live)
		return 0;
	/* a file read from its start: another file, or the same rewritten */
	if (offset == 0 && jitdump__nr_codes(pc->jitdump) > 0) {
		if (jitdump__new_fixed(&fresh) != 0)
			return -ENOMEM;
		jitdump__free(pc->jitdump);
		pc->jitdump = fresh;
		for (size_t i = 0; i < pc->nr_modules; i++)
			pc->modules[i]->mod.jitdump = fresh;
	}
	return jitdump__add_bytes(pc->jitdump, bytes, len, &consumed) == -ENOMEM ? -ENOMEM : 0;
}

/* A replay's process pid's registrations (fixed: binary/gdb_jit.h), made on first use and
 * given to its modules. NULL when out of memory or not a replay's. */
static struct gdb_jit *replay_gdb_jit(struct module_registry *reg, uint32_t pid)
{
	struct process_code *pc = process_code(reg, pid, false);

	if (!pc || pc->live)
		return NULL;
	if (!pc->gdb_jit && (pc->gdb_jit = gdb_jit__new_fixed()) != NULL) {
		for (size_t i = 0; i < pc->nr_modules; i++)
			pc->modules[i]->mod.gdb_jit = pc->gdb_jit;
	}
	return pc->gdb_jit;
}

int module_registry__add_gdb_jit_object(struct module_registry *reg, uint32_t pid,
					uint64_t addr, const uint8_t *bytes, size_t len)
{
	struct gdb_jit *gj = replay_gdb_jit(reg, pid);

	return gj ? gdb_jit__add_object(gj, addr, bytes, len) : 0;
}

void module_registry__drop_gdb_jit_object(struct module_registry *reg, uint32_t pid,
					  uint64_t addr, uint64_t size)
{
	struct gdb_jit *gj = replay_gdb_jit(reg, pid);

	if (gj)
		gdb_jit__drop_object(gj, addr, size);
}

int module_registry__set_beam_exit(struct module_registry *reg, uint32_t pid, uint64_t exit)
{
	struct process_code *pc = process_code(reg, pid, false);

	if (!pc)
		return -ENOMEM;
	if (!pc->live)
		pc->beam_exit = exit;
	return 0;
}

void module_registry__set_beam_exit_hook(struct module_registry *reg, module_beam_exit_fn fn,
					 void *ctx)
{
	reg->beam_exit_hook = fn;
	reg->beam_exit_ctx = ctx;
}

void module_registry__reload_jit(struct module_registry *reg, uint32_t pid)
{
	struct process_code *pc, *tmp;

	HASH_ITER(hh, reg->processes, pc, tmp) {
		if (pid && pc->pid != pid)
			continue;
		if (pc->map)
			perf_map__load(pc->map);
		if (pc->jitdump)
			jitdump__load(pc->jitdump);
	}
}

/* The modules stay (frames counted in them keep their ids and names); the perf map goes,
 * and a later process of the same pid gets modules of its own. */
void module_registry__process_gone(struct module_registry *reg, uint32_t pid)
{
	struct process_code *pc;

	HASH_FIND(hh, reg->processes, &pid, sizeof(pid), pc);
	if (!pc)
		return;
	for (size_t i = 0; i < pc->nr_modules; i++) {
		pc->modules[i]->mod.perf_map = NULL;
		pc->modules[i]->mod.jitdump = NULL;
		pc->modules[i]->mod.code_copies = NULL;
		pc->modules[i]->mod.gdb_jit = NULL;
		HASH_DEL(reg->by_anon, pc->modules[i]);
	}
	if (pc->gdb_jit) {
		gdb_jit__stats(pc->gdb_jit, &reg->gone_gdb_jit);
		gdb_jit__free(pc->gdb_jit);
	}
	reg->gone_code_copy_reads += code_copies__reads(pc->copies);
	code_copies__free(pc->copies);
	if (pc->map) {
		perf_map__stats(pc->map, &reg->gone_perf_maps);
		perf_map__free(pc->map);
	}
	if (pc->jitdump) {
		jitdump__stats(pc->jitdump, &reg->gone_jitdumps);
		jitdump__free(pc->jitdump);
	}
	HASH_DEL(reg->processes, pc);
	free(pc->modules);
	free(pc);
}

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A search for a runtime's state of process pc is due: never made, or the last one is
 * GDB_JIT_SEARCH_MS old. Marks it made now. */
static bool search_due(bool *searched, uint64_t *searched_ns)
{
	uint64_t now = monotonic_ns();

	if (*searched && now - *searched_ns < GDB_JIT_SEARCH_MS * 1000000ull)
		return false;
	*searched = true;
	*searched_ns = now;
	return true;
}

struct gdb_jit *module_registry__gdb_jit(struct module_registry *reg, uint32_t pid,
					 gdb_jit_locate_fn locate, void *ctx)
{
	struct process_code *pc;
	uint64_t descriptor;

	HASH_FIND(hh, reg->processes, &pid, sizeof(pid), pc);
	if (!pc || !pc->live) /* a replay's: what its recording read, if anything */
		return pc ? pc->gdb_jit : NULL;
	if (pc->gdb_jit)
		return pc->gdb_jit;
	if (!search_due(&pc->gdb_jit_searched, &pc->gdb_jit_searched_ns))
		return NULL;
	if (locate(ctx, &descriptor) != 0 || !(pc->gdb_jit = gdb_jit__new(pid, descriptor)))
		return NULL;
	for (size_t i = 0; i < pc->nr_modules; i++)
		pc->modules[i]->mod.gdb_jit = pc->gdb_jit;
	return pc->gdb_jit;
}

uint64_t module_registry__beam_exit(struct module_registry *reg, uint32_t pid,
				   beam_exit_locate_fn locate, void *ctx)
{
	struct process_code *pc;
	uint64_t exit;

	HASH_FIND(hh, reg->processes, &pid, sizeof(pid), pc);
	if (!pc || !pc->live) /* a replay's: as its recording found it, if it did */
		return pc ? pc->beam_exit : 0;
	if (pc->beam_exit || !search_due(&pc->beam_searched, &pc->beam_searched_ns))
		return pc->beam_exit;
	if (locate(ctx, &exit) == 0) {
		pc->beam_exit = exit;
		if (reg->beam_exit_hook)
			reg->beam_exit_hook(reg->beam_exit_ctx, pid, exit);
	}
	return pc->beam_exit;
}

void module_registry__gdb_jit_stats(const struct module_registry *reg, struct gdb_jit_stats *stats)
{
	const struct process_code *pc;

	*stats = reg->gone_gdb_jit;
	for (pc = reg->processes; pc; pc = pc->hh.next)
		if (pc->gdb_jit)
			gdb_jit__stats(pc->gdb_jit, stats);
}

void module_registry__perf_map_stats(const struct module_registry *reg,
				     struct perf_map_stats *stats)
{
	const struct process_code *pc;

	*stats = reg->gone_perf_maps;
	for (pc = reg->processes; pc; pc = pc->hh.next) {
		if (pc->map)
			perf_map__stats(pc->map, stats);
	}
}

void module_registry__jitdump_stats(const struct module_registry *reg,
				    struct jitdump_stats *stats)
{
	const struct process_code *pc;

	*stats = reg->gone_jitdumps;
	for (pc = reg->processes; pc; pc = pc->hh.next) {
		if (pc->jitdump)
			jitdump__stats(pc->jitdump, stats);
	}
}

/* A process maps the jitdump file it writes (perf's marker: V8 writes it to its working
 * directory, CPython to /tmp): read that one. Live processes only, as for perf maps. */
void process_jit__use_mapped_jitdump(struct module_registry *reg, uint32_t pid, const char *path)
{
	const char *base = strrchr(path, '/');
	struct jit_file_owner owner = { .pid = pid };
	char want[32], tmp[48];
	struct process_code *pc;
	struct jitdump *jd;

	if (!base || strncmp(base + 1, "jit-", 4) != 0)
		return; /* most mappings: nothing to read /proc/PID/status for */
	/* named after its pid as it knows it (in a container, its namespace's) */
	snprintf(want, sizeof(want), "jit-%u.dump", jit_file__ns_pid(&owner));
	snprintf(tmp, sizeof(tmp), "/tmp/%s", want);
	if (strcmp(base + 1, want) != 0 || strcmp(path, tmp) == 0)
		return;
	pc = process_code(reg, pid, true);
	if (!pc || !pc->jitdump || jitdump__new(pid, path, &jd) != 0)
		return;
	jitdump__free(pc->jitdump);
	pc->jitdump = jd;
	for (size_t i = 0; i < pc->nr_modules; i++)
		pc->modules[i]->mod.jitdump = jd;
}
