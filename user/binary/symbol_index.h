/* A sorted, binary-searched table of functions: an ELF file's (binary/symbols.h) or the
 * kernel's (binary/ksyms.h). Each function is one 12-byte entry: its address, its size and
 * where its name is. Names are not copied: they are read where they lie, in the string
 * tables the index is given (a file's mapping, util/file_view.h, or bytes the index or its
 * owner keeps); only names that lose a version suffix ("memcpy@@GLIBC_2.14") and names in
 * no table are copied, into the side names. A name read from a file is trusted only while
 * the file is unchanged.
 *
 * Symbols are added, then the index is built once; lookups find nothing before. */
#ifndef HPROF_BINARY_SYMBOL_INDEX_H
#define HPROF_BINARY_SYMBOL_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct file_view;
struct symbol_index;

/* Returns 0 or -ENOMEM. */
int symbol_index__new(struct symbol_index **out);
/* Adds a string table whose names are read in place: size bytes at bytes, which lie in
 * view (NULL: bytes that outlive the index, or that symbol_index__own_names gives it).
 * Returns the table's number, or -1 when no table or name offset is left (names are then
 * copied). */
int symbol_index__add_table(struct symbol_index *idx, const char *bytes, size_t size,
			    struct file_view *view);
/* Adds a function (label: a code label, an STT_NOTYPE symbol in code) of ELF binding bind,
 * its name len bytes at name, no NUL among them. The name is read in place from table (a
 * number from symbol_index__add_table, or -1) when it lies there, else copied; a version
 * suffix is dropped ("__libc_start_main@@GLIBC_2.34"), which takes a copy. Returns 0,
 * -E2BIG or -ENOMEM. */
int symbol_index__add(struct symbol_index *idx, uint64_t start, uint64_t size, int bind,
		      bool label, const char *name, size_t len, int table);
/* How many symbols were added and not yet built into the index. */
size_t symbol_index__pending(const struct symbol_index *idx);
/* Takes buf (size bytes), which one table's names lie in (MiniDebugInfo's decompressed
 * ELF): only that table's bytes are kept, the rest given back. */
void symbol_index__own_names(struct symbol_index *idx, uint8_t *buf, size_t size);
/* Forgets the symbols, tables and names added, and the bytes given to own_names. */
void symbol_index__reset(struct symbol_index *idx);
/* Whether a table names are read from lies in view. */
bool symbol_index__reads_from(const struct symbol_index *idx, const struct file_view *view);
/* Builds the index from the symbols added: sorted, one per address (of aliases the best
 * ranked: a function over a label, then the sized, global, weak, the shorter name), no
 * label inside a sized function. Returns 0 or -ENOMEM. */
int symbol_index__build(struct symbol_index *idx);
/* The function holding addr and addr's offset into it, or NULL. A name read from a file
 * is NULL once that file changed (truncated, rewritten), but for the few names looked up
 * before the change. The name stays valid until the next lookup, or until the index is
 * freed. */
const char *symbol_index__lookup(const struct symbol_index *idx, uint64_t addr,
				 uint64_t *offset);
/* The function holding addr: its start, and its size (0 when the symbol gives none), even
 * after the file changed. Returns 0, or -ENOENT. */
int symbol_index__function(const struct symbol_index *idx, uint64_t addr, uint64_t *start,
			   uint64_t *size);
/* How many functions the index holds once built. */
size_t symbol_index__count(const struct symbol_index *idx);
/* Heap the index holds: not the file pages names are read from. */
size_t symbol_index__bytes(const struct symbol_index *idx);
void symbol_index__free(struct symbol_index *idx);

#endif
