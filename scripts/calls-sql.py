#!/usr/bin/env python3
"""Load the calls of `h2ledger calls -T jsonl` into a database and answer two questions in SQL
(docs/sql.md shows the same statements; crates/h2ledger/tests/it/sql.rs runs this script):

  p99 latency per method per minute, and BDP pings per call per connection.

usage: scripts/calls-sql.py duckdb|clickhouse CALLS.jsonl

duckdb is the `duckdb` package from PyPI; clickhouse is `chdb` from PyPI (ClickHouse's engine
in-process: clickhouse-local as a library). Prints one JSON object per question:
{"engine", "query", "columns", "rows"}.
"""

import json
import sys

# The columns read, from docs/schema/record.schema.json's `call` record (a jsonl file also
# holds a `summary` line and, with --every, `tick` lines: `record` tells them apart).
DUCKDB_COLUMNS = """{record: 'VARCHAR', conn: 'BIGINT', stream: 'BIGINT', method: 'VARCHAR',
  status: 'VARCHAR', start: 'DOUBLE', duration_us: 'DOUBLE',
  opened_bdp_round: 'STRUCT(client BOOLEAN, server BOOLEAN)'}"""

DUCKDB = {
    "load": f"""
CREATE TABLE calls AS
SELECT * FROM read_json(?, format = 'newline_delimited', columns = {DUCKDB_COLUMNS})
WHERE record = 'call'""",
    # Nearest rank: quantile_disc. Calls without an end (reset, unfinished) have no duration.
    "p99_latency_per_method_per_minute": """
SELECT method,
       time_bucket(INTERVAL 1 minute, to_timestamp(start)) AS minute,
       count(*) AS calls,
       quantile_disc(duration_us, 0.99) AS p99_us
FROM calls
WHERE duration_us IS NOT NULL
GROUP BY method, minute
ORDER BY method, minute""",
    # A call that opened a BDP round on a side is one BDP PING of that side (docs/pings.md).
    "bdp_pings_per_call_per_connection": """
SELECT conn,
       count(*) AS calls,
       avg(opened_bdp_round.client::INTEGER) AS client,
       avg(opened_bdp_round.server::INTEGER) AS server
FROM calls
GROUP BY conn
ORDER BY conn""",
}

CLICKHOUSE_STRUCTURE = (
    "record String, conn UInt32, stream UInt32, method String, status String, "
    "start Float64, duration_us Nullable(Float64), "
    "opened_bdp_round Tuple(client Bool, server Bool)"
)

CLICKHOUSE = {
    "calls": "(SELECT * FROM file('{path}', 'JSONEachRow', '{structure}') WHERE record = 'call')",
    # Nearest rank: quantileExactHigh.
    "p99_latency_per_method_per_minute": """
SELECT method,
       toStartOfMinute(toDateTime64(start, 6, 'UTC')) AS minute,
       count() AS calls,
       quantileExactHigh(0.99)(assumeNotNull(duration_us)) AS p99_us
FROM {calls}
WHERE duration_us IS NOT NULL
GROUP BY method, minute
ORDER BY method, minute""",
    "bdp_pings_per_call_per_connection": """
SELECT conn,
       count() AS calls,
       avg(toUInt8(opened_bdp_round.client)) AS client,
       avg(toUInt8(opened_bdp_round.server)) AS server
FROM {calls}
GROUP BY conn
ORDER BY conn""",
}

QUESTIONS = ["p99_latency_per_method_per_minute", "bdp_pings_per_call_per_connection"]


def minute(v):
    """A bucket as seconds since the epoch (DuckDB gives a datetime, chDB a UTC string)."""
    from datetime import datetime, timezone

    if isinstance(v, str):
        v = datetime.strptime(v, "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc)
    return int(v.timestamp())


def duckdb_answers(path):
    import duckdb

    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute(DUCKDB["load"], [path])
    for q in QUESTIONS:
        cur = con.execute(DUCKDB[q])
        cols = [d[0] for d in cur.description]
        yield q, cols, [list(r) for r in cur.fetchall()]


def clickhouse_answers(path):
    import chdb

    if "'" in path or "\\" in path:
        sys.exit("calls-sql.py: the file name may not hold a quote or a backslash")
    calls = CLICKHOUSE["calls"].format(path=path, structure=CLICKHOUSE_STRUCTURE)
    for q in QUESTIONS:
        out = chdb.query(CLICKHOUSE[q].format(calls=calls) + " FORMAT JSONCompact", "JSONCompact")
        doc = json.loads(out.bytes() if hasattr(out, "bytes") else str(out))
        cols = [m["name"] for m in doc["meta"]]
        yield q, cols, doc["data"]


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("duckdb", "clickhouse"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    engine, path = sys.argv[1], sys.argv[2]
    answers = duckdb_answers(path) if engine == "duckdb" else clickhouse_answers(path)
    for q, cols, rows in answers:
        if "minute" in cols:
            i = cols.index("minute")
            for r in rows:
                r[i] = minute(r[i])
        print(json.dumps({"engine": engine, "query": q, "columns": cols, "rows": rows}, default=str))


if __name__ == "__main__":
    main()
