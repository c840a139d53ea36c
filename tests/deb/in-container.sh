#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# tests/deb/in-container.sh - run by a oneshot unit inside the systemd that tests/deb.sh
# boots in a container (systemd-nspawn, the host's /usr with the package installed, a
# network of its own): starts a VM as another user, then sqstat.service as it is
# installed, scrapes its default address until the VM's series are there (10 s at most),
# notes the service's credentials from /proc, stops it. Everything goes to files in the
# directory bound at /sqdeb, for tests/deb.sh to check:
#   scrape  the VM's sqvm_info and sqvm_activations_total lines
#   status  Uid, CapEff, CapBnd, CapAmb, NoNewPrivs and Seccomp of the service's process
#   result  the service's Result and ExecMainStatus once stopped
#   log     what happened, for a failure's message
D=/sqdeb
exec >"$D/log" 2>&1
setpriv --reuid="$1" --regid="$1" --clear-groups "$D/vm/sqvm" -cp "$D/vm" "$D/vm/Spinner.som" "$D/vm/stop" </dev/null &
vm=$!
systemctl start sqstat.service
i=0
while [ $i -lt 100 ]; do
	curl -s -m 5 http://127.0.0.1:9464/metrics | grep -E "^sqvm_(info|activations_total)\{pid=\"$vm\"" >"$D/scrape"
	[ "$(wc -l <"$D/scrape")" = 2 ] && break
	sleep 0.1
	i=$((i + 1))
done
main=$(systemctl show -p MainPID --value sqstat.service)
grep -E '^(Uid|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' "/proc/$main/status" >"$D/status"
systemctl status --no-pager sqstat.service
systemctl stop sqstat.service
systemctl show -p Result -p ExecMainStatus sqstat.service >"$D/result"
kill "$vm"
