/* Pins the file a process mapped the way hprof does (user/binary/mapped_files.h), for
 * tests/t_safety.sh: pin PID START END PATH FILE. START-END is the mapping's range in PID
 * (a range PID has not mapped makes /proc/PID/map_files fail, so that PATH is resolved);
 * FILE gives the device and inode the pinned file must have. Prints "pinned" and exits
 * 0, or prints why not and exits 1. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "binary/mapped_files.h"

int main(int argc, char **argv)
{
	struct mapped_files *mf;
	struct mapped_file_id id;
	struct stat st;
	int err;

	if (argc != 6 || stat(argv[5], &st) != 0) {
		fprintf(stderr, "usage: pin PID START END PATH FILE\n");
		return 2;
	}
	id = (struct mapped_file_id){ major(st.st_dev), minor(st.st_dev), st.st_ino };
	mf = mapped_files__new();
	if (!mf)
		return 2;
	err = mapped_files__pin(mf, (uint32_t)strtoul(argv[1], NULL, 10),
				strtoull(argv[2], NULL, 16), strtoull(argv[3], NULL, 16), argv[4], &id);
	mapped_files__free(mf);
	if (err) {
		printf("not pinned: %s\n", strerror(-err));
		return 1;
	}
	printf("pinned\n");
	return 0;
}
