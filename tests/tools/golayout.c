/* Prints what hprof reads of a Go binary for the kernel (user/go/layout.c): the version,
 * g's TLS slot and the offsets of runtime.g's and runtime.m's fields, one "name value" a
 * line, or the reason it refuses the file. tests/t_go.sh checks them against the DWARF.
 *
 * Usage: golayout FILE */
#include <stdio.h>

#include "go/layout.h"

int main(int argc, char **argv)
{
	struct hprof_go_proc p;
	enum go_layout_reason r;
	char version[32];

	if (argc != 2) {
		fprintf(stderr, "usage: golayout FILE\n");
		return 2;
	}
	r = go_layout__from_file(argv[1], &p, version, sizeof(version));
	printf("version %s\n", version[0] ? version : "-");
	if (r != GO_LAYOUT_OK) {
		printf("refused %s\n", go_layout__reason_name(r));
		return 1;
	}
	printf("tls_g %d\ng.m %u\ng.sched %u\ngobuf.bp %u\ng.stack.hi %u\nm.g0 %u\nm.curg %u\n",
	       p.tls_g, p.g_m, p.g_sched, p.gobuf_bp, p.g_stack_hi, p.m_g0, p.m_curg);
	return 0;
}
