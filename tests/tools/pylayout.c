/* Prints hprof's layout of a CPython version as "name value" lines, the format
 * tests/tools/pyheaders.c prints from the version's own headers (tests/t_python_layout.sh
 * compares the two):
 *   pylayout 3.11                 the table (3.8-3.12)
 *   pylayout 3.13 RUNTIME_BYTES   3.13+: the _Py_DebugOffsets at the start of the file
 *                                 (the first bytes of _PyRuntime as the ELF file holds them) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "python/layout.h"

int main(int argc, char **argv)
{
	static unsigned char runtime[PYTHON_DEBUG_OFFSETS_SIZE];
	struct python_layout l;
	unsigned major, minor;
	size_t len = 0;
	int rc;

	if (argc < 2 || sscanf(argv[1], "%u.%u", &major, &minor) != 2) {
		fprintf(stderr, "usage: pylayout MAJOR.MINOR [RUNTIME_BYTES]\n");
		return 2;
	}
	if (argc > 2) {
		FILE *f = fopen(argv[2], "rb");

		if (!f) {
			perror(argv[2]);
			return 2;
		}
		len = fread(runtime, 1, sizeof(runtime), f);
		fclose(f);
	}
	rc = python_layout__for_version(major << 24 | minor << 16, len ? runtime : NULL, len, &l);
	if (rc) {
		fprintf(stderr, "pylayout: %u.%u: %s\n", major, minor, strerror(-rc));
		return 1;
	}
	python_layout__print(&l, stdout);
	return 0;
}
