//! `h2ledger split F --shards N -w DIR` as files (decision 320): the input opened and
//! decompressed, the shards' names and files, and no half-written shard left behind on an
//! error. The cutting itself is [`super::split`].

use std::io::{BufWriter, Read, Write as _};
use std::path::{Path, PathBuf};

use super::{split, Counts, SplitError};
use crate::input::{compression_of, decoder, io_reason};

/// Each shard's write buffer.
const WRITE_BUFFER: usize = 1 << 18;

/// A capture split into files.
#[derive(Debug)]
pub struct Split {
    /// What went where.
    pub counts: Counts,
    /// The shards' files, shard 0 first.
    pub paths: Vec<PathBuf>,
}

/// NAME of the shards: the input's file name without its compression and capture extensions.
pub fn stem(path: &str) -> String {
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
/// four) read ahead. `name` is how errors name it.
fn open(path: &str, name: &str) -> Result<(Box<dyn Read + Send>, Vec<u8>), String> {
    let mut source: Box<dyn Read + Send> = if path == "-" {
        Box::new(std::io::stdin())
    } else {
        match std::fs::metadata(path) {
            Err(e) => return Err(format!("{name}: cannot open: {}", io_reason(&e))),
            Ok(m) if m.is_dir() => {
                return Err(format!("{name}: is a directory, not a capture file"))
            }
            Ok(_) => {}
        }
        Box::new(
            std::fs::File::open(path)
                .map_err(|e| format!("{name}: cannot open: {}", io_reason(&e)))?,
        )
    };
    let mut head = Vec::with_capacity(4);
    (&mut source)
        .take(4)
        .read_to_end(&mut head)
        .map_err(|e| format!("{name}: cannot read: {}", io_reason(&e)))?;
    let kind = compression_of(&head);
    let mut r = decoder(head, source, kind).map_err(|e| format!("{name}: cannot read: {e}"))?;
    let mut magic = Vec::with_capacity(4);
    (&mut r).take(4).read_to_end(&mut magic).map_err(|e| {
        let what = kind.unwrap_or("read");
        format!("{name}: {what}: {e}")
    })?;
    Ok((r, magic))
}

/// Splits the capture `path` (`-`: standard input; `name` names it in errors) into `shards`
/// files in `dir` (made if missing): DIR/NAME.K.EXT, K zero-padded to the width of
/// `shards - 1`, EXT the format found in the bytes. An error is one line; the shards written
/// so far are removed then.
pub fn split_to_dir(path: &str, name: &str, shards: usize, dir: &Path) -> Result<Split, String> {
    let (r, magic) = open(path, name)?;
    if magic.is_empty() {
        return Err(format!(
            "{name}: empty, not a capture (make one with: tcpdump -i lo -w FILE)"
        ));
    }
    let ext = if magic == [0x0a, 0x0d, 0x0d, 0x0a] {
        "pcapng"
    } else {
        "pcap"
    };
    std::fs::create_dir_all(dir).map_err(|e| {
        format!(
            "{}: cannot make the output directory: {} (give another with -w)",
            dir.display(),
            io_reason(&e)
        )
    })?;
    let n = shards.max(1);
    let width = (n - 1).to_string().len();
    let stem = stem(path);
    let paths: Vec<PathBuf> = (0..n)
        .map(|k| dir.join(format!("{stem}.{k:0width$}.{ext}")))
        .collect();
    let mut outs = Vec::with_capacity(n);
    for p in &paths {
        match std::fs::File::create(p) {
            Ok(f) => outs.push(BufWriter::with_capacity(WRITE_BUFFER, f)),
            Err(e) => {
                remove(&paths[..outs.len()]);
                return Err(format!(
                    "{}: cannot write: {} (give another directory with -w)",
                    p.display(),
                    io_reason(&e)
                ));
            }
        }
    }
    let result = split(std::io::Cursor::new(magic).chain(r), &mut outs);
    let flushed = outs
        .iter_mut()
        .enumerate()
        .try_for_each(|(k, w)| w.flush().map_err(|e| SplitError::Write(k, e)));
    match result.and_then(|c| flushed.map(|()| c)) {
        Ok(counts) => Ok(Split { counts, paths }),
        Err(e) => {
            // No half-written shards are left behind.
            drop(outs);
            remove(&paths);
            Err(match e {
                SplitError::Write(k, e) => {
                    format!("{}: cannot write: {}", paths[k].display(), io_reason(&e))
                }
                SplitError::Read(e) => format!("{name}: cannot read: {e}"),
                SplitError::Format(m) => format!("{name}: {m}"),
            })
        }
    }
}

fn remove(paths: &[PathBuf]) {
    for p in paths {
        let _ = std::fs::remove_file(p);
    }
}

#[cfg(test)]
mod tests {
    use super::stem;

    #[test]
    fn the_stem_drops_compression_then_the_capture_extension() {
        assert_eq!(stem("/a/b/day.pcap.gz"), "day");
        assert_eq!(stem("x.pcapng.zst"), "x");
        assert_eq!(stem("x.cap"), "x");
        assert_eq!(stem("x.tar"), "x.tar");
        assert_eq!(stem(".pcap"), "capture");
        assert_eq!(stem("-"), "stdin");
    }
}
