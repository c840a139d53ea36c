# SPDX-License-Identifier: BSD-2-Clause
# tests/prom/lib.sh - what the Prometheus tiers (tests/prom.sh, tests/prom_abuse.sh,
# tests/monitoring.sh) share: their preconditions and the reading of their driver's result lines (PASS name,
# FAIL name <TAB> detail, SKIP name <TAB> reason) into the runner's pass/fail/skip, each
# name prefixed with the tier's. Sourced by the tiers (tests/run.sh's $VM, $TMP).

pr_missing() { # the binaries the tiers need that are not installed
    local b
    for b in prometheus prometheus-node-exporter promtool python3; do
        command -v "$b" >/dev/null 2>&1 || printf ' %s' "$b"
    done
}

# pr_ready TIER: 0 if the tier can run (root, Prometheus installed, sqstat built); else
# reports why (a skip, or in CI a failure) and answers 1.
pr_ready() {
    local missing
    missing=$(pr_missing)
    if [ "$(id -u)" != 0 ]; then
        skip "$1" "needs root (BPF programs, uprobes)"
        return 1
    elif [ -n "$missing" ]; then
        if [ "${CI:-}" = true ]; then fail "$1" "not installed:$missing (scripts/deps.sh installs them)"
        else skip "$1" "not installed:$missing (scripts/deps.sh installs Debian's prometheus, prometheus-node-exporter)"; fi
        return 1
    elif ! make -s sqstat >/dev/null 2>&1; then
        fail "$1/build" "make sqstat failed"
        return 1
    fi
}

# pr_results TIER RESULTS ERRFILE: the driver's lines as results; a driver that passed
# nothing or wrote to stderr is a failure too.
pr_results() {
    local line
    while IFS= read -r line; do
        case "$line" in
            "PASS "*) pass "$1/${line#PASS }" ;;
            "FAIL "*) line=${line#FAIL }; fail "$1/${line%%$'\t'*}" "${line#*$'\t'}" ;;
            "SKIP "*) line=${line#SKIP }; skip "$1/${line%%$'\t'*}" "${line#*$'\t'}" ;;
        esac
    done <"$2"
    if ! grep -q '^PASS ' "$2" || [ -s "$3" ]; then
        fail "$1/driver" "$(tail -20 "$3")"
    fi
}
