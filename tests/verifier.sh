# SPDX-License-Identifier: BSD-2-Clause
# tests/verifier.sh - what loading a tool costs the kernel: every BPF program of every
# tool (and of the modes that load more: sqreq --slowest, sqstat's exporter, sqprof's
# --pprof trace labels, CPU and --wall) is verified in at most VF_BUDGET instructions
# (bpf_prog_info.verified_insns), a tenth of the kernel's limit and about 40 ms of
# verification on the test machine. The verifier's count is
# what decides the attach time of the tools with the larger programs (sqreq's req_batch
# took 610,205 and a quarter of a second, sqio's io_batch 150,530:
# tests/bench/attach.sh), and unlike the time it is exact: the same kernel verifies the
# same object in the same count. Sourced by tests/run.sh (pass, fail, skip, start_bg,
# wait_line, $TMP). Needs root; the tools attach to a private copy of the VM.

VF_TOOLS=build/tools
VF_TMP="$TMP/verifier"
VF_BUDGET=100000

# vf_check LABEL TOOL ARGS...: attaches TOOL ARGS... -p to the busy VM, and checks the
# verified count of each of its programs against the budget
vf_check() {
    local label=$1 tool=$2 pid ids got over
    shift 2
    start_bg "$VF_TMP/out" "$VF_TMP/err" 60 "$VF_TOOLS/$tool" "$@" -p "$VF_VM"
    if ! wait_line "$VF_TMP/out" "$VF_TMP/err" '^Tracing \|^Sampling \|^Recording ' "$BG_PID"; then
        fail "verifier/$label attaches" "$(cat "$VF_TMP/err")"
        kill -KILL "$BG_PID" 2>/dev/null
        wait "$BG_PID" 2>/dev/null
        return
    fi
    pid=$(pgrep -P "$BG_PID" | head -1)	# the tool, under timeout(1)
    ids=$(for f in /proc/"$pid"/fdinfo/*; do awk '/^prog_id:/ { print $2 }' "$f" 2>/dev/null; done | sort -un)
    got=$("$VF_TMP/verified_insns" $ids 2>&1)
    kill -INT "$pid" 2>/dev/null
    wait "$BG_PID" 2>/dev/null
    over=$(awk -v b="$VF_BUDGET" 'NF != 2 || $2 > b' <<<"$got")
    if [ -z "$ids" ] || [ -z "$got" ] || [ -n "$over" ]; then
        fail "verifier/$label: every program within $VF_BUDGET verified instructions" "$got"
    else
        pass "verifier/$label: every program within $VF_BUDGET verified instructions"
    fi
}

verifier_tier() {
    mkdir -p "$VF_TMP"
    cp "$VM" "$VF_TMP/sqvm"
    if ! cc -O1 -o "$VF_TMP/verified_insns" tests/verifier/verified_insns.c -lbpf 2>"$VF_TMP/cc.err"; then
        fail "verifier: the verified_insns helper builds" "$(cat "$VF_TMP/cc.err")"
        return
    fi
    "$VF_TMP/sqvm" -cp tests/attach tests/attach/Busy.som "$VF_TMP/stop" >"$VF_TMP/busy.out" 2>&1 </dev/null &
    VF_VM=$!
    wait_exec "$VF_VM"
    for t in sqalloc sqgc sqflow sqprof sqcalls sqstat sqsched sqreq sqio sqslow; do
        vf_check "$t" "$t"
    done
    vf_check "sqalloc --sample" sqalloc --sample
    vf_check "sqprof --pprof (trace labels)" sqprof --pprof "$VF_TMP/cpu.pb.gz"
    vf_check "sqprof --wall --pprof (trace labels)" sqprof --wall --pprof "$VF_TMP/wall.pb.gz"
    vf_check "sqcalls --syscalls" sqcalls --syscalls
    vf_check "sqreq --slowest" sqreq --slowest 3
    vf_check "sqstat --listen" sqstat --listen 127.0.0.1:0
    vf_check "sqdoctor (its own programs)" sqdoctor -d 30
    touch "$VF_TMP/stop"
    wait "$VF_VM" 2>/dev/null
}

if [ "$(id -u)" != 0 ]; then
    skip "verifier" "needs root (BPF programs, uprobes)"
else
    verifier_tier
fi
