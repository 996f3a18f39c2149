/* The folded-stack reader of `hprof diff` (user/output/stack_set.c), names normalized as
 * diff normalizes them when the first byte is odd. */
#include <stdint.h>
#include <stdio.h>

#include "output/stack_set.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct name_table *names = NULL;
	struct stack_set *set = NULL;
	char err[256];
	FILE *in;

	if (size < 2)
		return 0;
	in = fmemopen((void *)(data + 1), size - 1, "r");
	if (!in)
		return 0;
	if (name_table__new(&names) == 0 && stack_set__new(names, data[0] & 1, &set) == 0 &&
	    stack_set__read_folded(set, in, err, sizeof(err)) == 0)
		stack_set__total(set);
	fclose(in);
	stack_set__free(set);
	name_table__free(names);
	return 0;
}
