//! Live: attach to a running go-tls-keys before its handshakes, let it make its requests, and
//! check that the secrets it wrote to its own key log (the ground truth) are exactly the ones
//! delivered. Root only.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use h2ledger_keys::{keylog_text, AttachError, FoundBy, KeySource};

use crate::peers::{peers, skip};

pub(crate) fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

/// Runs `bin` with `-wait`, attaches, releases it, and compares the key lines delivered with
/// its key log. Returns the number of key lines.
///
/// The key log is this call's own (process id and a call counter in its name, decision 250):
/// named by binary and TLS version only, `tls13_stripped` and `forty_connections` gave their
/// peers one file, which each opened with O_TRUNC and wrote, and each test read the other's
/// lines (at `--test-threads 8`, 19 runs of 20 failed).
fn run(bin: &Path, tls: &str, n: u32, conns: u32, found_by: FoundBy) -> usize {
    static CALLS: AtomicU32 = AtomicU32::new(0);
    let args: &[&str] = if tls == "grpc" { &[] } else { &["-tls", tls] };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("live");
    std::fs::create_dir_all(&dir).unwrap();
    let truth = dir.join(format!(
        "{}-{tls}-{}-{}.keylog",
        bin.file_name().unwrap().to_string_lossy(),
        std::process::id(),
        CALLS.fetch_add(1, Ordering::Relaxed)
    ));
    let mut child = Command::new(bin)
        .args(args)
        .args(["-wait", "-n", &n.to_string(), "-conns", &conns.to_string()])
        .arg("-keylog")
        .arg(&truth)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    // "listening 127.0.0.1:PORT pid PID"
    let pid: u32 = first
        .split_whitespace()
        .nth(3)
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| {
            let _ = child.kill();
            panic!("unexpected first line {first:?}")
        });
    assert_eq!(pid, child.id());

    let mut keys = match KeySource::attach(pid) {
        Ok(k) => k,
        Err(e) => {
            let _ = child.kill();
            panic!("{e}");
        }
    };
    let info = keys.attached();
    assert_eq!(info.pid, Some(pid));
    assert_eq!(info.probe.as_ref().expect("a Go probe").found_by, found_by);
    assert!(info
        .to_string()
        .contains("crypto/tls.(*Config).writeKeyLog"));

    // Release it: it now makes its handshakes and requests, then exits.
    child.stdin.take().unwrap().write_all(b"go\n").unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}: {rest}");
    assert_eq!(
        rest.trim(),
        format!("done requests={n} ok={n} conns={conns}")
    );

    // Every record was submitted before writeKeyLog returned, so before the exit: one drain
    // takes them all (a second one checks that nothing more comes).
    let lines = keys.poll();
    let got: BTreeSet<String> = lines.iter().map(|l| l.to_string()).collect();
    let more = keys.poll();
    assert!(more.is_empty(), "{more:?}");
    let want: BTreeSet<String> = std::fs::read_to_string(&truth)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let _ = std::fs::remove_file(&truth);
    // grpc-go negotiates TLS 1.3 with Go 1.19.
    let per_conn = if tls == "1.2" { 1 } else { 4 };
    assert_eq!(want.len(), per_conn * conns as usize, "the key log itself");
    if got != want {
        let missing: Vec<_> = want.difference(&got).collect();
        let extra: Vec<_> = got.difference(&want).collect();
        panic!(
            "missing {missing:#?}\nextra {extra:#?}\nstats {:?}",
            keys.stats()
        );
    }
    let s = keys.stats();
    assert_eq!(s.ring_full, 0);
    assert_eq!(s.decoded.lines as usize, want.len());
    // Client and server of each connection live in the process: each secret comes twice (or
    // more, when a stack growth re-enters the function).
    assert!(s.decoded.duplicates >= s.decoded.lines, "{s:?}");
    assert_eq!(
        s.decoded.records,
        s.decoded.lines + s.decoded.duplicates,
        "{s:?}"
    );
    // The text h2ledger-tls reads: every line a key line, every connection keyed.
    let keylog = h2ledger_tls::KeyLog::parse(&keylog_text(&lines));
    assert_eq!(keylog.stats.key_lines as usize, want.len());
    assert_eq!(keylog.stats.skipped_lines, 0);
    assert_eq!(keylog.len(), conns as usize);
    want.len()
}

macro_rules! live {
    ($name:ident, $which:ident, $tls:literal, $found:expr) => {
        #[test]
        fn $name() {
            if !is_root() {
                skip("live uprobe tests need root (uprobes need CAP_SYS_ADMIN)");
                return;
            }
            let Some(p) = peers() else { return };
            run(&p.$which, $tls, 7, 3, $found);
        }
    };
}

live!(tls13_with_symbols, full, "1.3", FoundBy::Symtab);
live!(tls13_stripped, stripped, "1.3", FoundBy::Pclntab);
live!(tls12_with_symbols, full, "1.2", FoundBy::Symtab);
live!(tls12_stripped, stripped, "1.2", FoundBy::Pclntab);

/// Many connections in one run: nothing lost, nothing repeated.
#[test]
fn forty_connections() {
    if !is_root() {
        skip("live uprobe tests need root (uprobes need CAP_SYS_ADMIN)");
        return;
    }
    let Some(p) = peers() else { return };
    assert_eq!(run(&p.stripped, "1.3", 80, 40, FoundBy::Pclntab), 160);
}

/// grpc-go 1.33 (Debian's) over TLS, built with -s -w: the demo's workload with TLS.
#[test]
fn grpc_go_over_tls_stripped() {
    if !is_root() {
        skip("live uprobe tests need root (uprobes need CAP_SYS_ADMIN)");
        return;
    }
    let Some(bin) = crate::peers::grpc_peer() else {
        return;
    };
    assert_eq!(run(&bin, "grpc", 9, 3, FoundBy::Pclntab), 12);
}

/// A process that is not Go is refused in one line, before anything reaches the kernel.
#[test]
fn a_non_go_process_is_named_in_one_line() {
    let mut child = Command::new("sleep").arg("30").spawn().unwrap();
    let started = Instant::now();
    // /proc/PID/exe points to sleep once exec is done.
    while std::fs::read_link(format!("/proc/{}/exe", child.id()))
        .map(|p| !p.to_string_lossy().contains("sleep"))
        .unwrap_or(true)
        && started.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    let e = KeySource::attach(child.id()).unwrap_err();
    let _ = child.kill();
    let _ = child.wait();
    // Not Go, and no OpenSSL or BoringSSL mapped (issue 37 looks for those next).
    assert!(matches!(e, AttachError::NoTls { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains("sleep")
            && msg.contains("not a Go program")
            && msg.contains("no OpenSSL or BoringSSL")
            && !msg.contains('\n'),
        "{msg}"
    );
}

#[test]
fn a_missing_process_is_named_in_one_line() {
    // PID numbers stop below 2^22 (kernel.pid_max).
    let e = KeySource::attach(4_194_305).unwrap_err();
    assert!(matches!(e, AttachError::Process { .. }), "{e:?}");
    assert!(
        e.to_string()
            .starts_with("--keys-from 4194305: cannot read /proc/4194305/exe"),
        "{e}"
    );
}
