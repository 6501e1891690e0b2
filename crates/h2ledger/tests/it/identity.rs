//! Issue 36, what a connection is: TCP that is not HTTP/2 beside HTTP/2, replayed without
//! `--port` (real programs' traffic, captures/not-http2/), and the subset of `just stress`
//! that runs here (scripts/gen-capture.py, made when the test runs): more connections open at
//! once than `--max-connections`, over IPv4 and IPv6, and 2^17 open streams on one connection.
//! Each case failed on 6d486e5 (decisions 282 to 286).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::util::{read_json, replay_json, repo, scratch};

/// `h2ledger replay FILE --format json ARGS...` ([`crate::util::replay_json`]).
fn replay(file: &Path, extra: &[&str]) -> Value {
    replay_json(&file.to_string_lossy(), extra)
}

fn ids(v: &Value) -> Vec<&str> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect()
}

/// A capture of `scripts/gen-capture.py KIND N` in this run's scratch directory.
fn generated(kind: &str, n: u64) -> std::path::PathBuf {
    let out = scratch(&format!("gen-{kind}-{n}.pcap"));
    if !out.exists() {
        let st = Command::new("python3")
            .arg(repo().join("scripts/gen-capture.py"))
            .args([kind, &n.to_string()])
            .arg(&out)
            .status()
            .expect("python3 runs scripts/gen-capture.py");
        assert!(st.success(), "gen-capture.py {kind} {n}");
    }
    out
}

/// PostgreSQL, Redis, DNS over TCP, SSH, TLS and SMB2 beside one nghttpd connection
/// (scripts/make-mixed-capture.sh): without `--port` only the HTTP/2 connection is counted,
/// its ledger equal to tshark's (`mixed.tshark.json`, with `--port`), and no finding speaks of
/// the others. On 6d486e5 both SMB2 connections were HTTP/2 joined mid-stream, with DATA on
/// stream 268,435,968, `mid-stream` and `empty-frames-flood`.
#[test]
fn other_protocols_are_never_http2() {
    let dir = repo().join("captures/not-http2");
    let v = replay(&dir.join("mixed.pcap"), &[]);
    let t = read_json(&dir.join("mixed.tshark.json"));
    assert_eq!(v["connections"], 1, "{:#}", v["per_connection"]);
    assert_eq!(v["calls"], t["calls"]);
    for side in ["client", "server"] {
        for (k, n) in t["sides"][side]["frames"].as_object().unwrap() {
            assert_eq!(v["sides"][side]["frames"][k], *n, "{side} {k}");
        }
    }
    assert_eq!(ids(&v), ["flow-stall"], "{:#}", v["findings"]);
    assert_eq!(v["anomalies"], serde_json::json!({}), "{:#}", v["warnings"]);
    // The TLS connections (openssl s_client, no ALPN) are no HTTP/2 a key would show.
    assert_eq!(v["tls"]["without_key_h2"], 0);

    // The same with every SYN removed (`tshark -Y 'not tcp.flags.syn==1' -w`): all of them
    // joined mid-stream, and still only the one connection is HTTP/2.
    let v = replay(&dir.join("mixed-nosyn.pcap"), &[]);
    assert_eq!(v["connections"], 1, "{:#}", v["per_connection"]);
    assert_eq!(v["calls"], 2);
    assert_eq!(ids(&v), ["mid-stream"], "{:#}", v["findings"]);
    let c = &v["per_connection"][0];
    assert_eq!(c["server"], format!("127.0.0.1:{}", h2_port(&dir)));
}

fn h2_port(dir: &Path) -> u16 {
    let ports = std::fs::read_to_string(dir.join("mixed.ports")).unwrap();
    ports
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix("h2="))
        .unwrap()
        .parse()
        .unwrap()
}

/// 10,000 connections on one port, every handshake first, then every request, then every
/// response, never closed: more than `--max-connections` (4,096) open at once, so each is
/// evicted and comes back, some twice. Each is one HTTP/2 connection with its call, none
/// mid-stream (on 6d486e5: `0 HTTP/2 connections, 10000 calls`, and `mid-stream` for 10,000).
#[test]
fn connections_evicted_and_back_are_counted_once() {
    for kind in ["handshakes", "handshakes6"] {
        let v = replay(&generated(kind, 10_000), &[]);
        assert_eq!(v["connections"], 10_000, "{kind}");
        assert_eq!(v["calls"], 10_000, "{kind}");
        for side in ["client", "server"] {
            assert_eq!(
                v["sides"][side]["frames"]["HEADERS"], 10_000,
                "{kind} {side}"
            );
            assert_eq!(
                v["sides"][side]["frames"]["SETTINGS"], 10_000,
                "{kind} {side}"
            );
        }
        assert_eq!(
            v["sides"]["server"]["frames"]["SETTINGS_ACK"], 10_000,
            "{kind}"
        );
        assert_eq!(ids(&v), Vec::<&str>::new(), "{kind}: {:#}", v["findings"]);
        assert!(
            v["tcp"]["evicted"].as_u64().unwrap() >= 10_000 - 4_096,
            "{kind}"
        );
        assert!(v["anomalies"].get("mid-stream").is_none(), "{kind}");
        // The cap that was hit is said: the evicted connections whose state was folded.
        assert!(
            v["anomalies"]["evicted-folded"].as_u64().unwrap() > 0,
            "{kind}"
        );
    }
}

/// 10,000 connections of a binary protocol that is not HTTP/2, more than `--max-connections`
/// open at once: each evicted after its first message and back with a second that holds three
/// chained, plausible frame heads. Held from their start, none is HTTP/2, before an eviction
/// or after (a folded direction keeps the proofs of a stream's start, decision 283).
#[test]
fn other_protocols_evicted_and_back_stay_other() {
    let v = replay(&generated("other", 10_000), &[]);
    assert_eq!(v["connections"], 0, "{:#}", v["anomalies"]);
    assert_eq!(ids(&v), Vec::<&str>::new(), "{:#}", v["findings"]);
    assert!(
        v["anomalies"].get("mid-stream").is_none(),
        "{:#}",
        v["anomalies"]
    );
}

/// One connection opening 2^17 + 10 streams (HEADERS, END_HEADERS, never ended), the last 10
/// answered with headers and trailers: every call counted, HEADERS and TRAILERS exact although
/// more streams are open than the stream tables follow (`MAX_OPEN_STREAMS`, 32,768), and the
/// caps that were hit said.
#[test]
fn more_open_streams_than_followed() {
    let n = (1 << 17) + 10;
    let v = replay(&generated("streams", 1 << 17), &[]);
    assert_eq!(v["connections"], 1);
    assert_eq!(v["calls"], n);
    assert_eq!(v["sides"]["client"]["frames"]["HEADERS"], n);
    assert_eq!(v["sides"]["server"]["frames"]["HEADERS"], 10);
    assert_eq!(v["sides"]["server"]["frames"]["TRAILERS"], 10);
    assert_eq!(v["anomalies"]["streams-cap"], 1, "{:#}", v["anomalies"]);
    assert!(v["anomalies"]["findings-streams-cap"].as_u64().unwrap() > 0);
}
