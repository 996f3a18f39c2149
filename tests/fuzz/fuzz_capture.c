/* The capture reader and `hprof report`'s replay, run as the command runs: the input is
 * written to a memfd and replayed with `hprof report /proc/self/fd/N`, folded stacks going
 * to /dev/null. Run with -close_fd_mask=3: the summary goes to stderr. */
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <unistd.h>

#include "cli/commands.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static char debug_dir[] = "/tmp/hprof-fuzz-capture.XXXXXX";

	(void)argc;
	(void)argv;
	/* libc's separate debug file holds 100,000 symbols, read again by each replay: the
	 * binaries a capture names are read with what they carry themselves */
	if (mkdtemp(debug_dir))
		setenv("HPROF_DEBUG_DIR", debug_dir, 1);
	/* Each replay loads /proc/kallsyms, some 100,000 lines: in a mount namespace of our
	 * own (when root) it is empty, and a replay takes microseconds instead. */
	if (unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0)
		mount("/dev/null", "/proc/kallsyms", NULL, MS_BIND, NULL);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	char *argv[] = { "report", path, "--folded", "/dev/null", NULL };
	char *argv_fp[] = { "report", path, "--no-dwarf", "--stack-size", "64", "--folded",
			    "/dev/null", NULL };
	int fd = memfd_create("fuzz-capture", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		cmd_report(4, argv);
		if (size && data[size - 1] & 1)
			cmd_report(7, argv_fp);
	}
	close(fd);
	return 0;
}
