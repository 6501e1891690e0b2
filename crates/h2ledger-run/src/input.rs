//! Reading a saved capture's bytes before libpcap sees them: gzip and zstd streams (known by
//! their magic bytes, not by the file name) decompressed as they are read, and a forward-only
//! reader that can seek ahead ([`Forward`]) for the pcapng key scan. Pure: `std::io` readers
//! over any `Read`; hostile bytes end in an `io::Error`, never a panic, and a zstd header
//! cannot make the decoder allocate more than ruzstd's 100 MiB window.
#![forbid(unsafe_code)]

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
struct Zstd<R: BufRead> {
    src: R,
    dec: ruzstd::decoding::FrameDecoder,
    /// A frame is being decoded.
    active: bool,
}

impl<R: BufRead> Zstd<R> {
    fn new(src: R) -> Zstd<R> {
        Zstd {
            src,
            dec: ruzstd::decoding::FrameDecoder::new(),
            active: false,
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
        loop {
            if self.active {
                while self.dec.can_collect() < buf.len() && !self.dec.is_finished() {
                    let want = buf.len() - self.dec.can_collect();
                    self.dec
                        .decode_blocks(&mut self.src, BlockDecodingStrategy::UptoBytes(want))
                        .map_err(zstd_error)?;
                }
                let n = self.dec.read(buf)?;
                if n > 0 {
                    return Ok(n);
                }
                self.active = false;
            }
            if self.src.fill_buf()?.is_empty() {
                return Ok(0);
            }
            match self.dec.reset(&mut self.src) {
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
    if text.contains("UnexpectedEof") {
        std::io::Error::other("the compressed stream ends early (a cut file?)")
    } else {
        std::io::Error::other(format!("corrupt stream ({text})"))
    }
}

/// A forward-only reader that can [`std::io::Seek`] ahead, for the pcapng key scan of a file
/// or a decompressed stream: a seek forward consumes the buffer of `R` (nothing is copied, and
/// a plain file is read in large blocks, never sought). `BufReader::seek` would empty its buffer
/// on every call: an `lseek` and a fresh buffer-sized `read` per pcapng block, 26 times the
/// time of reading the packets (issue 24).
pub struct Forward<R> {
    r: R,
    pos: u64,
}

impl<R: BufRead> Forward<R> {
    /// `r`, at position 0.
    pub fn new(r: R) -> Forward<R> {
        Forward { r, pos: 0 }
    }
}

impl<R: BufRead> Read for Forward<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.r.read(buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl<R: BufRead> std::io::Seek for Forward<R> {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        let target = match to {
            std::io::SeekFrom::Start(n) => Some(n),
            std::io::SeekFrom::Current(d) => self.pos.checked_add_signed(d),
            std::io::SeekFrom::End(_) => None,
        };
        match target {
            Some(t) if t >= self.pos => {
                while self.pos < t {
                    let buf = match self.r.fill_buf() {
                        Ok(b) => b,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                        Err(e) => return Err(e),
                    };
                    if buf.is_empty() {
                        return Err(std::io::ErrorKind::UnexpectedEof.into());
                    }
                    let n = buf
                        .len()
                        .min(usize::try_from(t - self.pos).unwrap_or(usize::MAX));
                    self.r.consume(n);
                    self.pos += n as u64;
                }
                Ok(self.pos)
            }
            _ => Err(std::io::Error::other("the key scan cannot seek back")),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{BufReader, Read, Seek, SeekFrom};

    use super::Forward;

    /// Seeks ahead within the buffer, across several refills, and past the end.
    #[test]
    fn forward_seeks_ahead_by_consuming() {
        let bytes: Vec<u8> = (0..=255u8).cycle().take(10_000).collect();
        let mut f = Forward::new(BufReader::with_capacity(64, &bytes[..]));
        let mut b = [0u8; 4];
        f.read_exact(&mut b).unwrap();
        assert_eq!(b, [0, 1, 2, 3]);
        assert_eq!(f.seek(SeekFrom::Current(6)).unwrap(), 10);
        f.read_exact(&mut b).unwrap();
        assert_eq!(b, [10, 11, 12, 13]);
        assert_eq!(f.seek(SeekFrom::Current(1_000)).unwrap(), 1_014);
        f.read_exact(&mut b).unwrap();
        assert_eq!(b, bytes[1_014..1_018]);
        assert_eq!(f.seek(SeekFrom::Start(9_000)).unwrap(), 9_000);
        assert!(f.seek(SeekFrom::Current(-1)).is_err(), "never back");
        assert_eq!(
            f.seek(SeekFrom::Current(5_000)).unwrap_err().kind(),
            std::io::ErrorKind::UnexpectedEof
        );
    }
}
