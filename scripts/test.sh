#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# scripts/test.sh - the one test command: installs what is missing, builds, runs every test.
set -e
cd "$(dirname "$0")/.."
scripts/deps.sh
make -j"$(nproc)" all unit hostile >/dev/null
exec tests/run.sh --vm build/sqvm --all "$@"
