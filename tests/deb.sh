# SPDX-License-Identifier: BSD-2-Clause
# tests/deb.sh - the Debian package of make deb (packaging/): its exact files, modes and
# control fields; installed with apt-get as CI installs it; every tool run from PATH, and
# sqstat on a real VM; sqstat run as sqstat.service's sandbox runs it (tests/deb/sandbox.sh)
# with exactly the unit's capabilities, and without each of them; its system calls inside
# the unit's SystemCallFilter; the unit itself under a real systemd, booted in a container
# by systemd-nspawn where that is installed; systemd-analyze verify on the installed unit;
# then apt-get purge, and nothing of the package left. Sourced by tests/run.sh (its pass/fail/skip, $VM,
# $TMP). Needs root. Leaves the machine as it found it on any exit (the trap purges the
# package and stops what it started); a package installed before it began is said and
# purged first. The tools it runs are the installed ones, by a PATH without build/.

DEB_TMP="$TMP/deb"
DEB_PKG=sqvm-tools
DEB_UNIT=/lib/systemd/system/sqstat.service
DEB_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin	# root's, on Debian
DEB_VM_UID=12345	# the VM's user: not the exporter's (nobody), so reading it takes CAP_SYS_PTRACE
DEB_TIMEOUT=30
DEB_VM=""
DEB_TOOL=""
DEB_VMDIR=""
# systemctl and systemd-analyze verify note when they loaded units in this file; the
# tier removes it at its end if it was not there
DEB_STAMP=/run/systemd/systemd-units-load
DEB_STAMP_HAD=1
[ -e "$DEB_STAMP" ] || DEB_STAMP_HAD=0

deb_apt() { # apt-get ARGS...: quiet, never asking, waiting for another apt's lock
    DEBIAN_FRONTEND=noninteractive timeout -s KILL 120 apt-get -o DPkg::Lock::Timeout=60 -y -q "$@" \
        >"$DEB_TMP/apt.out" 2>&1 </dev/null
}

deb_installed() { dpkg-query -W -f='${Status}' "$DEB_PKG" 2>/dev/null | grep -q 'ok installed'; }

# What the tier started and the package, gone; run at its end and by the trap.
deb_cleanup() {
    # the tool's timeout passes TERM on (a KILL would leave the tool running)
    [ -n "$DEB_TOOL" ] && kill -TERM "$DEB_TOOL" 2>/dev/null && wait "$DEB_TOOL" 2>/dev/null
    [ -n "$DEB_VM" ] && kill -KILL "$DEB_VM" 2>/dev/null && wait "$DEB_VM" 2>/dev/null
    DEB_TOOL="" DEB_VM=""
    dpkg-query -W "$DEB_PKG" >/dev/null 2>&1 && deb_apt purge "$DEB_PKG"
    [ -n "$DEB_VMDIR" ] && rm -rf "$DEB_VMDIR"
    DEB_VMDIR=""
    [ "$DEB_STAMP_HAD" = 1 ] || rm -f "$DEB_STAMP"
}

# The files of the package, "MODE PATH" sorted by path, as the tree says they must be: a
# tool in /usr/sbin and its gzipped page for each tools/*.8, every bpftrace/ file, the
# unit, its options, copyright and changelog.
deb_expected_files() {
    local d f n
    for d in etc etc/default lib lib/systemd lib/systemd/system usr usr/sbin usr/share usr/share/doc \
        usr/share/doc/$DEB_PKG usr/share/man usr/share/man/man8 usr/share/$DEB_PKG usr/share/$DEB_PKG/bpftrace; do
        echo "drwxr-xr-x ./$d/"
    done
    echo "drwxr-xr-x ./"
    echo "-rw-r--r-- ./etc/default/sqstat"
    echo "-rw-r--r-- .$DEB_UNIT"
    echo "-rw-r--r-- ./usr/share/doc/$DEB_PKG/copyright"
    echo "-rw-r--r-- ./usr/share/doc/$DEB_PKG/changelog.gz"
    for f in tools/*.8; do
        n=$(basename "$f" .8)
        echo "-rwxr-xr-x ./usr/sbin/$n"
        echo "-rw-r--r-- ./usr/share/man/man8/$n.8.gz"
    done
    for f in bpftrace/*.bt; do echo "-rwxr-xr-x ./usr/share/$DEB_PKG/bpftrace/$(basename "$f")"; done
    for f in bpftrace/*.md; do echo "-rw-r--r-- ./usr/share/$DEB_PKG/bpftrace/$(basename "$f")"; done
}

# The packages of the shared libraries the packaged binaries need (their NEEDED entries,
# each found by dpkg -S for this architecture), one a line, sorted.
deb_needed_packages() { # staging root
    local so arch
    arch=$(dpkg --print-architecture)
    for f in "$1"/usr/sbin/*; do objdump -p "$f" | awk '$1 == "NEEDED" { print $2 }'; done | sort -u |
        while read -r so; do dpkg -S "*/$so" 2>/dev/null | grep "^[^:]*:$arch: " | cut -d: -f1; done | sort -u
}

deb_contents() {
    local deb=$1 got want fields version depends
    dpkg-deb -c "$deb" | awk '{ print $1, $6 }' | sort -k2 >"$DEB_TMP/files"
    deb_expected_files | sort -k2 >"$DEB_TMP/files.want"
    if diff "$DEB_TMP/files.want" "$DEB_TMP/files" >"$DEB_TMP/files.diff" &&
        [ -z "$(dpkg-deb -c "$deb" | awk '$2 != "root/root"')" ]; then
        pass "deb/contents: exactly the $(wc -l <"$DEB_TMP/files") entries expected (the tools, their pages, the bpftrace scripts, the unit, its options, copyright, changelog), modes right, all root's"
    else fail "deb/contents" "$(cat "$DEB_TMP/files.diff"; dpkg-deb -c "$deb" | awk '$2 != "root/root"' | head -3)"; fi

    version=$(build/tools/sqstat --version | awk '{ print $NF }')
    fields=$(dpkg-deb -f "$deb" Package Version Architecture | tr '\n' ' ')
    want="Package: $DEB_PKG Version: $version Architecture: $(dpkg --print-architecture) "
    depends=$(dpkg-deb -f "$deb" Depends | tr ',' '\n' | awk '{ print $1 }' | sort -u)
    got=$(deb_needed_packages build/deb/debian/$DEB_PKG)
    if [ "$fields" = "$want" ] && [ "$depends" = "$got" ] && [ -n "$got" ] &&
        [ "$(dpkg-deb -I "$deb" conffiles)" = /etc/default/sqstat ]; then
        pass "deb/control: $DEB_PKG $version, Depends: exactly the packages of the libraries the tools need (${got//$'\n'/ }), one conffile"
    else fail "deb/control" "fields '$fields' (want '$want'); Depends ${depends//$'\n'/ } (want ${got//$'\n'/ }); conffiles $(dpkg-deb -I "$deb" conffiles 2>&1)"; fi

    if ! command -v lintian >/dev/null; then
        skip "deb/lintian" "lintian is not installed"
    elif lintian --fail-on error "$deb" >"$DEB_TMP/lintian" 2>&1; then
        pass "deb/lintian: no error"
    else fail "deb/lintian" "$(head -20 "$DEB_TMP/lintian")"; fi
}

# Every tool from PATH, the installed one: its --version that of the build tree's.
deb_tools_from_path() {
    local t bad=""
    for t in build/tools/sq*; do
        t=$(basename "$t")
        [ "$(PATH=$DEB_PATH command -v "$t")" = "/usr/sbin/$t" ] &&
            [ "$(PATH=$DEB_PATH "$t" --version 2>&1)" = "$(build/tools/"$t" --version 2>&1)" ] || bad="$bad $t"
    done
    if [ -z "$bad" ] && [ "$(PATH=$DEB_PATH sqstat --version)" = "sqstat (sqvm tools) $(build/tools/sqstat --version | awk '{ print $NF }')" ]; then
        pass "deb/path: every tool runs from PATH as /usr/sbin/NAME, with the build's version"
    else fail "deb/path" "not from /usr/sbin or another version:$bad"; fi
    if ! command -v man >/dev/null; then
        skip "deb/man" "man is not installed"
    elif [ "$(man -w sqstat 2>&1)" = /usr/share/man/man8/sqstat.8.gz ]; then
        pass "deb/man: man finds sqstat(8) in /usr/share/man/man8"
    else fail "deb/man" "$(man -w sqstat 2>&1)"; fi
}

# A VM of another user, from a binary no one else may read, under /tmp (which the
# sandbox hides): what the exporter must still read through the VM's own root.
deb_start_vm() {
    DEB_VMDIR=$(mktemp -d /tmp/sqvm-deb.XXXXXX)
    chmod 711 "$DEB_VMDIR"
    mkdir "$DEB_VMDIR/vm"
    cp "$VM" "$DEB_VMDIR/vm/sqvm"
    cp tests/family/Spinner.som "$DEB_VMDIR/vm/"
    chown -R "$DEB_VM_UID:$DEB_VM_UID" "$DEB_VMDIR/vm"
    chmod 700 "$DEB_VMDIR/vm" "$DEB_VMDIR/vm/sqvm"
    setpriv --reuid=$DEB_VM_UID --regid=$DEB_VM_UID --clear-groups "$DEB_VMDIR/vm/sqvm" -cp "$DEB_VMDIR/vm" \
        "$DEB_VMDIR/vm/Spinner.som" "$DEB_VMDIR/vm/stop" >"$DEB_TMP/vm.out" 2>&1 </dev/null &
    DEB_VM=$!
}

deb_tool_on_vm() {
    local got
    timeout -s KILL "$DEB_TIMEOUT" env PATH=$DEB_PATH sqstat -p "$DEB_VM" -j 0.5 1 >"$DEB_TMP/out" 2>"$DEB_TMP/err" </dev/null
    got=$(jq -r '[.vms[] | "\(.pid) \(.calls_per_s > 0)"] | join(",")' "$DEB_TMP/out" 2>&1)
    if [ "$got" = "$DEB_VM true" ]; then
        pass "deb/sqstat -p PID: the installed sqstat reads a running VM of another user"
    else fail "deb/sqstat -p PID" "'$got' $(head -3 "$DEB_TMP/err")"; fi
}

# The capabilities the installed unit gives (CAP_SYS_ADMIN ...), on one line.
deb_unit_cap_names() { sed -n 's/^CapabilityBoundingSet=//p' "$DEB_UNIT"; }

# The unit's capabilities in setpriv's syntax, without DROP (a capability's name) if given.
deb_unit_caps() {
    local c caps="-all"
    for c in $(deb_unit_cap_names); do
        [ "$c" = "${1:-}" ] && continue
        c=${c#CAP_}
        caps="$caps,+$(echo "$c" | tr '[:upper:]' '[:lower:]')"
    done
    echo "$caps"
}

# deb_sandboxed CAPS [strace]: the installed sqstat as the unit runs it (--listen, on a
# port the kernel picks), scraped once; the VM's sqvm_info and activations in
# $DEB_TMP/scrape, its status in DEB_STATUS (0 if it served). With strace, its system calls
# in $DEB_TMP/strace.
deb_sandboxed() {
    local port wrap=""
    [ -n "${2:-}" ] && wrap="strace -f -qq -o $DEB_TMP/strace"
    : >"$DEB_TMP/scrape"
    # shellcheck disable=SC2086
    start_bg "$DEB_TMP/out" "$DEB_TMP/err" "$DEB_TIMEOUT" $wrap unshare --mount --propagation private \
        tests/deb/sandbox.sh "$1" /usr/sbin/sqstat --listen 127.0.0.1:0 -d 20
    DEB_TOOL=$BG_PID
    if wait_line "$DEB_TMP/out" "$DEB_TMP/err" 'metrics at http' "$DEB_TOOL"; then
        port=$(sed -n 's|.*metrics at http://127\.0\.0\.1:\([0-9]*\)/metrics.*|\1|p' "$DEB_TMP/out")
        # the VM is found by the scan at sqstat's start: its series are in the first scrape
        curl -s -m 10 "http://127.0.0.1:$port/metrics" |
            grep -E "^sqvm_(info|activations_total)\{pid=\"$DEB_VM\"" >"$DEB_TMP/scrape"
        DEB_STATUS=0
    else DEB_STATUS=1; fi
    kill -TERM "$DEB_TOOL" 2>/dev/null
    wait "$DEB_TOOL" 2>/dev/null
    DEB_TOOL=""
}

deb_unit_sandbox() {
    local opt missing="" c caps got
    # the options tests/deb/sandbox.sh stands in for
    for opt in DynamicUser=yes NoNewPrivileges=yes ProtectSystem=strict ProtectHome=yes PrivateTmp=yes \
        ProtectKernelTunables=yes ProtectProc=invisible ProcSubset=pid "AmbientCapabilities=$(deb_unit_cap_names)"; do
        grep -qx "$opt" "$DEB_UNIT" || missing="$missing $opt"
    done
    [ -z "$missing" ] || { fail "deb/unit sandbox" "the unit lacks:$missing"; return; }

    caps=$(deb_unit_caps)
    deb_sandboxed "$caps"
    got=$(awk '/^sqvm_info/ { i++ } /^sqvm_activations_total/ && $2 > 0 { a++ } END { print i + 0, a + 0 }' "$DEB_TMP/scrape")
    if [ "$DEB_STATUS" = 0 ] && [ "$got" = "1 1" ] && grep -q 'cmdline=".*/Spinner.som' "$DEB_TMP/scrape"; then
        pass "deb/unit sandbox: sqstat with the unit's capabilities ($caps), as nobody, /tmp hidden, serves the VM's series"
    else fail "deb/unit sandbox" "status $DEB_STATUS, '$got' $(head -3 "$DEB_TMP/err") $(cat "$DEB_TMP/scrape")"; fi

    # each capability, taken away: no series of the VM (without CAP_SYS_ADMIN, no start;
    # without CAP_DAC_READ_SEARCH, a line on stderr that says why: without CAP_SYS_PTRACE
    # the unit's ProtectProc=invisible hides the VM's process from sqstat altogether)
    for c in $(deb_unit_cap_names); do
        deb_sandboxed "$(deb_unit_caps "$c")"
        if [ "$c" = CAP_SYS_ADMIN ]; then
            if [ "$DEB_STATUS" = 1 ] && grep -q 'needs root, or the capabilities' "$DEB_TMP/err"; then
                pass "deb/unit sandbox without $c: sqstat does not start (no BPF, no uprobes)"
            else fail "deb/unit sandbox without $c" "status $DEB_STATUS: $(head -3 "$DEB_TMP/err")"; fi
        elif [ "$DEB_STATUS" = 0 ] && [ ! -s "$DEB_TMP/scrape" ] && [ "$c" = CAP_SYS_PTRACE ]; then
            pass "deb/unit sandbox without $c: the VM is not read (it is needed; ProtectProc=invisible hides it)"
        elif [ "$DEB_STATUS" = 0 ] && [ ! -s "$DEB_TMP/scrape" ] && grep -q "^sqstat: [0-9]* processes could not be examined" "$DEB_TMP/err"; then
            pass "deb/unit sandbox without $c: the VM is not read (it is needed), and sqstat says so"
        else fail "deb/unit sandbox without $c" "status $DEB_STATUS: $(cat "$DEB_TMP/scrape") $(head -3 "$DEB_TMP/err")"; fi
    done

    # every system call of that run (start, scan, attach, a scrape, exit) in the unit's filter
    if ! command -v systemd-analyze >/dev/null; then
        skip "deb/unit SystemCallFilter" "systemd-analyze is not installed (it names the filter's groups)"
        return
    fi
    deb_sandboxed "$caps" strace
    # from the exec of sqstat on: the sandbox's own set-up (mounts, setpriv) is not the service's
    sed -n '/execve("\/usr\/sbin\/sqstat"/,$p' "$DEB_TMP/strace" |
        awk '{ sub(/^[0-9]+ +/, "") } match($0, /^[a-z0-9_]+\(/) { print substr($0, 1, RLENGTH - 1) }' |
        sort -u >"$DEB_TMP/calls"
    deb_filter_calls >"$DEB_TMP/allowed"
    missing=$(comm -23 "$DEB_TMP/calls" "$DEB_TMP/allowed" | tr '\n' ' ')
    if [ "$DEB_STATUS" = 0 ] && [ -s "$DEB_TMP/scrape" ] && [ -s "$DEB_TMP/allowed" ] && [ -z "$missing" ]; then
        pass "deb/unit SystemCallFilter: each of the $(wc -l <"$DEB_TMP/calls") system calls sqstat made is allowed"
    else fail "deb/unit SystemCallFilter" "status $DEB_STATUS; not allowed: $missing"; fi
}

# The system calls the unit's SystemCallFilter allows: its lines in order, each adding
# names and groups to the set or (~) taking them away, each group expanded by
# systemd-analyze syscall-filter (groups name groups), sorted.
deb_filter_calls() {
    systemd-analyze syscall-filter 2>/dev/null | awk -v lines="$(sed -n 's/^SystemCallFilter=//p' "$DEB_UNIT")" '
        /^@/ { g = $1; next }
        $1 != "" && $1 !~ /^#/ { members[g] = members[g] " " $1 }
        function apply(n, on,    k, parts, i) {
            if (n !~ /^@/) { allowed[n] = on; return }
            if (depth[n]++) return	# a group met again within itself
            k = split(members[n], parts, " ")
            for (i = 1; i <= k; i++) apply(parts[i], on)
            depth[n]--
        }
        END {
            nl = split(lines, line, "\n")
            for (l = 1; l <= nl; l++) {
                on = line[l] !~ /^~/
                sub(/^~/, "", line[l])
                k = split(line[l], w, " ")
                for (i = 1; i <= k; i++) apply(w[i], on)
            }
            for (n in allowed) if (allowed[n]) print n
        }' | sort -u
}

# sqstat.service under a real systemd, where none runs on the machine: systemd-nspawn
# (systemd-container; SYSTEMD_NSPAWN= names another copy) boots the host's /usr, the
# package's unit and /etc/default/sqstat in it, with a network of its own (so the unit's
# default 127.0.0.1:9464 is free), and runs tests/deb/in-container.sh. The service must
# serve the VM's series as a user of its own with exactly the unit's capabilities, no new
# privileges and a seccomp filter, and stop cleanly.
deb_in_systemd() {
    local nspawn=${SYSTEMD_NSPAWN:-$(command -v systemd-nspawn)} dir made="" d want got bits=0 c
    if [ -z "$nspawn" ] || [ ! -x "$nspawn" ]; then
        skip "deb/sqstat.service under systemd" "no systemd-nspawn (systemd-container) to boot a systemd in"
        return
    fi
    for d in /run/systemd/nspawn /run/systemd/nspawn-root; do [ -e "$d" ] || made="$made $d"; done
    dir=$DEB_VMDIR/systemd
    mkdir -m 755 "$dir"
    cp tests/deb/in-container.sh "$dir/"
    # a oneshot whose end, however it ends, ends the container
    printf '[Unit]\nDescription=tests/deb.sh: sqstat.service checked\nAfter=basic.target\nSuccessAction=exit\nFailureAction=exit\n[Service]\nType=oneshot\nExecStart=/sqdeb/in-container.sh %s\n' \
        "$DEB_VM_UID" >"$dir/sqdeb.service"
    # the VM's files, its user's alone, where the script finds them
    cp -a "$DEB_VMDIR/vm" "$dir/vm"
    timeout -k 10 60 "$nspawn" --quiet --directory=/ --volatile=yes --register=no --keep-unit --private-network \
        --console=pipe --machine="sqdeb$$" --bind="$dir:/sqdeb" --bind-ro=/etc/default/sqstat \
        --bind-ro="$dir/sqdeb.service:/etc/systemd/system/sqdeb.service" --system-call-filter="bpf perf_event_open" \
        -b systemd.unit=sqdeb.service systemd.firstboot=off </dev/null >"$DEB_TMP/nspawn" 2>&1
    # shellcheck disable=SC2086
    for d in $made; do rm -rf "$d"; done
    for c in $(deb_unit_cap_names); do
        bits=$((bits | 1 << $(awk -v c="$c" '$1 == "#define" && $2 == c { print $3 }' /usr/include/linux/capability.h)))
    done
    want=$(printf '%016x' "$bits")
    got=$(awk '{ v[$1] = $2 } END { printf "%s %s %s %s %s %s", v["Uid:"] != "0", v["CapEff:"], v["CapBnd:"], v["CapAmb:"], v["NoNewPrivs:"], v["Seccomp:"] }' "$dir/status" 2>/dev/null)
    if [ "$got" = "1 $want $want $want 1 2" ] && grep -q 'cmdline=".*/Spinner.som' "$dir/scrape" &&
        awk '/^sqvm_activations_total/ && $2 > 0 { ok = 1 } END { exit !ok }' "$dir/scrape" &&
        [ "$(cat "$dir/result")" = "Result=success
ExecMainStatus=0" ]; then
        pass "deb/sqstat.service under systemd (nspawn): serves the VM's series on 127.0.0.1:9464 as a user of its own, capabilities $want only, no new privileges, seccomp; stops cleanly"
    else fail "deb/sqstat.service under systemd" "status '$got' (want '1 $want $want $want 1 2'); $(cat "$dir/scrape" "$dir/result" 2>&1) $(tail -15 "$dir/log" 2>&1) $(tail -5 "$DEB_TMP/nspawn")"; fi
}

deb_verify_unit() {
    if ! command -v systemd-analyze >/dev/null; then
        skip "deb/systemd-analyze verify" "systemd-analyze is not installed"
        return
    fi
    if systemd-analyze verify "$DEB_UNIT" >"$DEB_TMP/verify" 2>&1 && [ ! -s "$DEB_TMP/verify" ]; then
        pass "deb/systemd-analyze verify $DEB_UNIT: no error, no warning"
    else fail "deb/systemd-analyze verify" "$(cat "$DEB_TMP/verify")"; fi
}

# The package gone: every file it had, the conffile, deb-systemd-helper's state and the
# link an enable made (made here, as an admin would, before the purge).
deb_purge() {
    local left="" f
    local link=/etc/systemd/system/multi-user.target.wants/sqstat.service
    dpkg -L "$DEB_PKG" | sort >"$DEB_TMP/listed"
    # systemctl enables a unit with no systemd running too (it makes the links)
    if command -v systemctl >/dev/null; then
        systemctl enable sqstat.service >"$DEB_TMP/enable" 2>&1
        [ -L "$link" ] || fail "deb/systemctl enable" "no $link: $(cat "$DEB_TMP/enable")"
    fi
    if ! deb_apt purge "$DEB_PKG"; then
        fail "deb/purge" "$(tail -5 "$DEB_TMP/apt.out")"
        return
    fi
    while read -r f; do
        [ -d "$f" ] && continue	# /usr, /etc, ...: other packages' too
        [ -e "$f" ] || [ -L "$f" ] && left="$left $f"
    done <"$DEB_TMP/listed"
    for f in /etc/default/sqstat "$link" /var/lib/systemd/deb-systemd-helper-enabled/sqstat.service.dsh-also \
        /var/lib/systemd/deb-systemd-helper-enabled/multi-user.target.wants/sqstat.service \
        /usr/share/doc/$DEB_PKG /usr/share/$DEB_PKG; do
        [ -e "$f" ] || [ -L "$f" ] && left="$left $f"
    done
    if [ -z "$left" ] && ! dpkg-query -W "$DEB_PKG" >/dev/null 2>&1 && [ "$(wc -l <"$DEB_TMP/listed")" -gt 40 ]; then
        pass "deb/purge: apt-get purge leaves none of its $(wc -l <"$DEB_TMP/listed") paths, no conffile, no enable link, no state"
    else fail "deb/purge" "left:$left"; fi
}

deb_main() {
    local deb running
    mkdir -p "$DEB_TMP"
    if deb_installed; then
        echo "note: $DEB_PKG was installed before tests/deb.sh; purged first"
        deb_apt purge "$DEB_PKG" || { fail "deb/purge the old package" "$(tail -5 "$DEB_TMP/apt.out")"; return; }
    fi
    if ! make -s deb >"$DEB_TMP/make" 2>&1; then
        fail "deb/make deb" "$(tail -20 "$DEB_TMP/make")"
        return
    fi
    deb=build/${DEB_PKG}_$(build/tools/sqstat --version | awk '{ print $NF }')_$(dpkg --print-architecture).deb
    [ -f "$deb" ] || { fail "deb/make deb" "no $deb"; return; }
    deb_contents "$deb"

    if ! deb_apt install "$PWD/$deb"; then
        fail "deb/apt-get install" "$(tail -10 "$DEB_TMP/apt.out")"
        return
    fi
    # installed, enabled nowhere, started by no one (not even where systemd runs)
    running=$(for p in /proc/[0-9]*; do readlink "$p/exe"; done 2>/dev/null | grep -cx /usr/sbin/sqstat)
    if deb_installed && [ "$running" = 0 ] && [ ! -e /etc/systemd/system/multi-user.target.wants/sqstat.service ]; then
        pass "deb/apt-get install ./$(basename "$deb"): installed; sqstat.service neither enabled nor started"
    else fail "deb/apt-get install" "running $running; $(ls -l /etc/systemd/system/multi-user.target.wants/sqstat.service 2>&1)"; fi

    deb_tools_from_path
    deb_start_vm
    sleep 0.5	# the VM past its start
    deb_tool_on_vm
    deb_unit_sandbox
    deb_in_systemd
    deb_verify_unit
    deb_purge
}

if [ "$(id -u)" != 0 ]; then
    skip "deb" "needs root (apt-get install, BPF)"
elif ! command -v dpkg-deb >/dev/null || ! command -v apt-get >/dev/null || ! command -v dpkg-shlibdeps >/dev/null; then
    skip "deb" "not a Debian machine with dpkg-dev (dpkg-deb, dpkg-shlibdeps, apt-get)"
elif ! command -v jq >/dev/null || ! command -v curl >/dev/null || ! command -v strace >/dev/null; then
    skip "deb" "jq, curl and strace are needed"
else
    # the package purged and the VM stopped however the tier ends, then run.sh's own trap
    trap 'deb_cleanup; rm -rf "$TMP"' EXIT
    trap 'exit 130' INT TERM
    deb_main
    deb_cleanup
    trap 'rm -rf "$TMP"' EXIT
    trap - INT TERM
fi
