//! `h2ledger split F --shards N -w DIR`: a capture cut into N captures by TCP connection, in
//! one pass (the cutting is `h2ledger_run::split`; here the files, their names and the
//! summary; decision 320).

use std::io::{BufWriter, Read, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, Result};
use h2ledger_run::input::{compression_of, decoder};
use h2ledger_run::split::{split as cut, SplitError};

use crate::cli::SplitArgs;
use crate::source::file::io_reason;
use crate::Ctx;

/// Each shard's write buffer.
const WRITE_BUFFER: usize = 1 << 18;

/// NAME of the shards: the input's file name without its compression and capture extensions.
fn stem(path: &str) -> String {
    if path == "-" {
        return "stdin".into();
    }
    let mut name = Path::new(path)
        .file_name()
        .map_or_else(|| "capture".into(), |n| n.to_string_lossy().into_owned());
    for ext in [".gz", ".zst", ".zstd"] {
        if let Some(s) = name.strip_suffix(ext) {
            name = s.to_string();
            break;
        }
    }
    for ext in [".pcapng", ".pcap", ".cap"] {
        if let Some(s) = name.strip_suffix(ext) {
            name = s.to_string();
            break;
        }
    }
    if name.is_empty() {
        "capture".into()
    } else {
        name
    }
}

/// The input, decompressed, with its first four bytes (the capture's magic, when there are
/// four) read ahead.
fn open(path: &str, name: &str) -> Result<(Box<dyn Read + Send>, Vec<u8>)> {
    let source: Box<dyn Read + Send> = if path == "-" {
        Box::new(std::io::stdin())
    } else {
        match std::fs::metadata(path) {
            Err(e) => return Err(anyhow!("{name}: cannot open: {}", io_reason(&e))),
            Ok(m) if m.is_dir() => {
                return Err(anyhow!("{name}: is a directory, not a capture file"))
            }
            Ok(_) => {}
        }
        Box::new(
            std::fs::File::open(path)
                .map_err(|e| anyhow!("{name}: cannot open: {}", io_reason(&e)))?,
        )
    };
    let mut source = source;
    let mut head = Vec::with_capacity(4);
    (&mut source)
        .take(4)
        .read_to_end(&mut head)
        .map_err(|e| anyhow!("{name}: cannot read: {}", io_reason(&e)))?;
    let kind = compression_of(&head);
    let mut r = decoder(head, source, kind).map_err(|e| anyhow!("{name}: cannot read: {e}"))?;
    let mut magic = Vec::with_capacity(4);
    (&mut r).take(4).read_to_end(&mut magic).map_err(|e| {
        let what = kind.unwrap_or("read");
        anyhow!("{name}: {what}: {e}")
    })?;
    Ok((r, magic))
}

pub fn split(a: SplitArgs, ctx: Ctx) -> Result<ExitCode> {
    let name = if a.file == "-" {
        "standard input".to_string()
    } else {
        a.file.clone()
    };
    let (r, magic) = open(&a.file, &name)?;
    if magic.is_empty() {
        return Err(anyhow!(
            "{name}: empty, not a capture (make one with: tcpdump -i lo -w FILE)"
        ));
    }
    let ext = if magic == [0x0a, 0x0d, 0x0d, 0x0a] {
        "pcapng"
    } else {
        "pcap"
    };
    let dir = &a.dir;
    std::fs::create_dir_all(dir).map_err(|e| {
        anyhow!(
            "{}: cannot make the output directory: {} (give another with -w)",
            dir.display(),
            io_reason(&e)
        )
    })?;
    let n = a.shards as usize;
    let width = (n - 1).to_string().len();
    let stem = stem(&a.file);
    let paths: Vec<PathBuf> = (0..n)
        .map(|k| dir.join(format!("{stem}.{k:0width$}.{ext}")))
        .collect();
    let mut outs = Vec::with_capacity(n);
    for p in &paths {
        match std::fs::File::create(p) {
            Ok(f) => outs.push(BufWriter::with_capacity(WRITE_BUFFER, f)),
            Err(e) => {
                remove(&paths[..outs.len()]);
                return Err(anyhow!(
                    "{}: cannot write: {} (give another directory with -w)",
                    p.display(),
                    io_reason(&e)
                ));
            }
        }
    }
    let result = cut(std::io::Cursor::new(magic).chain(r), &mut outs);
    let flushed = outs
        .iter_mut()
        .enumerate()
        .try_for_each(|(k, w)| w.flush().map_err(|e| SplitError::Write(k, e)));
    let counts = match result.and_then(|c| flushed.map(|()| c)) {
        Ok(c) => c,
        Err(e) => {
            // No half-written shards are left behind.
            drop(outs);
            remove(&paths);
            return Err(match e {
                SplitError::Write(k, e) => {
                    anyhow!("{}: cannot write: {}", paths[k].display(), io_reason(&e))
                }
                SplitError::Read(e) => anyhow!("{name}: cannot read: {e}"),
                SplitError::Format(m) => anyhow!("{name}: {m}"),
            });
        }
    };
    let mut out = ctx.out();
    let total: u64 = counts.packets.iter().sum();
    let _ = writeln!(
        out,
        "{name} ({}): {total} packets into {n} shards by TCP connection",
        counts.format
    );
    let _ = writeln!(
        out,
        "{:>5}  {:>12}  {:>14}  file",
        "shard", "packets", "bytes"
    );
    for (k, p) in paths.iter().enumerate() {
        let _ = writeln!(
            out,
            "{k:>5}  {:>12}  {:>14}  {}",
            counts.packets[k],
            counts.bytes[k],
            p.display()
        );
    }
    if counts.not_tcp > 0 {
        let _ = writeln!(
            out,
            "{} packets not TCP over IP (or not decoded) went to shard 0",
            counts.not_tcp
        );
    }
    if counts.copied_blocks > 0 {
        let _ = writeln!(
            out,
            "{} pcapng blocks that are not packets (section headers, interfaces, secrets, ...) \
             copied to every shard",
            counts.copied_blocks
        );
    }
    if let Some(at) = counts.cut_at {
        eprintln!(
            "h2ledger: {name}: the capture ends inside a record at byte {at} of its {} \
             stream: the {total} packets before it were split, the cut record was not",
            counts.format
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

fn remove(paths: &[PathBuf]) {
    for p in paths {
        let _ = std::fs::remove_file(p);
    }
}
