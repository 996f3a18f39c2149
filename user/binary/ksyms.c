#include "binary/ksyms.h"
#include "binary/symbol_index.h"

#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ksyms {
	struct symbol_index *index; /* sizes unknown (0), every name copied */
};

int ksyms__load(const char *path, struct ksyms **out)
{
	struct ksyms *ks;
	char line[512];
	FILE *f;
	int err = 0;

	*out = NULL;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	ks = calloc(1, sizeof(*ks));
	if (!ks || symbol_index__new(&ks->index) != 0) {
		err = -ENOMEM;
		goto cleanup;
	}
	while (fgets(line, sizeof(line), f)) {
		char type, name[256];
		uint64_t addr;
		int bind;

		if (sscanf(line, "%" SCNx64 " %c %255s", &addr, &type, name) != 3 || addr == 0)
			continue;
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		/* kallsyms types: T global, W weak, t local */
		bind = type == 'T' ? STB_GLOBAL : type == 't' ? STB_LOCAL : STB_WEAK;
		err = symbol_index__add(ks->index, addr, 0, bind, false, name, strlen(name), -1);
		if (err)
			goto cleanup;
	}
	if (symbol_index__pending(ks->index) == 0) {
		err = -ENOENT; /* kallsyms shows no addresses to unprivileged readers */
		goto cleanup;
	}
	err = symbol_index__build(ks->index);
	if (err)
		goto cleanup;
	*out = ks;
	ks = NULL;
cleanup:
	ksyms__free(ks);
	fclose(f);
	return err;
}

const char *ksyms__lookup(const struct ksyms *ks, uint64_t addr, uint64_t *offset)
{
	return ks ? symbol_index__lookup(ks->index, addr, offset) : NULL;
}

void ksyms__free(struct ksyms *ks)
{
	if (!ks)
		return;
	symbol_index__free(ks->index);
	free(ks);
}
