/* The CFA program interpreter: runs a CIE's initial instructions and an FDE's program,
 * tracking only the CFA, rbp, rbx and the return-address column. */
#ifndef HPROF_CFI_DWARF_CFA_H
#define HPROF_CFI_DWARF_CFA_H

#include <stdbool.h>
#include <stdint.h>

#include "cfi/reader.h"

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

/* The rules hprof tracks: the CFA, rbp, rbx and the return-address column. */
struct cfi_state {
	struct cfi_cfa_rule cfa;
	struct cfi_reg_rule rbp;
	struct cfi_reg_rule rbx;
	struct cfi_reg_rule ra;
};

/* A CIE: what every program of its FDEs is read and run with. */
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

/* An FDE: the pc range its program covers. */
struct cfi_fde {
	uint64_t lo, hi;       /* [pc_begin, pc_begin + pc_range) */
	uint64_t off;          /* offset of the FDE in its section, for messages */
	uint64_t insn_off;
	uint32_t insn_len;
	uint32_t cie;          /* index into the CIE array */
};

/* Runs the CIE's initial instructions into cie->init (from an unknown CFA and
 * unreferenced registers). */
int cfi_run_cie(const struct cfi_section *sec, struct cfi_cie *cie, struct cfi_err *e);

/* Where an FDE's program hands its states: state_at(ctx, pc, state) says that state holds
 * from pc on. Called in ascending pc order, only when the tracked rules change; a non-zero
 * return stops the program and is returned. */
struct cfi_sink {
	int (*state_at)(void *ctx, uint64_t pc, const struct cfi_state *state);
	void *ctx;
};

/* Runs the FDE's program over its CIE's initial state, handing the sink the state at each
 * location in [fde->lo, hi). */
int cfi_run_fde(const struct cfi_section *sec, const struct cfi_cie *cie,
		const struct cfi_fde *fde, uint64_t hi, const struct cfi_sink *sink,
		struct cfi_err *e);

#endif
