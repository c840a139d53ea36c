# tools/tools.mk - the eBPF tools (bpf/, tools/), included by the top Makefile.
#
#   make tools        build/tools/sqalloc, sqgc, sqflow
#
# Each tool is bpf/<tool>.bpf.c (compiled with clang -target bpf, CO-RE), turned into a
# skeleton header by bpftool (build/gen/<tool>.skel.h), and tools/<tool>.c, linked with
# tools/sqtool.c against the system's libbpf. Everything built goes under build/.
#
# vmlinux.h is generated from the running kernel's BTF (/sys/kernel/btf/vmlinux) into
# build/gen/, not checked in: the programs only need struct pt_regs (for usdt.bpf.h) and
# the kernel's basic types, which CO-RE and the stable uprobe ABI keep valid across kernels,
# and generating it avoids carrying a 100k-line header in the tree. Building therefore
# needs a kernel with BTF (Debian 12's has it); running needs nothing more than loading.

TOOLS := sqalloc sqgc sqflow
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
              -I$(TOOLS_GEN) -Ibpf -I/usr/include/$(TOOLS_MULTIARCH)
TOOLS_CFLAGS := -std=gnu11 -g -O2 -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
                -I$(TOOLS_GEN) -Ibpf -Itools
TOOLS_LDLIBS := -lbpf -lelf -lz -lm

TOOLS_BIN := $(addprefix $(TOOLS_DIR)/,$(TOOLS))
BPF_HDRS := $(wildcard bpf/*.bpf.h) bpf/sqcommon.h

.PHONY: tools clean-tools
all: tools
tools: $(TOOLS_BIN)

$(TOOLS_GEN)/vmlinux.h:
	@mkdir -p $(TOOLS_GEN)
	@test -r $(VMLINUX_BTF) || { echo "tools: $(VMLINUX_BTF) missing: the kernel has no BTF (CONFIG_DEBUG_INFO_BTF)" >&2; exit 1; }
	$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@.tmp && mv $@.tmp $@

$(TOOLS_OBJ)/%.bpf.o: bpf/%.bpf.c bpf/%.h $(BPF_HDRS) $(TOOLS_GEN)/vmlinux.h
	@mkdir -p $(TOOLS_OBJ)
	$(BPF_CLANG) $(BPF_CFLAGS) -c $< -o $@.tmp
	$(LLVM_STRIP) -g $@.tmp -o $@ && rm -f $@.tmp

$(TOOLS_GEN)/%.skel.h: $(TOOLS_OBJ)/%.bpf.o tools/tools.mk
	$(BPFTOOL) gen skeleton $< name $*_bpf > $@.tmp && mv $@.tmp $@

$(TOOLS_OBJ)/sqtool.o: tools/sqtool.c tools/sqtool.h bpf/sqcommon.h
	@mkdir -p $(TOOLS_OBJ)
	$(CC) $(TOOLS_CFLAGS) -c $< -o $@

$(TOOLS_OBJ)/%.o: tools/%.c $(TOOLS_GEN)/%.skel.h bpf/%.h tools/sqtool.h
	$(CC) $(TOOLS_CFLAGS) -c $< -o $@

$(TOOLS_DIR)/%: $(TOOLS_OBJ)/%.o $(TOOLS_OBJ)/sqtool.o
	$(CC) $(TOOLS_CFLAGS) -o $@ $^ $(TOOLS_LDLIBS)

# Keep the intermediate objects and skeletons (make would delete them as temporaries).
.SECONDARY: $(addprefix $(TOOLS_OBJ)/,$(addsuffix .bpf.o,$(TOOLS)) $(addsuffix .o,$(TOOLS))) \
            $(addprefix $(TOOLS_GEN)/,$(addsuffix .skel.h,$(TOOLS)))

clean-tools:
	rm -rf $(TOOLS_DIR) $(addprefix $(TOOLS_GEN)/,vmlinux.h $(addsuffix .skel.h,$(TOOLS)))
