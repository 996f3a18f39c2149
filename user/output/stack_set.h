/* Stacks by frame name, the common ground of every profile hprof can compare: folded text,
 * a capture replayed, a pprof file. Names are interned in a table that several sets may
 * share, so two profiles' functions line up by id. Each set keeps, per function, the
 * samples with the function anywhere on the stack (inclusive, counted once per sample
 * however often it recurs) and the samples with it innermost (self). */
#ifndef HPROF_OUTPUT_STACK_SET_H
#define HPROF_OUTPUT_STACK_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Lines longer than this are rejected rather than buffered: input is untrusted. */
#define STACK_SET_MAX_LINE (16u << 20)

struct name_table;
struct profile;

int name_table__new(struct name_table **out);
/* The id of s[0..len), interned on first sight. Returns 0, -E2BIG (too many names) or
 * -ENOMEM. */
int name_table__intern(struct name_table *t, const char *s, size_t len, uint32_t *id);
/* NUL-terminated; valid until the table is freed. */
const char *name_table__name(const struct name_table *t, uint32_t id);
uint32_t name_table__count(const struct name_table *t);
void name_table__free(struct name_table *t);

/* Rewrites, in place, a frame name that differs from run to run but not between builds
 * into the name every run gives it: code outside files named by address
 * ("[unmapped]+0x7f12..", "[jit]+0x..", "[anon:NAME]+0x..", "memfd:x+0x..",
 * "[kernel]+0x.._[k]") loses the address. File modules' "module+0xSTART" names and
 * synthetic frames such as "[truncated: ...]" are left alone. Returns the new length. */
size_t frame_name__normalize(char *s, size_t len);

struct stack_set;

/* normalize: pass every frame name through frame_name__normalize. */
int stack_set__new(struct name_table *names, bool normalize, struct stack_set **out);
/* The id of a frame name; name may be rewritten in place (normalization). */
int stack_set__intern(struct stack_set *s, char *name, size_t len, uint32_t *id);
/* Adds count samples of the stack ids[0] (outermost) .. ids[n-1] (innermost). Returns 0,
 * -EINVAL for n == 0, -EOVERFLOW when the total would pass UINT64_MAX, or -ENOMEM. */
int stack_set__add(struct stack_set *s, const uint32_t *ids, uint32_t n, uint64_t count);
/* Parses one folded line (`outer;...;inner COUNT`, without its newline; modified in place)
 * and adds it; blank lines are skipped. Returns 0 or -errno with the reason in err. */
int stack_set__add_folded(struct stack_set *s, char *line, size_t len, char *err,
			  size_t errlen);
/* Reads folded text to its end; err names the line ("line 3: missing sample count"). */
int stack_set__read_folded(struct stack_set *s, FILE *in, char *err, size_t errlen);
/* Adds a profile's stacks as its folded output names them (comm first), so a profile and
 * its folded file give the same set. Returns 0 or -errno with the reason in err. */
int stack_set__add_profile(struct stack_set *s, struct profile *p, char *err, size_t errlen);
struct name_table *stack_set__names(const struct stack_set *s);
uint64_t stack_set__total(const struct stack_set *s);
/* Per function, by name id (0 for names this set has not seen). */
uint64_t stack_set__inclusive(const struct stack_set *s, uint32_t id);
uint64_t stack_set__self(const struct stack_set *s, uint32_t id);
/* Stacks in the order they were added (a stack added twice appears twice). */
size_t stack_set__nr_stacks(const struct stack_set *s);
void stack_set__stack(const struct stack_set *s, size_t i, const uint32_t **ids, uint32_t *n,
		      uint64_t *count);
void stack_set__free(struct stack_set *s);

#endif
