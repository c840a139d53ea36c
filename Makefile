# SPDX-License-Identifier: BSD-2-Clause
# sqvm: a SOM Smalltalk VM with USDT probes, and the eBPF tools that observe it.
#
#   make              build the VM (build/sqvm)
#   make test         build and run the default test tiers
#   make check-all    those plus the slow ones (sanitizers, GC stress, switch dispatch,
#                     fuzzers): what scripts/test.sh and CI run
#   make bench        the quick benchmark suite (tests/bench), side by side with Lua 5.4
#   make load         wrk on the HTTP service of examples/http, beside asyncio and Node.js
#   make bench-awfy [AWFY=DIR]  are-we-fast-yet's SOM benchmarks beside its Lua ones
#   make check-som [SOM_DIR=DIR AWFY_DIR=DIR]  SOM's TestSuite and AWFY's benchmarks
#                     (both default to the copies in ../shared/suites)
#   make deps         install the Debian packages the project needs (as root)
#   make deb          the tools as a Debian package, build/sqvm-tools_VERSION_ARCH.deb
#                     (packaging/README.md)
#   make SANITIZE=1   ASan+UBSan build in build/asan
#   make DEBUG=1      assertions and switch dispatch in build/debug
#   make GC_STRESS=1  collect at every safe point, in build/stress
#   make OPSTATS=1    count dispatched opcode pairs, in build/opstats (tests/bench/pairs.sh)
#   make PROBES=0     every USDT probe compiled out, in build/noprobes

PREFIX ?= /usr/local
DESTDIR ?=
CC ?= cc

WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wpointer-arith \
        -Wformat=2 -Wundef -Wvla -Wno-unused-parameter
CFLAGS_BASE := -std=gnu11 -g $(WARN) -fno-strict-aliasing

ifeq ($(SANITIZE),1)
  O := build/asan
  CFLAGS_MODE := -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
  LDFLAGS_MODE := -fsanitize=address,undefined
else ifeq ($(DEBUG),1)
  O := build/debug
  CFLAGS_MODE := -O0 -DSQVM_DEBUG
else ifeq ($(GC_STRESS),1)
  O := build/stress
  CFLAGS_MODE := -O1 -DSQVM_GC_STRESS -DSQVM_DEBUG
else ifeq ($(OPSTATS),1)
  O := build/opstats
  CFLAGS_MODE := -O2 -DSQVM_OPCODE_STATS
else
  O := build
  CFLAGS_MODE := -O2
endif

# USDT probes: probes/squeak.d is the source of truth; probes/usdt.awk generates the
# header of sites and semaphores from it. The sites are 5-byte nops on x86-64, which the
# kernel can turn into calls; PROBE_NOP=1 emits sys/sdt.h's 1-byte nop instead.
PROBES ?= 1
ifeq ($(PROBES),0)
  ifeq ($(O),build)
    O := build/noprobes
  else
    O := $(O)-noprobes
  endif
  PROBE_HDR :=
else
  PROBE_HDR := $(O)/gen/squeak_probes.h
  ifeq ($(PROBE_NOP),1)
    ifeq ($(O),build)
      O := build/nop1
    else
      O := $(O)-nop1
    endif
    PROBE_HDR := $(O)/gen/squeak_probes.h
    CFLAGS_MODE += -DSQVM_PROBE_NOP1
  endif
endif

CFLAGS ?=
CFLAGS_ALL := $(CFLAGS_BASE) $(CFLAGS_MODE) $(CFLAGS) -DSQVM_PROBES=$(PROBES) -I$(O)/gen -iquote vm -Iprobes
LDLIBS := -lm

VM_SRC := $(wildcard vm/*.c)
VM_OBJ := $(patsubst vm/%.c,$(O)/obj/%.o,$(VM_SRC)) $(O)/obj/corelib.o
CORELIB := $(sort $(wildcard vm/lib/*.som))

.PHONY: soak all vm test check-all check-hostile check-som clean install deps unit
all: vm

vm: $(O)/sqvm

$(O)/sqvm: $(VM_OBJ)
	$(CC) $(CFLAGS_ALL) $(LDFLAGS_MODE) -o $@ $^ $(LDLIBS)

# Each object depends on the headers it includes (-MMD writes them to a .d file; -MP
# keeps a deleted header from breaking the build). The generated probe header is an
# order-only prerequisite: it must exist before the first compile, and the .d files
# then record who includes it.
$(O)/obj/%.o: vm/%.c | $(O)/obj $(PROBE_HDR)
	$(CC) $(CFLAGS_ALL) -MMD -MP -c -o $@ $<

-include $(VM_OBJ:.o=.d)

$(O)/gen/squeak_probes.h: probes/squeak.d probes/usdt.awk | $(O)/obj
	@mkdir -p $(O)/gen
	awk -f probes/usdt.awk $< > $@.tmp && mv $@.tmp $@

# The core library is compiled into the binary, so sqvm runs from anywhere.
$(O)/gen/corelib.c: $(CORELIB) build/embed | $(O)/obj
	@mkdir -p $(O)/gen
	build/embed $(CORELIB) > $@

$(O)/obj/corelib.o: $(O)/gen/corelib.c
	$(CC) -std=gnu11 -O0 -c -o $@ $<

build/embed: scripts/embed.c
	@mkdir -p build
	$(CC) -O1 -o $@ $<

$(O)/obj:
	mkdir -p $@

# ---- Tests ----
build/bigint_test: tests/unit/bigint_test.c tests/unit/bigint_scale_test.c tests/unit/bigint_check.h vm/bigint.c vm/bigint.h
	@mkdir -p build
	$(CC) -std=gnu11 -O2 -Wall -Wextra -Ivm -Iprobes -o $@ tests/unit/bigint_test.c tests/unit/bigint_scale_test.c vm/bigint.c -lm

build/float_test: tests/unit/float_test.c vm/common.h probes/debug_offsets.h
	@mkdir -p build
	$(CC) -std=gnu11 -O2 -Wall -Wextra -Ivm -Iprobes -o $@ tests/unit/float_test.c -lm

# What the tools print of a target's names (tools/sqoutput.c), byte for byte
build/printable_test: tests/unit/printable_test.c tools/sqoutput.c tools/sqoutput.h tools/sqopts.h
	@mkdir -p build
	$(CC) -std=gnu11 -O2 -Wall -Wextra -Itools -o $@ tests/unit/printable_test.c tools/sqoutput.c

# The exporter's HTTP server against 4,000 pipelined requests on a 256 KiB stack, built
# without optimisation so that no compiler makes a recursion a loop (review finding 18)
build/http_pipeline_test: tests/unit/http_pipeline_test.c tools/sqhttp.c tools/sqhttp.h tools/sqaccept.c tools/sqaccept.h tools/sqopts.c tools/sqopts.h
	@mkdir -p build
	$(CC) -std=gnu11 -O0 -g -Wall -Wextra -Itools -o $@ tests/unit/http_pipeline_test.c tools/sqhttp.c tools/sqaccept.c tools/sqopts.c -lm -lpthread

# The exporter's two formats byte for byte, and its content negotiation
build/metrics_test: tests/unit/metrics_test.c tools/sqmetrics.c tools/sqmetrics.h tools/sqaccept.c tools/sqaccept.h tools/sqoutput.c tools/sqoutput.h
	@mkdir -p build
	$(CC) -std=gnu11 -O2 -Wall -Wextra -Itools -o $@ tests/unit/metrics_test.c tools/sqmetrics.c tools/sqaccept.c tools/sqoutput.c

# The C unit tests (tests/run.sh's unit tier)
unit: build/bigint_test build/float_test build/printable_test build/http_pipeline_test build/drain_test build/names_test \
      build/json_test build/metrics_test

# The eBPF tools (bpf/, tools/) have their own rules.
-include tools/tools.mk
# Unit tests of the tools' shared code, linked with its objects (after tools.mk, whose
# TOOLS_LIB_OBJ they are): the names cache against more names than it keeps (review
# finding 16); sq_loop_drain's budget against a ring buffer a BPF program floods (finding
# 19; needs root to run, skipped otherwise)
build/names_test: tests/unit/names_test.c tools/sqnames.h $(TOOLS_LIB_OBJ)
	@mkdir -p build
	$(CC) -std=gnu11 -O2 -Wall -Wextra -Itools -Ibpf -Iprobes -I$(TOOLS_GEN) -o $@ tests/unit/names_test.c $(TOOLS_LIB_OBJ) $(TOOLS_LDLIBS)
# The JSON reader sqdoctor reads its recorders with, on exact and refused texts
build/json_test: tests/unit/json_test.c tools/sqjson.c tools/sqjson.h
	@mkdir -p build
	$(CC) -std=gnu11 -O2 -Wall -Wextra -Itools -o $@ tests/unit/json_test.c tools/sqjson.c
build/tests/ringflood.bpf.o: tests/unit/ringflood.bpf.c
	@mkdir -p build/tests
	$(BPF_CLANG) -target bpf -g -O2 -Wall -I/usr/include/$(TOOLS_MULTIARCH) -c $< -o $@
build/drain_test: tests/unit/drain_test.c tools/sqloop.h $(TOOLS_LIB_OBJ) build/tests/ringflood.bpf.o
	@mkdir -p build
	$(CC) -std=gnu11 -O2 -Wall -Wextra -Wno-unused-parameter -Itools -o $@ tests/unit/drain_test.c $(TOOLS_LIB_OBJ) $(TOOLS_LDLIBS) -lpthread

# libFuzzer targets (fuzz/): make fuzz
include fuzz/fuzz.mk
include tests/hostile/hostile.mk
# make deb: the tools as a Debian package (packaging/)
include packaging/deb.mk

# The hostile tier alone (tests/hostile.sh); with SANITIZE=1, the tools and fakes built
# with ASan+UBSan: make SANITIZE=1 check-hostile
check-hostile: all hostile
	HOSTILE_O=$(O) tests/run.sh --vm $(O)/sqvm --tier tests/hostile.sh

test: all unit
	tests/run.sh --vm $(O)/sqvm

check-all: all unit
	tests/run.sh --vm build/sqvm --all

# make bench, load, bench-awfy, bench-probes, ...: the benchmarks (tests/bench/).
include tests/bench/bench.mk

# The standard suites from external checkouts, by default ../shared/suites (tests/som.sh).
check-som: vm
	tests/run.sh --vm $(O)/sqvm --tier tests/som.sh

# Ten minutes of the VM and the tools under stress (scripts/soak.sh; not in CI).
soak: all
	scripts/soak.sh $(or $(SOAK_TIME),600) $(AWFY_DIR)

deps:
	scripts/deps.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man8 $(DESTDIR)$(PREFIX)/share/sqvm/bpftrace
	install -m 755 $(O)/sqvm $(DESTDIR)$(PREFIX)/bin/
	install -m 755 $(TOOLS_BIN) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(TOOLS_MAN) $(DESTDIR)$(PREFIX)/share/man/man8/
	install -m 644 $(TOOLS_BPFTRACE) $(DESTDIR)$(PREFIX)/share/sqvm/bpftrace/

clean:
	rm -rf build

# The dispatch loop: keep each opcode's own indirect jump (no cross-jumping or
# GCSE merging them into one shared, badly predicted dispatch), and its frame loads
# in general registers (the SLP vectorizer pairs ip and sp in an SSE register, two
# instructions more per activation).
$(O)/obj/interp.o: CFLAGS_ALL += -fno-gcse -fno-crossjumping -fno-tree-slp-vectorize

# The probe sites (all in probes.c and record.c) keep nothing below the stack pointer: a uprobe that
# the kernel optimizes into a call pushes its return address there, into the red zone.
ifeq ($(shell $(CC) -dumpmachine | cut -d- -f1),x86_64)
$(O)/obj/probes.o $(O)/obj/record.o: CFLAGS_ALL += -mno-red-zone
endif
