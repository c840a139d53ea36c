#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# tests/bench/pairs.sh - which opcodes, and which pairs of consecutive opcodes, the
# interpreter dispatches over are-we-fast-yet's 14 benchmarks: the measurements that
# superinstructions and operand shapes are chosen from. Each benchmark weighs the same
# (its counts are shares of its own dispatches), as each weighs the same in a geomean.
#
#   tests/bench/pairs.sh [AWFY_DIR] [TOP]      (builds build/opstats/sqvm: make OPSTATS=1)
#
# It prints each benchmark's dispatches, then the opcodes and pairs.
set -u
cd "$(dirname "$0")/../.."
awfy=${1:-../shared/suites/are-we-fast-yet}
top=${2:-40}
[ -f "$awfy/benchmarks/SOM/Harness.som" ] || { echo "usage: tests/bench/pairs.sh AWFY_DIR [TOP]" >&2; exit 2; }
make -s OPSTATS=1 vm >/dev/null || exit 1
vm=$PWD/build/opstats/sqvm
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the short sizes of tests/bench/awfy.sh (some benchmarks verify only at certain sizes)
sizes="DeltaBlue:5000 Richards:10 Json:20 CD:100 Havlak:1 Bounce:300 List:600
Mandelbrot:750 NBody:250000 Permute:300 Queens:300 Sieve:600 Storage:100 Towers:150"
for entry in $sizes; do
    name=${entry%%:*} inner=${entry#*:}
    (cd "$awfy/benchmarks/SOM" && SQVM_OPCODE_STATS="$tmp/$name" "$vm" \
        -cp .:Core:CD:DeltaBlue:Havlak:Json:NBody:Richards Harness.som "$name" 1 "$inner" >/dev/null) ||
        { echo "pairs.sh: $name failed" >&2; exit 1; }
done
# share of each benchmark's dispatches, averaged over the benchmarks, in percent
awk -v top="$top" '
    FNR == 1 { nb++ }
    { n[FILENAME] += $3; c[FILENAME, $1 " " $2] = $3; seen[$1 " " $2] = 1; one[FILENAME, $2] += $3; ops[$2] = 1 }
    END {
        print "dispatches (millions):"
        k = 0; for (f in n) files[++k] = f
        for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (files[j] < files[i]) { t = files[i]; files[i] = files[j]; files[j] = t }
        for (i = 1; i <= k; i++) { b = files[i]; sub(/.*\//, "", b); printf "  %-11s %9.2f\n", b, n[files[i]] / 1e6 }
        for (p in seen) { s = 0; for (f in n) s += c[f, p] / n[f]; pair[p] = 100 * s / nb }
        for (o in ops) { s = 0; for (f in n) s += one[f, o] / n[f]; single[o] = 100 * s / nb }
        print "opcodes (share of dispatches, %):"
        k = 0; for (o in single) order[++k] = o
        for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (single[order[j]] > single[order[i]]) { t = order[i]; order[i] = order[j]; order[j] = t }
        for (i = 1; i <= k && i <= top; i++) printf "  %6.2f  %s\n", single[order[i]], order[i]
        print "pairs (share of dispatches, %):"
        k = 0; for (p in pair) porder[++k] = p
        for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (pair[porder[j]] > pair[porder[i]]) { t = porder[i]; porder[i] = porder[j]; porder[j] = t }
        for (i = 1; i <= k && i <= top; i++) printf "  %6.2f  %s\n", pair[porder[i]], porder[i]
    }' "$tmp"/*
