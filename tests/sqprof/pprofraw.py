#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""tests/sqprof/pprofraw.py [PPROF-OPTION...] FILE - what `go tool pprof -raw FILE` says
of a profile, as one JSON object for jq: its header fields, sample types, and every
sample with its values, its stack (function names, leaf first) and its labels. Options
go to pprof before the file (e.g. -tagfocus trace_id=ID: the samples it keeps). pprof
itself reads the file: this only rewrites its text. Exit status 1, with pprof's words,
if it cannot."""
import json
import re
import subprocess
import sys


def main(options, path):
    r = subprocess.run(["go", "tool", "pprof", "-raw", *options, path], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"go tool pprof -raw {path}: {r.stderr.strip()}")
    out = {"comments": [], "samples": [], "warnings": r.stderr.strip()}
    section, locations, last = None, {}, None
    for line in r.stdout.splitlines():
        if section is None and ":" in line and not line.startswith(" "):
            key, value = line.split(":", 1)
            if key == "Samples":
                section = "samples"
            elif key == "Comment":
                out["comments"].append(value.strip())
            else:
                out[key.lower()] = value.strip()
        elif line in ("Locations", "Mappings"):
            section = line.lower()
        elif section == "samples" and "types" not in out:
            out["types"] = [t.replace("[dflt]", "") for t in line.split()]
        elif section == "samples" and re.match(r"^\s+\d", line):
            values, ids = line.split(":", 1)
            last = {"values": [int(v) for v in values.split()], "ids": ids.split(), "labels": {}}
            out["samples"].append(last)
        elif section == "samples" and last is not None and line.strip():
            for k, v in re.findall(r"(\w+):\[(.*?)\](?=\s+\w+:\[|\s*$)", line.strip()):
                last["labels"][k] = v
        elif section == "locations":
            m = re.match(r"^\s+(\d+): \S+ M=\d+ (.*?)(?: \S*:\d+ s=\d+)?$", line)
            if m:
                locations[m.group(1)] = m.group(2)
    for s in out["samples"]:
        s["stack"] = [locations.get(i, "?") for i in s.pop("ids")]
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1:-1], sys.argv[-1])
