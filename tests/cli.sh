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

# cli_streams: stdout and stderr apart. want-stdout is a bash pattern for the whole of
# stdout (exact where it has no * ? [), want-stderr the text stderr begins with.
cli_streams() { # label expected-status want-stdout want-stderr -- command...
    local label=$1 want_status=$2 want_out=$3 want_err=$4
    shift 5
    local out err status
    out=$("$@" 2>"$TMP/cli.err" </dev/null)
    status=$?
    err=$(cat "$TMP/cli.err")
    # shellcheck disable=SC2053 # want_out is a pattern
    if [ "$status" = "$want_status" ] && [[ "$out" == $want_out ]] && [[ "$err" == "$want_err"* ]]; then pass "cli/$label"
    else fail "cli/$label" "status $status (want $want_status), stdout:
$out
want: $want_out
stderr:
$(head -5 <<<"$err")
want it to begin with: $want_err"; fi
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
cli_case no-such-class 1 "ERROR: Tried loading 'NoSuchClass' as a class, but failed." -- "$VM" -cp tests/lang/support NoSuchClass
# An unhandled error's ERROR line is on stdout after what the program printed, as SOM's
# Object>>error: writes it, the backtrace on stderr: in the main process, in a forked one
# (the program goes on), and where the error cannot be signalled (a stack overflow in
# the handler of one, reported at once). The VM's own ends (SIGINT, out of memory) stay
# on stderr (the sigint-* and *-larger-than-heap cases).
cli_streams error-line-on-stdout 1 $'1\nERROR: Method foo not found in class Nil' \
    $'    at Object>>error: (Object.som:59)\n    at Object>>doesNotUnderstand:arguments: (Object.som:67)\n    at Nil>>doIt (-e:1)' \
    -- "$VM" -e '1 println. nil foo'
cli_streams error-line-on-stdout-in-process 0 $'in a process\nERROR: Method bar not found in class Nil\nmain goes on\n3' \
    '    at Object>>error: (Object.som:59)' \
    -- "$VM" -e "[ 'in a process' println. nil bar ] fork. Processor yield. 'main goes on' println. 3"
cli_streams error-line-on-stdout-unsignalled 1 $'2\nERROR: Stack overflow (depth [0-9]*)' '    at [] in Nil>>doIt (-e:1)' \
    -- "$VM" --stack 1M -e '| b | 2 println. b := [ :n | (b value: n + 1) + 1 ]. [ b value: 0 ] on: Error do: [ :e | b value: 0 ]'
cli_case class-by-path 0 "rectangles kept: 100" -- "$VM" examples/Workload.som 2
cli_case class-by-name 0 "points walked: 100000" -- "$VM" -cp examples Workload 2
cli_case gc-stats 0 "gc: " -- "$VM" --gc-stats -e 'system fullGC'
cli_case kernel-class-from-class-path 0 "42" -- "$VM" -cp tests/cli -e '1 + 2'
# the operand shapes of + (a local and a literal, two locals, a local argument) give way too
cli_case kernel-class-operand-shapes 0 "42" -- "$VM" -cp tests/cli -e '| a b | a := 1. b := 2. (a + 2) + (a + b) + (b + a)'
# a chain of Double steps (interp.c's float_chain) stops at a step whose selector Double redefined
cli_case kernel-class-double-chain 0 $'42\n43\n42' -- "$VM" -cp tests/cli/double -e '| a b c | a := 1.5. b := 2.5. c := 0.5. (a * b + c) println. (c - (a * b)) println. (a * b) + (a * c)'
# ... and a chain that ends in a comparison sends the redefined one (Double>>>), the others compare
cli_case kernel-class-double-compare 0 $'44\n44\ntrue\ntrue' -- "$VM" -cp tests/cli/double -e '| a b f | a := 1.5. b := 2.5. f := 4.0. (a * b > 4.0) println. (a * b > f) println. (a * b < 4.0) println. a * b < f'
# // and sqrt on Doubles (SEND_FDIV, SEND_SQRT and their chain steps) send a Double's redefined ones; Integer's stay
cli_case kernel-class-double-divide-root 0 $'45\n45\n46\n46\n1.5\n4' -- "$VM" -cp tests/cli/doubleroot -e '| a b | a := 1.5. b := 2.5. (a // b) println. (a // (a * b)) println. a sqrt println. (a * b) sqrt println. (3 // 2) println. 16 sqrt'
cli_case disassemble 0 "PUSH_FIELD" -- "$VM" -cp examples --disassemble Point
cli_case disassemble-missing 1 "class Nope not found" -- "$VM" --disassemble Nope

# Bad input at the limits: clear errors, never a crash (issue 13). The files are made
# here: 100,000 levels of nesting and 20 MB literals do not belong in the tree.
CLI_BIG=$(mktemp -d)
python3 - "$CLI_BIG" <<'PY'
import sys
d = sys.argv[1]
def w(name, body): open(f"{d}/{name}.som", "w").write(f"{name} = (\n  run = ( {body} )\n)\n")
w("Parens", "^" + "(" * 100000 + "1" + ")" * 100000)
w("Blocks", "^" + "[" * 100000 + "1" + "]" * 100000)
w("Arrays", "^#" + "(" * 100000 + "1" + ")" * 100000)
w("Nested999", "(" * 999 + "1" + ")" * 999 + " println")
w("ManySends", "^3" + " + 1" * 70000)
w("BigString", "('" + "a" * 20000000 + "') length println")
w("BigNumber", "(" + "7" * 30000 + ") asString length println")
w("BigArray", "#(" + "1 " * 1000000 + ") length println")
PY
cli_case nesting-parens 1 "Parens.som:2:1012: error: nesting too deep: more than 1000 levels" -- "$VM" "$CLI_BIG/Parens.som"
cli_case nesting-blocks 1 "Blocks.som:2:1012: error: nesting too deep" -- "$VM" "$CLI_BIG/Blocks.som"
cli_case nesting-literal-arrays 1 "Arrays.som:2:1012: error: nesting too deep" -- "$VM" "$CLI_BIG/Arrays.som"
cli_case nesting-999-levels-run 0 "1" -- "$VM" "$CLI_BIG/Nested999.som"
cli_case too-many-sends 1 "ManySends.som:2:1: error: too many sends in one method" -- "$VM" "$CLI_BIG/ManySends.som"
cli_case huge-string-literal 0 "20000000" -- "$VM" "$CLI_BIG/BigString.som"
cli_case huge-integer-literal 0 "30000" -- "$VM" "$CLI_BIG/BigNumber.som"
cli_case huge-literal-array 0 "1000000" -- "$VM" "$CLI_BIG/BigArray.som"
rm -rf "$CLI_BIG"
# Memory is bounded by --heap: an object larger than the heap is a Smalltalk error
# (found by fuzz_eval: Array new: 707000428585 asked malloc for 5.6 TB)
cli_case object-larger-than-heap 1 "ERROR: out of memory: an object of 5656003428696 bytes is larger than the --heap limit of 4294967296 bytes" -- "$VM" -e 'Array new: 707000428585'
cli_case object-larger-than-small-heap 1 "an object of 240000016 bytes is larger than the --heap limit of 67108864 bytes" -- "$VM" --heap 64M -e '(Array new: 30000000) size'
cli_case heap-exhausted 1 "ERROR: out of memory:" -- "$VM" --heap 32M -e '| v | v := Vector new. [ true ] whileTrue: [ v append: (Array new: 1000) ]'
# (found by fuzz_eval in CI: more than 2^40 slots went to exit(1) without a backtrace)
cli_case object-beyond-2-40-slots 1 "ERROR: out of memory: an object of 30544608402416 bytes is larger than the --heap limit" -- "$VM" -e 'Array new: 021429000555555555555555555555555555555551-5%5555555525555'
# (found by fuzz_compile in CI: "(a and: [b]); c" made the parenthesised send the cascade's
# first message with no receiver, and the compiler read a null Node)
cli_case cascade-after-parentheses 1 "-e:1:20: error: a cascade must follow a message send" -- "$VM" -e '(true and: [false]); ifTrue: [1]'
cli_case cascade-after-parenthesised-send 1 "-e:1:8: error: a cascade must follow a message send" -- "$VM" -e '(3 + 4); printString'

# No primitive runs without bound (issue 19). A LargeInteger result that could not fit the
# heap is the out-of-memory error, decided from its size before it is computed: 2^(2^29)
# needs 2^24 + 2 digits, 67108888 bytes; its decimal String 19265923 characters.
cli_case bigint-product-larger-than-heap 1 $'ERROR: out of memory: an object of 67108888 bytes is larger than the --heap limit of 67108864 bytes\n    at Nil>>doIt (-e:1)' -- "$VM" --heap 64m -e '| x | x := 2. 40 timesRepeat: [ x := x * x ]. x'
# a shift by any small Integer: 1 << 10^11 would take 12.5 GB
cli_case bigint-shift-larger-than-heap 1 $'ERROR: out of memory: an object of 12500000024 bytes is larger than the --heap limit of 67108864 bytes\n    at Nil>>doIt (-e:1)' -- "$VM" --heap 64m -e '1 << 100000000000'
cli_case bigint-string-larger-than-heap 1 "ERROR: out of memory: an object of 19265939 bytes is larger than the --heap limit of 16777216 bytes" -- "$VM" --heap 16m -e '| x | x := 1 << 16000000. x := x * x * x * x. x asString size'
# Ctrl-C, sent for real (tests/cli/sigint.py): a Smalltalk error with the backtrace and
# status 130, from inside a long primitive, at a safe point, in a Delay, in a forked
# process, in a loop over LargeIntegers or Doubles (found by fuzz_eval: such a to:do:
# had no safe point); a second Ctrl-C kills a VM that cannot act on the first.
SIGINT_PY=tests/cli/sigint.py
cli_case sigint-in-karatsuba 0 $'exit status 130 within 5 s\nERROR: interrupted (SIGINT) in Integer>>*\n    at Nil>>doIt (-e:1)' -- "$SIGINT_PY" -- "$VM" -e '| x | x := 3. 40 timesRepeat: [ x := x * x ]. x'
cli_case sigint-squaring-2 0 $'exit status 130 within 5 s\nERROR: interrupted (SIGINT)' -- "$SIGINT_PY" -- "$VM" -e '| x | x := 2. 40 timesRepeat: [ x := x * x ]. x'
cli_case sigint-printing 0 $'exit status 130 within 5 s\nERROR: interrupted (SIGINT) in Integer>>asString\n    at Nil>>doIt (-e:1)' -- "$SIGINT_PY" -- "$VM" -e '((1 << 16000000) - 1) asString size'
cli_case sigint-division 0 $'exit status 130 within 5 s\nERROR: interrupted (SIGINT) in Integer>>/\n    at Nil>>doIt (-e:1)' -- "$SIGINT_PY" -- "$VM" -e '((1 << 16000000) - 1) / ((1 << 8000000) - 3)'
cli_case sigint-safe-point 0 $'exit status 130 within 5 s\nERROR: interrupted (SIGINT)\n    at Nil>>doIt (-e:1)' -- "$SIGINT_PY" -- "$VM" -e '[ true ] whileTrue: [ ]'
cli_case sigint-delay 0 $'exit status 130 within 5 s\nERROR: interrupted (SIGINT)\n    at Nil>>doIt (-e:1)' -- "$SIGINT_PY" -- "$VM" -e '(Delay forSeconds: 100) wait'
cli_case sigint-forked-process 0 $'exit status 130 within 5 s\nERROR: interrupted (SIGINT)\n    at [] in Nil>>doIt (-e:1)\n    in process spinner (id 2)' -- "$SIGINT_PY" -- "$VM" -e "[ [ true ] whileTrue: [ ] ] forkNamed: 'spinner'. Semaphore new wait"
cli_case sigint-to-do-large 0 $'exit status 130 within 5 s\nERROR: interrupted (SIGINT)' -- "$SIGINT_PY" -- "$VM" -e '1 to: (1 << 100) do: [ :i | ]'
cli_case sigint-to-do-double 0 $'exit status 130 within 5 s\nERROR: interrupted (SIGINT)\n    at Nil>>doIt (-e:1)' -- "$SIGINT_PY" -- "$VM" -e '1.5 to: 1.0e300 do: [ :i | ]'
cli_case sigint-twice 0 $'still running after the first SIGINT\nkilled by SIGINT within 5 s\nsqvm: interrupted again: exiting' -- "$SIGINT_PY" --twice -- "$VM" -e "[ true ] whileTrue: [ 'x' println ]"
