/* Delta copies' rebuild (user/record/stack_delta.c): a run of ring buffer records, each
 * after its length (2 bytes, little-endian), rebuilt in turn against the images the
 * earlier ones left, with caps small enough to evict; a record's last byte, when it is 0xff,
 * first forgets its thread as an exit would. Every record handed on that is well formed has
 * its stack and tail read whole. */
#include <stdint.h>
#include <string.h>

#include "record/stack_delta.h"

static void no_resend(void *ctx, uint32_t tid)
{
	(void)ctx;
	(void)tid;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t rec[HPROF_SAMPLE_MAX_WIRE_SIZE];
	struct stack_delta *d;
	volatile uint8_t sink = 0;

	if (stack_delta__new(3, 4096, &d))
		return 0;
	stack_delta__set_resend_hook(d, no_resend, NULL);
	while (size >= 2) {
		size_t len = data[0] | (size_t)data[1] << 8, out_size;
		const struct hprof_sample *out;
		const void *got;

		data += 2;
		size -= 2;
		if (len > size)
			len = size;
		/* a copy of its own: the rebuild must not read past the record's end */
		memcpy(rec, data, len);
		if (len >= sizeof(struct hprof_sample) && data[len - 1] == 0xff)
			stack_delta__forget(d, ((const struct hprof_sample *)rec)->tid);
		if (stack_delta__rebuild(d, rec, len, &got, &out_size))
			break;
		out = got;
		if (hprof_sample__well_formed(out, out_size)) {
			for (uint32_t i = 0; i < out->stack_len; i++)
				sink ^= hprof_sample__stack(out)[i];
			for (uint32_t i = 0; i < out->tail_len; i++)
				sink ^= hprof_sample__tail(out)[i];
		}
		data += len;
		size -= len;
	}
	(void)sink;
	stack_delta__free(d);
	return 0;
}
