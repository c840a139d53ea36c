# SPDX-License-Identifier: BSD-2-Clause
# tests/hostile: the fake VMs of the hostile tier (tests/hostile.sh), in $(O)/hostile
# (build/hostile, or build/asan/hostile under SANITIZE=1). They use the VM's generated
# probe header, so their sites and semaphores are the VM's.
HOSTILE_BIN := $(O)/hostile/fakevm
.PHONY: hostile
hostile: $(HOSTILE_BIN)
$(HOSTILE_BIN): tests/hostile/fakevm.c probes/debug_offsets.h $(O)/gen/squeak_probes.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -g -Wall -Wextra -I$(O)/gen -Iprobes -o $@ $< -lpthread
