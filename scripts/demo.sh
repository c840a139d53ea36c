#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# scripts/demo.sh - the main job: installs what is missing, builds everything, runs the bundled
# workload (examples/Workload.som), then runs it again under the tools and shows what they see:
# sqalloc (allocations by class), sqalloc -m -c <busiest class> (which methods allocate it) and
# sqgc (collection pauses). The tools need root (BPF); without it only the workload runs.
set -e
cd "$(dirname "$0")/.."
scripts/deps.sh
make -j"$(nproc)" all >/dev/null

VM=$(readlink -f build/sqvm)
echo "== build/sqvm --gc-stats examples/Workload.som"
build/sqvm --gc-stats examples/Workload.som

if [ "$(id -u)" != 0 ]; then
    echo "(the eBPF tools need root: run scripts/demo.sh as root to see them at work)"
    exit 0
fi
mountpoint -q /sys/kernel/tracing 2>/dev/null || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true

# under ROUNDS TOOL ARGS...: start the tool system-wide on this VM binary, wait until it
# is attached, run the workload, then stop the tool (SIGINT) so it prints its summary.
under() {
    local rounds=$1 out
    shift
    out=$(mktemp)
    "$@" --vm "$VM" >"$out" 2>&1 &
    local pid=$!
    for _ in $(seq 100); do grep -q "Tracing" "$out" && break; sleep 0.1; done
    build/sqvm examples/Workload.som "$rounds" >/dev/null
    sleep 0.2
    kill -INT "$pid" 2>/dev/null || true
    wait "$pid" || true
    cat "$out"
    rm -f "$out"
}

echo
# Tracing every allocation costs microseconds per object: a short run for sqalloc.
echo "== sqalloc: objects allocated by class (examples/Workload.som 3)"
alloc=$(under 3 build/tools/sqalloc)
echo "$alloc"
busiest=$(echo "$alloc" | awk '/^CLASS/ { getline; print $1; exit }')
echo
echo "== sqalloc -m -c ${busiest:-Point}: which methods allocate the busiest class"
under 3 build/tools/sqalloc -m -c "${busiest:-Point}"
echo
echo "== sqgc: young (incremental) and full collection pauses (examples/Workload.som 30)"
under 30 build/tools/sqgc
