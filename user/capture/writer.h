/* Writing a raw capture (--raw FILE) while recording: the records in the order they are
 * handled, then the build-ids of the binaries the samples touched and the run's settings.
 * The file appears whole at finish, or not at all. */
#ifndef HPROF_CAPTURE_WRITER_H
#define HPROF_CAPTURE_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "binary/ksyms.h"
#include "binary/modules.h"
#include "capture/format.h"

struct capture_writer;

/* Returns 0 or -errno after printing one line. */
int capture_writer__open(const char *path, struct capture_writer **out);
/* Each record is appended; the first write error is kept and reported by finish. */
void capture_writer__maps(struct capture_writer *w, uint32_t pid, const char *text, size_t len);
void capture_writer__sample(struct capture_writer *w, const struct hprof_sample *s, size_t len);
void capture_writer__map_event(struct capture_writer *w, const struct map_event *e,
			       const char *path);
/* JIT code read from process pid at addr (binary/code.h's hook). */
/* What hprof read of a CPython process's memory (capture/format.h CAPTURE_PYTHON_MEMORY). */
void capture_writer__python_memory(struct capture_writer *w, uint32_t pid, uint64_t addr,
				   const void *bytes, size_t len);
void capture_writer__code(struct capture_writer *w, uint32_t pid, uint64_t addr,
			  const uint8_t *bytes, size_t len);
/* Text read from process pid's perf map file (perf_map__set_read_hook). */
void capture_writer__perf_map(struct capture_writer *w, uint32_t pid, const char *text,
			      size_t len);
/* Process pid's BEAM exit address, found (module_registry__set_beam_exit_hook). */
void capture_writer__beam_exit(struct capture_writer *w, uint32_t pid, uint64_t exit);
/* An object process pid registered through gdb's JIT interface, as read, and one it
 * unregistered (gdb_jit__set_hooks). */
void capture_writer__gdb_jit_object(struct capture_writer *w, uint32_t pid, uint64_t addr,
				    const uint8_t *bytes, size_t len);
void capture_writer__gdb_jit_drop(struct capture_writer *w, uint32_t pid, uint64_t addr,
				  uint64_t size);
/* Bytes read from process pid's jitdump file at offset (jitdump__set_read_hook). */
void capture_writer__jitdump(struct capture_writer *w, uint32_t pid, uint64_t offset,
			     const uint8_t *bytes, size_t len);
/* Appends the kernel functions the samples ran in as ksyms names them (NULL: none known),
 * the build-ids of reg's binaries and info, then puts the file in place. Returns 0 or
 * -errno after printing one line; the writer is freed either way. */
int capture_writer__finish(struct capture_writer *w, struct module_registry *reg,
			   const struct ksyms *ksyms, const struct capture_info *info);
/* Drops an unfinished capture: nothing is left behind. */
void capture_writer__free(struct capture_writer *w);

#endif
