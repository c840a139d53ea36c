# SPDX-License-Identifier: BSD-2-Clause
# tests/names.sh - names from a target reach root's terminal escaped (security review,
# finding 3): tests/names/Names.som names its green process and its route with ESC [2J,
# BEL, a raw C1 CSI byte (0x9b) and its UTF-8 form (C2 9B); each tool's text output must
# hold them as \xNN and hold no control byte but newline. Sourced by tests/run.sh (its
# pass/fail/skip, start_bg, wait_line, $VM, $TMP). Needs root.

NM_TMP="$TMP/names"

# nm_run TOOL ARGS...: the tool attached to a Names.som VM (-p), the VM let go, both waited for.
nm_run() {
    local tool=$1 go="$NM_TMP/go" vm
    shift
    rm -f "$go"
    "$VM" -cp tests/names tests/names/Names.som "$go" >"$NM_TMP/vm.out" 2>&1 </dev/null &
    vm=$!
    start_bg "$NM_TMP/out" "$NM_TMP/err" 60 "build/tools/$tool" "$@" -p "$vm"
    wait_line "$NM_TMP/out" "$NM_TMP/err" '^Tracing ' "$BG_PID"
    touch "$go"
    wait "$vm"
    wait "$BG_PID"
    NM_STATUS=$?
}

# nm_check LABEL WANT: the output holds WANT (a fixed string) and no control byte:
# C0 but newline, DEL, or C1 (raw 0x80-0x9f on an 8-bit terminal, or U+0080-U+009F).
nm_check() {
    local label=$1 want=$2 bad
    bad=$(LC_ALL=C grep -c $'[\x01-\x09\x0b-\x1f\x7f]\|\xc2[\x80-\x9f]' "$NM_TMP/out")
    # a raw C1 byte outside a well-formed UTF-8 sequence (an 8-bit terminal's CSI)
    python3 -c 'import sys; t = open(sys.argv[1], "rb").read().decode("utf-8", "surrogateescape")
sys.exit(any(0xdc80 <= ord(c) <= 0xdc9f for c in t))' "$NM_TMP/out" || bad=$((bad + 1))
    if [ "$NM_STATUS" = 0 ] && [ "$bad" = 0 ] && grep -qF -- "$want" "$NM_TMP/out"; then
        pass "$label"
    else
        fail "$label" "status $NM_STATUS, $bad line(s) with a control byte; want $want in:
$(cat -v "$NM_TMP/out" | head -20)
$(head -5 "$NM_TMP/err")"
    fi
}

names_tier() {
    if [ "$(id -u)" != 0 ]; then
        skip "names" "needs root (BPF)"
        return
    fi
    mkdir -p "$NM_TMP"
    nm_run sqreq
    nm_check "names/sqreq: the route printed as GET /\\x1b]0;owned\\x07 (its 24 columns)" 'GET /\x1b]0;owned\x07\x9'
    nm_run sqsched
    nm_check "names/sqsched: the process printed as evil\\x1b[2J\\x07\\x9bx (its 20 columns)" 'evil\x1b[2J\x07\x9bx'
}

names_tier
