#include "walkers.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <libunwind.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uthash.h>

#include "proc/procmaps.h"
#include "binary/symbols.h"
#include "util/grow.h"

/* libunwind exports its .eh_frame_hdr binary search without declaring it (perf declares
 * it the same way). */
#define dwarf_search_unwind_table UNW_OBJ(dwarf_search_unwind_table)
extern int dwarf_search_unwind_table(unw_addr_space_t as, unw_word_t ip, unw_dyn_info_t *di,
				     unw_proc_info_t *pi, int need_unwind_info, void *arg);

/* -------- captures -------- */

int capture_file__load(const char *path, struct capture_file **out, char *err, size_t errlen)
{
	struct capture_file *f = calloc(1, sizeof(*f));
	size_t cap = 0;
	int ret;

	*out = NULL;
	if (!f)
		return -ENOMEM;
	ret = capture_reader__open(path, &f->reader, err, errlen);
	if (ret)
		goto cleanup;
	for (;;) {
		struct capture_rec r;

		ret = capture_reader__next(f->reader, &r.type, &r.payload, &r.len, err, errlen);
		if (ret <= 0)
			break;
		capture__decode_info(r.type, r.payload, r.len, &f->info);
		if (grow_array((void **)&f->recs, &cap, f->nr_recs + 1, sizeof(*f->recs))) {
			ret = -ENOMEM;
			goto cleanup;
		}
		f->recs[f->nr_recs++] = r;
	}
	if (ret < 0)
		goto cleanup;
	*out = f;
	return 0;
cleanup:
	capture_file__free(f);
	return ret;
}

void capture_file__free(struct capture_file *f)
{
	if (!f)
		return;
	capture_reader__free(f->reader);
	free(f->recs);
	free(f);
}

bool capture_rec__maps(const struct capture_rec *r, uint32_t *pid, const char **text,
		       size_t *len)
{
	return capture__decode_maps(r->type, r->payload, r->len, pid, text, len);
}

bool capture_rec__map_event(const struct capture_rec *r, struct map_event *e, const char **path)
{
	return capture__decode_map_event(r->type, r->payload, r->len, e, path);
}

const struct hprof_sample *capture_rec__sample(const struct capture_rec *r)
{
	return capture__decode_sample(r->type, r->payload, r->len);
}

enum walk_skip walk__skip_reason(const struct hprof_sample *s, size_t size)
{
	if (!hprof_sample__well_formed(s, size))
		return WALK_SKIP_MALFORMED;
	if (s->nr_user == 0)
		return WALK_SKIP_KERNEL_ONLY;
	if (s->stack_len == 0)
		return WALK_SKIP_NO_COPY;
	return WALK_SKIP_NONE;
}

const char *walk_skip__name(enum walk_skip why)
{
	static const char *const names[WALK_SKIP_COUNT] = {
		[WALK_SKIP_NONE] = "none",
		[WALK_SKIP_MALFORMED] = "malformed record",
		[WALK_SKIP_KERNEL_ONLY] = "kernel-only",
		[WALK_SKIP_NO_COPY] = "no stack copy",
	};

	return why < WALK_SKIP_COUNT ? names[why] : "?";
}

const uint8_t *walk__stack_bytes(const struct hprof_sample *s)
{
	return hprof_sample__stack(s);
}

/* -------- binaries, read from disk -------- */

struct lu_module {
	char *path;
	const uint8_t *image; /* the whole file, or our own copy of the vDSO */
	size_t size;
	bool mapped;          /* image is an mmap of the file */
	const Elf64_Phdr *phdrs;
	uint16_t nr_phdrs;
	uint64_t hdr_vaddr;   /* .eh_frame_hdr; 0 when there is none */
	uint64_t table_vaddr; /* its binary-search table */
	uint64_t fde_count;
	struct elf_symbols *syms;
	bool syms_tried;
	UT_hash_handle hh;
};

/* Reads n bytes at ELF virtual address vaddr from the file's loaded segments. */
static bool module_read(const struct lu_module *mod, uint64_t vaddr, void *buf, size_t n)
{
	for (uint16_t i = 0; i < mod->nr_phdrs; i++) {
		const Elf64_Phdr *ph = &mod->phdrs[i];
		uint64_t off;

		if (ph->p_type != PT_LOAD || vaddr < ph->p_vaddr)
			continue;
		off = vaddr - ph->p_vaddr;
		if (off > ph->p_filesz || ph->p_filesz - off < n)
			continue;
		if (ph->p_offset > mod->size || mod->size - ph->p_offset < off + n)
			return false;
		memcpy(buf, mod->image + ph->p_offset + off, n);
		return true;
	}
	return false;
}

/* Size of a pointer encoding's value (DW_EH_PE_*): 0 for encodings not handled here. */
static size_t eh_pe_size(uint8_t enc)
{
	switch (enc & 0x0f) {
	case 0x00: /* absptr */
	case 0x04: /* udata8 */
	case 0x0c: /* sdata8 */
		return 8;
	case 0x03: /* udata4 */
	case 0x0b: /* sdata4 */
		return 4;
	default:
		return 0;
	}
}

/* Finds .eh_frame_hdr through PT_GNU_EH_FRAME, as a loader (and perf) would. */
static void module_parse(struct lu_module *mod)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)mod->image;
	uint8_t hdr[4];
	uint64_t count = 0;
	size_t ptr_size, count_size;

	if (mod->size < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_phentsize != sizeof(Elf64_Phdr) ||
	    eh->e_phoff > mod->size || (mod->size - eh->e_phoff) / sizeof(Elf64_Phdr) < eh->e_phnum)
		return;
	mod->phdrs = (const Elf64_Phdr *)(mod->image + eh->e_phoff);
	mod->nr_phdrs = eh->e_phnum;
	for (uint16_t i = 0; i < mod->nr_phdrs; i++) {
		if (mod->phdrs[i].p_type == PT_GNU_EH_FRAME)
			mod->hdr_vaddr = mod->phdrs[i].p_vaddr;
	}
	if (!mod->hdr_vaddr || !module_read(mod, mod->hdr_vaddr, hdr, sizeof(hdr)))
		goto none;
	ptr_size = eh_pe_size(hdr[1]);
	count_size = eh_pe_size(hdr[2]);
	/* the table libunwind searches: datarel sdata4 pairs */
	if (hdr[0] != 1 || !ptr_size || !count_size || hdr[3] != 0x3b ||
	    !module_read(mod, mod->hdr_vaddr + 4 + ptr_size, &count, count_size))
		goto none;
	mod->fde_count = count;
	mod->table_vaddr = mod->hdr_vaddr + 4 + ptr_size + count_size;
	return;
none:
	mod->hdr_vaddr = 0;
}

static struct lu_module *module_open(const char *path)
{
	struct lu_module *mod = calloc(1, sizeof(*mod));
	struct stat st;
	int fd = -1;

	if (!mod)
		return NULL;
	mod->path = strdup(path);
	if (!mod->path) {
		free(mod);
		return NULL;
	}
	if (strcmp(path, "[vdso]") == 0) {
		/* The same image in every process of this kernel: take ours. */
		uintptr_t base = getauxval(AT_SYSINFO_EHDR);
		struct process_maps *maps = NULL;
		const struct mapping *m;

		if (base && process_maps__read(getpid(), &maps) == 0 &&
		    (m = process_maps__find(maps, base)) != NULL) {
			uint8_t *copy = malloc(m->end - base);

			if (copy) {
				memcpy(copy, (const void *)base, m->end - base);
				mod->image = copy;
				mod->size = m->end - base;
			}
		}
		process_maps__free(maps);
	} else if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0 && fstat(fd, &st) == 0 &&
		   st.st_size > 0) {
		void *p = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);

		if (p != MAP_FAILED) {
			mod->image = p;
			mod->size = st.st_size;
			mod->mapped = true;
		}
	}
	if (fd >= 0)
		close(fd);
	if (mod->image)
		module_parse(mod);
	return mod;
}

static void module_free(struct lu_module *mod)
{
	if (mod->mapped)
		munmap((void *)mod->image, mod->size);
	else
		free((void *)mod->image);
	elf_symbols__free(mod->syms);
	free(mod->path);
	free(mod);
}

/* -------- processes -------- */

/* A file mapping resolved to its module and load bias, covering the module's whole
 * loaded range (so reads of .eh_frame in a non-executable segment find it too). */
struct lu_loaded {
	uint64_t map_start;   /* the executable mapping it was found through */
	struct lu_module *mod;
	uint64_t bias;        /* process address - ELF vaddr */
	uint64_t lo, hi;      /* [lo, hi): every PT_LOAD of the module, in the process */
	uint64_t text_lo, text_hi;
};

#define LU_MAX_LOADED 256

struct lu_process {
	uint32_t pid;
	uint64_t space_id; /* of the mappings loaded[] was resolved in */
	unw_addr_space_t as;
	struct lu_loaded loaded[LU_MAX_LOADED];
	uint32_t nr_loaded;
	UT_hash_handle hh;
};

struct lu_unwinder {
	struct lu_module *modules;   /* by path */
	struct process_table *maps;  /* the capture's mappings, as hprof's session keeps them */
	struct lu_process *processes;
	bool cache;
	unw_accessors_t accessors;
};

/* What the accessors see of one sample. */
struct lu_sample_ctx {
	struct lu_unwinder *u;
	struct lu_process *proc;
	uint64_t ip, sp, bp, bx, di;
	const uint8_t *stack;
	uint64_t stack_base, stack_len;
};

static struct lu_module *get_module(struct lu_unwinder *u, const char *path)
{
	struct lu_module *mod;

	HASH_FIND_STR(u->modules, path, mod);
	if (mod)
		return mod;
	mod = module_open(path);
	if (mod)
		HASH_ADD_KEYPTR(hh, u->modules, mod->path, strlen(mod->path), mod);
	return mod;
}

/* The loaded module behind the executable mapping holding addr, resolved once. */
static struct lu_loaded *loaded_for_pc(struct lu_unwinder *u, struct lu_process *proc,
				       uint64_t pc)
{
	struct process *p = process_table__get(u->maps, proc->pid);
	const struct mapping *m;
	struct lu_loaded *l;
	struct lu_module *mod;
	uint64_t pgoff, lo = UINT64_MAX, hi = 0;
	bool found = false;

	if (!p)
		return NULL;
	if (p->space_id != proc->space_id) {
		/* The mappings changed: resolve every module again. */
		proc->space_id = p->space_id;
		proc->nr_loaded = 0;
		unw_flush_cache(proc->as, 0, 0);
	}
	m = process__find_mapping(p, pc);
	if (!m || !m->path[0])
		return NULL;
	for (uint32_t i = 0; i < proc->nr_loaded; i++) {
		if (proc->loaded[i].map_start == m->start)
			return proc->loaded[i].mod ? &proc->loaded[i] : NULL;
	}
	if (proc->nr_loaded == LU_MAX_LOADED)
		return NULL;
	l = &proc->loaded[proc->nr_loaded++];
	*l = (struct lu_loaded){ .map_start = m->start };
	mod = get_module(u, m->path);
	if (!mod || !mod->phdrs)
		return NULL;
	/* bias from the executable segment this mapping's page offset falls in */
	for (uint16_t i = 0; i < mod->nr_phdrs; i++) {
		const Elf64_Phdr *ph = &mod->phdrs[i];

		if (ph->p_type != PT_LOAD)
			continue;
		if (ph->p_vaddr < lo)
			lo = ph->p_vaddr;
		if (ph->p_vaddr + ph->p_memsz > hi)
			hi = ph->p_vaddr + ph->p_memsz;
		pgoff = ph->p_offset & ~0xfffull;
		if (!found && (ph->p_flags & PF_X) && m->file_offset >= pgoff &&
		    m->file_offset < ph->p_offset + ph->p_filesz) {
			l->bias = m->start - m->file_offset + ph->p_offset - ph->p_vaddr;
			found = true;
		}
	}
	if (!found)
		return NULL;
	l->mod = mod;
	l->lo = lo + l->bias;
	l->hi = hi + l->bias;
	l->text_lo = m->start;
	l->text_hi = m->end;
	return l;
}

static int lu_find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
			     int need_unwind_info, void *arg)
{
	struct lu_sample_ctx *ctx = arg;
	struct lu_loaded *l = loaded_for_pc(ctx->u, ctx->proc, ip);
	unw_dyn_info_t di;

	if (!l || !l->mod->hdr_vaddr)
		return -UNW_ENOINFO;
	memset(&di, 0, sizeof(di));
	di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
	di.start_ip = l->text_lo;
	di.end_ip = l->text_hi;
	di.u.rti.segbase = l->mod->hdr_vaddr + l->bias;
	di.u.rti.table_data = l->mod->table_vaddr + l->bias;
	/* in words: each entry is two 4-byte values */
	di.u.rti.table_len = l->mod->fde_count * 8 / sizeof(unw_word_t);
	return dwarf_search_unwind_table(as, ip, &di, pi, need_unwind_info, arg);
}

static void lu_put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
	(void)as, (void)pi, (void)arg;
}

static int lu_get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *addr, void *arg)
{
	(void)as, (void)addr, (void)arg;
	return -UNW_ENOINFO;
}

/* The copied stack first, then the binaries' loaded segments as the files hold them. */
static int lu_access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *valp, int write,
			 void *arg)
{
	struct lu_sample_ctx *ctx = arg;
	uint64_t off = addr - ctx->stack_base;

	(void)as;
	if (write)
		return -UNW_EINVAL;
	if (off < ctx->stack_len) {
		if (ctx->stack_len - off < sizeof(*valp))
			return -UNW_EINVAL;
		memcpy(valp, ctx->stack + off, sizeof(*valp));
		return 0;
	}
	for (uint32_t i = 0; i < ctx->proc->nr_loaded; i++) {
		const struct lu_loaded *l = &ctx->proc->loaded[i];

		if (l->mod && addr >= l->lo && addr < l->hi)
			return module_read(l->mod, addr - l->bias, valp, sizeof(*valp)) ? 0
										: -UNW_EINVAL;
	}
	return -UNW_EINVAL;
}

static int lu_access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *valp, int write,
			 void *arg)
{
	struct lu_sample_ctx *ctx = arg;

	(void)as;
	if (write)
		return -UNW_EREADONLYREG;
	switch (reg) {
	case UNW_X86_64_RIP:
		*valp = ctx->ip;
		return 0;
	case UNW_X86_64_RSP:
		*valp = ctx->sp;
		return 0;
	case UNW_X86_64_RBP:
		*valp = ctx->bp;
		return 0;
	case UNW_X86_64_RBX:
		*valp = ctx->bx;
		return 0;
	case UNW_X86_64_RDI:
		*valp = ctx->di;
		return 0;
	default:
		return -UNW_EBADREG; /* the sample holds no other register */
	}
}

static int lu_access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val, int write,
			   void *arg)
{
	(void)as, (void)reg, (void)val, (void)write, (void)arg;
	return -UNW_EINVAL;
}

static int lu_resume(unw_addr_space_t as, unw_cursor_t *c, void *arg)
{
	(void)as, (void)c, (void)arg;
	return -UNW_EINVAL;
}

static int lu_get_proc_name(unw_addr_space_t as, unw_word_t addr, char *buf, size_t len,
			    unw_word_t *off, void *arg)
{
	(void)as, (void)addr, (void)buf, (void)len, (void)off, (void)arg;
	return -UNW_EINVAL;
}

int lu_unwinder__new(bool cache, struct lu_unwinder **out)
{
	struct lu_unwinder *u = calloc(1, sizeof(*u));

	*out = u;
	if (!u)
		return -ENOMEM;
	u->cache = cache;
	if (process_table__new(&u->maps)) {
		free(u);
		*out = NULL;
		return -ENOMEM;
	}
	process_table__set_replay(u->maps);
	u->accessors = (unw_accessors_t){
		.find_proc_info = lu_find_proc_info,
		.put_unwind_info = lu_put_unwind_info,
		.get_dyn_info_list_addr = lu_get_dyn_info_list_addr,
		.access_mem = lu_access_mem,
		.access_reg = lu_access_reg,
		.access_fpreg = lu_access_fpreg,
		.resume = lu_resume,
		.get_proc_name = lu_get_proc_name,
	};
	return 0;
}

/* pid's unwinding state, created on first use. */
static struct lu_process *lu_process(struct lu_unwinder *u, uint32_t pid)
{
	struct lu_process *proc;

	HASH_FIND(hh, u->processes, &pid, sizeof(pid), proc);
	if (proc)
		return proc;
	proc = calloc(1, sizeof(*proc));
	if (!proc)
		return NULL;
	proc->pid = pid;
	proc->as = unw_create_addr_space(&u->accessors, 0);
	if (!proc->as) {
		free(proc);
		return NULL;
	}
	unw_set_caching_policy(proc->as, u->cache ? UNW_CACHE_GLOBAL : UNW_CACHE_NONE);
	HASH_ADD(hh, u->processes, pid, sizeof(proc->pid), proc);
	return proc;
}

int lu_unwinder__load_maps(struct lu_unwinder *u, uint32_t pid, const char *text, size_t len)
{
	if (!lu_process(u, pid))
		return -ENOMEM;
	return process_table__load_maps(u->maps, pid, text, len);
}

int lu_unwinder__map_event(struct lu_unwinder *u, const struct map_event *e, const char *path)
{
	return process_table__apply(u->maps, e, path);
}

int lu_unwinder__walk(struct lu_unwinder *u, const struct hprof_sample *s, uint64_t *pcs,
		      uint32_t max, uint32_t *nr)
{
	struct lu_sample_ctx ctx = {
		.u = u, .ip = s->user_ip, .sp = s->user_sp, .bp = s->user_bp, .bx = s->user_bx,
		.di = s->user_di,
		.stack = walk__stack_bytes(s), .stack_base = s->user_sp, .stack_len = s->stack_len,
	};
	unw_cursor_t cursor;
	unw_word_t ip;
	int ret;

	*nr = 0;
	ctx.proc = lu_process(u, s->pid);
	if (!ctx.proc)
		return -UNW_EUNSPEC;
	ret = unw_init_remote(&cursor, ctx.proc->as, &ctx);
	if (ret)
		return ret;
	while (*nr < max) {
		ret = unw_get_reg(&cursor, UNW_REG_IP, &ip);
		if (ret || ip == 0)
			break;
		pcs[(*nr)++] = ip;
		ret = unw_step(&cursor);
		if (ret <= 0)
			break;
	}
	return ret < 0 ? ret : 0;
}

const char *lu_unwinder__describe(struct lu_unwinder *u, uint32_t pid, uint64_t pc, char *buf,
				  size_t len)
{
	struct lu_process *proc;
	struct lu_loaded *l = NULL;
	const char *name = NULL;
	uint64_t off = 0;

	HASH_FIND(hh, u->processes, &pid, sizeof(pid), proc);
	if (proc)
		l = loaded_for_pc(u, proc, pc);
	if (!l) {
		snprintf(buf, len, "%#llx", (unsigned long long)pc);
		return buf;
	}
	if (!l->mod->syms_tried) {
		char err[160];

		l->mod->syms_tried = true;
		if (l->mod->mapped)
			elf_symbols__load(l->mod->path, &l->mod->syms, err, sizeof(err));
		else
			elf_symbols__load_image(l->mod->image, l->mod->size, &l->mod->syms, err,
						sizeof(err));
	}
	if (l->mod->syms)
		name = elf_symbols__lookup(l->mod->syms, pc - l->bias, &off);
	const char *base = strrchr(l->mod->path, '/');

	base = base ? base + 1 : l->mod->path;
	if (name)
		snprintf(buf, len, "%#llx %s!%s+%#llx", (unsigned long long)pc, base, name,
			 (unsigned long long)off);
	else
		snprintf(buf, len, "%#llx %s+%#llx", (unsigned long long)pc, base,
			 (unsigned long long)(pc - l->bias));
	return buf;
}

void lu_unwinder__flush(struct lu_unwinder *u)
{
	struct lu_process *proc, *tmp;

	HASH_ITER(hh, u->processes, proc, tmp)
		unw_flush_cache(proc->as, 0, 0);
}

void lu_unwinder__free(struct lu_unwinder *u)
{
	struct lu_process *proc, *ptmp;
	struct lu_module *mod, *mtmp;

	if (!u)
		return;
	HASH_ITER(hh, u->processes, proc, ptmp) {
		HASH_DEL(u->processes, proc);
		unw_destroy_addr_space(proc->as);
		free(proc);
	}
	HASH_ITER(hh, u->modules, mod, mtmp) {
		HASH_DEL(u->modules, mod);
		module_free(mod);
	}
	process_table__free(u->maps);
	free(u);
}
