# SPDX-License-Identifier: BSD-2-Clause
# tests/hostile.sh - every tool against fake VMs that lie (tests/hostile/fakevm.c): bad
# debug offsets, looping frame chains, a current_process flipping under the reader, batch
# records that lie (counts past their buffer, names with no end, kinds that do not exist),
# hostile names, records that name no process, a vm__start flood. Each tool, run with -p PID, must end within its
# limit with a clear error or a partial answer: no signal exit, no ASan report, no raw
# control byte in its text output. Sourced by tests/run.sh (pass, fail, skip, $TMP).
# Under SANITIZE=1 the tools and fakes come from build/asan (HOSTILE_O=build/asan).

HO_O=${HOSTILE_O:-build}
HO_TOOLS=$HO_O/tools
[ -x "$HO_TOOLS/sqstack" ] || HO_TOOLS=build/tools
HO_FAKE=$HO_O/hostile/fakevm
[ -x "$HO_FAKE" ] || HO_FAKE=build/hostile/fakevm
HO_TMP="$TMP/hostile"
HO_LIMIT=2 # seconds a tool may run before SIGINT; SIGKILL 4 s after that
HO_TOOLLIST="sqalloc sqgc sqflow sqprof sqcalls sqstat sqsched sqreq sqio sqslow sqstack"
# sqdoctor runs those tools on the fake too (and escapes what they report): in the modes
# whose lies reach its report, the names and the records
HO_DOCTOR_MODES="loop-chain names batches"
mkdir -p "$HO_TMP"

# a raw C0 control (but \t \n), DEL, or a C1 control (a lone byte 0x80-0x9f, or U+0080-U+009F
# in UTF-8) in the files: prints the first with its context, returns 1
ho_raw_controls() {
    python3 -c '
import re, sys
bad = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|(?:^|(?<=[\x00-\x7f]))[\x80-\x9f]")
for f in sys.argv[1:]:
    b = open(f, "rb").read()
    m = bad.search(b)
    if m:
        print(f, repr(b[max(0, m.start() - 20):m.end() + 20])); sys.exit(1)' "$@"
}

# one tool against one fake: checks its exit, stderr and stdout; its verdict goes to
# OUT.verdict (it runs in the background), ho_verdicts reports them
ho_check() { # mode tool pid
    ho_judge "$@" >"$HO_TMP/$1.$2.verdict" 2>&1
}
ho_judge() { # mode tool pid
    local mode=$1 tool=$2 pid=$3 out="$HO_TMP/$1.$2" rc args
    case $tool in
        sqstack) args="-p $pid" ;;
        # with pprof output the sampler also reads each process's trace context
        sqprof) args="-p $pid --pprof $out.pb.gz" ;;
        sqslow) args="-p $pid --out $HO_TMP" ;;	# its captures, of what the fake's records say
        *) args="-p $pid" ;;
    esac
    timeout -s INT -k 4 "$HO_LIMIT" "$HO_TOOLS/$tool" $args >"$out" 2>"$out.err" </dev/null
    rc=$?
    local label="hostile $mode $tool"
    if [ $rc -gt 128 ] || [ $rc = 137 ]; then
        echo "FAIL $label|" "killed by signal $((rc - 128)) (rc $rc): $(head -c 300 "$out.err")"
    elif grep -q 'AddressSanitizer\|runtime error:' "$out.err"; then
        echo "FAIL $label|" "sanitizer report: $(grep -m1 'ERROR\|runtime error' "$out.err")"
    elif ! ho_bad=$(ho_raw_controls "$out" "$out.err"); then
        echo "FAIL $label|" "raw control byte in its output: $ho_bad"
    elif [ $rc != 0 ] && [ $rc != 124 ] && ! grep -q "^$tool: " "$out.err"; then
        echo "FAIL $label|" "exit $rc without a message naming the problem: $(head -c 200 "$out.err")"
    else
        echo "PASS $label|"
    fi
}

# ho_start_fake MODE OUT: starts a fake VM in MODE, its output in OUT, until it is ready;
# HO_FAKE_PID is the fake itself (not a shell), ho_fakejob its job
ho_start_fake() {
    local i
    "$HO_FAKE" --mode "$1" >"$2" 2>&1 </dev/null &
    ho_fakejob=$!
    for ((i = 0; i < 200; i++)); do grep -qs '^ready' "$2" && break; sleep 0.01; done
    HO_FAKE_PID=$(awk '/^ready/ { print $2; exit }' "$2")
}

# Tools run against one fake at a time: they mostly wait out HO_LIMIT once attached, so
# four share the 2 CPUs (six, under other load, were slow to exit: detaching takes CPU).
HO_PAR=4
ho_mode() { # mode: starts the fake, runs every tool against it, HO_PAR at a time
    local mode=$1 fake t k
    ho_start_fake "$mode" "$HO_TMP/$mode.fake"
    fake=$HO_FAKE_PID
    set -- $HO_TOOLLIST
    [[ " $HO_DOCTOR_MODES " == *" $mode "* ]] && set -- "$@" sqdoctor
    while [ $# -gt 0 ]; do
        for ((k = 0; k < HO_PAR && $# > 0; k++)); do
            ho_check "$mode" "$1" "$fake" &
            shift
        done
        wait_jobs_ho
    done
    kill "$fake" 2>/dev/null; wait 2>/dev/null
    for t in $HO_TOOLLIST; do ho_verdict "$HO_TMP/$mode.$t.verdict"; done
    [[ " $HO_DOCTOR_MODES " == *" $mode "* ]] && ho_verdict "$HO_TMP/$mode.sqdoctor.verdict"
}
ho_verdict() { # verdict-file
    local line
    line=$(cat "$1")
    case $line in
        PASS*) line=${line#PASS }; pass "${line%|}" ;;
        FAIL*) line=${line#FAIL }; fail "${line%%|*}" "${line#*|}" ;;
        *) fail "$1" "no verdict: $line" ;;
    esac
}
wait_jobs_ho() { local j; for j in $(jobs -p); do [ "$j" = "$ho_fakejob" ] || wait "$j"; done; }

if [ ! -x "$HO_FAKE" ]; then
    # scripts/test.sh builds it: there (CI) a missing fake is a failure
    if [ "${CI:-}" = true ]; then fail "hostile" "no $HO_FAKE (make hostile)"
    else skip "hostile" "no $HO_FAKE (make hostile)"; fi
else
    for ho_m in bad-offsets loop-chain flip names batches unnamed start-flood; do ho_mode "$ho_m"; done
    # the lying batches were read, not refused: their class name, escaped, to its 1,024 bytes
    if grep -qF 'Evil\x1b]0;owned\x07\x9b\xc2AAAA' "$HO_TMP/batches.sqalloc" &&
        grep -q 'AAA\.\.\. ' "$HO_TMP/batches.sqalloc"; then
        pass "hostile batches: sqalloc shows the records' unending class name escaped and cut"
    else fail "hostile batches: sqalloc's rows" "$(head -c 400 "$HO_TMP/batches.sqalloc")"; fi
    # the record ring's lying slots (counts past the slot, another batch's seq, a head
    # that leaps) were read and refused, counted, not taken
    if grep -Eq 'sqslow: lost [0-9]+ messages or batches \(a ring was full\), [1-9][0-9]* batches unreadable' \
        "$HO_TMP/batches.sqslow.err"; then
        pass "hostile batches: sqslow refuses the record ring's lying slots and counts them"
    else fail "hostile batches: sqslow's ring" "$(grep -v '^libbpf' "$HO_TMP/batches.sqslow.err" | tail -3)"; fi
    # a row made from records that name no process has no name, not the last one read
    # on that CPU (review finding 20): the odd ids are alpha, the even ones unnamed
    ho_start_fake unnamed "$HO_TMP/unnamed.j.fake"
    timeout -s INT -k 4 1 "$HO_TOOLS/sqsched" -j -p "$HO_FAKE_PID" >"$HO_TMP/unnamed.j" 2>"$HO_TMP/unnamed.j.err" </dev/null
    kill "$HO_FAKE_PID" 2>/dev/null; wait 2>/dev/null
    ho_got=$(jq -r 'select(.type == "summary") | [.processes[] | select(.id >= 1 and .id <= 202) |
        "\(.id % 2) \(.name)"] | unique | join(",")' "$HO_TMP/unnamed.j" 2>&1)
    if [ "$ho_got" = "0 ,1 alpha" ]; then
        pass "hostile unnamed: sqsched's rows of processes their records do not name have no name"
    else fail "hostile unnamed: sqsched's names" "'$ho_got' (wanted '0 ,1 alpha')"; fi
fi
