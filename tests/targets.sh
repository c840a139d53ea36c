# SPDX-License-Identifier: BSD-2-Clause
# tests/targets.sh - what the tools' scan of other roots (every tool run without -p/--vm)
# opens of what a target names. Sourced by tests/run.sh (uses its pass/fail/skip and $VM,
# $TMP). Needs root (chroot).

TG_TMP="$TMP/targets"
TG_TIMEOUT=20	# a tool that takes longer is taken to hang (it needs ~1 s)

# A process under chroot whose executable was replaced by a FIFO named as its exe link
# reads ("/t (deleted)"): the scan must not block opening it (finding 4). The FIFO also
# stands at the host path the link names, for the chroot case.
targets_fifo_exe() {
    local root="$TG_TMP/root" pid st vmdir
    rm -rf "$TG_TMP"
    mkdir -p "$root"
    if ! cc -static -O2 -o "$root/t" tests/targets/pause.c 2>"$TG_TMP/cc.err"; then
        skip "targets: FIFO exe" "no static C build: $(head -1 "$TG_TMP/cc.err")"
        return
    fi
    chroot "$root" /t &
    pid=$!
    sleep 0.2
    rm "$root/t"
    mkfifo "$root/t (deleted)"
    vmdir=$(cd "$(dirname "$VM")" && pwd)
    PATH="$vmdir:$PATH" timeout "$TG_TIMEOUT" build/tools/sqstat -d 1 >"$TG_TMP/out" 2>"$TG_TMP/err" </dev/null
    st=$?
    kill "$pid"
    wait "$pid" 2>/dev/null
    if [ "$st" != 124 ] && [ "$st" != 137 ]; then
        pass "targets: sqstat -d 1 beside a chroot whose exe is a FIFO named '/t (deleted)' ends (status $st)"
    else fail "targets: FIFO exe" "sqstat hung (killed after $TG_TIMEOUT s): $(head -3 "$TG_TMP/err")"; fi
}

targets_fifo_exe
