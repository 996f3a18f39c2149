/* inline_chain FILE [ADDR...]: the inline chain hprof's DWARF index gives each ELF virtual
 * address of FILE (the addresses from stdin, one a line, when none is given), innermost
 * first, one "function<TAB>file:line" line per frame and an empty line after each address,
 * as eu-addr2line -i -f -C prints them without columns. Exits 2 when FILE has no DWARF. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "binary/dwarf_index.h"

static void print_chain(struct dwarf_index *ix, uint64_t addr)
{
	struct source_chain chain;

	if (dwarf_index__chain(ix, addr, &chain) != 0) {
		printf("??\t??:0\n\n");
		return;
	}
	for (uint32_t i = chain.nr; i-- > 0;)
		printf("%s\t%s:%" PRIu32 "\n", chain.frames[i].function,
		       chain.frames[i].file[0] ? chain.frames[i].file : "??", chain.frames[i].line);
	printf("\n");
}

int main(int argc, char **argv)
{
	struct dwarf_index *ix;
	char msg[256] = "", line[64];
	int err;

	if (argc < 2) {
		fprintf(stderr, "usage: inline_chain FILE [ADDR...]\n");
		return 2;
	}
	err = dwarf_index__open(argv[1], &ix, msg, sizeof(msg));
	if (err) {
		fprintf(stderr, "inline_chain: %s\n", msg);
		return 2;
	}
	for (int i = 2; i < argc; i++)
		print_chain(ix, strtoull(argv[i], NULL, 0));
	if (argc == 2)
		while (fgets(line, sizeof(line), stdin))
			print_chain(ix, strtoull(line, NULL, 0));
	dwarf_index__free(ix);
	return 0;
}
