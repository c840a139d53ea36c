#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# tests/bench/probes.sh - what the probes cost. First the instructions (callgrind, which
# counts them repeatably on a shared machine) of the normal build with nothing attached
# against a PROBES=0 build, per benchmark: the unattached probes' overhead, which must
# stay under 1%. Then run times (best of BENCH_RUNS) of both, and with bpftrace attached
# to each probe group, as ratios against PROBES=0 / unattached.
#
#   tests/bench/probes.sh [Name...]        (as root for the attached columns)
#   BENCH_CALLGRIND=0 skips the instruction counts
set -u
cd "$(dirname "$0")/../.."
runs=${BENCH_RUNS:-3}
make -s vm >/dev/null && make -s PROBES=0 vm >/dev/null || exit 1
TMPD=$(mktemp -d)
trap 'rm -rf "$TMPD"' EXIT
# Private copies: uprobes attach to a file, so a tracer someone else attached to
# build/sqvm cannot slow these runs down, nor ours theirs.
cp build/sqvm "$TMPD/sqvm"
cp build/noprobes/sqvm "$TMPD/sqvm-noprobes"
VM=$TMPD/sqvm
NOPROBES=$TMPD/sqvm-noprobes
benchmarks=("Richards 20 1" "DeltaBlue 160 1" "BinaryTrees 16 1" "Json 75 10" "Bounce 100 10" "NBody 250 1" "AirTraffic 16 1")
if (( $# > 0 )); then
    sel=()
    for want in "$@"; do for e in "${benchmarks[@]}"; do [[ ${e%% *} == "$want" ]] && sel+=("$e"); done; done
    benchmarks=("${sel[@]}")
fi

best() { # vm name outer inner -> best microseconds
    local b="" us i
    for ((i = 0; i < runs; i++)); do
        us=$("$1" -cp tests/bench tests/bench/BenchmarkHarness.som "$2" "$3" "$4" 2>/dev/null |
             sed -n "s/^$2: iterations=[0-9]* runtime: \([0-9]*\)us$/\1/p")
        [ -z "$us" ] && { echo 0; return; }
        if [ -z "$b" ] || (( us < b )); then b=$us; fi
    done
    echo "$b"
}

# attach GROUP: bpftrace on every process of the binary, in the background
attach() {
    local prog
    case "$1" in
        alloc) prog="usdt:$VM:squeak:object__alloc { @[str(arg0)] = count(); }" ;;
        sample) prog="usdt:$VM:squeak:object__alloc__sample { @[str(arg0)] = sum(arg4); }" ;;
        methods) prog="usdt:$VM:squeak:method__entry { @e = count(); } usdt:$VM:squeak:method__return { @r = count(); }" ;;
        gc) prog="usdt:$VM:squeak:gc__incremental__end { @y = hist(arg1); } usdt:$VM:squeak:gc__full__end { @f = hist(arg1); }" ;;
    esac
    bpftrace -e "$prog" >"$TMPD/bt.err" 2>&1 &
    BT=$!
    for _ in $(seq 200); do grep -q Attaching "$TMPD/bt.err" 2>/dev/null && break; sleep 0.05; done
    # bpftrace prints "Attaching" on stdout; give it a moment either way
    sleep 1
}
detach() { kill -INT "$BT" 2>/dev/null; wait "$BT" 2>/dev/null; }

groups=()
if [ "$(id -u)" = 0 ] && command -v bpftrace >/dev/null; then groups=(gc sample alloc methods); fi

# Unattached probes, in instructions: one iteration of each benchmark (start-up and
# compiling included, as in any run).
if [ "${BENCH_CALLGRIND:-1}" = 1 ] && command -v valgrind >/dev/null; then
    instructions() { # vm name outer inner
        valgrind --tool=callgrind --callgrind-out-file=/dev/null "$1" -cp tests/bench tests/bench/BenchmarkHarness.som \
            "$2" "$3" "$4" 2>&1 >/dev/null | sed -n 's/^==[0-9]*== Collected : \([0-9]*\)$/\1/p'
    }
    cg_benchmarks=("Richards 1 1" "Mandelbrot 1 1" "Json 1 1" "Storage 1 1" "DeltaBlue 1 1" "Queens 1 10" "BinaryTrees 1 1" "NBody 1 1")
    printf '%-12s %14s %14s %10s\n' benchmark "PROBES=0 instr" "probes instr" "overhead"
    worst=0
    for e in "${cg_benchmarks[@]}"; do
        read -r name outer inner <<<"$e"
        if (( $# > 0 )) && [[ " $* " != *" $name "* ]]; then continue; fi
        a=$(instructions "$NOPROBES" "$name" "$outer" "$inner")
        b=$(instructions "$VM" "$name" "$outer" "$inner")
        pct=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%+.2f%%", (b / a - 1) * 100 }')
        worst=$(awk -v w="$worst" -v a="$a" -v b="$b" 'BEGIN { x = (b / a - 1) * 100; print (x > w ? x : w) }')
        printf '%-12s %14s %14s %10s\n' "$name" "$a" "$b" "$pct"
    done
    awk -v w="$worst" 'BEGIN { printf "(unattached probes: at most %+.2f%% instructions; the goal is under 1%%)\n\n", w }'
fi

printf '%-12s %10s %10s %8s' benchmark "PROBES=0" "probes" "ratio"
for g in "${groups[@]}"; do printf ' %9s' "+$g"; done
echo
declare -A logsum
logsum[base]=0
for g in "${groups[@]}"; do logsum[$g]=0; done
n=0
for e in "${benchmarks[@]}"; do
    read -r name outer inner <<<"$e"
    a=$(best "$NOPROBES" "$name" "$outer" "$inner")
    b=$(best "$VM" "$name" "$outer" "$inner")
    r=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", b / a }')
    logsum[base]=$(awk -v s="${logsum[base]}" -v r="$r" 'BEGIN { print s + log(r) }')
    printf '%-12s %10.1f %10.1f %8s' "$name" "$(awk -v x="$a" 'BEGIN{print x/1000}')" "$(awk -v x="$b" 'BEGIN{print x/1000}')" "$r"
    small=""
    for g in "${groups[@]}"; do
        # Tracing every allocation or call costs about a microsecond per event: those
        # groups run one iteration, compared with one unattached iteration.
        if [ "$g" = alloc ] || [ "$g" = methods ]; then
            [ -z "$small" ] && small=$(best "$VM" "$name" 1 1)
            attach "$g"
            c=$(best "$VM" "$name" 1 1)
            detach
            rg=$(awk -v b="$small" -v c="$c" 'BEGIN { printf "%.1f", c / b }')
        else
            attach "$g"
            c=$(best "$VM" "$name" "$outer" "$inner")
            detach
            rg=$(awk -v b="$b" -v c="$c" 'BEGIN { printf "%.3f", c / b }')
        fi
        logsum[$g]=$(awk -v s="${logsum[$g]}" -v r="$rg" 'BEGIN { print s + log(r) }')
        printf ' %9s' "$rg"
    done
    echo
    n=$((n + 1))
done
printf '%-12s %10s %10s %8s' geomean "" "" "$(awk -v s="${logsum[base]}" -v n=$n 'BEGIN { printf "%.3f", exp(s / n) }')"
for g in "${groups[@]}"; do printf ' %9s' "$(awk -v s="${logsum[$g]}" -v n=$n 'BEGIN { printf "%.3f", exp(s / n) }')"; done
echo
echo "(ratio: probes compiled in, nothing attached, vs PROBES=0; +group: attached vs not attached)"
