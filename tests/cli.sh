# SPDX-License-Identifier: BSD-2-Clause
# tests/cli.sh - the sqvm command line; sourced by tests/run.sh (uses its pass/fail and $VM).

cli_case() { # label expected-status expected-output-substring -- command...
    local label=$1 want_status=$2 want=$3
    shift 4
    local out status
    out=$("$@" 2>&1 </dev/null)
    status=$?
    if [ "$status" = "$want_status" ] && [[ "$out" == *"$want"* ]]; then pass "cli/$label"
    else fail "cli/$label" "status $status (want $want_status), output:
$out
want it to contain: $want"; fi
}

cli_case version 0 "sqvm 0.1.0" -- "$VM" --version
cli_case help 0 "Usage: sqvm [options] ClassName|File.som" -- "$VM" --help
cli_case no-arguments 2 "Usage: sqvm" -- "$VM"
cli_case unknown-option 2 "sqvm: unknown option --frobnicate" -- "$VM" --frobnicate
cli_case bad-size 2 "sqvm: --heap: bad size 'lots'" -- "$VM" --heap lots -e 1
cli_case missing-argument 2 "option -cp needs an argument" -- "$VM" -cp
cli_case eval 0 "7" -- "$VM" -e '3 + 4'
cli_case eval-large 0 "1267650600228229401496703205376" -- "$VM" -e '1 << 100'
cli_case eval-statements 0 "321" -- "$VM" -e '| a | a := Array new: 3. a at: 1 put: 3; at: 2 put: 2; at: 3 put: 1. a inject: 0 into: [ :s :e | s * 10 + e ]'
cli_case eval-syntax-error 1 "-e:1:5: error: expected an expression" -- "$VM" -e '3 + )'
cli_case no-such-class 1 "ERROR: Tried loading 'NoSuchClass' as a class, but failed." -- "$VM" -cp tests/lang/lib NoSuchClass
cli_case class-by-path 0 "rectangles kept: 100" -- "$VM" examples/Workload.som 2
cli_case class-by-name 0 "points walked: 100000" -- "$VM" -cp examples Workload 2
cli_case gc-stats 0 "gc: " -- "$VM" --gc-stats -e 'system fullGC'
cli_case kernel-class-from-class-path 0 "42" -- "$VM" -cp tests/cli -e '1 + 2'
cli_case disassemble 0 "PUSH_FIELD" -- "$VM" -cp examples --disassemble Point
cli_case disassemble-missing 1 "class Nope not found" -- "$VM" --disassemble Nope
