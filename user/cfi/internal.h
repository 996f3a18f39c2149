/* Internals shared by the CFI compiler's files: user/cfi/dwarf_cfa.c parses CIEs and FDEs
 * and runs CFA programs, user/cfi/unwind_table.c builds and searches the table. Not an
 * API: user/cfi/unwind_table.h is. */
#ifndef HPROF_CFI_INTERNAL_H
#define HPROF_CFI_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cfi/elf_sections.h"
#include "cfi/reader.h"
#include "cfi/unwind_table.h"

/* Deepest DW_CFA_remember_state nesting accepted; compilers nest one or two deep. */
#define CFI_MAX_REMEMBER 64

/* A register rule as DWARF states it, before it is mapped onto the row's kinds. */
enum cfi_reg_how {
	CFI_REG_UNREFERENCED = 0, /* no rule given: the ABI default */
	CFI_REG_UNDEFINED,
	CFI_REG_SAME_VALUE,
	CFI_REG_OFFSET,           /* saved at CFA + arg */
	CFI_REG_VAL_OFFSET,       /* value is CFA + arg */
	CFI_REG_REGISTER,         /* value is in register arg */
	CFI_REG_EXPR_AT_SP,       /* DW_CFA_expression (DW_OP_breg7 arg): saved at rsp + arg */
	CFI_REG_EXPR_AT_BP,       /* DW_CFA_expression (DW_OP_breg6 arg): saved at rbp + arg */
	CFI_REG_EXPRESSION,
	CFI_REG_VAL_EXPRESSION,
};

struct cfi_reg_rule {
	uint8_t how;  /* enum cfi_reg_how */
	int64_t arg;
};

struct cfi_cfa_rule {
	uint64_t reg;
	int64_t offset;
	uint8_t expr; /* 0, or the enum unwind_cfa_kind of a DW_CFA_def_cfa_expression */
	int64_t expr_arg;
};

/* The rules hprof tracks: the CFA, rbp and the return-address column. */
struct cfi_state {
	struct cfi_cfa_rule cfa;
	struct cfi_reg_rule rbp;
	struct cfi_reg_rule ra;
};

struct cfi_cie {
	uint64_t off;          /* offset of the CIE in its section */
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	uint64_t insn_off;     /* initial instructions */
	uint64_t insn_end;
	uint8_t fde_enc;       /* DW_EH_PE_* of FDE pointers */
	uint8_t addr_size;
	bool has_z;            /* FDEs carry augmentation data */
	uint8_t sec;           /* index into cfi_elf.sec */
	struct cfi_state init; /* state after the initial instructions */
};

struct cfi_fde {
	uint64_t lo, hi;       /* [pc_begin, pc_begin + pc_range) */
	uint64_t off;          /* offset of the FDE in its section, for messages */
	uint64_t insn_off;
	uint32_t insn_len;
	uint32_t cie;          /* index into the CIE array */
};

/* Parses the CIE at section offset off (its length field). */
int cfi_parse_cie(const struct cfi_section *sec, uint64_t off, struct cfi_cie *cie,
		  struct cfi_err *e);

/* Reads the header of the entry at *off: on return *off is the next entry's offset,
 * *kind is 0 for a terminator, 1 for a CIE, 2 for an FDE (then *cie_off names its CIE and
 * body/body_end bound the rest of the entry). */
enum cfi_entry_kind { CFI_ENTRY_ZERO, CFI_ENTRY_CIE, CFI_ENTRY_FDE };
int cfi_next_entry(const struct cfi_section *sec, uint64_t *off, enum cfi_entry_kind *kind,
		   uint64_t *cie_off, uint64_t *body, uint64_t *body_end, struct cfi_err *e);

/* Parses an FDE body (after its CIE pointer) for the given CIE. */
int cfi_parse_fde(const struct cfi_section *sec, const struct cfi_cie *cie, uint64_t entry_off,
		  uint64_t body, uint64_t body_end, struct cfi_fde *fde, struct cfi_err *e);

/* The table under construction (user/cfi/unwind_table.c): receives the states a CFA program goes
 * through and keeps one row wherever the rules change. */
struct cfi_sink {
	struct unwind_row *rows;
	size_t nr_rows, cap_rows;
	struct unwind_row_wide *wide;
	size_t nr_wide, cap_wide;
	struct cfi_state last_state; /* the DWARF state the last row came from */
	uint64_t last_rules;         /* the last row's rules (see row_rules) when not wide */
	bool last_rules_valid;
	bool have_last;              /* the last row has rules: false at the start and after
				      * an end marker */
	struct unwind_stats *stats;
};

/* True when state is the one the last row came from: most locations only change
 * registers hprof does not track, and this skips mapping them. */
static inline bool cfi_sink__unchanged(const struct cfi_sink *s, const struct cfi_state *st)
{
	const struct cfi_state *l = &s->last_state;

	return s->have_last && st->cfa.reg == l->cfa.reg && st->cfa.offset == l->cfa.offset &&
	       st->cfa.expr == l->cfa.expr && st->cfa.expr_arg == l->cfa.expr_arg &&
	       st->rbp.how == l->rbp.how && st->rbp.arg == l->rbp.arg &&
	       st->ra.how == l->ra.how && st->ra.arg == l->ra.arg;
}

int cfi_sink__row(struct cfi_sink *sink, uint64_t pc, const struct cfi_state *state,
		  const struct cfi_cie *cie);

/* Runs the FDE's program over its CIE's initial state, handing the sink one state per
 * location in [fde->lo, hi). */
int cfi_run_fde(const struct cfi_section *sec, const struct cfi_cie *cie,
		const struct cfi_fde *fde, uint64_t hi, struct cfi_sink *sink, struct cfi_err *e);

/* Maps a DWARF state onto the row's rule kinds. */
void cfi_state__rules(const struct cfi_state *state, const struct cfi_cie *cie,
		      struct unwind_rules *rules);

#endif
