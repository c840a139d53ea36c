#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# tests/run.sh - runs every test tier and ends with "N passed, N failed, N skipped".
#
#   tests/run.sh [--vm build/sqvm] [--all] [--filter SUBSTRING] [--tier tests/NAME.sh]
#
# Tiers (each a file under tests/ named for what it checks):
#   unit       C unit tests (build/bigint_test, build/float_test, build/printable_test,
#              build/http_pipeline_test, build/drain_test: root, or skipped, build/names_test,
#              build/json_test, build/metrics_test)
#   lang       tests/lang/<area>/<Name>.som against .expected/.prefix/.status
#   compiler   tests/compiler/<Name>.som: exact bytecode from --disassemble
#   library    tests/library.sh: every selector of the embedded library has a test
#   cli        tests/cli.sh: the command line (help, -e, errors)
#   io         tests/io.sh: files, sockets on 127.0.0.1 and the event loop (tests/io/)
#   service    tests/service.sh: the HTTP service of examples/http through real sockets
#   som        tests/som.sh: SOM's TestSuite and AWFY's benchmarks, from the checkouts
#              named by SOM_DIR and AWFY_DIR, else from ../shared/suites (skipped when
#              neither is there; under CI=true that fails)
#   probes, tools, attach, sqprof, bpftrace: the probe contract and the tools on real
#              VMs (root); attach: every tool attached to a VM that is already busy;
#              family: sqstat, sqcalls, sqsched; req: sqreq, sqio (tests/req/); targets: the
#              scan of other roots beside a container that lies; prom: sqstat --listen and
#              --prom under a real Prometheus and node_exporter; prom_abuse: the exporter under
#              abuse (10,000 routes, 64 slow clients, a vm__start flood) under a real
#              Prometheus; exemplars: sqstat's OpenMetrics (negotiated on Accept) and its request
#              buckets' exemplars, read by the Prometheus project's parser, stored by a real
#              Prometheus (exemplar storage) and matched to sqreq's ids; monitoring: monitoring/'s Prometheus rules (promtool's checks and unit
#              tests, then loaded into a real Prometheus that sees a seeded alert fire); faults: VM or tool killed, full buffers and maps, two tools at
#              once; doctor: sqdoctor on its corpus of seeded faults (tests/doctor/) and
#              on clean runs (AWFY, examples/http under wrk); perfetto: sqflow
#              --format=perfetto decoded by protoc against the JSON of the same run;
#              browser: headless Chromium's fetches and sqflow --merge's one timeline;
#              names: names from a target printed escaped; hostile: every tool against
#              fake VMs whose debug offsets, frames and names lie (tests/hostile/); verifier:
#              every tool's BPF programs verify within 100,000 instructions; deb: make deb's
#              package installed with apt-get, its tools run from PATH, its sqstat.service
#              under a real systemd (nspawn), then purged
#   --all adds: lang and io under ASan+UBSan (build/asan/sqvm) and under --gc-stress --gc-verify,
#              lang with switch dispatch (build/debug/sqvm), and the fuzz tier (tests/fuzz.sh:
#              the regression corpus, fixed-seed campaigns)
# TEST_TIERS="tests/cli.sh ..." limits the sourced tiers (default: all of them).
set -u
cd "$(dirname "$0")/.."

VM=build/sqvm
ALL=0
FILTER=""
ONLY_TIER=""
while [ $# -gt 0 ]; do
    case "$1" in
        --vm) VM=$2; shift 2 ;;
        --all) ALL=1; shift ;;
        --filter) FILTER=$2; shift 2 ;;
        --tier) ONLY_TIER=$2; shift 2 ;;
        *) echo "usage: tests/run.sh [--vm PATH] [--all] [--filter TEXT] [--tier tests/NAME.sh]" >&2; exit 2 ;;
    esac
done

PASSED=0
FAILED=0
SKIPPED=0
FAILURES=()
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

pass() { PASSED=$((PASSED + 1)); [ -n "${VERBOSE:-}" ] && echo "ok   $1"; return 0; }
fail() {
    FAILED=$((FAILED + 1))
    FAILURES+=("$1")
    echo "FAIL $1"
    [ -n "${2:-}" ] && sed 's/^/     | /' <<<"$2" | head -40
    return 0
}
skip() { SKIPPED=$((SKIPPED + 1)); echo "skip $1: $2"; }

# wait_exec PID: until the background job PID has exec'ed the VM (until then it is a
# bash, which a tool given its PID rightly refuses); at most 5 s.
wait_exec() {
    local i
    for ((i = 0; i < 500; i++)); do
        [[ "$(readlink "/proc/$1/exe" 2>/dev/null)" == */sqvm ]] && return 0
        kill -0 "$1" 2>/dev/null || return 1
        sleep 0.01
    done
    return 1
}

# end_bg PID SECONDS [SIGNAL]: sends SIGNAL (if any) to the background job PID, gives it
# SECONDS to end, then kills it, and reaps it: a wait that never ended would hold the run.
end_bg() {
    local i
    [ -n "${3:-}" ] && kill -"$3" "$1" 2>/dev/null
    for ((i = 0; i < $2 * 100; i++)); do kill -0 "$1" 2>/dev/null || break; sleep 0.01; done
    kill -KILL "$1" 2>/dev/null
    wait "$1" 2>/dev/null
}

# The tool tiers' way of running a tool beside a VM (tools, attach, family, faults, sqprof).
# start_bg OUT ERR TIMEOUT CMD...: starts CMD in the background under a SIGKILL timeout,
# stdout and stderr to files emptied here (not by the background job's redirections, which
# may run only after wait_line has looked and found the previous case's line); BG_PID.
start_bg() {
    local out=$1 err=$2 t=$3
    shift 3
    : >"$out"
    : >"$err"
    timeout -s KILL "$t" "$@" >>"$out" 2>>"$err" </dev/null &
    BG_PID=$!
}
# chrome_unnested TRACE: how many slices of sqflow's Chrome trace TRACE do not nest in
# their track (sorted by start, the longer first, each must end within the one it starts
# in; 1 ns of slack for the printed microseconds); "x" if TRACE does not parse.
chrome_unnested() {
    jq -r '.traceEvents[] | select(.ph == "X") | "\(.pid) \(.tid) \(.ts) \(.dur)"' "$1" 2>/dev/null |
        LC_ALL=C sort -k1,1n -k2,2n -k3,3g -k4,4gr | awk '
        { track = $1 " " $2; s = $3; e = $3 + $4
          if (track != last) { n = 0; last = track }
          while (n > 0 && s >= ends[n] - 0.001) n--
          if (n > 0 && e > ends[n] + 0.001) bad++
          ends[++n] = e }
        END { print bad + 0 }'
    [ "${PIPESTATUS[0]}" = 0 ] || echo x
}
# speedscope_dom FILE NAME: the DOM of npm's speedscope (scripts/deps.sh puts it in
# build/deps/) in headless Chromium once it has opened FILE, served as NAME, in its
# Sandwich view (sqprof's and sqslow's tiers). Status 2 (the reason on stdout) when
# speedscope or a headless Chromium is not there.
speedscope_dom() {
    local app=build/deps/speedscope/node_modules/speedscope/dist/release dir port srv
    if [ ! -f "$app/index.html" ]; then
        echo "npm's speedscope is not in build/deps (scripts/deps.sh installs it)"; return 2
    fi
    if ! command -v chromium >/dev/null || ! timeout 30 chromium --headless --no-sandbox --disable-gpu \
        --disable-dev-shm-usage --dump-dom about:blank >/dev/null 2>&1; then
        echo "headless Chromium cannot run here"; return 2
    fi
    dir=$(mktemp -d)
    cp -r "$app"/. "$dir/"
    cp "$1" "$dir/$2"
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    (cd "$dir" && exec python3 -m http.server "$port" --bind 127.0.0.1) >/dev/null 2>&1 &
    srv=$!
    for _ in $(seq 50); do python3 -c "import socket; socket.create_connection(('127.0.0.1', $port))" 2>/dev/null && break; sleep 0.1; done
    timeout 60 chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
        --virtual-time-budget=10000 --dump-dom "http://127.0.0.1:$port/index.html#profileURL=/$2&view=sandwich" 2>/dev/null
    kill "$srv" 2>/dev/null
    wait "$srv" 2>/dev/null
    rm -rf "$dir"
    return 0
}
# wait_line OUT ERR PATTERN PID: until PATTERN is in OUT or ERR (a tool's "Tracing" line is
# on stderr when its output is JSON): 0; or until PID has died, or 10 s: 1.
wait_line() {
    local i
    for ((i = 0; i < 1000; i++)); do
        grep -q "$3" "$1" "$2" 2>/dev/null && return 0
        kill -0 "$4" 2>/dev/null || return 1
        sleep 0.01
    done
    return 1
}

# matches EXPECTED_FILE ACTUAL_FILE: exact, except that a line "..." in the
# expected output stands for any number of lines, and a line ending in "..."
# matches any line that begins with the text before it.
matches() {
    awk -v wantfile="$1" '
        BEGIN { n = 0; while ((getline line < wantfile) > 0) want[++n] = line }
        { act[++m] = $0 }
        function match_from(i, j,    k) {
            while (i <= n) {
                if (want[i] == "...") {
                    if (i == n) return 1
                    for (k = j; k <= m + 1; k++) if (match_from(i + 1, k)) return 1
                    return 0
                }
                if (j > m) return 0
                if (act[j] != want[i] && !(length(want[i]) > 3 && substr(want[i], length(want[i]) - 2) == "..." &&
                    substr(act[j], 1, length(want[i]) - 3) == substr(want[i], 1, length(want[i]) - 3))) return 0
                i++; j++
            }
            return j > m
        }
        END { exit match_from(1, 1) ? 0 : 1 }
    ' "$2"
}

run_lang_test() { # vm extra-flags som-file label
    local vm=$1 flags=$2 som=$3 label=$4
    local base=${som%.som}
    local want_status=0
    # <Name>.flags: extra sqvm options; <Name>.no-stress: exact GC counts, not under --gc-stress
    [ -f "$base.flags" ] && flags="$flags $(cat "$base.flags")"
    if [ -f "$base.no-stress" ] && [[ "$flags" == *--gc-stress* ]]; then
        skip "$label" "$(cat "$base.no-stress")"
        return
    fi
    [ -f "$base.status" ] && want_status=$(cat "$base.status")
    local out="$TMP/out" status
    timeout 120 "$vm" $flags -cp tests/lang/support "$som" >"$out" 2>&1 </dev/null
    status=$?
    if [ -f "$base.prefix" ]; then
        local prefix
        prefix=$(cat "$base.prefix")
        if [ "$status" != "$want_status" ] || [ "$(head -c ${#prefix} "$out")" != "$prefix" ]; then
            fail "$label" "status $status (want $want_status); first line: $(head -1 "$out")
want prefix: $prefix"
            return
        fi
    elif [ -f "$base.expected" ]; then
        if [ "$status" != "$want_status" ] || ! matches "$base.expected" "$out"; then
            fail "$label" "status $status (want $want_status)
$(diff "$base.expected" "$out" | head -30)"
            return
        fi
    else
        fail "$label" "no .expected or .prefix file"
        return
    fi
    pass "$label"
}

# One lang test in a subshell of its own (lang_tier runs them side by side): its verdict
# (kind, label, details) into the file rf, for the parent to count.
lang_one() { # vm flags som label rf
    local rf=$5
    pass() { printf 'pass\n%s\n' "$1" >"$rf"; }
    fail() { printf 'fail\n%s\n%s' "$1" "${2:-}" >"$rf"; }
    skip() { printf 'skip\n%s\n%s' "$1" "$2" >"$rf"; }
    TMP=$rf.tmp
    mkdir -p "$TMP"
    run_lang_test "$1" "$2" "$3" "$4"
}

# The programs run as many at a time as there are CPUs (under ASan and --gc-stress they
# take most of a CI run's minute each otherwise); the verdicts are counted in order.
lang_tier() { # vm flags tag
    local som i=0 n running=0 jobs dir kind label
    jobs=$(nproc 2>/dev/null || echo 2)
    LANG_RUNS=$((${LANG_RUNS:-0} + 1))
    dir="$TMP/lang.$LANG_RUNS"
    mkdir -p "$dir"
    for som in tests/lang/*/*.som; do
        case "$som" in tests/lang/support/*) continue ;; esac
        [ -n "$FILTER" ] && [[ "$som" != *"$FILTER"* ]] && continue
        if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
        lang_one "$1" "$2" "$som" "$3${som#tests/lang/}" "$dir/$i" &
        running=$((running + 1))
        i=$((i + 1))
    done
    wait
    for ((n = 0; n < i; n++)); do
        { read -r kind; read -r label; } <"$dir/$n" 2>/dev/null || { fail "lang test $n" "no verdict"; continue; }
        case $kind in
            pass) pass "$label" ;;
            fail) fail "$label" "$(tail -n +3 "$dir/$n")" ;;
            skip) skip "$label" "$(tail -n +3 "$dir/$n")" ;;
        esac
    done
    rm -rf "$dir"
}

compiler_tier() {
    local som base out
    for som in tests/compiler/*.som; do
        [ -e "$som" ] || continue
        [ -n "$FILTER" ] && [[ "$som" != *"$FILTER"* ]] && continue
        base=${som%.som}
        out="$TMP/dis"
        "$VM" -cp tests/compiler --disassemble "$(basename "$base")" >"$out" 2>&1
        if diff -u "$base.bytecode" "$out" >"$TMP/diff"; then pass "compiler/$(basename "$base")"
        else fail "compiler/$(basename "$base")" "$(head -30 "$TMP/diff")"; fi
    done
}

unit_tier() {
    local t name
    for t in bigint float printable http_pipeline drain names json metrics; do
        name=build/${t}_test
        if [ -x "$name" ]; then
            "$name" >"$TMP/unit" 2>&1
            case $? in
                0) pass "unit/$t ($(tail -1 "$TMP/unit"))" ;;
                77) skip "unit/$t" "$(tail -1 "$TMP/unit")" ;;
                *) fail "unit/$t" "$(tail -20 "$TMP/unit")" ;;
            esac
        else
            skip "unit/$t" "$name not built (run make unit)"
        fi
    done
}

# bpftrace and the tools detach uprobes through tracefs: mount it if it is missing.
if [ "$(id -u)" = 0 ] && [ -d /sys/kernel/tracing ] && [ ! -e /sys/kernel/tracing/uprobe_events ]; then
    mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
fi

if [ ! -x "$VM" ]; then
    echo "tests/run.sh: $VM not found; run make first" >&2
    exit 2
fi

# Each tier's wall time goes to stderr, so that a CI log says where its minutes went
# (the test command's budget is 15 minutes on 2 cores).
TIER_T0=$SECONDS
timed() { # label: the time since the last mark
    echo "time: $1 $((SECONDS - TIER_T0)) s" >&2
    TIER_T0=$SECONDS
}

if [ -z "$ONLY_TIER" ]; then
    unit_tier; timed unit
    lang_tier "$VM" "" "lang/"; timed lang
    compiler_tier; timed compiler
fi
# --all's builds (ASan+UBSan, switch dispatch, the fuzz targets) go on at nice 19 while the
# tool tiers, which mostly wait on their workloads, leave the CPUs idle; their tiers below
# make the same targets again (nothing left to do, or the error to report). Not beside
# the lang programs, which run on every CPU: there they took 39-79 s, against 4 alone.
PREBUILD=""
if [ "$ALL" = 1 ]; then
    nice -n 19 sh -c 'make -s -j2 SANITIZE=1 vm && make -s -j2 DEBUG=1 vm && make -s -j2 fuzz-build' \
        >"$TMP/prebuild" 2>&1 </dev/null &
    PREBUILD=$!
fi

# Tiers kept in their own files, sourced here: each uses pass/fail/skip and $VM.
for tier in ${ONLY_TIER:-${TEST_TIERS:-tests/library.sh tests/cli.sh tests/io.sh tests/service.sh tests/som.sh tests/probes.sh tests/tools.sh tests/perfetto.sh tests/browser.sh tests/attach.sh tests/family.sh tests/req.sh tests/targets.sh tests/prom.sh tests/prom_abuse.sh tests/exemplars.sh tests/monitoring.sh tests/faults.sh tests/doctor.sh tests/names.sh tests/hostile.sh tests/verifier.sh tests/sqprof.sh tests/slow.sh tests/bpftrace.sh tests/deb.sh}}; do
    # shellcheck disable=SC1090
    [ -f "$tier" ] && . "$tier"
    timed "${tier#tests/}"
done

if [ "$ALL" = 1 ]; then
    wait "$PREBUILD" 2>/dev/null
    timed prebuild
    if make -s SANITIZE=1 vm >"$TMP/asan-build" 2>&1; then
        ASAN_OPTIONS=detect_leaks=0 lang_tier build/asan/sqvm "" "asan/"
        declare -F io_tier >/dev/null && ASAN_OPTIONS=detect_leaks=0 io_tier build/asan/sqvm "" "asan/io/"
    else
        fail "asan build" "$(tail -20 "$TMP/asan-build")"
    fi
    timed asan
    lang_tier "$VM" "--gc-stress --gc-verify" "gc-stress/"
    declare -F io_tier >/dev/null && io_tier "$VM" "--gc-stress --gc-verify" "gc-stress/io/"
    timed gc-stress
    # The switch-dispatch build (DEBUG=1: assertions, -O0) runs the same programs as
    # the computed-goto one
    if make -s DEBUG=1 vm >"$TMP/debug-build" 2>&1; then
        lang_tier build/debug/sqvm "" "switch/"
    else
        fail "debug build" "$(tail -20 "$TMP/debug-build")"
    fi
    timed switch
    . tests/fuzz.sh
    [ -z "$FILTER" ] || [[ "fuzz" == *"$FILTER"* ]] && fuzz_tier
    timed fuzz
fi

for f in "${FAILURES[@]+"${FAILURES[@]}"}"; do echo "failed: $f"; done
echo "$PASSED passed, $FAILED failed, $SKIPPED skipped"
[ "$FAILED" = 0 ]
