//! Reading a saved capture's bytes: gzip and zstd streams (known by their magic bytes, not by
//! the file name) decompressed as they are read, and the one reader of records ([`Blocks`],
//! [`BlockReader`]): classic pcap and pcapng, with a pcapng's Decryption Secrets Blocks in
//! file order among its packets. Pure: `std::io` readers over any `Read`; hostile bytes end in
//! an `io::Error` or a damaged record, never a panic, and a zstd header cannot make the
//! decoder allocate more than ruzstd's 100 MiB window.
#![forbid(unsafe_code)]

mod blocks;

pub use blocks::{
    nanos, BlockReader, Blocks, Damage, Filled, Found, Kind, Raw, Record, MAX_BLOCK,
    MAX_INTERFACES, MAX_RECORD, TLS_KEY_LOG,
};

use std::io::{BufRead, BufReader, Read};

/// Compression formats read transparently, by their magic bytes.
pub fn compression_of(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(&[0x1f, 0x8b]) {
        Some("gzip")
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Some("zstd")
    } else {
        None
    }
}

/// The decompressed bytes of `r` (whose first bytes are `head`, already read), or the bytes as
/// they are when `kind` is `None`.
pub fn decoder(
    head: Vec<u8>,
    r: impl Read + Send + 'static,
    kind: Option<&'static str>,
) -> std::io::Result<Box<dyn Read + Send>> {
    let r = BufReader::with_capacity(1 << 16, std::io::Cursor::new(head).chain(r));
    Ok(match kind {
        Some("gzip") => Box::new(flate2::bufread::MultiGzDecoder::new(r)),
        Some(_) => Box::new(Zstd::new(r)),
        None => Box::new(r),
    })
}

/// A zstd stream of one or more frames (`cat a.zst b.zst` is one stream), skippable frames
/// skipped. The decoder refuses a window above 100 MiB (ruzstd's limit): a hostile header
/// cannot make it allocate more.
///
/// A frame cut or damaged inside: ruzstd holds back the last window of what it decoded (up to
/// the window size: all of a small file) until the frame's last block, so the bytes before
/// the damage would be lost with it. The current frame's compressed bytes are kept (up to
/// [`ZSTD_SALVAGE`]); at the damage they are decoded again up to the last whole block,
/// followed by an empty last block (and a checksum's place when the frame has one), and what
/// was not yet handed out is, before the error (decision 83: the packets before a cut
/// count). Beyond [`ZSTD_SALVAGE`] the last window is lost.
struct Zstd<R: BufRead> {
    src: R,
    dec: ruzstd::decoding::FrameDecoder,
    /// A frame is being decoded.
    active: bool,
    /// The current frame's compressed bytes, while at most [`ZSTD_SALVAGE`] (`kept_all`).
    kept: Vec<u8>,
    kept_all: bool,
    /// Bytes of the current frame handed out.
    given: u64,
    /// Salvaged bytes still to hand out, then the error that ended the stream.
    salvaged: std::collections::VecDeque<u8>,
    error: Option<std::io::Error>,
}

/// The compressed bytes of a frame kept for salvage (see [`Zstd`]).
const ZSTD_SALVAGE: usize = 8 << 20;

/// Reads from `r`, keeping a copy of what it read in `kept` while `*all` (up to
/// [`ZSTD_SALVAGE`], then nothing).
struct Keep<'a, R> {
    r: &'a mut R,
    kept: &'a mut Vec<u8>,
    all: &'a mut bool,
}

impl<R: Read> Read for Keep<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.r.read(buf)?;
        if *self.all {
            if self.kept.len() + n > ZSTD_SALVAGE {
                *self.all = false;
                *self.kept = Vec::new();
            } else {
                self.kept.extend_from_slice(&buf[..n]);
            }
        }
        Ok(n)
    }
}

impl<R: BufRead> Zstd<R> {
    fn new(src: R) -> Zstd<R> {
        Zstd {
            src,
            dec: ruzstd::decoding::FrameDecoder::new(),
            active: false,
            kept: Vec::new(),
            kept_all: true,
            given: 0,
            salvaged: Default::default(),
            error: None,
        }
    }

    /// The current frame's bytes not yet handed out, decoded again from the kept compressed
    /// bytes up to the last whole block (`e`: how decoding failed).
    fn salvage(&mut self, e: &ruzstd::decoding::errors::FrameDecoderError) -> Vec<u8> {
        use ruzstd::decoding::errors::FrameDecoderError as E;
        use ruzstd::decoding::BlockDecodingStrategy;
        if !self.kept_all {
            return Vec::new();
        }
        let read = self.dec.bytes_read_from_source() as usize;
        // An empty raw block marked last (a 3-byte block header), and a checksum's place.
        const LAST: [u8; 7] = [1, 0, 0, 0, 0, 0, 0];
        // The counter holds the failed block's 3-byte header when its body failed.
        let (whole, end): (usize, &[u8]) = match e {
            E::FailedToReadBlockBody(_) => (read.saturating_sub(3), &LAST),
            E::FailedToReadBlockHeader(_) => (read, &LAST),
            E::FailedToReadChecksum(_) => (read, &LAST[3..]),
            _ => return Vec::new(),
        };
        let Some(head) = self.kept.get(..whole) else {
            return Vec::new();
        };
        let mut again = head.to_vec();
        again.extend_from_slice(end);
        let mut dec = ruzstd::decoding::FrameDecoder::new();
        let mut src = &again[..];
        if dec.reset(&mut src).is_err() {
            return Vec::new();
        }
        // Decoded a step at a time and drained, what was handed out skipped: what is kept is
        // at most what the first decoder held back (about a window), however much the frame
        // decodes to.
        let mut skip = usize::try_from(self.given).unwrap_or(usize::MAX);
        let mut out = Vec::new();
        loop {
            let Ok(finished) =
                dec.decode_blocks(&mut src, BlockDecodingStrategy::UptoBytes(1 << 20))
            else {
                return Vec::new();
            };
            let chunk = dec.collect().unwrap_or_default();
            let k = skip.min(chunk.len());
            skip -= k;
            out.extend_from_slice(&chunk[k..]);
            if finished && dec.is_finished() {
                out.extend_from_slice(&dec.collect().unwrap_or_default());
                return out;
            }
            if finished {
                return Vec::new();
            }
        }
    }
}

impl<R: BufRead> Read for Zstd<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use ruzstd::decoding::errors::{FrameDecoderError, ReadFrameHeaderError};
        use ruzstd::decoding::BlockDecodingStrategy;
        if buf.is_empty() {
            return Ok(0);
        }
        if !self.salvaged.is_empty() {
            return self.salvaged.read(buf);
        }
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        loop {
            if self.active {
                while self.dec.can_collect() < buf.len() && !self.dec.is_finished() {
                    let want = buf.len() - self.dec.can_collect();
                    let mut src = Keep {
                        r: &mut self.src,
                        kept: &mut self.kept,
                        all: &mut self.kept_all,
                    };
                    if let Err(e) = self
                        .dec
                        .decode_blocks(&mut src, BlockDecodingStrategy::UptoBytes(want))
                    {
                        // What was decoded before the damage is handed out, then the error.
                        let rest = self.salvage(&e);
                        self.active = false;
                        let e = zstd_error(e);
                        if rest.is_empty() {
                            return Err(e);
                        }
                        self.error = Some(e);
                        self.salvaged = rest.into();
                        return self.salvaged.read(buf);
                    }
                }
                let n = self.dec.read(buf)?;
                if n > 0 {
                    self.given += n as u64;
                    return Ok(n);
                }
                self.active = false;
            }
            if self.src.fill_buf()?.is_empty() {
                return Ok(0);
            }
            self.kept.clear();
            self.kept_all = true;
            self.given = 0;
            let mut src = Keep {
                r: &mut self.src,
                kept: &mut self.kept,
                all: &mut self.kept_all,
            };
            match self.dec.reset(&mut src) {
                Ok(()) => self.active = true,
                Err(FrameDecoderError::ReadFrameHeaderError(ReadFrameHeaderError::SkipFrame {
                    length,
                    ..
                })) => {
                    let skipped = std::io::copy(
                        &mut (&mut self.src).take(length.into()),
                        &mut std::io::sink(),
                    )?;
                    if skipped < u64::from(length) {
                        return Err(std::io::ErrorKind::UnexpectedEof.into());
                    }
                }
                Err(e) => return Err(zstd_error(e)),
            }
        }
    }
}

/// ruzstd's errors print their inner `Debug`; a cut stream is the common case, say it plainly.
fn zstd_error(e: impl std::fmt::Display) -> std::io::Error {
    let text = e.to_string();
    // A cut shows as the reader's end of file, by its kind or by its message (a block or the
    // checksum read short).
    if text.contains("UnexpectedEof") || text.contains("failed to fill whole buffer") {
        std::io::Error::other("the compressed stream ends early (a cut file?)")
    } else if text.contains("dictionary id") {
        // zstd's own CLI never writes one for a file; ruzstd's text names its API.
        std::io::Error::other(
            "corrupt stream (its frame header asks for a zstd dictionary, which no capture \
             file uses)",
        )
    } else {
        std::io::Error::other(format!("corrupt stream ({text})"))
    }
}

/// The TLS key log text of every Decryption Secrets Block of a whole pcapng held in memory, in
/// file order, each block's text ending with a newline, and how many blocks held one; `None`
/// when `file` is not a pcapng. For tests and tools that hold a file's bytes: a run reads the
/// secrets where they lie among the packets ([`Found::Secrets`]). A damaged block ends the
/// walk with what was found before it.
pub fn key_log_of(file: &[u8]) -> Option<(String, u32)> {
    let (mut text, mut blocks) = (String::new(), 0);
    let mut walker = Blocks::new();
    walker.walk(file, |f| {
        if let Found::Secrets {
            kind: TLS_KEY_LOG,
            start,
            len,
        } = f
        {
            blocks += 1;
            text.push_str(&String::from_utf8_lossy(&file[start..start + len]));
            if !text.ends_with('\n') {
                text.push('\n');
            }
        }
    });
    walker.is_pcapng().then_some((text, blocks))
}

/// The 16-bit number at `b[i..i + 2]` in the capture's byte order (`big`: big-endian), for the
/// reader of pcap and pcapng records.
pub(crate) fn u16_at(big: bool, b: &[u8], i: usize) -> u16 {
    let x = [b[i], b[i + 1]];
    if big {
        u16::from_be_bytes(x)
    } else {
        u16::from_le_bytes(x)
    }
}

/// The 32-bit number at `b[i..i + 4]`, as [`u16_at`].
pub(crate) fn u32_at(big: bool, b: &[u8], i: usize) -> u32 {
    let x = [b[i], b[i + 1], b[i + 2], b[i + 3]];
    if big {
        u32::from_be_bytes(x)
    } else {
        u32::from_le_bytes(x)
    }
}

/// An I/O error as one line's reason: what failed and, where it helps, what to do.
pub fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".to_string(),
        std::io::ErrorKind::PermissionDenied => {
            "permission denied (check the file's mode, or run as its owner)".to_string()
        }
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    /// A zstd frame cut or damaged anywhere hands out a prefix of the original before its
    /// error, every byte when only the checksum is cut (decision 83).
    #[test]
    fn a_cut_zstd_frame_hands_out_what_it_decoded() {
        // Smaller than the window: without salvage nothing of a cut frame comes out.
        let original: Vec<u8> = (0..75_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let mut z = Vec::new();
        ruzstd::encoding::compress(
            &original[..],
            &mut z,
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        let read = |b: &[u8]| {
            let head = b[..4].to_vec();
            let mut r =
                super::decoder(head, std::io::Cursor::new(b[4..].to_vec()), Some("zstd")).unwrap();
            let mut out = Vec::new();
            let end = r.read_to_end(&mut out);
            (out, end.is_ok())
        };
        assert_eq!(read(&z), (original.clone(), true));
        let mut salvaged = 0;
        for cut in (8..z.len()).step_by(z.len() / 37 + 1) {
            let (out, ok) = read(&z[..cut]);
            assert!(!ok, "cut at {cut}: an error at the end");
            assert!(original.starts_with(&out), "cut at {cut}: a prefix");
            salvaged += usize::from(!out.is_empty());
        }
        assert!(salvaged > 20, "{salvaged} cuts gave bytes");
    }

    /// A frame header that asks for a dictionary (random bytes after the magic, from a QA
    /// sweep): said in our words, not ruzstd's API names.
    #[test]
    fn a_dictionary_is_said_plainly() {
        let b = [
            0x75, 0x3d, 0x5a, 0xeb, 0xe3, 0x1f, 0xbb, 0x65, 0x32, 0x35, 0xb4, 0x1e, 0xf6, 0x8e,
            0xc3, 0x88, 0xdd, 0xde, 0xed, 0x28, 0x92, 0x30, 0x81, 0x59,
        ];
        let head = vec![0x28, 0xb5, 0x2f, 0xfd];
        let mut r = super::decoder(head, std::io::Cursor::new(b.to_vec()), Some("zstd")).unwrap();
        let e = r.read_to_end(&mut Vec::new()).unwrap_err().to_string();
        assert!(
            e.contains("asks for a zstd dictionary") && !e.contains("add_dict"),
            "{e}"
        );
    }
}
