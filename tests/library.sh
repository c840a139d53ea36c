# SPDX-License-Identifier: BSD-2-Clause
# tests/library.sh - every selector of the embedded library has a test; sourced by
# tests/run.sh (uses its pass/fail and $VM).
#
# For each class file in vm/lib/, the VM lists the selectors of the class and its
# metaclass (Class>>selectors, so what is listed is what the VM really has), and each
# must be sent somewhere in the tests' programs (tests/lang/<area>/*.som, and the
# workloads of the probe and tool tiers, tests/<tier>/*.som): a unary or
# binary selector as a word, a keyword selector as its keywords in order on one line.
# A selector that no test sends fails, so adding a method means adding its check
# (tests/lang/library/ holds one file per group of classes). The few private helpers
# that only the library itself sends are listed here, each with the method that runs it.

library_private="
Array>>mergeSortFrom:to:buffer:by: (sort:)
Vector>>initialize: (Vector class>>new:)
Vector>>checkIndex:ifValid: (at:, at:put:)
Vector>>grow (append:)
Dictionary>>initialize: (Dictionary class>>new:)
Dictionary>>slotOf: (at:)
Dictionary>>firstProbe: (at:put:)
Dictionary>>addPair: (at:put:)
Dictionary>>rebuild (at:put:)
Set>>items: (Set class>>new)
Hashtable>>grow (at:put:)
SharedQueue>>init (SharedQueue class>>new)
Delay>>setMilliseconds: (Delay class>>forMilliseconds:)
Exception>>nextHandler (signal)
Exception>>evaluateHandler:frame:serial: (signal)
Block1>>unwind:to:serial:value:action: (ensure:, ifCurtailed:: run by the VM as it unwinds)
Block1>>unwindTo:serial:value:action: (unwind:to:serial:value:action:)
"

library_selector_pattern() { # selector -> grep -E pattern
    local sel=$1
    case "$sel" in
        *:) local pat="" part
            IFS=: read -ra parts <<<"$sel"
            for part in "${parts[@]}"; do pat="$pat${pat:+.*}(^|[^A-Za-z0-9_])$part:"; done
            printf '%s' "$pat" ;;
        [A-Za-z_]*) printf '(^|[^A-Za-z0-9_:#])%s($|[^A-Za-z0-9_:])' "$sel" ;;
        *) printf '%s' "$sel" | sed 's/[][\.*^$+?(){}|/]/\\&/g' ;;
    esac
}

library_tier() {
    local f cls side sel missing=0 checked=0 list sels report=""
    local tests
    tests=$(ls tests/lang/*/*.som tests/*/*.som | grep -v -e '^tests/lang/support/' -e '^tests/bench/')
    for f in vm/lib/*.som; do
        cls=$(basename "$f" .som)
        for side in "$cls" "$cls class"; do
            list=$("$VM" -e "($side selectors collect: [ :s | s asString ]) inject: '' into: [ :all :s | all + s + ' ' ]" 2>&1) || {
                fail "library/$side selectors" "$list"; continue; }
            read -ra sels <<<"$list" # read, not a for over $list: no globbing of * or /
            for sel in "${sels[@]}"; do
                grep -qF "$side>>$sel (" <<<"$library_private" && continue
                checked=$((checked + 1))
                if ! grep -qE -- "$(library_selector_pattern "$sel")" $tests; then
                    missing=$((missing + 1))
                    report="$report
no test sends $side>>$sel"
                fi
            done
        done
    done
    if [ "$missing" = 0 ]; then pass "library/every selector has a test ($checked selectors)"
    else fail "library/every selector has a test" "$missing of $checked selectors are sent by no test:$report"; fi
}

library_tier
