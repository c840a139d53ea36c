#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# scripts/soak.sh [SECONDS] [AWFY_DIR] - the VM and the tools under stress for SECONDS
# (default 600; make soak). Meanwhile:
#   - one VM runs the bundled workload forever under --gc-verify and a 256 MiB --heap,
#     and every few seconds a different tool attaches to it for 1-3 s and detaches
#     (sqalloc --sample, sqgc, sqprof, sqstat, sqcalls, sqflow, sqsched, sqstack, sqalloc);
#   - a second loop runs the benchmarks of tests/bench (and, given AWFY_DIR, AWFY's own
#     SOM benchmarks) one after another under --gc-verify.
# Every VM run must end with status 0 and every tool run with status 0; the long VM must
# still be running at the end with its resident memory bounded (no more than 4 times
# its size after the first minute). Prints the figures and "N passed, N failed".
# Needs root for the tools (without root only the VM loops run).
set -u
cd "$(dirname "$0")/.."
T=${1:-600}
AWFY=${2:-${AWFY_DIR:-}}
make -s all >/dev/null || exit 1
TMPD=$(mktemp -d)
trap 'kill $LONG 2>/dev/null; rm -rf "$TMPD"' EXIT
end=$(( $(date +%s) + T ))
passed=0 failed=0
note_fail() { failed=$((failed + 1)); echo "FAIL $*" >&2; }

build/sqvm --gc-verify --heap 256M examples/Workload.som forever >/dev/null 2>"$TMPD/long.err" &
LONG=$!
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status" 2>/dev/null; }

# the tool loop (root only)
tools_loop() {
    local i=0 t st
    local tools=("sqalloc -p $LONG --sample -d 2" "sqgc -p $LONG -d 2" "sqprof -p $LONG -d 2 -n 3"
                 "sqstat -p $LONG 1 2" "sqcalls -p $LONG -d 1 -n 3" "sqflow -p $LONG -d 1 -C Workload"
                 "sqsched -p $LONG -d 1 -n 3" "sqstack -p $LONG" "sqalloc -p $LONG -d 1 -n 3")
    while [ "$(date +%s)" -lt "$end" ]; do
        t=${tools[$((i % ${#tools[@]}))]}
        # shellcheck disable=SC2086
        timeout 30 build/tools/$t >"$TMPD/tool.out" 2>&1; st=$?
        if [ "$st" = 0 ]; then echo "tool ok" >>"$TMPD/results"
        else echo "tool FAIL $t: status $st: $(tail -3 "$TMPD/tool.out")" >>"$TMPD/results"; fi
        i=$((i + 1))
        sleep 1
    done
}

# the benchmark loop
# (the sizes tests/som.sh runs AWFY at: the ones AWFY verifies)
AWFY_SIZES=$(awk '/^AWFY_TEST_SIZES="/ { sub(/^AWFY_TEST_SIZES="/, ""); on = 1 } on { printf "%s ", $0 } /"$/ && on { exit }' tests/som.sh | tr -d '"\\')
bench_loop() {
    # the sizes of tests/bench/run.sh: about a second each untraced, longer verified
    local b n st entry benches=("Richards 20" "DeltaBlue 160" "Json 75" "Havlak 1" "CD 50" "Bounce 100"
        "List 100" "Mandelbrot 22" "NBody 250" "Permute 60" "Queens 80" "Sieve 100" "Storage 130"
        "Towers 60" "BinaryTrees 16" "AirTraffic 16" "PingPong 40")
    while [ "$(date +%s)" -lt "$end" ]; do
        for entry in "${benches[@]}"; do
            read -r b n <<<"$entry"
            [ "$(date +%s)" -lt "$end" ] || break
            if [ -f "tests/bench/$b.som" ]; then
                timeout 300 build/sqvm --gc-verify -cp tests/bench tests/bench/BenchmarkHarness.som "$b" 1 "$n" >"$TMPD/b.out" 2>&1; st=$?
                if [ "$st" = 0 ]; then echo "vm ok" >>"$TMPD/results"
                else echo "vm FAIL $b: status $st: $(tail -3 "$TMPD/b.out")" >>"$TMPD/results"; fi
            fi
            # AWFY verifies its results at the sizes it knows (tests/som.sh's)
            local an
            an=$(tr ' ' '\n' <<<"$AWFY_SIZES" | sed -n "s/^$b://p")
            if [ -n "$AWFY" ] && [ -n "$an" ]; then
                (cd "$AWFY/benchmarks/SOM" && timeout 300 "$OLDPWD/build/sqvm" --gc-verify \
                    -cp .:Core:CD:DeltaBlue:Havlak:Json:NBody:Richards Harness.som "$b" 1 "$an") >"$TMPD/a.out" 2>&1; st=$?
                if [ "$st" = 0 ]; then echo "vm ok" >>"$TMPD/results"
                else echo "vm FAIL awfy $b: status $st: $(tail -3 "$TMPD/a.out")" >>"$TMPD/results"; fi
            fi
        done
    done
}

: >"$TMPD/results"
echo "soak: ${T}s; long VM PID $LONG (--gc-verify --heap 256M)" >&2
[ "$(id -u)" = 0 ] && tools_loop &
TL=$!
bench_loop &
BL=$!
first=$(( T < 120 ? T / 2 : 60 ))
sleep "$first"; rss1=$(rss "$LONG")
wait $BL; [ "$(id -u)" = 0 ] && wait $TL
rss2=$(rss "$LONG")
vm_ok=$(grep -c '^vm ok' "$TMPD/results"); tool_ok=$(grep -c '^tool ok' "$TMPD/results")
grep FAIL "$TMPD/results" >&2
nfail=$(grep -c FAIL "$TMPD/results")
passed=$((vm_ok + tool_ok)); failed=$nfail
if kill -0 "$LONG" 2>/dev/null && [ -n "$rss1" ] && [ -n "$rss2" ] && [ "$rss2" -le $((rss1 * 4)) ]; then
    passed=$((passed + 1))
else
    note_fail "long VM: alive $(kill -0 "$LONG" 2>/dev/null && echo yes || echo no), RSS ${rss1:-?} KB after ${first}s, ${rss2:-?} KB at the end: $(tail -5 "$TMPD/long.err")"
fi
echo "soak: ${T}s, $vm_ok benchmark runs under --gc-verify, $tool_ok tool attach/detach cycles, long VM RSS ${rss1:-?} KB after ${first}s, ${rss2:-?} KB at the end"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
