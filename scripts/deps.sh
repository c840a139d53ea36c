#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# scripts/deps.sh - installs the Debian 12 packages sqvm needs to build, test and benchmark.
# Idempotent: does nothing when everything is present; otherwise apt-get update, then install.
#
# Also extracts promtool (for the test of sqstat --prom) from Debian's prometheus package
# into build/deps/, without installing the package: that would start a Prometheus server;
# and installs npm's speedscope viewer into build/deps/speedscope, which the sqprof tier
# opens in headless Chromium.
set -e
cd "$(dirname "$0")/.."
PACKAGES="make gcc libc6-dev lua5.4 luajit clang llvm libclang-rt-14-dev libbpf-dev bpftool bpftrace systemtap-sdt-dev libelf-dev zlib1g-dev binutils procps strace jq python3 protobuf-compiler chromium"
missing=""
for p in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# npm may come from elsewhere than Debian (a node distribution): any npm will do
command -v npm >/dev/null 2>&1 || missing="$missing npm"
need_promtool=0
command -v promtool >/dev/null 2>&1 || [ -x build/deps/promtool ] || need_promtool=1
SPEEDSCOPE_VERSION=1.25.0
need_speedscope=0
[ -f build/deps/speedscope/node_modules/speedscope/dist/release/index.html ] || need_speedscope=1
[ -z "$missing" ] && [ "$need_promtool" = 0 ] && [ "$need_speedscope" = 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
    [ -n "$missing" ] && echo "scripts/deps.sh: missing packages:$missing" >&2 &&
        echo "scripts/deps.sh: run as root (or: sudo apt-get install$missing)" >&2 && exit 1
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
[ -n "$missing" ] || [ "$need_promtool" = 1 ] && apt-get update -qq
if [ -n "$missing" ]; then
    echo "scripts/deps.sh: installing$missing"
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
if [ "$need_promtool" = 1 ]; then
    tmp=$(mktemp -d)
    if (cd "$tmp" && apt-get download -qq prometheus >/dev/null 2>&1) &&
        dpkg-deb -x "$tmp"/prometheus_*.deb "$tmp/x" && [ -x "$tmp/x/usr/bin/promtool" ]; then
        mkdir -p build/deps
        cp "$tmp/x/usr/bin/promtool" build/deps/promtool
        echo "scripts/deps.sh: extracted promtool into build/deps/"
    else
        echo "scripts/deps.sh: could not get promtool (prometheus package): the sqstat --prom check will be skipped" >&2
    fi
    rm -rf "$tmp"
fi
