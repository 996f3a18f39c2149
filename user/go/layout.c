#include "go/layout.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <string.h>

#include "util/file_view.h"

static const char *const reason_names[GO_LAYOUT_REASON_COUNT] = {
	[GO_LAYOUT_OK] = "read",
	[GO_LAYOUT_NOT_GO] = "not Go",
	[GO_LAYOUT_NO_VERSION] = "no Go version in its build info",
	[GO_LAYOUT_UNKNOWN_VERSION] = "Go version without a layout table",
	[GO_LAYOUT_TLS_UNKNOWN] = "g's TLS slot unknown (external linking without runtime.tlsg)",
};

const char *go_layout__reason_name(enum go_layout_reason r)
{
	return r < GO_LAYOUT_REASON_COUNT ? reason_names[r] : "?";
}

/* Go 1.17 to 1.23 (src/runtime/runtime2.go) lay out what the kernel reads alike: g starts
 * with stack {lo, hi}, stackguard0, stackguard1, _panic, _defer, m, sched; gobuf is sp,
 * pc, g, ctxt, ret, lr, bp; m starts with g0, morebuf (a gobuf), divmod, procid, gsignal,
 * goSigStack (40 bytes), sigmask (8), tls[6], mstartfn, curg. Checked against the DWARF of
 * the Go on the test machine by tests/t_go.sh. Later releases drop gobuf.ret (moving m.curg),
 * and earlier ones are not read (their .gopclntab is not either). */
#define GO_FIRST_MINOR 17
#define GO_LAST_MINOR 23

int go_layout__for_minor(uint32_t minor, struct hprof_go_proc *out)
{
	if (minor < GO_FIRST_MINOR || minor > GO_LAST_MINOR)
		return -ENOTSUP;
	*out = (struct hprof_go_proc){
		.g_m = 48,
		.g_sched = 56,
		.gobuf_bp = 48,
		.g_stack_hi = 8,
		.m_g0 = 0,
		.m_curg = 192,
	};
	return 0;
}

int go_layout__minor(const char *version, uint32_t *minor)
{
	uint32_t n = 0, digits = 0;

	if (strncmp(version, "go1.", 4) != 0)
		return -EINVAL;
	for (const char *p = version + 4; *p >= '0' && *p <= '9' && digits < 4; p++, digits++)
		n = n * 10 + (uint32_t)(*p - '0');
	if (digits == 0 || digits >= 4)
		return -EINVAL;
	*minor = n;
	return 0;
}

/* The ELF image and what reads of it need. */
struct image {
	const uint8_t *bytes;
	size_t size;
	Elf *elf;
};

/* The section holding vaddr..vaddr+len in the file: a pointer to its bytes, or NULL. */
static const uint8_t *at_vaddr(const struct image *im, uint64_t vaddr, uint64_t len)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(im->elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || vaddr < sh.sh_addr ||
		    vaddr - sh.sh_addr > sh.sh_size || len > sh.sh_size - (vaddr - sh.sh_addr))
			continue;
		if (sh.sh_offset > im->size || sh.sh_size > im->size - sh.sh_offset)
			return NULL;
		return im->bytes + sh.sh_offset + (vaddr - sh.sh_addr);
	}
	return NULL;
}

static bool section_named(const struct image *im, const char *name, GElf_Shdr *out)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(im->elf, &shstrndx) != 0)
		return false;
	while ((scn = elf_nextscn(im->elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, out) || !(n = elf_strptr(im->elf, shstrndx, out->sh_name)))
			continue;
		if (strcmp(n, name) == 0)
			return out->sh_type != SHT_NOBITS && out->sh_offset <= im->size &&
			       out->sh_size <= im->size - out->sh_offset;
	}
	return false;
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

#define BUILDINFO_MAGIC "\xff Go buildinf:"
#define BUILDINFO_HEADER 32
#define BUILDINFO_INLINE 0x2 /* flags: the strings follow the header (Go 1.18+) */

/* Copies len bytes of a version string, which must look like one. */
static bool take_version(const uint8_t *p, uint64_t len, char *out, size_t out_size)
{
	if (len < 5 || len >= out_size)
		return false;
	for (uint64_t i = 0; i < len; i++)
		if (p[i] < 0x21 || p[i] > 0x7e)
			return false;
	memcpy(out, p, len);
	out[len] = 0;
	return true;
}

/* The version in the build info (cmd/go/internal/version, debug/buildinfo): from Go 1.18
 * a varint-prefixed string right after the 32-byte header; before, a pointer to a Go
 * string header {data, len} in the image. */
static bool buildinfo_version(const struct image *im, char *out, size_t out_size)
{
	GElf_Shdr sh;
	const uint8_t *bi, *str;
	uint64_t len = 0, data;
	unsigned shift = 0;
	size_t at = BUILDINFO_HEADER;

	if (!section_named(im, ".go.buildinfo", &sh) || sh.sh_size < BUILDINFO_HEADER)
		return false;
	bi = im->bytes + sh.sh_offset;
	if (memcmp(bi, BUILDINFO_MAGIC, 14) != 0 || bi[14] != 8)
		return false;
	if (bi[15] & BUILDINFO_INLINE) {
		for (;; at++) {
			if (at >= sh.sh_size || shift > 28)
				return false;
			len |= (uint64_t)(bi[at] & 0x7f) << shift;
			shift += 7;
			if (!(bi[at] & 0x80))
				break;
		}
		at++;
		return len <= sh.sh_size - at && take_version(bi + at, len, out, out_size);
	}
	str = at_vaddr(im, le64(bi + 16), 16);
	if (!str)
		return false;
	data = le64(str);
	len = le64(str + 8);
	return len < out_size && (str = at_vaddr(im, data, len)) &&
	       take_version(str, len, out, out_size);
}

static bool tls_segment(const struct image *im, GElf_Phdr *out)
{
	size_t n;

	if (elf_getphdrnum(im->elf, &n) != 0)
		return false;
	for (size_t i = 0; i < n && i < 256; i++)
		if (gelf_getphdr(im->elf, (int)i, out) && out->p_type == PT_TLS)
			return true;
	return false;
}

/* runtime.tlsg's offset in the TLS segment, from .symtab. */
static bool tlsg_offset(const struct image *im, uint64_t *value)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(im->elf, scn))) {
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || sh.sh_entsize == 0 ||
		    !(data = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < data->d_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(data, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_TLS)
				continue;
			name = elf_strptr(im->elf, sh.sh_link, sym.st_name);
			if (name && strcmp(name, "runtime.tlsg") == 0) {
				*value = sym.st_value;
				return true;
			}
		}
	}
	return false;
}

/* The current g's slot from the fs base. Without cgo, Go's runtime points fs at each m's
 * own tls array itself (runtime.settls), g at -8, and a static binary may have no TLS
 * segment at all. With cgo the C library sets fs, and the executable's TLS block ends at
 * the thread pointer (x86-64's variant II), rounded up to its alignment: Go's own linker
 * makes the block runtime.tlsg alone (8 bytes: g at -8 again); a system linker may add
 * C's thread-locals, and the slot is where it put runtime.tlsg. */
static enum go_layout_reason tls_slot(const struct image *im, int32_t *slot)
{
	GElf_Phdr tls;
	uint64_t align, block, tlsg;

	if (!tls_segment(im, &tls)) {
		*slot = -8;
		return GO_LAYOUT_OK;
	}
	align = tls.p_align ? tls.p_align : 1;
	if (align & (align - 1) || tls.p_memsz > 1 << 20 || align > 1 << 12)
		return GO_LAYOUT_TLS_UNKNOWN;
	block = (tls.p_memsz + align - 1) & ~(align - 1);
	if (tls.p_memsz == 8) {
		*slot = -(int32_t)block;
		return GO_LAYOUT_OK;
	}
	if (!tlsg_offset(im, &tlsg) || tlsg > tls.p_memsz - 8)
		return GO_LAYOUT_TLS_UNKNOWN;
	*slot = (int32_t)tlsg - (int32_t)block;
	return GO_LAYOUT_OK;
}

enum go_layout_reason go_layout__from_image(const uint8_t *image, size_t size,
					    struct hprof_go_proc *out, char *version,
					    size_t version_size)
{
	struct image im = { .bytes = image, .size = size };
	enum go_layout_reason r;
	GElf_Shdr sh;
	uint32_t minor;

	version[0] = 0;
	elf_version(EV_CURRENT);
	im.elf = elf_memory((char *)image, size);
	if (!im.elf)
		return GO_LAYOUT_NOT_GO;
	memset(out, 0, sizeof(*out));
	if (elf_kind(im.elf) != ELF_K_ELF || !section_named(&im, ".go.buildinfo", &sh))
		r = GO_LAYOUT_NOT_GO;
	else if (!buildinfo_version(&im, version, version_size) ||
		 go_layout__minor(version, &minor) != 0)
		r = GO_LAYOUT_NO_VERSION;
	else if (go_layout__for_minor(minor, out) != 0)
		r = GO_LAYOUT_UNKNOWN_VERSION;
	else
		r = tls_slot(&im, &out->tls_g);
	elf_end(im.elf);
	return r;
}

/* Go binaries run to hundreds of MiB (their DWARF); the build info is near the start. */
#define GO_FILE_MAX (4ull << 30)

enum go_layout_reason go_layout__from_file(const char *path, struct hprof_go_proc *out,
					   char *version, size_t version_size)
{
	enum go_layout_reason r = GO_LAYOUT_NOT_GO;
	struct file_view *view;
	char err[128];

	version[0] = 0;
	/* the view survives a file truncated under it (a page of zeros, and changed) */
	if (file_view__open(path, GO_FILE_MAX, &view, err, sizeof(err)) != 0)
		return r;
	r = go_layout__from_image(file_view__data(view), file_view__size(view), out, version,
				  version_size);
	if (file_view__changed(view))
		r = GO_LAYOUT_NOT_GO;
	file_view__close(view);
	return r;
}
