#!/bin/sh
# scripts/deps.sh - installs the Debian 12 packages sqvm needs to build, test and benchmark.
# Idempotent: does nothing when everything is present; otherwise apt-get update, then install.
set -e
PACKAGES="make gcc libc6-dev lua5.4 luajit clang llvm libbpf-dev bpftool bpftrace systemtap-sdt-dev libelf-dev zlib1g-dev binutils procps jq python3"
missing=""
for p in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
    echo "scripts/deps.sh: missing packages:$missing" >&2
    echo "scripts/deps.sh: run as root (or: sudo apt-get install$missing)" >&2
    exit 1
fi
echo "scripts/deps.sh: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends $missing >/dev/null
