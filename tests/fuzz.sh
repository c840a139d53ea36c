# SPDX-License-Identifier: BSD-2-Clause
# tests/fuzz.sh - the libFuzzer targets (fuzz/, scripts/fuzz.sh ci): the compiler on
# class-file text, -e evaluation under a budget, the tools' ELF reader on arbitrary
# bytes, sqstack's stack walk over a memory image, and sqflow's Chrome trace writer over
# any stream of entries and returns, and sqflow --merge on any file as a browser's trace. Sourced by tests/run.sh --all (CI). Deterministic: each target replays its
# regression corpus (fuzz/regress/: every input that ever crashed or hung) and its seeds,
# then runs a short campaign from a fixed seed and a fixed number of runs; each of these
# is one case. A crash or a hang fails its case with the input named (kept in
# build/fuzz/crashes/) and shown in hex. Long random campaigns: make fuzz FUZZ_TIME=600.

fuzz_tier() {
    local out line
    if ! command -v clang >/dev/null || [ ! -f "$(clang -print-file-name=libclang_rt.fuzzer-x86_64.a)" ]; then
        # CI must run it (scripts/deps.sh installs it): there a missing fuzzer fails
        if [ "${CI:-}" = true ]; then fail "fuzz" "clang's libFuzzer is not installed (scripts/deps.sh installs libclang-rt-14-dev)"
        else skip "fuzz" "clang's libFuzzer is not installed (Debian: libclang-rt-14-dev)"; fi
        return
    fi
    out=$(scripts/fuzz.sh ci 2>&1)
    while IFS= read -r line; do
        case "$line" in
            "ok fuzz_"*) pass "fuzz/${line#ok fuzz_}" ;;
            "FAIL fuzz_"*) fail "fuzz/${line#FAIL fuzz_}" "$(awk -v l="$line" '$0 == l { on = 1; next } on && /^(ok fuzz_|FAIL fuzz_|fuzz_[a-z]*: |[0-9]+ passed)/ { on = 0 } on' <<<"$out" | head -60)" ;;
        esac
    done <<<"$out"
    grep -q "passed, " <<<"$out" || fail "fuzz" "scripts/fuzz.sh did not finish: $(tail -20 <<<"$out")"
}
