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

/* Adds one kallsyms line ("ADDR TYPE NAME [module]") when it names a function. Returns 0
 * or -ENOMEM. */
static int add_line(struct ksyms *ks, const char *line)
{
	char type, name[256];
	uint64_t addr;
	int bind;

	if (sscanf(line, "%" SCNx64 " %c %255s", &addr, &type, name) != 3 || addr == 0)
		return 0;
	if (type != 't' && type != 'T' && type != 'w' && type != 'W')
		return 0;
	/* kallsyms types: T global, W weak, t local */
	bind = type == 'T' ? STB_GLOBAL : type == 't' ? STB_LOCAL : STB_WEAK;
	return symbol_index__add(ks->index, addr, 0, bind, false, name, strlen(name), -1);
}

static int new_ksyms(struct ksyms **out)
{
	struct ksyms *ks = calloc(1, sizeof(*ks));

	*out = ks;
	if (!ks || symbol_index__new(&ks->index) != 0)
		return -ENOMEM;
	return 0;
}

/* Builds the index once every line is in. Returns 0 or -errno. */
static int finish(struct ksyms *ks)
{
	/* kallsyms shows no addresses to unprivileged readers */
	if (symbol_index__pending(ks->index) == 0)
		return -ENOENT;
	return symbol_index__build(ks->index);
}

int ksyms__load(const char *path, struct ksyms **out)
{
	struct ksyms *ks = NULL;
	char line[512];
	FILE *f;
	int err;

	*out = NULL;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	err = new_ksyms(&ks);
	while (!err && fgets(line, sizeof(line), f))
		err = add_line(ks, line);
	if (!err)
		err = finish(ks);
	fclose(f);
	if (err) {
		ksyms__free(ks);
		return err;
	}
	*out = ks;
	return 0;
}

int ksyms__load_text(const char *text, size_t len, struct ksyms **out)
{
	struct ksyms *ks = NULL;
	char line[512];
	int err;

	*out = NULL;
	err = new_ksyms(&ks);
	for (size_t at = 0; !err && at < len;) {
		const char *nl = memchr(text + at, '\n', len - at);
		size_t n = (nl ? (size_t)(nl - text) : len) - at;

		/* a line longer than any kallsyms line is no symbol */
		if (n < sizeof(line)) {
			memcpy(line, text + at, n);
			line[n] = '\0';
			err = add_line(ks, line);
		}
		at += n + 1;
	}
	if (!err)
		err = finish(ks);
	if (err) {
		ksyms__free(ks);
		return err;
	}
	*out = ks;
	return 0;
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
