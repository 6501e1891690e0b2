//! Live capture on loopback (needs root or CAP_NET_RAW; CI runs as root). A real gRPC
//! workload runs while `h2ledger sniff` watches; the workload's own call counts are the truth.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use h2ledger_workload::{Options, Phase};
use serde_json::Value;

use crate::util::*;

fn skip_unless_root(test: &str) -> bool {
    if is_root() {
        return false;
    }
    eprintln!("SKIPPED {test}: live capture needs root (CI runs as root)");
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
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    assert!(line.contains("listening on"), "sniff said: {line}");
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
    let dir = std::env::temp_dir().join(format!("h2ledger-live-{}", std::process::id()));
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
        eprintln!("SKIPPED sniff_grpcgo_program: needs golang-go and golang-google-grpc-dev");
        return;
    }
    let dir = std::env::temp_dir().join(format!("h2ledger-go-{}", std::process::id()));
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

/// The demo's JSON agrees with itself: per phase, the calls it made are the calls on the
/// wire, every request has its trailers, and every PING its ACK.
#[test]
fn demo_json_agrees_with_itself() {
    if skip_unless_root("demo_json") {
        return;
    }
    let out = run(&["demo", "--seconds", "1.5", "--format", "json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let phases = v["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 2);
    let mut total = 0;
    for p in phases {
        let made = n(&p["calls_made"]);
        let l = &p["ledger"];
        assert!(made >= 30, "{made}");
        assert_eq!(n(&l["calls"]), made, "{}", p["name"]);
        assert_eq!(n(&l["sides"]["client"]["frames"]["HEADERS"]), made);
        assert_eq!(n(&l["sides"]["server"]["frames"]["TRAILERS"]), made);
        total += made;
    }
    // PINGs are ACKed within the run (a round may straddle the phase boundary).
    let sum = |side: &str, k: &str| -> u64 {
        phases
            .iter()
            .map(|p| n(&p["ledger"]["sides"][side]["frames"][k]))
            .sum()
    };
    assert_eq!(sum("client", "PING"), sum("server", "PING_ACK"));
    assert_eq!(sum("server", "PING"), sum("client", "PING_ACK"));
    assert_eq!(n(&v["drops"]["kernel"]), 0);
    assert!(total > 0);
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

/// h2load against nghttpd, 10 connections at 500 requests/s each (a rate a loaded 2-core
/// machine holds): every call is seen and the kernel drops nothing at the default settings.
/// The full-speed zero-drop figure is measured by `just bench`, not asserted here.
#[test]
fn sniff_h2load_drops_nothing() {
    if skip_unless_root("sniff_h2load") {
        return;
    }
    if !have("nghttpd") || !have("h2load") {
        eprintln!("SKIPPED sniff_h2load: needs nghttp2-server and nghttp2-client");
        return;
    }
    let dir = std::env::temp_dir().join(format!("h2ledger-h2load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("file"), vec![b'x'; 2000]).unwrap();
    // nghttpd cannot bind port 0: take a free port and retry if someone else grabs it.
    let mut server = None;
    for _ in 0..5 {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut child = Command::new("nghttpd")
            .args(["--no-tls", "-a", "127.0.0.1", "-d"])
            .arg(&dir)
            .arg(port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(300));
        if child.try_wait().unwrap().is_none() {
            server = Some((child, port));
            break;
        }
    }
    let (mut server, port) = server.expect("nghttpd started");
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
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect()
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
    let dir = std::env::temp_dir().join(format!("h2ledger-w-{}", std::process::id()));
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
