/* The kernel's function symbols, from /proc/kallsyms: names for kernel frames. */
#ifndef HPROF_BINARY_KSYMS_H
#define HPROF_BINARY_KSYMS_H

#include <stddef.h>
#include <stdint.h>

struct ksyms;

/* Loads /proc/kallsyms (or another file of that format). Returns 0 or -errno (-ENOENT:
 * the file shows no addresses, as kallsyms does to unprivileged readers). */
int ksyms__load(const char *path, struct ksyms **out);
/* The same from len bytes of text in kallsyms' format (a capture's: capture/format.h
 * CAPTURE_KSYMS). Lines that are not function symbols, or longer than kallsyms writes, are
 * skipped. */
int ksyms__load_text(const char *text, size_t len, struct ksyms **out);
/* The function holding addr and addr's offset into it, or NULL. The name lives as long as
 * ks. */
const char *ksyms__lookup(const struct ksyms *ks, uint64_t addr, uint64_t *offset);
void ksyms__free(struct ksyms *ks);

#endif
