//! Running the binary and comparing ledgers.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::{json, Value};

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_h2ledger")
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The first line of `text` wider than 100 columns, if any. A line of one word is let be: a
/// path longer than the width, which the headline puts on a line of its own (a CI checkout's
/// path can be long).
pub fn too_wide(text: &str) -> Option<&str> {
    text.lines()
        .find(|l| l.chars().count() > 100 && l.trim_end_matches(':').contains(' '))
}

pub fn capture(name: &str) -> PathBuf {
    repo().join("captures").join(name)
}

pub fn run(args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .output()
        .expect("the h2ledger binary runs")
}

/// `h2ledger replay FILE --format json ARGS...`, parsed; the command must succeed.
pub fn replay_json(file: &str, extra: &[&str]) -> Value {
    let mut args = vec!["replay", file, "--format", "json"];
    args.extend_from_slice(extra);
    let out = run(&args);
    assert!(
        out.status.success(),
        "h2ledger {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("replay prints one JSON object")
}

pub const FRAME_KEYS: [&str; 14] = [
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

/// The public-contract part of a ledger: exactly the keys the issue spells out.
pub fn contract(v: &Value) -> Value {
    let side = |s: &str| {
        let side = &v["sides"][s];
        let frames: serde_json::Map<String, Value> = FRAME_KEYS
            .iter()
            .map(|k| (k.to_string(), side["frames"][k].clone()))
            .collect();
        json!({
            "frames": frames,
            "bdp_pings": side["bdp_pings"],
            "writes": side["writes"],
            "bytes": side["bytes"],
        })
    };
    json!({
        "connections": v["connections"],
        "calls": v["calls"],
        "sides": {"client": side("client"), "server": side("server")},
    })
}

/// Asserts two ledgers are equal on the contract keys; on failure prints both and the
/// differing keys.
pub fn assert_ledger_eq(what: &str, expected: &Value, actual: &Value) {
    let (e, a) = (contract(expected), contract(actual));
    if e != a {
        let mut diffs = Vec::new();
        diff("", &e, &a, &mut diffs);
        panic!(
            "{what}: ledgers differ\n  {}\nexpected:\n{}\nactual:\n{}",
            diffs.join("\n  "),
            serde_json::to_string_pretty(&e).unwrap(),
            serde_json::to_string_pretty(&a).unwrap()
        );
    }
}

fn diff(path: &str, e: &Value, a: &Value, out: &mut Vec<String>) {
    match (e, a) {
        (Value::Object(me), Value::Object(ma)) => {
            for (k, ve) in me {
                diff(
                    &format!("{path}.{k}"),
                    ve,
                    ma.get(k).unwrap_or(&Value::Null),
                    out,
                );
            }
        }
        _ if e != a => out.push(format!("{path}: expected {e}, got {a}")),
        _ => {}
    }
}

pub fn read_json(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

pub fn is_root() -> bool {
    // SAFETY-free: ask the kernel through /proc instead of libc.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

pub fn have(cmd: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {cmd} >/dev/null 2>&1")])
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// A copy of the binary that an unprivileged user can run whatever the checkout's location
/// (a clone under /root is not reachable by `nobody`).
///
/// Made once per process, behind a `OnceLock`, into a directory emptied first (decision
/// 250): the directory is named by the process id, and an earlier process with the same id
/// left its own build's binary there, which a check for an existing file would have run
/// instead of this one. The copy is a hard link where the file system allows one (no bytes
/// written; a debug binary is over 100 MB), else a copy; and directories of processes that
/// have ended are removed first (decision 266: they were never removed, and 330 of them had
/// filled 24 GB of /tmp).
pub fn bin_for_nobody() -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    static COPY: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    COPY.get_or_init(|| {
        let dir = run_dir(NOBODY_DIR);
        let to = dir.join("h2ledger");
        let from = std::path::Path::new(bin());
        if std::fs::hard_link(from, &to).is_err() {
            let tmp = dir.join("h2ledger.tmp");
            copy_executable(from, &tmp);
            std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).unwrap();
            std::fs::rename(&tmp, &to).unwrap();
        }
        to
    })
    .clone()
}

const NOBODY_DIR: &str = "h2ledger-nobody-";
const SCRATCH_DIR: &str = "h2ledger-test-";

/// `TMP/h2ledger-test-PID/NAME`: where a test keeps its files (NAME is not created). Every test
/// of this process shares the parent, made once and emptied first (an earlier process with the
/// same id may have left one); parents of processes that have ended are removed first, as
/// [`bin_for_nobody`]'s are, so a failed run's files stay for an hour to be read and a run
/// does not leave its scratch in /tmp for good (about 95 MB a run did, 1.4 GB from 13 runs).
pub fn scratch(name: &str) -> PathBuf {
    static RUN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    RUN.get_or_init(|| run_dir(SCRATCH_DIR)).join(name)
}

/// `TMP/PREFIX` + this process' id, made empty and reachable by `nobody` (mode 0755), after
/// removing those of processes that have ended ([`remove_ended_dirs`]).
fn run_dir(prefix: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let tmp_root = std::env::temp_dir();
    remove_ended_dirs(&tmp_root, prefix);
    let dir = tmp_root.join(format!("{prefix}{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// Removes `PREFIX` + PID directories whose process is gone (no /proc/PID) and that are
/// more than an hour old (a process of another PID namespace sharing /tmp is not seen in
/// /proc; an hour is longer than any test run). A directory of a live process, this one's
/// included, is left alone; so is any name that is not the prefix followed by a number.
fn remove_ended_dirs(tmp_root: &std::path::Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(tmp_root) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(prefix))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > std::time::Duration::from_secs(3600));
        if old && !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// `cp FROM TO` (then FROM's mode on TO, as `std::fs::copy` gives): a program the tests then
/// run, copied by a child process so that it is never open for writing in this one. The
/// harness runs tests on parallel threads, and they spawn programs all the time: a child
/// forked while this process held the copy open for writing keeps that descriptor until its
/// own exec, and running the copy in that moment fails with "Text file busy" (ETXTBSY; seen
/// at `--test-threads 8`: `setpriv: failed to execute /tmp/h2ledger-nobody-PID/h2ledger:
/// Text file busy`). `cp`'s descriptor is its own and closed when it exits.
pub fn copy_executable(from: &std::path::Path, to: &std::path::Path) {
    let ok = Command::new("cp")
        .arg("--")
        .arg(from)
        .arg(to)
        .status()
        .expect("cp runs");
    assert!(ok.success(), "cp {} {}", from.display(), to.display());
    std::fs::set_permissions(to, std::fs::metadata(from).unwrap().permissions()).unwrap();
}

/// A raw IPv4 packet (127.0.0.1 to itself) carrying one TCP segment.
pub fn tcp(sport: u16, dport: u16, seq: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
    let total = 20 + 20 + payload.len();
    let mut p = vec![
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        0,
        0,
        0x40,
        0,
        64,
        6,
        0,
        0,
    ];
    p.extend_from_slice(&[127, 0, 0, 1, 127, 0, 0, 1]);
    p.extend_from_slice(&sport.to_be_bytes());
    p.extend_from_slice(&dport.to_be_bytes());
    p.extend_from_slice(&seq.to_be_bytes());
    p.extend_from_slice(&0u32.to_be_bytes());
    p.extend_from_slice(&[0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
    p.extend_from_slice(payload);
    p
}

/// The records of one kind (`frame`, `call`, `tick`, `summary`) of JSON-lines output; every
/// line must be a JSON object with a `record`.
pub fn records(out: impl AsRef<[u8]>, kind: &str) -> Vec<Value> {
    String::from_utf8_lossy(out.as_ref())
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("one JSON object per line"))
        .inspect(|v| assert!(v["record"].is_string(), "a record without `record`: {v}"))
        .filter(|v| v["record"] == kind)
        .collect()
}

/// A test that cannot run here says why and passes; under CI (`CI=true`), where everything it
/// needs is installed, a skip is a failure. The reason also goes to the file
/// `$H2LEDGER_SKIPS` names when set (`just test` counts them in its last line).
pub fn skipped(why: &str) {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("under CI=true this test must run, but: {why}");
    }
    eprintln!("{why}");
    if let Some(f) = std::env::var_os("H2LEDGER_SKIPS") {
        use std::io::Write;
        if let Ok(mut out) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(f)
        {
            let _ = writeln!(out, "{why}");
        }
    }
}

/// nghttpd without TLS serving `www` (with a 2,000-byte `file` written there) on a free
/// loopback port: nghttpd cannot bind port 0, so a free port is taken and tried again if
/// someone else grabs it first.
pub fn h2c_nghttpd(www: &std::path::Path) -> (std::process::Child, u16) {
    std::fs::create_dir_all(www).unwrap();
    std::fs::write(www.join("file"), vec![b'x'; 2000]).unwrap();
    let mut server = None;
    for _ in 0..5 {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut child = Command::new("nghttpd")
            .args(["--no-tls", "-a", "127.0.0.1", "-d"])
            .arg(www)
            .arg(port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        if child.try_wait().unwrap().is_none() {
            server = Some((child, port));
            break;
        }
    }
    server.expect("nghttpd started")
}

/// The first line a capture command wrote on stderr (its "listening on" line, which scripts
/// wait for); the rest of stderr is read on a thread so the command never blocks on it.
pub fn listening_line(child: &mut std::process::Child) -> String {
    use std::io::BufRead as _;
    let mut err = std::io::BufReader::new(child.stderr.take().expect("stderr piped"));
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    std::thread::spawn(move || {
        let mut rest = String::new();
        while err.read_line(&mut rest).map(|n| n > 0).unwrap_or(false) {
            rest.clear();
        }
    });
    line
}

/// A `sniff --metrics ADDR` just started: the address from its first stderr line ("metrics on
/// http://ADDR/metrics") and its second line (the "listening on" line), then the rest of its
/// stderr drained on a thread so that it never blocks on a full pipe.
pub fn metrics_started(stderr: std::process::ChildStderr) -> (String, String) {
    use std::io::BufRead as _;
    let mut err = std::io::BufReader::new(stderr);
    let (mut first, mut second) = (String::new(), String::new());
    err.read_line(&mut first).unwrap();
    let addr = first
        .trim()
        .strip_prefix("h2ledger: metrics on http://")
        .and_then(|s| s.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("sniff said: {first}"))
        .to_string();
    err.read_line(&mut second).unwrap();
    std::thread::spawn(move || {
        let mut rest = String::new();
        while err.read_line(&mut rest).map(|n| n > 0).unwrap_or(false) {}
    });
    (addr, second)
}
