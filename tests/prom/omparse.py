#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""tests/prom/omparse.py - an OpenMetrics exposition (stdin) read by the Prometheus
project's own parser (Debian's python3-prometheus-client, hence /usr/bin/python3), for
tests/prom/exemplars.py: writes what it read as JSON, a list of families {name, type,
unit, samples: [{name, labels, value, exemplar}]}, an exemplar {labels, value, seconds,
nanos} or null, and for each bucket its le as the Prometheus project renders that
number (floatToGoString: the canonical form OpenMetrics asks for). An exposition the
parser refuses: its error on stderr, exit 1."""
import json
import sys

from prometheus_client.openmetrics.parser import text_string_to_metric_families
from prometheus_client.utils import floatToGoString


def exemplar(e):
    if e is None:
        return None
    return {"labels": e.labels, "value": e.value,
            "seconds": e.timestamp.sec if e.timestamp else None, "nanos": e.timestamp.nsec if e.timestamp else None}


def main():
    try:
        families = list(text_string_to_metric_families(sys.stdin.read()))
    except Exception as e:  # the parser's refusal, whatever its class
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
    out = []
    for f in families:
        out.append({"name": f.name, "type": f.type, "unit": f.unit, "samples": [
            {"name": s.name, "labels": s.labels, "value": s.value, "exemplar": exemplar(s.exemplar),
             "le_go": floatToGoString(float(s.labels["le"])) if "le" in s.labels else None}
            for s in f.samples]})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
