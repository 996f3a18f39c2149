/* The /proc/PID/maps parser, and the address space fed with what it parsed: all at once,
 * one mapping at a time (each replacing what it overlaps), and in a forked clone. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proc/address_space.h"
#include "proc/procmaps.h"

static void add_one_by_one(const struct process_maps *maps)
{
	struct address_space *as = address_space__new(), *clone = NULL;

	if (!as)
		return;
	for (size_t i = 0; i < process_maps__count(maps); i++) {
		const struct mapping *m = process_maps__get(maps, i);

		address_space__add(as, m, m->path);
		address_space__find(as, m->start);
		address_space__find(as, m->end - 1);
		if (i == process_maps__count(maps) / 2) {
			address_space__free(clone);
			clone = address_space__clone(as);
		}
	}
	if (clone)
		address_space__add_maps(clone, maps);
	address_space__free(clone);
	address_space__free(as);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct process_maps *maps;
	struct address_space *as;
	char *text = malloc(size + 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (process_maps__parse(text, size, &maps) == 0) {
		for (size_t i = 0; i < process_maps__count(maps); i++) {
			const struct mapping *m = process_maps__get(maps, i);

			process_maps__find(maps, m->start);
			process_maps__find(maps, m->end);
		}
		as = address_space__new();
		if (as && address_space__add_maps(as, maps) == 0)
			address_space__find(as, 0x400000);
		address_space__free(as);
		add_one_by_one(maps);
		process_maps__free(maps);
	}
	free(text);
	return 0;
}
