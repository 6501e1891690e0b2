//! HTTP/2 over TLS through the binary: `--keylog FILE` on replay, calls and frames, keys from
//! a pcapng Decryption Secrets Block, the `tls` JSON object and `tls_records` per side, and
//! what happens without keys or with the wrong ones. The captures are curl (OpenSSL 3,
//! SSLKEYLOGFILE) against nghttpd, made by scripts/make-tls-captures.sh; references come from
//! `scripts/tshark-ledger.py CAPTURE --keylog KEYLOG` (captures/README.md).

use std::process::Command;

use serde_json::Value;

use crate::util::*;

fn path(name: &str) -> String {
    capture(name).to_str().unwrap().to_string()
}

/// The contract keys and `tls_records` per side equal the reference's.
fn assert_tls_ledger_eq(what: &str, expected: &Value, actual: &Value) {
    assert_ledger_eq(what, expected, actual);
    for side in ["client", "server"] {
        assert_eq!(
            expected["sides"][side]["tls_records"], actual["sides"][side]["tls_records"],
            "{what}: {side} tls_records"
        );
    }
}

/// `scripts/tshark-ledger.py CAPTURE --keylog KEYLOG`, run now.
fn tshark_now(cap: &str, keylog: &str) -> Value {
    let out = Command::new("python3")
        .arg(repo().join("scripts/tshark-ledger.py"))
        .args([cap, "--keylog", keylog])
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Wireshark's own TLS 1.2 key log form, `RSA Session-ID:<id> Master-Key:<secret>`
/// (captures/curl-nghttpd-tls12.session.keylog: the same master secrets as the capture's
/// SSLKEYLOGFILE, by each ServerHello's session id) decrypts what the NSS form does, as tshark
/// reads it (issue 36: both lines were skipped, and the headline said "no key log given").
#[test]
fn wiresharks_session_id_key_log_is_read() {
    let name = "curl-nghttpd-tls12";
    let session = path(&format!("{name}.session.keylog"));
    let ours = replay_json(&path(&format!("{name}.pcap")), &["--keylog", &session]);
    let reference = read_json(&capture(&format!("{name}.tshark.json")));
    assert_tls_ledger_eq(name, &reference, &ours);
    let tls = &ours["tls"];
    assert_eq!(n(&tls["decrypted"]), 3, "{tls}");
    assert_eq!(n(&tls["keylog"]["key_lines"]), 3, "{tls}");
    assert_eq!(
        n(&tls["keylog"]["skipped_lines"]),
        1,
        "the comment line: {tls}"
    );
    if have("tshark") {
        let theirs = tshark_now(&path(&format!("{name}.pcap")), &session);
        assert_tls_ledger_eq(name, &theirs, &ours);
    }
}

#[test]
fn replay_with_keylog_equals_the_tshark_reference() {
    for name in ["curl-nghttpd-tls13", "curl-nghttpd-tls12"] {
        let keylog = path(&format!("{name}.keylog"));
        let ours = replay_json(&path(&format!("{name}.pcap")), &["--keylog", &keylog]);
        let reference = read_json(&capture(&format!("{name}.tshark.json")));
        assert_tls_ledger_eq(name, &reference, &ours);
        let tls = &ours["tls"];
        assert_eq!(
            (n(&tls["connections"]), n(&tls["decrypted"])),
            (3, 3),
            "{name}: {tls}"
        );
        assert_eq!(n(&tls["keylog"]["skipped_lines"]), 0);
        for c in tls["per_connection"].as_array().unwrap() {
            assert_eq!(c["status"], "decrypted");
            assert_eq!(c["alpn"], "h2");
        }
        assert_eq!(
            ours["warnings"].as_array().unwrap().len(),
            0,
            "{name}: {}",
            ours["warnings"]
        );
    }
}

/// The reference recomputed by tshark now (skipped without tshark).
#[test]
fn replay_with_keylog_equals_tshark_now() {
    if !have("tshark") {
        crate::util::skipped(
            "SKIPPED: tshark is not installed (apt-get install tshark); CI installs it",
        );
        return;
    }
    for name in ["curl-nghttpd-tls13", "curl-nghttpd-tls12"] {
        let (cap, keylog) = (
            path(&format!("{name}.pcap")),
            path(&format!("{name}.keylog")),
        );
        let reference = tshark_now(&cap, &keylog);
        let ours = replay_json(&cap, &["--keylog", &keylog]);
        assert_tls_ledger_eq(&format!("{name} vs tshark"), &reference, &ours);
    }
}

/// A real gRPC stack over TLS: tonic on rustls (crates/h2ledger-workload --tls), the key log
/// written by rustls' KeyLogFile (scripts/make-tls-captures.sh tonic-tls). Every count equals
/// the tshark reference and tshark now (when installed), and the calls the workload made.
#[test]
fn tonic_over_rustls_equals_tshark() {
    let (cap, keylog) = (path("tonic-tls.pcap"), path("tonic-tls.keylog"));
    let ours = replay_json(&cap, &["--keylog", &keylog]);
    let reference = read_json(&capture("tonic-tls.tshark.json"));
    assert_tls_ledger_eq("tonic-tls", &reference, &ours);
    let workload = read_json(&capture("tonic-tls.workload.json"));
    assert_eq!(n(&ours["calls"]), n(&workload["calls_made"]));
    let c = &ours["tls"]["per_connection"][0];
    assert_eq!(
        (&c["version"], &c["cipher"], &c["alpn"], &c["status"]),
        (
            &Value::from("TLS 1.3"),
            &Value::from("TLS_AES_256_GCM_SHA384"),
            &Value::from("h2"),
            &Value::from("decrypted")
        )
    );
    assert_eq!(ours["warnings"].as_array().unwrap().len(), 0);
    if !have("tshark") {
        eprintln!(
            "tonic_over_rustls: tshark not installed, compared with the stored reference only"
        );
        return;
    }
    assert_tls_ledger_eq("tonic-tls vs tshark", &tshark_now(&cap, &keylog), &ours);
}

/// The table's `tls_records` row: per side, as the JSON, and only when TLS was seen.
#[test]
fn the_table_has_tls_records_per_side_only_on_tls() {
    let row = |args: &[&str]| {
        let out = run(args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .find(|l| l.contains("tls_records"))
            .map(|l| {
                l.split('│')
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .map(String::from)
                    .collect::<Vec<_>>()
            })
    };
    let (cap, keylog) = (path("tonic-tls.pcap"), path("tonic-tls.keylog"));
    let json = replay_json(&cap, &["--keylog", &keylog]);
    let want = vec![
        "tls_records".to_string(),
        n(&json["sides"]["client"]["tls_records"]).to_string(),
        n(&json["sides"]["server"]["tls_records"]).to_string(),
    ];
    assert_eq!(want[1..], ["86", "51"]);
    assert_eq!(
        row(&["replay", &cap, "--keylog", &keylog]),
        Some(want.clone())
    );
    assert_eq!(row(&["replay", &path("grpcgo-article.pcap")]), None);
}

#[test]
fn keys_embedded_in_pcapng_need_no_keylog_flag() {
    let ours = replay_json(&path("curl-nghttpd-tls13-dsb.pcapng"), &[]);
    let reference = read_json(&capture("curl-nghttpd-tls13.tshark.json"));
    assert_tls_ledger_eq("curl-nghttpd-tls13-dsb", &reference, &ours);
    assert_eq!(n(&ours["tls"]["decrypted"]), 3);
}

#[test]
fn without_keys_one_warning_per_connection_says_how_to_get_them() {
    let ours = replay_json(&path("curl-nghttpd-tls12.pcap"), &[]);
    assert_eq!(n(&ours["connections"]), 0);
    assert_eq!(n(&ours["tls"]["without_key"]), 3);
    assert_eq!(n(&ours["anomalies"]["tls-no-key"]), 3);
    let warnings: Vec<&str> = ours["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w.as_str())
        .filter(|w| w.contains("TLS with ALPN h2 seen"))
        .collect();
    assert_eq!(warnings.len(), 3, "{warnings:?}");
    for w in warnings {
        for needle in [
            "bytes encrypted",
            "--keylog FILE",
            "SSLKEYLOGFILE",
            "KeyLogWriter",
            "keylog_filename",
        ] {
            assert!(w.contains(needle), "{needle} missing in: {w}");
        }
    }
}

/// A key log of other connections: each warning names the client random it lacks.
#[test]
fn a_keylog_for_other_connections_names_the_missing_client_random() {
    let other = path("curl-nghttpd-tls13.keylog");
    let ours = replay_json(&path("curl-nghttpd-tls12.pcap"), &["--keylog", &other]);
    assert_eq!(n(&ours["tls"]["without_key"]), 3);
    let randoms: Vec<String> = ours["tls"]["per_connection"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["client_random"].as_str().unwrap().to_string())
        .collect();
    let text = ours["warnings"].to_string();
    for r in &randoms {
        assert!(
            text.contains(&format!("no usable secret for client random {r}")),
            "{r}: {text}"
        );
    }
}

/// A key log whose secrets are wrong: authentication fails, is counted, and that direction
/// stops with a warning (no panic, exit 0).
#[test]
fn a_wrong_secret_fails_authentication_and_is_counted() {
    let text = std::fs::read_to_string(capture("curl-nghttpd-tls12.keylog")).unwrap();
    // Flip the last hex digit of every master secret.
    let bad: String = text
        .lines()
        .map(|l| {
            let mut l = l.to_string();
            let last = l.pop().unwrap();
            l.push(if last == '0' { '1' } else { '0' });
            l + "\n"
        })
        .collect();
    let dir = scratch("tls-bad");
    std::fs::create_dir_all(&dir).unwrap();
    let keylog = dir.join("bad.keylog");
    std::fs::write(&keylog, bad).unwrap();
    let ours = replay_json(
        &path("curl-nghttpd-tls12.pcap"),
        &["--keylog", keylog.to_str().unwrap()],
    );
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(n(&ours["connections"]), 0);
    // Each side's first protected record (its Finished) fails, once per side.
    assert_eq!(n(&ours["tls"]["auth_failures"]), 6, "{}", ours["tls"]);
    assert_eq!(n(&ours["tls"]["auth_failed"]), 3);
    assert_eq!(n(&ours["anomalies"]["tls-auth-failure"]), 6);
}

#[test]
fn a_missing_keylog_file_is_one_line_and_exit_2() {
    let out = run(&[
        "replay",
        &path("curl-nghttpd-tls12.pcap"),
        "--keylog",
        "/nonexistent/keys.log",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("/nonexistent/keys.log") && err.contains("key log"),
        "{err}"
    );
}

#[test]
fn calls_and_frames_take_keylog_too() {
    let (cap, keylog) = (
        path("curl-nghttpd-tls13.pcap"),
        path("curl-nghttpd-tls13.keylog"),
    );
    let out = run(&["calls", &cap, "--keylog", &keylog, "--format", "jsonl"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(records(&out.stdout, "call").len(), 12);
    let out = run(&["frames", &cap, "--keylog", &keylog, "--format", "jsonl"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reference = read_json(&capture("curl-nghttpd-tls13.tshark.json"));
    let mut frames = 0;
    for s in ["client", "server"] {
        for k in FRAME_KEYS {
            frames += n(&reference["sides"][s]["frames"][k]);
        }
    }
    assert_eq!(records(&out.stdout, "frame").len() as u64, frames);
}

/// The shared browser capture (TLS 1.3 to Google, its key log holds 19 client randoms):
/// equal to the tshark reference kept in crates/h2ledger-tls/tests/reference.
#[test]
fn shared_browser_capture_with_its_keylog() {
    let cap = repo().join("../shared/real-captures/tls/p2h-http2-dump.pcapng");
    if !cap.exists() {
        crate::util::skipped(&format!("SKIPPED: {} is absent", cap.display()));
        return;
    }
    let reference =
        read_json(&repo().join("crates/h2ledger-tls/tests/reference/p2h-http2-dump.tshark.json"));
    // The pcapng embeds the same key log: with and without --keylog.
    let keylog = cap.with_extension("keylog");
    for extra in [vec!["--keylog", keylog.to_str().unwrap()], vec![]] {
        let ours = replay_json(cap.to_str().unwrap(), &extra);
        assert_tls_ledger_eq("p2h-http2-dump", &reference, &ours);
    }
}

/// Live (root): `sniff --keylog FILE` while curl fetches three files over one TLS 1.3
/// connection from nghttpd, writing FILE (which does not exist when sniff starts) through
/// SSLKEYLOGFILE. The keys arrive while the records are held; the ledger is the cleartext one.
#[test]
fn sniff_with_keylog_while_curl_fetches_over_tls() {
    if !is_root() || !have("nghttpd") || !have("curl") || !have("openssl") {
        crate::util::skipped("SKIPPED sniff_with_keylog: needs root, nghttpd, curl and openssl");
        return;
    }
    use std::process::Stdio;
    let dir = scratch("tls-live");
    std::fs::create_dir_all(&dir).unwrap();
    let (key, cert, keylog) = (
        dir.join("key.pem"),
        dir.join("cert.pem"),
        dir.join("keys.log"),
    );
    let ok = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-keyout",
        ])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(ok.success());
    std::fs::write(dir.join("index.html"), "<html>h2ledger</html>\n").unwrap();
    std::fs::write(dir.join("big.bin"), vec![7u8; 200_000]).unwrap();
    // nghttpd cannot bind port 0: a free port, retried.
    let (mut server, port) = (0..5)
        .find_map(|_| {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let mut child = Command::new("nghttpd")
                .args(["-a", "127.0.0.1", "-d"])
                .arg(&dir)
                .arg(port.to_string())
                .arg(&key)
                .arg(&cert)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            for _ in 0..50 {
                if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return Some((child, port));
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            let _ = child.kill();
            let _ = child.wait();
            None
        })
        .expect("nghttpd starts");
    let mut sniff = Command::new(bin())
        .args([
            "sniff",
            "--port",
            &port.to_string(),
            "--format",
            "json",
            "--keylog",
        ])
        .arg(&keylog)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let line = listening_line(&mut sniff);
    assert!(line.contains("listening on"), "sniff said: {line}");
    let u = format!("https://127.0.0.1:{port}");
    let curl = Command::new("curl")
        .env("SSLKEYLOGFILE", &keylog)
        .args([
            "-sS",
            "-k",
            "--http2",
            "--tlsv1.3",
            "-o",
            "/dev/null",
            "-o",
            "/dev/null",
            "-o",
            "/dev/null",
        ])
        .args([
            format!("{u}/index.html"),
            format!("{u}/big.bin"),
            format!("{u}/index.html"),
        ])
        .output()
        .unwrap();
    assert!(
        curl.status.success(),
        "curl: {}",
        String::from_utf8_lossy(&curl.stderr)
    );
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(Command::new("kill")
        .args(["-TERM", &sniff.id().to_string()])
        .status()
        .unwrap()
        .success());
    let out = sniff.wait_with_output().unwrap();
    let _ = server.kill();
    let _ = server.wait();
    std::fs::remove_dir_all(&dir).ok();
    assert!(out.status.success(), "sniff exit status {:?}", out.status);
    let v: Value = serde_json::from_slice(&out.stdout).expect("sniff prints one JSON ledger");
    assert_eq!(n(&v["tls"]["decrypted"]), 1, "{}", v["tls"]);
    assert_eq!(n(&v["connections"]), 1, "{}", v["warnings"]);
    assert_eq!(n(&v["calls"]), 3);
    assert_eq!(n(&v["sides"]["client"]["frames"]["HEADERS"]), 3);
    assert_eq!(n(&v["sides"]["server"]["frames"]["HEADERS"]), 3);
    assert!(n(&v["sides"]["server"]["frames"]["DATA"]) >= 3);
    assert!(n(&v["sides"]["client"]["tls_records"]) > 0);
    assert_eq!(n(&v["drops"]["kernel"]), 0);
}
