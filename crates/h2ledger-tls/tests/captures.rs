//! Real TLS captures decrypted with the key logs their stacks wrote, against tshark's ledger
//! of the same file (`scripts/tshark-ledger.py CAPTURE --keylog KEYLOG`, Wireshark 4.0.17;
//! commands in captures/README.md). The captures are read by a small pcap/pcapng reader here
//! (this crate has no libpcap).

use std::path::{Path, PathBuf};

use h2ledger_core::{Ledger, LedgerReport, Tally};
use h2ledger_run::input::{key_log_of, Blocks, Found, Record};
use h2ledger_tcp::{link, Config as TcpConfig, Reassembler};
use h2ledger_tls::{Config, KeyLog, Status, Tls, TlsReport};
use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every packet of a capture (link type, time, bytes), read by h2ledger-run's reader of
/// records, as `replay` reads it.
fn packets(bytes: &[u8]) -> Vec<(i32, i64, Vec<u8>)> {
    let mut out = Vec::new();
    let (at, end) = Blocks::new().walk(bytes, |f| {
        if let Found::Packet {
            ts,
            linktype,
            start,
            len,
            ..
        } = f
        {
            out.push((i32::from(linktype), ts, bytes[start..start + len].to_vec()));
        }
    });
    assert!(
        matches!(end, Record::More { .. }) && at == bytes.len(),
        "{end:?} at byte {at} of {}: the whole capture is read",
        bytes.len()
    );
    out
}

/// Replays a capture through reassembly, the TLS layer and the ledger.
fn replay(capture: &Path, keylog: &str) -> (Value, TlsReport, Vec<(&'static str, String)>) {
    replay_stats(capture, keylog).0
}

type Replayed = (Value, TlsReport, Vec<(&'static str, String)>);

/// [`replay`], plus reassembly's counts of payload segments after a RST (all, ignored).
fn replay_stats(capture: &Path, keylog: &str) -> (Replayed, (u64, u64)) {
    replay_some(capture, keylog, |_| true)
}

/// [`replay_stats`] of the packets whose 1-based frame number passes `keep`.
fn replay_some(
    capture: &Path,
    keylog: &str,
    keep: impl Fn(usize) -> bool,
) -> (Replayed, (u64, u64)) {
    let bytes = std::fs::read(capture).unwrap_or_else(|e| panic!("{}: {e}", capture.display()));
    let mut tls = Tls::new(Config::default(), KeyLog::parse(keylog));
    let mut ledger = Ledger::new(Tally::new());
    let mut reasm = Reassembler::new(TcpConfig::default());
    let mut last = 0;
    for (i, (lt, ts, data)) in packets(&bytes).into_iter().enumerate() {
        if !keep(i + 1) {
            continue;
        }
        last = ts;
        if let Ok(Some(seg)) = link::decode(link::LinkType(lt), &data) {
            reasm.push(ts, &seg, &mut tls.layer(&mut ledger));
        }
    }
    reasm.finish(last, &mut tls.layer(&mut ledger));
    let warnings = tls.take_warnings().collect();
    let report = LedgerReport::build(&ledger.connections(), &ledger.observer);
    let stats = reasm.stats();
    (
        (
            serde_json::to_value(report).unwrap(),
            tls.report(),
            warnings,
        ),
        (stats.data_after_rst, stats.data_after_rst_ignored),
    )
}

const FRAMES: &[&str] = &[
    "HEADERS",
    "TRAILERS",
    "DATA",
    "WINDOW_UPDATE",
    "PING",
    "PING_ACK",
    "SETTINGS",
    "SETTINGS_ACK",
    "RST_STREAM",
    "GOAWAY",
    "PRIORITY",
    "PUSH_PROMISE",
    "CONTINUATION",
    "UNKNOWN",
];

/// The reference's keys (the contract plus tls_records) must all be equal.
fn assert_matches_tshark(what: &str, expected: &Value, actual: &Value) {
    let mut diffs = Vec::new();
    for k in ["connections", "calls"] {
        if expected[k] != actual[k] {
            diffs.push(format!("{k}: tshark {} ours {}", expected[k], actual[k]));
        }
    }
    for side in ["client", "server"] {
        let (e, a) = (&expected["sides"][side], &actual["sides"][side]);
        for k in ["bdp_pings", "writes", "bytes", "tls_records"] {
            if e[k] != a[k] {
                diffs.push(format!("{side}.{k}: tshark {} ours {}", e[k], a[k]));
            }
        }
        for f in FRAMES {
            if e["frames"][f] != a["frames"][f] {
                diffs.push(format!(
                    "{side}.{f}: tshark {} ours {}",
                    e["frames"][f], a["frames"][f]
                ));
            }
        }
    }
    assert!(
        diffs.is_empty(),
        "{what}: differs from tshark:\n  {}",
        diffs.join("\n  ")
    );
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn ours(name: &str) -> (Value, TlsReport, Vec<(&'static str, String)>) {
    let cap = root().join("captures").join(format!("{name}.pcap"));
    let keylog =
        std::fs::read_to_string(root().join("captures").join(format!("{name}.keylog"))).unwrap();
    replay(&cap, &keylog)
}

#[test]
fn curl_nghttpd_tls13_three_ciphers_equal_tshark() {
    let (ledger, tls, warnings) = ours("curl-nghttpd-tls13");
    let expected = read_json(&root().join("captures/curl-nghttpd-tls13.tshark.json"));
    assert_matches_tshark("curl-nghttpd-tls13", &expected, &ledger);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!((tls.connections, tls.decrypted), (3, 3));
    let mut ciphers: Vec<_> = tls
        .per_connection
        .iter()
        .map(|c| c.cipher.clone().unwrap())
        .collect();
    ciphers.sort();
    assert_eq!(
        ciphers,
        [
            "TLS_AES_128_GCM_SHA256",
            "TLS_AES_256_GCM_SHA384",
            "TLS_CHACHA20_POLY1305_SHA256"
        ]
    );
    for c in &tls.per_connection {
        assert_eq!(
            (c.version, c.alpn.as_deref(), c.status),
            (Some("TLS 1.3"), Some("h2"), Status::Decrypted)
        );
        assert_eq!(c.auth_failures, 0);
    }
}

#[test]
fn curl_nghttpd_tls12_three_ciphers_equal_tshark() {
    let (ledger, tls, warnings) = ours("curl-nghttpd-tls12");
    let expected = read_json(&root().join("captures/curl-nghttpd-tls12.tshark.json"));
    assert_matches_tshark("curl-nghttpd-tls12", &expected, &ledger);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!((tls.connections, tls.decrypted), (3, 3));
    let mut ciphers: Vec<_> = tls
        .per_connection
        .iter()
        .map(|c| c.cipher.clone().unwrap())
        .collect();
    ciphers.sort();
    assert_eq!(
        ciphers,
        [
            "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
            "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
            "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"
        ]
    );
    for c in &tls.per_connection {
        assert_eq!(
            (c.version, c.alpn.as_deref(), c.status),
            (Some("TLS 1.2"), Some("h2"), Status::Decrypted)
        );
    }
}

#[test]
fn decryption_secrets_block_gives_the_same_ledger() {
    let cap = root().join("captures/curl-nghttpd-tls13-dsb.pcapng");
    let bytes = std::fs::read(&cap).unwrap();
    let (text, blocks) = key_log_of(&bytes).unwrap();
    assert_eq!(blocks, 1);
    let file = std::fs::read_to_string(root().join("captures/curl-nghttpd-tls13.keylog")).unwrap();
    assert_eq!(text.trim_end(), file.trim_end());
    let (ledger, tls, _) = replay(&cap, &text);
    let expected = read_json(&root().join("captures/curl-nghttpd-tls13.tshark.json"));
    assert_matches_tshark("curl-nghttpd-tls13-dsb", &expected, &ledger);
    assert_eq!(tls.decrypted, 3);
}

/// ../shared/real-captures/tls, or `None` (with a message) when absent.
fn shared(name: &str) -> Option<PathBuf> {
    let p = root().join("../shared/real-captures/tls").join(name);
    if p.exists() {
        Some(p)
    } else {
        // CI has ../shared: there a missing capture is a failure, not a skip.
        assert!(
            std::env::var("CI").map_or(true, |v| v != "true"),
            "{} is absent under CI=true",
            p.display()
        );
        eprintln!("skipped: {} is absent", p.display());
        None
    }
}

/// tshark's ledger of a shared capture, made once by scripts/tshark-ledger.py --keylog and
/// kept beside our tests (the shared directory is read-only and not ours).
fn shared_reference(name: &str) -> Value {
    read_json(
        &root()
            .join("crates/h2ledger-tls/tests/reference")
            .join(format!("{name}.tshark.json")),
    )
}

/// Firefox to www.facebook.com, TLS 1.3: keys from the .keylog file and, separately, from
/// the Decryption Secrets Block embedded in the pcapng; both give the same ledger.
///
/// tshark 4.0 with its defaults decrypts none of the server's frames: frames 7/8 (and 22/24,
/// 60/61) arrive out of order and `tcp.reassemble_out_of_order` is off, so the server's
/// handshake records are lost to it and decryption of that side stops (the default reference
/// shows 0 server frames, 3 server records). With `--reassemble-out-of-order` tshark agrees
/// with us, including what the server sent after the client's RST (frame 109): frames 110
/// (39 bytes: the record carrying GOAWAY) and 112 (24 bytes: the closing alert), bytes it
/// wrote before the RST reached it; `tcp.data_after_rst` counts them (2), none ignored.
#[test]
fn shared_firefox_tls13_facebook_equals_tshark() {
    let Some(cap) = shared("p2h-firefox-tls13-facebook-dsb.pcapng") else {
        return;
    };
    let keylog = std::fs::read_to_string(cap.with_extension("keylog")).unwrap();
    let default = shared_reference("p2h-firefox-tls13-facebook-dsb");
    assert_eq!(default["sides"]["server"]["tls_records"], 3);
    let expected = shared_reference("p2h-firefox-tls13-facebook-dsb.ooo");
    assert_eq!(expected["sides"]["server"]["frames"]["GOAWAY"], 1);
    let ((ledger, tls, warnings), after_rst) = replay_stats(&cap, &keylog);
    assert_eq!(after_rst, (2, 0));
    assert_matches_tshark("firefox-tls13-facebook (.keylog)", &expected, &ledger);
    assert!(warnings.is_empty(), "{warnings:?}");
    let (text, blocks) = key_log_of(&std::fs::read(&cap).unwrap()).unwrap();
    assert_eq!(blocks, 1);
    let (ledger2, _, _) = replay(&cap, &text);
    assert_matches_tshark("firefox-tls13-facebook (DSB)", &expected, &ledger2);
    let c = &tls.per_connection[0];
    assert_eq!(
        (c.version, c.cipher.as_deref(), c.alpn.as_deref(), c.status),
        (
            Some("TLS 1.3"),
            Some("TLS_AES_128_GCM_SHA256"),
            Some("h2"),
            Status::Decrypted
        )
    );
}

/// A browser to ajax.googleapis.com (TLS 1.3, AES-128-GCM; the key log holds 95 lines for 19
/// client randoms, most of them other connections).
#[test]
fn shared_browser_tls13_google_equals_tshark() {
    let Some(cap) = shared("p2h-http2-dump.pcapng") else {
        return;
    };
    let keylog = std::fs::read_to_string(cap.with_extension("keylog")).unwrap();
    let expected = shared_reference("p2h-http2-dump");
    let (ledger, tls, warnings) = replay(&cap, &keylog);
    assert_matches_tshark("http2-dump", &expected, &ledger);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        (tls.connections, tls.decrypted, tls.keylog_randoms),
        (1, 1, 19)
    );
    let c = &tls.per_connection[0];
    assert_eq!(
        (c.version, c.cipher.as_deref(), c.alpn.as_deref()),
        (Some("TLS 1.3"), Some("TLS_AES_128_GCM_SHA256"), Some("h2"))
    );
}

/// openssl s_client against nghttpd: KeyUpdate in both directions (the client updates twice,
/// asking nghttpd once to update too) and, on the second connection, a HelloRetryRequest.
#[test]
fn key_updates_and_hello_retry_request_equal_tshark() {
    let (ledger, tls, warnings) = ours("openssl-nghttpd-tls13-keyupdate");
    let expected = read_json(&root().join("captures/openssl-nghttpd-tls13-keyupdate.tshark.json"));
    assert_matches_tshark("openssl-nghttpd-tls13-keyupdate", &expected, &ledger);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        (tls.connections, tls.decrypted, tls.auth_failures),
        (2, 2, 0)
    );
    for c in &tls.per_connection {
        assert_eq!(c.key_updates, 3, "{c:?}");
    }
    // Each PING (sent after a KeyUpdate) is answered under the peer's updated key.
    assert_eq!(ledger["sides"]["server"]["frames"]["PING_ACK"], 4);
}

fn kinds(w: &[(&'static str, String)]) -> Vec<&'static str> {
    w.iter().map(|(k, _)| *k).collect()
}

/// Frame numbers below are those of tshark on captures/curl-nghttpd-tls13.pcap (connection 0:
/// ClientHello 4, HelloRetryRequest 6, second ClientHello 8, ServerHello + encrypted
/// handshake 9, client Finished 10, application data from 11; frame 21 carries 16 406 bytes
/// of the server's application data).
fn tls13(keep: impl Fn(usize) -> bool) -> Replayed {
    let cap = root().join("captures/curl-nghttpd-tls13.pcap");
    let keylog =
        std::fs::read_to_string(root().join("captures/curl-nghttpd-tls13.keylog")).unwrap();
    replay_some(&cap, &keylog, keep).0
}

#[test]
fn capture_starting_after_the_handshake_cannot_be_decrypted_and_says_so() {
    let (ledger, tls, warnings) = tls13(|f| f > 10);
    assert_eq!(
        (tls.connections, tls.no_handshake, tls.decrypted),
        (3, 1, 2),
        "{warnings:?}"
    );
    assert_eq!(kinds(&warnings), ["tls-no-handshake"]);
    assert!(
        warnings[0].1.contains("no way to decrypt"),
        "{}",
        warnings[0].1
    );
    assert_eq!(ledger["connections"], 2);
}

#[test]
fn a_handshake_cut_short_is_reported() {
    // Up to the HelloRetryRequest: no ServerHello ever completes.
    let (_, tls, warnings) = tls13(|f| f <= 6);
    assert_eq!((tls.connections, tls.truncated_handshake), (1, 1));
    assert_eq!(kinds(&warnings), ["tls-truncated-handshake"]);
    assert!(warnings[0].1.contains("ServerHello"), "{}", warnings[0].1);
    // Cut inside the ClientHello record (its packet missing, the SYN seen).
    let (_, tls, warnings) = tls13(|f| f != 4 && f <= 9);
    assert_eq!(
        (tls.connections, tls.truncated_handshake),
        (1, 1),
        "{warnings:?}"
    );
    assert!(kinds(&warnings).contains(&"tls-gap"), "{warnings:?}");
}

#[test]
fn a_lost_segment_stops_that_direction_with_a_warning() {
    let (ledger, tls, warnings) = tls13(|f| f != 21);
    assert!(kinds(&warnings).contains(&"tls-gap"), "{warnings:?}");
    assert_eq!(tls.decrypted, 3);
    let c0 = tls.per_connection.iter().find(|c| c.id == 0).unwrap();
    assert!(
        c0.encrypted_bytes[1] > 0 && c0.encrypted_bytes[0] == 0,
        "{c0:?}"
    );
    assert_eq!(ledger["connections"], 3);
}

/// Dropping any one packet of connection 0's first 30 never panics, and the other two
/// connections are still decrypted.
#[test]
fn dropping_any_single_packet_is_survived() {
    let full = tls13(|_| true);
    for drop in 1..=30 {
        let (_, tls, _) = tls13(|f| f != drop);
        assert!(tls.decrypted >= 2, "packet {drop}: {tls:?}");
        assert_eq!(tls.connections, full.1.connections, "packet {drop}");
    }
}

/// Live: the key log grows while we watch. With `wait_for_keys`, records of a client random
/// the key log does not know yet are held, and decrypted in order once the keys are added;
/// the ledger equals tshark's. Keys arrive in two steps here (handshake secrets at the
/// ServerHello, frame 9; the traffic secrets after frame 14, while the first connection's
/// application data is held), as a TLS 1.3 client writes them.
#[test]
fn keys_that_arrive_late_decrypt_the_held_records() {
    let cap = root().join("captures/curl-nghttpd-tls13.pcap");
    let text = std::fs::read_to_string(root().join("captures/curl-nghttpd-tls13.keylog")).unwrap();
    let (hs, rest): (Vec<&str>, Vec<&str>) = text.lines().partition(|l| l.contains("HANDSHAKE"));
    let bytes = std::fs::read(&cap).unwrap();
    let cfg = Config {
        wait_for_keys: true,
        ..Config::default()
    };
    let mut tls = Tls::new(cfg, KeyLog::new());
    let mut ledger = Ledger::new(Tally::new());
    let mut reasm = Reassembler::new(TcpConfig::default());
    let mut last = 0;
    let mut waited = false;
    for (i, (lt, ts, data)) in packets(&bytes).into_iter().enumerate() {
        last = ts;
        if let Ok(Some(seg)) = link::decode(link::LinkType(lt), &data) {
            reasm.push(ts, &seg, &mut tls.layer(&mut ledger));
        }
        waited |= tls.waiting_for_keys();
        if i + 1 == 9 {
            tls.layer(&mut ledger).add_keys(&(hs.join("\n") + "\n"));
        }
        if i + 1 == 14 {
            assert!(tls.waiting_for_keys());
            tls.layer(&mut ledger).add_keys(&(rest.join("\n") + "\n"));
            assert!(!tls.waiting_for_keys());
        }
    }
    assert!(waited);
    reasm.finish(last, &mut tls.layer(&mut ledger));
    let warnings: Vec<_> = tls.take_warnings().collect();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(tls.report().decrypted, 3);
    let report =
        serde_json::to_value(LedgerReport::build(&ledger.connections(), &ledger.observer)).unwrap();
    let expected = read_json(&root().join("captures/curl-nghttpd-tls13.tshark.json"));
    assert_matches_tshark("keys added late", &expected, &report);
}

/// Go net/http client and server (HTTP/2 by ALPN), keys from tls.Config.KeyLogWriter: TLS 1.2
/// ECDHE-RSA-CHACHA20-POLY1305 on one connection, TLS 1.3 on the other (captures/src/go-tls).
#[test]
fn go_nethttp_tls12_chacha_and_tls13_equal_tshark() {
    let (ledger, tls, warnings) = ours("go-nethttp-tls");
    let expected = read_json(&root().join("captures/go-nethttp-tls.tshark.json"));
    assert_matches_tshark("go-nethttp-tls", &expected, &ledger);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!((tls.connections, tls.decrypted), (2, 2));
    let got: Vec<_> = tls
        .per_connection
        .iter()
        .map(|c| {
            (
                c.version.unwrap(),
                c.cipher.clone().unwrap(),
                c.alpn.clone().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                "TLS 1.2",
                "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256".to_string(),
                "h2".to_string()
            ),
            (
                "TLS 1.3",
                "TLS_AES_128_GCM_SHA256".to_string(),
                "h2".to_string()
            )
        ]
    );
}

/// hyper-h2 over Python's ssl (SSLContext.keylog_filename, whose first line is a comment)
/// against nghttpd: TLS 1.2 ECDHE-RSA-AES256-GCM-SHA384, then TLS 1.3; 5 multiplexed GETs each.
/// tonic over rustls (crates/h2ledger-workload --tls), keys from rustls' KeyLogFile.
#[test]
fn tonic_rustls_tls13_equals_tshark() {
    let (ledger, tls, warnings) = ours("tonic-tls");
    let expected = read_json(&root().join("captures/tonic-tls.tshark.json"));
    assert_matches_tshark("tonic-tls", &expected, &ledger);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!((tls.connections, tls.decrypted), (1, 1));
    let c = &tls.per_connection[0];
    assert_eq!(
        (c.version, c.cipher.as_deref(), c.alpn.as_deref()),
        (Some("TLS 1.3"), Some("TLS_AES_256_GCM_SHA384"), Some("h2"))
    );
}

#[test]
fn python_h2_tls12_and_tls13_equal_tshark() {
    let (ledger, tls, warnings) = ours("python-h2-nghttpd-tls");
    let expected = read_json(&root().join("captures/python-h2-nghttpd-tls.tshark.json"));
    assert_matches_tshark("python-h2-nghttpd-tls", &expected, &ledger);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!((tls.connections, tls.decrypted), (2, 2));
    assert_eq!(tls.keylog.skipped_lines, 1, "the comment line");
    let got: Vec<_> = tls
        .per_connection
        .iter()
        .map(|c| (c.version.unwrap(), c.cipher.clone().unwrap()))
        .collect();
    assert_eq!(
        got[0],
        (
            "TLS 1.2",
            "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384".to_string()
        )
    );
    assert_eq!(got[1].0, "TLS 1.3");
}
