#!/usr/bin/env python3
"""h2ledger on Apache Spark: one task per capture file, calls as Parquet partitioned by capture
and hour, the per-file reports reduced with `h2ledger merge` (issue 39 point 5; docs/spark.md).

    spark-submit --master local[2] --files target/release/h2ledger \\
        dist/spark/h2ledger_spark.py --input '/data/captures/*.pcap' --out /data/h2l

INPUT is a directory (every .pcap, .pcapng, .cap under it, also .gz/.zst/.zstd) or a glob, on
storage that the driver and every executor see at the same path (a shared mount: NFS, a
cluster file system, or this machine in local mode); OUT must be such storage too. The
h2ledger binary comes with the job (`--files PATH/h2ledger`, found in each task with
SparkFiles; or `--h2ledger PATH` when it is installed at that path on every node).

Each capture is one task, which runs
    h2ledger replay FILE -T json [REPLAY_ARGS]         -> OUT/reports/NAME.json
    h2ledger calls FILE -T parquet -w ... [CALLS_ARGS] -> OUT/_staging/NAME.parquet
and gives back its report's path. The reports are reduced in two levels with `h2ledger merge
-T json` (one merge per partition on the executors, then one on the driver) into
OUT/report.json. Spark then reads h2ledger's Parquet files, adds `capture` (NAME) and `hour`
(the call's start, UTC, yyyy-MM-dd-HH) and writes OUT/calls/capture=NAME/hour=H/*.parquet;
OUT/_staging is removed. Last, one SQL query over OUT/calls, the p99 latency per method per
minute (nearest rank, as docs/sql.md's), is written to OUT/p99.json, one row per line.

NAME is the file's name without its extensions, with `-2`, `-3`... when two inputs share one.
A task fails when h2ledger exits with 2 or more (a usage error, a file it cannot read); exit 1
(input cut short) keeps what was read, as h2ledger does, and is counted in OUT/tasks.json.
"""

import argparse
import glob
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile

CAPTURE = re.compile(r"\.(pcap|pcapng|cap)(\.gz|\.zst|\.zstd)?$")

# Nearest rank, as DuckDB's quantile_disc and ClickHouse's quantileExactHigh in docs/sql.md.
P99_SQL = """
SELECT method,
       CAST(unix_timestamp(date_trunc('minute', timestamp_seconds(start))) AS BIGINT) AS minute,
       count(*) AS calls,
       percentile_disc(0.99) WITHIN GROUP (ORDER BY duration_us) AS p99_us
FROM calls
WHERE duration_us IS NOT NULL
GROUP BY method, minute
ORDER BY method, minute
"""


def captures(spec):
    """The capture files of a directory (recursively) or a glob, sorted."""
    if os.path.isdir(spec):
        found = [os.path.join(d, f) for d, _, fs in os.walk(spec) for f in fs]
    else:
        found = glob.glob(spec, recursive=True)
    return sorted(os.path.abspath(f) for f in found if os.path.isfile(f) and CAPTURE.search(f))


def names(files):
    """A unique NAME per file: its name without the capture extensions."""
    seen, out = {}, []
    for f in files:
        base = CAPTURE.sub("", os.path.basename(f)) or "capture"
        k = seen.get(base, 0) + 1
        seen[base] = k
        out.append(base if k == 1 else f"{base}-{k}")
    return out


def h2ledger_path(given):
    """The binary: --h2ledger, else the one shipped with --files (SparkFiles), executable."""
    if given:
        return given
    from pyspark import SparkFiles

    p = SparkFiles.get("h2ledger")
    if not os.access(p, os.X_OK):
        try:
            os.chmod(p, os.stat(p).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        except OSError:
            # A read-only SparkFiles directory: a private executable copy.
            d = tempfile.mkdtemp(prefix="h2ledger-")
            shutil.copy(p, os.path.join(d, "h2ledger"))
            p = os.path.join(d, "h2ledger")
            os.chmod(p, 0o755)
    return p


def run(cmd):
    r = subprocess.run(cmd, capture_output=True)
    if r.returncode >= 2:
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.decode(errors='replace')}")
    return r


def one_capture(item, conf):
    """The task of one capture: its report and its calls' Parquet, on the shared storage."""
    name, path = item
    h = h2ledger_path(conf["h2ledger"])
    report = os.path.join(conf["out"], "reports", name + ".json")
    r = run([h, "replay", path, "-T", "json", *conf["replay_args"]])
    # Written under a temporary name and renamed: a task that Spark runs again (a lost
    # executor, speculation) replaces the file whole.
    tmp = f"{report}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(r.stdout)
    os.replace(tmp, report)
    pq = os.path.join(conf["out"], "_staging", name + ".parquet")
    tmp = f"{pq}.{os.getpid()}.tmp"
    c = run([h, "calls", path, "-T", "parquet", "-w", tmp, "-q", *conf["calls_args"]])
    os.replace(tmp, pq)
    return {"capture": name, "file": path, "report": report,
            "replay_exit": r.returncode, "calls_exit": c.returncode}


def merge_reports(paths, h2ledger, out_file):
    """`h2ledger merge A.json B.json ... -T json` into out_file."""
    if len(paths) == 1:
        shutil.copy(paths[0], out_file)
        return out_file
    r = run([h2ledger, "merge", *paths, "-T", "json"])
    tmp = f"{out_file}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(r.stdout)
    os.replace(tmp, out_file)
    return out_file


def merge_partition(index, rows, conf):
    """The first level of the reduction: one merge of a partition's reports."""
    paths = [r["report"] for r in rows]
    if not paths:
        return []
    out = os.path.join(conf["out"], "_partial", f"part-{index:05d}.json")
    return [merge_reports(paths, h2ledger_path(conf["h2ledger"]), out)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--input", required=True, help="a directory of captures, or a glob")
    ap.add_argument("--out", required=True, help="the output directory (made; its reports, "
                    "calls and report.json are replaced)")
    ap.add_argument("--h2ledger", help="the binary's path on every node (default: the file "
                    "shipped with --files, through SparkFiles)")
    ap.add_argument("--local-h2ledger", help="the binary's path on the driver, for the last "
                    "merge (default: --h2ledger, else SparkFiles)")
    ap.add_argument("--replay-arg", action="append", default=[], dest="replay_args",
                    help="one more argument of `replay` (repeatable), e.g. --port 50051 "
                    "(not --analyze: merge refuses analysed reports)")
    ap.add_argument("--calls-arg", action="append", default=[], dest="calls_args",
                    help="one more argument of `calls` (repeatable), e.g. -Y 'grpc.status != 0'")
    ap.add_argument("--merge-partitions", type=int, default=0,
                    help="reports merged per executor first in this many groups (default: "
                    "the default parallelism)")
    a = ap.parse_args(argv)

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    files = captures(a.input)
    if not files:
        sys.exit(f"h2ledger_spark: no capture under {a.input}")
    out = os.path.abspath(a.out)
    for d in ("reports", "_staging", "_partial", "calls"):
        shutil.rmtree(os.path.join(out, d), ignore_errors=True)
    for d in ("reports", "_staging", "_partial"):
        os.makedirs(os.path.join(out, d))
    conf = {"out": out, "h2ledger": a.h2ledger, "replay_args": a.replay_args,
            "calls_args": a.calls_args}

    spark = (SparkSession.builder.appName("h2ledger")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    sc = spark.sparkContext
    items = list(zip(names(files), files))
    # One partition per capture: one task each.
    tasks = sc.parallelize(items, len(items)).map(lambda it: one_capture(it, conf)).cache()
    done = tasks.collect()
    groups = a.merge_partitions or sc.defaultParallelism
    partial = (tasks.coalesce(min(groups, len(items)))
               .mapPartitionsWithIndex(lambda i, rows: merge_partition(i, rows, conf))
               .collect())
    local = a.local_h2ledger or a.h2ledger or h2ledger_path(None)
    merge_reports(sorted(partial), local, os.path.join(out, "report.json"))
    shutil.rmtree(os.path.join(out, "_partial"), ignore_errors=True)

    calls = (spark.read.parquet(os.path.join(out, "_staging"))
             .withColumn("capture", F.regexp_extract(F.col("_metadata.file_name"),
                                                     r"^(.*)\.parquet$", 1))
             .withColumn("hour", F.date_format(F.timestamp_seconds(F.col("start")),
                                               "yyyy-MM-dd-HH")))
    calls.write.mode("overwrite").partitionBy("capture", "hour").parquet(
        os.path.join(out, "calls"))
    shutil.rmtree(os.path.join(out, "_staging"), ignore_errors=True)

    spark.read.parquet(os.path.join(out, "calls")).createOrReplaceTempView("calls")
    rows = spark.sql(P99_SQL).collect()
    with open(os.path.join(out, "p99.json"), "w") as f:
        for r in rows:
            f.write(json.dumps([r["method"], r["minute"], r["calls"], r["p99_us"]]) + "\n")
    with open(os.path.join(out, "tasks.json"), "w") as f:
        json.dump({"captures": len(done), "cut_short": sum(1 for d in done if d["replay_exit"]),
                   "tasks": done}, f, indent=1)
    print(f"h2ledger_spark: {len(done)} captures; {out}/report.json, {out}/calls/, "
          f"{out}/p99.json ({len(rows)} rows)", file=sys.stderr)
    spark.stop()


if __name__ == "__main__":
    main()
