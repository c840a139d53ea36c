# SPDX-License-Identifier: BSD-2-Clause
# tools/tools.mk - the eBPF tools (bpf/, tools/), included by the top Makefile.
#
#   make tools        build/tools/sqalloc, sqgc, sqflow, sqprof, sqstack, ...
#
# One set of rules for the family. A BPF tool NAME is bpf/NAME.bpf.c (compiled with clang
# -target bpf, CO-RE), turned into a skeleton header by bpftool (build/gen/NAME.skel.h),
# and tools/NAME.c plus the files listed in NAME_SRCS, linked with the shared user-space
# helpers (TOOLS_LIB, one concern each: docs/TOOLS.md, Layout) against the system's
# libbpf. A tool without a BPF program (sqstack) is listed in TOOLS_NOBPF. The tools
# include only the probe contract (probes/debug_offsets.h, bpf/*.h), never the VM's
# headers. Everything built goes under build/.
#
# vmlinux.h is generated from the running kernel's BTF (/sys/kernel/btf/vmlinux) into
# build/gen/, not checked in: the programs only need struct pt_regs (for usdt.bpf.h) and
# the kernel's basic types, which CO-RE and the stable uprobe ABI keep valid across kernels,
# and generating it avoids carrying a 100k-line header in the tree. Building therefore
# needs a kernel with BTF (Debian 12's has it).
#
# Start-up: parsing the kernel's 5 MB of BTF for CO-RE takes most of a tool's start-up
# (60-90 ms of ~100). So the build also keeps the few types the relocations need
# (bpftool gen min_core_btf, ~100 bytes) and the identity of the kernel it came from
# (build/gen/sqkernel.h); a tool running on that same kernel relocates against them, and
# on any other kernel loads the kernel's own BTF as usual.

TOOLS_BPF := sqalloc sqgc sqflow sqprof sqstat sqcalls sqsched sqreq sqio sqdoctor sqslow
TOOLS_NOBPF := sqstack
TOOLS := $(TOOLS_BPF) $(TOOLS_NOBPF)
# Extra user-space files of a tool, beside tools/NAME.c.
sqstat_SRCS := sqstat_prom.c sqmetrics.c sqhttp.c sqaccept.c
sqcalls_SRCS := sqmse.c sqintern.c
sqflow_SRCS := sqflow_slices.c sqflow_chrome.c sqflow_merge.c sqflow_perfetto.c sqperfetto.c sqpb.c sqintern.c sqjson.c sqjson_write.c
sqdoctor_SRCS := sqdoctor_run.c sqdoctor_rules.c sqdoctor_mem.c sqdoctor_sched.c sqdoctor_io.c \
                 sqdoctor_report.c sqdoctor_html.c sqjson.c
sqsched_SRCS := sqsched_sems.c
sqstack_SRCS := sqstack_walk.c
sqprof_SRCS := sqprof_report.c sqprof_svg.c sqprof_native.c sqprof_export.c sqprof_dir.c sqprof_wall.c sqintern.c
sqslow_SRCS := sqslow_window.c sqslow_ring.c sqslow_merge.c sqslow_switch.c sqslow_replay.c sqslow_trace.c sqslow_trace_json.c sqslow_trace_perfetto.c sqperfetto.c sqpb.c sqintern.c

TOOLS_DIR := build/tools
TOOLS_OBJ := build/tools/obj
TOOLS_GEN := build/gen

BPF_CLANG ?= clang
BPFTOOL ?= bpftool
LLVM_STRIP ?= llvm-strip
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux

TOOLS_ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/' -e 's/ppc64le/powerpc/' -e 's/s390x/s390/')
TOOLS_MULTIARCH := $(shell $(CC) -dumpmachine 2>/dev/null)
BPF_CFLAGS := -target bpf -g -O2 -Wall -D__TARGET_ARCH_$(TOOLS_ARCH) \
              -I$(TOOLS_GEN) -Ibpf -Iprobes -I/usr/include/$(TOOLS_MULTIARCH)
TOOLS_CFLAGS := -std=gnu11 -g -O2 -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
                -I$(TOOLS_GEN) -Ibpf -Itools -Iprobes
TOOLS_LDLIBS := -lbpf -lelf -lz -lm
# make SANITIZE=1: the tools under ASan and UBSan too, in build/asan/tools, for the
# hostile tier (make SANITIZE=1 check-hostile): a target that lies must not make them
# read or write out of bounds
ifeq ($(SANITIZE),1)
  TOOLS_DIR := $(O)/tools
  TOOLS_OBJ := $(O)/tools/obj
  TOOLS_CFLAGS += -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
endif

TOOLS_BIN := $(addprefix $(TOOLS_DIR)/,$(TOOLS))
# What make install and make deb ship beside them: the manual pages, the bpftrace scripts
# and their notes.
TOOLS_MAN := $(wildcard tools/*.8)
TOOLS_BPFTRACE := $(wildcard bpftrace/*.bt bpftrace/*.md)
# The shared user-space helpers: options, ELF, targets, a VM's memory (and the one read
# of it, sqmem_read, which fuzz/fuzz_stack.c replaces), libbpf set-up,
# attaching, the event loop, output, names, files replaced whole.
TOOLS_LIB := sqopts sqelf sqtargets sqmem sqmem_read sqbpf sqattach sqloop sqoutput sqnames sqfile sqproc
TOOLS_LIB_OBJ := $(patsubst %,$(TOOLS_OBJ)/%.o,$(TOOLS_LIB))
TOOLS_ALL_BPF_OBJ := $(patsubst %,$(TOOLS_OBJ)/%.bpf.o,$(TOOLS_BPF))
TOOLS_ALL_OBJ := $(TOOLS_LIB_OBJ) $(patsubst %,$(TOOLS_OBJ)/%.o,$(TOOLS)) \
                 $(foreach t,$(TOOLS),$(patsubst %.c,$(TOOLS_OBJ)/%.o,$($(t)_SRCS)))

.PHONY: tools clean-tools $(TOOLS)
all: tools
tools: $(TOOLS_BIN)
# make sqprof, make sqstack, ...: one tool
$(TOOLS): %: $(TOOLS_DIR)/%

$(TOOLS_GEN)/vmlinux.h:
	@mkdir -p $(TOOLS_GEN)
	@test -r $(VMLINUX_BTF) || { echo "tools: $(VMLINUX_BTF) missing: the kernel has no BTF (CONFIG_DEBUG_INFO_BTF)" >&2; exit 1; }
	$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@.tmp && mv $@.tmp $@

# The BPF side includes bpf/ and probes/ headers; -MMD records which. The object is
# written to $@.tmp and stripped into $@, so -MT names the target the .d file is for: by
# default it would be the .tmp file, and a header edit would rebuild nothing. A change
# to these rules rebuilds the objects too (tools.mk is a prerequisite).
$(TOOLS_OBJ)/%.bpf.o: bpf/%.bpf.c $(TOOLS_GEN)/vmlinux.h tools/tools.mk
	@mkdir -p $(TOOLS_OBJ)
	$(BPF_CLANG) $(BPF_CFLAGS) -MMD -MP -MF $(TOOLS_OBJ)/$*.bpf.d -MT $@ -c $< -o $@.tmp
	$(LLVM_STRIP) -g $@.tmp -o $@ && rm -f $@.tmp

$(TOOLS_GEN)/%.skel.h: $(TOOLS_OBJ)/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $*_bpf > $@.tmp && mv $@.tmp $@

# The BTF subset of the relocations of every BPF object, and the kernel it was taken from.
$(TOOLS_OBJ)/sqtools.min.btf: $(TOOLS_ALL_BPF_OBJ)
	$(BPFTOOL) gen min_core_btf $(VMLINUX_BTF) $@ $^

$(TOOLS_GEN)/sqkernel.h: $(TOOLS_GEN)/vmlinux.h
	@{ echo '/* sqkernel.h - generated by tools/tools.mk: the kernel the tools were built on. */'; \
	   printf '#define SQ_BUILD_KERNEL "%s"\n' "$$(uname -r -v | sed 's/[\\"]/\\&/g')"; \
	   printf '#define SQ_BUILD_BTF_SIZE %sULL\n' "$$(wc -c < $(VMLINUX_BTF))"; \
	   echo '#define SQ_MIN_BTF_PATH "$(TOOLS_OBJ)/sqtools.min.btf"'; } > $@.tmp && mv $@.tmp $@

$(TOOLS_OBJ)/sqbpf.o: $(TOOLS_GEN)/sqkernel.h $(TOOLS_OBJ)/sqtools.min.btf

# Every user-space object: its headers from -MMD; a BPF tool's objects wait for its
# skeleton (generated, so it must exist before the first compile).
$(TOOLS_OBJ)/%.o: tools/%.c
	@mkdir -p $(TOOLS_OBJ)
	$(CC) $(TOOLS_CFLAGS) -MMD -MP -c $< -o $@

define tool_rules
$$(TOOLS_DIR)/$(1): $$(TOOLS_OBJ)/$(1).o $$(patsubst %.c,$$(TOOLS_OBJ)/%.o,$$($(1)_SRCS)) $$(TOOLS_LIB_OBJ)
	$$(CC) $$(TOOLS_CFLAGS) -o $$@ $$^ $$(TOOLS_LDLIBS)
endef
$(foreach t,$(TOOLS),$(eval $(call tool_rules,$(t))))
$(foreach t,$(TOOLS_BPF),$(eval $(TOOLS_OBJ)/$(t).o $(patsubst %.c,$(TOOLS_OBJ)/%.o,$($(t)_SRCS)): $(TOOLS_GEN)/$(t).skel.h))

-include $(TOOLS_ALL_OBJ:.o=.d) $(TOOLS_ALL_BPF_OBJ:.bpf.o=.bpf.d)

# Keep the intermediate objects and skeletons (make would delete them as temporaries).
.SECONDARY: $(TOOLS_ALL_BPF_OBJ) $(TOOLS_ALL_OBJ) $(addprefix $(TOOLS_GEN)/,$(addsuffix .skel.h,$(TOOLS_BPF)))

clean-tools:
	rm -rf $(TOOLS_DIR) $(addprefix $(TOOLS_GEN)/,vmlinux.h sqkernel.h $(addsuffix .skel.h,$(TOOLS_BPF)))
