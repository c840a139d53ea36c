#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# scripts/fuzz.sh - the libFuzzer targets of fuzz/ (fuzz_compile, fuzz_eval, fuzz_elf,
# fuzz_stack, fuzz_flow, fuzz_merge, fuzz_ring).
#
#   scripts/fuzz.sh ci          what CI runs (tests/fuzz.sh): replay, then a short campaign
#                               per target from a fixed seed and number of runs, into a
#                               fresh corpus: the same code runs the same inputs and gets
#                               the same verdict (fuzz_eval: see its budget in fuzz_eval.c)
#   scripts/fuzz.sh replay      every input of the regression corpus and the seeds, once
#   scripts/fuzz.sh [SECONDS [TARGET...]]
#                               a random campaign per target (compile, eval, elf, stack, flow, merge, ring; all by
#                               default) for SECONDS (60) (make fuzz, FUZZ_ONLY=); its
#                               corpus grows in build/fuzz/corpus/
#
# Inputs: fuzz/regress/TARGET/ holds every input that ever crashed or hung (see its
# README); the seeds are every .som file under tests/ and vm/lib/ (compile), fuzz/seeds/eval/
# (eval), and binaries with squeak USDT notes built from fuzz/seeds/usdt/ and one of the
# tools' BPF objects (elf), the memory images of fuzz/seeds/stack/ (stack:
# fuzz/stack_image.py writes them), the event streams of fuzz/seeds/flow/ (flow:
# fuzz/flow_stream.py) and the record rings of fuzz/seeds/ring/ (ring: fuzz/ring_image.py).
# A crash, a sanitizer report, a hang (the targets' watchdog, or the outer timeout) or
# running out of memory is a FAIL line naming the input, kept in build/fuzz/crashes/ as
# TARGET-crash-SHA1 or TARGET-hang-SHA1, with its first bytes in hex so that a CI log
# holds the reproducer (rerun it with build/fuzz/fuzz_TARGET FILE). Ends with
# "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
MODE=${1:-60}
D=build/fuzz
make -s -j2 fuzz-build >/dev/null || exit 1
mkdir -p "$D/crashes" "$D/seeds/elf"
export ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=0

# Every run's options. -timeout=0: the targets' own watchdog (fuzz/fuzz_watchdog.c) finds
# hangs in CPU time; libFuzzer's counts wall-clock time (a loaded machine makes false
# hangs) and rides on SIGALRM, which the VM's scheduler used to take over.
# -report_slow_units: libFuzzer writes a "slow-unit" artifact for an input that takes
# 10 s of wall-clock time, which this script would report as a finding: a 30-minute
# fuzz_eval campaign at nice 19 on a loaded machine wrote two, inputs of 0.4 and 0.8 s
# of CPU that the watchdog's budget had bounded. Slowness is the watchdog's to judge.
COMMON=(-timeout=0 -report_slow_units=86400 -rss_limit_mb=2048 -detect_leaks=0 -close_fd_mask=1 -print_final_stats=1)
declare -A MAX_LEN=([compile]=8192 [eval]=4096 [elf]=65536 [stack]=16384 [flow]=16384 [merge]=65536 [ring]=65536)
# ci: executions per campaign (the seed inputs count too), and the outer timeout that
# reports a hang instead of letting it stall CI. Measured in a clean-clone CI run on the
# 2-core machine (2026-12-05), under ASan: compile 5,714 a second (7 s), eval 1,666 (18 s),
# elf 7,500 (8 s), stack 6,382, merge 15,000 (4 s), flow 718 (it writes each stream twice,
# as Chrome JSON and Perfetto protobuf, and parses the JSON back). The fuzz tier took 231
# of that run's 1,116 s against the test command's 15-minute budget: stack runs 100,000
# (about 16 s) and flow 15,000 (about 21 s); ring 15,000 (588 a second here, about 26 s:
# an input can make the reader read every slot of the ring three times); the long
# campaigns are make fuzz's.
declare -A CI_RUNS=([compile]=40000 [eval]=30000 [elf]=60000 [stack]=100000 [flow]=15000 [merge]=60000 [ring]=15000)
CI_TIMEOUT=120
# Hash tables keyed by addresses steer the VM: the same campaign wants the same addresses
# (without setarch, as in some containers, fuzz_eval's coverage may differ slightly).
NOASLR=""
setarch "$(uname -m)" -R true 2>/dev/null && NOASLR="setarch $(uname -m) -R"

# seed_list TARGET: the target's inputs, one path a line (sorted by the callers).
seed_list() {
    case "$1" in
        compile) find tests vm/lib -name '*.som' -size -64k ;;
        eval) find fuzz/seeds/eval -type f ;;
        stack) find fuzz/seeds/stack -type f ;;
        flow) find fuzz/seeds/flow -type f ;;
        merge) find fuzz/seeds/merge -type f ;;
        ring) find fuzz/seeds/ring -type f ;;
        elf)
            cc -O1 -o "$D/seeds/elf/usdt" fuzz/seeds/usdt/usdt.c 2>/dev/null
            cc -O1 -s -o "$D/seeds/elf/usdt-stripped" fuzz/seeds/usdt/usdt.c 2>/dev/null
            ls "$D/seeds/elf/usdt" "$D/seeds/elf/usdt-stripped"
            # a BPF object, for the walk of its maps' relocations (when the tools are built)
            if [ -f build/tools/obj/sqalloc.bpf.o ]; then
                cp build/tools/obj/sqalloc.bpf.o "$D/seeds/elf/sqalloc.bpf.o"
                echo "$D/seeds/elf/sqalloc.bpf.o"
            fi ;;
    esac
    [ -d "fuzz/regress/$1" ] && find "fuzz/regress/$1" -type f ! -name '*.md'
}

passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok fuzz_$1" >&2; }

# failed_run TARGET PHASE LOG STATUS: says why, names and shows the input.
failed_run() {
    local t=$1 phase=$2 log=$3 rc=$4 art what
    failed=$((failed + 1))
    art=$(grep -ao "Test unit written to [^ ]*" "$log" | tail -1 | sed 's/Test unit written to //')
    [ -z "$art" ] && art=$(grep -a "^Running: " "$log" | tail -1 | sed 's/^Running: //')
    what="crash"
    grep -aq "fuzz watchdog: .* a hang\|ERROR: libFuzzer: timeout" "$log" && what="hang"
    grep -aq "out-of-memory\|out of memory (malloc" "$log" && what="out of memory"
    [ "$rc" = 124 ] || [ "$rc" = 137 ] && what="hang: no verdict within the outer timeout"
    if [ -n "$art" ] && [ -f "$art" ] && [[ "$art" == "$D/crashes/"* ]] && [ "$what" = hang ]; then
        mv "$art" "${art/crash-/hang-}"
        art=${art/crash-/hang-}
    fi
    echo "FAIL fuzz_$t $phase: $what (status $rc), input ${art:-unknown}" >&2
    # the report, not the programs' own "ERROR:" lines (Smalltalk errors are normal output)
    grep -a -A25 -m1 'fuzz watchdog\|==[0-9]*== *ERROR\|runtime error:\|ERROR: libFuzzer\|out-of-memory' "$log" | head -40 >&2
    [ -z "$art" ] || [ ! -f "$art" ] || { echo "input (first 512 bytes, hex):" >&2; od -A x -t x1z -N 512 "$art" >&2; }
    [ "$rc" = 124 ] || [ "$rc" = 137 ] && tail -20 "$log" >&2
}

# replay TARGET: each input once, in one process (an input may break the next one:
# fuzz_eval's budget-ended program, then a literal, found that way).
replay() {
    local t=$1 log="$D/$1.replay.log" n rc
    mapfile -t inputs < <(seed_list "$t" | LC_ALL=C sort)
    n=${#inputs[@]}
    timeout -k 5 "$CI_TIMEOUT" "$D/fuzz_$t" "${COMMON[@]}" -max_len="${MAX_LEN[$t]}" \
        -artifact_prefix="$D/crashes/$t-" "${inputs[@]}" >"$log" 2>&1
    rc=$?
    if [ "$rc" = 0 ]; then ok "$t replay: $n inputs"; else failed_run "$t" replay "$log" "$rc"; fi
}

# stat LOG NAME: a figure from libFuzzer's final statistics or its last status line.
stat() { grep -ao "$2: *[0-9]*" "$1" | tail -1 | grep -o '[0-9]*$'; }

# campaign TARGET SEED RUNS SECONDS: from the seed inputs (in a fixed order) into a fresh
# corpus, so nothing from an earlier run changes this one; for the random campaigns, into
# the growing corpus of build/fuzz/corpus/.
campaign() {
    local t=$1 seed=$2 runs=$3 secs=$4 log="$D/$1.log" corpus rc list
    list="$D/$t.seeds"
    seed_list "$t" | LC_ALL=C sort | paste -sd, >"$list"
    if [ "$seed" = random ]; then
        corpus="$D/corpus/$t"
        mkdir -p "$corpus"
        set -- -max_total_time="$secs"
    else
        corpus="$D/ci/$t"
        rm -rf "$corpus"
        mkdir -p "$corpus"
        # -reload=0: no rereading of the corpus on a timer; -use_cmp=0: no comparison
        # operands (addresses among them) as mutation material. Both would make two runs
        # of the same code differ.
        set -- -seed="$seed" -runs="$runs" -reload=0 -use_cmp=0
    fi
    rm -f "$D/crashes/$t-"*
    if [ "$seed" = random ]; then echo "fuzz_$t: ${secs}s from a random seed" >&2
    else echo "fuzz_$t: seed $seed, $runs runs" >&2; fi
    timeout -k 5 "$((secs + 60))" $NOASLR "$D/fuzz_$t" "${COMMON[@]}" "$@" -max_len="${MAX_LEN[$t]}" \
        -seed_inputs=@"$list" -artifact_prefix="$D/crashes/$t-" "$corpus" >"$log" 2>&1
    rc=$?
    [ "$seed" = random ] && seed="random: $(grep -ao 'Seed: [0-9]*' "$log" | head -1 | cut -d' ' -f2)"
    if [ "$rc" = 0 ] && ! ls "$D/crashes/$t-"* >/dev/null 2>&1; then
        ok "$t campaign (seed $seed): $(stat "$log" stat::number_of_executed_units) runs, cov $(stat "$log" cov) ft $(stat "$log" ft), $(stat "$log" stat::new_units_added) new units, no finding"
    else
        failed_run "$t" "campaign (seed $seed)" "$log" "$rc"
    fi
}

case "$MODE" in
    replay)
        for t in compile eval elf stack flow merge ring; do replay "$t"; done ;;
    ci)
        # Each target's replay, then its campaign (outer timeout 300 s: 11 to 40 s each
        # here, but a run under the lock on a machine other work loaded took 138 s for
        # fuzz_eval's; hangs are the watchdog's, in CPU time, which a neighbour does not
        # move). Targets run as many at a time as there are CPUs, each one process, its
        # report kept and shown in the targets' order.
        cpus=$(nproc 2>/dev/null || echo 2)
        for t in compile eval elf stack flow merge ring; do
            [ "$(jobs -rp | wc -l)" -ge "$cpus" ] && wait -n
            { replay "$t"; campaign "$t" 1 "${CI_RUNS[$t]}" 240; } >"$D/$t.ci" 2>&1 &
        done
        wait
        for t in compile eval elf stack flow merge ring; do
            cat "$D/$t.ci" >&2
            passed=$((passed + $(grep -c '^ok fuzz_' "$D/$t.ci")))
            failed=$((failed + $(grep -c '^FAIL fuzz_' "$D/$t.ci")))
        done ;;
    *)
        shift
        for t in ${*:-compile eval elf stack flow merge ring}; do
            [[ " compile eval elf stack flow merge ring " == *" $t "* ]] || { echo "scripts/fuzz.sh: no target $t (compile, eval, elf, stack, flow, merge, ring)" >&2; exit 2; }
            campaign "$t" random 0 "$MODE"
        done ;;
esac
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
