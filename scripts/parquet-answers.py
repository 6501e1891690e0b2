#!/usr/bin/env python3
"""Answer the same questions from `h2ledger calls|frames -T parquet` files with DuckDB or
ClickHouse (chDB), and from the JSON lines of `-T jsonl` with jq, so that the two can be
compared (crates/h2ledger/tests/it/parquet.rs and scripts/bench.sh run this script).

usage: scripts/parquet-answers.py duckdb|clickhouse|jq calls|frames FILE...

FILE is a Parquet file for duckdb and clickhouse, a JSON lines file for jq. Prints one JSON
object per file: {"file", "count", "sums": {column: sum}, "distinct": {column: [values]}},
nulls sorted first, a sum of no rows 0.

duckdb is the `duckdb` package from PyPI; clickhouse is `chdb` from PyPI (ClickHouse's engine
in-process); jq is Debian's jq.
"""

import json
import os
import subprocess
import sys

# Per view: the numeric columns summed (integers, so that every engine's sum is exact; the
# durations are doubles and summed too, compared to 1e-9 of the total) and the text columns
# whose distinct values are listed.
QUESTIONS = {
    "calls": {
        "sums": ["writes.client", "writes.server", "message_bytes.server", "http_status",
                 "frames.server.DATA", "duration_us"],
        "distinct": ["method", "status", "reset_by"],
    },
    "frames": {
        "sums": ["length", "stream", "flags", "increment"],
        "distinct": ["type", "class", "side", "ping_label"],
    },
}


def jq_path(col):
    return "." + ".".join(col.split("."))


def jq_answers(view, path):
    q = QUESTIONS[view]
    record = "call" if view == "calls" else "frame"
    sums = ", ".join(f'"{c}": (map({jq_path(c)} // 0) | add // 0)' for c in q["sums"])
    distinct = ", ".join(f'"{c}": (map({jq_path(c)}) | unique)' for c in q["distinct"])
    prog = (f'[inputs | select(.record == "{record}")] | '
            f'{{count: length, sums: {{{sums}}}, distinct: {{{distinct}}}}}')
    out = subprocess.run(["jq", "-n", "-c", prog, path], check=True, capture_output=True)
    return json.loads(out.stdout)


def grouped(view, paths, table, file_col, query):
    """Every file's answers from one query per question over all of them (GROUP BY file)."""
    q = QUESTIONS[view]
    ans = {p: {"count": 0, "sums": {c: 0 for c in q["sums"]}, "distinct": {c: [] for c in q["distinct"]}}
           for p in paths}
    sums = ", ".join(f"sum({c})" for c in q["sums"])
    for row in query(f"SELECT {file_col}, count(*), {sums} FROM {table} GROUP BY {file_col}"):
        a = ans[row[0]]
        a["count"] = int(row[1])
        a["sums"] = {c: num(v) for c, v in zip(q["sums"], row[2:])}
    for c in q["distinct"]:
        for f, v in query(f"SELECT DISTINCT {file_col}, {c} AS v FROM {table} "
                          f"ORDER BY {file_col}, v NULLS FIRST"):
            ans[f]["distinct"][c].append(v)
    return [ans[p] for p in paths]


def num(v):
    """A sum as JSON has it: none (no rows, or only nulls) is 0; ClickHouse writes 64-bit
    integers as strings."""
    if v is None:
        return 0
    if isinstance(v, (int, float)):
        return v
    return float(v) if "." in str(v) or "e" in str(v) else int(v)


def duckdb_answers(view, paths):
    import duckdb

    con = duckdb.connect()
    table = "read_parquet($files, filename = true)"
    return grouped(view, paths, table, "filename",
                   lambda sql: con.execute(sql, {"files": paths}).fetchall())


def clickhouse_answers(view, paths):
    import chdb

    for p in paths:
        if any(ch in p for ch in "'\\{},"):
            sys.exit("parquet-answers.py: a file name may not hold a quote, backslash, brace or comma")

    def query(sql):
        out = chdb.query(sql + " FORMAT JSONCompact", "JSONCompact")
        return json.loads(out.bytes() if hasattr(out, "bytes") else str(out))["data"]

    # One query per directory: ClickHouse's {a,b} alternatives hold names, not paths.
    by_dir = {}
    for p in paths:
        by_dir.setdefault(os.path.dirname(p), []).append(p)
    found = {}
    for d, ps in by_dir.items():
        names = ",".join(os.path.basename(p) for p in ps)
        table = f"file('{d}/{{{names}}}', 'Parquet')"
        found.update(zip(ps, grouped(view, ps, table, "_path", query)))
    return [found[p] for p in paths]


def main():
    if len(sys.argv) < 4 or sys.argv[1] not in ("duckdb", "clickhouse", "jq") \
            or sys.argv[2] not in QUESTIONS:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    engine, view = sys.argv[1], sys.argv[2]
    paths = [os.path.abspath(p) for p in sys.argv[3:]]
    if engine == "jq":
        answers = [jq_answers(view, p) for p in paths]
    else:
        answers = {"duckdb": duckdb_answers, "clickhouse": clickhouse_answers}[engine](view, paths)
    for p, a in zip(paths, answers):
        a["file"] = p
        print(json.dumps(a, default=str), flush=True)


if __name__ == "__main__":
    main()
