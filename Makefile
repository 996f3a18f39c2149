# hprof build. `make` builds everything into build/; `make test` runs every test;
# `make run` profiles the bundled demo workload and writes out.svg. V=1 shows full commands.

BUILD      := build
CC         ?= gcc
CLANG      ?= clang
BPFTOOL    ?= bpftool
ARCH       := x86

ifeq ($(V),1)
Q :=
msg = @true
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

CFLAGS     ?= -O2 -g
CFLAGS     += -std=gnu11 -Wall -Wextra -Werror -MMD -MP
CPPFLAGS   += -DHPROF_VERSION=\"0.1.0\" -I$(BUILD) -Icommon -Iuser -Iflamegraph -D_GNU_SOURCE
LDLIBS     += -lbpf -lelf -lz -llzma -lstdc++
UNWIND_LIBS := -lunwind-generic -lunwind

BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Werror -MMD -MP \
              -I$(BUILD) -Icommon

DEPS_STAMP := $(BUILD)/.deps-installed
VMLINUX_H  := $(BUILD)/vmlinux.h

BPF_SRCS   := $(wildcard kernel/*.bpf.c)
BPF_OBJS   := $(patsubst kernel/%.bpf.c,$(BUILD)/%.bpf.o,$(BPF_SRCS))
SKELS      := $(patsubst kernel/%.bpf.c,$(BUILD)/%.skel.h,$(BPF_SRCS))

# Everything but main.c is shared by hprof, the unit tests and the benchmarks. Stages of the
# pipeline get folders of their own under user/ (user/binary/, ...).
LIB_SRCS   := $(filter-out user/main.c,$(wildcard user/*.c user/*/*.c)) $(wildcard flamegraph/*.c)
LIB_OBJS   := $(patsubst %.c,$(BUILD)/obj/%.o,$(LIB_SRCS))
HPROF      := $(BUILD)/hprof

UNIT_SRCS  := $(wildcard tests/unit/*.c)
UNIT_BINS  := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))
BENCH_SRCS := $(wildcard bench/*.c)
BENCH_BINS := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRCS))

# Workloads: fp_* keep frame pointers, nofp_* omit them (the DWARF fallback's targets),
# lld_* omit them and are linked by LLD (segment file offsets that are not page-aligned).
WL_FP_C    := $(wildcard tests/workloads/fp_*.c)
WL_NOFP_C  := $(wildcard tests/workloads/nofp_*.c)
WL_NOFP_CC := $(wildcard tests/workloads/nofp_*.cc)
WL_LLD_C   := $(wildcard tests/workloads/lld_*.c)
WORKLOADS  := $(patsubst tests/workloads/%.c,$(BUILD)/workloads/%,$(WL_FP_C) $(WL_NOFP_C) $(WL_LLD_C)) \
              $(patsubst tests/workloads/%.cc,$(BUILD)/workloads/%,$(WL_NOFP_CC))
WL_CFLAGS  := -g -Itests/workloads -Wall -Wextra -Werror -fno-inline -fno-optimize-sibling-calls -pthread
# Libraries the workloads dlopen: maps_lib.c built twice under different names.
WL_LIBS    := $(BUILD)/workloads/libmaps_a.so $(BUILD)/workloads/libmaps_b.so

.PHONY: all deps test test-full run bench clean
.DELETE_ON_ERROR:
# Keep every intermediate file (objects, the skeleton): make would otherwise delete them
# after the build, printing "rm ..." after the tests' closing line.
.SECONDARY:

all: $(HPROF) $(UNIT_BINS) $(BENCH_BINS) $(WORKLOADS) $(WL_LIBS)

deps: $(DEPS_STAMP)

# Installs what is missing (Debian packages); a no-op when everything is there.
$(DEPS_STAMP): scripts/install-deps.sh
	$(call msg,DEPS,$@)
	$(Q)mkdir -p $(@D) && bash scripts/install-deps.sh && touch $@

$(VMLINUX_H): | $(DEPS_STAMP)
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D) && $(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@

$(BUILD)/%.bpf.o: kernel/%.bpf.c $(VMLINUX_H) | $(DEPS_STAMP)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

$(BUILD)/obj/%.o: %.c $(SKELS) | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(HPROF): $(BUILD)/obj/user/main.o $(LIB_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(LIB_OBJS)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(LDFLAGS) $^ $(LDLIBS) $(UNWIND_LIBS) -o $@

$(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(LIB_OBJS)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(LDFLAGS) $^ $(LDLIBS) $(UNWIND_LIBS) -o $@

# Tools for tests and benchmarks: tests/tools/walkers.c drives hprof's walk and libunwind
# (remotely, as perf does) over the samples of a capture.
TOOLS      := $(BUILD)/tools/xcheck $(BUILD)/tools/symbolize
all: $(TOOLS)

# tests/tools/symbolize.c names addresses of a file as a profile would (tests/t_symbols.sh).
$(BUILD)/tools/symbolize: $(BUILD)/obj/tests/tools/symbolize.o $(LIB_OBJS)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/tools/xcheck: $(BUILD)/obj/tests/tools/xcheck.o $(BUILD)/obj/tests/tools/walkers.o $(LIB_OBJS)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(LDFLAGS) $^ $(LDLIBS) $(UNWIND_LIBS) -o $@

$(BUILD)/bench/bench_unwind: $(BUILD)/obj/tests/tools/walkers.o

# clang: gcc 12 drops the frame of leaf functions despite -mno-omit-leaf-frame-pointer.
$(BUILD)/workloads/fp_%: tests/workloads/fp_%.c tests/workloads/workload.h | $(DEPS_STAMP)
	$(call msg,CC-WL,$@)
	$(Q)mkdir -p $(@D) && $(CLANG) -O1 -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer $(WL_CFLAGS) $< -o $@

$(BUILD)/workloads/nofp_%: tests/workloads/nofp_%.c tests/workloads/workload.h | $(DEPS_STAMP)
	$(call msg,CC-WL,$@)
	$(Q)mkdir -p $(@D) && $(CC) -O2 -fomit-frame-pointer $(WL_CFLAGS) $< -o $@

$(BUILD)/workloads/lld_%: tests/workloads/lld_%.c tests/workloads/workload.h | $(DEPS_STAMP)
	$(call msg,CC-WL,$@)
	$(Q)mkdir -p $(@D) && $(CLANG) -O2 -fomit-frame-pointer -fuse-ld=lld $(WL_CFLAGS) $< -o $@

$(BUILD)/workloads/libmaps_%.so: tests/workloads/maps_lib.c | $(DEPS_STAMP)
	$(call msg,CC-WL,$@)
	$(Q)mkdir -p $(@D) && $(CC) -O2 -fomit-frame-pointer -fPIC -shared -DLIB_NAME=$* $(WL_CFLAGS) $< -o $@

$(BUILD)/workloads/nofp_%: tests/workloads/nofp_%.cc tests/workloads/workload.h | $(DEPS_STAMP)
	$(call msg,CXX-WL,$@)
	$(Q)mkdir -p $(@D) && g++ -O2 -fomit-frame-pointer $(WL_CFLAGS) $< -o $@

test: all
	$(Q)bash tests/run.sh

test-full: all
	$(Q)HPROF_FULL=1 bash tests/run.sh

bench: all
	$(Q)bash bench/run.sh

# hprof table against readelf on every ELF file with CFI under /usr/lib/x86_64-linux-gnu and
# /usr/bin (`make test` runs a fast subset of the same comparison).
.PHONY: cfi-sweep
cfi-sweep: $(HPROF) $(WORKLOADS)
	$(Q)HPROF_FULL=1 bash tests/t_cfi_readelf.sh

# The main job: profile the bundled demo workload for 5 s and write out.svg.
run: all
	$(Q)$(HPROF) --svg out.svg --time 5000 -- $(BUILD)/workloads/fp_demo 5

clean:
	rm -rf $(BUILD)

-include $(wildcard $(BUILD)/*.d $(BUILD)/obj/*/*.d $(BUILD)/obj/*/*/*.d $(BUILD)/obj/*/*/*/*.d)
