#!/usr/bin/env python3
"""Check the Spark job's output against the one-machine answers (scripts/spark-test.sh).

usage: scripts/spark-check.py ONE_MACHINE_REPORT.json ONE_MACHINE_CALLS.jsonl OUT

1. OUT/report.json (h2ledger merge of the per-capture replays) equals the one-machine report,
   apart from names and times: the capture's first and last packet times are left out, and
   connections are compared without their numbers (`id`, and `conn` in findings), which
   follow the order a reader met them in.
2. OUT/calls (Parquet, partitioned by capture and hour) holds every call of the JSON lines,
   with the same sum of durations, and each call's hour partition is its start's hour.
3. OUT/p99.json (Spark SQL) equals the p99 per method per minute computed here, by nearest
   rank, from the JSON lines.
Runs under the venv's python (pyspark reads the Parquet back).
"""

import json
import math
import os
import sys
from collections import defaultdict
from datetime import datetime, timezone

TIMES = {("capture", "first"), ("capture", "last")}
NUMBERS = {"id", "conn"}


def norm(v, path=()):
    if isinstance(v, dict):
        return {k: norm(x, path + (k,)) for k, x in v.items()
                if path + (k,) not in TIMES and not (k in NUMBERS and len(path) > 0)}
    if isinstance(v, list):
        items = [norm(x, path) for x in v]
        if items and all(isinstance(x, dict) for x in items):
            # Lists of connections or findings: in any order.
            return sorted(items, key=lambda x: json.dumps(x, sort_keys=True))
        return items
    return v


def diff(a, b, path="", out=None):
    out = [] if out is None else out
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{path}.{k}: only in {'merged' if k in b else 'one machine'}")
            else:
                diff(a[k], b[k], f"{path}.{k}", out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            diff(x, y, f"{path}[{i}]", out)
    elif a != b:
        out.append(f"{path}: one machine {json.dumps(a)[:200]}, merged {json.dumps(b)[:200]}")
    return out


def main():
    one, lines, out = sys.argv[1:4]
    fails = []

    with open(one) as f:
        expected = norm(json.load(f))
    with open(os.path.join(out, "report.json")) as f:
        merged = norm(json.load(f))
    d = diff(expected, merged)
    fails += [f"report: {x}" for x in d[:20]]
    print(f"report: {'equal' if not d else f'{len(d)} differences'} "
          f"({expected.get('calls')} calls, {expected.get('connections')} connections)")

    calls = [json.loads(l) for l in open(lines)]
    calls = [c for c in calls if c.get("record") == "call"]
    lat = defaultdict(list)
    for c in calls:
        if c["duration_us"] is not None:
            lat[(c["method"], int(c["start"] // 60) * 60)].append(c["duration_us"])
    want = []
    for (m, minute), ds in sorted(lat.items()):
        ds.sort()
        want.append([m, minute, len(ds), ds[max(1, math.ceil(0.99 * len(ds))) - 1]])
    got = [json.loads(l) for l in open(os.path.join(out, "p99.json"))]
    if got != want:
        fails.append(f"p99: Spark {got[:5]} against {want[:5]}")
    print(f"p99 per method per minute: {len(got)} rows, {'equal' if got == want else 'DIFFERENT'}")

    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[2]").appName("h2ledger-check")
             .config("spark.ui.enabled", "false")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    df = spark.read.parquet(os.path.join(out, "calls"))
    rows = df.select("capture", "hour", "start", "duration_us").collect()
    n = len(rows)
    total = sum(r["duration_us"] or 0 for r in rows)
    want_total = sum(c["duration_us"] or 0 for c in calls)
    if n != len(calls) or abs(total - want_total) > 1e-9 * max(1.0, want_total):
        fails.append(f"parquet: {n} calls, {total} us; the lines: {len(calls)}, {want_total}")
    bad_hour = [r for r in rows if datetime.fromtimestamp(r["start"], timezone.utc)
                .strftime("%Y-%m-%d-%H") != r["hour"]]
    if bad_hour:
        fails.append(f"parquet: {len(bad_hour)} calls in the wrong hour, e.g. {bad_hour[0]}")
    captures = {r["capture"] for r in rows}
    print(f"parquet: {n} calls of {len(calls)} under {len(captures)} capture partitions")
    spark.stop()

    if fails:
        print("\n".join(fails), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
