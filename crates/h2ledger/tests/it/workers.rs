//! Issue 39, `sniff --workers N` (root): N capture handles in one PACKET_FANOUT_HASH group on
//! loopback under h2load with 100 connections against nghttpd. Each worker's report
//! (`H2LEDGER_WORKER_REPORTS`) and each worker's `-w` file (read by tshark, not by us) hold
//! whole connections only, both directions; the merged report equals `replay` of the
//! workers' files merged by mergecap. `--metrics` and `--every` are the workers summed
//! (decisions 399, 400), and a group started under traffic counts no packet twice (398).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read as _, Write as _};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::util::*;

/// Whether test `name` can run here: as root, with every one of `tools` installed (else it
/// says SKIPPED, which fails the run under `CI=true`).
fn runnable(name: &str, tools: &[&str]) -> bool {
    if crate::live::skip_unless_root(name) {
        return false;
    }
    for tool in tools {
        if !have(tool) {
            skipped(&format!("SKIPPED {name}: needs {tool}"));
            return false;
        }
    }
    true
}

/// `h2ledger sniff -i lo --port PORT --workers 2 ARGS... [-w WRITE]`, its output and errors
/// piped.
fn sniff_two(port: u16, args: &[&str], write: Option<&Path>) -> std::process::Child {
    Command::new(bin())
        .args([
            "sniff",
            "-i",
            "lo",
            "--port",
            &port.to_string(),
            "--workers",
            "2",
        ])
        .args(args)
        .args(write.iter().flat_map(|w| [Path::new("-w"), w]))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// h2load with `args` against nghttpd's /file on `port`, which must succeed: its output.
fn h2load(port: u16, args: &[&str]) -> std::process::Output {
    let load = Command::new("h2load")
        .args(args)
        .arg(format!("http://127.0.0.1:{port}/file"))
        .output()
        .unwrap();
    assert!(load.status.success(), "h2load {args:?}");
    load
}

/// Stops `sniff` as a user's `kill` does (SIGTERM), and what it wrote.
fn stop(sniff: std::process::Child) -> std::process::Output {
    assert!(Command::new("kill")
        .args(["-TERM", &sniff.id().to_string()])
        .status()
        .unwrap()
        .success());
    sniff.wait_with_output().unwrap()
}

/// The client ports of the TCP connections in a capture, by tshark, and whether each was
/// seen in both directions.
fn tshark_ports(file: &Path, server: u16) -> Vec<(u16, bool)> {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(file)
        .args(["-T", "fields", "-e", "tcp.srcport", "-e", "tcp.dstport"])
        .output()
        .unwrap();
    assert!(out.status.success(), "tshark on {}", file.display());
    let mut seen = std::collections::BTreeMap::<u16, (bool, bool)>::new();
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let mut w = l.split_whitespace().map(|x| x.parse::<u16>().unwrap());
        let (Some(s), Some(d)) = (w.next(), w.next()) else {
            continue;
        };
        let e = seen.entry(if s == server { d } else { s }).or_default();
        if s == server {
            e.1 = true;
        } else {
            e.0 = true;
        }
    }
    seen.into_iter().map(|(p, (c, s))| (p, c && s)).collect()
}

#[test]
fn sniff_workers_keep_connections_whole() {
    if !runnable(
        "sniff_workers",
        &["nghttpd", "h2load", "mergecap", "tshark"],
    ) {
        return;
    }
    let dir = scratch("workers");
    let www = dir.join("www");
    let reports = dir.join("reports");
    std::fs::create_dir_all(&reports).unwrap();
    let (mut server, port) = h2c_nghttpd(&www);
    let w = dir.join("w.pcap");
    let mut sniff = Command::new(bin())
        .args(["sniff", "-i", "lo", "--port", &port.to_string()])
        .args(["--workers", "2", "-T", "json", "-B", "131072", "-w"])
        .arg(&w)
        .env("H2LEDGER_WORKER_REPORTS", &reports)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let line = listening_line(&mut sniff);
    assert!(
        line.contains("listening on") && line.contains("2 workers"),
        "{line}"
    );
    // 100 connections, 100 calls each, at 50 calls/s per connection (5,000/s in all: a rate
    // a loaded 2-core machine holds).
    let load = h2load(
        port,
        &["-n", "10000", "-c", "100", "-m", "10", "--rps", "50"],
    );
    let text = String::from_utf8_lossy(&load.stdout);
    assert!(text.contains("10000 succeeded"), "{text}");
    std::thread::sleep(Duration::from_millis(500));
    let out = stop(sniff);
    let _ = server.kill();
    let _ = server.wait();
    assert!(out.status.success(), "sniff exit status {:?}", out.status);
    let merged: Value = serde_json::from_slice(&out.stdout).expect("one JSON report");
    assert_eq!(n(&merged["drops"]["kernel"]), 0, "kernel drops");
    assert_eq!(n(&merged["connections"]), 100);
    assert_eq!(n(&merged["calls"]), 10_000);

    // Each worker: whole connections (100 calls each, frames on both sides), none in both.
    let mut ports = Vec::new();
    let mut packets = Vec::new();
    for k in 0..2 {
        let r = read_json(&reports.join(format!("worker-{k}.json")));
        let mut mine = BTreeSet::new();
        for c in r["per_connection"].as_array().unwrap() {
            assert_eq!(n(&c["calls"]), 100, "worker {k}: {c}");
            for side in ["client", "server"] {
                assert_eq!(n(&c["sides"][side]["frames"]["SETTINGS"]), 1, "{c}");
            }
            let client = c["client"].as_str().unwrap();
            mine.insert(client.rsplit(':').next().unwrap().parse::<u16>().unwrap());
        }
        assert_eq!(mine.len() as u64, n(&r["connections"]), "worker {k}");
        // The worker's own file, read by tshark: the same connections, both directions.
        let by_tshark = tshark_ports(&dir.join(format!("w.{k}.pcap")), port);
        assert!(
            by_tshark.iter().all(|(_, both)| *both),
            "worker {k}: {by_tshark:?}"
        );
        let theirs: BTreeSet<u16> = by_tshark.iter().map(|(p, _)| *p).collect();
        assert_eq!(mine, theirs, "worker {k}: report against tshark");
        packets.push(n(&r["capture"]["packets"]));
        ports.push(mine);
    }
    assert!(
        ports[0].is_disjoint(&ports[1]),
        "a connection in both workers"
    );
    assert_eq!(ports[0].len() + ports[1].len(), 100);
    // The kernel's hash spreads the connections: each worker gets between 30% and 70% of
    // the packets (decision 375: 100 connections of equal size put more than 70% on one
    // worker with a probability under 1e-4; the bench quotes the split measured).
    let total = packets[0] + packets[1];
    assert_eq!(total, n(&merged["capture"]["packets"]));
    for p in &packets {
        assert!(
            *p * 10 >= total * 3 && *p * 10 <= total * 7,
            "split {packets:?}"
        );
    }
    eprintln!(
        "sniff --workers 2: packets per worker {packets:?}, connections {} / {}",
        ports[0].len(),
        ports[1].len()
    );

    // The merged report is the one-worker replay of the workers' files merged.
    let all = dir.join("all.pcap");
    let st = Command::new("mergecap")
        .arg("-w")
        .arg(&all)
        .arg(dir.join("w.0.pcap"))
        .arg(dir.join("w.1.pcap"))
        .status()
        .unwrap();
    assert!(st.success());
    let mut replay = replay_json(all.to_str().unwrap(), &[]);
    let mut merged = merged;
    // Live only: libpcap's counters, and the processes at each end (looked up in /proc).
    merged.as_object_mut().unwrap().remove("drops");
    replay.as_object_mut().unwrap().remove("drops");
    for c in merged["per_connection"].as_array_mut().unwrap() {
        let p = c
            .as_object_mut()
            .unwrap()
            .insert("process".into(), Value::Null);
        let p = p.expect("a process key");
        assert_eq!(p["client"]["comm"], "h2load", "{p}");
        assert_eq!(p["server"]["comm"], "nghttpd", "{p}");
    }
    assert_eq!(
        merged, replay,
        "merged sniff against the replay of its files"
    );
}

/// `-c N` over two workers: exactly N packets read, and exactly those in the two `-w` files.
#[test]
fn sniff_workers_count_packets_exactly() {
    if !runnable("sniff_workers_count", &["nghttpd", "h2load", "tshark"]) {
        return;
    }
    let dir = scratch("workers-count");
    let www = dir.join("www");
    let (mut server, port) = h2c_nghttpd(&www);
    let w = dir.join("c.pcap");
    let mut sniff = sniff_two(port, &["-c", "100", "-T", "json"], Some(&w));
    let line = listening_line(&mut sniff);
    assert!(line.contains("listening on"), "{line}");
    h2load(port, &["-n", "1000", "-c", "10"]);
    // The count stops it; should it not, SIGTERM after 30 s (the counts below then fail).
    let pid = sniff.id().to_string();
    let (done, wait) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        if wait.recv_timeout(Duration::from_secs(30)).is_err() {
            let _ = Command::new("kill").args(["-TERM", &pid]).status();
        }
    });
    let out = sniff.wait_with_output().unwrap();
    let _ = done.send(());
    let _ = server.kill();
    let _ = server.wait();
    assert!(out.status.success(), "sniff exit status {:?}", out.status);
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON report");
    assert_eq!(n(&v["capture"]["packets"]), 100);
    let mut saved = 0;
    for k in 0..2 {
        let o = Command::new("tshark")
            .arg("-r")
            .arg(dir.join(format!("c.{k}.pcap")))
            .output()
            .unwrap();
        assert!(o.status.success());
        saved += String::from_utf8_lossy(&o.stdout).lines().count();
    }
    assert_eq!(saved, 100, "packets in the two -w files");
}

/// The samples of an exposition: `name{labels}` to value.
/// Waits until `n` TCP connections to `port` are established (ss(8), iproute2), at most 60 s.
fn established(port: u16, n: usize) {
    for _ in 0..600 {
        let out = Command::new("ss")
            .args(["-Htn", "state", "established"])
            .arg(format!("dport = :{port}"))
            .output()
            .expect("ss (iproute2)");
        if String::from_utf8_lossy(&out.stdout).lines().count() >= n {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{n} connections to port {port} were not established within 60 s");
}

fn samples(page: &str) -> BTreeMap<String, f64> {
    page.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').expect("name value");
            (k.to_string(), v.parse().expect("a number"))
        })
        .collect()
}

fn scrape(addr: &str) -> String {
    let mut c = std::net::TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(c, "GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut out = String::new();
    c.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    assert!(head.contains(" 200 OK"), "{head}");
    body.to_string()
}

/// Issue 39 point 1 (decision 399): `--metrics` with two workers serves one page, the sum
/// of the workers. A scrape after the traffic equals, series by series, the one-worker page
/// of the same packets (`replay -T prometheus` of the workers' `-w` files merged): counts
/// exact, histograms' sums within float rounding (each adds its calls in its own order).
/// Live only, and checked apart: the processes (h2load and nghttpd, 100 connections each
/// side), libpcap's drops, the connections open now.
#[test]
fn sniff_workers_metrics_are_the_one_worker_figures() {
    if !runnable("sniff_workers_metrics", &["nghttpd", "h2load", "mergecap"]) {
        return;
    }
    let dir = scratch("workers-metrics");
    let www = dir.join("www");
    let (mut server, port) = h2c_nghttpd(&www);
    let w = dir.join("m.pcap");
    let mut sniff = sniff_two(
        port,
        &["-T", "json", "-B", "131072", "--metrics", "127.0.0.1:0"],
        Some(&w),
    );
    let (addr, second) = metrics_started(sniff.stderr.take().unwrap());
    assert!(second.contains("2 workers"), "{second}");
    // A scrape before any traffic: every series there, at 0.
    let before = samples(&scrape(&addr));
    assert_eq!(before["h2ledger_packets_total"], 0.0);
    let load = h2load(
        port,
        &["-n", "10000", "-c", "100", "-m", "10", "--rps", "50"],
    );
    assert!(String::from_utf8_lossy(&load.stdout).contains("10000 succeeded"));
    // The calls are counted as they are folded, a moment after they end: scrape until two
    // pages in a row hold all of them and agree.
    let calls = |m: &BTreeMap<String, f64>| -> f64 {
        m.iter()
            .filter(|(k, _)| k.starts_with("h2ledger_calls_total{"))
            .map(|(_, v)| v)
            .sum()
    };
    let t0 = std::time::Instant::now();
    let mut prev = BTreeMap::new();
    let live = loop {
        let m = samples(&scrape(&addr));
        if calls(&m) == 10_000.0 && m == prev {
            break m;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "calls scraped: {}",
            calls(&m)
        );
        prev = m;
        std::thread::sleep(Duration::from_millis(300));
    };
    let out = stop(sniff);
    let _ = server.kill();
    let _ = server.wait();
    assert!(out.status.success(), "sniff exit status {:?}", out.status);
    let all = dir.join("all.pcap");
    let st = Command::new("mergecap")
        .arg("-w")
        .arg(&all)
        .arg(dir.join("m.0.pcap"))
        .arg(dir.join("m.1.pcap"))
        .status()
        .unwrap();
    assert!(st.success());
    let r = run(&["replay", all.to_str().unwrap(), "-T", "prometheus"]);
    assert!(r.status.success());
    let one = samples(&String::from_utf8(r.stdout).unwrap());
    let live_only = |k: &str| {
        k.starts_with("h2ledger_process_connections_total")
            || k.starts_with("h2ledger_packets_dropped_total")
            || k.starts_with("h2ledger_connections_open")
    };
    let mut compared = 0;
    for (k, v) in &one {
        if live_only(k) {
            continue;
        }
        let got = live
            .get(k)
            .unwrap_or_else(|| panic!("no {k} in the scrape"));
        if k.contains("_sum") {
            assert!(
                (got - v).abs() <= 1e-9 * v.abs().max(1.0),
                "{k}: {got} against {v}"
            );
        } else {
            assert_eq!(got, v, "{k}: the scrape against one worker's replay");
        }
        compared += 1;
    }
    for k in live.keys() {
        assert!(
            live_only(k) || one.contains_key(k),
            "{k} only in the scrape"
        );
    }
    assert_eq!(one["h2ledger_connections_total"], 100.0);
    assert_eq!(calls(&one), 10_000.0);
    for (side, comm) in [("client", "h2load"), ("server", "nghttpd")] {
        let k = format!("h2ledger_process_connections_total{{side=\"{side}\",comm=\"{comm}\"}}");
        assert_eq!(live.get(&k), Some(&100.0), "{k}");
    }
    assert_eq!(live[r#"h2ledger_packets_dropped_total{by="kernel"}"#], 0.0);
    eprintln!(
        "sniff --workers 2 --metrics: {compared} series equal to the one-worker replay, {} packets",
        one["h2ledger_packets_total"]
    );
}

/// Issue 39 point 2 (decision 400): `--every` with two workers prints one row per interval
/// for the whole host (appended to a pipe: the time series), and the rows' calls add up to
/// every call h2load made: no worker's period is lost or counted twice in the merge.
#[test]
fn sniff_workers_every_rows_add_up() {
    if !runnable("sniff_workers_every", &["nghttpd", "h2load"]) {
        return;
    }
    let dir = scratch("workers-every");
    let (mut server, port) = h2c_nghttpd(&dir.join("www"));
    let mut sniff = sniff_two(port, &["--every", "500ms", "-B", "131072"], None);
    let line = listening_line(&mut sniff);
    assert!(line.contains("2 workers"), "{line}");
    // 20 connections at 100 calls/s each: 3 s of traffic, six intervals or so.
    let load = h2load(
        port,
        &["-n", "6000", "-c", "20", "-m", "10", "--rps", "100"],
    );
    assert!(String::from_utf8_lossy(&load.stdout).contains("6000 succeeded"));
    std::thread::sleep(Duration::from_millis(2500));
    let out = stop(sniff);
    let _ = server.kill();
    let _ = server.wait();
    assert!(out.status.success(), "sniff exit status {:?}", out.status);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("h2ledger sniff on lo (2 workers): a row per tick"),
        "{text}"
    );
    let is_clock = |w: &str| w.len() >= 8 && w.as_bytes()[2] == b':' && w.as_bytes()[5] == b':';
    let rows: Vec<u64> = text
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let (c, n) = (w.next()?, w.next()?);
            is_clock(c).then(|| n.parse().ok()).flatten()
        })
        .collect();
    assert!(rows.len() >= 4, "rows {rows:?}\n{text}");
    assert_eq!(rows.iter().sum::<u64>(), 6000, "rows {rows:?}\n{text}");
    eprintln!("sniff --workers 2 --every 500ms: calls per row {rows:?}");
}

/// Decision 415: `sniff --workers 2 --every D -T json` is cut into phases as one worker's
/// report is, and each phase is exactly the phase of `replay` of the workers' files merged,
/// cut at the same instants (`--split-at` at the edges the sniff printed, absolute): every
/// worker counted its periods from one origin, and the phases merged phase by phase.
#[test]
fn sniff_workers_every_cuts_phases_as_one_worker() {
    if !runnable("sniff_workers_phases", &["nghttpd", "h2load", "mergecap"]) {
        return;
    }
    let dir = scratch("workers-phases");
    std::fs::create_dir_all(&dir).unwrap();
    let (mut server, port) = h2c_nghttpd(&dir.join("www"));
    let w = dir.join("w.pcap");
    let mut sniff = sniff_two(
        port,
        &["--every", "500ms", "-T", "json", "-B", "131072"],
        Some(&w),
    );
    let line = listening_line(&mut sniff);
    assert!(line.contains("2 workers"), "{line}");
    // 20 connections at 100 calls/s each: 2 s of traffic, four periods or so.
    h2load(
        port,
        &["-n", "4000", "-c", "20", "-m", "10", "--rps", "100"],
    );
    std::thread::sleep(Duration::from_millis(500));
    let out = stop(sniff);
    let _ = server.kill();
    let _ = server.wait();
    assert!(out.status.success(), "sniff exit status {:?}", out.status);
    let mut merged: Value = serde_json::from_slice(&out.stdout).expect("one JSON report");
    assert_eq!(n(&merged["calls"]), 4000);
    let phases = merged["phases"].as_array().expect("phases").clone();
    assert!(phases.len() >= 3, "{} phases", phases.len());
    let calls: u64 = phases.iter().map(|p| n(&p["calls"])).sum();
    assert!(calls > 0, "calls in phases");
    // Inner edges 500 ms apart: one origin for both workers.
    let starts: Vec<f64> = phases
        .iter()
        .map(|p| p["start"].as_f64().unwrap())
        .collect();
    for k in 2..starts.len() {
        let d = starts[k] - starts[k - 1];
        assert!((d - 0.5).abs() < 1e-6, "edges {starts:?}");
    }
    let all = dir.join("all.pcap");
    let st = Command::new("mergecap")
        .arg("-w")
        .arg(&all)
        .arg(dir.join("w.0.pcap"))
        .arg(dir.join("w.1.pcap"))
        .status()
        .unwrap();
    assert!(st.success());
    let cuts: Vec<String> = starts[1..].iter().map(|t| format!("@{t:.7}")).collect();
    let mut replay = replay_json(all.to_str().unwrap(), &["--split-at", &cuts.join(",")]);
    // Live only: libpcap's counters, and the processes at each end (looked up in /proc).
    let clear = |v: &mut Value| {
        v.as_object_mut().unwrap().remove("drops");
        for c in v["per_connection"].as_array_mut().unwrap() {
            c.as_object_mut()
                .unwrap()
                .insert("process".into(), Value::Null);
        }
    };
    clear(&mut merged);
    clear(&mut replay);
    for v in [&mut merged, &mut replay] {
        for p in v["phases"].as_array_mut().unwrap() {
            for c in p["per_connection"].as_array_mut().unwrap() {
                c.as_object_mut()
                    .unwrap()
                    .insert("process".into(), Value::Null);
            }
        }
    }
    let (a, b) = (
        merged["phases"].as_array().unwrap(),
        replay["phases"].as_array().unwrap(),
    );
    assert_eq!(a.len(), b.len(), "phases of the sniff and of the replay");
    for (k, (x, y)) in a.iter().zip(b).enumerate() {
        let keys: Vec<&String> = x
            .as_object()
            .unwrap()
            .keys()
            .filter(|key| match key.as_str() {
                // The JSON's seconds are an f64 (about 0.2 us at these times): the cuts given
                // to the replay are those seconds, not the sniff's nanoseconds.
                "start" | "end" => {
                    let (p, q) = (x[key.as_str()].as_f64(), y[key.as_str()].as_f64());
                    p.zip(q).is_none_or(|(p, q)| (p - q).abs() > 1e-6)
                }
                key => x[key] != y[key],
            })
            .collect();
        if !keys.is_empty() {
            std::fs::write(
                dir.join("sniff.json"),
                serde_json::to_string_pretty(&merged).unwrap(),
            )
            .unwrap();
            std::fs::write(
                dir.join("replay.json"),
                serde_json::to_string_pretty(&replay).unwrap(),
            )
            .unwrap();
        }
        assert!(
            keys.is_empty(),
            "phase {}: {keys:?} differ between the sniff and the replay of its files cut at the same instants ({})",
            k + 1,
            dir.display()
        );
    }
    eprintln!(
        "sniff --workers 2 --every 500ms: {} phases, calls per phase {:?}",
        phases.len(),
        phases.iter().map(|p| n(&p["calls"])).collect::<Vec<_>>()
    );
}

/// Decision 398: a handle is bound to the device before it can join the fanout group, and
/// until then it gets a copy of every packet. Started while h2load already runs at 5,000
/// calls/s, the workers' `-w` files still share no connection (before the fix, worker 0's
/// file held all 50 connections and 21 or 22 of them were in worker 1's too, in each of two
/// runs: the copies from before worker 1 joined).
#[test]
fn sniff_workers_joining_under_traffic_count_no_packet_twice() {
    if !runnable("sniff_workers_join", &["nghttpd", "h2load", "tshark"]) {
        return;
    }
    let dir = scratch("workers-join");
    let (mut server, port) = h2c_nghttpd(&dir.join("www"));
    let mut load = Command::new("h2load")
        .args(["-c", "50", "-m", "10", "--rps", "100", "-D", "6"])
        .arg(format!("http://127.0.0.1:{port}/file"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(1));
    let w = dir.join("j.pcap");
    // A large buffer: activating the handle (its ring) takes longer, the window before the
    // join is wider.
    let mut sniff = sniff_two(port, &["-T", "json", "-B", "131072"], Some(&w));
    let line = listening_line(&mut sniff);
    assert!(line.contains("2 workers"), "{line}");
    std::thread::sleep(Duration::from_secs(2));
    let out = stop(sniff);
    let _ = load.kill();
    let _ = load.wait();
    let _ = server.kill();
    let _ = server.wait();
    assert!(out.status.success(), "sniff exit status {:?}", out.status);
    let ports: Vec<BTreeSet<u16>> = (0..2)
        .map(|k| {
            tshark_ports(&dir.join(format!("j.{k}.pcap")), port)
                .into_iter()
                .map(|(p, _)| p)
                .collect()
        })
        .collect();
    let both: Vec<&u16> = ports[0].intersection(&ports[1]).collect();
    assert!(
        both.is_empty(),
        "connections in both workers' files: {both:?}"
    );
    assert_eq!(ports[0].len() + ports[1].len(), 50, "{ports:?}");
    eprintln!(
        "sniff --workers 2 started under traffic: connections {} / {}, none in both",
        ports[0].len(),
        ports[1].len()
    );
}

/// Decision 418: a finding of the whole capture (`mid-stream`, `conn: null`) that both
/// workers file is one in the merged report and one in `--metrics`' `findings_total` (each
/// worker's page counted it once, so the summed page said 2 before). h2load's 20
/// connections are open before the capture starts and busy for 8 s: both workers see
/// connections begun before it.
#[test]
fn sniff_workers_count_a_capture_wide_finding_once() {
    if !runnable("sniff_workers_capture_wide", &["nghttpd", "h2load"]) {
        return;
    }
    let dir = scratch("workers-capture-wide");
    let www = dir.join("www");
    let reports = dir.join("reports");
    std::fs::create_dir_all(&reports).unwrap();
    let (mut server, port) = h2c_nghttpd(&www);
    // 20 connections at 10 calls/s each for 8 s, begun before the capture.
    let load = Command::new("h2load")
        .args(["-n", "1600", "-c", "20", "--rps", "10"])
        .arg(format!("http://127.0.0.1:{port}/file"))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Every connection open before the capture starts (a wait for the state, not a sleep).
    established(port, 20);
    let mut sniff = Command::new(bin())
        .args(["sniff", "-i", "lo", "--port", &port.to_string()])
        .args(["--workers", "2", "-T", "json", "--metrics", "127.0.0.1:0"])
        .env("H2LEDGER_WORKER_REPORTS", &reports)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (addr, second) = metrics_started(sniff.stderr.take().unwrap());
    assert!(second.contains("2 workers"), "{second}");
    let out = load.wait_with_output().unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("1600 succeeded"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let page = samples(&scrape(&addr));
    let out = stop(sniff);
    let _ = server.kill();
    let _ = server.wait();
    assert!(out.status.success(), "sniff exit status {:?}", out.status);
    let mid = |r: &Value| {
        r["findings"]
            .as_array()
            .map(|f| f.iter().filter(|x| x["id"] == "mid-stream").count())
            .unwrap_or(0)
    };
    // Both workers filed it: the case where a sum counts it twice.
    for k in 0..2 {
        let p = reports.join(format!("worker-{k}.json"));
        let r: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
        assert_eq!(mid(&r), 1, "worker {k}: {}", r["findings"]);
    }
    let merged: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(mid(&merged), 1, "{}", merged["findings"]);
    assert_eq!(
        page[r#"h2ledger_findings_total{id="mid-stream",severity="info"}"#], 1.0,
        "the scrape against the merged report"
    );
}

/// `sniff --workers 2 -T jsonl` writes one stream of lines (decision 443): the workers'
/// `finding` lines merged in the order one session writes them, then the summary; the lines
/// `replay` of the workers' `-w` files merged by mergecap writes, apart from the times
/// (live stamps are in nanoseconds, a pcap keeps microseconds). h2load with windows of
/// 1,023 bytes makes the server's 2,000-byte answers wait for window: a `flow-stall` on every
/// connection.
#[test]
fn sniff_workers_write_one_stream_of_jsonl() {
    if !runnable("sniff_workers_jsonl", &["nghttpd", "h2load", "mergecap"]) {
        return;
    }
    let dir = scratch("workers-jsonl");
    let www = dir.join("www");
    let (mut server, port) = h2c_nghttpd(&www);
    let w = dir.join("j.pcap");
    let mut sniff = sniff_two(port, &["-T", "jsonl", "-B", "131072"], Some(&w));
    let line = listening_line(&mut sniff);
    assert!(line.contains("2 workers"), "{line}");
    h2load(port, &["-n", "200", "-c", "10", "-w", "10", "-W", "10"]);
    std::thread::sleep(Duration::from_millis(500));
    let out = stop(sniff);
    let _ = server.kill();
    let _ = server.wait();
    assert!(out.status.success(), "sniff exit status {:?}", out.status);
    let all = dir.join("all.pcap");
    let merge = Command::new("mergecap")
        .args(["-F", "pcap", "-w"])
        .arg(&all)
        .args([dir.join("j.0.pcap"), dir.join("j.1.pcap")])
        .status()
        .unwrap();
    assert!(merge.success());
    let r = run(&["replay", all.to_str().unwrap(), "-T", "jsonl"]);
    // The finding lines without their times, and the summary's counts.
    let lines = |t: &[u8]| -> (Vec<Value>, Value) {
        let mut v: Vec<Value> = String::from_utf8_lossy(t)
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect();
        let summary = v.pop().expect("a summary line");
        assert_eq!(summary["record"], "summary");
        for f in &mut v {
            assert_eq!(f["record"], "finding", "{f}");
            let m = f.as_object_mut().unwrap();
            m.remove("first");
            m.remove("last");
        }
        let counts = serde_json::json!([summary["calls"], summary["connections"]]);
        (v, counts)
    };
    let (live, replayed) = (lines(&out.stdout), lines(&r.stdout));
    assert_eq!(live.1, serde_json::json!([200, 10]));
    assert!(live.0.len() >= 10, "{} finding lines", live.0.len());
    assert_eq!(
        live, replayed,
        "sniff --workers 2 -T jsonl against replay of its -w files"
    );
}
