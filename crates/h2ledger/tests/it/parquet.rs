//! Issue 39 point 4: `calls -T parquet -w F` and `frames -T parquet -w F` on every capture in
//! captures/, read by DuckDB and by ClickHouse's engine (chDB), both from PyPI, through
//! scripts/parquet-answers.py: the count, sums of numeric columns (nested ones too) and the
//! distinct values of text columns equal jq's over `-T jsonl` of the same capture. And the
//! flag errors: no -w, a terminal, --every.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::util::*;

/// Whether python3 imports `module`; under CI it must (`just test` installs it with pip).
fn python_has(module: &str) -> bool {
    let ok = Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        skipped(&format!(
            "SKIPPED parquet with {module}: python3 -m pip install {module}"
        ));
    }
    ok
}

/// scripts/parquet-answers.py ENGINE VIEW FILES...: one answer per file, by file.
fn answers(engine: &str, view: &str, files: &[PathBuf]) -> Vec<Value> {
    let out = Command::new("python3")
        .arg(repo().join("scripts/parquet-answers.py"))
        .args([engine, view])
        .args(files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "parquet-answers.py {engine} {view}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `h2ledger VIEW CAPTURE EXTRA -T jsonl > J` and `-T parquet -w P`: the same exit status.
fn write_both(view: &str, cap: &Path, extra: &[String], j: &Path, p: &Path) {
    let lines = Command::new(bin())
        .arg(view)
        .arg(cap)
        .args(extra)
        .args(["-T", "jsonl"])
        .output()
        .unwrap();
    std::fs::write(j, &lines.stdout).unwrap();
    let pq = Command::new(bin())
        .arg(view)
        .arg(cap)
        .args(extra)
        .args(["-T", "parquet", "-w"])
        .arg(p)
        .output()
        .unwrap();
    assert_eq!(
        lines.status.code(),
        pq.status.code(),
        "{view} {}: {}",
        cap.display(),
        String::from_utf8_lossy(&pq.stderr)
    );
    assert!(
        pq.status.code().is_some_and(|c| c <= 1),
        "{view} {}: {}",
        cap.display(),
        String::from_utf8_lossy(&pq.stderr)
    );
}

/// The two answers are the same: counts, integer sums and distinct values exactly, sums of
/// doubles (durations) to 1e-9 of the total (each engine adds in its own order).
fn same(what: &str, jq: &Value, sql: &Value) {
    assert_eq!(jq["count"], sql["count"], "{what}: count");
    for (k, a) in jq["sums"].as_object().unwrap() {
        let b = &sql["sums"][k];
        if a.is_i64() || a.is_u64() {
            if b.is_f64() {
                // DuckDB and ClickHouse sum an all-null column of doubles as 0.0.
                assert_eq!(a.as_f64(), b.as_f64(), "{what}: sum({k})");
            } else {
                assert_eq!(a.as_i64(), b.as_i64(), "{what}: sum({k}): {b}");
            }
        } else {
            let (x, y) = (a.as_f64().unwrap(), b.as_f64().unwrap());
            assert!(
                (x - y).abs() <= 1e-9 * x.abs().max(1.0),
                "{what}: sum({k}) {x} against {y}"
            );
        }
    }
    assert_eq!(jq["distinct"], sql["distinct"], "{what}: distinct values");
}

#[test]
fn every_capture_read_by_duckdb_and_clickhouse_equals_jq_over_the_lines() {
    if !have("jq") {
        skipped("SKIPPED parquet: no jq (just test installs it)");
        return;
    }
    let engines: Vec<&str> = [("duckdb", "duckdb"), ("clickhouse", "chdb")]
        .into_iter()
        .filter(|(_, m)| python_has(m))
        .map(|(e, _)| e)
        .collect();
    let dir = scratch("parquet");
    std::fs::create_dir_all(&dir).unwrap();
    let caps = crate::filter::all_captures();
    assert!(caps.len() > 50, "captures/ holds {} captures", caps.len());
    for view in ["calls", "frames"] {
        let (mut js, mut pqs) = (Vec::new(), Vec::new());
        for (i, (cap, extra)) in caps.iter().enumerate() {
            let j = dir.join(format!("{view}-{i}.jsonl"));
            let p = dir.join(format!("{view}-{i}.parquet"));
            write_both(view, cap, extra, &j, &p);
            js.push(j);
            pqs.push(p);
        }
        let expected = answers("jq", view, &js);
        let records: u64 = expected.iter().map(|a| n(&a["count"])).sum();
        assert!(
            records > 1000,
            "{view}: only {records} records in captures/"
        );
        for e in &engines {
            let got = answers(e, view, &pqs);
            assert_eq!(got.len(), caps.len());
            for ((a, b), (cap, _)) in expected.iter().zip(&got).zip(&caps) {
                same(&format!("{e} {view} {}", cap.display()), a, b);
            }
            eprintln!(
                "{e} {view}: {} captures, {records} records, equal to jq's",
                caps.len()
            );
        }
    }
}

#[test]
fn parquet_needs_a_file_and_never_goes_to_a_terminal() {
    let cap = capture("grpcgo-article.pcap");
    let cap = cap.to_str().unwrap();
    for view in ["calls", "frames"] {
        let out = run(&[view, cap, "-T", "parquet"]);
        assert_eq!(out.status.code(), Some(2), "{view}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("-T parquet writes a file: name it with -w FILE"),
            "{err}"
        );
        let out = run(&[
            view,
            cap,
            "-T",
            "parquet",
            "-w",
            "x.parquet",
            "--every",
            "1s",
        ]);
        assert_eq!(out.status.code(), Some(2), "{view}");
        // `-w -` into a pipe (the test's stdout is one): the file on stdout, the count on
        // stderr.
        let out = run(&[view, cap, "-T", "parquet", "-w", "-"]);
        assert!(out.status.success(), "{view}");
        assert_eq!(&out.stdout[..4], b"PAR1", "{view}");
        assert_eq!(&out.stdout[out.stdout.len() - 4..], b"PAR1", "{view}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("written as Parquet"), "{err}");
    }
    // On a terminal (script(1) gives the command one): refused before anything is read.
    if !have("script") {
        skipped("SKIPPED parquet on a terminal: no script(1) (bsdutils)");
        return;
    }
    let out = Command::new("script")
        .args(["-qec"])
        .arg(format!("{} calls {cap} -T parquet -w -", bin()))
        .arg("/dev/null")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("standard output is a terminal"), "{text}");
    assert_eq!(out.status.code(), Some(2), "{text}");
}
