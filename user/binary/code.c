#include "binary/code.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "binary/slice.h"
#include "binary/symbols.h"

/* Who sees every read of a file's code (code__set_file_read_hook). */
static code_read_hook_fn read_hook;
static void *read_hook_ctx;

void code__set_file_read_hook(code_read_hook_fn fn, void *ctx)
{
	read_hook = fn;
	read_hook_ctx = ctx;
}

/* Who sees every read of JIT code from a live process (code__set_jit_read_hook). */
static code_jit_read_hook_fn jit_hook;
static void *jit_hook_ctx;

void code__set_jit_read_hook(code_jit_read_hook_fn fn, void *ctx)
{
	jit_hook = fn;
	jit_hook_ctx = ctx;
}

/* The descriptor behind a pinned module's "/proc/self/fd/N", or -1. */
static int pinned_fd(const struct module *mod)
{
	static const char prefix[] = "/proc/self/fd/";
	char *end;
	long fd;

	if (strncmp(mod->load_path, prefix, sizeof(prefix) - 1) != 0)
		return -1;
	fd = strtol(mod->load_path + sizeof(prefix) - 1, &end, 10);
	return *end == '\0' && fd >= 0 && fd < 1 << 20 ? (int)fd : -1;
}

/* A file's bytes at offset: from its pinned descriptor; a replay's (no process left to pin
 * for) from its path, a regular file opened without blocking, as its symbols are. */
static ssize_t read_file(const struct module *mod, uint64_t offset, uint8_t *buf, size_t len)
{
	int fd = pinned_fd(mod), own = -1;
	ssize_t n;

	if (mod->from_slices)
		return mod->slice ? module_slice__read(mod->slice, offset, buf, len) : -ENOENT;
	if (fd < 0) {
		if (mod->unpinned || mod->load_path[0] || mod->path[0] != '/')
			return -ENOENT;
		own = fd = open(mod->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
		if (fd < 0)
			return -errno;
	}
	n = pread(fd, buf, len, (off_t)offset);
	if (n < 0)
		n = -errno;
	if (own >= 0)
		close(own);
	return n;
}

/* JIT code's bytes, from the live process. A page unmapped since gives a short read. */
static ssize_t read_memory(uint32_t pid, uint64_t addr, uint8_t *buf, size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
	ssize_t n;

	if (pid == 0)
		return -ENOENT;
	n = process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0);
	return n < 0 ? -errno : n;
}

/* Blocks of a read that the hook is told of unless the copies hold them as read: the
 * analysis reads overlapping windows of the same code again and again. */
#define REPORT_BLOCK 4096u

/* Tells the JIT read hook of the blocks of [addr, addr + len) the process's copies do not
 * hold as they are now, runs of them at once: with what the hook was told before, what
 * the copies will hold after this read. */
static void report_changed(const struct module *mod, uint64_t addr, const uint8_t *buf,
			   size_t len)
{
	size_t run = 0, at = 0;

	for (size_t off = 0; off < len; off += REPORT_BLOCK) {
		size_t n = len - off < REPORT_BLOCK ? len - off : REPORT_BLOCK;
		bool same = code_copies__holds(mod->code_copies, addr + off, buf + off, n);

		if (!same && !run)
			at = off;
		if (!same)
			run += n;
		if ((same || off + n == len) && run) {
			jit_hook(jit_hook_ctx, mod->anon_pid, addr + at, buf + at, run);
			run = 0;
		}
	}
}

/* JIT code from the process's memory, a copy of what was read kept; once the process is
 * gone, and in a replay (pid 0: its recording's reads), from that copy. */
static ssize_t read_jit_code(const struct module *mod, uint32_t pid, uint64_t addr, uint8_t *buf,
			     size_t len)
{
	ssize_t n = read_memory(pid, addr, buf, len);

	if (n > 0) {
		if (jit_hook)
			report_changed(mod, addr, buf, (size_t)n);
		code_copies__add(mod->code_copies, addr, buf, (size_t)n);
	} else if (n == -ESRCH || pid == 0) {
		n = code_copies__read(mod->code_copies, addr, buf, len);
	}
	return n;
}

ssize_t code__read(const struct module *mod, const struct mapping *m, uint32_t pid,
		   uint64_t addr, uint8_t *buf, size_t len)
{
	ssize_t n;

	if (addr < m->start || addr >= m->end)
		return -ENOENT;
	if (len > m->end - addr)
		len = m->end - addr;
	if (mod->anon_code)
		return read_jit_code(mod, pid, addr, buf, len);
	if (mod->path[0] != '/')
		return -ENOENT; /* the vDSO has CFI; nothing else is read by name */
	n = read_file(mod, addr - m->start + m->file_offset, buf, len);
	if (n > 0 && read_hook)
		read_hook(read_hook_ctx, mod, addr - m->start + m->file_offset, buf, (size_t)n);
	return n;
}

ssize_t code__read_vaddr(const struct module *mod, uint64_t vaddr, uint8_t *buf, size_t len)
{
	uint64_t start, end, file_offset;

	if (mod->anon_code || mod->path[0] != '/' || !mod->syms ||
	    elf_symbols__segment(mod->syms, vaddr, &start, &end, &file_offset) != 0)
		return -ENOENT;
	if (len > end - vaddr)
		len = end - vaddr;
	return read_file(mod, file_offset + (vaddr - start), buf, len);
}
