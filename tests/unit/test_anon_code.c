/* Unit tests for naming anonymous code (JIT code) through the session: mappings given as
 * maps text, this process's own /tmp/perf-PID.map written here. No BPF, no root.
 * Prints one "ok - NAME" / "not ok - NAME" line per check. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "session.h"
#include "check.h"

/* Addresses this process does not use: the session knows them only from MAPS. */
static const char MAPS[] =
	"100000000000-100000001000 r-xp 00000000 00:00 0 \n"
	"100000002000-100000003000 r-xp 00000000 00:00 0                          [anon:v8 code]\n"
	"100000004000-100000005000 rwxp 00000000 00:00 0                          [heap]\n";

static char map_path[64];

static void write_map(const char *mode, const char *text)
{
	FILE *f = fopen(map_path, mode);

	if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
		perror(map_path);
		exit(1);
	}
}

static struct session *new_session(bool replay)
{
	struct session *s;

	if (session__new(true, &s) != 0)
		exit(1);
	if (replay)
		session__set_replay(s);
	if (session__load_maps(s, (uint32_t)getpid(), MAPS, strlen(MAPS)) != 0)
		exit(1);
	return s;
}

/* The name of pid's address addr (a leaf frame), "" when it does not resolve. */
static const char *name_of(struct session *s, uint64_t addr, struct frame *f)
{
	struct frame scratch;
	const char *name;

	if (!f)
		f = &scratch;
	if (session__resolve_frame(s, (uint32_t)getpid(), addr, false, f) != 0)
		return "";
	name = profile__frame_name(session__profile(s), f);
	return name ? name : "";
}

static bool named(struct session *s, uint64_t addr, const char *want)
{
	return strcmp(name_of(s, addr, NULL), want) == 0;
}

static void test_live(void)
{
	struct session *s = new_session(false);
	struct perf_map_stats st;
	struct frame a, b, c;

	write_map("w", "100000000000 100 named_fn\nnot a line\n100000002800 10 in_named_mapping\n");
	check(named(s, 0x100000000010, "named_fn"), "live: an entry names its range");
	check(named(s, 0x100000000200, "[jit]"), "live: anonymous code without an entry is [jit]");
	check(named(s, 0x100000002010, "[anon:v8 code]"),
	      "live: a named anonymous mapping without an entry keeps its name");
	check(named(s, 0x100000002805, "in_named_mapping"), "live: an entry wins over the mapping's name");
	check(named(s, 0x100000004010, "[heap]"), "live: executable [heap] is anonymous code too");
	name_of(s, 0x100000000010, &a);
	name_of(s, 0x100000000020, &b);
	name_of(s, 0x100000002010, &c);
	check(a.module == b.module && a.module >= MODULE_FIRST_FILE && a.addr == 0x100000000010,
	      "live: one module per process and mapping name, absolute addresses");
	check(c.module != a.module, "live: another mapping name is another module");
	module_registry__perf_map_stats(session__modules(s), &st);
	check(st.read == 1 && st.entries == 2 && st.bad_lines == 1 && st.refused == 0,
	      "live: the stats count the file, its entries and its bad line");

	/* A JIT appends as it compiles: a miss rereads the grown file (at most every 50 ms). */
	write_map("a", "100000000400 10 late_fn\n");
	nanosleep(&(struct timespec){ .tv_nsec = (PERF_MAP_RECHECK_MS + 20) * 1000000l }, NULL);
	check(named(s, 0x100000000404, "late_fn"), "live: an entry appended later is found");
	check(named(s, 0x100000000010, "named_fn"), "live: the earlier entries stay");
	session__free(s);
}

/* The process exits: its perf map goes, the names of frames already made stay, and a
 * later process of the same pid has modules of its own. */
static void test_gone(void)
{
	struct session *s = new_session(false);
	const struct map_event gone = { .type = MAP_EVENT_EXIT, .pid = (uint32_t)getpid() };
	struct module_memory held;
	struct perf_map_stats st;
	struct frame before, after;
	const char *name;

	write_map("w", "100000000000 100 named_fn\n");
	check(strcmp(name_of(s, 0x100000000010, &before), "named_fn") == 0,
	      "gone: named while the process lives");
	module_registry__memory(session__modules(s), &held);
	check(held.perf_maps == 1, "gone: the perf map is held while the process lives");
	check(session__handle_map_event(s, &gone, "") == 0, "gone: the exit is handled");
	module_registry__memory(session__modules(s), &held);
	check(held.perf_maps == 0, "gone: the exit drops the perf map");
	module_registry__perf_map_stats(session__modules(s), &st);
	check(st.read == 1 && st.entries == 1, "gone: the stats still count the file it read");
	name = profile__frame_name(session__profile(s), &before);
	check(name && strcmp(name, "named_fn") == 0, "gone: the frame keeps its name");
	if (session__load_maps(s, (uint32_t)getpid(), MAPS, strlen(MAPS)) != 0)
		exit(1);
	name_of(s, 0x100000000010, &after);
	check(after.module != before.module, "gone: the pid's next process has modules of its own");
	session__free(s);
}

static void test_replay(void)
{
	struct session *s = new_session(true);
	struct frame f = { .module = MODULE_ANON, .addr = 0x1234 };
	const char *name;

	check(named(s, 0x100000000010, "[jit]"), "replay: the perf map is not read, [jit]");
	check(named(s, 0x100000002010, "[anon:v8 code]"), "replay: named mappings keep their name");
	name = profile__frame_name(session__profile(s), &f);
	check(name && strcmp(name, "[jit]") == 0, "MODULE_ANON frames are [jit], never an address");
	session__free(s);
}

int main(void)
{
	snprintf(map_path, sizeof(map_path), "/tmp/perf-%d.map", (int)getpid());
	test_live();
	test_gone();
	test_replay();
	unlink(map_path);
	return failures ? 1 : 0;
}
