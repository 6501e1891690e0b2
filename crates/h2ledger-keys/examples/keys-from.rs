//! Prints the TLS secrets of a running Go program as key log lines, until it exits:
//! `cargo run -p h2ledger-keys --example keys-from -- PID` (as root). The attach line and the
//! counts go to stderr.
use std::time::Duration;

use h2ledger_keys::KeySource;

fn main() {
    let Some(pid) = std::env::args().nth(1).and_then(|a| a.parse::<u32>().ok()) else {
        eprintln!("usage: keys-from PID");
        std::process::exit(2);
    };
    // H2LEDGER_KEYS_EXE=PATH: probe that file instead of /proc/PID/exe; H2LEDGER_KEYS_ALL=1:
    // every process running it.
    let exe = std::env::var_os("H2LEDGER_KEYS_EXE").map(std::path::PathBuf::from);
    let only = std::env::var_os("H2LEDGER_KEYS_ALL")
        .is_none()
        .then_some(pid);
    let attached = match (&exe, only) {
        (None, Some(pid)) => KeySource::attach(pid),
        (Some(e), only) => KeySource::attach_exe(e, only),
        (None, None) => {
            KeySource::attach_exe(std::path::Path::new(&format!("/proc/{pid}/exe")), None)
        }
    };
    let mut keys = match attached {
        Ok(k) => k,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    eprintln!("attached: {}", keys.attached());
    // H2LEDGER_KEYS_DROP_TO=UID: give up root right after the attach, as the binary will
    // (the fds keep working: the kernel checked privileges when they were made).
    if let Some(uid) = std::env::var("H2LEDGER_KEYS_DROP_TO")
        .ok()
        .and_then(|u| u.parse().ok())
    {
        // SAFETY: plain system calls; no other thread exists yet.
        let ok = unsafe {
            libc::setgroups(0, std::ptr::null()) == 0
                && libc::setgid(uid) == 0
                && libc::setuid(uid) == 0
        };
        assert!(ok, "dropping privileges failed");
        eprintln!("now uid {uid}");
    }
    let alive = || std::path::Path::new(&format!("/proc/{pid}")).exists();
    loop {
        let running = alive();
        let _ = keys.wait(Some(Duration::from_millis(200)));
        for line in keys.poll() {
            println!("{line}");
        }
        if !running {
            break;
        }
    }
    eprintln!("{:?}", keys.stats());
}
