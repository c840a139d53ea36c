# SPDX-License-Identifier: BSD-2-Clause
# sqvm: a SOM Smalltalk VM with USDT probes, and the eBPF tools that observe it.
#
#   make              build the VM (build/sqvm)
#   make test         build and run the fast test tier (what CI runs)
#   make check-all    the fast tier plus the slow ones (sanitizers, GC stress)
#   make bench        the quick benchmark suite (tests/bench), side by side with Lua 5.4
#   make bench-awfy [AWFY=DIR]  are-we-fast-yet's SOM benchmarks beside its Lua ones
#   make check-som [SOM_DIR=DIR AWFY_DIR=DIR]  SOM's TestSuite and AWFY's benchmarks
#                     (both default to the copies in ../shared/suites)
#   make deps         install the Debian packages the project needs (as root)
#   make SANITIZE=1   ASan+UBSan build in build/asan
#   make DEBUG=1      assertions and switch dispatch in build/debug
#   make GC_STRESS=1  collect at every safe point, in build/stress
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
else
  O := build
  CFLAGS_MODE := -O2
endif

# USDT probes: probes/squeak.d is the source of truth; dtrace -h/-G generate the
# header and the semaphores.
PROBES ?= 1
ifeq ($(PROBES),0)
  ifeq ($(O),build)
    O := build/noprobes
  else
    O := $(O)-noprobes
  endif
  PROBE_OBJ :=
  PROBE_HDR :=
else
  PROBE_OBJ := $(O)/obj/squeak_probes.o
  PROBE_HDR := $(O)/gen/squeak_probes.h
  # an 8-byte view of the four call probes' adjacent semaphores and a 4-byte one
  # of the two allocation probes' (vm/probes.h)
  PROBE_LDFLAGS := -Wl,--defsym=sqvm_call_semaphores=squeak_method__entry_semaphore \
                   -Wl,--defsym=sqvm_alloc_semaphores=squeak_object__alloc_semaphore
endif

CFLAGS ?=
CFLAGS_ALL := $(CFLAGS_BASE) $(CFLAGS_MODE) $(CFLAGS) -DSQVM_PROBES=$(PROBES) -I$(O)/gen -iquote vm -Iprobes
LDLIBS := -lm

VM_SRC := $(wildcard vm/*.c)
VM_OBJ := $(patsubst vm/%.c,$(O)/obj/%.o,$(VM_SRC)) $(O)/obj/corelib.o $(PROBE_OBJ)
CORELIB := $(sort $(wildcard vm/lib/*.som))

.PHONY: soak all vm test check-all check-som bench bench-awfy bench-probes bench-timers bench-tools bench-sqprof bench-bigint clean install deps unit lang
all: vm

vm: $(O)/sqvm

$(O)/sqvm: $(VM_OBJ)
	$(CC) $(CFLAGS_ALL) $(LDFLAGS_MODE) $(PROBE_LDFLAGS) -o $@ $^ $(LDLIBS)

# Each object depends on the headers it includes (-MMD writes them to a .d file; -MP
# keeps a deleted header from breaking the build). The generated probe header is an
# order-only prerequisite: it must exist before the first compile, and the .d files
# then record who includes it.
$(O)/obj/%.o: vm/%.c | $(O)/obj $(PROBE_HDR)
	$(CC) $(CFLAGS_ALL) -MMD -MP -c -o $@ $<

-include $(VM_OBJ:.o=.d)

$(O)/gen/squeak_probes.h: probes/squeak.d | $(O)/obj
	@mkdir -p $(O)/gen
	dtrace -h -s $< -o $@

$(O)/obj/squeak_probes.o: probes/squeak.d | $(O)/obj
	dtrace -G -s $< -o $@

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

# The C unit tests (tests/run.sh's unit tier)
unit: build/bigint_test build/float_test

# The eBPF tools (bpf/, tools/) have their own rules.
-include tools/tools.mk
# libFuzzer targets (fuzz/): make fuzz
include fuzz/fuzz.mk

test: all unit
	tests/run.sh --vm $(O)/sqvm

check-all: all unit
	tests/run.sh --vm build/sqvm --all

bench: vm
	tests/bench/run.sh $(O)/sqvm

# The headline figures: are-we-fast-yet's own SOM and Lua programs at AWFY's sizes.
# AWFY= (or AWFY_DIR=) names the checkout; by default the copy in ../shared/suites.
AWFY ?= $(or $(AWFY_DIR),$(wildcard ../shared/suites/are-we-fast-yet))
bench-awfy: vm
	tests/bench/awfy.sh "$(AWFY)" $(O)/sqvm

# The standard suites from external checkouts, by default ../shared/suites (tests/som.sh).
check-som: vm
	tests/run.sh --vm $(O)/sqvm --tier tests/som.sh

# What the USDT probes cost: PROBES=0 vs compiled in vs attached (root for attached).
# Ten minutes of the VM and the tools under stress (scripts/soak.sh; not in CI).
soak: all
	scripts/soak.sh $(or $(SOAK_TIME),600) $(AWFY_DIR)

bench-probes:
	tests/bench/probes.sh

# Delay lateness and what preemption costs (tests/bench/timers.sh; VMS= to compare builds).
bench-timers: vm
	tests/bench/timers.sh $(or $(VMS),$(O)/sqvm)

# Start-up to attached and slowdowns under each tool (root).
bench-tools:
	tests/bench/tools.sh

# What sqprof costs at 99 and 999 Hz (root; about 5 minutes).
bench-sqprof: all
	tests/sqprof/overhead.sh

# Karatsuba against schoolbook multiplication: the crossover behind its cutoff (1.5 minutes).
bench-bigint: build/bigint_test
	build/bigint_test --crossover

deps:
	scripts/deps.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man8 $(DESTDIR)$(PREFIX)/share/sqvm/bpftrace
	install -m 755 $(O)/sqvm $(DESTDIR)$(PREFIX)/bin/
	install -m 755 $(TOOLS_BIN) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(wildcard tools/*.8) $(DESTDIR)$(PREFIX)/share/man/man8/
	install -m 644 $(wildcard bpftrace/*.bt bpftrace/*.md) $(DESTDIR)$(PREFIX)/share/sqvm/bpftrace/

clean:
	rm -rf build

# The dispatch loop: keep each opcode's own indirect jump (no cross-jumping or
# GCSE merging them into one shared, badly predicted dispatch).
$(O)/obj/interp.o: CFLAGS_ALL += -fno-gcse -fno-crossjumping
