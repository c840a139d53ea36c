# SPDX-License-Identifier: BSD-2-Clause
# fuzz/fuzz.mk - libFuzzer targets (clang -fsanitize=fuzzer,address,undefined), included
# by the top Makefile:
#
#   make fuzz                    build them and run each for FUZZ_TIME seconds (default 60)
#                                from a random seed
#   make fuzz FUZZ_TIME=1800     longer (the figures in docs/HACKING.md are from 35 minutes)
#   make fuzz FUZZ_ONLY=eval     only those targets (compile, eval, elf, stack, flow, merge, ring)
#   make fuzz-build              build only: build/fuzz/fuzz_compile, fuzz_eval, fuzz_elf,
#                                fuzz_stack, fuzz_flow, fuzz_merge, fuzz_ring
#   scripts/fuzz.sh ci           what CI runs: the regression corpus, then fixed-seed runs
#
# fuzz_compile: the lexer, parser and compiler on class-file text; fuzz_eval: statements
# run as -e runs them, with a time and heap budget; fuzz_elf: the tools' ELF, note and
# symbol reader on arbitrary bytes; fuzz_stack: sqstack's stack walk over a memory image;
# fuzz_flow: sqflow's trace writers (Chrome JSON, Perfetto protobuf) over any stream of entries and
# returns, checked; fuzz_merge: sqflow --merge on any file given as the browser's trace;
# fuzz_ring: sqslow's reader of a VM's record ring, and its replay, over a ring image.
# The VM is built for them with -DSQVM_FUZZ (vm_exit
# returns to the harness; a budget) and without probes. Seeds come from tests/ and
# fuzz/seeds/, findings stay in fuzz/regress/ (scripts/fuzz.sh); a crash or a hang (the
# watchdog, fuzz_watchdog.c) fails the run and its input is kept in build/fuzz/crashes/.

FUZZ_CC ?= clang
FUZZ_DIR := build/fuzz
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS := -std=gnu11 -g -O1 $(FUZZ_SAN) -fsanitize=fuzzer-no-link -DSQVM_FUZZ -DSQVM_PROBES=0 \
               -fno-strict-aliasing -iquote vm -Iprobes -Ibuild/gen
FUZZ_VM_SRC := $(filter-out vm/main.c,$(wildcard vm/*.c))
FUZZ_VM_OBJ := $(patsubst vm/%.c,$(FUZZ_DIR)/obj/vm_%.o,$(FUZZ_VM_SRC)) $(FUZZ_DIR)/obj/corelib.o
FUZZ_TOOL_CFLAGS := -std=gnu11 -g -O1 $(FUZZ_SAN) -fsanitize=fuzzer-no-link -I$(TOOLS_GEN) -Ibpf -Itools -Iprobes
FUZZ_TARGETS := $(FUZZ_DIR)/fuzz_compile $(FUZZ_DIR)/fuzz_eval $(FUZZ_DIR)/fuzz_elf $(FUZZ_DIR)/fuzz_stack \
                $(FUZZ_DIR)/fuzz_flow $(FUZZ_DIR)/fuzz_merge $(FUZZ_DIR)/fuzz_ring
FUZZ_TIME ?= 60

.PHONY: fuzz fuzz-build
fuzz-build: $(FUZZ_TARGETS)
fuzz: fuzz-build
	scripts/fuzz.sh $(FUZZ_TIME) $(FUZZ_ONLY)

$(FUZZ_DIR)/obj/vm_%.o: vm/%.c | $(FUZZ_DIR)/obj
	$(FUZZ_CC) $(FUZZ_CFLAGS) -MMD -MP -c -o $@ $<

$(FUZZ_DIR)/obj/corelib.o: build/gen/corelib.c | $(FUZZ_DIR)/obj
	$(FUZZ_CC) -std=gnu11 -O0 -c -o $@ $<

# The watchdog thread runs beside every input: its code must not count as coverage, or
# each input's features would depend on how many of its ticks fell within it.
$(FUZZ_DIR)/obj/fuzz_watchdog.o: fuzz/fuzz_watchdog.c | $(FUZZ_DIR)/obj
	$(FUZZ_CC) $(filter-out -fsanitize=fuzzer-no-link,$(FUZZ_CFLAGS)) -MMD -MP -c -o $@ $<

$(FUZZ_DIR)/obj/%.o: fuzz/%.c | $(FUZZ_DIR)/obj
	$(FUZZ_CC) $(FUZZ_CFLAGS) -MMD -MP -c -o $@ $<

$(FUZZ_DIR)/obj/tool_%.o: tools/%.c $(TOOLS_GEN)/sqkernel.h | $(FUZZ_DIR)/obj
	$(FUZZ_CC) $(FUZZ_TOOL_CFLAGS) -MMD -MP -c -o $@ $<

$(FUZZ_DIR)/obj/fuzz_elf.o $(FUZZ_DIR)/obj/fuzz_stack.o $(FUZZ_DIR)/obj/fuzz_flow.o $(FUZZ_DIR)/obj/fuzz_merge.o \
$(FUZZ_DIR)/obj/fuzz_ring.o: $(FUZZ_DIR)/obj/%.o: fuzz/%.c $(TOOLS_GEN)/sqkernel.h | $(FUZZ_DIR)/obj
	$(FUZZ_CC) $(FUZZ_TOOL_CFLAGS) -MMD -MP -c -o $@ $<

FUZZ_DOG := $(FUZZ_DIR)/obj/fuzz_watchdog.o
$(FUZZ_DIR)/fuzz_compile: $(FUZZ_DIR)/obj/fuzz_compile.o $(FUZZ_DIR)/obj/fuzz_vm.o $(FUZZ_DOG) $(FUZZ_VM_OBJ)
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ -lm -pthread
$(FUZZ_DIR)/fuzz_eval: $(FUZZ_DIR)/obj/fuzz_eval.o $(FUZZ_DIR)/obj/fuzz_vm.o $(FUZZ_DOG) $(FUZZ_VM_OBJ)
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ -lm -pthread
$(FUZZ_DIR)/fuzz_elf: $(FUZZ_DIR)/obj/fuzz_elf.o $(FUZZ_DOG) $(FUZZ_DIR)/obj/tool_sqelf.o
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ $(TOOLS_LDLIBS) -pthread
# fuzz_stack.o defines sq_read_mem over its image: tool_sqmem_read.o is not linked.
$(FUZZ_DIR)/fuzz_stack: $(FUZZ_DIR)/obj/fuzz_stack.o $(FUZZ_DOG) $(FUZZ_DIR)/obj/tool_sqstack_walk.o \
		$(FUZZ_DIR)/obj/tool_sqmem.o $(FUZZ_DIR)/obj/tool_sqelf.o $(FUZZ_DIR)/obj/tool_sqoutput.o
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ $(TOOLS_LDLIBS) -pthread
$(FUZZ_DIR)/fuzz_flow: $(FUZZ_DIR)/obj/fuzz_flow.o $(FUZZ_DOG) $(FUZZ_DIR)/obj/tool_sqflow_slices.o \
		$(FUZZ_DIR)/obj/tool_sqflow_chrome.o $(FUZZ_DIR)/obj/tool_sqflow_merge.o $(FUZZ_DIR)/obj/tool_sqjson.o \
		$(FUZZ_DIR)/obj/tool_sqjson_write.o $(FUZZ_DIR)/obj/tool_sqflow_perfetto.o $(FUZZ_DIR)/obj/tool_sqperfetto.o $(FUZZ_DIR)/obj/tool_sqpb.o \
		$(FUZZ_DIR)/obj/tool_sqintern.o $(FUZZ_DIR)/obj/tool_sqoutput.o
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ $(TOOLS_LDLIBS) -pthread
$(FUZZ_DIR)/fuzz_merge: $(FUZZ_DIR)/obj/fuzz_merge.o $(FUZZ_DOG) $(FUZZ_DIR)/obj/tool_sqflow_merge.o \
		$(FUZZ_DIR)/obj/tool_sqjson.o $(FUZZ_DIR)/obj/tool_sqjson_write.o $(FUZZ_DIR)/obj/tool_sqoutput.o
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ $(TOOLS_LDLIBS) -pthread

# fuzz_ring.o defines sq_read_mem over its ring image: tool_sqmem_read.o is not linked.
$(FUZZ_DIR)/fuzz_ring: $(FUZZ_DIR)/obj/fuzz_ring.o $(FUZZ_DOG) $(FUZZ_DIR)/obj/tool_sqslow_ring.o \
		$(FUZZ_DIR)/obj/tool_sqslow_replay.o $(FUZZ_DIR)/obj/tool_sqmem.o $(FUZZ_DIR)/obj/tool_sqelf.o
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ $(TOOLS_LDLIBS) -pthread

$(FUZZ_DIR)/obj:
	mkdir -p $@

-include $(wildcard $(FUZZ_DIR)/obj/*.d)
