#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Runs the sqvm benchmark suite and compares it with the Lua 5.4 versions.
#
#   tests/bench/run.sh [VM [Name...]]
#
#   VM      the sqvm binary (default: build/sqvm, relative to the repository)
#   Name    run only these benchmarks (default: all of them)
#
# Environment:
#   BENCH_RUNS     runs of each benchmark, the best (minimum) is kept (default 3)
#   BENCH_TIMEOUT  seconds one run may take before it counts as failed (default 300)
#   LUA            the Lua interpreter (default lua5.4)
#   BENCH_QUICK=1  smoke test: every benchmark once (1 outer, 1 inner
#                  iteration, one run), to check the results quickly
#
# For each benchmark it runs
#   "$VM" -cp tests/bench tests/bench/BenchmarkHarness.som Name OUTER INNER
#   lua5.4 tests/bench/lua/harness.lua Name OUTER INNER
# and prints the best time of each in milliseconds, the ratio sqvm/lua and,
# at the end, the geometric mean of the ratios. A sqvm run that exits
# non-zero, or prints no "Name: iterations=N runtime: Tus" line, shows FAIL;
# the script then goes on and exits 1 at the end.

set -u

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"

vm="${1:-build/sqvm}"
shift || true
# Resolve the VM path before changing directory: relative to the caller's
# directory if it exists there, else relative to the repository.
if [[ "$vm" != /* ]]; then
    if [[ -e "$PWD/$vm" ]]; then
        vm="$PWD/$vm"
    else
        vm="$root/$vm"
    fi
fi
cd "$root" || exit 1

runs="${BENCH_RUNS:-3}"
limit="${BENCH_TIMEOUT:-300}"
lua="${LUA:-lua5.4}"

# name outer inner: chosen so that each takes about 0.5 s in Lua 5.4 on the
# project's machine (2-core AMD EPYC); the whole suite stays within a few
# minutes as long as sqvm is not much slower than Lua.
benchmarks=(
    "Fib          90   1"
    "Loop         45  10"
    "Sieve       200  10"
    "Towers      300   1"
    "Queens       80  10"
    "Permute      60  10"
    "Bounce      100  10"
    "List        100  10"
    "Storage     130   1"
    "Richards     20   1"
    "DeltaBlue   160   1"
    "NBody       250   1"
    "Mandelbrot   22   1"
    "BinaryTrees  16   1"
    "Json         75  10"
    "AirTraffic   16   1"
    "PingPong     40   1"
)

if [[ "${BENCH_QUICK:-0}" == 1 ]]; then
    runs=1
    quick=()
    for entry in "${benchmarks[@]}"; do
        read -r name _ <<<"$entry"
        quick+=("$name 1 1")
    done
    benchmarks=("${quick[@]}")
fi

if (( $# > 0 )); then
    selected=()
    for want in "$@"; do
        found=""
        for entry in "${benchmarks[@]}"; do
            read -r name _ <<<"$entry"
            if [[ "$name" == "$want" ]]; then
                selected+=("$entry")
                found=1
            fi
        done
        if [[ -z "$found" ]]; then
            echo "run.sh: unknown benchmark: $want" >&2
            exit 2
        fi
    done
    benchmarks=("${selected[@]}")
fi

timeout_cmd=()
if command -v timeout >/dev/null 2>&1; then
    timeout_cmd=(timeout "$limit")
fi

have_lua=1
if ! command -v "$lua" >/dev/null 2>&1; then
    have_lua=0
fi

have_vm=1
if [[ ! -x "$vm" ]]; then
    echo "run.sh: sqvm binary not found or not executable: $vm" >&2
    have_vm=0
fi

# best_of NAME CMD...: runs CMD $runs times; prints the best runtime in
# microseconds, or nothing when a run failed.
best_of() {
    local name="$1"
    shift
    local best="" out us i
    for ((i = 0; i < runs; i++)); do
        if ! out="$("${timeout_cmd[@]}" "$@" 2>/dev/null)"; then
            return 1
        fi
        us="$(printf '%s\n' "$out" |
              sed -n "s/^$name: iterations=[0-9][0-9]* runtime: \([0-9][0-9]*\)us\$/\1/p" |
              tail -n 1)"
        if [[ -z "$us" ]]; then
            return 1
        fi
        if [[ -z "$best" ]] || (( us < best )); then
            best="$us"
        fi
    done
    echo "$best"
}

ms() {
    awk -v us="$1" 'BEGIN { printf "%.1f", us / 1000 }'
}

if (( have_lua )); then
    printf '%-12s %12s %12s %10s\n' "benchmark" "sqvm ms" "lua ms" "sqvm/lua"
else
    echo "lua5.4 not found: showing the sqvm times only."
    printf '%-12s %12s\n' "benchmark" "sqvm ms"
fi

failed=0
ratios=()
for entry in "${benchmarks[@]}"; do
    read -r name outer inner <<<"$entry"

    sqvm_col="FAIL"
    sqvm_us=""
    if (( have_vm )) && sqvm_us="$(best_of "$name" "$vm" -cp tests/bench \
            tests/bench/BenchmarkHarness.som "$name" "$outer" "$inner")" &&
            [[ -n "$sqvm_us" ]]; then
        sqvm_col="$(ms "$sqvm_us")"
    else
        sqvm_us=""
        failed=1
    fi

    if (( have_lua )); then
        lua_col="FAIL"
        lua_us=""
        if lua_us="$(best_of "$name" "$lua" tests/bench/lua/harness.lua \
                "$name" "$outer" "$inner")" && [[ -n "$lua_us" ]]; then
            lua_col="$(ms "$lua_us")"
        else
            lua_us=""
        fi
        ratio_col="-"
        if [[ -n "$sqvm_us" && -n "$lua_us" ]] && (( lua_us > 0 )); then
            ratio_col="$(awk -v a="$sqvm_us" -v b="$lua_us" 'BEGIN { printf "%.2f", a / b }')"
            ratios+=("$(awk -v a="$sqvm_us" -v b="$lua_us" 'BEGIN { printf "%.6f", a / b }')")
        fi
        printf '%-12s %12s %12s %10s\n' "$name" "$sqvm_col" "$lua_col" "$ratio_col"
        if [[ "$name" == PingPong && -n "$sqvm_us" && -n "$lua_us" ]]; then
            # 20,000 process switches (sqvm) / coroutine switches (Lua) per inner iteration
            pingpong_line="$(awk -v o="$outer" -v i="$inner" -v a="$sqvm_us" -v b="$lua_us" 'BEGIN {
                n = 20000 * o * i; printf "process switches: sqvm %.1f M/s, Lua coroutines %.1f M/s", n / a, n / b }')"
        fi
    else
        printf '%-12s %12s\n' "$name" "$sqvm_col"
    fi
done

if (( have_lua )); then
    if (( ${#ratios[@]} > 0 )); then
        geomean="$(printf '%s\n' "${ratios[@]}" |
                   awk '{ s += log($1); n++ } END { printf "%.2f", exp(s / n) }')"
        printf '%-12s %12s %12s %10s\n' "geomean" "" "" "$geomean"
        if (( ${#ratios[@]} < ${#benchmarks[@]} )); then
            echo "(geometric mean over the ${#ratios[@]} benchmarks that ran in both)"
        fi
    else
        printf '%-12s %12s %12s %10s\n' "geomean" "" "" "-"
    fi
fi

[[ -n "${pingpong_line:-}" ]] && echo "$pingpong_line"

# The collector on the allocation-heavy benchmarks: one run each with --gc-stats.
gc_benchmarks=(BinaryTrees AirTraffic Storage Json)
if (( have_vm )) && [[ -z "${BENCH_NO_GC:-}" ]]; then
    echo
    printf '%-12s %7s %10s %10s %7s %10s %10s %8s\n' "gc" "young" "young ms" "max ms" "full" "full ms" "max ms" "gc/run"
    for entry in "${benchmarks[@]}"; do
        read -r name outer inner <<<"$entry"
        [[ " ${gc_benchmarks[*]} " == *" $name "* ]] || continue
        out="$("${timeout_cmd[@]}" "$vm" --gc-stats -cp tests/bench tests/bench/BenchmarkHarness.som \
               "$name" "$outer" "$inner" 2>&1)" || { printf '%-12s FAIL\n' "$name"; failed=1; continue; }
        us="$(printf '%s\n' "$out" | sed -n "s/^$name: iterations=[0-9]* runtime: \([0-9]*\)us\$/\1/p")"
        printf '%s\n' "$out" | awk -v name="$name" -v us="$us" '
            /^gc: young/ {
                gsub(/[(),;]/, " ")
                # gc: young N pause total X ms max Y ms full M pause total Z ms max W ms ...
                printf "%-12s %7d %10.2f %10.3f %7d %10.2f %10.3f %7.1f%%\n", name, $3, $6, $9, $12, $15, $18,
                       (us > 0 ? 100 * ($6 + $15) * 1000 / us : 0)
            }'
    done
fi

if (( failed )); then
    echo "some sqvm benchmark runs failed" >&2
    exit 1
fi
exit 0
