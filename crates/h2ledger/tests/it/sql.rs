//! Issue 23 item 5: a sniff's calls (`calls -T jsonl`) loaded into DuckDB and into ClickHouse's
//! engine (chDB, clickhouse-local as a library; both from PyPI) by scripts/calls-sql.py, the
//! SQL of docs/sql.md: "p99 latency per method per minute" and "BDP pings per call per
//! connection", each answer equal to the same figures computed here from the lines.

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;

use crate::util::*;

/// Whether python3 imports `module`; under CI it must (just test installs it with pip).
fn python_has(module: &str) -> bool {
    let ok = Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("CI").map_or(true, |v| v != "true"),
            "python3 cannot import {module} under CI (just test installs it: pip install duckdb chdb)"
        );
        crate::util::skipped(&format!(
            "SKIPPED sql with {module}: python3 -m pip install {module}"
        ));
    }
    ok
}

fn answers(engine: &str, jsonl: &std::path::Path) -> BTreeMap<String, Vec<Value>> {
    let out = Command::new("python3")
        .arg(repo().join("scripts/calls-sql.py"))
        .arg(engine)
        .arg(jsonl)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "calls-sql.py {engine}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["query"].as_str().unwrap().to_string(),
                v["rows"].as_array().unwrap().clone(),
            )
        })
        .collect()
}

#[test]
fn calls_into_duckdb_and_clickhouse() {
    let engines: Vec<&str> = [("duckdb", "duckdb"), ("clickhouse", "chdb")]
        .into_iter()
        .filter(|(_, m)| python_has(m))
        .map(|(e, _)| e)
        .collect();
    if engines.is_empty() {
        return;
    }
    let dir = scratch("sql");
    std::fs::create_dir_all(&dir).unwrap();
    for cap in [
        "grpcgo-article.pcap",
        "nghttp-nghttpd.pcap",
        "python-grpcio-streaming.pcap",
        "tonic-adaptive.pcap",
    ] {
        let path = capture(cap);
        if !path.exists() {
            continue;
        }
        let out = run(&["calls", path.to_str().unwrap(), "-T", "jsonl"]);
        assert!(out.status.success());
        let jsonl = dir.join(format!("{cap}.jsonl"));
        std::fs::write(&jsonl, &out.stdout).unwrap();
        let calls = records(&out.stdout, "call");
        // The answers, from the lines themselves: nearest-rank p99 per (method, minute), and
        // the share of calls that opened a BDP round per connection and side.
        let mut lat: BTreeMap<(String, i64), Vec<f64>> = BTreeMap::new();
        let mut bdp: BTreeMap<u64, (u64, u64, u64)> = BTreeMap::new();
        for c in &calls {
            if let Some(d) = c["duration_us"].as_f64() {
                let minute = (c["start"].as_f64().unwrap() / 60.0).floor() as i64 * 60;
                lat.entry((c["method"].as_str().unwrap().to_string(), minute))
                    .or_default()
                    .push(d);
            }
            let e = bdp.entry(n(&c["conn"])).or_default();
            e.0 += 1;
            e.1 += u64::from(c["opened_bdp_round"]["client"] == true);
            e.2 += u64::from(c["opened_bdp_round"]["server"] == true);
        }
        for e in &engines {
            let a = answers(e, &jsonl);
            let p99 = &a["p99_latency_per_method_per_minute"];
            assert_eq!(p99.len(), lat.len(), "{cap} {e}: {p99:?}");
            for (row, ((method, minute), ds)) in p99.iter().zip(&lat) {
                let mut ds = ds.clone();
                ds.sort_by(f64::total_cmp);
                let rank = ((0.99 * ds.len() as f64).ceil() as usize).max(1);
                assert_eq!(row[0], method.as_str(), "{cap} {e}");
                assert_eq!(row[1].as_i64(), Some(*minute), "{cap} {e}");
                assert_eq!(row[2].as_u64(), Some(ds.len() as u64), "{cap} {e}");
                assert_eq!(row[3].as_f64(), Some(ds[rank - 1]), "{cap} {e}: p99");
            }
            let per_conn = &a["bdp_pings_per_call_per_connection"];
            assert_eq!(per_conn.len(), bdp.len(), "{cap} {e}");
            for (row, (conn, (k, cl, sv))) in per_conn.iter().zip(&bdp) {
                assert_eq!(row[0].as_u64(), Some(*conn));
                assert_eq!(row[1].as_u64(), Some(*k));
                let close =
                    |v: &Value, x: u64| (v.as_f64().unwrap() - x as f64 / *k as f64).abs() < 1e-9;
                assert!(
                    close(&row[2], *cl) && close(&row[3], *sv),
                    "{cap} {e}: {row:?}"
                );
            }
            eprintln!(
                "{cap} {e}: {} (method, minute) rows, {} connections",
                p99.len(),
                per_conn.len()
            );
        }
    }
}
