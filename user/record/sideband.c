#include "record/sideband.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Data pages per CPU: 256 KiB holds some seconds of a busy machine's mapping changes;
 * hprof drains them every poll (half a second at most). */
#define SIDEBAND_DATA_PAGES 64

struct cpu_buffer {
	int fd;
	void *base; /* the control page, then the data pages */
	size_t data_size;
};

struct sideband {
	struct cpu_buffer *cpus;
	int nr;
	uint64_t lost;
	uint8_t *record; /* one record, reassembled when it wraps around the buffer */
};

/* The fields perf appends to every record when sample_id_all is set, for the sample_type
 * below: pid and tid, then the time. */
struct sample_id {
	uint32_t pid, tid;
	uint64_t time;
};

static int open_cpu(int cpu)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_DUMMY,
		.size = sizeof(attr),
		.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME,
		.sample_id_all = 1,
		.mmap = 1,
		.mmap2 = 1,
		.comm = 1,
		.comm_exec = 1,
		.task = 1,
		.use_clockid = 1,
		.clockid = CLOCK_MONOTONIC,
	};

	return (int)syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

int sideband__open(struct sideband **out, char *err, size_t errlen)
{
	long nr_cpus = sysconf(_SC_NPROCESSORS_CONF), page = sysconf(_SC_PAGESIZE);
	struct sideband *sb = calloc(1, sizeof(*sb));
	int ret = 0;

	*out = NULL;
	if (!sb || nr_cpus <= 0 || !(sb->cpus = calloc(nr_cpus, sizeof(*sb->cpus))) ||
	    !(sb->record = malloc(UINT16_MAX + 1))) {
		ret = -ENOMEM;
		goto cleanup;
	}
	for (int cpu = 0; cpu < nr_cpus; cpu++) {
		struct cpu_buffer *b = &sb->cpus[sb->nr];
		size_t size = (size_t)page * (1 + SIDEBAND_DATA_PAGES);

		b->fd = open_cpu(cpu);
		if (b->fd < 0) {
			if (errno == ENODEV)
				continue; /* offline CPU */
			ret = -errno;
			snprintf(err, errlen, "perf_event_open(mapping events) failed on CPU %d: %s",
				 cpu, strerror(errno));
			goto cleanup;
		}
		b->base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, b->fd, 0);
		if (b->base == MAP_FAILED) {
			ret = -errno;
			snprintf(err, errlen, "cannot map the mapping events' buffer of CPU %d: %s",
				 cpu, strerror(errno));
			close(b->fd);
			goto cleanup;
		}
		b->data_size = (size_t)page * SIDEBAND_DATA_PAGES;
		sb->nr++;
	}
	*out = sb;
	return 0;
cleanup:
	if (ret == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	sideband__free(sb);
	return ret;
}

void sideband__free(struct sideband *sb)
{
	long page = sysconf(_SC_PAGESIZE);

	if (!sb)
		return;
	for (int i = 0; i < sb->nr; i++) {
		munmap(sb->cpus[i].base, sb->cpus[i].data_size + page);
		close(sb->cpus[i].fd);
	}
	free(sb->cpus);
	free(sb->record);
	free(sb);
}

uint64_t sideband__lost(const struct sideband *sb)
{
	return sb ? sb->lost : 0;
}

static bool read_sample_id(const uint8_t *rec, size_t size, size_t body, struct sample_id *id)
{
	if (size < body + sizeof(*id))
		return false;
	memcpy(id, rec + size - sizeof(*id), sizeof(*id));
	return true;
}

/* PERF_RECORD_MMAP2: pid, tid, addr, len, pgoff, maj, min, ino, ino_generation, prot,
 * flags, filename, then the sample id. */
static int decode_mmap2(struct sideband *sb, const uint8_t *rec, size_t size,
			sideband_event_fn fn, void *ctx)
{
	struct {
		uint32_t pid, tid;
		uint64_t addr, len, pgoff;
		uint32_t maj, min;
		uint64_t ino, ino_generation;
		uint32_t prot, flags;
	} body;
	const size_t at = sizeof(struct perf_event_header);
	struct map_event e = { .type = MAP_EVENT_MMAP };
	struct sample_id id;
	const char *name;
	size_t name_max;

	(void)sb;
	if (!read_sample_id(rec, size, at + sizeof(body), &id))
		return 0;
	memcpy(&body, rec + at, sizeof(body));
	name = (const char *)rec + at + sizeof(body);
	name_max = size - at - sizeof(body) - sizeof(id);
	if (!memchr(name, '\0', name_max))
		return 0; /* not terminated: not a record this reader understands */
	e.time_ns = id.time;
	e.pid = body.pid;
	e.start = body.addr;
	e.len = body.len;
	e.pgoff = body.pgoff;
	e.dev_major = body.maj;
	e.dev_minor = body.min;
	e.inode = body.ino;
	e.prot = body.prot;
	/* Anonymous memory is "//anon"; other names in brackets are the kernel's ([vdso]). */
	return fn(ctx, &e, strcmp(name, "//anon") == 0 ? "" : name);
}

static int decode_comm(const uint8_t *rec, size_t size, uint16_t misc, sideband_event_fn fn,
		       void *ctx)
{
	const size_t at = sizeof(struct perf_event_header);
	struct map_event e = { .type = MAP_EVENT_EXEC };
	uint32_t pid_tid[2];
	struct sample_id id;
	size_t name_max;

	/* A thread's new name is not an exec. */
	if (!(misc & PERF_RECORD_MISC_COMM_EXEC) || !read_sample_id(rec, size, at + 8, &id))
		return 0;
	memcpy(pid_tid, rec + at, sizeof(pid_tid));
	name_max = size - at - 8 - sizeof(id);
	memcpy(e.comm, rec + at + 8, name_max < sizeof(e.comm) ? name_max : sizeof(e.comm));
	e.comm[sizeof(e.comm) - 1] = '\0';
	e.time_ns = id.time;
	e.pid = pid_tid[0];
	return fn(ctx, &e, "");
}

/* PERF_RECORD_FORK and PERF_RECORD_EXIT: pid, ppid, tid, ptid, time. A new thread shares
 * its process's mappings: only its exit is passed on, as a mapping event (what walks
 * learned about it is dropped, in time order). */
static int decode_task(const uint8_t *rec, size_t size, uint32_t type,
		       sideband_event_fn fn, void *ctx)
{
	struct {
		uint32_t pid, ppid, tid, ptid;
		uint64_t time;
	} body;
	const size_t at = sizeof(struct perf_event_header);
	struct map_event e = { 0 };

	if (size < at + sizeof(body))
		return 0;
	memcpy(&body, rec + at, sizeof(body));
	e.time_ns = body.time;
	e.pid = body.pid;
	if (body.pid != body.tid) {
		if (type != PERF_RECORD_EXIT)
			return 0;
		e.type = MAP_EVENT_THREAD_EXIT;
		e.tid = body.tid;
		return fn(ctx, &e, "");
	}
	if (type == PERF_RECORD_FORK && body.pid == body.ppid)
		return 0;
	e.type = type == PERF_RECORD_FORK ? MAP_EVENT_FORK : MAP_EVENT_EXIT;
	e.ppid = body.ppid;
	return fn(ctx, &e, "");
}

static int decode(struct sideband *sb, const uint8_t *rec, size_t size, sideband_event_fn fn,
		  void *ctx)
{
	struct perf_event_header h;
	uint64_t lost[2];

	memcpy(&h, rec, sizeof(h));
	switch (h.type) {
	case PERF_RECORD_MMAP2:
		return decode_mmap2(sb, rec, size, fn, ctx);
	case PERF_RECORD_COMM:
		return decode_comm(rec, size, h.misc, fn, ctx);
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		return decode_task(rec, size, h.type, fn, ctx);
	case PERF_RECORD_LOST:
		if (size >= sizeof(h) + sizeof(lost)) {
			memcpy(lost, rec + sizeof(h), sizeof(lost));
			sb->lost += lost[1];
		}
		return 0;
	}
	return 0;
}

static int drain_cpu(struct sideband *sb, struct cpu_buffer *b, sideband_event_fn fn, void *ctx)
{
	struct perf_event_mmap_page *meta = b->base;
	const uint8_t *data = (const uint8_t *)b->base + sysconf(_SC_PAGESIZE);
	uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = meta->data_tail;
	int err = 0;

	while (tail < head && !err) {
		struct perf_event_header h;
		size_t off = tail % b->data_size, first;

		if (head - tail < sizeof(h))
			break;
		/* The header itself may wrap: reassemble it too. */
		first = b->data_size - off < sizeof(h) ? b->data_size - off : sizeof(h);
		memcpy(&h, data + off, first);
		memcpy((uint8_t *)&h + first, data, sizeof(h) - first);
		if (h.size < sizeof(h) || h.size > head - tail)
			break; /* torn or corrupt: stop here rather than misread */
		first = b->data_size - off < h.size ? b->data_size - off : h.size;
		memcpy(sb->record, data + off, first);
		memcpy(sb->record + first, data, h.size - first);
		err = decode(sb, sb->record, h.size, fn, ctx);
		tail += h.size;
	}
	__atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
	return err;
}

int sideband__drain(struct sideband *sb, sideband_event_fn fn, void *ctx)
{
	for (int i = 0; i < sb->nr; i++) {
		int err = drain_cpu(sb, &sb->cpus[i], fn, ctx);

		if (err)
			return err;
	}
	return 0;
}
