/* What the kernel needs to read a Go program's record of its stack switches (common/go.h):
 * the Go version a binary was built with (its build info, .go.buildinfo), the offsets of
 * runtime.g's and runtime.m's fields for that version, and where the current g lives in
 * the thread's TLS. The binary's bytes are hostile: every read is bounds-checked. */
#ifndef HPROF_GO_LAYOUT_H
#define HPROF_GO_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "go.h"

/* Why a Go binary's switches are not read; go_layout__reason_name names each. */
enum go_layout_reason {
	GO_LAYOUT_OK = 0,
	GO_LAYOUT_NOT_GO,          /* no .go.buildinfo: not a Go program */
	GO_LAYOUT_NO_VERSION,      /* its build info holds no version hprof can read */
	GO_LAYOUT_UNKNOWN_VERSION, /* a Go release whose runtime.g/m layout hprof has no table for */
	GO_LAYOUT_TLS_UNKNOWN,     /* externally linked (cgo) without runtime.tlsg: g's TLS slot unknown */
	GO_LAYOUT_REASON_COUNT,
};

const char *go_layout__reason_name(enum go_layout_reason r);

/* The offsets of the fields the kernel reads, for Go 1.minor (tls_g 0: the binary's, not
 * the version's). 0, or -ENOTSUP for a release without a table (before 1.17, after 1.23). */
int go_layout__for_minor(uint32_t minor, struct hprof_go_proc *out);

/* The minor release of a version string as runtime.buildVersion holds it ("go1.19.8" is
 * 19; "go1.21rc2" is 21). -EINVAL for anything else. */
int go_layout__minor(const char *version, uint32_t *minor);

/* Reads the ELF file at path: its Go version (into version, NUL-terminated) and the kernel's
 * offsets into out (tls_g included). Returns the reason it cannot be read, or GO_LAYOUT_OK. */
enum go_layout_reason go_layout__from_file(const char *path, struct hprof_go_proc *out,
					   char *version, size_t version_size);

/* The same over an ELF image in memory (size bytes), for tests and fuzzing. */
enum go_layout_reason go_layout__from_image(const uint8_t *image, size_t size,
					    struct hprof_go_proc *out, char *version,
					    size_t version_size);

#endif
