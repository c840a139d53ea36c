#!/bin/sh
# scripts/demo.sh - the main job: installs what is missing, builds everything and runs the
# bundled workload, showing what it does.
set -e
cd "$(dirname "$0")/.."
scripts/deps.sh
make -j"$(nproc)" all >/dev/null
echo "== build/sqvm examples/Workload.som (with --gc-stats)"
build/sqvm --gc-stats examples/Workload.som
