# SPDX-License-Identifier: BSD-2-Clause
# tests/io.sh - files, sockets and the event loop: tests/io/<Name>.som run with a fresh
# temporary folder as their argument, on real files and real sockets on 127.0.0.1, their
# output (stdout and stderr) compared with <Name>.expected (tests/run.sh's matches: "..."
# stands for any lines) after the folder's path becomes TMP and the system's port numbers
# PORT; <Name>.status is the exit status (0 without it). Then what no program can show by
# itself: that the VM arms no timer and installs no signal handler for its Delays
# (strace), that it keeps time with SIGALRM blocked, the descriptor limit, and sqstack on
# a VM with its watcher thread. Sourced by tests/run.sh (uses pass/fail/skip, $VM, $TMP).

# io_check LABEL BASE DIR STATUS: the output in $TMP/io.out.raw, the temporary folder's
# path made TMP and the port numbers PORT, against BASE.expected and BASE.status
io_check() {
    local label=$1 base=$2 dir=$3 status=$4 want_status=0 out="$TMP/io.out"
    [ -f "$base.status" ] && want_status=$(cat "$base.status")
    sed -e "s|$dir|TMP|g" -e 's/127\.0\.0\.1:[0-9]\+/127.0.0.1:PORT/g' -e 's/\(port\|listen\): [0-9]\{4,5\}/\1: PORT/g' \
        "$out.raw" >"$out"
    if [ "$status" = "$want_status" ] && matches "$base.expected" "$out"; then pass "$label"
    else fail "$label" "status $status (want $want_status)
$(diff "$base.expected" "$out" | head -30)"; fi
}

# io_case VM FLAGS SOM LABEL SETUP [COMMAND-PREFIX...]: one program, in a fresh folder
# that the function SETUP (or :) prepares first, run after the prefix (ulimit)
io_case() {
    local vm=$1 flags=$2 som=$3 label=$4 setup=$5 dir status
    shift 5
    dir=$(mktemp -d "$TMP/io.XXXXXX")
    "$setup" "$dir"
    # shellcheck disable=SC2086
    timeout 60 "$@" "$vm" $flags -cp tests/lang/support "$som" "$dir" >"$TMP/io.out.raw" 2>&1 </dev/null
    status=$?
    io_check "$label" "${som%.som}" "$dir" "$status"
    rm -rf "$dir"
}

# EACCES needs a user the permissions apply to (root reads anything): as root the
# program runs as nobody, from copies of the VM and the program in a folder of /tmp
# that nobody may enter, beside a file it may read and one it may not.
io_access_case() {
    local vm=$1 flags=$2 som=$3 label=$4 dir status prefix=()
    if [ "$(id -u)" = 0 ]; then
        command -v setpriv >/dev/null || { skip "$label" "needs setpriv to run as nobody"; return; }
        prefix=(setpriv --reuid=65534 --regid=65534 --clear-groups)
    fi
    dir=$(mktemp -d /tmp/sqvm-io.XXXXXX)
    chmod 755 "$dir"
    cp "$vm" "$dir/sqvm"
    cp "$som" "$dir/"
    echo "anyone may read this" >"$dir/public"
    touch "$dir/secret" && chmod 000 "$dir/secret"
    # shellcheck disable=SC2086
    timeout 60 "${prefix[@]}" "$dir/sqvm" $flags "$dir/$(basename "$som")" "$dir" >"$TMP/io.out.raw" 2>&1 </dev/null
    status=$?
    io_check "$label" "${som%.som}" "$dir" "$status"
    rm -rf "$dir"
}

# Outside.som's peer, another program: once the VM has written its port, connect, say
# hello, close (in the background, while io_case runs the VM)
io_outside_client() {
    (
        for _ in $(seq 500); do [ -e "$1/ready" ] && break; sleep 0.02; done
        exec 3<>"/dev/tcp/127.0.0.1/$(cat "$1/port")" && printf hello >&3 && exec 3>&-
    ) 2>/dev/null &
}

# io_tier VM FLAGS TAG: every program (tests/run.sh --all runs it again under ASan and
# --gc-stress --gc-verify)
io_tier() {
    local vm=$1 flags=$2 tag=$3 som name
    for som in tests/io/*.som; do
        name=$(basename "$som" .som)
        [ -n "$FILTER" ] && [[ "$tag$name" != *"$FILTER"* ]] && continue
        case "$name" in
            Watched|PrintThenWait) ;;   # the workloads of io_sqstack_test, io_flush_test
            FdBound) io_case "$vm" "$flags" "$som" "$tag$name" :
                     io_case "$vm" "$flags" "$som" "$tag$name (ulimit -n 128)" : sh -c 'ulimit -n 128 && exec "$@"' sh ;;
            EmfileReclaim) io_case "$vm" "$flags" "$som" "$tag$name (ulimit -n 64)" : sh -c 'ulimit -n 64 && exec "$@"' sh ;;
            Outside) io_case "$vm" "$flags" "$som" "$tag$name" io_outside_client ;;
            FileAccess) io_access_case "$vm" "$flags" "$som" "$tag$name" ;;
            *) io_case "$vm" "$flags" "$som" "$tag$name" : ;;
        esac
    done
}

# Delays and I/O timeouts come from the event loop's own wait: no interval timer, no
# POSIX timer, no alarm, no signal handler (an embedding program, a fuzzer's -timeout or
# a profiler keeps its own). The workload needs preemption, so the watcher thread runs.
io_no_timer_test() {
    local log="$TMP/io.strace" out
    if ! command -v strace >/dev/null || ! strace -f -qq -o /dev/null true 2>/dev/null; then
        skip "io/no process-wide timer (strace)" "strace is missing or cannot trace here"
        return
    fi
    out=$(timeout 60 strace -f -qq -o "$log" -e trace=setitimer,alarm,timer_create,timer_settime,rt_sigaction,clone3,clone \
          "$VM" tests/io/Preempt.som 2>&1)
    local bad
    bad=$(grep -E 'setitimer|alarm\(|timer_create|timer_settime|rt_sigaction\(SIG(ALRM|VTALRM|PROF),' "$log")
    if [ -z "$bad" ] && diff <(echo "$out") tests/io/Preempt.expected >/dev/null && grep -q 'clone' "$log"; then
        pass "io/no process-wide timer or signal (strace: $(grep -c . "$log") calls traced)"
    else
        fail "io/no process-wide timer or signal" "$bad
$out
$(head -20 "$log")"
    fi
}

# With SIGALRM blocked by the parent (a signal the old VM's Delays needed), the
# preemptions still happen on time.
io_sigalrm_blocked_test() {
    local out
    out=$(timeout 20 python3 -c 'import os, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
os.execv(sys.argv[1], sys.argv[1:])' "$VM" tests/io/Preempt.som 2>&1)
    if diff <(echo "$out") tests/io/Preempt.expected >/dev/null; then pass "io/Delays and preemption with SIGALRM blocked"
    else fail "io/Delays and preemption with SIGALRM blocked" "$out"; fi
}

# sqstack stops every thread of the VM (/proc/PID/task) and reads the main thread's
# Smalltalk stack, the watcher thread beside it.
io_sqstack_test() {
    local sq=build/tools/sqstack go="$TMP/io.go" pid tasks out
    if [ "$(id -u)" != 0 ]; then skip "io/sqstack with the watcher thread" "needs root"; return; fi
    [ -x "$sq" ] || make -s "$sq" >/dev/null 2>&1
    [ -x "$sq" ] || { skip "io/sqstack with the watcher thread" "build/tools/sqstack not built"; return; }
    rm -f "$go"
    "$VM" tests/io/Watched.som "$go" >"$TMP/io.w.out" 2>&1 </dev/null &
    pid=$!
    wait_line "$TMP/io.w.out" /dev/null '^computing$' "$pid"
    tasks=$(ls "/proc/$pid/task" 2>/dev/null | wc -l)
    out=$("$sq" -p "$pid" 2>&1)
    touch "$go"
    wait "$pid"
    if [ "$tasks" = 2 ] && grep -q 'at Watched>>spinUntil: (Watched.som:13)' <<<"$out" && grep -q 'at Watched>>run (Watched.som:10)' <<<"$out"
    then pass "io/sqstack with the watcher thread (2 threads)"
    else fail "io/sqstack with the watcher thread" "threads: $tasks
$out"; fi
}

# A line printed before every process waits is in the pipe while the VM sleeps (a
# server's "listening on" line), not only at exit.
io_flush_test() {
    local go="$TMP/io.flush.go" out="$TMP/io.flush.out" pid i seen=""
    rm -f "$go"
    "$VM" tests/io/PrintThenWait.som "$go" >"$out" 2>&1 </dev/null &
    pid=$!
    for ((i = 0; i < 500; i++)); do
        [ "$(cat "$out")" = waiting ] && { seen=yes; break; }
        sleep 0.01
    done
    touch "$go"
    wait "$pid"
    if [ -n "$seen" ] && [ "$(cat "$out")" = "waiting
done" ]; then pass "io/output flushed before the VM sleeps"
    else fail "io/output flushed before the VM sleeps" "seen while waiting: ${seen:-no}; at exit: $(cat "$out")"; fi
}

io_tier "$VM" "" "io/"
if [ -z "$FILTER" ] || [[ "io/timers" == *"$FILTER"* ]]; then
    io_no_timer_test
    io_sigalrm_blocked_test
    io_sqstack_test
    io_flush_test
fi
