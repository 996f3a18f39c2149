/* capgrep [--user] CAPTURE STRING: which samples of a raw capture (hprof --raw) carry STRING
 * in the user memory they copied (the stack copy or the window at the FP chain's end), for
 * tests/t_stackcopy.sh; with --user, only samples that interrupted user mode. Prints one
 * "COMM SAMPLES" line per command name with such samples, then "capgrep: samples N matched
 * M". Exits 2 on bad usage or an unreadable capture. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "walkers.h"

struct comm_count {
	char comm[HPROF_COMM_LEN + 1];
	unsigned long count;
	UT_hash_handle hh;
};

int main(int argc, char **argv)
{
	struct comm_count *counts = NULL, *c, *tmp;
	struct capture_file *cap;
	unsigned long samples = 0, matched = 0;
	char msg[512] = "";
	bool user_only = argc > 1 && strcmp(argv[1], "--user") == 0;
	size_t needle_len;
	int err;

	argc -= user_only;
	argv += user_only;
	if (argc != 3 || !(needle_len = strlen(argv[2]))) {
		fprintf(stderr, "usage: capgrep [--user] CAPTURE STRING\n");
		return 2;
	}
	err = capture_file__load(argv[1], &cap, msg, sizeof(msg));
	if (err) {
		fprintf(stderr, "capgrep: %s\n", msg[0] ? msg : strerror(-err));
		return 2;
	}
	for (size_t i = 0; i < cap->nr_recs; i++) {
		const struct hprof_sample *s = capture_rec__sample(&cap->recs[i]);
		char comm[HPROF_COMM_LEN + 1] = { 0 };

		if (!s || !hprof_sample__well_formed(s, cap->recs[i].len) ||
		    (user_only && (s->flags & SAMPLE_IN_KERNEL)))
			continue;
		samples++;
		if (!memmem(hprof_sample__stack(s), hprof_sample__user_memory_len(s), argv[2],
			    needle_len))
			continue;
		matched++;
		memcpy(comm, s->comm, HPROF_COMM_LEN);
		HASH_FIND_STR(counts, comm, c);
		if (!c) {
			c = calloc(1, sizeof(*c));
			if (!c) {
				err = -ENOMEM;
				break;
			}
			memcpy(c->comm, comm, sizeof(c->comm));
			HASH_ADD_STR(counts, comm, c);
		}
		c->count++;
	}
	HASH_ITER(hh, counts, c, tmp) {
		printf("%s %lu\n", c->comm, c->count);
		HASH_DEL(counts, c);
		free(c);
	}
	capture_file__free(cap);
	if (err) {
		fprintf(stderr, "capgrep: %s\n", strerror(-err));
		return 2;
	}
	printf("capgrep: samples %lu matched %lu\n", samples, matched);
	return 0;
}
