/* A module's entry in the registry (modules_internal.h): made with the next id, and its
 * symbols read from where the module says, its pinned file, a slice, or this process's own
 * vDSO. */
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "binary/modules_internal.h"
#include "binary/slice.h"
#include "util/grow.h"

/* A vDSO is two pages or so; anything claiming more than this is not one. */
#define VDSO_MAX_SIZE (1u << 20)

/* Where the module's ELF is read from: its pinned file, else its path. */
const char *module__load_path(const struct module *mod)
{
	return mod->load_path[0] ? mod->load_path : mod->path;
}

/* The vDSO image's size from its own ELF header: its section headers come last. It is
 * the kernel's image, mapped in this process too, so reading it is safe. */
static size_t vdso_image_size(const Elf64_Ehdr *eh)
{
	size_t size = 0;

	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64)
		return 0;
	if (eh->e_shoff && eh->e_shentsize == sizeof(Elf64_Shdr))
		size = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	return size <= VDSO_MAX_SIZE ? size : 0;
}

/* The vDSO is the same image in every process of this kernel: read it from our own
 * address space, where the auxiliary vector says it starts. */
static int load_vdso_symbols(struct module *mod)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)getauxval(AT_SYSINFO_EHDR);
	size_t size = eh ? vdso_image_size(eh) : 0;

	if (!size)
		return -ENOENT;
	return elf_symbols__load_image(eh, size, &mod->syms, mod->load_msg, sizeof(mod->load_msg));
}

void module_entry__load_symbols(struct module *mod)
{
	if (mod->from_slices)
		mod->load_err = !mod->slice ? -ENOENT
				: mod->slice->load_err ? mod->slice->load_err
				: module_slice__symbols(mod->slice, &mod->syms, mod->load_msg,
							sizeof(mod->load_msg));
	else if (mod->unpinned)
		mod->load_err = -ENOENT;
	else if (strcmp(mod->path, "[vdso]") == 0)
		mod->load_err = load_vdso_symbols(mod);
	else if (mod->path[0] == '/')
		mod->load_err = elf_symbols__load_from(module__load_path(mod), mod->path, &mod->syms,
						       mod->load_msg, sizeof(mod->load_msg));
	else
		mod->load_err = -ENOENT;
}

/* A new entry with the next id, its path copied. NULL when out of memory. */
struct module_entry *module_entry__add(struct module_registry *reg, const char *path)
{
	struct module_entry *e;

	if (grow_array((void **)&reg->by_id, &reg->cap, (size_t)reg->nr + 1, sizeof(*reg->by_id)))
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e || !(e->mod.path = strdup(path))) {
		free(e);
		return NULL;
	}
	e->mod.id = MODULE_FIRST_FILE + reg->nr;
	e->mod.last_used = reg->sweeps;
	if (reg->slices) {
		e->mod.from_slices = true;
		e->mod.slice = module_slices__find(reg->slices, path);
	}
	reg->by_id[reg->nr++] = e;
	return e;
}
