//! The cost of one /proc scan (issue 38 point 7): `cargo run --release -p h2ledger-run
//! --example procscan [RUNS]`, as root to see every process's descriptors.
use std::time::Instant;

fn main() {
    let runs: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20);
    let p = h2ledger_run::procs::Proc::default();
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..runs {
        let t = Instant::now();
        let s = p.scan();
        times.push(t.elapsed().as_secs_f64() * 1e3);
        last = Some(s);
    }
    times.sort_by(f64::total_cmp);
    let s = last.unwrap();
    println!(
        "{} processes, {} namespaces, {} sockets in the tables; one scan: median {:.2} ms, max {:.2} ms over {runs} runs",
        s.processes,
        s.namespaces,
        s.sockets(),
        times[times.len() / 2],
        times[times.len() - 1]
    );
}
