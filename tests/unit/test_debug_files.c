/* Where separate debug files are found: --debug-dir directories before the system's (by
 * build-id and by debuglink name), a fetched file last, and dwz's supplementary files
 * (.gnu_debugaltlink) by path, under HPROF_DEBUG_DIR and by build-id, never a file of
 * another build-id, never the debug file itself, and a malformed section rejected. The
 * programs and the dwz file are built here with gcc and dwz. */
#include <errno.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "binary/debug_files.h"
#include "check.h"

static char tmp[] = "/tmp/hprof-debug-files.XXXXXX";

/* Runs a shell command in tmp. Returns its exit status. */
static int sh(const char *fmt, const char *arg)
{
	char cmd[2048], line[1024];

	snprintf(line, sizeof(line), fmt, arg, arg, arg, arg, arg, arg);
	snprintf(cmd, sizeof(cmd), "cd %s && (%s) >/dev/null 2>&1", tmp, line);
	return system(cmd);
}

/* The build-id of the ELF file at rel, as readelf prints it. */
static void build_id_of(const char *rel, char *hex, size_t size)
{
	char cmd[512];
	FILE *p;

	hex[0] = '\0';
	snprintf(cmd, sizeof(cmd), "readelf -n %s/%s | awk '/Build ID/ { print $3 }'", tmp, rel);
	p = popen(cmd, "r");
	if (p && fgets(hex, (int)size, p))
		hex[strcspn(hex, "\n")] = '\0';
	if (p)
		pclose(p);
}

static int altlink(const char *rel, char *path, size_t size)
{
	char file[PATH_MAX];

	snprintf(file, sizeof(file), "%s/%s", tmp, rel);
	return debug_files__altlink_of(file, path, size);
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), m = strlen(tail);

	return n >= m && strcmp(s + n - m, tail) == 0;
}

/* Two programs sharing types, dwz'd with a supplementary file dwz names under
 * /usr/lib/debug/.dwz/. */
static bool build(void)
{
	static const char prog[] =
		"printf '#include <stdio.h>\\nstruct big { int a, b; double e; char name[32]; };\\n"
		"int f%s(struct big *b) { return b->a + printf(\"%%%%s\", b->name); }\\n"
		"int main(void) { struct big b = { 0 }; return f%s(&b); }\\n' >%s.c && "
		"gcc -g -O2 %s.c -o %s";

	return sh(prog, "a") == 0 && sh(prog, "b") == 0 &&
	       sh("dwz -m common.debug -M /usr/lib/debug/.dwz/hprof-test/common.debug a b", "") ==
		       0;
}

static void test_altlink(void)
{
	char path[PATH_MAX], want[PATH_MAX], hex[64];
	int err;

	/* where dwz said, moved under HPROF_DEBUG_DIR */
	sh("mkdir -p sys/.dwz/hprof-test && cp common.debug sys/.dwz/hprof-test/", "");
	snprintf(want, sizeof(want), "%s/sys", tmp);
	setenv("HPROF_DEBUG_DIR", want, 1);
	err = altlink("a", path, sizeof(path));
	check(err == 0 && ends_with(path, "/sys/.dwz/hprof-test/common.debug"),
	      "altlink: dwz's path, under HPROF_DEBUG_DIR (%d %s)", err, path);

	/* another build's file at that path is not the one named */
	sh("cp a sys/.dwz/hprof-test/common.debug", "");
	err = altlink("a", path, sizeof(path));
	check(err == -ENOENT, "altlink: a file of another build-id there is not taken (%d)", err);

	/* by the build-id it names, in a --debug-dir */
	build_id_of("common.debug", hex, sizeof(hex));
	snprintf(want, sizeof(want), "mkdir -p ci/.build-id/%.2s && cp common.debug ci/.build-id/%.2s/%s.debug",
		 hex, hex, hex + 2);
	sh("%s", want);
	snprintf(want, sizeof(want), "%s/ci", tmp);
	check(debug_files__add_dir(want) == 0, "--debug-dir added");
	err = altlink("b", path, sizeof(path));
	snprintf(want, sizeof(want), "/ci/.build-id/%.2s/%s.debug", hex, hex + 2);
	check(err == 0 && ends_with(path, want), "altlink: by build-id in a --debug-dir (%d %s)",
	      err, path);

	/* for a binary: dwz'd unstripped, it names its own; stripped, its debug file's (found
	 * by build-id in the --debug-dir) */
	{
		char debug[PATH_MAX], bin[PATH_MAX], id[64];

		snprintf(bin, sizeof(bin), "%s/b", tmp);
		err = debug_files__altlink_of_binary(bin, debug, sizeof(debug), path, sizeof(path));
		check(err == 0 && strcmp(debug, bin) == 0 && ends_with(path, ".debug"),
		      "altlink of a binary dwz rewrote: its own (%d %s)", err, path);
		build_id_of("b", id, sizeof(id));
		snprintf(want, sizeof(want), "mkdir -p ci/.build-id/%.2s && objcopy --only-keep-debug b ci/.build-id/%.2s/%s.debug && "
			 "cp b b_stripped && strip b_stripped", id, id, id + 2);
		sh("%s", want);
		snprintf(bin, sizeof(bin), "%s/b_stripped", tmp);
		err = debug_files__altlink_of_binary(bin, debug, sizeof(debug), path, sizeof(path));
		snprintf(want, sizeof(want), "/ci/.build-id/%.2s/%s.debug", id, id + 2);
		check(err == 0 && ends_with(debug, want) && ends_with(path, ".debug"),
		      "altlink of a stripped binary: its debug file's, found by build-id (%d %s %s)",
		      err, debug, path);
		check(debug_files__altlink_of_binary("/nonexistent", debug, sizeof(debug), path,
						     sizeof(path)) == -ENOENT,
		      "altlink of a missing binary: -ENOENT");
	}

	/* a debug file without the section, a loop, malformed sections */
	check(altlink("common.debug", path, sizeof(path)) == -ENOENT,
	      "altlink: none in the supplementary file itself");
	sh("cp a selfref && objcopy --dump-section .gnu_debugaltlink=link selfref && "
	   "printf 'selfref\\0' >self.link && tail -c 20 link >>self.link && "
	   "objcopy --update-section .gnu_debugaltlink=self.link selfref", "");
	err = altlink("selfref", path, sizeof(path));
	check(err == -ENOENT || (err == 0 && !ends_with(path, "/selfref")),
	      "altlink: one naming the debug file itself is never it (%d %s)", err, path);
	sh("cp a nonul && printf 'no-nul-here' >bad.link && "
	   "objcopy --update-section .gnu_debugaltlink=bad.link nonul", "");
	check(altlink("nonul", path, sizeof(path)) == -EINVAL, "altlink: a path without its NUL");
	sh("cp a noid && printf '/x\\0' >short.link && "
	   "objcopy --update-section .gnu_debugaltlink=short.link noid", "");
	check(altlink("noid", path, sizeof(path)) == -EINVAL, "altlink: no build-id after the path");
	check(altlink("missing", path, sizeof(path)) == -ENOENT, "altlink: no such debug file");
	sh("mkfifo fifo", "");
	check(altlink("fifo", path, sizeof(path)) == -ENOENT, "altlink: a FIFO is not read");
}

static void test_places(void)
{
	static const uint8_t id[] = { 0xab, 0xcd, 0xef };
	char path[PATH_MAX], want[PATH_MAX];
	size_t n = debug_files__build_id_places();

	check(n == 3, "build-id places: one --debug-dir, the system's, a fetched file (%zu)", n);
	check(debug_files__build_id_path(id, sizeof(id), 0, path, sizeof(path)) == 0 &&
		      ends_with(path, "/ci/.build-id/ab/cdef.debug"),
	      "build-id: the --debug-dir first (%s)", path);
	check(debug_files__build_id_path(id, sizeof(id), 2, path, sizeof(path)) == -ENOENT,
	      "build-id: nothing fetched yet");
	snprintf(want, sizeof(want), "%s/fetched.debug", tmp);
	check(debug_files__add_fetched(id, sizeof(id), want) == 0 &&
		      debug_files__build_id_path(id, sizeof(id), 2, path, sizeof(path)) == 0 &&
		      strcmp(path, want) == 0,
	      "build-id: a fetched file last");
	check(debug_files__add_fetched(id, sizeof(id), "relative") == -EINVAL,
	      "fetched: a relative path refused");
	check(debug_files__debuglink_places() == 1 + DEBUGLINK_SYSTEM_PLACES,
	      "debuglink places: the --debug-dir, then the system's");
	{
		struct debuglink link = { .name = "x.debug" };

		check(debug_files__debuglink_path(&link, "/usr/bin/x", 0, path, sizeof(path)) == 0 &&
			      ends_with(path, "/ci/x.debug"),
		      "debuglink: by name in the --debug-dir first (%s)", path);
		check(debug_files__debuglink_path(&link, "/usr/bin/x", 1, path, sizeof(path)) == 0 &&
			      strcmp(path, "/usr/bin/x.debug") == 0,
		      "debuglink: then next to the binary");
	}
	check(debug_files__add_dir("/nonexistent/hprof") == -ENOENT, "--debug-dir: no such directory");
}

int main(void)
{
	char cmd[PATH_MAX + 16];

	elf_version(EV_CURRENT);
	if (!mkdtemp(tmp) || !build()) {
		check(false, "build two programs and their dwz file (gcc, dwz)");
		return 1;
	}
	test_altlink();
	test_places();
	debug_files__reset();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmp);
	return failures ? 1 : 0;
}
