# SPDX-License-Identifier: BSD-2-Clause
# tests/hostile: the fake VMs of the hostile tier (tests/hostile.sh), in $(O)/hostile
# (build/hostile, or build/asan/hostile under SANITIZE=1). They use the VM's generated
# probe header, so their sites and semaphores are the VM's.
HOSTILE_BIN := $(O)/hostile/fakevm
.PHONY: hostile
hostile: $(HOSTILE_BIN)
# every site of the provider, each called with its arguments 0 but the names (a tool
# refuses a binary that lacks a probe it attaches to)
$(O)/hostile/sites.h: $(O)/gen/squeak_probes.h
	@mkdir -p $(dir $@)
	grep -o '^#define SQUEAK_[A-Z0-9_]*([a0-9, ]*)' $< | grep -v _ENABLED | \
	  sed -e 's/^#define //' -e 's/a1/NAME/' -e 's/a[0-9]*/0/g' -e 's/$$/;/' > $@.tmp && mv $@.tmp $@
$(HOSTILE_BIN): tests/hostile/fakevm.c probes/debug_offsets.h probes/record_ring.h probes/event_batch.h $(O)/gen/squeak_probes.h $(O)/hostile/sites.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -g -Wall -Wextra -Wno-int-conversion -I$(O)/gen -I$(O)/hostile -Iprobes -o $@ $< -lpthread
