/* What hprof reads of a Go binary for the kernel (go/layout.h): the input is the ELF image.
 * Its build info's version, the layout table and g's TLS slot are read. */
#include <stdint.h>

#include "go/layout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hprof_go_proc p;
	char version[32];

	go_layout__from_image(data, size, &p, version, sizeof(version));
	return 0;
}
