# SPDX-License-Identifier: BSD-2-Clause
# tests/bench/bench.mk - the benchmark targets, included by the top Makefile (which
# defines O, vm, all and build/bigint_test). What each measures and how to read it:
# tests/bench/README.md.
#
#   make bench            the quick suite (run.sh), side by side with Lua 5.4
#   make bench-awfy       are-we-fast-yet's SOM benchmarks beside its Lua ones
#   make load             wrk on examples/http's service, beside asyncio and Node.js
#   make bench-probes, bench-timers, bench-tools, bench-sqprof, bench-bigint,
#        bench-service-tools, bench-service-side, bench-service-profile

.PHONY: bench bench-awfy bench-probes bench-timers bench-tools bench-service-tools bench-service-side \
        bench-service-profile bench-sqprof bench-bigint load

bench: vm
	tests/bench/run.sh $(O)/sqvm

# The headline figures: are-we-fast-yet's own SOM and Lua programs, at short sizes and
# at rebench's (AWFY_SIZES=short or rebench for one set). AWFY= (or AWFY_DIR=) names
# the checkout; by default the copy in ../shared/suites.
AWFY ?= $(or $(AWFY_DIR),$(wildcard ../shared/suites/are-we-fast-yet))
bench-awfy: vm
	tests/bench/awfy.sh "$(AWFY)" $(O)/sqvm

# What the USDT probes cost: PROBES=0 vs compiled in vs attached (root for attached).
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

# wrk against examples/http's server (/hello, then a mix), beside the same service in
# Python asyncio and Node.js, in one run; fails if any request failed (about 1 minute).
load: vm
	tests/bench/http/load.sh --anchors $(O)/sqvm

# What sqreq, sqprof (CPU, --wall), sqsched and sqio cost examples/http under wrk: req/s and
# the server's CPU per request, each run between two with none (root; LOAD=mix for the mix; ~9 min).
bench-service-tools: all
	flock /tmp/sqvm-heavy.lock tests/bench/service-tools.sh 10 3 64 $(or $(LOAD),hello)

# The same tools' cost side by side: two servers share a CPU, one traced, compared over the
# same seconds (steady where the sequential runs drift; root; ~5 min).
bench-service-side: all
	flock /tmp/sqvm-heavy.lock tests/bench/service-side.sh 8 3 32 $(or $(LOAD),hello)

# The same tools' cost counted in the server CPU's perf samples: their BPF programs, the
# uprobe path, the VM's records and their clock (root; needs perf; ~2 min).
bench-service-profile: all
	flock /tmp/sqvm-heavy.lock tests/bench/service-profile.sh 5

# Karatsuba against schoolbook multiplication: the crossover behind its cutoff (1.5 minutes).
bench-bigint: build/bigint_test
	build/bigint_test --crossover
