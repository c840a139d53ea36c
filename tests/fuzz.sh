# SPDX-License-Identifier: BSD-2-Clause
# tests/fuzz.sh - the libFuzzer targets (fuzz/, scripts/fuzz.sh) for FUZZ_TIME seconds each
# (60 by default): the compiler on class-file text, -e evaluation under a time and heap
# budget, and the tools' ELF reader on arbitrary bytes. Sourced by tests/run.sh --all
# (CI); each target is one case, and a crash fails it with its reproducer printed and
# kept in build/fuzz/crashes/. make fuzz runs the same for longer.

fuzz_tier() {
    local out line
    if ! command -v clang >/dev/null || [ ! -f "$(clang -print-file-name=libclang_rt.fuzzer-x86_64.a)" ]; then
        skip "fuzz" "clang's libFuzzer is not installed (Debian: libclang-rt-14-dev)"
        return
    fi
    out=$(scripts/fuzz.sh "${FUZZ_TIME:-60}" 2>&1)
    while IFS= read -r line; do
        case "$line" in
            "ok fuzz_"*) pass "fuzz/${line#ok }" ;;
            "FAIL fuzz_"*) fail "fuzz/${line#FAIL }" "$(awk -v l="$line" '$0 == l { on = 1; next } on && /^(fuzz_|ok fuzz_|[0-9]+ passed)/ { on = 0 } on' <<<"$out" | head -60)" ;;
        esac
    done <<<"$out"
    grep -q "passed, " <<<"$out" || fail "fuzz" "scripts/fuzz.sh did not finish: $(tail -20 <<<"$out")"
}
