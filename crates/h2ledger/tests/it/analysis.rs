//! analysis: the analysis outputs (calls, writes, PINGs, latency, phases, frames) on the captures in
//! captures/, checked against numbers derived independently: the workloads' own call counts,
//! the grpc-go source of the article's client, and Wireshark (tshark) where installed.
//!
//! Sections:
//! - writes: `writes_by_calls` plus `writes_without_frame_end` add up to `writes`.
//! - phases: the article's capture split at the workload's phase boundary, against the
//!   workload's calls and `scripts/tshark-ledger.py --from/--to`.
//! - latency: call, first-byte and PING round-trip percentiles against nearest-rank
//!   percentiles computed here from tshark's per-frame timestamps.
//! - frames/calls: `frames --format jsonl` headers and `calls --format jsonl` counts.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::util::records;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn capture(name: &str) -> String {
    root().join("captures").join(name).display().to_string()
}

fn run(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_h2ledger"))
        .args(args)
        .output()
        .expect("runs h2ledger");
    assert!(
        out.status.success(),
        "h2ledger {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

fn json(args: &[&str]) -> Value {
    serde_json::from_str(&run(args)).expect("json")
}

fn have_tshark() -> bool {
    let ok = Command::new("tshark")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("note: tshark not installed; the Wireshark comparison is skipped");
    }
    ok
}

fn workload(name: &str) -> Value {
    let p = root()
        .join("captures")
        .join(format!("{name}.workload.json"));
    serde_json::from_str(&std::fs::read_to_string(p).expect("workload")).expect("json")
}

/// The workload's second phase start, written exactly as in the file (epoch seconds).
fn boundary(name: &str) -> String {
    let text = std::fs::read_to_string(
        root()
            .join("captures")
            .join(format!("{name}.workload.json")),
    )
    .expect("workload");
    let w: Value = serde_json::from_str(&text).expect("json");
    let start = w["phases"][1]["start"].as_f64().expect("start");
    // serde_json prints the shortest representation that round-trips: the file's digits.
    format!("{start}")
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

fn check_writes_sum(ledger: &Value, what: &str) {
    for side in ["client", "server"] {
        let s = &ledger["sides"][side];
        let by_calls: u64 = s["writes_by_calls"]
            .as_object()
            .expect("writes_by_calls")
            .values()
            .map(u)
            .sum();
        assert_eq!(
            by_calls + u(&s["writes_without_frame_end"]),
            u(&s["writes"]),
            "{what} {side}: writes_by_calls {} + writes_without_frame_end {} != writes {}",
            s["writes_by_calls"],
            s["writes_without_frame_end"],
            s["writes"]
        );
        assert_eq!(
            u(&s["control_only_writes"]),
            u(&s["writes_by_calls"]["0"]),
            "{what} {side}"
        );
    }
}

#[test]
fn writes_by_calls_sums_to_writes() {
    for name in [
        "grpcgo-article.pcap",
        "tonic-adaptive.pcap",
        "nghttp-nghttpd.pcap",
        "python-grpcio-ipv6.pcap",
        "spanning-mtu1500.pcap",
        "midconn.pcap",
        "midframe.pcap",
    ] {
        let v = json(&[
            "replay",
            &capture(name),
            "--format",
            "json",
            "--every",
            "1s",
        ]);
        check_writes_sum(&v, name);
        for (i, p) in v["phases"].as_array().expect("phases").iter().enumerate() {
            check_writes_sum(p, &format!("{name} phase {i}"));
        }
    }
    // A frame that spans several writes leaves writes in which no frame ends.
    let v = json(&[
        "replay",
        &capture("spanning-mtu1500.pcap"),
        "--format",
        "json",
        "--analyze",
    ]);
    let spans = u(&v["sides"]["client"]["writes_without_frame_end"])
        + u(&v["sides"]["server"]["writes_without_frame_end"]);
    assert!(
        spans > 0,
        "spanning-mtu1500: expected writes inside big frames"
    );
}

#[test]
fn article_phases() {
    let name = "grpcgo-article";
    let w = workload(name);
    let cut = boundary(name);
    let v = json(&[
        "replay",
        &capture("grpcgo-article.pcap"),
        "--format",
        "json",
        "--split-at",
        &format!("@{cut}"),
    ]);
    let phases = v["phases"].as_array().expect("phases");
    assert_eq!(phases.len(), 2);
    // Calls per phase as the workload counted them.
    assert_eq!(u(&v["calls"]), u(&w["calls_made"]));
    for (p, wp) in phases.iter().zip(w["phases"].as_array().expect("phases")) {
        assert_eq!(u(&p["calls"]), u(&wp["calls_made"]), "{}", wp["name"]);
        assert!(p["start"].is_number() && p["end"].is_number());
        for k in [
            "sides",
            "latency_us",
            "concurrency",
            "methods",
            "connections",
        ] {
            assert!(p.get(k).is_some(), "phase lacks {k}");
        }
    }
    // Phases add up to the whole.
    for side in ["client", "server"] {
        for key in ["writes", "bytes", "bdp_pings"] {
            let sum: u64 = phases.iter().map(|p| u(&p["sides"][side][key])).sum();
            assert_eq!(sum, u(&v["sides"][side][key]), "{side} {key}");
        }
        for (class, n) in v["sides"][side]["frames"].as_object().expect("frames") {
            let sum: u64 = phases
                .iter()
                .map(|p| u(&p["sides"][side]["frames"][class]))
                .sum();
            assert_eq!(sum, u(n), "{side} {class}");
        }
    }
    // The article's point: one caller opens a PING round per call, eight callers share them.
    let share = |p: &Value| p["sides"]["server"]["rounds"]["share_of_calls_opening"].as_f64();
    assert_eq!(share(&phases[0]), Some(1.0));
    assert!(share(&phases[1]).expect("share") < 0.5);
    assert_eq!(phases[0]["concurrency"]["max_in_flight"], 0);
    // A round holds every call whose DATA arrived from the opener's DATA to the ACK, also the
    // ones that arrived before the PING went out (a wave read at once). Checked by hand from
    // `frames --format jsonl`: server rounds of 1, 4, 4, 7 and seven of 8 calls.
    let hist =
        |side: &str| p_hist(&phases[1]["sides"][side]["rounds"]["calls_per_round_histogram"]);
    assert_eq!(hist("server"), [(1, 1), (4, 2), (7, 1), (8, 7)]);
    assert_eq!(hist("client"), [(1, 1), (4, 10), (7, 1), (8, 3)]);
    if !have_tshark() {
        return;
    }
    let script = root()
        .join("scripts/tshark-ledger.py")
        .display()
        .to_string();
    let pcap = capture("grpcgo-article.pcap");
    for (i, (from, to)) in [(None, Some(cut.as_str())), (Some(cut.as_str()), None)]
        .iter()
        .enumerate()
    {
        let mut args = vec![script.as_str(), pcap.as_str(), "--port", "44427"];
        if let Some(f) = from {
            args.extend(["--from", f]);
        }
        if let Some(t) = to {
            args.extend(["--to", t]);
        }
        let out = Command::new("python3")
            .args(&args)
            .output()
            .expect("python3");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let t: Value = serde_json::from_slice(&out.stdout).expect("json");
        let p = &phases[i];
        assert_eq!(p["calls"], t["calls"], "phase {i} calls");
        for side in ["client", "server"] {
            for key in ["frames", "bdp_pings", "writes", "bytes"] {
                assert_eq!(
                    p["sides"][side][key], t["sides"][side][key],
                    "phase {i} {side} {key}: h2ledger vs tshark-ledger.py"
                );
            }
        }
    }
}

/// A histogram object's non-zero buckets as (value, count).
fn p_hist(h: &Value) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = h
        .as_object()
        .expect("histogram")
        .iter()
        .map(|(k, n)| (k.parse().expect("bucket"), u(n)))
        .filter(|&(_, n)| n > 0)
        .collect();
    v.sort_unstable();
    v
}

/// Epoch seconds as printed by tshark ("1796035821.663295000") to nanoseconds, exactly.
fn ns(s: &str) -> i64 {
    let (a, b) = s.split_once('.').unwrap_or((s, ""));
    let b = format!("{b:0<9}");
    a.parse::<i64>().expect("secs") * 1_000_000_000 + b[..9].parse::<i64>().expect("frac")
}

/// Nearest rank, written out again here: rank ceil(p/100 * n), 1-based.
fn pct(v: &mut [i64], p: usize) -> f64 {
    v.sort_unstable();
    let rank = ((p * v.len()) as f64 / 100.0).ceil().max(1.0) as usize;
    v[rank - 1] as f64 / 1000.0
}

#[test]
fn latency_against_wireshark() {
    if !have_tshark() {
        return;
    }
    let pcap = capture("grpcgo-article.pcap");
    let out = Command::new("tshark")
        .args([
            "-r",
            &pcap,
            "-d",
            "tcp.port==44427,http2",
            "--disable-protocol",
            "grpc",
            "-Y",
            "http2",
            "-T",
            "fields",
            "-E",
            "occurrence=a",
            "-E",
            "aggregator=;",
            "-e",
            "frame.time_epoch",
            "-e",
            "tcp.srcport",
            "-e",
            "http2.streamid",
            "-e",
            "http2.type",
            "-e",
            "http2.flags",
            "-e",
            "http2.ping",
            "-e",
            "http2.pong",
        ])
        .output()
        .expect("tshark");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let mut start: HashMap<u32, i64> = HashMap::new();
    let mut first: HashMap<u32, i64> = HashMap::new();
    let mut end: HashMap<u32, i64> = HashMap::new();
    let mut pings: Vec<(u16, String, i64)> = Vec::new();
    let mut rtts: Vec<i64> = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        let t = ns(f[0]);
        let client = f[1] != "44427";
        let list = |i: usize| -> Vec<&str> {
            f.get(i)
                .map_or(vec![], |x| x.split(';').filter(|s| !s.is_empty()).collect())
        };
        let (sids, types, flags) = (list(2), list(3), list(4));
        let (mut ping_p, mut pong_p) = (list(5).into_iter(), list(6).into_iter());
        for ((sid, ty), fl) in sids.iter().zip(&types).zip(&flags) {
            let sid: u32 = sid.parse().expect("sid");
            let ty: u8 = ty.parse().expect("type");
            let fl = u8::from_str_radix(fl.trim_start_matches("0x"), 16).expect("flags");
            match (ty, client) {
                (1, true) => {
                    start.entry(sid).or_insert(t);
                }
                (0 | 1, false) if sid != 0 => {
                    first.entry(sid).or_insert(t);
                    if fl & 1 != 0 {
                        end.entry(sid).or_insert(t);
                    }
                }
                _ => {}
            }
            if ty == 6 {
                let port: u16 = f[1].parse().expect("port");
                if fl & 1 == 0 {
                    pings.push((port, ping_p.next().expect("ping").to_string(), t));
                } else {
                    let payload = pong_p.next().expect("pong").to_string();
                    let i = pings
                        .iter()
                        .position(|(p, d, _)| *p != port && *d == payload)
                        .expect("a PING for each ACK");
                    rtts.push(t - pings.remove(i).2);
                }
            }
        }
    }
    let mut call: Vec<i64> = end.iter().map(|(s, e)| e - start[s]).collect();
    let mut fb: Vec<i64> = first.iter().map(|(s, e)| e - start[s]).collect();
    assert_eq!(call.len(), 144);
    assert_eq!(rtts.len(), 87 + 83);
    let v = json(&["replay", &pcap, "--format", "json", "--analyze"]);
    for (key, samples) in [
        ("call", &mut call),
        ("first_byte", &mut fb),
        ("ping_rtt", &mut rtts),
    ] {
        let got = &v["latency_us"][key];
        assert_eq!(u(&got["count"]), samples.len() as u64, "{key} count");
        for p in [1, 25, 50, 75, 90, 95, 99] {
            assert_eq!(
                got[format!("p{p}")].as_f64(),
                Some(pct(samples, p)),
                "{key} p{p}: h2ledger {} vs tshark",
                got
            );
        }
    }
}

#[test]
fn frames_jsonl_first_request() {
    // captures/src/grpcgo-article/main.go calls grpc.health.v1.Health/Check.
    let out = run(&[
        "frames",
        &capture("grpcgo-article.pcap"),
        "--format",
        "jsonl",
        "--side",
        "client",
        "--type",
        "HEADERS",
    ]);
    let frames = records(&out, "frame");
    let first = &frames[0];
    assert_eq!(first["type"], "HEADERS");
    assert_eq!(first["class"], "HEADERS");
    assert_eq!(first["stream"], 1);
    assert_eq!(first["side"], "client");
    assert_eq!(first["dst"], "127.0.0.1:44427");
    assert!(first["time"].as_f64().expect("time") > 1.7e9);
    let h: Vec<(String, String)> = serde_json::from_value(first["headers"].clone()).expect("pairs");
    let get = |n: &str| h.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
    assert_eq!(get(":method"), Some("POST"));
    assert_eq!(get(":path"), Some("/grpc.health.v1.Health/Check"));
    assert_eq!(frames.len(), 144);
    let summary = records(&out, "summary");
    assert_eq!(summary.len(), 1, "the last line is the summary");
    assert_eq!(summary[0]["frames"], 144);
    // IPv6 addresses are bracketed.
    let out = run(&[
        "frames",
        &capture("python-grpcio-ipv6.pcap"),
        "--format",
        "jsonl",
        "--type",
        "settings",
    ]);
    let v: Value = serde_json::from_str(out.lines().next().expect("a line")).expect("json");
    assert!(v["src"].as_str().expect("src").starts_with("[::1]:"), "{v}");
}

#[test]
fn frames_stop_on_closed_pipe() {
    use std::io::Read;
    let mut child = Command::new(env!("CARGO_BIN_EXE_h2ledger"))
        .args(["frames", &capture("spanning-mtu1500.pcap")])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut buf = [0u8; 64];
    let _ = child.stdout.as_mut().expect("stdout").read(&mut buf);
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("wait");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // No error: at most the closing count (when every frame was written before the reader
    // went away; decision 108), never a broken-pipe message.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.is_empty() || (err.lines().count() == 1 && err.contains(" frames printed on ")),
        "{err}"
    );
}

#[test]
fn calls_jsonl_count() {
    for (name, wl) in [
        ("grpcgo-article.pcap", Some("grpcgo-article")),
        ("tonic-adaptive.pcap", Some("tonic-adaptive")),
        ("python-grpcio-ipv6.pcap", Some("python-grpcio-ipv6")),
        ("nghttp-nghttpd.pcap", None),
    ] {
        let out = run(&["calls", &capture(name), "--format", "jsonl"]);
        let v = json(&["replay", &capture(name), "--format", "json"]);
        let calls = records(&out, "call").len() as u64;
        assert_eq!(calls, u(&v["calls"]), "{name}");
        assert_eq!(records(&out, "summary")[0]["calls"], v["calls"], "{name}");
        if let Some(w) = wl {
            assert_eq!(calls, u(&workload(w)["calls_made"]), "{name}");
        }
    }
    let out = run(&[
        "calls",
        &capture("grpcgo-article.pcap"),
        "--format",
        "jsonl",
    ]);
    let c = &records(&out, "call")[0];
    assert_eq!(c["type"], "call");
    assert_eq!(c["method"], "/grpc.health.v1.Health/Check");
    assert_eq!(c["status"], "grpc-status 0");
    assert_eq!(c["stream"], 1);
}

/// Ticks (`--every`) take the output back from the `calls` writer thread, and the next call
/// starts a new one, which must be told the method names again (decision 272): the call
/// records are the same with ticks as without, method names included.
#[test]
fn calls_records_are_the_same_across_ticks() {
    for name in ["grpcgo-article.pcap", "tonic-adaptive.pcap"] {
        let file = capture(name);
        let plain = run(&["calls", &file, "--format", "jsonl"]);
        let ticked = run(&["calls", &file, "--format", "jsonl", "--every", "500ms"]);
        assert!(records(&ticked, "tick").len() >= 2, "{name}: too few ticks");
        let (a, b) = (records(&plain, "call"), records(&ticked, "call"));
        assert!(!a.is_empty(), "{name}");
        assert!(a
            .iter()
            .all(|c| c["method"].as_str().is_some_and(|m| m.starts_with('/'))));
        let first = a.iter().zip(&b).position(|(x, y)| x != y);
        assert!(
            a.len() == b.len() && first.is_none(),
            "{name}: {} calls without ticks, {} with; first different: {:?}",
            a.len(),
            b.len(),
            first.map(|i| (&a[i]["method"], &b[i]["method"]))
        );
    }
}

/// `replay --analyze` of a saved capture runs the analysis on a thread of its own (decision
/// 261); `H2LEDGER_ONE_THREAD` keeps it on the ledger's. Both print the same bytes: tables,
/// JSON and warnings, on cleartext, TLS, gaps, mid-connection starts and gRPC with payloads
/// that span writes.
#[test]
fn the_analysis_thread_changes_no_byte() {
    let keylog = capture("curl-nghttpd-tls13.keylog");
    for (name, extra) in [
        ("grpcgo-article.pcap", &[][..]),
        ("grpcgo-flow-bdp.pcap", &[]),
        ("python-grpcio-streaming.pcap", &[]),
        ("midframe.pcap", &[]),
        ("snaplen-cut.pcap", &[]),
        ("spanning-mtu1500.pcap", &[]),
        ("curl-nghttpd-tls13.pcap", &["--keylog", keylog.as_str()]),
        ("findings/rapid-reset-goh2c.pcap", &[]),
    ] {
        let file = capture(name);
        for format in ["json", "table"] {
            let mut args = vec!["replay", file.as_str(), "--analyze", "--format", format];
            args.extend_from_slice(extra);
            let out = |one: bool| {
                let mut c = Command::new(env!("CARGO_BIN_EXE_h2ledger"));
                c.args(&args);
                if one {
                    c.env("H2LEDGER_ONE_THREAD", "1");
                }
                c.output().expect("runs h2ledger")
            };
            let (two, one) = (out(false), out(true));
            assert!(two.status.success(), "{name} {format}: {two:?}");
            assert_eq!(two.status.code(), one.status.code(), "{name} {format}");
            assert!(two.stdout == one.stdout, "{name} {format}: stdout differs");
            assert!(two.stderr == one.stderr, "{name} {format}: stderr differs");
        }
    }
}
