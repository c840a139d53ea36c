# SPDX-License-Identifier: BSD-2-Clause
# tests/doctor.sh - sqdoctor against its corpus of seeded faults (tests/doctor/: one small
# program per rule family, each with one known fault, listed in tests/doctor/expected)
# and against clean runs (AWFY benchmarks, examples/http under wrk's mix): each fault's
# rule scores 75 or more and names the right method, process or route; on the clean runs
# no rule scores 50. Also its errors, its JSON and its page. Sourced by tests/run.sh
# (uses pass/fail/skip, start_bg, wait_line, $VM and $TMP). Needs root.
#
# Each program prints "ready" once its fault runs steadily; sqdoctor then records it for
# DR_SECONDS. The VM is a private copy (as tests/tools.sh explains).

DR_TOOL=build/tools/sqdoctor
DR_DIR=tests/doctor
DR_TMP="$TMP/doctor"
DR_SECONDS=1.5
DR_AWFY="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/shared/suites/are-we-fast-yet/benchmarks/SOM"
# The AWFY benchmarks of the clean runs: the allocation-heavy ones (Havlak, CD, Json,
# Storage), the scheduler-like one (Richards), constraint solving (DeltaBlue), a numeric
# loop (Mandelbrot); each run for many iterations so that it outlasts the recording.
DR_CLEAN_AWFY="Richards:1 DeltaBlue:1 Json:1 Havlak:1 CD:10 Storage:1 Mandelbrot:500"

# dr_record LABEL ARGS...: sqdoctor -j -p $DR_PID ARGS...; the report in $DR_TMP/LABEL.json
dr_record() {
    local label=$1
    shift
    timeout -s KILL 60 "$DR_TOOL" -p "$DR_PID" -d "$DR_SECONDS" -j -v "$@" \
        >"$DR_TMP/$label.json" 2>"$DR_TMP/$label.err"
    DR_STATUS=$?
}

# dr_score LABEL RULE: the rule's score in LABEL's report ("null" without evidence)
dr_score() { jq -r --arg id "$2" '.rules[] | select(.id == $id) | .score' "$DR_TMP/$1.json" 2>/dev/null; }
dr_target() { jq -r --arg id "$2" '.rules[] | select(.id == $id) | .target' "$DR_TMP/$1.json" 2>/dev/null; }
# dr_top LABEL: the highest-scoring rule, "id score target"
dr_top() { jq -r '.rules[0] | "\(.id) \(.score) \(.target)"' "$DR_TMP/$1.json" 2>/dev/null; }

# dr_start PROGRAM: the program of the corpus, until it says "ready": DR_PID
dr_start() {
    # the last program's "ready" is not this one's: the files go first (the job empties
    # them only once it runs), and its PID is the VM's only once it has exec'ed
    rm -f "$DR_TMP/vm.out" "$DR_TMP/vm.err"
    "$DR_TMP/sqvm" -cp "$DR_DIR" "$DR_DIR/$1.som" >"$DR_TMP/vm.out" 2>"$DR_TMP/vm.err" </dev/null &
    DR_PID=$!
    wait_exec "$DR_PID" && wait_line "$DR_TMP/vm.out" "$DR_TMP/vm.err" '^ready' "$DR_PID"
}

# The VM ends on SIGTERM; one that has not in 5 s is killed.
dr_stop() { end_bg "$DR_PID" 5 TERM; }

# The report is printed within 2 s of the recording's end (sqdoctor -v says how long).
dr_check_latency() {
    local took
    took=$(sed -n 's/^sqdoctor: the report took \([0-9.]*\) s after the recording$/\1/p' "$DR_TMP/$1.err")
    if [ -n "$took" ] && awk -v t="$took" 'BEGIN { exit !(t < 2) }'; then
        pass "doctor/$1 report ready ${took} s after the recording"
    else
        fail "doctor/$1 report ready within 2 s" "took '${took}'; $(grep -v '^libbpf' "$DR_TMP/$1.err" | tail -5)"
    fi
}

dr_faults() {
    local prog rule want score target
    while read -r prog rule want; do
        case $prog in ''|'#'*) continue ;; esac
        if ! dr_start "$prog"; then
            fail "doctor/$prog starts" "$(tail -5 "$DR_TMP/vm.err")"
            dr_stop
            continue
        fi
        dr_record "$prog"
        dr_stop
        score=$(dr_score "$prog" "$rule")
        target=$(dr_target "$prog" "$rule")
        if [ "$DR_STATUS" = 0 ] && [ "$score" != null ] && [ "${score:-0}" -ge 75 ] &&
            [[ "$target" == *"$want"* ]]; then
            pass "doctor/$prog: $rule $score, names $target"
        else
            fail "doctor/$prog: $rule scores 75 or more and names $want" \
                "status $DR_STATUS, score '$score', target '$target'; top: $(dr_top "$prog")
$(jq -r '.rules[] | "\(.score) \(.id): \(.finding)"' "$DR_TMP/$prog.json" 2>/dev/null | head -6)
$(grep -v '^libbpf' "$DR_TMP/$prog.err" | tail -3)"
        fi
        [ "$prog" = "$DR_LATENCY_CASE" ] && dr_check_latency "$prog"
    done <"$DR_DIR/expected"
}

# dr_clean LABEL: no rule of LABEL's report scores 50 or more
dr_clean() {
    local top
    top=$(dr_top "$1")
    if [ "$DR_STATUS" = 0 ] && [ -n "$top" ] && jq -e '[.rules[] | .score // 0] | max < 50' \
        "$DR_TMP/$1.json" >/dev/null 2>&1; then
        pass "doctor/clean $1: highest $top"
    else
        fail "doctor/clean $1: no rule scores 50" "status $DR_STATUS; top: $top
$(jq -r '.rules[] | "\(.score) \(.id): \(.finding)"' "$DR_TMP/$1.json" 2>/dev/null | head -4)
$(grep -v '^libbpf' "$DR_TMP/$1.err" | tail -3)"
    fi
}

dr_clean_awfy() {
    local entry name size
    if [ ! -f "$DR_AWFY/Harness.som" ]; then
        skip "doctor/clean AWFY" "no are-we-fast-yet beside the repository ($DR_AWFY)"
        return
    fi
    for entry in $DR_CLEAN_AWFY; do
        name=${entry%%:*} size=${entry#*:}
        (cd "$DR_AWFY" && exec "$DR_TMP/sqvm" -cp .:Core:CD:DeltaBlue:Havlak:Json:NBody:Richards \
            Harness.som "$name" 1000000 "$size" >/dev/null 2>&1 </dev/null) &
        DR_PID=$!
        wait_exec "$DR_PID"
        sleep 0.3
        dr_record "awfy-$name"
        dr_stop
        dr_clean "awfy-$name"
    done
}

# The service under wrk's mix (tests/bench/http/mix.lua: /hello, /kv, /work, /static) as
# make load runs it, 64 connections; with the page, whose size is bounded.
dr_clean_service() {
    local port i wrk
    if ! command -v wrk >/dev/null; then
        skip "doctor/clean service" "wrk is not installed (scripts/deps.sh installs it)"
        return
    fi
    rm -f "$DR_TMP/srv.out"
    "$DR_TMP/sqvm" -cp examples/http examples/http/Server.som 0 >"$DR_TMP/srv.out" 2>"$DR_TMP/srv.err" </dev/null &
    DR_PID=$!
    wait_exec "$DR_PID"
    for ((i = 0; i < 500; i++)); do
        port=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$DR_TMP/srv.out")
        [ -n "$port" ] && break
        sleep 0.02
    done
    if [ -z "$port" ]; then
        fail "doctor/clean service starts" "$(tail -5 "$DR_TMP/srv.err")"
        dr_stop
        return
    fi
    wrk -t2 -c64 -d30s -s tests/bench/http/mix.lua "http://127.0.0.1:$port/" >"$DR_TMP/wrk.out" 2>&1 &
    wrk=$!
    sleep 0.5
    dr_record service --html "$DR_TMP/service.html"
    kill "$wrk" 2>/dev/null
    wait "$wrk" 2>/dev/null
    dr_stop
    dr_clean service
    dr_check_page service
}

# The page: one file, at most 2 MB, with the rules, the charts and the flame graph.
dr_check_page() {
    local page="$DR_TMP/$1.html" size
    size=$(stat -c %s "$page" 2>/dev/null || echo 0)
    if [ "$size" -gt 0 ] && [ "$size" -le $((2 << 20)) ] && grep -q '<h2>Rules</h2>' "$page" &&
        grep -q 'Run-queue latency, mean per process' "$page" && grep -q 'CPU Flame Graph' "$page" &&
        ! grep -q '<script src\|<link ' "$page" && python3 -c '
import sys
from html.parser import HTMLParser
HTMLParser().feed(open(sys.argv[1]).read())' "$page"; then
        pass "doctor/$1 --html: one self-contained page of $size bytes"
    else
        fail "doctor/$1 --html: a self-contained page of at most 2 MB" "size $size; $(head -c 300 "$page" 2>/dev/null)"
    fi
}

# Errors: no -p, a dead PID, a process that is not a VM: one line, a non-zero status. (A
# background job killed here would run the suite's EXIT trap: the dead PID is a "true".)
dr_error_case() { # LABEL STATUS MESSAGE ARGS...
    local label=$1 want=$2 msg=$3 out status
    shift 3
    out=$("$DR_TOOL" "$@" 2>&1)
    status=$?
    if [ "$status" = "$want" ] && grep -qF -- "$msg" <<<"$out"; then pass "doctor/$label: status $want, says so"
    else fail "doctor/$label: status $want, '$msg'" "status $status: $out"; fi
}

dr_errors() {
    local dead
    true & dead=$!
    wait "$dead"
    dr_error_case "no -p" 2 "sqdoctor examines one VM: give its PID with -p"
    dr_error_case "an interval" 2 "sqdoctor takes no interval: give the duration with -d" -p "$$" 5
    dr_error_case "a dead PID" 1 "sqdoctor: PID $dead does not exist" -p "$dead"
    dr_error_case "not a VM" 1 "sqdoctor: PID $$ ($(readlink /proc/$$/exe)) is not a sqvm process" -p "$$"
}

doctor_tier() {
    if [ "$(id -u)" != 0 ]; then
        skip "doctor" "needs root (BPF programs, uprobes)"
        return
    fi
    if [ ! -x "$DR_TOOL" ]; then
        skip "doctor" "$DR_TOOL not built"
        return
    fi
    mkdir -p "$DR_TMP"
    cp "$VM" "$DR_TMP/sqvm"
    DR_LATENCY_CASE=GcPause
    dr_errors
    dr_faults
    dr_clean_awfy
    dr_clean_service
}

doctor_tier
