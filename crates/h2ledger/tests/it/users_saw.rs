//! Issue 20, "what users saw": each point a new user met on our captures and the shared ones,
//! as the user runs it (tables at 100 columns, the JSON next to them).

use std::path::PathBuf;

use serde_json::Value;

use crate::util::{n, records, repo, run};

/// Every capture a user could point h2ledger at: ours, and the shared ones when present.
fn all_captures() -> Vec<PathBuf> {
    let mut v = Vec::new();
    for dir in [
        repo().join("captures"),
        repo().join("../shared/real-captures"),
    ] {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with(".pcap") || name.ends_with(".pcapng") {
                v.push(p);
            }
        }
    }
    v.sort();
    v
}

fn stdout(args: &[&str]) -> String {
    let out = run(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The headline, its lines (wrapped at 100 columns) joined.
fn headline(table: &str) -> String {
    table
        .lines()
        .take_while(|l| !l.starts_with('┌') && !l.starts_with('+'))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The number before " call" in a headline (`..., 3 calls (2 by h2c upgrade)`).
fn headline_calls(table: &str) -> u64 {
    let head = headline(table);
    let before = head
        .split(" call")
        .next()
        .unwrap_or_else(|| panic!("no calls in {head:?}"));
    before.rsplit(' ').next().unwrap().parse().unwrap()
}

/// Item 1: the headline and the `calls` row count every call a user made, the HTTP/1.1
/// requests upgraded to h2c too, the same number `calls` lists; the JSON's `calls` stays
/// tshark's count (request HEADERS frames) beside `upgraded_calls`.
#[test]
fn every_call_is_in_the_headline() {
    let upgrade = repo().join("captures/curl-upgrade.pcap");
    let t = stdout(&["replay", upgrade.to_str().unwrap()]);
    assert!(headline(&t).ends_with("3 calls (2 by h2c upgrade)"), "{t}");
    let row = t.lines().find(|l| l.starts_with("│ calls ")).unwrap();
    assert!(row.contains("│      3 │"), "{row}");
    let mut checked = 0;
    for cap in all_captures() {
        let f = cap.to_str().unwrap();
        let mut args = vec![f];
        let keylog = cap.with_extension("keylog");
        let k = keylog.to_string_lossy().into_owned();
        if keylog.exists() {
            args.extend(["--keylog", &k]);
        }
        let table = stdout(&[&["replay"], &args[..]].concat());
        let json: Value =
            serde_json::from_str(&stdout(&[&["replay"], &args[..], &["-T", "json"]].concat()))
                .unwrap();
        let listed = records(
            stdout(&[&["calls"], &args[..], &["-T", "jsonl"]].concat()),
            "call",
        );
        let all = n(&json["calls"]) + n(&json["upgraded_calls"]);
        assert_eq!(headline_calls(&table), all, "{f}: headline vs JSON");
        assert_eq!(listed.len() as u64, all, "{f}: `calls` vs the headline");
        checked += 1;
    }
    assert!(checked >= 30, "only {checked} captures");
}

/// Item 2: a phase's largest windows are never 0 where the connection's windows are known
/// and the phase has its frames: tonic's client connection window changes only by its DATA
/// after the first 200 ms (no WINDOW_UPDATE for it), and every phase has its value.
#[test]
fn a_phase_keeps_the_windows_it_did_not_change() {
    let cap = repo().join("captures/tonic-adaptive.pcap");
    let v: Value = serde_json::from_str(&stdout(&[
        "replay",
        cap.to_str().unwrap(),
        "--every",
        "200ms",
        "-T",
        "json",
    ]))
    .unwrap();
    let phases = v["phases"].as_array().unwrap();
    assert!(phases.len() >= 10, "{}", phases.len());
    for p in phases {
        for side in ["client", "server"] {
            let w = &p["flow_control"][side]["max_window"];
            // A stream window exists where a stream is open: where a call is.
            let calls = n(&p["sides"]["client"]["frames"]["HEADERS"]) > 0;
            assert!(
                n(&w["connection"]) > 60_000 && (!calls || n(&w["stream"]) >= 65_535),
                "{} {side}: {w}",
                p["name"]
            );
        }
    }
}

/// Item 3: `calls --every` prints each period's tick after the calls that ended in it, so the
/// rows above a tick are its calls, and a last tick covers the end: the ticks add up to every
/// call (the article capture: 144, 24 a second, where the first tick said 0 and all 120).
#[test]
fn call_ticks_follow_their_calls() {
    let cap = repo().join("captures/grpcgo-article.pcap");
    let out = stdout(&[
        "calls",
        cap.to_str().unwrap(),
        "--every",
        "1s",
        "-T",
        "jsonl",
    ]);
    let (mut rows, mut ticks, mut listed, mut prev) = (0u64, 0, 0u64, 0.0);
    for l in out.lines() {
        let v: Value = serde_json::from_str(l).unwrap();
        match v["record"].as_str().unwrap() {
            "call" => {
                rows += 1;
                let end = v["end"].as_f64().unwrap();
                assert!(
                    end >= prev,
                    "a call of an earlier period after its tick: {v}"
                );
            }
            "tick" => {
                let t = v["time"].as_f64().unwrap();
                assert_eq!(n(&v["calls"]), rows, "tick at {t}: the rows above it");
                listed += rows;
                rows = 0;
                ticks += 1;
                prev = t;
            }
            _ => {}
        }
    }
    assert_eq!((rows, listed, ticks), (0, 144, 7));
    let table = stdout(&["calls", cap.to_str().unwrap(), "--every", "1s"]);
    let first = table.lines().find(|l| l.starts_with("-- ")).unwrap();
    assert!(first.ends_with(", 24 calls"), "{first}");
}

/// Item 4: `--every` is a time series: the whole capture's tables once, then a row per phase
/// (the article at 1 s: 121 lines, was 651), every period from the first packet to the last
/// in the table, the JSON and the JSON lines, those without traffic as zero rows; `--wide`
/// keeps every table per phase.
#[test]
fn every_is_a_time_series_without_holes() {
    let cap = repo().join("captures/grpcgo-article.pcap");
    let f = cap.to_str().unwrap();
    let t = stdout(&["replay", f, "--every", "1s"]);
    assert!(t.lines().count() < 150, "{} lines", t.lines().count());
    let rows: Vec<&str> = t
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("start s"))
        .skip(2)
        .take_while(|l| !l.starts_with("a row per"))
        .collect();
    assert!(rows[0].trim_start().starts_with("all"), "{t}");
    assert_eq!(rows.len(), 1 + 7, "{t}");
    let calls: u64 = rows[1..]
        .iter()
        .map(|r| r.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(calls, 144);
    // 100 ms: waves at 3 a second leave empty periods; they are zero rows, never holes.
    let lines = stdout(&["replay", f, "--every", "100ms", "-T", "jsonl"]);
    let phases = records(&lines, "phase");
    assert_eq!(phases.len(), 61);
    let empty = phases.iter().filter(|p| n(&p["calls"]) == 0).count();
    assert!(empty > 10, "{empty} empty phases");
    for (i, w) in phases.windows(2).enumerate() {
        let (a, b) = (
            w[0]["end"].as_f64().unwrap(),
            w[1]["start"].as_f64().unwrap(),
        );
        assert!(
            (a - b).abs() < 1e-6,
            "a hole after phase {}: {a} -> {b}",
            i + 1
        );
    }
    let json: Value =
        serde_json::from_str(&stdout(&["replay", f, "--every", "100ms", "-T", "json"])).unwrap();
    assert_eq!(json["phases"].as_array().unwrap().len(), 61);
    let wide = stdout(&["replay", f, "--every", "1s", "--wide"]);
    assert!(wide.contains("│ phase 7 "), "{wide}");
}

/// Item 5: TLS without keys: the headline says HTTP/2 over TLS was seen and what is missing
/// (no key log, or a key log without these client randoms), not "check --port"; the
/// warnings come one line per kind with a count, within 100 columns (`-v`: each), the JSON
/// holds each one.
#[test]
fn tls_without_keys_is_said_in_the_headline() {
    let cap = repo().join("captures/curl-nghttpd-tls13.pcap");
    let f = cap.to_str().unwrap();
    let out = run(&["replay", f]);
    assert!(out.status.success());
    let t = String::from_utf8(out.stdout).unwrap();
    let h = headline(&t);
    assert!(
        h.contains("0 HTTP/2 connections, 0 calls; but 3 TLS connections with ALPN h2 not decrypted: no key log: pass --keylog FILE"),
        "{h}"
    );
    assert!(!t.contains("check --port"), "{t}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.lines().all(|l| l.chars().count() <= 100), "{err}");
    let w: Vec<&str> = err.lines().filter(|l| l.starts_with("warning: ")).collect();
    assert_eq!(w.len(), 1, "{err}");
    assert!(
        w[0].starts_with("warning: 3 like this: connection 0 "),
        "{err}"
    );
    let every = run(&["-v", "replay", f]);
    let every = String::from_utf8(every.stderr).unwrap();
    assert_eq!(
        every.lines().filter(|l| l.starts_with("warning: ")).count(),
        3
    );
    let quiet = run(&["-q", "replay", f]);
    let quiet = String::from_utf8(quiet.stderr).unwrap();
    assert!(quiet.lines().all(|l| l.chars().count() <= 100), "{quiet}");
    let v: Value = serde_json::from_str(&stdout(&["replay", f, "-T", "json"])).unwrap();
    assert_eq!(v["warnings"].as_array().unwrap().len(), 3);
    assert_eq!(n(&v["tls"]["without_key_h2"]), 3);
    // A key log of other connections.
    let other = repo().join("captures/go-nethttp-tls.keylog");
    let t = stdout(&["replay", f, "--keylog", other.to_str().unwrap()]);
    assert!(
        headline(&t).contains("the key log has no secret for any of their 3 client randoms"),
        "{t}"
    );
}
