//! Live capture on loopback (needs root or CAP_NET_RAW; CI runs as root). A real gRPC
//! workload runs while `h2ledger sniff` watches; the workload's own call counts are the truth.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use h2ledger_workload::{Options, Phase};
use serde_json::Value;

use crate::util::*;

pub(crate) fn skip_unless_root(test: &str) -> bool {
    if is_root() {
        return false;
    }
    crate::util::skipped(&format!(
        "SKIPPED {test}: live capture needs root (CI runs as root)"
    ));
    true
}

/// Starts `h2ledger sniff ARGS` and waits until it is listening.
fn start_sniff(args: &[&str]) -> Child {
    start("sniff", args)
}

/// Starts `h2ledger COMMAND ARGS` on a live device and waits until it is listening.
fn start(command: &str, args: &[&str]) -> Child {
    let mut child = Command::new(bin())
        .arg(command)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sniff starts");
    let mut err = BufReader::new(child.stderr.take().unwrap());
    // `--metrics` says where it serves first.
    let mut said = String::new();
    loop {
        let mut line = String::new();
        assert!(err.read_line(&mut line).unwrap() > 0, "sniff said: {said}");
        said.push_str(&line);
        if line.contains("listening on") {
            break;
        }
    }
    // Keep draining stderr so the child never blocks on it.
    std::thread::spawn(move || {
        let mut rest = String::new();
        while err.read_line(&mut rest).map(|n| n > 0).unwrap_or(false) {}
    });
    child
}

fn stop(child: Child) -> Value {
    let pid = child.id().to_string();
    let status = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "sniff exit status {:?}", out.status);
    serde_json::from_slice(&out.stdout).expect("sniff prints one JSON ledger")
}

fn assert_matches_workload(what: &str, v: &Value, made: u64, grpc: bool) {
    let client = &v["sides"]["client"]["frames"];
    let server = &v["sides"]["server"]["frames"];
    assert_eq!(n(&v["connections"]), 1, "{what}: connections");
    assert_eq!(n(&v["calls"]), made, "{what}: calls");
    assert_eq!(n(&client["HEADERS"]), made, "{what}: client HEADERS");
    if grpc {
        assert_eq!(n(&server["TRAILERS"]), made, "{what}: server TRAILERS");
    }
    assert_eq!(
        n(&client["PING"]),
        n(&server["PING_ACK"]),
        "{what}: client PINGs ACKed"
    );
    assert_eq!(
        n(&server["PING"]),
        n(&client["PING_ACK"]),
        "{what}: server PINGs ACKed"
    );
    assert_eq!(n(&v["drops"]["kernel"]), 0, "{what}: kernel drops");
    assert_eq!(n(&v["tcp"]["gaps"]), 0, "{what}: gaps");
}

/// tonic + tonic-health, both phases of the article over one connection, sniffed live; then
/// the file written by `--write` replays to the same ledger.
#[test]
fn sniff_tonic_workload_then_replay_written_file() {
    if skip_unless_root("sniff_tonic_workload") {
        return;
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = scratch("live");
    std::fs::create_dir_all(&dir).unwrap();
    let written = dir.join("tonic.pcap");
    let (made, port) = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let opts = Options::default();
        let server = h2ledger_workload::serve(listener, &opts).await;
        let port = addr.port().to_string();
        let sniff = start_sniff(&[
            "--port",
            &port,
            "--format",
            "json",
            "--write",
            written.to_str().unwrap(),
        ]);
        let phases = [
            Phase::new("one", 1, 24.0, 1.5),
            Phase::new("eight", 8, 3.0, 1.5),
        ];
        let results = h2ledger_workload::run_phases(addr, &phases, &opts).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let made: u64 = results.iter().map(|r| r.calls_made).sum();
        assert_eq!(made, results.iter().map(|r| r.calls_ok).sum::<u64>());
        let v = stop(sniff);
        let _ = server.shutdown().await;
        ((made, v), port)
    });
    let (made, v) = made;
    assert!(made >= 60, "the workload made {made} calls");
    assert_matches_workload("tonic live", &v, made, true);
    assert!(
        n(&v["sides"]["server"]["ping_labels"]["h2-user"]) > 0,
        "hyper's BDP pings"
    );
    let replayed = replay_json(written.to_str().unwrap(), &["--port", &port]);
    assert_ledger_eq("sniff --write, then replay", &v, &replayed);
}

/// The grpc-go program from captures/src (stock grpc-go, as in the article), when Go and
/// Debian's grpc-go sources are installed.
#[test]
fn sniff_grpcgo_program() {
    if skip_unless_root("sniff_grpcgo_program") {
        return;
    }
    if !have("go") || !std::path::Path::new("/usr/share/gocode/src/google.golang.org/grpc").exists()
    {
        crate::util::skipped(
            "SKIPPED sniff_grpcgo_program: needs golang-go and golang-google-grpc-dev",
        );
        return;
    }
    let dir = scratch("go");
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
    let mut out = BufReader::new(server.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let port = serde_json::from_str::<Value>(&line).expect("{\"port\":P}")["port"]
        .as_u64()
        .unwrap()
        .to_string();
    let sniff = start_sniff(&["--port", &port, "--format", "json"]);
    let client = Command::new(&prog)
        .args(["-connect", &format!("127.0.0.1:{port}"), "-seconds", "1.5"])
        .output()
        .unwrap();
    assert!(client.status.success());
    let report: Value = String::from_utf8_lossy(&client.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v.get("calls_made").is_some())
        .expect("the client prints its calls");
    std::thread::sleep(Duration::from_millis(300));
    let v = stop(sniff);
    let _ = server.kill();
    let _ = server.wait();
    let made = n(&report["calls_made"]);
    assert!(made >= 60, "{made}");
    assert_matches_workload("grpc-go live", &v, made, true);
    // grpc-go's BDP estimator: its PINGs carry the bdpPing payload.
    assert!(n(&v["sides"]["server"]["bdp_pings"]) > 0);
}

/// The demo's workload programs in one directory (`--workloads DIR`): the grpc-go program built
/// once per test run, the grpcio script, and the tonic workload when cargo built it next to
/// the h2ledger binary (`cargo test --workspace` does). `None` without Go or grpc-go's sources.
pub(crate) fn demo_workloads() -> Option<&'static std::path::Path> {
    static DIR: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        if !have("go")
            || !std::path::Path::new("/usr/share/gocode/src/google.golang.org/grpc").exists()
        {
            return None;
        }
        let dir = scratch("demo");
        let ok = Command::new("bash")
            .arg(repo().join("scripts/build-grpcgo-demo.sh"))
            .arg(&dir)
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(ok.success(), "build-grpcgo-demo.sh");
        let py = repo().join("crates/h2ledger-workload/grpcio/h2ledger-grpcio.py");
        copy_executable(&py, &dir.join("h2ledger-grpcio.py"));
        let tonic = std::path::Path::new(bin()).with_file_name("h2ledger-workload");
        if tonic.exists() {
            copy_executable(&tonic, &dir.join("h2ledger-workload"));
        }
        Some(dir)
    })
    .as_deref()
}

pub(crate) fn demo_json(args: &[&str]) -> Value {
    let dir = demo_workloads().expect("workloads").to_str().unwrap();
    let mut all = vec!["demo", "--format", "json", "--workloads", dir];
    all.extend_from_slice(args);
    let out = run(&all);
    assert!(
        out.status.success(),
        "h2ledger {all:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the demo prints one JSON object")
}

/// BDP PINGs per call per side of one phase's ledger.
pub(crate) fn bdp_per_call(l: &Value) -> f64 {
    let pings = n(&l["sides"]["client"]["bdp_pings"]) + n(&l["sides"]["server"]["bdp_pings"]);
    pings as f64 / 2.0 / n(&l["calls"]) as f64
}

/// The article, live, with real grpc-go (and grpcio and tonic when there): per phase the
/// calls the program made are the calls on the wire, every request has its trailers, every
/// PING its ACK; grpc-go's BDP estimator pings once per call with one caller and shares its
/// rounds with eight. Ranges from the issue (no timing asserts beyond them).
#[test]
fn demo_stacks_side_by_side() {
    if skip_unless_root("demo_stacks_side_by_side") {
        return;
    }
    let Some(dir) = demo_workloads() else {
        crate::util::skipped(
            "SKIPPED demo_stacks_side_by_side: needs golang-go and golang-google-grpc-dev",
        );
        return;
    };
    let mut args = vec!["--seconds", "2", "--impl", "grpc-go"];
    let grpcio = Command::new("/usr/bin/python3")
        .args(["-c", "import grpc"])
        .status()
        .is_ok_and(|s| s.success());
    if grpcio {
        args.extend(["--impl", "grpcio"]);
    } else {
        eprintln!("demo_stacks_side_by_side: no python3-grpcio, grpcio not run");
    }
    if dir.join("h2ledger-workload").exists() {
        args.extend(["--impl", "tonic"]);
    } else {
        eprintln!("demo_stacks_side_by_side: no target/*/h2ledger-workload (cargo build -p h2ledger-workload), tonic not run");
    }
    let v = demo_json(&args);
    let workloads = v["workloads"].as_array().expect("workloads");
    assert_eq!(
        workloads.len(),
        args.iter().filter(|a| **a == "--impl").count()
    );
    // The top-level phases are the first stack's.
    assert_eq!(v["phases"], workloads[0]["phases"]);
    assert_eq!(n(&v["drops"]["kernel"]), 0);
    for w in workloads {
        let stack = w["impl"].as_str().unwrap();
        assert!(w["version"].is_string(), "{stack}: version");
        let phases = w["phases"].as_array().unwrap();
        assert_eq!(phases.len(), 2, "{stack}");
        assert_eq!(n(&w["tcp"]["gaps"]), 0, "{stack}: gaps");
        let mut pings = [0u64; 4];
        for p in phases {
            let what = format!("{stack} {}", p["name"]);
            let made = n(&p["calls_made"]);
            let l = &p["ledger"];
            assert!(made >= 20, "{what}: {made} calls made");
            assert!(n(&p["callers"]) >= 1 && p["rate_per_caller"].as_f64() > Some(0.0));
            assert_eq!(n(&l["calls"]), made, "{what}: calls on the wire");
            assert_eq!(
                n(&l["sides"]["client"]["frames"]["HEADERS"]),
                made,
                "{what}"
            );
            assert_eq!(
                n(&l["sides"]["server"]["frames"]["TRAILERS"]),
                made,
                "{what}"
            );
            for (i, (side, k)) in [
                ("client", "PING"),
                ("server", "PING_ACK"),
                ("server", "PING"),
                ("client", "PING_ACK"),
            ]
            .iter()
            .enumerate()
            {
                pings[i] += n(&l["sides"][side]["frames"][k]);
            }
        }
        // PINGs are ACKed within the run (a round may straddle the phase boundary), except
        // at most the last one of each side: the client may close the connection first.
        for (sent, acked, side) in [
            (pings[0], pings[1], "client"),
            (pings[2], pings[3], "server"),
        ] {
            assert!(
                acked <= sent && sent <= acked + 1,
                "{stack}: {side} PINGs {sent}, ACKed {acked}"
            );
        }
        if stack == "grpc-go" {
            let one = bdp_per_call(&phases[0]["ledger"]);
            let eight = bdp_per_call(&phases[1]["ledger"]);
            eprintln!(
                "grpc-go BDP pings per call per side: 1 caller {one:.3}, 8 callers {eight:.3}"
            );
            assert!((0.85..=1.15).contains(&one), "1 caller: {one}");
            // Shared: a wave of 8 calls opens one round (1/8 when the callers stay in step). On a
            // loaded 2-core machine the waves spread and more calls open rounds (0.354 seen once);
            // not shared would be about 1, as with one caller. Half of that separates the two.
            assert!(eight <= 0.5, "8 callers: {eight}");
        }
    }
}

/// `--static-window` sets grpc-go's initial windows: no BDP estimator, so no BDP PING and no
/// WINDOW_UPDATE per call; the calls are all there.
#[test]
fn demo_static_window_has_no_bdp_pings() {
    if skip_unless_root("demo_static_window") {
        return;
    }
    if demo_workloads().is_none() {
        crate::util::skipped(
            "SKIPPED demo_static_window: needs golang-go and golang-google-grpc-dev",
        );
        return;
    }
    let v = demo_json(&["--seconds", "1.5", "--static-window"]);
    assert_eq!(v["static_window"], true);
    assert_eq!(v["workloads"][0]["impl"], "grpc-go");
    for p in v["phases"].as_array().unwrap() {
        let l = &p["ledger"];
        let made = n(&p["calls_made"]);
        assert!(made >= 15, "{made}");
        assert_eq!(n(&l["calls"]), made, "{}", p["name"]);
        for side in ["client", "server"] {
            assert_eq!(n(&l["sides"][side]["bdp_pings"]), 0, "{side} {}", p["name"]);
        }
    }
}

/// The table leads with the finding (one line, as the example) and fits 100 columns.
#[test]
fn demo_table_leads_with_the_finding() {
    if skip_unless_root("demo_table") {
        return;
    }
    let Some(dir) = demo_workloads() else {
        crate::util::skipped("SKIPPED demo_table: needs golang-go and golang-google-grpc-dev");
        return;
    };
    let out = run(&[
        "demo",
        "--seconds",
        "1",
        "--workloads",
        dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let first = text.lines().next().unwrap_or("");
    assert!(
        first.starts_with("grpc-go, 1 caller x 24/s: ") && first.contains("; 8 callers x 3/s: "),
        "{first}"
    );
    for l in text.lines().skip(1) {
        assert!(l.chars().count() <= 100, "wider than 100 columns: {l}");
    }
    for row in [
        "calls made (workload)",
        "calls on the wire",
        "BDP rounds",
        "call p50 / p99",
    ] {
        assert!(text.contains(row), "no row {row}:\n{text}");
    }
    // The findings are per phase and say the line's number (issue 38): the first phase's
    // BDP PINGs a call as the line has them, the second below the rule.
    let rate = first
        .split("1 caller x 24/s: ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let p1 = lines
        .iter()
        .position(|l| *l == "1 caller x 24/s:")
        .expect("phase 1's findings");
    let title = lines[p1..]
        .iter()
        .find(|l| l.contains("BDP PINGs for"))
        .expect("its bdp-ping-per-call");
    assert!(
        title.contains(&format!("({rate} a call)")),
        "{rate}: {title}"
    );
    assert!(text.contains("8 callers x 3/s: no findings"), "{text}");
}

/// Without workload programs, one line says where the demo looked and how to build them.
#[test]
fn demo_without_workloads_says_how_to_build_them() {
    let empty = scratch("noworkloads");
    std::fs::create_dir_all(&empty).unwrap();
    // A copy of the binary in an empty directory: nothing next to it either.
    let lone = empty.join("h2ledger");
    copy_executable(std::path::Path::new(bin()), &lone);
    let out = Command::new(&lone)
        .args(["demo", "--seconds", "1"])
        .env_remove("H2LEDGER_WORKLOADS")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("h2ledger-grpcgo") && err.contains("just demo"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    // The format flag is -T as on every view (-f, the filter elsewhere, still works here).
    for flag in ["-T", "-f", "--format"] {
        let out = Command::new(&lone)
            .args(["demo", flag, "json", "--seconds", "1"])
            .env_remove("H2LEDGER_WORKLOADS")
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag}: {e}");
        assert!(e.contains("h2ledger-grpcgo"), "{flag}: {e}");
    }
    let _ = std::fs::remove_dir_all(&empty);
}

/// Without capture permission: one line naming the device and the setcap fix, no backtrace.
#[test]
fn unprivileged_sniff_says_how_to_fix_it() {
    if skip_unless_root("unprivileged_sniff") || !have("setpriv") {
        return;
    }
    let out = Command::new("setpriv")
        .args([
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            "--inh-caps=-all",
        ])
        .arg(bin_for_nobody())
        .args(["sniff", "-i", "lo", "--duration", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("cannot capture on lo: permission denied"),
        "{err}"
    );
    assert!(
        err.contains("sudo setcap cap_net_raw,cap_net_admin=eip /"),
        "{err}"
    );
}

/// An unknown device: the error lists the devices that exist.
#[test]
fn unknown_device_lists_devices() {
    let out = run(&["sniff", "-i", "nosuchdev0", "--duration", "1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("no capture device \"nosuchdev0\""), "{err}");
    assert!(err.contains("lo"), "{err}");
}

/// `GET /metrics` from `addr`: the page.
fn scrape(addr: &str) -> String {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(c, "GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut out = String::new();
    c.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.") && out.contains(" 200 "), "{out}");
    out
}

/// h2load against nghttpd, 10 connections at 500 requests/s each (a rate a loaded 2-core
/// machine holds): every call is seen and the kernel drops nothing at the default settings.
/// The full-speed zero-drop figure is measured by `just bench`, not asserted here.
#[test]
fn sniff_h2load_drops_nothing() {
    if skip_unless_root("sniff_h2load") {
        return;
    }
    if !have("nghttpd") || !have("h2load") {
        crate::util::skipped("SKIPPED sniff_h2load: needs nghttp2-server and nghttp2-client");
        return;
    }
    let dir = scratch("h2load");
    let (mut server, port) = h2c_nghttpd(&dir);
    let sniff = start_sniff(&["--port", &port.to_string(), "--format", "json"]);
    let requests = 20_000u64;
    let load = Command::new("h2load")
        .args([
            "-n",
            &requests.to_string(),
            "-c",
            "10",
            "-m",
            "10",
            "--rps",
            "500",
        ])
        .arg(format!("http://127.0.0.1:{port}/file"))
        .output()
        .unwrap();
    assert!(load.status.success());
    let text = String::from_utf8_lossy(&load.stdout);
    assert!(text.contains(&format!("{requests} succeeded")), "{text}");
    std::thread::sleep(Duration::from_millis(500));
    let v = stop(sniff);
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(n(&v["drops"]["kernel"]), 0, "kernel drops");
    assert_eq!(n(&v["drops"]["interface"]), 0);
    assert_eq!(n(&v["connections"]), 10);
    assert_eq!(n(&v["calls"]), requests);
    assert_eq!(n(&v["sides"]["server"]["frames"]["HEADERS"]), requests);
    assert_eq!(n(&v["tcp"]["gaps"]), 0);
}

/// `frames -i lo` and `calls -i lo`: the per-frame and per-call listings on live traffic.
#[test]
fn frames_and_calls_live() {
    if skip_unless_root("frames_and_calls_live") {
        return;
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (made, frames, calls) = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let opts = Options::default();
        let server = h2ledger_workload::serve(listener, &opts).await;
        let port = addr.port().to_string();
        let live = ["-i", "lo", "--format", "jsonl", "--port", &port];
        let frames = start("frames", &live);
        let calls = start("calls", &live);
        let results =
            h2ledger_workload::run_phases(addr, &[Phase::new("one", 2, 10.0, 1.0)], &opts).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let (frames, calls) = (stop_lines(frames), stop_lines(calls));
        let _ = server.shutdown().await;
        (results[0].calls_made, frames, calls)
    });
    assert!(made >= 10, "{made}");
    let requests = frames
        .iter()
        .filter(|f| f["class"] == "HEADERS" && f["side"] == "client")
        .count() as u64;
    assert_eq!(requests, made, "request HEADERS among the live frames");
    let paths: Vec<&Value> = frames
        .iter()
        .filter_map(|f| f["headers"].as_array())
        .flat_map(|h| h.iter())
        .filter(|kv| kv[0] == ":path")
        .map(|kv| &kv[1])
        .collect();
    assert!(
        paths.iter().all(|p| *p == "/grpc.health.v1.Health/Check"),
        "{paths:?}"
    );
    assert_eq!(calls.len() as u64, made, "one line per call");
    assert!(calls.iter().all(|c| c["grpc_status"] == 0), "{calls:?}");
}

/// A live `calls` prints each call once it is over even when no more traffic comes: the
/// calls of one short burst appear while the capture still runs (they used to wait for the
/// next frame, or the end).
#[test]
fn live_calls_print_when_traffic_stops() {
    if skip_unless_root("live_calls_print_when_traffic_stops") {
        return;
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (made, seen) = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let opts = Options::default();
        let server = h2ledger_workload::serve(listener, &opts).await;
        let port = addr.port().to_string();
        let mut calls = start("calls", &["-i", "lo", "--format", "jsonl", "--port", &port]);
        let results =
            h2ledger_workload::run_phases(addr, &[Phase::new("one", 1, 10.0, 0.5)], &opts).await;
        // Read call lines while the capture runs, with no traffic from here on; the bound is
        // far above the one second a call waits (for late frames) before it is printed.
        let made = results[0].calls_made;
        let out = calls.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if line.contains("\"record\":\"call\"") && tx.send(()).is_err() {
                    break;
                }
            }
        });
        let mut seen = 0;
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while seen < made {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if rx.recv_timeout(left).is_err() {
                break;
            }
            seen += 1;
        }
        let _ = calls.kill();
        let _ = calls.wait();
        let _ = server.shutdown().await;
        (made, seen)
    });
    assert!(made >= 3, "{made}");
    assert_eq!(seen, made, "calls printed while the capture still ran");
}

/// SIGTERM, then every JSON line the command printed.
fn stop_lines(child: Child) -> Vec<Value> {
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "exit status {:?}", out.status);
    let mut v = records(&out.stdout, "frame");
    v.extend(records(&out.stdout, "call"));
    v
}

/// `sniff -w -` writes only pcap to stdout (the report goes to stderr); a `-w` file that cannot
/// be written is an error with exit status 2, not a silent loss.
#[test]
fn sniff_write_to_stdout_and_a_failed_write() {
    if skip_unless_root("sniff_write") {
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let child = Command::new(bin())
        .args(["sniff", "--duration", "2s", "-w", "-", "--port", &port])
        .args(["--format", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    {
        use std::io::Write;
        let mut c =
            std::net::TcpStream::connect(("127.0.0.1", port.parse::<u16>().unwrap())).unwrap();
        let (mut s, _) = listener.accept().unwrap();
        c.write_all(b"not http/2 at all").unwrap();
        s.write_all(b"nor this").unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // pcap with nanosecond timestamps, little-endian magic.
    assert_eq!(
        &out.stdout[..4],
        &[0x4d, 0x3c, 0xb2, 0xa1],
        "stdout is pcap"
    );
    assert!(
        err.contains("\"connections\""),
        "the report is on stderr: {err}"
    );
    let dir = scratch("w");
    std::fs::create_dir_all(&dir).unwrap();
    let saved = dir.join("stdout.pcap");
    std::fs::write(&saved, &out.stdout).unwrap();
    let v = replay_json(saved.to_str().unwrap(), &[]);
    assert!(n(&v["capture"]["packets"]) >= 6, "handshake and data: {v}");

    let out = Command::new(bin())
        .args([
            "sniff",
            "--duration",
            "1s",
            "-w",
            "/dev/full",
            "--port",
            &port,
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("/dev/full: cannot write the capture"), "{err}");
}

/// Issue 38 point 7: `sniff` names the process at each end of each connection (from /proc,
/// looked up at the SYN by a helper that kept root): h2load's and nghttpd's pids and
/// commands, with sniff itself running as `nobody`; and `--metrics` counts the connections by
/// each end's command (`h2ledger_process_connections_total`, decision 381).
#[test]
fn sniff_names_each_sides_process() {
    if skip_unless_root("sniff_names_each_sides_process") {
        return;
    }
    if !have("nghttpd") || !have("h2load") {
        crate::util::skipped(
            "SKIPPED sniff_names_each_sides_process: needs nghttp2-server and nghttp2-client",
        );
        return;
    }
    let dir = scratch("owners");
    let (mut server, port) = h2c_nghttpd(&dir);
    let metrics = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string();
    let sniff = start_sniff(&[
        "--port",
        &port.to_string(),
        "--format",
        "json",
        "--metrics",
        &metrics,
    ]);
    // Connections that live 2 s: the lookup at the SYN (and its retry) finds both ends.
    let load = Command::new("h2load")
        .args(["-D", "2", "-c", "2", "--rps", "10"])
        .arg(format!("http://127.0.0.1:{port}/file"))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let load_pid = load.id();
    let out = load.wait_with_output().unwrap();
    assert!(out.status.success());
    std::thread::sleep(Duration::from_millis(300));
    let page = scrape(&metrics);
    for want in [
        "h2ledger_process_connections_total{side=\"client\",comm=\"h2load\"} 2\n",
        "h2ledger_process_connections_total{side=\"server\",comm=\"nghttpd\"} 2\n",
        "h2ledger_limits_hit_total{limit=\"metrics_comms\"} 0\n",
    ] {
        assert!(page.contains(want), "no {want} in\n{page}");
    }
    let v = stop(sniff);
    let server_pid = server.id();
    let _ = server.kill();
    let _ = server.wait();
    let conns = v["per_connection"].as_array().unwrap();
    assert_eq!(conns.len(), 2, "{v:#}");
    for c in conns {
        let p = &c["process"];
        assert_eq!(p["client"]["pid"], load_pid, "{c:#}");
        assert_eq!(p["client"]["comm"], "h2load", "{c:#}");
        assert_eq!(p["server"]["pid"], server_pid, "{c:#}");
        assert_eq!(p["server"]["comm"], "nghttpd", "{c:#}");
    }
}

/// Stopped while packets pour in, a sniff reports exactly the packets its `-w` file holds: the
/// packet in hand when the signal is seen is taken, not dropped (it was saved already). h2load
/// at full speed keeps packets waiting, so the stop always finds one in hand.
#[test]
fn sniff_stopped_mid_traffic_reports_what_it_saved() {
    if skip_unless_root("sniff_stopped_mid_traffic") {
        return;
    }
    if !have("nghttpd") || !have("h2load") {
        crate::util::skipped(
            "SKIPPED sniff_stopped_mid_traffic: needs nghttp2-server and nghttp2-client",
        );
        return;
    }
    let dir = scratch("stopped-mid-traffic");
    let (mut server, port) = h2c_nghttpd(&dir);
    let file = dir.join("saved.pcap");
    let port_s = port.to_string();
    let sniff = start_sniff(&[
        "--port",
        &port_s,
        "-w",
        file.to_str().unwrap(),
        "-T",
        "json",
    ]);
    let mut load = Command::new("h2load")
        .args(["-n", "10000000", "-c", "4", "-m", "10"])
        .arg(format!("http://127.0.0.1:{port}/file"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let live = stop(sniff);
    let _ = load.kill();
    let _ = load.wait();
    let _ = server.kill();
    let _ = server.wait();
    let out = Command::new(bin())
        .args(["replay", file.to_str().unwrap(), "-T", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let saved: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(n(&live["calls"]) > 0, "traffic was seen: {live}");
    assert_eq!(
        n(&live["capture"]["packets"]),
        n(&saved["capture"]["packets"]),
        "packets: the sniff's report against its -w file"
    );
    assert_eq!(live["sides"], saved["sides"], "sides");
    assert_eq!(live["calls"], saved["calls"], "calls");
}
