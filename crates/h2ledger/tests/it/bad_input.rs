//! Broken and hostile input: a clear one-line error naming the file (non-zero exit), or a
//! ledger with a note; never a panic or a backtrace (RUST_BACKTRACE=1 is set on these machines).

use std::path::PathBuf;
use std::process::Output;

use serde_json::Value;

use crate::util::*;

fn tmp(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = scratch("it");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Exit status 2 and exactly one line on stderr that names `what` and contains `reason`.
fn assert_one_line_error(o: &Output, what: &str, reason: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "exit status; stderr: {err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("h2ledger: "), "{err}");
    assert!(err.contains(what), "names {what}: {err}");
    assert!(err.contains(reason), "says {reason}: {err}");
    assert!(
        !err.contains("panicked") && !err.contains("backtrace"),
        "{err}"
    );
}

#[test]
fn not_a_capture() {
    let p = tmp("notes.txt", b"this is not a capture file, just some text\n");
    let o = run(&["replay", p.to_str().unwrap()]);
    assert_one_line_error(&o, p.to_str().unwrap(), "not a pcap or pcapng capture");
}

#[test]
fn empty_file() {
    let p = tmp("empty.pcap", b"");
    let o = run(&["replay", p.to_str().unwrap()]);
    assert_one_line_error(&o, p.to_str().unwrap(), "empty file");
}

#[test]
fn missing_file_and_directory() {
    let o = run(&["replay", "/nonexistent/capture.pcap"]);
    assert_one_line_error(&o, "/nonexistent/capture.pcap", "no such file");
    let dir = std::env::temp_dir();
    let o = run(&["replay", dir.to_str().unwrap()]);
    assert_one_line_error(&o, dir.to_str().unwrap(), "is a directory");
}

#[test]
fn bad_filter_expression() {
    let o = run(&[
        "replay",
        capture("grpcgo-article.pcap").to_str().unwrap(),
        "tcp",
        "port",
        "banana",
    ]);
    assert_one_line_error(&o, "tcp port banana", "bad filter expression");
}

/// A capture cut in the middle of a packet (a full disk, a killed tcpdump): the ledger of the
/// packets before the cut, a warning naming the file, exit status 1 (as tcpdump -r does).
#[test]
fn truncated_capture() {
    let whole = std::fs::read(capture("grpcgo-article.pcap")).unwrap();
    let p = tmp("truncated.pcap", &whole[..whole.len() / 2 + 7]);
    let o = run(&["replay", p.to_str().unwrap(), "--format", "json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).expect("a ledger is still printed");
    let calls = n(&v["calls"]);
    assert!(calls > 20 && calls < 144, "{calls}");
    let w = v["warnings"].to_string();
    assert!(
        w.contains(p.to_str().unwrap()) && w.contains("truncated"),
        "{w}"
    );
    // Table mode: the ledger on stdout, the warning on stderr.
    let o = run(&["replay", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("HEADERS"));
    assert!(stderr(&o).contains("truncated"), "{}", stderr(&o));
}

/// A pcap file (LINKTYPE_RAW, IPv4) built from TCP segments.
fn pcap(linktype: u32, packets: &[Vec<u8>]) -> Vec<u8> {
    let mut f = Vec::new();
    for v in [0xa1b2c3d4u32, 0x0004_0002, 0, 0, 65535, linktype] {
        f.extend_from_slice(&v.to_le_bytes());
    }
    // Fix the version fields: major 2, minor 4 as two u16.
    f[4..8].copy_from_slice(&[2, 0, 4, 0]);
    for (i, p) in packets.iter().enumerate() {
        for v in [
            1_700_000_000u32 + i as u32,
            0,
            p.len() as u32,
            p.len() as u32,
        ] {
            f.extend_from_slice(&v.to_le_bytes());
        }
        f.extend_from_slice(p);
    }
    f
}

const SYN: u8 = 0x02;
const ACK: u8 = 0x10;
const PSH_ACK: u8 = 0x18;

/// HTTP/1.1 on a port: no HTTP/2, an empty ledger and a note saying so.
#[test]
fn no_http2_in_capture() {
    let req = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    let resp = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
    let f = pcap(
        101,
        &[
            tcp(40000, 80, 100, SYN, b""),
            tcp(80, 40000, 500, SYN | ACK, b""),
            tcp(40000, 80, 101, PSH_ACK, req),
            tcp(80, 40000, 501, PSH_ACK, resp),
        ],
    );
    let p = tmp("http1.pcap", &f);
    let o = run(&["replay", p.to_str().unwrap(), "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(n(&v["connections"]), 0);
    assert!(
        v["warnings"].to_string().contains("no HTTP/2 connection"),
        "{}",
        v["warnings"]
    );
    let o = run(&["replay", p.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("0 HTTP/2 connections"));
}

/// Garbage on a port, and HTTP/2 whose frames turn hostile: lengths beyond any limit, bad
/// padding, HPACK referencing tables never seen. Counted, reported, no panic.
#[test]
fn hostile_bytes_are_counted_not_fatal() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut rnd = |n: usize| {
        (0..n)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed as u8
            })
            .collect::<Vec<u8>>()
    };
    let mut h2 = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    h2.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]); // SETTINGS
    h2.extend_from_slice(&[0, 0, 3, 1, 0x0c, 0, 0, 0, 1, 5, 0xbe, 0xbf]); // HEADERS, pad 5 > len
    h2.extend_from_slice(&[0, 0, 2, 1, 0x04, 0, 0, 0, 3, 0xfe, 0xff]); // HEADERS, index 126: never seen
    h2.extend_from_slice(&[0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 1]); // 16 MiB DATA head
    h2.extend(rnd(3000));
    let mut packets = vec![
        tcp(40001, 50051, 1000, SYN, b""),
        tcp(40001, 50051, 1001, PSH_ACK, &h2),
    ];
    let mut seq = 2000u32;
    for i in 0..40 {
        let junk = rnd(1 + i * 37);
        packets.push(tcp(40002, 9999, seq, PSH_ACK, &junk));
        seq = seq.wrapping_add(junk.len() as u32);
    }
    let p = tmp("hostile.pcap", &pcap(101, &packets));
    let o = run(&["replay", p.to_str().unwrap(), "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(n(&v["connections"]), 1, "only the HTTP/2 connection counts");
    let a = &v["anomalies"];
    assert!(n(&a["malformed-frame"]) >= 1, "{a}");
    assert!(n(&a["hpack-error"]) + n(&a["hpack-sync"]) >= 1, "{a}");
    assert_eq!(n(&v["sides"]["client"]["frames"]["SETTINGS"]), 1);
}

/// A link type we do not decode: every packet is reported, nothing panics.
#[test]
fn unknown_link_type() {
    let p = tmp(
        "usr0.pcap",
        &pcap(147, &vec![vec![1, 2, 3, 4, 5, 6, 7, 8]; 3]),
    );
    let o = run(&["replay", p.to_str().unwrap(), "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(n(&v["capture"]["undecodable"]), 3);
    assert!(
        v["warnings"].to_string().contains("link type 147"),
        "{}",
        v["warnings"]
    );
}

/// A capture the user may not read: says so, names the file. (Run as `nobody` through
/// setpriv, so it needs root to set up; as another user it is skipped.)
#[test]
fn unreadable_file() {
    if !is_root() || !have("setpriv") {
        crate::util::skipped("SKIPPED unreadable_file: needs root to switch to nobody");
        return;
    }
    let p = tmp(
        "secret.pcap",
        &std::fs::read(capture("midconn.pcap")).unwrap(),
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    // The directory must be searchable by nobody.
    std::fs::set_permissions(p.parent().unwrap(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = std::process::Command::new("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        .arg(bin_for_nobody())
        .args(["replay", p.to_str().unwrap()])
        .output()
        .unwrap();
    assert_one_line_error(&o, p.to_str().unwrap(), "permission denied");
}

/// HPACK literal without indexing, new name (RFC 7541 §6.2.2), no Huffman.
fn literal(name: &[u8], value: &[u8]) -> Vec<u8> {
    let mut b = vec![0, name.len() as u8];
    b.extend_from_slice(name);
    b.push(value.len() as u8);
    b.extend_from_slice(value);
    b
}

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let n = payload.len();
    let mut f = vec![(n >> 16) as u8, (n >> 8) as u8, n as u8, kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// A capture whose `:path`, header values, grpc-message and GOAWAY debug data hold ESC, BEL,
/// DEL and a C1 control: the tables and warnings show them as `\xNN` and never hand them to
/// the terminal (they would clear the screen, retitle the window), JSON keeps them exact.
#[test]
fn control_characters_from_the_capture_never_reach_the_terminal() {
    let mut req = vec![0x82, 0x86, 0x04, 9];
    req.extend_from_slice(b"/\x1b[2Jevil");
    req.extend_from_slice(&[0x01, 1, b'h']);
    req.extend(literal(b"content-type", b"application/grpc"));
    req.extend(literal(b"x-evil", b"\x1b]0;pwned\x07\xc2\x9b\x7f"));
    let mut c2s = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    c2s.extend(frame(4, 0, 0, b""));
    c2s.extend(frame(1, 0x05, 1, &req));
    let mut resp = vec![0x88];
    resp.extend(literal(b"grpc-status", b"2"));
    resp.extend(literal(b"grpc-message", b"\x1b[31mred\x07"));
    let mut s2c = frame(4, 0, 0, b"");
    s2c.extend(frame(1, 0x05, 1, &resp));
    s2c.extend(frame(7, 0, 0, b"\0\0\0\x01\0\0\0\x0b\x1b[2Jcalm"));
    let packets = vec![
        tcp(40001, 50051, 1000, SYN, b""),
        tcp(50051, 40001, 5000, SYN | ACK, b""),
        tcp(40001, 50051, 1001, PSH_ACK, &c2s),
        tcp(50051, 40001, 5001, PSH_ACK, &s2c),
    ];
    let p = tmp("controls.pcap", &pcap(101, &packets));
    let f = p.to_str().unwrap();
    let dangerous = |b: &[u8]| {
        b.iter().any(|&x| (x < 0x20 && x != b'\n') || x == 0x7f)
            || b.windows(2)
                .any(|w| w[0] == 0xc2 && (0x80..=0x9f).contains(&w[1]))
    };
    let mut seen = String::new();
    for args in [
        vec!["frames", f],
        vec!["calls", f],
        vec!["calls", f, "--wide"],
        vec!["replay", f, "--analyze"],
        vec!["compare", f, f],
    ] {
        let o = run(&args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert!(
            !dangerous(&o.stdout),
            "{args:?}: {:?}",
            String::from_utf8_lossy(&o.stdout)
        );
        assert!(!dangerous(&o.stderr), "{args:?}: {:?}", stderr(&o));
        seen.push_str(&String::from_utf8_lossy(&o.stdout));
        seen.push_str(&stderr(&o));
    }
    for shown in [
        "/\\x1b[2Jevil",
        "\\x1b]0;pwned\\x07\\xc2\\x9b\\x7f",
        "\\x1b[2Jcalm",
    ] {
        assert!(seen.contains(shown), "{shown} not in {seen}");
    }
    // JSON keeps the bytes: its strings escape control characters themselves.
    let o = run(&["frames", f, "-T", "jsonl"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("\\u001b]0;pwned\\u0007"));
    let v = records(&o.stdout, "frame");
    let evil = v
        .iter()
        .flat_map(|r| r["headers"].as_array().cloned().unwrap_or_default())
        .find(|h| h[0] == "x-evil")
        .expect("x-evil header");
    assert_eq!(evil[1], "\u{1b}]0;pwned\u{7}\u{9b}\u{7f}");
}
