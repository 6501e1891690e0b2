//! Issue 12: the binary as a tcpdump and tshark user runs it: `-r`, `-D`, `-c`, compressed
//! captures, one output model (`--format table|json|jsonl` on every view, `type` on each line),
//! completions and the man page.

use std::io::Write as _;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::util::*;

const F: &str = "grpcgo-article.pcap";

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("h2ledger-usage-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// `tool ARGS < input > output`: a real compressor, as a user makes the file.
fn compress(tool: &str, args: &[&str], input: &std::path::Path, out: &std::path::Path) {
    assert!(have(tool), "{tool} is needed (apt-get install {tool})");
    let status = Command::new(tool)
        .args(args)
        .stdin(std::fs::File::open(input).unwrap())
        .stdout(std::fs::File::create(out).unwrap())
        .status()
        .unwrap();
    assert!(status.success(), "{tool} {args:?}");
}

fn with_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut c = Command::new(bin())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = c.stdin.take().unwrap();
    let data = input.to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&data);
    });
    let o = c.wait_with_output().unwrap();
    feeder.join().unwrap();
    o
}

fn json_of(o: &Output) -> Value {
    assert!(
        o.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("one JSON document")
}

#[test]
fn gzip_and_zstd_captures_read_like_the_plain_file() {
    let plain = capture(F);
    let want = replay_json(plain.to_str().unwrap(), &["--analyze"]);
    let gz = tmp("a.pcap.gz");
    compress("gzip", &["-c"], &plain, &gz);
    // The name says nothing: the magic bytes decide.
    let zst = tmp("a.capture");
    compress("zstd", &["-q", "-c"], &plain, &zst);
    for f in [&gz, &zst] {
        let got = replay_json(f.to_str().unwrap(), &["--analyze"]);
        assert_eq!(got["sides"], want["sides"], "{}", f.display());
        assert_eq!(got["analysis"], want["analysis"], "{}", f.display());
        assert_eq!(got["calls"], want["calls"]);
        // Also on standard input.
        let o = with_stdin(
            &["replay", "-", "-T", "json", "--analyze"],
            &std::fs::read(f).unwrap(),
        );
        assert_eq!(json_of(&o)["sides"], want["sides"], "stdin {}", f.display());
    }
    // calls and frames read them too.
    let o = run(&["calls", gz.to_str().unwrap(), "-T", "jsonl"]);
    assert!(o.status.success());
    let calls = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| l.contains("\"type\":\"call\""))
        .count();
    assert_eq!(calls as u64, n(&want["calls"]));
}

#[test]
fn keys_embedded_in_a_compressed_pcapng_are_used() {
    let f = repo().join("captures/curl-nghttpd-tls13-dsb.pcapng");
    if !f.exists() {
        panic!("{} is missing", f.display());
    }
    let want = replay_json(f.to_str().unwrap(), &[]);
    assert!(n(&want["tls"]["decrypted"]) > 0);
    let zst = tmp("dsb.pcapng.zst");
    compress("zstd", &["-q", "-c"], &f, &zst);
    let got = replay_json(zst.to_str().unwrap(), &[]);
    assert_eq!(got["tls"], want["tls"]);
    assert_eq!(got["sides"], want["sides"]);
}

#[test]
fn a_cut_or_corrupt_compressed_capture_is_said() {
    // A big enough capture that a cut gzip still holds whole packets.
    let plain = capture("python-grpcio-ipv6.pcap");
    let gz = tmp("cut.pcap.gz");
    compress("gzip", &["-c"], &plain, &gz);
    let mut bytes = std::fs::read(&gz).unwrap();
    bytes.truncate(bytes.len() / 2);
    std::fs::write(&gz, &bytes).unwrap();
    let o = run(&["replay", gz.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("gzip"), "{err}");
    assert!(
        err.contains("the ledger covers the packets before that point"),
        "{err}"
    );
    assert!(
        !o.stdout.is_empty(),
        "the packets before the cut are counted"
    );
    // Garbage after a gzip magic: one line, exit 2.
    let bad = tmp("bad.gz");
    std::fs::write(&bad, b"\x1f\x8b\x08\x00garbage garbage garbage garbage").unwrap();
    let o = run(&["replay", bad.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("gzip"), "{err}");
    // The zstd magic alone on stdin.
    let o = with_stdin(&["replay", "-"], b"\x28\xb5\x2f\xfd");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("zstd") && err.contains("ends early"), "{err}");
}
