#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# scripts/deps.sh - installs the Debian 12 packages sqvm needs to build, test and benchmark.
# Idempotent: does nothing when everything is present; otherwise apt-get update, then install.
#
# Prometheus and node_exporter (the prometheus tier runs both, on ports of its own) and
# golang-go (`go tool pprof` reads every profile sqprof writes) come from Debian, as do
# wrk and nodejs (make load, and its Node.js anchor in tests/bench/http/). Their
# maintainer scripts start the packaged services (systemd's units through
# deb-systemd-invoke when systemd runs, the init.d scripts through invoke-rc.d when it
# does not); both ask /usr/sbin/policy-rc.d first, so while they install one that
# forbids every start is in place (unless the machine has its own already, as Docker
# images do), and no server is left running on 9090 or 9100.
#
# dpkg-dev (dpkg-shlibdeps) computes make deb's Depends:; tests/deb.sh scrapes with curl.
# python3-prometheus-client's OpenMetrics parser (the Prometheus project's own, strict)
# reads sqstat's OpenMetrics in tests/exemplars.sh: promtool check metrics reads only the
# text format.
#
# Also installs npm's speedscope viewer into build/deps/speedscope, which the sqprof
# tier opens in headless Chromium.
set -e
cd "$(dirname "$0")/.."
PACKAGES="make gcc libc6-dev lua5.4 luajit clang llvm libclang-rt-14-dev libbpf-dev bpftool bpftrace systemtap-sdt-dev libelf-dev zlib1g-dev binutils dpkg-dev curl systemd-container procps strace jq python3 protobuf-compiler chromium prometheus prometheus-node-exporter python3-prometheus-client golang-go wrk nodejs"
missing=""
for p in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# npm may come from elsewhere than Debian (a node distribution): any npm will do
command -v npm >/dev/null 2>&1 || missing="$missing npm"
SPEEDSCOPE_VERSION=1.25.0
need_speedscope=0
[ -f build/deps/speedscope/node_modules/speedscope/dist/release/index.html ] || need_speedscope=1
[ -z "$missing" ] && [ "$need_speedscope" = 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
    [ -n "$missing" ] && echo "scripts/deps.sh: missing packages:$missing" >&2 &&
        echo "scripts/deps.sh: run as root (or: sudo apt-get install$missing)" >&2 && exit 1
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if [ -n "$missing" ]; then
    apt-get update -qq
    echo "scripts/deps.sh: installing$missing"
    policy=/usr/sbin/policy-rc.d
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\n# scripts/deps.sh: no service starts while it installs packages\nexit 101\n' >"$policy"
        chmod 755 "$policy"
        trap 'rm -f "$policy"' EXIT
    fi
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
if [ "$need_speedscope" = 1 ] && command -v npm >/dev/null 2>&1; then
    mkdir -p build/deps/speedscope
    if npm install --silent --no-audit --no-fund --prefix build/deps/speedscope "speedscope@$SPEEDSCOPE_VERSION" >/dev/null 2>&1; then
        echo "scripts/deps.sh: installed speedscope $SPEEDSCOPE_VERSION into build/deps/speedscope"
    else
        echo "scripts/deps.sh: could not install npm's speedscope: the viewer check will be skipped" >&2
    fi
fi
