/* `hprof report CAPTURE`: unwinds and renders a raw capture (--raw) later, on the same
 * machine, with the same code a live recording uses. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "commands.h"
#include "modules.h"
#include "record.h"
#include "session.h"

struct recorded_build_id {
	const char *path;
	const uint8_t *id;
	uint32_t len;
};

struct report {
	struct output_opts out;
	bool no_dwarf;
	uint32_t stack_limit; /* --stack-size: replay as if copies had been this short; 0 = as recorded */
	uint8_t *scratch;     /* a sample's copy when stack_limit shortens it */
	const char *capture_path;
	struct capture_info info;
	struct recorded_build_id *build_ids;
	size_t nr_build_ids;
};

static void usage(FILE *out)
{
	fprintf(out, "Usage: hprof report CAPTURE [--svg FILE] [--folded FILE] [--no-dwarf]\n"
		     "                    [--stack-size BYTES]\n"
		     "Unwinds and renders the samples hprof --raw saved. With no output named,\n"
		     "folded stacks go to stdout. --no-dwarf replays frame pointers only;\n"
		     "--stack-size replays as if each stack copy had been at most BYTES long.\n");
}

/* Returns 0, 1 for --help, or -EINVAL. */
static int parse_args(int argc, char **argv, struct report *rep)
{
	static const struct option long_opts[] = {
		{ "svg", required_argument, NULL, 's' },
		{ "folded", required_argument, NULL, 'f' },
		{ "no-dwarf", no_argument, NULL, 'n' },
		{ "stack-size", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int opt;

	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			rep->out.svg_path = optarg;
			break;
		case 'f':
			rep->out.folded_path = optarg;
			break;
		case 'n':
			rep->no_dwarf = true;
			break;
		case 'S': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);

			if (*end || end == optarg || v == 0 || v > HPROF_MAX_STACK_COPY) {
				fprintf(stderr, "hprof: report: --stack-size takes 1 to %d bytes, got '%s'\n",
					HPROF_MAX_STACK_COPY, optarg);
				return -EINVAL;
			}
			rep->stack_limit = (uint32_t)v;
			break;
		}
		case 'h':
			usage(stdout);
			return 1;
		default:
			fprintf(stderr, "hprof: report: unknown option or missing value: '%s' (see hprof report --help)\n",
				argv[optind - 1]);
			return -EINVAL;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "hprof: report: expected one capture file (see hprof report --help)\n");
		return -EINVAL;
	}
	rep->capture_path = argv[optind];
	if (!rep->out.svg_path && !rep->out.folded_path)
		rep->out.folded_path = "-";
	return 0;
}

static int check_record(const char *path, uint32_t type, uint32_t len, char *err, size_t errlen)
{
	size_t need = type == CAPTURE_INFO ? sizeof(struct capture_info)
		      : type == CAPTURE_MAPS ? 8
		      : type == CAPTURE_BUILD_ID ? 4 + BUILD_ID_MAX + 1
		      : type == CAPTURE_SAMPLE ? sizeof(struct hprof_sample)
		      : type == CAPTURE_MAP_EVENT ? sizeof(struct map_event) + 1 : SIZE_MAX;

	if (need == SIZE_MAX) {
		snprintf(err, errlen, "%s: unknown record type %u", path, type);
		return -EINVAL;
	}
	if (len < need) {
		snprintf(err, errlen, "%s: record of type %u is %u bytes, needs %zu", path, type, len,
			 need);
		return -EINVAL;
	}
	return 0;
}

static int add_build_id(struct report *rep, const uint8_t *payload, uint32_t len)
{
	struct recorded_build_id *more;
	uint32_t id_len;

	if (payload[len - 1] != '\0')
		return 0; /* path not terminated: ignore the record */
	memcpy(&id_len, payload, 4);
	if (id_len > BUILD_ID_MAX)
		return 0;
	more = realloc(rep->build_ids, (rep->nr_build_ids + 1) * sizeof(*more));
	if (!more)
		return -ENOMEM;
	rep->build_ids = more;
	rep->build_ids[rep->nr_build_ids++] = (struct recorded_build_id){
		.path = (const char *)payload + 4 + BUILD_ID_MAX, .id = payload + 4, .len = id_len,
	};
	return 0;
}

/* A shorter copy is the same record with the end of its stack bytes cut out (the window
 * at the FP chain's end, which follows them, moves down). */
static int replay_sample(struct report *rep, struct session *s, const uint8_t *payload,
			 uint32_t len)
{
	struct hprof_sample *sample;
	uint32_t cut;

	memcpy(rep->scratch, payload, len);
	sample = (struct hprof_sample *)rep->scratch;
	if (rep->stack_limit && sample->stack_len > rep->stack_limit &&
	    hprof_sample__well_formed(sample, len)) {
		uint8_t *tail = (uint8_t *)hprof_sample__tail(sample);

		cut = sample->stack_len - rep->stack_limit;
		memmove(tail - cut, tail, sample->tail_len);
		sample->stack_len = rep->stack_limit;
		len -= cut;
	}
	return session__handle_sample(s, sample, len);
}

/* A mapping event: the struct, then its path, which must end the record. */
static int replay_map_event(struct session *s, const uint8_t *payload, uint32_t len)
{
	struct map_event e;

	if (payload[len - 1] != '\0')
		return -EINVAL;
	memcpy(&e, payload, sizeof(e));
	return session__handle_map_event(s, &e, (const char *)payload + sizeof(e));
}

/* Feeds every record to the session in file order, which is time order: maps and mapping
 * events before the samples that need them. Returns 0 or -errno with the reason in err. */
static int replay(struct report *rep, struct capture_reader *reader, struct session *s, char *err,
		  size_t errlen)
{
	const uint8_t *payload;
	uint32_t type, len, pid;
	int ret;

	while ((ret = capture_reader__next(reader, &type, &payload, &len, err, errlen)) > 0) {
		ret = check_record(rep->capture_path, type, len, err, errlen);
		if (ret)
			return ret;
		switch (type) {
		case CAPTURE_INFO:
			memcpy(&rep->info, payload, sizeof(rep->info));
			break;
		case CAPTURE_MAPS:
			memcpy(&pid, payload, 4);
			ret = session__load_maps(s, pid, (const char *)payload + 8, len - 8);
			break;
		case CAPTURE_SAMPLE:
			ret = replay_sample(rep, s, payload, len);
			break;
		case CAPTURE_MAP_EVENT:
			ret = replay_map_event(s, payload, len);
			break;
		case CAPTURE_BUILD_ID:
			ret = add_build_id(rep, payload, len);
			break;
		}
		if (ret) {
			snprintf(err, errlen, "%s: %s", rep->capture_path, strerror(-ret));
			return ret;
		}
	}
	return ret;
}

/* A binary rebuilt since the capture gives wrong names and rows: say so. */
static void warn_changed_binaries(const struct report *rep, struct session *s)
{
	struct module_registry *reg = session__modules(s);

	for (size_t i = 0; i < rep->nr_build_ids; i++) {
		const struct recorded_build_id *b = &rep->build_ids[i];
		struct module *mod = module_registry__get(reg, b->path);
		const uint8_t *now = NULL;
		size_t now_len = mod && mod->syms ? elf_symbols__build_id(mod->syms, &now) : 0;

		if (now_len != b->len || memcmp(now, b->id, b->len) != 0)
			fprintf(stderr, "hprof: report: warning: %s changed since the capture; its frames may be misnamed\n",
				b->path);
	}
}

int cmd_report(int argc, char **argv)
{
	struct report rep = { 0 };
	struct capture_reader *reader = NULL;
	struct session *s = NULL;
	char err_msg[512] = "";
	int err;

	err = parse_args(argc, argv, &rep);
	if (err)
		return err > 0 ? 0 : 2;
	rep.out.title = "hprof CPU flame graph";
	err = capture_reader__open(rep.capture_path, &reader, err_msg, sizeof(err_msg));
	if (!err)
		err = session__new(!rep.no_dwarf, &s);
	if (err)
		goto cleanup;
	session__set_replay(s);
	rep.scratch = malloc(CAPTURE_MAX_RECORD);
	if (!rep.scratch) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = replay(&rep, reader, s, err_msg, sizeof(err_msg));
	if (err)
		goto cleanup;
	warn_changed_binaries(&rep, s);
	err = write_outputs(s, &rep.out);
	if (!err)
		print_summary(s, rep.info.duration_ns / 1e9, rep.info.frequency,
			      rep.no_dwarf || rep.info.stack_size == 0, NULL, 0);
cleanup:
	if (err && err_msg[0])
		fprintf(stderr, "hprof: report: %s\n", err_msg);
	session__free(s);
	capture_reader__free(reader);
	free(rep.build_ids);
	free(rep.scratch);
	return err ? 1 : 0;
}
