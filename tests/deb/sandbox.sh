#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# tests/deb/sandbox.sh - runs a command as sqstat.service's sandbox would, where no systemd
# runs to do it (tests/deb.sh: CI machines and this one have none):
#
#   unshare --mount --propagation private tests/deb/sandbox.sh CAPS COMMAND...
#
# in the mount namespace unshare made: /tmp, /home and /root empty and private
# (PrivateTmp, ProtectHome), / and /sys read-only (ProtectSystem=strict,
# ProtectKernelTunables), a /proc of its own with hidepid=invisible,subset=pid
# (ProtectProc=invisible, ProcSubset=pid); then COMMAND as a user of no files
# (DynamicUser's stand-in: nobody), with no_new_privs (NoNewPrivileges), and CAPS, the
# unit's capabilities in setpriv's syntax (-all,+sys_admin,...), as its bounding set and
# ambient set (CapabilityBoundingSet, AmbientCapabilities). tests/deb.sh checks that the
# installed unit says each of these options, and takes CAPS from it.
set -e
caps=$1
shift
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs -o mode=755 tmpfs /home
mount -t tmpfs -o mode=700 tmpfs /root
mount -o remount,bind,ro /
mount -o remount,bind,ro /sys
mount -t proc -o hidepid=invisible,subset=pid proc /proc
exec setpriv --reuid=65534 --regid=65534 --clear-groups --no-new-privs \
	--inh-caps="$caps" --ambient-caps="$caps" --bounding-set="$caps" "$@"
