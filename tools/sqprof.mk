# tools/sqprof.mk - sqprof, the sampling profiler, included by the top Makefile.
#
#   make sqprof       build/tools/sqprof
#
# Built like the other tools (see tools/tools.mk, whose variables and rules for
# build/gen/vmlinux.h and the shared library sqtool.o this uses): bpf/sqprof.bpf.c with
# clang -target bpf, a skeleton build/gen/sqprof.skel.h from bpftool, and the user-space
# half in several files (the VM reader, the reports, the flame-graph writer).

ifndef TOOLS_OBJ
$(error tools/sqprof.mk needs tools/tools.mk, included first)
endif

SQPROF_SRC := tools/sqprof.c tools/sqprof_vm.c tools/sqprof_report.c tools/sqprof_svg.c \
              tools/sqprof_native.c
SQPROF_HDR := $(wildcard tools/sqprof_*.h) bpf/sqprof.h tools/sqtool.h bpf/sqcommon.h
SQPROF_OBJ := $(patsubst tools/%.c,$(TOOLS_OBJ)/%.o,$(SQPROF_SRC))

.PHONY: sqprof clean-sqprof
all: sqprof
sqprof: $(TOOLS_DIR)/sqprof

$(TOOLS_OBJ)/sqprof.bpf.o: bpf/sqprof.bpf.c bpf/sqprof.h $(BPF_HDRS) $(TOOLS_GEN)/vmlinux.h
	@mkdir -p $(TOOLS_OBJ)
	$(BPF_CLANG) $(BPF_CFLAGS) -c $< -o $@.tmp
	$(LLVM_STRIP) -g $@.tmp -o $@ && rm -f $@.tmp

$(TOOLS_GEN)/sqprof.skel.h: $(TOOLS_OBJ)/sqprof.bpf.o tools/sqprof.mk
	$(BPFTOOL) gen skeleton $< name sqprof_bpf > $@.tmp && mv $@.tmp $@

# Every object waits for the skeleton: only sqprof.o includes it, but this keeps the
# rule one line and the skeleton is cheap.
$(SQPROF_OBJ): $(TOOLS_OBJ)/%.o: tools/%.c $(SQPROF_HDR) $(TOOLS_GEN)/sqprof.skel.h
	@mkdir -p $(TOOLS_OBJ)
	$(CC) $(TOOLS_CFLAGS) -Ivm -c $< -o $@

$(TOOLS_DIR)/sqprof: $(SQPROF_OBJ) $(TOOLS_OBJ)/sqtool.o
	$(CC) $(TOOLS_CFLAGS) -o $@ $^ $(TOOLS_LDLIBS)

.SECONDARY: $(TOOLS_OBJ)/sqprof.bpf.o $(TOOLS_GEN)/sqprof.skel.h

clean-sqprof:
	rm -f $(TOOLS_DIR)/sqprof $(SQPROF_OBJ) $(TOOLS_OBJ)/sqprof.bpf.o $(TOOLS_GEN)/sqprof.skel.h
