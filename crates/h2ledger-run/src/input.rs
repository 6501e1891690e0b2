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

/// The 16-bit number at `b[i..i + 2]` in the capture's byte order (`big`: big-endian), for the
/// readers of pcap and pcapng records here and in [`crate::split`].
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

/// The largest packet the reader of blocks delivers itself: libpcap's largest snapshot for
/// most link types (`MAXIMUM_SNAPLEN`, libpcap's pcap-int.h). A longer record is left to
/// libpcap, whose rule for it depends on the link type.
pub const MAX_RECORD: u32 = 262_144;
/// The largest pcapng block the reader of blocks takes (a packet block of [`MAX_RECORD`] bytes
/// is smaller); a larger one (a long key log's Decryption Secrets Block, a custom block) is
/// left to libpcap, which takes blocks up to 16 MiB.
pub const MAX_BLOCK: u32 = 1024 * 1024;
/// Interfaces of a pcapng file the reader of blocks keeps; more are left to libpcap.
const MAX_INTERFACES: usize = 256;

/// What [`Blocks::next`] found at the start of the bytes it was given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Record {
    /// A packet: its bytes are `b[start..start + len]`, and the record ends at `next`.
    Packet {
        /// Nanoseconds since the epoch.
        ts: i64,
        /// Where the packet's bytes begin.
        start: usize,
        /// The captured length.
        len: usize,
        /// Where the next record begins.
        next: usize,
    },
    /// A header or a block without a packet, `next` bytes long: stepped over.
    Skip {
        /// Where the next record begins.
        next: usize,
    },
    /// The bytes end inside the record, which is `need` bytes long (at least): more are
    /// needed, or the file is cut there (libpcap says so).
    More {
        /// The record's length, as far as it is known.
        need: usize,
    },
    /// Something libpcap may read otherwise than as a plain packet (see [`Blocks`]): libpcap
    /// reads the file from this record on.
    Odd,
}

/// A saved capture's records read straight from its bytes, for the reading thread that reads
/// a regular file in large blocks (decision 264). Only what every libpcap since 1.10 delivers
/// the same way is taken: classic pcap 2.4 in either byte order with microsecond or
/// nanosecond stamps, and pcapng 1.0 with its interfaces described before the first packet,
/// each in microseconds or nanoseconds, packets in Enhanced Packet Blocks. Every packet comes
/// out as libpcap opened with nanosecond precision gives it. Anything else (a snapshot length
/// exceeded, a stamp beyond 2038, a Simple Packet Block, a second section, an interface with a
/// time offset, a block length that is not a multiple of 4) is [`Record::Odd`], and libpcap
/// takes over there. Pure; never panics; each `Skip` and `Packet` moves forward.
#[derive(Clone, Debug, Default)]
pub struct Blocks {
    /// Nothing read yet: the file's header is next.
    started: bool,
    /// The format, once known.
    pcapng: bool,
    /// Big-endian numbers.
    big: bool,
    /// Classic pcap: nanosecond stamps.
    nanos: bool,
    /// The snapshot length: classic pcap's header's; pcapng's first interface's, as libpcap
    /// adjusts it.
    snaplen: u32,
    /// pcapng: per interface, nanosecond stamps (else microseconds).
    ifaces: Vec<bool>,
    /// pcapng: the first interface's link type.
    linktype: u16,
    /// A packet was returned (an interface described later is left to libpcap).
    packets: bool,
}

impl Blocks {
    /// A reader at the start of a file.
    pub fn new() -> Blocks {
        Blocks::default()
    }

    fn u16_at(&self, b: &[u8], i: usize) -> u16 {
        crate::input::u16_at(self.big, b, i)
    }

    fn u32_at(&self, b: &[u8], i: usize) -> u32 {
        crate::input::u32_at(self.big, b, i)
    }

    /// Every record of `b` in turn, until one is not whole ([`Record::More`]) or is left to
    /// libpcap ([`Record::Odd`]): `packet(ts, start, len)` for each packet, its bytes
    /// `b[start..start + len]`. Returns where the records that were read end, and the one
    /// that stopped the walk.
    pub fn walk(&mut self, b: &[u8], mut packet: impl FnMut(i64, usize, usize)) -> (usize, Record) {
        let mut at = 0;
        loop {
            match self.next(&b[at..]) {
                Record::Packet {
                    ts,
                    start,
                    len,
                    next,
                } => {
                    packet(ts, at + start, len);
                    at += next;
                }
                Record::Skip { next } => at += next,
                end => return (at, end),
            }
        }
    }

    /// The record at the start of `b` (the file's bytes from the end of the last record).
    pub fn next(&mut self, b: &[u8]) -> Record {
        if !self.started {
            return self.header(b);
        }
        if self.pcapng {
            self.block(b)
        } else {
            self.pcap_record(b)
        }
    }

    /// The file's header: a classic pcap's, or a pcapng's Section Header Block.
    fn header(&mut self, b: &[u8]) -> Record {
        let Some(m) = b.get(..4) else {
            return Record::More { need: 4 };
        };
        match m {
            [0xa1, 0xb2, 0xc3, 0xd4] => (self.big, self.nanos) = (true, false),
            [0xd4, 0xc3, 0xb2, 0xa1] => (self.big, self.nanos) = (false, false),
            [0xa1, 0xb2, 0x3c, 0x4d] => (self.big, self.nanos) = (true, true),
            [0x4d, 0x3c, 0xb2, 0xa1] => (self.big, self.nanos) = (false, true),
            [0x0a, 0x0d, 0x0d, 0x0a] => return self.section(b),
            _ => return Record::Odd,
        }
        if b.len() < 24 {
            return Record::More { need: 24 };
        }
        if (self.u16_at(b, 4), self.u16_at(b, 6)) != (2, 4) {
            return Record::Odd;
        }
        self.snaplen = self.u32_at(b, 16);
        self.started = true;
        Record::Skip { next: 24 }
    }

    /// A classic pcap record.
    fn pcap_record(&mut self, b: &[u8]) -> Record {
        if b.len() < 16 {
            return Record::More { need: 16 };
        }
        let (sec, frac, caplen) = (self.u32_at(b, 0), self.u32_at(b, 4), self.u32_at(b, 8));
        let unit = if self.nanos { 1_000_000_000 } else { 1_000_000 };
        // libpcap keeps the seconds and the fraction as signed 32-bit numbers: only values
        // that read the same both ways are taken here.
        if sec > i32::MAX as u32 || frac >= unit || caplen > self.snaplen || caplen > MAX_RECORD {
            return Record::Odd;
        }
        let len = caplen as usize;
        if b.len() < 16 + len {
            return Record::More { need: 16 + len };
        }
        self.packets = true;
        let scale = if self.nanos { 1 } else { 1_000 };
        Record::Packet {
            ts: i64::from(sec) * 1_000_000_000 + i64::from(frac) * scale,
            start: 16,
            len,
            next: 16 + len,
        }
    }

    /// A pcapng block's type and total length, when it is whole in `b`; else what to return.
    fn whole_block<'b>(&self, b: &'b [u8]) -> Result<(u32, &'b [u8]), Record> {
        if b.len() < 8 {
            return Err(Record::More { need: 12 });
        }
        let (kind, total) = (self.u32_at(b, 0), self.u32_at(b, 4));
        if total < 12 || total % 4 != 0 || total > MAX_BLOCK {
            return Err(Record::Odd);
        }
        let n = total as usize;
        if b.len() < n {
            return Err(Record::More { need: n });
        }
        if self.u32_at(b, n - 4) != total {
            return Err(Record::Odd);
        }
        Ok((kind, &b[8..n - 4]))
    }

    /// The first Section Header Block (its byte order tells that of the file).
    fn section(&mut self, b: &[u8]) -> Record {
        let Some(magic) = b.get(8..12) else {
            return Record::More { need: 12 };
        };
        self.big = match magic {
            [0x1a, 0x2b, 0x3c, 0x4d] => true,
            [0x4d, 0x3c, 0x2b, 0x1a] => false,
            _ => return Record::Odd,
        };
        let body = match self.whole_block(b) {
            Ok((_, body)) => body,
            Err(r) => return r,
        };
        if body.len() < 16 || self.u16_at(body, 4) != 1 || !matches!(self.u16_at(body, 6), 0 | 2) {
            return Record::Odd;
        }
        self.started = true;
        self.pcapng = true;
        Record::Skip {
            next: body.len() + 12,
        }
    }

    /// A pcapng block after the first: an interface, a packet, or one stepped over.
    fn block(&mut self, b: &[u8]) -> Record {
        let (kind, body) = match self.whole_block(b) {
            Ok(x) => x,
            Err(r) => return r,
        };
        let next = body.len() + 12;
        match kind {
            // Interface Description Block.
            0x0000_0001 => self.interface(body, next),
            // Enhanced Packet Block.
            0x0000_0006 => self.packet(body, next),
            // A second section, a Simple Packet Block, an obsolete Packet Block.
            0x0A0D_0D0A | 0x0000_0003 | 0x0000_0002 => Record::Odd,
            _ => Record::Skip { next },
        }
    }

    fn interface(&mut self, body: &[u8], next: usize) -> Record {
        if self.packets || self.ifaces.len() >= MAX_INTERFACES || body.len() < 8 {
            return Record::Odd;
        }
        let linktype = self.u16_at(body, 0);
        let snaplen = adjust_snaplen(self.u32_at(body, 4));
        // libpcap refuses an interface unlike the first one: it says so.
        if !self.ifaces.is_empty() && (linktype != self.linktype || snaplen != self.snaplen) {
            return Record::Odd;
        }
        let mut nanos = false;
        let mut opts = &body[8..];
        let mut resol = false;
        while opts.len() >= 4 {
            let (code, len) = (self.u16_at(opts, 0), usize::from(self.u16_at(opts, 2)));
            let padded = len.div_ceil(4) * 4;
            if code == 0 {
                break;
            }
            if opts.len() < 4 + padded {
                return Record::Odd;
            }
            match code {
                // if_tsresol: 10^-6 or 10^-9, once.
                9 => {
                    if resol || len != 1 {
                        return Record::Odd;
                    }
                    resol = true;
                    nanos = match opts[4] {
                        6 => false,
                        9 => true,
                        _ => return Record::Odd,
                    };
                }
                // if_tsoffset.
                14 => return Record::Odd,
                _ => {}
            }
            opts = &opts[4 + padded..];
        }
        if self.ifaces.is_empty() {
            self.snaplen = snaplen;
            self.linktype = linktype;
        }
        self.ifaces.push(nanos);
        Record::Skip { next }
    }

    fn packet(&mut self, body: &[u8], next: usize) -> Record {
        if body.len() < 20 {
            return Record::Odd;
        }
        let iface = self.u32_at(body, 0) as usize;
        let t = u64::from(self.u32_at(body, 4)) << 32 | u64::from(self.u32_at(body, 8));
        let caplen = self.u32_at(body, 12);
        let Some(&nanos) = self.ifaces.get(iface) else {
            return Record::Odd;
        };
        let len = caplen as usize;
        if caplen > self.snaplen || 20 + len > body.len() {
            return Record::Odd;
        }
        let unit = if nanos { 1_000_000_000 } else { 1_000_000 };
        let (sec, frac) = (t / unit, t % unit);
        if sec > i32::MAX as u64 {
            return Record::Odd;
        }
        let scale = if nanos { 1 } else { 1_000 };
        self.packets = true;
        Record::Packet {
            ts: sec as i64 * 1_000_000_000 + (frac * scale) as i64,
            start: 8 + 20,
            len,
            next,
        }
    }
}

/// How one [`BlockReader::fill`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Filled {
    /// A block was read; more may follow.
    Block,
    /// The file ended after its last whole record.
    End,
    /// A record [`Blocks`] leaves to libpcap, a file cut inside a record, or a read error:
    /// libpcap reads the rest, from the first packet not delivered.
    Odd,
}

/// A saved capture read in large blocks, each handed out with where its packets lie in it
/// (decision 264): one read per block and no copy per packet. A record that a block's end
/// cuts begins the next block; a block is `size` bytes or the next whole record if that is
/// longer (at most [`MAX_BLOCK`] bytes), plus the cut part of a record from the block before:
/// at most `size` + [`MAX_BLOCK`] bytes, whatever the file says.
pub struct BlockReader<R> {
    r: R,
    blocks: Blocks,
    size: usize,
    /// The bytes of a record that the last block cut, and that record's length if known.
    tail: Vec<u8>,
    need: usize,
    /// Bytes read from `r` so far.
    read: u64,
}

impl<R: Read> BlockReader<R> {
    /// A reader of `r` from the start of the file, in blocks of `size` bytes.
    pub fn new(r: R, size: usize) -> BlockReader<R> {
        BlockReader {
            r,
            blocks: Blocks::new(),
            size: size.max(1),
            tail: Vec::new(),
            need: 0,
            read: 0,
        }
    }

    /// Bytes read from the file so far (a progress display's figure).
    pub fn bytes_read(&self) -> u64 {
        self.read
    }

    /// The next block into `data`, and each of its packets' time, start and length into
    /// `packets` (both cleared first).
    pub fn fill(&mut self, data: &mut Vec<u8>, packets: &mut Vec<(i64, usize, usize)>) -> Filled {
        data.clear();
        packets.clear();
        data.extend_from_slice(&self.tail);
        // Enough for the record the tail begins (its length, when known, is at most
        // MAX_BLOCK: [`Blocks`] leaves longer ones to libpcap).
        let want = self.size.max(self.need.saturating_sub(self.tail.len())) as u64;
        let eof = match (&mut self.r).take(want).read_to_end(data) {
            Ok(n) => {
                self.read += n as u64;
                (n as u64) < want
            }
            Err(_) => return Filled::Odd,
        };
        let (at, end) = self
            .blocks
            .walk(data, |ts, start, len| packets.push((ts, start, len)));
        let odd = match end {
            Record::More { need } => {
                self.need = need;
                false
            }
            _ => true,
        };
        self.tail.clear();
        self.tail.extend_from_slice(&data[at..]);
        data.truncate(at);
        if odd || (eof && !self.tail.is_empty()) {
            Filled::Odd
        } else if eof {
            Filled::End
        } else {
            Filled::Block
        }
    }
}

/// A pcapng interface's snapshot length as libpcap uses it (`pcapint_adjust_snapshot`: 0 or
/// beyond the largest is the largest), capped at [`MAX_RECORD`].
fn adjust_snaplen(s: u32) -> u32 {
    if s == 0 || s > MAX_RECORD {
        MAX_RECORD
    } else {
        s
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

    use super::{Blocks, Record, MAX_RECORD};

    fn pcap(be: bool, nanos: bool, snaplen: u32, recs: &[(u32, u32, &[u8])]) -> Vec<u8> {
        let w32 = |v: u32| if be { v.to_be_bytes() } else { v.to_le_bytes() };
        let w16 = |v: u16| if be { v.to_be_bytes() } else { v.to_le_bytes() };
        let mut o = Vec::new();
        o.extend(w32(if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 }));
        o.extend(w16(2));
        o.extend(w16(4));
        o.extend(w32(0));
        o.extend(w32(0));
        o.extend(w32(snaplen));
        o.extend(w32(1));
        for &(sec, frac, data) in recs {
            o.extend(w32(sec));
            o.extend(w32(frac));
            o.extend(w32(data.len() as u32));
            o.extend(w32(data.len() as u32));
            o.extend(data);
        }
        o
    }

    /// Every record of `b`, fed as the reading thread does (the rest after each record).
    fn all(b: &[u8]) -> (Vec<(i64, Vec<u8>)>, Record) {
        let mut out = Vec::new();
        let (_, end) = Blocks::new().walk(b, |ts, start, len| {
            out.push((ts, b[start..start + len].to_vec()));
        });
        (out, end)
    }

    #[test]
    fn classic_pcap_in_both_orders_and_units() {
        for be in [false, true] {
            for nanos in [false, true] {
                let f = pcap(be, nanos, 65_535, &[(1, 2, b"ab"), (3, 999_999, b"")]);
                let (p, end) = all(&f);
                let k = if nanos { 1 } else { 1_000 };
                assert_eq!(
                    p,
                    vec![
                        (1_000_000_000 + 2 * k, b"ab".to_vec()),
                        (3_000_000_000 + 999_999 * k, vec![])
                    ],
                    "be {be} nanos {nanos}"
                );
                assert_eq!(end, Record::More { need: 16 }, "the end of the file");
            }
        }
    }

    /// What libpcap may read otherwise is left to it; a cut record asks for its length.
    #[test]
    fn classic_pcap_odd_records() {
        let odd = |f: Vec<u8>| all(&f).1;
        assert_eq!(
            odd(pcap(false, false, 1, &[(1, 0, b"ab")])),
            Record::Odd,
            "beyond snaplen"
        );
        assert_eq!(
            odd(pcap(false, false, 0, &[(1, 0, b"a")])),
            Record::Odd,
            "snaplen 0"
        );
        assert_eq!(
            odd(pcap(false, false, 9, &[(1, 1_000_000, b"a")])),
            Record::Odd
        );
        assert_eq!(
            odd(pcap(false, true, 9, &[(1, 1_000_000_000, b"a")])),
            Record::Odd
        );
        assert_eq!(
            odd(pcap(false, false, 9, &[(0x8000_0000, 0, b"a")])),
            Record::Odd,
            "2038"
        );
        let big = vec![0u8; MAX_RECORD as usize + 1];
        assert_eq!(
            odd(pcap(false, false, u32::MAX, &[(1, 0, &big)])),
            Record::Odd
        );
        let mut f = pcap(false, false, 9, &[(1, 0, b"abcd")]);
        f.truncate(f.len() - 1);
        assert_eq!(all(&f), (vec![], Record::More { need: 20 }));
        let mut v = pcap(false, false, 9, &[]);
        v[6] = 3;
        assert_eq!(all(&v).1, Record::Odd, "version 2.3");
        assert_eq!(all(b"\xa1\xb2\xcd\x34").1, Record::Odd, "modified pcap");
        assert_eq!(all(b"\xd4\xc3").1, Record::More { need: 4 });
    }

    struct Ng {
        be: bool,
        out: Vec<u8>,
    }

    impl Ng {
        fn w32(&self, v: u32) -> [u8; 4] {
            if self.be {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        }
        fn w16(&self, v: u16) -> [u8; 2] {
            if self.be {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        }
        fn block(&mut self, kind: u32, body: &[u8]) {
            let total = (12 + body.len().div_ceil(4) * 4) as u32;
            let (k, t) = (self.w32(kind), self.w32(total));
            self.out.extend(k);
            self.out.extend(t);
            self.out.extend(body);
            self.out.resize(self.out.len().div_ceil(4) * 4, 0);
            self.out.extend(t);
        }
        fn section(&mut self) {
            let mut b = self.w32(0x1A2B_3C4D).to_vec();
            b.extend(self.w16(1));
            b.extend(self.w16(0));
            b.extend([0xff; 8]);
            self.block(0x0A0D_0D0A, &b);
        }
        fn interface(&mut self, linktype: u16, snaplen: u32, opts: &[(u16, &[u8])]) {
            let mut b = self.w16(linktype).to_vec();
            b.extend([0, 0]);
            b.extend(self.w32(snaplen));
            for &(code, v) in opts {
                b.extend(self.w16(code));
                b.extend(self.w16(v.len() as u16));
                b.extend(v);
                b.resize(b.len().div_ceil(4) * 4, 0);
            }
            if !opts.is_empty() {
                b.extend([0; 4]);
            }
            self.block(1, &b);
        }
        fn packet(&mut self, iface: u32, t: u64, data: &[u8]) {
            let mut b = self.w32(iface).to_vec();
            b.extend(self.w32((t >> 32) as u32));
            b.extend(self.w32(t as u32));
            b.extend(self.w32(data.len() as u32));
            b.extend(self.w32(data.len() as u32));
            b.extend(data);
            self.block(6, &b);
        }
    }

    #[test]
    fn pcapng_interfaces_units_and_skipped_blocks() {
        for be in [false, true] {
            let mut ng = Ng { be, out: vec![] };
            ng.section();
            ng.interface(1, 0, &[(2, b"lo"), (9, &[6])]);
            ng.interface(1, 262_144, &[(9, &[9])]);
            ng.block(0x0A, b"TLSK\x04\x00\x00\x00keys");
            ng.packet(0, 1_500_000, b"abc");
            ng.block(4, &[0; 8]);
            ng.packet(1, 2_000_000_007, b"");
            ng.block(0x0BAD, b"skip");
            let (p, end) = all(&ng.out);
            assert_eq!(
                p,
                vec![(1_500_000_000, b"abc".to_vec()), (2_000_000_007, vec![])],
                "be {be}"
            );
            assert_eq!(end, Record::More { need: 12 });
        }
    }

    /// Each thing libpcap may read otherwise, or refuse, is left to it.
    #[test]
    fn pcapng_odd_blocks() {
        let odd = |f: &dyn Fn(&mut Ng)| {
            let mut ng = Ng {
                be: false,
                out: vec![],
            };
            ng.section();
            f(&mut ng);
            all(&ng.out)
        };
        // (what, the blocks after the section header, the end the reader reaches)
        type Case<'a> = (&'a str, &'a dyn Fn(&mut Ng), Record);
        let cases: [Case; 13] = [
            ("no interface", &|n| n.packet(0, 1, b"a"), Record::Odd),
            (
                "an interface not described",
                &|n| {
                    n.interface(1, 0, &[]);
                    n.packet(1, 1, b"a")
                },
                Record::Odd,
            ),
            (
                "beyond the snapshot length",
                &|n| {
                    n.interface(1, 4, &[]);
                    n.packet(0, 1, b"abcde")
                },
                Record::Odd,
            ),
            (
                "binary time resolution",
                &|n| n.interface(1, 0, &[(9, &[0x86])]),
                Record::Odd,
            ),
            (
                "a time offset",
                &|n| n.interface(1, 0, &[(14, &[0; 8])]),
                Record::Odd,
            ),
            (
                "another link type",
                &|n| {
                    n.interface(1, 0, &[]);
                    n.interface(113, 0, &[])
                },
                Record::Odd,
            ),
            (
                "a second section",
                &|n| {
                    n.interface(1, 0, &[]);
                    n.section()
                },
                Record::Odd,
            ),
            (
                "a simple packet block",
                &|n| n.block(3, &[0; 8]),
                Record::Odd,
            ),
            (
                "a length not a multiple of 4",
                &|n| n.out.extend([1, 0, 0, 0, 13, 0, 0, 0]),
                Record::Odd,
            ),
            (
                "a block beyond the largest",
                &|n| n.out.extend([1, 0, 0, 0, 0, 0, 32, 0]),
                Record::Odd,
            ),
            (
                "a block cut",
                &|n| n.out.extend([1, 0, 0, 0, 16, 0, 0, 0]),
                Record::More { need: 16 },
            ),
            (
                "a trailing length unlike the leading one",
                &|n| n.out.extend([9, 0, 0, 0, 12, 0, 0, 0, 16, 0, 0, 0]),
                Record::Odd,
            ),
            (
                "an interface after a packet",
                &|n| {
                    n.interface(1, 0, &[]);
                    n.packet(0, 1, b"a");
                    n.interface(1, 0, &[])
                },
                Record::Odd,
            ),
        ];
        for (what, blocks, end) in cases {
            let (packets, got) = odd(blocks);
            assert_eq!(got, end, "{what}");
            // Only the last case has a packet before its odd block.
            let want = usize::from(what == "an interface after a packet");
            assert_eq!(packets.len(), want, "{what}: packets before the end");
        }
    }

    /// Any bytes: no panic, and every record moves forward within the bytes given.
    #[test]
    fn any_bytes_move_forward() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut bytes = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut seeds: Vec<Vec<u8>> =
            vec![pcap(false, false, 64, &[(1u32, 2u32, &b"abcd"[..]); 8])];
        let mut ng = Ng {
            be: true,
            out: vec![],
        };
        ng.section();
        ng.interface(1, 64, &[(9, &[9])]);
        for i in 0..8 {
            ng.packet(0, i, b"abcdefg");
        }
        seeds.push(ng.out);
        for seed in &seeds {
            for _ in 0..2_000 {
                let mut b = seed.clone();
                for _ in 0..(bytes() % 4 + 1) {
                    let i = (bytes() as usize) % b.len();
                    b[i] = bytes() as u8;
                }
                b.truncate((bytes() as usize) % (b.len() + 1));
                let mut r = Blocks::new();
                let mut at = 0;
                loop {
                    match r.next(&b[at..]) {
                        Record::Packet {
                            start, len, next, ..
                        } => {
                            assert!(next > 0 && start + len <= next && next <= b.len() - at);
                            at += next;
                        }
                        Record::Skip { next } => {
                            assert!(next > 0 && next <= b.len() - at);
                            at += next;
                        }
                        Record::More { need } => {
                            assert!(need > b.len() - at);
                            break;
                        }
                        Record::Odd => break,
                    }
                }
            }
        }
    }

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
