//! OpenSSL and BoringSSL (issue 37): the probe points in the real files on this machine
//! (Debian 12's stripped libssl.so.3, node 20's static OpenSSL with symbols, PyPI's grpcio
//! wheel with a stripped static BoringSSL), a file whose call sites were made to disagree, and
//! live: every secret delivered equals the program's own key log (curl's SSLKEYLOGFILE, Node's
//! `--tls-keylog`), or, for grpcio (no key log to ask for), the server's secrets equal the
//! client's, each read from its own process. Root only for the live tests; a missing program
//! skips with a reason, and fails under CI.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use h2ledger_keys::{find_ssl_probe, KeySource, SslError};

use crate::live::is_root;
use crate::peers::skip;

const LIBSSL: &str = "/usr/lib/x86_64-linux-gnu/libssl.so.3";
const NODE: &str = "/usr/bin/node";

/// The grpcio wheel's Python: `H2LEDGER_GRPCIO_PYTHON`, else the venv scripts/grpcio-wheel.sh
/// makes.
fn grpcio_python() -> PathBuf {
    std::env::var_os("H2LEDGER_GRPCIO_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/h2l-grpcio-venv/bin/python"))
}

fn cygrpc() -> Option<PathBuf> {
    let out = Command::new(grpcio_python())
        .args(["-c", "import grpc._cython.cygrpc as c; print(c.__file__)"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

fn tmp(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("openssl")
        .join(std::process::id().to_string());
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// A self-signed certificate for localhost (openssl req), once per test process.
fn cert() -> (PathBuf, PathBuf) {
    let (key, cert) = (tmp("key.pem"), tmp("cert.pem"));
    if !cert.exists() {
        let ok = Command::new("openssl")
            .args([
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            ])
            .args([
                "-subj",
                "/CN=localhost",
                "-addext",
                "subjectAltName=DNS:localhost,IP:127.0.0.1",
            ])
            .arg("-keyout")
            .arg(&key)
            .arg("-out")
            .arg(&cert)
            .stderr(Stdio::null())
            .status()
            .unwrap()
            .success();
        assert!(ok, "openssl req failed");
    }
    (key, cert)
}

#[test]
fn probe_points_of_the_three_shapes() {
    if !Path::new(LIBSSL).exists() {
        skip("no /usr/lib/x86_64-linux-gnu/libssl.so.3 (apt-get install libssl3)");
        return;
    }
    // Shared and stripped: by call sites only.
    let p = find_ssl_probe(&std::fs::read(LIBSSL).unwrap()).unwrap();
    eprintln!("{LIBSSL}: {}", p.describe());
    assert!(p.found_by.symbol.is_none());
    assert!(p.found_by.sites >= 3, "{}", p.describe());
    assert!(p.found_by.site_labels.iter().any(|l| l == "CLIENT_RANDOM"));
    assert_eq!(p.random.deref, None);
    assert_eq!(p.random.offset, 0x160, "OpenSSL 3.0's s3.client_random");
    // Static with symbols: the symbol and the call sites agree.
    if Path::new(NODE).exists() {
        let p = find_ssl_probe(&std::fs::read(NODE).unwrap()).unwrap();
        eprintln!("{NODE}: {}", p.describe());
        assert_eq!(p.found_by.symbol.as_deref(), Some("ssl_log_secret"));
        assert!(p.found_by.sites >= 1, "{}", p.describe());
        assert_eq!(p.random.deref, None);
    } else {
        skip("no /usr/bin/node (apt-get install nodejs)");
    }
    // Static and stripped: BoringSSL in grpcio's wheel.
    match cygrpc() {
        Some(f) => {
            let p = find_ssl_probe(&std::fs::read(&f).unwrap()).unwrap();
            eprintln!("{}: {}", f.display(), p.describe());
            assert!(p.found_by.symbol.is_none());
            assert!(p.found_by.sites >= 4, "{}", p.describe());
            assert_eq!(p.flavor, h2ledger_keys::ssl::Flavor::BoringSsl);
            assert!(p.random.deref.is_some(), "ssl->s3->client_random");
        }
        None => {
            skip("no grpcio wheel (scripts/grpcio-wheel.sh makes /opt/h2l-grpcio-venv)");
        }
    }
}

/// One call site of libssl.so.3 sent elsewhere: the sites disagree, and the file is refused
/// in one line naming both targets, not guessed.
#[test]
fn call_sites_that_disagree_are_refused() {
    let Ok(mut bytes) = std::fs::read(LIBSSL) else {
        skip("no /usr/lib/x86_64-linux-gnu/libssl.so.3");
        return;
    };
    let p = find_ssl_probe(&bytes).unwrap();
    let elf = h2ledger_keys::elf::Elf::parse(&bytes).unwrap();
    let seg = *elf
        .segments()
        .iter()
        .find(|s| s.vaddr <= p.address && p.address - s.vaddr < s.filesz)
        .unwrap();
    // `call rel32` instructions whose target is the function.
    let calls: Vec<usize> = (seg.offset as usize..(seg.offset + seg.filesz) as usize - 5)
        .filter(|&o| {
            bytes[o] == 0xe8 && {
                let rel = i32::from_le_bytes(bytes[o + 1..o + 5].try_into().unwrap());
                let va = seg.vaddr + (o as u64 - seg.offset) + 5;
                va.wrapping_add(rel as i64 as u64) == p.address
            }
        })
        .collect();
    assert!(calls.len() >= p.found_by.sites, "{calls:?}");
    // Point every call at the function 16 bytes on, then one back: if that one is a site, they
    // now disagree. Try each until one is.
    let mut refused = None;
    for &o in &calls {
        let rel = i32::from_le_bytes(bytes[o + 1..o + 5].try_into().unwrap());
        bytes[o + 1..o + 5].copy_from_slice(&(rel + 16).to_le_bytes());
        let r = find_ssl_probe(&bytes);
        bytes[o + 1..o + 5].copy_from_slice(&rel.to_le_bytes());
        if let Err(e) = r {
            refused = Some(e);
            break;
        }
    }
    let e = refused.expect("moving a call site's target is refused");
    assert!(matches!(e, SslError::Disagree(..)), "{e}");
    let line = e.to_string();
    assert!(!line.contains('\n') && line.contains("disagree"), "{line}");
    eprintln!("{line}");
}

#[test]
fn gnutls_and_programs_without_tls_are_refused_in_one_line() {
    let gnutls = Path::new("/usr/lib/x86_64-linux-gnu/libgnutls.so.30");
    if gnutls.exists() {
        let e = KeySource::attach_file(gnutls).unwrap_err().to_string();
        assert!(e.contains("GnuTLS") && !e.contains('\n'), "{e}");
    }
    let nss = Path::new("/usr/lib/x86_64-linux-gnu/libssl3.so");
    if nss.exists() {
        let e = KeySource::attach_file(nss).unwrap_err().to_string();
        assert!(e.contains("NSS") && !e.contains('\n'), "{e}");
    }
    if !is_root() {
        skip("not root: attaching needs root or CAP_SYS_ADMIN");
        return;
    }
    let mut sleeper = Command::new("sleep").arg("30").spawn().unwrap();
    let e = KeySource::attach(sleeper.id()).unwrap_err().to_string();
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    assert!(
        e.contains("maps no OpenSSL or BoringSSL") && !e.contains('\n'),
        "{e}"
    );
}

/// Key log lines of a file, comments left out.
fn lines(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// Polls `keys` until `want` lines came or 10 s passed.
fn collect(keys: &mut KeySource, want: usize) -> BTreeSet<String> {
    let mut got = BTreeSet::new();
    let t = Instant::now();
    while got.len() < want && t.elapsed() < Duration::from_secs(10) {
        let _ = keys.wait(Some(Duration::from_millis(100)));
        got.extend(keys.poll().iter().map(ToString::to_string));
    }
    got
}

fn first_line(child: &mut Child) -> String {
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut l = String::new();
    out.read_line(&mut l).unwrap();
    // Keep the pipe drained so the program never blocks on it.
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    l
}

struct Kill(Child);
impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `openssl s_server -www` on a free port of 127.0.0.1 with [`cert`] (its libssl from
/// `libdir` when given), and the port it accepts on.
fn s_server(libdir: Option<&Path>) -> (Kill, String) {
    let (key, cert) = cert();
    let mut c = Command::new("openssl");
    c.args(["s_server", "-accept", "127.0.0.1:0", "-www"])
        .arg("-cert")
        .arg(&cert)
        .arg("-key")
        .arg(&key)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(d) = libdir {
        c.env("LD_LIBRARY_PATH", d);
    }
    let mut server = Kill(c.spawn().unwrap());
    // "ACCEPT 127.0.0.1:PORT", after "Using default temp DH parameters" on some builds.
    let port = {
        let mut out = BufReader::new(server.0.stdout.take().unwrap());
        let mut l = String::new();
        let port = loop {
            l.clear();
            assert!(out.read_line(&mut l).unwrap() > 0, "s_server ended");
            if let Some(p) = l.trim().strip_prefix("ACCEPT ") {
                break p.rsplit(':').next().unwrap().to_string();
            }
        };
        std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
        port
    };
    (server, port)
}

/// `openssl s_server` (libssl.so.3) attached, curl (libssl.so.3) with SSLKEYLOGFILE as the
/// oracle: TLS 1.3 (5 secrets a connection) and 1.2 (CLIENT_RANDOM). Then the same file
/// probed for every process (`attach_file`): each new curl's secrets too.
#[test]
fn openssl_server_and_curl_equal_curls_key_log() {
    if !is_root() {
        skip("not root: attaching needs root or CAP_SYS_ADMIN");
        return;
    }
    if Command::new("curl").arg("--version").output().is_err() || !Path::new(LIBSSL).exists() {
        skip("needs curl and openssl (apt-get install curl openssl)");
        return;
    }
    let (server, port) = s_server(None);
    let t = Instant::now();
    let mut keys = KeySource::attach(server.0.id()).unwrap();
    eprintln!("attached in {:?}: {}", t.elapsed(), keys.attached());
    assert!(keys.attached().to_string().contains("libssl.so"));
    let oracle = tmp("curl.keylog");
    let _ = std::fs::remove_file(&oracle);
    let curl = |extra: &[&str]| {
        let ok = Command::new("curl")
            .args(["-sk", "-o", "/dev/null"])
            .args(extra)
            .arg(format!("https://127.0.0.1:{port}/"))
            .env("SSLKEYLOGFILE", &oracle)
            .status()
            .unwrap()
            .success();
        assert!(ok, "curl failed");
    };
    for _ in 0..3 {
        curl(&[]);
    }
    curl(&["--tls-max", "1.2"]);
    let want = lines(&std::fs::read_to_string(&oracle).unwrap());
    assert_eq!(want.len(), 3 * 5 + 1, "{want:?}");
    let got = collect(&mut keys, want.len());
    assert_eq!(got, want, "the server's secrets against curl's key log");
    assert_eq!(keys.stats().ring_full, 0);
    drop(keys);

    // A probe on the file: new processes (each curl) are covered too.
    let mut all = KeySource::attach_file(Path::new(LIBSSL)).unwrap();
    let _ = std::fs::remove_file(&oracle);
    for _ in 0..2 {
        curl(&[]);
    }
    let want = lines(&std::fs::read_to_string(&oracle).unwrap());
    assert_eq!(want.len(), 2 * 5);
    // Every process mapping the file is probed (other programs on the host too): curl's lines
    // must all be there. The server and each curl both pass every secret: one line each.
    let mut got = BTreeSet::new();
    let t = Instant::now();
    while !want.is_subset(&got) && t.elapsed() < Duration::from_secs(10) {
        let _ = all.wait(Some(Duration::from_millis(100)));
        got.extend(all.poll().iter().map(ToString::to_string));
    }
    let missing: Vec<_> = want.difference(&got).collect();
    assert!(missing.is_empty(), "--keys-from-lib missed {missing:?}");
}

/// A Node http2 secure server (OpenSSL 3.0 static in /usr/bin/node) attached, a Node client
/// with `--tls-keylog` as the oracle; TLS 1.3 and 1.2.
#[test]
fn node_http2_server_equals_the_clients_key_log() {
    if !is_root() {
        skip("not root: attaching needs root or CAP_SYS_ADMIN");
        return;
    }
    if !Path::new(NODE).exists() {
        skip("no /usr/bin/node (apt-get install nodejs)");
        return;
    }
    let (key, cert) = cert();
    let js = tmp("h2.js");
    std::fs::write(&js, NODE_H2).unwrap();
    let mut server = Kill(
        Command::new(NODE)
            .arg(&js)
            .arg("server")
            .arg(&key)
            .arg(&cert)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let port = first_line(&mut server.0).trim().to_string();
    let t = Instant::now();
    let mut keys = KeySource::attach(server.0.id()).unwrap();
    eprintln!("attached in {:?}: {}", t.elapsed(), keys.attached());
    let oracle = tmp("node.keylog");
    let _ = std::fs::remove_file(&oracle);
    for (n, max) in [("4", "TLSv1.3"), ("2", "TLSv1.2")] {
        let ok = Command::new(NODE)
            .arg(format!("--tls-keylog={}", oracle.display()))
            .arg(&js)
            .args(["client", &port, n, max])
            .stderr(Stdio::null())
            .status()
            .unwrap()
            .success();
        assert!(ok, "node client failed");
    }
    let want = lines(&std::fs::read_to_string(&oracle).unwrap());
    assert_eq!(want.len(), 4 * 5 + 2, "{want:?}");
    let got = collect(&mut keys, want.len());
    assert_eq!(
        got, want,
        "node server's secrets against the client's --tls-keylog"
    );
}

const NODE_H2: &str = r#"
const http2 = require('http2'); const fs = require('fs');
if (process.argv[2] === 'server') {
  const s = http2.createSecureServer({key: fs.readFileSync(process.argv[3]), cert: fs.readFileSync(process.argv[4])});
  s.on('stream', (st) => { st.respond({':status': 200}); st.end('hello'); });
  s.listen(0, '127.0.0.1', () => { console.log(s.address().port); });
} else {
  const port = process.argv[3]; let left = +process.argv[4]; const max = process.argv[5];
  function one() {
    const c = http2.connect('https://127.0.0.1:' + port, {rejectUnauthorized: false, maxVersion: max});
    const r = c.request({':path': '/'});
    r.on('data', () => {}); r.on('end', () => { c.close(); if (--left > 0) one(); });
    r.end();
  }
  one();
}
"#;

/// grpcio from PyPI (BoringSSL, static and stripped in cygrpc): server and client attached,
/// each reading the secrets from its own SSL objects; they must be the same lines, 5 per TLS
/// 1.3 connection (grpcio asks for no key log, so there is none to compare with).
#[test]
fn grpcio_wheel_server_and_client_agree() {
    if !is_root() {
        skip("not root: attaching needs root or CAP_SYS_ADMIN");
        return;
    }
    if cygrpc().is_none() {
        skip("no grpcio wheel (scripts/grpcio-wheel.sh makes /opt/h2l-grpcio-venv)");
        return;
    }
    let (key, cert) = cert();
    let py = tmp("g.py");
    std::fs::write(&py, GRPCIO).unwrap();
    let mut server = Kill(
        Command::new(grpcio_python())
            .arg(&py)
            .arg("server")
            .arg(&key)
            .arg(&cert)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let port = first_line(&mut server.0).trim().to_string();
    let t = Instant::now();
    let mut skeys = KeySource::attach(server.0.id()).unwrap();
    eprintln!("attached in {:?}: {}", t.elapsed(), skeys.attached());
    assert!(skeys.attached().to_string().contains("BoringSSL"));
    // The client waits for a line on stdin before its calls: attached first.
    let mut client = Kill(
        Command::new(grpcio_python())
            .arg(&py)
            .args(["client", &port])
            .arg(&cert)
            .arg("3")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    assert_eq!(first_line(&mut client.0).trim(), "ready");
    let mut ckeys = KeySource::attach(client.0.id()).unwrap();
    {
        use std::io::Write;
        let mut stdin = client.0.stdin.take().unwrap();
        stdin.write_all(b"go\n").unwrap();
    }
    let status = client.0.wait().unwrap();
    assert!(status.success());
    let c = collect(&mut ckeys, 15);
    let s = collect(&mut skeys, 15);
    assert_eq!(c.len(), 15, "{c:?}");
    assert_eq!(c, s, "client and server secrets");
    for label in [
        "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
        "SERVER_HANDSHAKE_TRAFFIC_SECRET",
        "CLIENT_TRAFFIC_SECRET_0",
        "SERVER_TRAFFIC_SECRET_0",
        "EXPORTER_SECRET",
    ] {
        assert_eq!(
            c.iter()
                .filter(|l| l.starts_with(&format!("{label} ")))
                .count(),
            3
        );
    }
}

const GRPCIO: &str = r#"
import sys, grpc
from concurrent import futures
ident = lambda b: b
if sys.argv[1] == 'server':
    key = open(sys.argv[2], 'rb').read(); cert = open(sys.argv[3], 'rb').read()
    h = grpc.method_handlers_generic_handler('h2l.Echo', {'Call': grpc.unary_unary_rpc_method_handler(lambda r, c: r, ident, ident)})
    s = grpc.server(futures.ThreadPoolExecutor(4)); s.add_generic_rpc_handlers((h,))
    port = s.add_secure_port('127.0.0.1:0', grpc.ssl_server_credentials([(key, cert)]))
    s.start(); print(port, flush=True); s.wait_for_termination()
else:
    port, cert, n = sys.argv[2], open(sys.argv[3], 'rb').read(), int(sys.argv[4])
    print('ready', flush=True); sys.stdin.readline()
    for i in range(n):
        ch = grpc.secure_channel('127.0.0.1:%s' % port, grpc.ssl_channel_credentials(cert))
        f = ch.unary_unary('/h2l.Echo/Call', request_serializer=ident, response_deserializer=ident)
        assert f(b'x' * 10, timeout=10) == b'x' * 10
        ch.close()
"#;

/// A library deleted since the process mapped it (upgraded under a running server): a copy of
/// libssl.so.3 loaded through LD_LIBRARY_PATH and removed; the probe goes on it through
/// /proc/PID/map_files, and curl's secrets still come.
#[test]
fn a_deleted_library_is_probed_through_its_mapping() {
    if !is_root() {
        skip("not root: attaching needs root or CAP_SYS_ADMIN");
        return;
    }
    if Command::new("curl").arg("--version").output().is_err() || !Path::new(LIBSSL).exists() {
        skip("needs curl and openssl (apt-get install curl openssl)");
        return;
    }
    let libdir = tmp("deleted-lib");
    std::fs::create_dir_all(&libdir).unwrap();
    let copy = libdir.join("libssl.so.3");
    std::fs::copy(LIBSSL, &copy).unwrap();
    let (server, port) = s_server(Some(&libdir));
    std::fs::remove_file(&copy).unwrap();
    let maps = std::fs::read_to_string(format!("/proc/{}/maps", server.0.id())).unwrap();
    assert!(maps.contains("libssl.so.3 (deleted)"), "{maps}");
    let mut keys = KeySource::attach(server.0.id()).unwrap();
    let said = keys.attached().to_string();
    assert!(said.contains("(deleted)"), "{said}");
    let oracle = tmp("deleted.keylog");
    let _ = std::fs::remove_file(&oracle);
    for _ in 0..2 {
        let ok = Command::new("curl")
            .args(["-sk", "-o", "/dev/null"])
            .arg(format!("https://127.0.0.1:{port}/"))
            .env("SSLKEYLOGFILE", &oracle)
            .status()
            .unwrap()
            .success();
        assert!(ok);
    }
    let want = lines(&std::fs::read_to_string(&oracle).unwrap());
    assert_eq!(want.len(), 10);
    assert_eq!(collect(&mut keys, want.len()), want);
}
