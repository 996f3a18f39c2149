/* symbolize FILE VADDR...: names each ELF virtual address of FILE the way a profile names
 * a sampled pc there, without a process or BPF. First prints where FILE's symbols came
 * from ("source: .symtab"), so tests can check the lookup order. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "binary/modules.h"
#include "output/profile.h"

int main(int argc, char **argv)
{
	struct module_registry *reg = NULL;
	struct profile *prof = NULL;
	struct module *mod;
	int err, status = 1;

	if (argc < 2) {
		fprintf(stderr, "usage: symbolize FILE VADDR...\n");
		return 2;
	}
	err = module_registry__new(&reg);
	if (!err)
		err = profile__new(reg, NULL, &prof);
	if (err)
		goto cleanup;
	mod = module_registry__get(reg, argv[1]);
	if (!mod)
		goto cleanup;
	if (mod->load_err) {
		fprintf(stderr, "symbolize: %s\n", mod->load_msg);
		goto cleanup;
	}
	printf("source: %s\n", elf_symbols_source__name(elf_symbols__source(mod->syms)));
	for (int i = 2; i < argc; i++) {
		struct frame f = { .module = mod->id };
		const char *name;
		char *end;

		errno = 0;
		f.addr = strtoull(argv[i], &end, 0);
		if (errno || *end || end == argv[i]) {
			fprintf(stderr, "symbolize: not an address: %s\n", argv[i]);
			goto cleanup;
		}
		name = profile__frame_name(prof, &f);
		printf("0x%" PRIx64 " %s\n", f.addr, name ? name : "?");
	}
	status = 0;
cleanup:
	profile__free(prof);
	module_registry__free(reg);
	return status;
}
