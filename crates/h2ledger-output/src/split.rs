//! `h2ledger split`'s summary: what went into each shard (decision 320).

use std::io::Write;

use h2ledger_run::split::Split;

/// The summary of splitting `name` into `s.paths.len()` shards: packets and bytes per shard
/// and file, packets that were not TCP, pcapng blocks copied to every shard. Write errors
/// are ignored, as for every table (a closed pipe ends the output, not the run).
pub fn write_summary(out: &mut dyn Write, name: &str, s: &Split) {
    let (c, n) = (&s.counts, s.paths.len());
    let total: u64 = c.packets.iter().sum();
    let _ = writeln!(
        out,
        "{name} ({}): {total} packets into {n} shards by TCP connection",
        c.format
    );
    let _ = writeln!(
        out,
        "{:>5}  {:>12}  {:>14}  file",
        "shard", "packets", "bytes"
    );
    for (k, p) in s.paths.iter().enumerate() {
        let _ = writeln!(
            out,
            "{k:>5}  {:>12}  {:>14}  {}",
            c.packets[k],
            c.bytes[k],
            p.display()
        );
    }
    if c.not_tcp > 0 {
        let _ = writeln!(
            out,
            "{} packets not TCP over IP (or not decoded) went to shard 0",
            c.not_tcp
        );
    }
    if c.copied_blocks > 0 {
        let _ = writeln!(
            out,
            "{} pcapng blocks that are not packets (section headers, interfaces, secrets, ...) \
             copied to every shard",
            c.copied_blocks
        );
    }
}
