#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# scripts/fuzz.sh [SECONDS] - runs each libFuzzer target of fuzz/ for SECONDS (default 60)
# from seed corpora made of the project's own inputs: every .som file under tests/ and
# vm/lib/ (fuzz_compile), the expressions in fuzz/seeds/eval/ (fuzz_eval), and small
# binaries with squeak USDT notes (fuzz_elf). Corpora grow in build/fuzz/corpus/. A crash,
# sanitizer report, timeout or out-of-memory fails the run: the input is kept in
# build/fuzz/crashes/ and its first bytes are printed, so a CI log holds the reproducer
# (rerun it with build/fuzz/TARGET FILE). Ends with "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
T=${1:-60}
D=build/fuzz
make -s fuzz-build >/dev/null || exit 1
mkdir -p "$D/crashes" "$D/corpus/compile" "$D/corpus/eval" "$D/corpus/elf"

# seeds (copied each time: a seed that changed in the tree is fuzzed as it is now)
find tests vm/lib -name '*.som' -size -64k | while read -r f; do
    cp "$f" "$D/corpus/compile/seed-$(echo "$f" | tr '/' '_')"; done
cp fuzz/seeds/eval/* "$D/corpus/eval/"
cc -O1 -o "$D/corpus/elf/seed-usdt" fuzz/seeds/usdt/usdt.c 2>/dev/null
cc -O1 -s -o "$D/corpus/elf/seed-usdt-stripped" fuzz/seeds/usdt/usdt.c 2>/dev/null

passed=0 failed=0
run() { # target max_len
    local t=$1 len=$2 log="$D/$1.log"
    rm -f "$D/crashes/$t-"*
    echo "fuzz_$t: ${T}s" >&2
    ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=0 "$D/fuzz_$t" -max_total_time="$T" -max_len="$len" -timeout=10 -rss_limit_mb=2048 \
        -detect_leaks=0 -close_fd_mask=1 -print_final_stats=1 \
        -artifact_prefix="$D/crashes/$t-" "$D/corpus/$t" >"$log" 2>&1
    local rc=$? art
    art=$(ls "$D/crashes/$t-"* 2>/dev/null | head -1)
    if [ "$rc" = 0 ] && [ -z "$art" ]; then
        passed=$((passed + 1))
        echo "ok fuzz_$t: $(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | awk '{print $2}') runs, no crash" >&2
    else
        failed=$((failed + 1))
        echo "FAIL fuzz_$t (status $rc): $art" >&2
        grep -A25 -m1 'ERROR: \|==ERROR\|deadly signal\|timeout\|out-of-memory' "$log" | head -40 >&2
        [ -n "$art" ] && { echo "input (first 512 bytes, hex):" >&2; od -A x -t x1z -N 512 "$art" >&2; }
    fi
}
run compile 8192
run eval 4096
run elf 65536
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
