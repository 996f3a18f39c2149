/* `hprof table FILE`: prints a binary's compiled unwind rows, one a line, in the notation of
 * `readelf --debug-dump=frames-interp` (LOC, CFA, rbp, ra, rbx), then counts. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cfi/unwind_table.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hprof table [--section eh_frame|debug_frame|all] [--stats-only] FILE\n"
		"Prints FILE's unwind rows (CFA, rbp, return-address and rbx rules per pc), then counts.\n"
		"  --section S    compile only .eh_frame or .debug_frame (default: all)\n"
		"  --via-hdr      find .eh_frame through PT_GNU_EH_FRAME, as for a loaded image\n"
		"  --stats-only   print the counts only\n");
}

static void fmt_cfa(char *buf, size_t len, const struct unwind_rules *r)
{
	long long off = (long long)r->cfa_offset;

	switch (r->cfa) {
	case UNWIND_CFA_SP_OFFSET:
		snprintf(buf, len, "rsp%+lld", off);
		break;
	case UNWIND_CFA_BP_OFFSET:
		snprintf(buf, len, "rbp%+lld", off);
		break;
	case UNWIND_CFA_BX_OFFSET:
		snprintf(buf, len, "rbx%+lld", off);
		break;
	case UNWIND_CFA_R10_OFFSET:
		snprintf(buf, len, "r10%+lld", off);
		break;
	case UNWIND_CFA_R12_OFFSET:
	case UNWIND_CFA_R13_OFFSET:
	case UNWIND_CFA_R14_OFFSET:
	case UNWIND_CFA_R15_OFFSET:
		snprintf(buf, len, "r%d%+lld", 12 + (r->cfa - UNWIND_CFA_R12_OFFSET), off);
		break;
	case UNWIND_CFA_EXPR_PLT:
		snprintf(buf, len, "exp:plt%lld", off);
		break;
	case UNWIND_CFA_EXPR_DEREF_SP:
		snprintf(buf, len, "exp:*(rsp%+lld)", off);
		break;
	case UNWIND_CFA_EXPR_DEREF_BP:
		snprintf(buf, len, "exp:*(rbp%+lld)", off);
		break;
	case UNWIND_CFA_UNSUPPORTED:
		snprintf(buf, len, "?%s", unwind_reason__name(r->cfa_reason));
		break;
	default:
		snprintf(buf, len, "end");
		break;
	}
}

static void fmt_rbp(char *buf, size_t len, const struct unwind_rules *r)
{
	long long off = (long long)r->rbp_offset;

	switch (r->rbp) {
	case UNWIND_RBP_UNCHANGED:
		snprintf(buf, len, "s");
		break;
	case UNWIND_RBP_UNDEFINED:
		snprintf(buf, len, "u");
		break;
	case UNWIND_RBP_AT_CFA:
		snprintf(buf, len, "c%+lld", off);
		break;
	case UNWIND_RBP_VAL_CFA:
		snprintf(buf, len, "v%+lld", off);
		break;
	case UNWIND_RBP_AT_SP:
		snprintf(buf, len, "exp:rsp%+lld", off);
		break;
	case UNWIND_RBP_AT_BP:
		snprintf(buf, len, "exp:rbp%+lld", off);
		break;
	default:
		snprintf(buf, len, "?%s", unwind_reason__name(r->rbp_reason));
		break;
	}
}

static void fmt_ra(char *buf, size_t len, const struct unwind_rules *r)
{
	long long off = (long long)r->ra_offset;

	switch (r->ra) {
	case UNWIND_RA_AT_CFA:
		snprintf(buf, len, "c%+lld", off);
		break;
	case UNWIND_RA_UNDEFINED:
		snprintf(buf, len, "u");
		break;
	case UNWIND_RA_AT_SP:
		snprintf(buf, len, "exp:rsp%+lld", off);
		break;
	case UNWIND_RA_REGISTER:
		snprintf(buf, len, "r%lld", off);
		break;
	default:
		snprintf(buf, len, "?%s", unwind_reason__name(r->ra_reason));
		break;
	}
}

static void fmt_rbx(char *buf, size_t len, const struct unwind_rules *r)
{
	switch (r->rbx) {
	case UNWIND_RBX_UNCHANGED:
		snprintf(buf, len, "s");
		break;
	case UNWIND_RBX_UNDEFINED:
		snprintf(buf, len, "u");
		break;
	case UNWIND_RBX_AT_CFA:
		snprintf(buf, len, "c%+lld", (long long)r->rbx_offset);
		break;
	default:
		snprintf(buf, len, "?");
		break;
	}
}

static void print_rows(const struct unwind_table *t)
{
	const struct unwind_row *rows;
	size_t n;
	char cfa[48], rbp[48], ra[48], rbx[48];

	rows = unwind_table__rows(t, &n);
	printf("   LOC           CFA      rbp   ra    rbx\n");
	for (size_t i = 0; i < n; i++) {
		struct unwind_rules r;

		if (rows[i].cfa_kind == UNWIND_CFA_END) {
			printf("%016llx end\n", (unsigned long long)rows[i].pc);
			continue;
		}
		unwind_table__decode(t, &rows[i], &r);
		fmt_cfa(cfa, sizeof(cfa), &r);
		fmt_rbp(rbp, sizeof(rbp), &r);
		fmt_ra(ra, sizeof(ra), &r);
		fmt_rbx(rbx, sizeof(rbx), &r);
		printf("%016llx %-8s %-5s %-5s %s\n", (unsigned long long)rows[i].pc, cfa, rbp, ra, rbx);
	}
}

static void print_reasons(const char *rule, const uint64_t *counts)
{
	for (int i = UNWIND_REASON_NONE + 1; i < UNWIND_REASON_COUNT; i++)
		if (counts[i])
			printf("unsupported %s %s: %llu\n", rule, unwind_reason__name(i),
			       (unsigned long long)counts[i]);
}

static void print_stats(const struct unwind_table *t)
{
	struct unwind_stats s;

	unwind_table__stats(t, &s);
	printf("fdes: %llu\n", (unsigned long long)s.fdes);
	printf("rows: %llu\n", (unsigned long long)s.rows);
	printf("end markers: %llu\n", (unsigned long long)s.end_markers);
	printf("wide rows: %llu\n", (unsigned long long)s.wide_rows);
	printf("cfi bytes: %llu\n", (unsigned long long)s.cfi_bytes);
	printf("table bytes: %llu\n", (unsigned long long)s.table_bytes);
	for (int i = UNWIND_CFA_END + 1; i < UNWIND_CFA_KIND_COUNT; i++)
		printf("cfa %s: %llu\n", unwind_cfa_kind__name(i), (unsigned long long)s.cfa[i]);
	for (int i = 0; i < UNWIND_RBP_KIND_COUNT; i++)
		printf("rbp %s: %llu\n", unwind_rbp_kind__name(i), (unsigned long long)s.rbp[i]);
	for (int i = 0; i < UNWIND_RA_KIND_COUNT; i++)
		printf("ra %s: %llu\n", unwind_ra_kind__name(i), (unsigned long long)s.ra[i]);
	for (int i = 0; i < UNWIND_RBX_KIND_COUNT; i++)
		printf("rbx %s: %llu\n", unwind_rbx_kind__name(i), (unsigned long long)s.rbx[i]);
	print_reasons("cfa", s.cfa_reason);
	print_reasons("rbp", s.rbp_reason);
	print_reasons("ra", s.ra_reason);
}

static int parse_section(const char *s, unsigned int *sources)
{
	if (strcmp(s, "eh_frame") == 0 || strcmp(s, ".eh_frame") == 0)
		*sources = UNWIND_SRC_EH_FRAME;
	else if (strcmp(s, "debug_frame") == 0 || strcmp(s, ".debug_frame") == 0)
		*sources = UNWIND_SRC_DEBUG_FRAME;
	else if (strcmp(s, "all") == 0)
		*sources = UNWIND_SRC_ALL;
	else
		return -1;
	return 0;
}

int cmd_table(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "section", required_argument, NULL, 's' },
		{ "via-hdr", no_argument, NULL, 'H' },
		{ "stats-only", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	unsigned int sources = UNWIND_SRC_ALL, via_hdr = 0;
	struct unwind_table *t = NULL;
	bool stats_only = false;
	char err[512];
	int c, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "s:HSh", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (parse_section(optarg, &sources)) {
				fprintf(stderr, "hprof table: unknown section '%s'\n", optarg);
				return 2;
			}
			break;
		case 'H':
			via_hdr = UNWIND_SRC_VIA_HDR;
			break;
		case 'S':
			stats_only = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	rc = unwind_table__from_file(argv[optind], sources | via_hdr, &t, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "hprof table: %s\n", err[0] ? err : strerror(-rc));
		return 1;
	}
	if (!stats_only)
		print_rows(t);
	print_stats(t);
	unwind_table__free(t);
	return fflush(stdout) ? 1 : 0;
}
