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
    let mut keys = match KeySource::attach(pid) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    eprintln!("attached: {}", keys.attached());
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
