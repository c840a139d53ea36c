#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# tests/bench/awfy.sh - are-we-fast-yet's own SOM benchmarks on sqvm, beside AWFY's own
# Lua versions on Lua 5.4 (and LuaJIT's interpreter, luajit -joff, where installed), at
# AWFY's sizes, in CPU time. Nothing of AWFY is copied here: it takes a checkout.
#
#   tests/bench/awfy.sh AWFY_DIR [VM]         (make bench-awfy AWFY=/path/to/are-we-fast-yet)
#
# Environment:
#   AWFY_RUNS      rounds (default 3); each round runs every VM once per benchmark,
#                  alternating, and the table shows the median round
#   AWFY_ONLY      names of benchmarks to run (default: all 14)
#   AWFY_OUTER     outer iterations per run (default 1)
#   AWFY_SIZES     short, rebench or both (default both): which size set(s) to run
#   LUA, LUAJIT    the interpreters (default lua5.4, luajit; "" leaves one out)
#
# Every run is a fresh process: "sqvm -cp .:Core:CD:DeltaBlue:Havlak:Json:NBody:Richards
# Harness.som NAME OUTER INNER" in benchmarks/SOM (AWFY's own configuration, with sqvm's
# embedded library) and "lua harness.lua NAME OUTER INNER" in benchmarks/Lua. INNER is
# the size of rebench.conf's steady-som suite (the "rebench" set), or a short size that
# runs each benchmark for about a second or less (the "short" set). The time is the process's user + system
# CPU time (bash's time), which includes start-up and compiling; a run that does not
# print AWFY's verified result line counts as FAIL.

set -u
awfy=${1:-}
if [ -z "$awfy" ] || [ ! -f "$awfy/benchmarks/SOM/Harness.som" ]; then
    echo "usage: make bench-awfy AWFY=/path/to/are-we-fast-yet" >&2
    echo "  (get it with: git clone https://github.com/smarr/are-we-fast-yet)" >&2
    [ -n "$awfy" ] && echo "  $awfy has no benchmarks/SOM/Harness.som" >&2
    exit 2
fi
awfy=$(cd "$awfy" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
vm=${2:-$root/build/sqvm}
[[ "$vm" != /* ]] && vm="$PWD/$vm"
runs=${AWFY_RUNS:-3}
outer=${AWFY_OUTER:-1}
lua=${LUA-lua5.4}
luajit=${LUAJIT-luajit}
command -v "$lua" >/dev/null 2>&1 || lua=""
command -v "$luajit" >/dev/null 2>&1 || luajit=""

# rebench.conf, steady-som: the inner iterations of each benchmark
rebench_sizes="DeltaBlue:12000 Richards:100 Json:100 CD:250 Havlak:1500 Bounce:1500 List:1500
Mandelbrot:500 NBody:250000 Permute:1000 Queens:1000 Sieve:3000 Storage:1000 Towers:600"
# short sizes: start-up is part of what is measured, as a script's user sees it
short_sizes="DeltaBlue:5000 Richards:10 Json:20 CD:100 Havlak:1 Bounce:300 List:600
Mandelbrot:750 NBody:250000 Permute:300 Queens:300 Sieve:600 Storage:100 Towers:150"
case "${AWFY_SIZES:-both}" in
    short) sets="short" ;;
    rebench) sets="rebench" ;;
    both) sets="short rebench" ;;
    *) echo "AWFY_SIZES must be short, rebench or both" >&2; exit 2 ;;
esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# cpu_run DIR NAME -- COMMAND...: runs COMMAND in DIR, prints its CPU seconds, or FAIL
cpu_run() {
    local dir=$1 name=$2
    shift 3
    local TIMEFORMAT='%3U %3S'
    { time (cd "$dir" && "$@" >"$tmp/out" 2>&1); } 2>"$tmp/time"
    local status=$?
    if [ "$status" != 0 ] || ! grep -q "^$name: iterations=1 runtime: [0-9]*us" "$tmp/out"; then
        echo FAIL
        cp "$tmp/out" "$tmp/fail.$name.$(basename "$1").$RANDOM"
        return
    fi
    awk '{ printf "%.3f", $1 + $2 }' "$tmp/time"
}

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else print v[int((NR + 1) / 2)] }'; }

printf '# are-we-fast-yet %s, %s runs (median), CPU seconds, 1 process per run\n' \
    "$(git --git-dir="$awfy/.git" rev-parse --short HEAD 2>/dev/null || echo checkout)" "$runs"
printf '# machine: %s, %s cores; %s; %s%s\n' "$(uname -m)" "$(nproc)" "$("$vm" --version)" \
    "${lua:+$($lua -v 2>&1 | head -1)}" "${luajit:+, $($luajit -v 2>&1 | head -1)}"
failed=0
# table SIZES: one table, a row per benchmark and the geomeans
table() {
    printf '%-11s %7s %9s %9s %11s %9s %11s\n' benchmark inner sqvm lua5.4 sqvm/lua "jit -joff" "-joff/lua"
    logsum=0 logn=0 jitsum=0 jitn=0
    for entry in $1; do
        name=${entry%%:*} inner=${entry#*:}
        if [ -n "${AWFY_ONLY:-}" ] && [[ " $AWFY_ONLY " != *" $name "* ]]; then continue; fi
        s="" l="" j=""
        for ((r = 0; r < runs; r++)); do
            s="$s $(cpu_run "$awfy/benchmarks/SOM" "$name" -- "$vm" -cp .:Core:CD:DeltaBlue:Havlak:Json:NBody:Richards Harness.som "$name" "$outer" "$inner")"
            [ -n "$lua" ] && l="$l $(cpu_run "$awfy/benchmarks/Lua" "$name" -- "$lua" harness.lua "$name" "$outer" "$inner")"
            [ -n "$luajit" ] && j="$j $(cpu_run "$awfy/benchmarks/Lua" "$name" -- "$luajit" -joff harness.lua "$name" "$outer" "$inner")"
        done
        if [[ "$s" == *FAIL* ]]; then failed=1; fi
        sm=$(median <<<"${s//FAIL/}") lm=$(median <<<"${l//FAIL/}") jm=$(median <<<"${j//FAIL/}")
        [[ "$s" == *FAIL* ]] && sm=FAIL
        ratio=- jratio=-
        if [ "$sm" != FAIL ] && [ "$lm" != - ]; then
            ratio=$(awk -v a="$sm" -v b="$lm" 'BEGIN { printf "%.2f", a / b }')
            logsum=$(awk -v s="$logsum" -v r="$ratio" 'BEGIN { print s + log(r) }'); logn=$((logn + 1))
        fi
        if [ "$jm" != - ] && [ "$lm" != - ]; then
            jratio=$(awk -v a="$jm" -v b="$lm" 'BEGIN { printf "%.2f", a / b }')
            jitsum=$(awk -v s="$jitsum" -v r="$jratio" 'BEGIN { print s + log(r) }'); jitn=$((jitn + 1))
        fi
        printf '%-11s %7s %9s %9s %11s %9s %11s\n' "$name" "$inner" "$sm" "$lm" "$ratio" "$jm" "$jratio"
    done
    [ "$logn" -gt 0 ] && printf '%-11s %7s %9s %9s %11s %9s %11s\n' geomean "" "" "" \
        "$(awk -v s="$logsum" -v n="$logn" 'BEGIN { printf "%.2f", exp(s / n) }')" "" \
        "$([ "$jitn" -gt 0 ] && awk -v s="$jitsum" -v n="$jitn" 'BEGIN { printf "%.2f", exp(s / n) }' || echo -)"
}
for set in $sets; do
    echo
    echo "## $set sizes"
    if [ "$set" = short ]; then table "$short_sizes"; else table "$rebench_sizes"; fi
done
if [ "$failed" = 1 ]; then
    echo "some sqvm runs failed:" >&2
    for f in "$tmp"/fail.*; do [ -f "$f" ] && { echo "== $f" >&2; tail -5 "$f" >&2; }; done
    exit 1
fi
