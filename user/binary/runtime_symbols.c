#include "binary/runtime_symbols.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

static const char *const names[RUNTIME_SYMBOL_COUNT] = {
	[RUNTIME_GDB_JIT_DESCRIPTOR] = "__jit_debug_descriptor",
	[RUNTIME_BEAM_NORMAL_EXIT] = "beam_normal_exit",
	[RUNTIME_PY_RUNTIME] = "_PyRuntime",
	[RUNTIME_PY_VERSION] = "Py_Version",
	[RUNTIME_PY_CODE_TYPE] = "PyCode_Type",
	[RUNTIME_PY_EVAL] = "_PyEval_EvalFrameDefault",
	[RUNTIME_PY_EVAL_END] = "",
};

static unsigned char symbol_type(unsigned which)
{
	return which == RUNTIME_PY_EVAL ? STT_FUNC : STT_OBJECT;
}

const char *runtime_symbols__name(enum runtime_symbol which)
{
	return which < RUNTIME_SYMBOL_COUNT ? names[which] : "?";
}

/* Fills the symbols still 0 in vaddrs from the first symbol table of the type. */
static void find_in_symtab(Elf *elf, Elf64_Word type, uint64_t vaddrs[RUNTIME_SYMBOL_COUNT])
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;
		size_t count;

		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != type || shdr.sh_entsize == 0 ||
		    !(data = elf_getdata(scn, NULL)))
			continue;
		count = data->d_size / shdr.sh_entsize;
		for (size_t i = 0; i < count; i++) {
			GElf_Sym sym;
			const char *s;

			if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF ||
			    sym.st_value == 0 ||
			    (GELF_ST_TYPE(sym.st_info) != STT_OBJECT &&
			     GELF_ST_TYPE(sym.st_info) != STT_FUNC))
				continue;
			s = elf_strptr(elf, shdr.sh_link, sym.st_name);
			for (unsigned k = 0; s && *s && k < RUNTIME_SYMBOL_COUNT; k++) {
				if (vaddrs[k] || GELF_ST_TYPE(sym.st_info) != symbol_type(k) ||
				    strcmp(s, names[k]) != 0)
					continue;
				vaddrs[k] = sym.st_value;
				if (k == RUNTIME_PY_EVAL && sym.st_size &&
				    sym.st_value + sym.st_size > sym.st_value)
					vaddrs[RUNTIME_PY_EVAL_END] = sym.st_value + sym.st_size;
			}
		}
		return;
	}
}

int runtime_symbols__in_file(const char *path, uint64_t vaddrs[RUNTIME_SYMBOL_COUNT])
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY), err = 0;
	Elf *elf;

	memset(vaddrs, 0, RUNTIME_SYMBOL_COUNT * sizeof(vaddrs[0]));
	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		err = -EINVAL;
	} else {
		find_in_symtab(elf, SHT_DYNSYM, vaddrs);
		find_in_symtab(elf, SHT_SYMTAB, vaddrs);
	}
	elf_end(elf);
	close(fd);
	return err;
}
