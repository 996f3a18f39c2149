/* Delta copies: a copy to the thread's learned base sends only the chunks that changed
 * since the thread's last copy the ring buffer accepted (common/sample.h). Included by
 * hprof.bpf.c, after stack_copy.bpf.h. */
#ifndef HPROF_STACK_DELTA_BPF_H
#define HPROF_STACK_DELTA_BPF_H


/* What the kernel keeps of a thread's last accepted copy (BPF array delta_states, at the
 * slot of its tid). An array rather than a hash by tid: its lookup is an address, where a
 * hash's costs cache misses on every sample. Userspace zeroes a slot to have its thread's
 * next copy sent whole. Every value in it may be stale or torn (two threads on a slot,
 * userspace's writes): it decides nothing but which chunks to leave out, and a chunk's hash
 * matches only one of the same thread (the seed), copy (the key) and bytes. */
struct delta_state {
	__u64 seq;        /* that copy's number; 0: none */
	__u64 end;        /* where it ended (the learned base): chunks are counted down from it */
	__u32 tid;        /* the thread it belongs to, */
	__u32 since_full; /* deltas sent since the last whole copy */
	__u64 start_time; /* and that thread's start time (a later one may get its tid) */
	__u64 hashes[HPROF_DELTA_MAX_CHUNKS]; /* chunk i's hash, mixed with seq (chunk_key) */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HPROF_DELTA_SLOTS);
	__type(key, __u32);
	__type(value, struct delta_state);
} delta_states SEC(".maps");

/* Per-CPU room for one delta: the live stack read whole, the map of chunks sent, what the
 * thread's slot takes once the record is accepted, and where the pass over the chunks is
 * (here rather than in its context on the stack, where the verifier would follow every
 * value it takes and never see the loop's states converge). */
struct delta_work {
	/* a chunk is hashed as 64 bytes from its start, also the short one at sp */
	__u8 image[HPROF_MAX_STACK_COPY + HPROF_DELTA_CHUNK];
	__u64 sent[HPROF_DELTA_MAP_WORDS];
	__u64 seq;
	__u64 end;
	__u64 start_time;     /* the thread's */
	__u32 since_full;
	__u64 pos;            /* payload bytes written */
	__u64 run_lo, run_hi; /* image bytes [run_lo, run_hi) still to be written */
	__u32 failed;         /* 0 or 1 */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* the CPU count, set at load time */
	__type(key, __u32);
	__type(value, struct delta_work);
} delta_work SEC(".maps");

/* Powers of two: the verifier must see every index masked within its array. */
_Static_assert((HPROF_MAX_STACK_COPY & (HPROF_MAX_STACK_COPY - 1)) == 0, "image index mask");
_Static_assert((HPROF_DELTA_MAX_CHUNKS & (HPROF_DELTA_MAX_CHUNKS - 1)) == 0, "hash index mask");
_Static_assert((HPROF_DELTA_MAP_WORDS & (HPROF_DELTA_MAP_WORDS - 1)) == 0, "map index mask");
_Static_assert(HPROF_DELTA_CHUNK == 8 * 8, "a chunk is hashed as eight words");

#define PRIME64_1 0x9E3779B185EBCA87ull
#define PRIME64_2 0xC2B2AE3D27D4EB4Full
#define PRIME64_3 0x165667B19E3779F9ull
#define PRIME64_5 0x27D4EB2F165667C5ull

static __always_inline __u64 rotl64(__u64 x, int r)
{
	return (x << r) | (x >> (64 - r));
}

/* XXH64's finishing mix: every input bit reaches every output bit. */
static __always_inline __u64 avalanche(__u64 h)
{
	h ^= h >> 33;
	h *= PRIME64_2;
	h ^= h >> 29;
	h *= PRIME64_3;
	h ^= h >> 32;
	return h;
}

/* What a stored chunk hash is mixed with: the number of the copy it belongs to, so that a
 * hash kept for one copy never matches when compared for another (a state torn by an LRU
 * slot changing hands, a sequence started again). */
static __always_inline __u64 chunk_key(__u64 seq)
{
	return avalanche(seq ^ delta_secret);
}

/* One pass over the tracked chunks, lowest address first: what stays the same throughout. */
struct delta_pass {
	struct delta_work *w;
	struct scratch *rec;
	struct delta_state *slot; /* the thread's: compared against when compare, and given
				   * this copy's hashes in place */
	__u64 seed;      /* the run's secret and the tid */
	__u64 prev_key;  /* chunk_key of the copy compared against */
	__u64 next_key;  /* chunk_key of this copy */
	__u64 full_len;
	__u64 payload;   /* offset of the payload in rec */
	__u32 nr_chunks;
	bool compare;    /* against prev; else every chunk is sent */
};

/* Writes the pending run of image bytes to the payload. */
static __always_inline void flush_run(const struct delta_pass *p)
{
	struct delta_work *w = p->w;
	__u64 len = w->run_hi - w->run_lo, lo = w->run_lo, at = p->payload + w->pos;

	w->run_lo = w->run_hi;
	barrier_var(len);
	if (len == 0)
		return;
	if (len > HPROF_MAX_STACK_COPY || lo > HPROF_MAX_STACK_COPY ||
	    at > SCRATCH_SIZE - HPROF_MAX_STACK_COPY) {
		w->failed = 1;
		return;
	}
	if (bpf_probe_read_kernel(p->rec->buf + at, len, w->image + lo))
		w->failed = 1;
	w->pos += len;
}

/* Hash of chunk i, [lo, hi) of the image: the 64 bytes from lo (for the short chunk at sp,
 * bytes of the next one too: more than it holds, so no change of its own goes unseen),
 * its length and its place, seeded with the run's secret and the tid. Four lanes of two
 * words, each word xor-multiplied in (one multiplication: a bijection of the lane, so a
 * change within one lane always changes the hash), then summed. Hashes are only compared
 * for equality: no finishing mix, which is a bijection, would make them collide less. */
static __always_inline __u64 hash_chunk(const struct delta_pass *p, __u32 i, __u64 lo, __u64 hi)
{
	const __u64 *v = (const __u64 *)(p->w->image + (lo & (HPROF_MAX_STACK_COPY - 1)));
	__u64 seed = p->seed + ((hi - lo) | ((__u64)i << 8)) * PRIME64_3;
	__u64 a = seed + PRIME64_1, b = seed + PRIME64_2, c = seed + PRIME64_3, d = seed + PRIME64_5;

	a = rotl64((a ^ v[0]) * PRIME64_1, 29);
	b = rotl64((b ^ v[1]) * PRIME64_2, 29);
	c = rotl64((c ^ v[2]) * PRIME64_1, 29);
	d = rotl64((d ^ v[3]) * PRIME64_2, 29);
	a = (a ^ v[4]) * PRIME64_2;
	b = (b ^ v[5]) * PRIME64_1;
	c = (c ^ v[6]) * PRIME64_2;
	d = (d ^ v[7]) * PRIME64_1;
	return a + rotl64(b, 16) + rotl64(c, 32) + rotl64(d, 48);
}

/* Chunk i, hashed, compared, sent when it changed; its hash replaces the one compared in
 * the slot (no copy of the hashes staged and moved after: the slot is the cache lines a
 * sample touches, and its seq, 0 until the record is accepted, says no copy's hashes are
 * whole there). Non-zero to stop. */
static __always_inline long delta_chunk(const struct delta_pass *p, __u32 i)
{
	struct delta_work *w = p->w;
	__u64 lo, hi, h;
	bool changed;

	i &= HPROF_DELTA_MAX_CHUNKS - 1;
	hi = hprof_delta__chunk(p->full_len, i, &lo);
	if (hi > HPROF_MAX_STACK_COPY || lo >= hi) {
		w->failed = 1;
		return 1;
	}
	h = hash_chunk(p, i, lo, hi);
	changed = !p->compare || p->slot->hashes[i] != (h ^ p->prev_key);
	p->slot->hashes[i] = h ^ p->next_key;
	if (changed) {
		w->sent[(i >> 6) & (HPROF_DELTA_MAP_WORDS - 1)] |= 1ull << (i & 63);
		if (w->run_hi != lo)
			flush_run(p);
		if (w->run_lo == w->run_hi)
			w->run_lo = lo;
		w->run_hi = hi;
	} else {
		flush_run(p);
	}
	return w->failed & 1;
}

/* Chunks taken by one bpf_loop step: the loop's call and the pass's loads, once for them. */
#define DELTA_CHUNKS_PER_STEP 4

/* bpf_loop step k: chunks nr_chunks - 1 - DELTA_CHUNKS_PER_STEP * k and down, lowest
 * address first. */
static long delta_chunks(__u64 k, void *ctx)
{
	const struct delta_pass *p = ctx;
	__u32 first = (__u32)k * DELTA_CHUNKS_PER_STEP, n = p->nr_chunks;

	for (int j = 0; j < DELTA_CHUNKS_PER_STEP; j++) {
		if (first + j >= n || delta_chunk(p, n - 1 - (first + j)))
			return 1;
	}
	return 0;
}

/* A new sequence for a thread: random, so that numbers of different lives of a tid (and of
 * states lost in between) do not meet; below 2^63, so that it never wraps to 0. */
static __always_inline __u64 new_sequence(void)
{
	__u64 seq = ((__u64)bpf_get_prandom_u32() << 32) | bpf_get_prandom_u32();

	return (seq >> 1) | 1;
}

/* Whether a copy ending at end may be a delta against the thread's state. */
static __always_inline bool delta_base_usable(const struct delta_state *state, __u32 tid,
					      __u64 start_time, __u64 end)
{
	return state && state->tid == tid && state->start_time == start_time &&
	       state->end == end && state->seq != 0 &&
	       state->since_full + 1 < HPROF_DELTA_FULL_EVERY;
}

/* Writes the delta header, its map and payload (and with delta_verify the whole image)
 * at rec offset hdr_at, for a copy of full_len bytes already in w->image, against the
 * thread's slot when compare; the slot holds no copy (seq 0) until commit_stack_delta.
 * Returns the stack region's length, 0 on failure. */
static __always_inline __u64 encode_delta(struct delta_work *w, struct scratch *rec,
					  __u32 tid, __u64 hdr_at, __u64 full_len,
					  struct delta_state *slot, bool compare)
{
	struct delta_state *prev = compare ? slot : NULL;
	__u64 prev_seq = prev ? prev->seq : 0;
	__u32 prev_since_full = prev ? prev->since_full : 0;
	struct hprof_stack_delta hdr = {
		.seq = prev ? prev_seq + 1 : new_sequence(),
		.base_seq = prev_seq,
		.full_len = full_len,
		.nr_chunks = hprof_delta__nr_chunks(full_len),
		.flags = delta_verify ? HPROF_DELTA_VERIFY : 0,
	};
	__u64 map_len = prev ? hprof_delta__map_words(hdr.nr_chunks) * 8 : 0;
	const struct delta_pass p = {
		.w = w, .rec = rec, .slot = slot, .compare = compare,
		.full_len = full_len, .nr_chunks = hdr.nr_chunks,
		.seed = delta_secret ^ ((__u64)tid * PRIME64_1),
		.prev_key = chunk_key(prev_seq), .next_key = chunk_key(hdr.seq),
		.payload = hdr_at + sizeof(hdr) + map_len,
	};
	__u64 len, pos;

	if (hdr_at > SCRATCH_SIZE - HPROF_MAX_STACK_WIRE || hdr.nr_chunks == 0 ||
	    hdr.nr_chunks > HPROF_DELTA_MAX_CHUNKS)
		return 0;
	/* before its first hash changes: a copy compared against the slot from now on (of
	 * another thread on the same slot, or this one's should this record be lost) finds
	 * nothing the same */
	slot->seq = 0;
	__builtin_memset(w->sent, 0, sizeof(w->sent));
	w->pos = 0;
	w->run_lo = 0;
	w->run_hi = hprof_delta__untracked(full_len); /* below the tracked chunks: always sent */
	w->failed = 0;
	bpf_loop((hdr.nr_chunks + DELTA_CHUNKS_PER_STEP - 1) / DELTA_CHUNKS_PER_STEP, delta_chunks,
		 (void *)&p, 0);
	flush_run(&p);
	pos = w->pos;
	if (w->failed || pos > HPROF_MAX_STACK_COPY)
		return 0;
	__builtin_memcpy(rec->buf + hdr_at, &hdr, sizeof(hdr));
	barrier_var(map_len);
	if (map_len > sizeof(w->sent))
		return 0;
	if (map_len && bpf_probe_read_kernel(rec->buf + hdr_at + sizeof(hdr), map_len, w->sent))
		return 0;
	len = sizeof(hdr) + map_len + pos;
	if (delta_verify) {
		barrier_var(full_len);
		if (full_len == 0 || full_len > HPROF_MAX_STACK_COPY ||
		    bpf_probe_read_kernel(rec->buf + p.payload + pos, full_len, w->image))
			return 0;
		len += full_len;
	}
	w->seq = hdr.seq;
	w->since_full = prev ? prev_since_full + 1 : 0;
	return len;
}

/* A copy to the thread's learned base, sent as a delta against the thread's last accepted
 * copy when there is one to the same base (else whole, starting a new sequence). False
 * when deltas are off, sp is not below the learned base within the ceiling, or the stack
 * could not be read in one go: the plain copy then does what it does. *slot: the
 * thread's, for commit_stack_delta. */
static __always_inline bool copy_stack_delta(struct hprof_sample *s, struct scratch *rec,
					     __u64 off, const struct hprof_thread_stack *known,
					     struct delta_state **slot)
{
	__u32 cpu = bpf_get_smp_processor_id(), index = hprof_delta__slot(s->tid);
	struct delta_state *found;
	struct delta_work *w;
	__u64 want, len;

	if (!delta_copies || !within_learned_base(s->user_sp, known, copy_ceiling()))
		return false;
	w = bpf_map_lookup_elem(&delta_work, &cpu);
	if (!w)
		return false;
	want = words_up_to(s->user_sp, known->base);
	barrier_var(want);
	if (want == 0 || want > HPROF_MAX_STACK_COPY)
		return false;
	if (bpf_probe_read_user(w->image, want, (void *)s->user_sp))
		return false;
	w->end = s->user_sp + want;
	found = bpf_map_lookup_elem(&delta_states, &index);
	if (!found)
		return false;
	*slot = found;
	w->start_time = known->start_time;
	len = encode_delta(w, rec, s->tid, sizeof(*s) + off, want, found,
			   delta_base_usable(found, s->tid, w->start_time, w->end));
	if (len == 0)
		return false;
	s->flags |= SAMPLE_COPY_LEARNED | SAMPLE_STACK_DELTA;
	count(KC_COPY_LEARNED);
	s->stack_len = len;
	return true;
}

/* Once the ring buffer took the record: the thread's slot, which holds this copy's hashes
 * (those of its chunks only; those beyond belong to no copy of this number, and never
 * match), says which copy they are. */
static __always_inline void commit_stack_delta(__u32 tid, struct delta_state *slot)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct delta_work *w = bpf_map_lookup_elem(&delta_work, &cpu);

	if (!w || !slot)
		return;
	/* seq last: until then, a copy compared against the slot finds nothing the same */
	slot->seq = 0;
	slot->end = w->end;
	slot->tid = tid;
	slot->start_time = w->start_time;
	slot->since_full = w->since_full;
	slot->seq = w->seq;
}


#endif
