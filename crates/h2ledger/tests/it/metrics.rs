//! Issue 23: the metrics. `replay -T prometheus` against the JSON of the same run on every
//! capture (each counter equals its figure), accepted by `promtool check metrics`; hostile
//! paths; 10,000 distinct paths under a fixed page size; and (root) a real Prometheus
//! scraping `sniff --metrics` every second while the grpc-go workload runs, its figures then
//! queried from Prometheus' API and compared with the sniff's final JSON.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::live::skip_unless_root;
use crate::util::*;

fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// Whether `tool` is there; under CI it must be (the justfile installs it).
fn need(tool: &str, test: &str) -> bool {
    if have(tool) {
        return true;
    }
    assert!(
        !ci(),
        "{test}: {tool} is missing under CI (just test installs it)"
    );
    crate::util::skipped(&format!(
        "SKIPPED {test}: needs {tool} (apt-get install prometheus)"
    ));
    false
}

/// The samples of an exposition: `name{labels}` to value.
fn samples(page: &str) -> BTreeMap<String, f64> {
    page.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').expect("name value");
            (k.to_string(), v.parse().expect("a number"))
        })
        .collect()
}

fn get(m: &BTreeMap<String, f64>, series: &str) -> u64 {
    match m.get(series) {
        Some(v) => *v as u64,
        None => panic!("no series {series}"),
    }
}

/// The sum of every series of `name` whose labels contain each of `with`.
fn sum(m: &BTreeMap<String, f64>, name: &str, with: &[&str]) -> u64 {
    m.iter()
        .filter(|(k, _)| k.split('{').next() == Some(name) && with.iter().all(|w| k.contains(w)))
        .map(|(_, v)| *v as u64)
        .sum()
}

/// The label `status` of the JSON's `methods[].status` key.
fn status_label(key: &str) -> String {
    const GRPC: [&str; 17] = [
        "OK",
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
        "UNAUTHENTICATED",
    ];
    if let Some(n) = key.strip_prefix("grpc-status ") {
        let n: usize = n.parse().unwrap();
        return GRPC
            .get(n)
            .map_or_else(|| format!("Code({n})"), |s| s.to_string());
    }
    key.strip_prefix(":status ").unwrap_or(key).to_string()
}

/// Every counter of the exposition `page` against the JSON report `v` of the same run.
fn assert_page_equals_json(what: &str, page: &str, v: &Value) {
    let m = samples(page);
    for side in ["client", "server"] {
        let s = &v["sides"][side];
        for t in FRAME_KEYS {
            let series = format!("h2ledger_frames_total{{side=\"{side}\",type=\"{t}\"}}");
            assert_eq!(get(&m, &series), n(&s["frames"][t]), "{what}: {series}");
        }
        for k in ["bdp_pings", "writes", "bytes"] {
            let series = format!("h2ledger_{k}_total{{side=\"{side}\"}}");
            assert_eq!(get(&m, &series), n(&s[k]), "{what}: {series}");
        }
        // GOAWAY and RST_STREAM by code add up to the ledger's frames of the type.
        for (metric, t) in [("goaways", "GOAWAY"), ("rst_streams", "RST_STREAM")] {
            assert_eq!(
                sum(
                    &m,
                    &format!("h2ledger_{metric}_total"),
                    &[&format!("side=\"{side}\"")]
                ),
                n(&s["frames"][t]),
                "{what}: {metric} of the {side}"
            );
        }
        let series = format!("h2ledger_ping_rtt_seconds_count{{side=\"{side}\"}}");
        assert_eq!(
            get(&m, &series),
            n(&s["pings"]["acked"]),
            "{what}: {series}"
        );
        for w in ["stream", "connection", "both"] {
            let series = format!("h2ledger_flow_stalls_total{{side=\"{side}\",window=\"{w}\"}}");
            assert_eq!(
                get(&m, &series),
                n(&v["flow_control"][side]["by_limit"][w]),
                "{what}: {series}"
            );
        }
    }
    assert_eq!(
        get(&m, "h2ledger_connections_total"),
        n(&v["connections"]),
        "{what}"
    );
    assert_eq!(get(&m, "h2ledger_connections_open"), 0, "{what}");
    assert_eq!(
        get(&m, "h2ledger_packets_total"),
        n(&v["capture"]["packets"]),
        "{what}"
    );
    // Calls: by path and status as the JSON's methods (fewer than 200 paths here), and in all
    // the analysis' calls; durations of the calls that ended.
    let methods = v["methods"].as_array().expect("methods");
    // Beyond 200 paths the later ones are `other` here and each listed in the JSON.
    // The JSON groups calls by HTTP method and path (`GET /x` and `HEAD /x` apart); the
    // metrics label the path only: their sum.
    let mut by_path: std::collections::BTreeMap<String, u64> = Default::default();
    for meth in methods.iter().filter(|_| methods.len() <= 200) {
        let path = meth["method"].as_str().unwrap();
        if path
            .chars()
            .any(|c| c.is_control() || c == '"' || c == '\\')
        {
            continue;
        }
        for (k, count) in meth["status"].as_object().unwrap() {
            let series = format!(
                "h2ledger_calls_total{{path=\"{path}\",status=\"{}\"}}",
                status_label(k)
            );
            *by_path.entry(series).or_default() += n(count);
        }
    }
    for (series, count) in &by_path {
        assert_eq!(get(&m, series), *count, "{what}: {series}");
    }
    assert_eq!(
        sum(&m, "h2ledger_enhance_your_calm_goaways_total", &[]),
        n(&v["too_many_pings"]),
        "{what}: too_many_pings"
    );
    let c = &v["concurrency"];
    assert_eq!(
        sum(&m, "h2ledger_calls_total", &[]),
        n(&c["calls"]),
        "{what}: calls"
    );
    assert_eq!(
        sum(&m, "h2ledger_call_duration_seconds_count", &[]),
        n(&c["calls"]) - n(&c["reset"]) - n(&c["unfinished"]),
        "{what}: calls that ended"
    );
    let limits = [
        ("connections", &v["tcp"]["evicted"]),
        ("evicted_forgotten", &v["tcp"]["evicted_forgotten"]),
        ("reassembly", &v["tcp"]["bound_hits"]),
        ("methods", &v["limits"]["methods_folded"]),
        ("calls", &v["limits"]["untracked_calls"]),
        ("flow_streams", &v["flow_control"]["untracked_streams"]),
        ("grpc_calls", &v["grpc"]["untracked_calls"]),
    ];
    for (limit, figure) in limits {
        let series = format!("h2ledger_limits_hit_total{{limit=\"{limit}\"}}");
        assert_eq!(get(&m, &series), n(figure), "{what}: {series}");
    }
    for (limit, key) in [
        ("settings", "settings-cap"),
        ("streams", "streams-cap"),
        ("hpack_table", "hpack-cap"),
        ("detection", "detect-cap"),
    ] {
        let series = format!("h2ledger_limits_hit_total{{limit=\"{limit}\"}}");
        let figure = v["anomalies"][key].as_u64().unwrap_or(0);
        assert_eq!(get(&m, &series), figure, "{what}: {series}");
    }
}

/// `promtool check metrics` accepts the page (nothing printed, exit 0).
fn promtool_accepts(what: &str, page: &str) {
    let mut p = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    p.stdin.take().unwrap().write_all(page.as_bytes()).unwrap();
    let out = p.wait_with_output().unwrap();
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "{what}: promtool check metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn prometheus_page(file: &str, extra: &[&str]) -> String {
    let mut args = vec!["replay", file, "-T", "prometheus"];
    args.extend_from_slice(extra);
    let out = run(&args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// Every capture: `replay -T prometheus` equals `replay --analyze -T json`, and promtool
/// accepts it.
#[test]
fn replay_prometheus_equals_the_json_of_every_capture() {
    let promtool = need("promtool", "replay_prometheus_equals_the_json");
    let mut seen = 0;
    let mut dirs = vec![repo().join("captures")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
                continue;
            }
            let name = p.to_string_lossy().to_string();
            if !(name.ends_with(".pcap") || name.ends_with(".pcapng")) {
                continue;
            }
            let page = prometheus_page(&name, &[]);
            let v = replay_json(&name, &["--analyze"]);
            assert_page_equals_json(&name, &page, &v);
            if promtool {
                promtool_accepts(&name, &page);
            }
            seen += 1;
        }
    }
    assert!(seen >= 10, "{seen} captures");
}

/// A raw-IP pcap of one HTTP/2 connection carrying a GET of each of `paths` (a literal
/// `:path` of those bytes) answered `200`.
fn capture_of_paths(paths: &[Vec<u8>]) -> Vec<u8> {
    let mut f = Vec::new();
    for v in [0xa1b2c3d4u32, 0, 0, 0, 65535, 101] {
        f.extend_from_slice(&v.to_le_bytes());
    }
    f[4..8].copy_from_slice(&[2, 0, 4, 0]);
    let push = |f: &mut Vec<u8>, p: Vec<u8>, t: u32| {
        for v in [t, 0, p.len() as u32, p.len() as u32] {
            f.extend_from_slice(&v.to_le_bytes());
        }
        f.extend_from_slice(&p);
    };
    let t = 1_700_000_000u32;
    let (mut cs, mut ss) = (1001u32, 5001u32);
    push(&mut f, tcp(40000, 80, 1000, 0x02, &[]), t);
    push(&mut f, tcp(80, 40000, 5000, 0x12, &[]), t);
    let mut h2 = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    h2.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
    push(&mut f, tcp(40000, 80, cs, 0x18, &h2), t);
    cs += h2.len() as u32;
    for (i, path) in paths.iter().enumerate() {
        assert!(path.len() < 127);
        let stream = (2 * i + 1) as u32;
        let mut block = vec![0x82, 0x86, 0x04, path.len() as u8];
        block.extend_from_slice(path);
        let mut req = (block.len() as u32).to_be_bytes()[1..].to_vec();
        req.extend_from_slice(&[1, 5]);
        req.extend_from_slice(&stream.to_be_bytes());
        req.extend_from_slice(&block);
        let mut resp = vec![0, 0, 1, 1, 5];
        resp.extend_from_slice(&stream.to_be_bytes());
        resp.push(0x88);
        push(&mut f, tcp(40000, 80, cs, 0x18, &req), t + 1);
        push(&mut f, tcp(80, 40000, ss, 0x18, &resp), t + 1);
        cs += req.len() as u32;
        ss += resp.len() as u32;
    }
    push(&mut f, tcp(40000, 80, cs, 0x11, &[]), t + 2);
    push(&mut f, tcp(80, 40000, ss, 0x11, &[]), t + 2);
    f
}

fn tmp(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = scratch("metrics");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// A `:path` with quotes, backslashes, newlines, a CR, an escape sequence, a NUL and invalid
/// UTF-8 (built from bytes) leaves one well-formed line per series, which promtool accepts.
#[test]
fn hostile_paths_do_not_break_the_exposition() {
    let evil =
        b"/a\"b\\c\nd\re\x1b[2J\x00\xff}\n# TYPE h2ledger_evil counter\nh2ledger_evil 1".to_vec();
    let p = tmp("evil.pcap", &capture_of_paths(&[evil, b"/ok".to_vec()]));
    let page = prometheus_page(p.to_str().unwrap(), &[]);
    let lines: Vec<&str> = page
        .lines()
        .filter(|l| l.starts_with("h2ledger_calls_total{"))
        .collect();
    assert_eq!(lines.len(), 2, "{page}");
    assert!(lines.contains(&r#"h2ledger_calls_total{path="/ok",status="200"} 1"#));
    assert!(lines.contains(
        &r#"h2ledger_calls_total{path="/a\"b\\\\c\\x0ad\\x0de\\x1b[2J\\x00\\xff}\\x0a# TYPE h2ledger_evil counter\\x0ah2ledger_evil 1",status="200"} 1"#
    ), "{lines:?}");
    assert!(!page.lines().any(|l| l.starts_with("h2ledger_evil")));
    assert!(!page.chars().any(|c| c.is_control() && c != '\n'));
    if need("promtool", "hostile_paths") {
        promtool_accepts("hostile path", &page);
    }
}

/// 10,000 distinct paths: 200 labels and `other` (each call beyond counted as a limit hit),
/// the page under 512 KiB; with `--metrics-max-paths 10`, under 64 KiB.
#[test]
fn ten_thousand_paths_keep_the_page_bounded() {
    let paths: Vec<Vec<u8>> = (0..10_000)
        .map(|i| format!("/bench.Service{}/Method{i:05}", i % 7).into_bytes())
        .collect();
    let p = tmp("paths.pcap", &capture_of_paths(&paths));
    let file = p.to_str().unwrap();
    let page = prometheus_page(file, &[]);
    let m = samples(&page);
    assert_eq!(sum(&m, "h2ledger_calls_total", &[]), 10_000);
    assert_eq!(
        get(&m, r#"h2ledger_calls_total{path="other",status="200"}"#),
        9_800
    );
    assert_eq!(
        get(&m, r#"h2ledger_limits_hit_total{limit="metrics_paths"}"#),
        9_800
    );
    assert_eq!(page.matches("h2ledger_calls_total{").count(), 201);
    assert!(page.len() < 512 << 10, "{} bytes", page.len());
    let small = prometheus_page(file, &["--metrics-max-paths", "10"]);
    assert_eq!(small.matches("h2ledger_calls_total{").count(), 11);
    assert!(small.len() < 64 << 10, "{} bytes", small.len());
    eprintln!(
        "10,000 paths: {} bytes (200 paths), {} bytes (10 paths)",
        page.len(),
        small.len()
    );
    let v = replay_json(file, &["--analyze"]);
    assert_page_equals_json("10,000 paths", &page, &v);
}

#[test]
fn metrics_flags_are_checked() {
    let out = run(&["replay", "x.pcap", "--metrics-max-paths", "0"]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&["compare", "a.pcap", "b.pcap", "-T", "prometheus"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        err.contains("-T prometheus applies to replay and sniff"),
        "{err}"
    );
    let cap = capture("grpcgo-article.pcap");
    let out = run(&[
        "sniff",
        "-r",
        cap.to_str().unwrap(),
        "--metrics",
        "127.0.0.1:0",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--metrics applies to a live capture"), "{err}");
}

/// `--metrics` on an address in use: one line, exit status 2, before any capture opens (so
/// also without root).
#[test]
fn metrics_address_in_use_is_one_line() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = run(&["sniff", "-i", "lo", "--duration", "1s", "--metrics", &addr]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!("h2ledger: --metrics {addr}: cannot listen: ")),
        "{err}"
    );
}

/// A GET over a new connection; the body.
fn http_get(addr: &str, target: &str) -> String {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(c, "GET {target} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut out = String::new();
    c.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    assert!(head.contains(" 200 OK"), "GET {target}: {head}");
    body.to_string()
}

/// Prometheus' instant query `q`, as (labels, value) pairs.
fn query(prom: &str, q: &str) -> Vec<(Value, u64)> {
    let enc: String = q
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let body = http_get(prom, &format!("/api/v1/query?query={enc}"));
    let v: Value = serde_json::from_str(&body).expect("JSON from Prometheus");
    assert_eq!(v["status"], "success", "{body}");
    v["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let val: f64 = r["value"][1].as_str().unwrap().parse().unwrap();
            (r["metric"].clone(), val as u64)
        })
        .collect()
}

/// Sends SIGKILL to a process id when dropped during a panic.
struct KillPid(String);
impl Drop for KillPid {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let _ = Command::new("kill").args(["-KILL", &self.0]).status();
        }
    }
}

struct Kill(Child);
impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Debian's prometheus scrapes `sniff --metrics` every second while the grpc-go workload
/// runs; then its HTTP API's `sum(h2ledger_frames_total)` and every per-type counter equal
/// the sniff's final JSON, and promtool accepts the page served.
#[test]
fn prometheus_scrapes_a_live_sniff() {
    if skip_unless_root("prometheus_scrapes_a_live_sniff")
        || !need("prometheus", "prometheus_scrapes_a_live_sniff")
    {
        return;
    }
    if !have("go") || !Path::new("/usr/share/gocode/src/google.golang.org/grpc").exists() {
        assert!(!ci(), "the grpc-go workload is missing under CI");
        crate::util::skipped(
            "SKIPPED prometheus_scrapes_a_live_sniff: needs golang-go and golang-google-grpc-dev",
        );
        return;
    }
    let dir = scratch("prom");
    // An earlier process with this id may have left its Prometheus data here.
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let ok = Command::new("bash")
        .arg(repo().join("scripts/build-grpcgo.sh"))
        .arg(&dir)
        .status()
        .unwrap();
    assert!(ok.success(), "build-grpcgo.sh");
    let prog = dir.join("grpcgo-article");
    let mut server = Command::new(&prog)
        .args(["-serve", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _server = Kill(server);
    let port = serde_json::from_str::<Value>(&line).expect("{\"port\":P}")["port"]
        .as_u64()
        .unwrap()
        .to_string();
    let mut sniff = Command::new(bin())
        .args([
            "sniff",
            "--port",
            &port,
            "-T",
            "json",
            "--metrics",
            "127.0.0.1:0",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Killed if the test fails before it stops the sniff.
    let pid = sniff.id().to_string();
    let _guard = KillPid(pid.clone());
    let (metrics, second) = metrics_started(sniff.stderr.take().unwrap());
    assert!(second.contains("listening on"), "{second}");
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n  - job_name: h2ledger\n    static_configs:\n      - targets: ['{metrics}']\n"
        ),
    )
    .unwrap();
    let prometheus = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("tsdb").display()
        ))
        // Port 0, read back from its log: a port found free and released first could be
        // taken by another test before Prometheus binds it (decision 250).
        .arg("--web.listen-address=127.0.0.1:0")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut prometheus = Kill(prometheus);
    // Its address, then its word that it answers queries (before that its API says 503).
    let mut log = BufReader::new(prometheus.0.stderr.take().unwrap());
    // Both lines, in either order: Prometheus logs them from two goroutines (web.Run's
    // "Listening on" and main's "Server is ready"), and under load the second can come first.
    let mut prom = None;
    let mut ready = false;
    while prom.is_none() || !ready {
        let mut line = String::new();
        assert!(
            log.read_line(&mut line).unwrap() > 0,
            "Prometheus ended before it was ready"
        );
        if let Some((_, addr)) = line.split_once("msg=\"Listening on\" address=") {
            prom = Some(addr.trim().to_string());
        }
        if line.contains("Server is ready to receive web requests") {
            ready = true;
        }
    }
    let prom = prom.expect("Prometheus said where it listens");
    std::thread::spawn(move || {
        let mut rest = String::new();
        while log.read_line(&mut rest).map(|n| n > 0).unwrap_or(false) {
            rest.clear();
        }
    });
    let t0 = Instant::now();
    loop {
        let up =
            TcpStream::connect(&prom).is_ok() && query(&prom, "up").iter().any(|(_, v)| *v == 1);
        if up {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "Prometheus never scraped"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    let client = Command::new(&prog)
        .args(["-connect", &format!("127.0.0.1:{port}"), "-seconds", "3"])
        .output()
        .unwrap();
    assert!(client.status.success());
    // The calls are folded a second after they end; two scrapes after that.
    std::thread::sleep(Duration::from_millis(3500));
    let page = http_get(&metrics, "/metrics");
    promtool_accepts("sniff --metrics", &page);
    let total = query(&prom, "sum(h2ledger_frames_total)");
    let by_type = query(&prom, "h2ledger_frames_total");
    let calls = query(&prom, "sum(h2ledger_calls_total)");
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let out = sniff.wait_with_output().unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).expect("the sniff's JSON");
    let mut frames = 0;
    for s in ["client", "server"] {
        for t in FRAME_KEYS {
            frames += n(&v["sides"][s]["frames"][t]);
        }
    }
    assert!(frames > 100, "{frames} frames");
    assert_eq!(total.len(), 1);
    assert_eq!(
        total[0].1, frames,
        "sum(h2ledger_frames_total) against the JSON"
    );
    assert_eq!(by_type.len(), 28);
    for (labels, value) in &by_type {
        let (side, t) = (
            labels["side"].as_str().unwrap(),
            labels["type"].as_str().unwrap(),
        );
        assert_eq!(*value, n(&v["sides"][side]["frames"][t]), "{side} {t}");
    }
    assert_eq!(calls[0].1, n(&v["concurrency"]["calls"]), "calls");
    assert_page_equals_json("sniff --metrics, last page", &page, &v);
    eprintln!(
        "prometheus: sum(h2ledger_frames_total) = {} = the JSON's {frames}",
        total[0].1
    );
}

/// Every finding id has its series from the start (at 0 until it fires), GOAWAY and RST_STREAM
/// are counted by code, and the HELP text explains the label values (issue 38). The
/// REFUSED_STREAM count is tshark's: `tshark -r captures/findings/refused-stream-nghttpd.pcap
/// -d tcp.port==50933,http2 -Y "http2.type == 3" -T fields -e http2.rst_stream.error` prints
/// 12 lines of 7 (REFUSED_STREAM).
#[test]
fn findings_and_error_codes_are_series_from_the_start() {
    let f = repo().join("captures/findings/refused-stream-nghttpd.pcap");
    let page = prometheus_page(&f.to_string_lossy(), &[]);
    let m = samples(&page);
    assert_eq!(
        get(
            &m,
            "h2ledger_rst_streams_total{side=\"server\",code=\"REFUSED_STREAM\"}"
        ),
        12
    );
    assert_eq!(
        get(
            &m,
            "h2ledger_rst_streams_total{side=\"client\",code=\"CANCEL\"}"
        ),
        0
    );
    assert_eq!(
        get(
            &m,
            "h2ledger_goaways_total{side=\"server\",code=\"NO_ERROR\"}"
        ),
        0
    );
    let explained = crate::util::run(&["explain"]);
    let ids: Vec<String> = String::from_utf8(explained.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with(' '))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect();
    for id in &ids {
        assert_eq!(
            sum(&m, "h2ledger_findings_total", &[&format!("id=\"{id}\"")]) > 0,
            id == "refused-stream" || id == "stream-slots-full",
            "{id}"
        );
        assert!(
            m.keys()
                .any(|k| k.starts_with(&format!("h2ledger_findings_total{{id=\"{id}\","))),
            "no series for {id}"
        );
    }
    for words in [
        "none for a call",
        "NO_ERROR",
        "CANCEL",
        "every id from the start",
    ] {
        assert!(
            page.lines()
                .any(|l| l.starts_with("# HELP") && l.contains(words)),
            "{words}"
        );
    }
}
