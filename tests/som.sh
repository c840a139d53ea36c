# SPDX-License-Identifier: BSD-2-Clause
# tests/som.sh - the standard suites, unmodified, from checkouts outside this repository;
# sourced by tests/run.sh (uses its pass/fail/skip and $VM). Nothing of them is copied here.
#
#   SOM_DIR=/path/to/SOM-st/SOM        its TestSuite and BasicInterpreterTests, with sqvm's
#                                      embedded library and with SOM's own Smalltalk/ first
#                                      on the class path
#   AWFY_DIR=/path/to/are-we-fast-yet  the 14 benchmarks of benchmarks/SOM, unmodified,
#                                      at the sizes of AWFY's own test.conf, verified
#
# When a variable is unset, the copy in ../shared/suites/ beside the repository is used if
# it is there (CI's machine has it; see its README.md). A suite that is found nowhere is
# skipped with the reason, and under CI=true it fails instead: CI must run them.

som_suites=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/shared/suites
[ -z "${SOM_DIR:-}" ] && [ -f "$som_suites/SOM/TestSuite/TestHarness.som" ] && SOM_DIR=$som_suites/SOM
[ -z "${AWFY_DIR:-}" ] && [ -f "$som_suites/are-we-fast-yet/benchmarks/SOM/Harness.som" ] &&
    AWFY_DIR=$som_suites/are-we-fast-yet

# missing NAME REASON: a suite that is not there.
som_missing() {
    if [ "${CI:-}" = true ]; then fail "$1" "$2; CI must run the standard suites"
    else skip "$1" "$2"; fi
}

SOM_VM=$(cd "$(dirname "$VM")" && pwd)/$(basename "$VM")

som_testsuite() { # label class-path
    local label=$1 cp=$2 out status total ok unsupported
    out=$(cd "$SOM_DIR" && timeout 300 "$SOM_VM" -cp "$cp" TestSuite/TestHarness.som 2>&1)
    status=$?
    total=$(sed -n 's/^Total number of tests: *//p' <<<"$out")
    ok=$(sed -n 's/^Number of successful tests: *//p' <<<"$out")
    unsupported=$(sed -n 's/^Number of unsupported optionals: *//p' <<<"$out")
    if [ "$status" = 0 ] && [ -n "$total" ] && [ "$total" = "$ok" ] && [ "$unsupported" = 0 ]; then
        pass "som/TestSuite $label ($ok of $total tests, no unsupported optionals)"
    else
        fail "som/TestSuite $label" "status $status; $(tail -12 <<<"$out")"
    fi
}

# SOM's TestSuite/BasicInterpreterTests: class-side test methods whose answers each SOM VM
# checks in its own harness. Here a generated class sends each one and prints the class and
# asString of the answer, compared with tests/som/BasicInterpreterTests.expected (what
# SOM-java answers); the two tests of Self must not compile. NumberOfTests says how many
# there are, so a suite with more tests than the expected file fails.
som_basic_tests() { # label class-path-before-the-tests
    local label=$1 cp=$2 dir=$SOM_DIR/TestSuite/BasicInterpreterTests
    local want=tests/som/BasicInterpreterTests.expected work=$TMP/som-basic
    local answers errors out status count sel
    answers=$(grep -v -e '^#' -e ' compile error$' "$want")
    errors=$(grep ' compile error$' "$want")
    mkdir -p "$work"
    {
        echo 'BasicRunner = ('
        echo '    show: c sel: s = ( | r | r := (system resolve: c) perform: s.'
        echo "        (c asString + ' ' + s asString + ' ' + r class name + ' ' + r asString) println )"
        echo '    run = ('
        awk '{ print "        self show: #" $1 " sel: #" $2 "." }' <<<"$answers"
        echo '    )'
        echo ')'
    } >"$work/BasicRunner.som"
    out=$(cd "$work" && timeout 60 "$SOM_VM" -cp "$cp.:$dir" BasicRunner.som 2>&1)
    status=$?
    count=$("$SOM_VM" -cp "$dir" -e 'NumberOfTests numberOfTests' 2>&1)
    if [ "$status" != 0 ] || [ "$out" != "$answers" ]; then
        fail "som/BasicInterpreterTests $label" "status $status; $(diff <(echo "$answers") <(echo "$out") | head -12)"
    elif [ "$count" != $(($(wc -l <<<"$answers") + $(wc -l <<<"$errors"))) ]; then
        fail "som/BasicInterpreterTests $label" \
            "NumberOfTests says $count tests; $want lists $(($(wc -l <<<"$answers") + $(wc -l <<<"$errors")))"
    else
        for sel in $(awk '{ print $2 }' <<<"$errors"); do
            out=$("$SOM_VM" -cp "$cp$dir" -e "Self $sel" 2>&1)
            if [ $? = 0 ] || ! grep -q "Self.som:[0-9]*:[0-9]*: error:" <<<"$out"; then
                fail "som/BasicInterpreterTests $label" "Self $sel should not compile: $(head -3 <<<"$out")"
                return
            fi
        done
        pass "som/BasicInterpreterTests $label ($count of $count tests)"
    fi
}

# The benchmarks at the sizes of AWFY's test.conf (test-som), each run once.
AWFY_TEST_SIZES="DeltaBlue:1 Richards:1 Json:1 CD:10 Havlak:1 Bounce:100 List:1 Mandelbrot:500 NBody:1
Permute:1 Queens:1 Sieve:1 Storage:1 Towers:1"

awfy_benchmarks() {
    local entry name size out status
    for entry in $AWFY_TEST_SIZES; do
        name=${entry%%:*} size=${entry#*:}
        out=$(cd "$AWFY_DIR/benchmarks/SOM" && timeout 300 "$SOM_VM" \
            -cp .:Core:CD:DeltaBlue:Havlak:Json:NBody:Richards Harness.som "$name" 1 "$size" 2>&1)
        status=$?
        if [ "$status" = 0 ] && grep -q "^$name: iterations=1 runtime: [0-9]*us" <<<"$out"; then
            pass "awfy/$name $size"
        else
            fail "awfy/$name $size" "status $status; $(tail -8 <<<"$out")"
        fi
    done
}

if [ -z "${SOM_DIR:-}" ]; then
    som_missing "som/TestSuite" "SOM_DIR is not set and $som_suites/SOM is missing (a checkout of github.com/SOM-st/SOM)"
elif [ ! -f "$SOM_DIR/TestSuite/TestHarness.som" ]; then
    fail "som/TestSuite" "SOM_DIR=$SOM_DIR has no TestSuite/TestHarness.som"
else
    som_testsuite "with the embedded library" TestSuite
    som_testsuite "with SOM's Smalltalk/" Smalltalk:TestSuite
    som_basic_tests "with the embedded library" ""
    som_basic_tests "with SOM's Smalltalk/" "$SOM_DIR/Smalltalk:"
fi

if [ -z "${AWFY_DIR:-}" ]; then
    som_missing "awfy" "AWFY_DIR is not set and $som_suites/are-we-fast-yet is missing (a checkout of github.com/smarr/are-we-fast-yet)"
elif [ ! -f "$AWFY_DIR/benchmarks/SOM/Harness.som" ]; then
    fail "awfy" "AWFY_DIR=$AWFY_DIR has no benchmarks/SOM/Harness.som"
else
    awfy_benchmarks
fi
