//! The one reader of a saved capture's records (decisions 264, 402): classic pcap records and
//! every pcapng block, read straight from the file's bytes in large blocks.
//!
//! pcapng is read whole here, as Wireshark's wiretap/pcapng.c reads it and libpcap never
//! sees it: several sections in either byte order, every interface with its own link type,
//! snapshot length, `if_tsresol` (any power of 10 or of 2) and `if_tsoffset`; packets in
//! Enhanced, Simple and (obsolete) Packet Blocks; and the Decryption Secrets Blocks, handed
//! out in file order among the packets ([`Found::Secrets`]), so that a key reaches the TLS
//! layer before the packets after it, as tshark reads them. Every other block is stepped over.
//! A pcapng that is damaged (a length that lies, a packet on an interface never described,
//! options that overrun their block) ends in [`Record::Damaged`], a one-line reason.
//!
//! Classic pcap: only what every libpcap since 1.10 delivers identically is taken (2.4, either
//! byte order, micro or nanoseconds); anything else is [`Record::Odd`] and libpcap reads the
//! file from there (the binary's h2ledger-capture; decision 264).
//!
//! A reader that copies records ([`Blocks::copying`], [`BlockReader::fill_raw`]: `h2ledger
//! split`, decision 421) walks the same way and gets each record whole ([`Raw`]: its bytes,
//! what it is, and for a packet its link type and frame); it takes every classic pcap record
//! that is framed right (version 2.x, a record of at most [`MAX_BLOCK`] bytes), since it
//! copies what libpcap would read rather than reading it, and says a file that is no capture
//! or a record beyond the bound as [`Damage`].
//!
//! Contract: any bytes are read without panicking, every `Skip`, `Packet` and `Secrets` moves
//! forward within the bytes given, and nothing here grows with the input but the interfaces
//! of one section ([`MAX_INTERFACES`]); a block (a copied classic pcap record too) is at most
//! [`MAX_BLOCK`] bytes: the one bound of each kind for every reader of saved captures
//! (decisions 404, 422).

use std::io::Read;

/// The largest classic pcap packet the reader delivers itself: libpcap's largest snapshot for
/// most link types (`MAXIMUM_SNAPLEN`, libpcap's pcap-int.h). A longer record is left to
/// libpcap, whose rule for it depends on the link type.
pub const MAX_RECORD: u32 = 262_144;
/// The largest pcapng block read (a Decryption Secrets Block of a long key log is the largest
/// in practice: 100,000 TLS 1.3 connections' secrets are about 20 MiB). Wireshark's limit is
/// larger (`MAX_BLOCK_SIZE` in wiretap/pcapng.c: a 128 MiB D-Bus packet and 128 KiB of
/// options); libpcap's is 16 MiB. A larger block is [`Damage::TooLarge`]. This bounds what
/// the reader holds at once ([`BlockReader`]): its block size plus one such block.
pub const MAX_BLOCK: u32 = 32 << 20;
/// Interfaces one pcapng section may describe; a further one is [`Damage::Interfaces`].
pub const MAX_INTERFACES: usize = 65_536;

/// pcapng block types (pcapng draft, section 11.1).
const SHB: u32 = 0x0A0D_0D0A;
const IDB: u32 = 1;
const PB: u32 = 2;
const SPB: u32 = 3;
const EPB: u32 = 6;
const DSB: u32 = 0x0A;

/// Secrets type of a TLS key log in a Decryption Secrets Block (`TLSK`).
pub const TLS_KEY_LOG: u32 = 0x544C_534B;

/// What is wrong with a damaged pcapng, said in one line by its `Display`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Damage {
    /// A block length below 12 or not a multiple of 4.
    Length(u32),
    /// A block longer than [`MAX_BLOCK`].
    TooLarge(u32),
    /// The length at a block's end differs from the one at its start.
    Trailer(u32, u32),
    /// A Section Header Block whose byte-order magic is neither order.
    Magic,
    /// A section of a major version other than 1.
    Version(u16, u16),
    /// A block too short for its fixed fields (its type).
    Short(u32),
    /// An interface's options overrun its block.
    Options,
    /// A packet's captured length overruns its block.
    Captured(u32),
    /// A secrets block's length overruns its block.
    Secrets(u32),
    /// A packet on an interface the section did not describe.
    Interface(u32),
    /// More interfaces in one section than [`MAX_INTERFACES`].
    Interfaces,
    /// Copying ([`Blocks::copying`]): a classic pcap record whose captured length is beyond
    /// [`MAX_BLOCK`].
    Record(u32),
    /// Copying: the first bytes are no pcap or pcapng magic number.
    NotCapture,
    /// Copying: a classic pcap of a major version other than 2.
    PcapVersion(u16, u16),
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Damage::Length(n) => {
                write!(f, "a block length of {n} (below 12 or not a multiple of 4)")
            }
            Damage::TooLarge(n) => write!(
                f,
                "a block of {n} bytes (h2ledger reads blocks of at most {} MiB)",
                MAX_BLOCK >> 20
            ),
            Damage::Trailer(a, b) => {
                write!(
                    f,
                    "a block whose length is {a} at its start and {b} at its end"
                )
            }
            Damage::Magic => f.write_str("a section header without the byte-order magic"),
            Damage::Version(a, b) => write!(f, "a section of pcapng version {a}.{b} (1.x is read)"),
            Damage::Short(t) => write!(f, "a block of type {t:#x} too short for its fields"),
            Damage::Options => f.write_str("an interface whose options overrun its block"),
            Damage::Captured(n) => {
                write!(f, "a packet whose captured length {n} overruns its block")
            }
            Damage::Secrets(n) => {
                write!(f, "a secrets block whose length {n} overruns the block")
            }
            Damage::Interface(i) => write!(
                f,
                "a packet on interface {i}, which no interface description block described"
            ),
            Damage::Interfaces => write!(
                f,
                "more than {MAX_INTERFACES} interfaces in one section (h2ledger's bound)"
            ),
            Damage::Record(n) => write!(
                f,
                "a packet record of {n} bytes (h2ledger reads records of at most {} MiB)",
                MAX_BLOCK >> 20
            ),
            Damage::NotCapture => f.write_str(
                "not a pcap or pcapng capture (its first bytes are no pcap or pcapng magic \
                 number)",
            ),
            Damage::PcapVersion(a, b) => {
                write!(f, "pcap version {a}.{b}, not 2.x: not a capture this reads")
            }
        }
    }
}

/// What [`Blocks::next`] found at the start of the bytes it was given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Record {
    /// A packet or a secrets block, and where the next record begins.
    Found(Found, usize),
    /// A header or a block without a packet, `next` bytes long: stepped over.
    Skip {
        /// Where the next record begins.
        next: usize,
    },
    /// The bytes end inside the record, which is `need` bytes long (at least): more are
    /// needed, or the file is cut there.
    More {
        /// The record's length, as far as it is known.
        need: usize,
    },
    /// Classic pcap: something libpcap may read otherwise than as a plain packet; libpcap
    /// reads the file from this record on.
    Odd,
    /// pcapng: the file is damaged here.
    Damaged(Damage),
}

/// A packet or a secrets block: where its bytes lie in the bytes given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// A packet: its bytes are `b[start..start + len]`.
    Packet {
        /// Nanoseconds since the epoch.
        ts: i64,
        /// The link type of its interface (classic pcap: the header's).
        linktype: u16,
        /// Where the packet's bytes begin.
        start: usize,
        /// The captured length.
        len: usize,
        /// Its section's (or classic pcap file's) byte order is big-endian: a BSD loopback
        /// header's address family is in it, as libpcap's filter code assumes.
        big: bool,
    },
    /// A Decryption Secrets Block's secrets (of `kind`, [`TLS_KEY_LOG`] for a key log).
    Secrets {
        /// The secrets type.
        kind: u32,
        /// Where the secrets begin.
        start: usize,
        /// Their length.
        len: usize,
    },
}

impl Found {
    /// The same thing `by` bytes further on.
    fn shifted(self, by: usize) -> Found {
        match self {
            Found::Packet {
                ts,
                linktype,
                start,
                len,
                big,
            } => Found::Packet {
                ts,
                linktype,
                start: start + by,
                len,
                big,
            },
            Found::Secrets { kind, start, len } => Found::Secrets {
                kind,
                start: start + by,
                len,
            },
        }
    }
}

/// What a whole record is ([`Raw`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A classic pcap file's 24-byte header.
    Header,
    /// A pcapng Section Header Block.
    Section,
    /// A packet (classic pcap record; Enhanced, Simple or Packet Block) or a Decryption
    /// Secrets Block, placed in the bytes given.
    Found(Found),
    /// Any other pcapng block (its type): interface descriptions, name resolution,
    /// statistics, custom blocks.
    Other(u32),
}

/// One whole record as [`Blocks::walk_raw`] hands it out: its bytes are
/// `b[start..start + len]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Raw {
    /// Where the record begins.
    pub start: usize,
    /// Its length, headers and trailer included.
    pub len: usize,
    /// What it is.
    pub kind: Kind,
}

/// One pcapng interface: what its packets need.
#[derive(Clone, Copy, Debug)]
struct Iface {
    linktype: u16,
    /// `if_tsresol`: bit 7 clear, 10^-n seconds; set, 2^-n.
    resol: u8,
    /// `if_tsoffset`, seconds.
    offset: i64,
    snaplen: u32,
}

/// A saved capture's records read straight from its bytes. Pure; never panics; each `Skip`
/// and `Found` moves forward. See the module docs for what is read.
#[derive(Clone, Debug, Default)]
pub struct Blocks {
    /// Nothing read yet: the file's header is next.
    started: bool,
    /// The format, once known.
    pcapng: bool,
    /// Big-endian numbers (pcapng: the current section's).
    big: bool,
    /// Classic pcap: nanosecond stamps, the header's snapshot length and link type.
    nanos: bool,
    snaplen: u32,
    linktype: u16,
    /// pcapng: the current section's interfaces.
    ifaces: Vec<Iface>,
    /// Records are copied, not read ([`Blocks::copying`]).
    copying: bool,
}

impl Blocks {
    /// A reader at the start of a file.
    pub fn new() -> Blocks {
        Blocks::default()
    }

    /// A reader for a tool that copies records whole rather than reading packets (`split`):
    /// the same walk, but every classic pcap record that is framed right is a packet (a
    /// version 2.x file; a record of at most [`MAX_BLOCK`] bytes, whatever its time stamp or
    /// snapshot length: nothing is left to libpcap), and a file that is no capture is
    /// [`Damage::NotCapture`] or [`Damage::PcapVersion`], not [`Record::Odd`].
    pub fn copying() -> Blocks {
        Blocks {
            copying: true,
            ..Blocks::default()
        }
    }

    /// The file's header was read (a pcap header or the first Section Header Block).
    pub fn started(&self) -> bool {
        self.started
    }

    /// The file is pcapng (known once its first block was read).
    pub fn is_pcapng(&self) -> bool {
        self.pcapng
    }

    /// The current section's (or classic pcap file's) byte order is big-endian.
    pub fn big_endian(&self) -> bool {
        self.big
    }

    /// The first interface's link type of the current section (classic pcap: the header's),
    /// once known.
    pub fn linktype(&self) -> Option<u16> {
        if self.pcapng {
            self.ifaces.first().map(|i| i.linktype)
        } else {
            self.started.then_some(self.linktype)
        }
    }

    fn u16_at(&self, b: &[u8], i: usize) -> u16 {
        crate::input::u16_at(self.big, b, i)
    }

    fn u32_at(&self, b: &[u8], i: usize) -> u32 {
        crate::input::u32_at(self.big, b, i)
    }

    /// Every record of `b` in turn, until one is not whole ([`Record::More`]), is left to
    /// libpcap ([`Record::Odd`]) or is damaged: `found` for each packet and secrets block,
    /// placed in `b`. Returns where the records that were read end, and the one that stopped
    /// the walk.
    pub fn walk(&mut self, b: &[u8], mut found: impl FnMut(Found)) -> (usize, Record) {
        let mut at = 0;
        loop {
            match self.next(&b[at..]) {
                Record::Found(f, next) => {
                    found(f.shifted(at));
                    at += next;
                }
                Record::Skip { next } => at += next,
                end => return (at, end),
            }
        }
    }

    /// As [`Blocks::walk`], with every record whole ([`Raw`]: headers and blocks stepped over
    /// too), for a tool that copies them.
    pub fn walk_raw(&mut self, b: &[u8], mut each: impl FnMut(Raw)) -> (usize, Record) {
        let mut at = 0;
        loop {
            let (len, kind) = match self.next(&b[at..]) {
                Record::Found(f, next) => (next, Kind::Found(f.shifted(at))),
                Record::Skip { next } => (next, self.skipped(&b[at..])),
                end => return (at, end),
            };
            each(Raw {
                start: at,
                len,
                kind,
            });
            at += len;
        }
    }

    /// What the record at the start of `b`, just stepped over, was: a classic pcap steps over
    /// its header only; in a pcapng, a section header is known by its type, which reads the
    /// same in either byte order.
    fn skipped(&self, b: &[u8]) -> Kind {
        if !self.pcapng {
            Kind::Header
        } else if b[..4] == SHB.to_le_bytes() {
            Kind::Section
        } else {
            Kind::Other(self.u32_at(b, 0))
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
            [0x0a, 0x0d, 0x0d, 0x0a] => {
                let r = self.section(b);
                if matches!(r, Record::Skip { .. }) {
                    self.started = true;
                    self.pcapng = true;
                }
                return r;
            }
            _ if self.copying => return Record::Damaged(Damage::NotCapture),
            _ => return Record::Odd,
        }
        if b.len() < 24 {
            return Record::More { need: 24 };
        }
        let version = (self.u16_at(b, 4), self.u16_at(b, 6));
        if self.copying && version.0 != 2 {
            return Record::Damaged(Damage::PcapVersion(version.0, version.1));
        }
        if version != (2, 4) && !self.copying {
            return Record::Odd;
        }
        self.snaplen = self.u32_at(b, 16);
        self.linktype = self.u16_at(b, if self.big { 22 } else { 20 });
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
        if self.copying {
            // Copied as it is: only its length must be sound.
            if caplen > MAX_BLOCK {
                return Record::Damaged(Damage::Record(caplen));
            }
        } else if sec > i32::MAX as u32 || frac >= unit || caplen > MAX_RECORD {
            // libpcap keeps the seconds and the fraction as signed 32-bit numbers: only
            // values that read the same both ways are taken here. A record longer than the
            // header's snapshot length is taken whole, as tshark takes it (libpcap would cut
            // it to that length: a header's snapshot length can be wrong; decision 470).
            return Record::Odd;
        }
        let len = caplen as usize;
        if b.len() < 16 + len {
            return Record::More { need: 16 + len };
        }
        let scale = if self.nanos { 1 } else { 1_000 };
        let ts = i64::from(sec) * 1_000_000_000 + i64::from(frac) * scale;
        let f = Found::Packet {
            ts,
            linktype: self.linktype,
            start: 16,
            len,
            big: self.big,
        };
        Record::Found(f, 16 + len)
    }

    /// A pcapng block's type and body, when it is whole in `b`; else what to return.
    fn whole_block<'b>(&self, b: &'b [u8]) -> Result<(u32, &'b [u8]), Record> {
        if b.len() < 8 {
            return Err(Record::More { need: 12 });
        }
        let (kind, total) = (self.u32_at(b, 0), self.u32_at(b, 4));
        if total < 12 || total % 4 != 0 {
            return Err(Record::Damaged(Damage::Length(total)));
        }
        if total > MAX_BLOCK {
            return Err(Record::Damaged(Damage::TooLarge(total)));
        }
        let n = total as usize;
        if b.len() < n {
            return Err(Record::More { need: n });
        }
        let trailer = self.u32_at(b, n - 4);
        if trailer != total {
            return Err(Record::Damaged(Damage::Trailer(total, trailer)));
        }
        Ok((kind, &b[8..n - 4]))
    }

    /// A Section Header Block (its byte order is that of the section): the section's
    /// interfaces start anew.
    fn section(&mut self, b: &[u8]) -> Record {
        let Some(magic) = b.get(8..12) else {
            return Record::More { need: 12 };
        };
        let big = match magic {
            [0x1a, 0x2b, 0x3c, 0x4d] => true,
            [0x4d, 0x3c, 0x2b, 0x1a] => false,
            _ => return Record::Damaged(Damage::Magic),
        };
        let was = self.big;
        self.big = big;
        let body = match self.whole_block(b) {
            Ok((_, body)) => body,
            Err(r) => {
                self.big = was;
                return r;
            }
        };
        if body.len() < 16 {
            self.big = was;
            return Record::Damaged(Damage::Short(SHB));
        }
        let (major, minor) = (self.u16_at(body, 4), self.u16_at(body, 6));
        if major != 1 {
            self.big = was;
            return Record::Damaged(Damage::Version(major, minor));
        }
        self.ifaces.clear();
        Record::Skip {
            next: body.len() + 12,
        }
    }

    /// A pcapng block after the first.
    fn block(&mut self, b: &[u8]) -> Record {
        // A section header's byte order is read from its magic, before its length.
        if b.len() >= 4 && b[..4] == SHB.to_le_bytes() {
            return self.section(b);
        }
        let (kind, body) = match self.whole_block(b) {
            Ok(x) => x,
            Err(r) => return r,
        };
        let next = body.len() + 12;
        let r = match kind {
            IDB => self.interface(body),
            EPB => self.packet(body, true),
            PB => self.packet(body, false),
            SPB => self.simple(body),
            DSB => self.secrets(body),
            _ => return Record::Skip { next },
        };
        match r {
            Ok(Some(f)) => Record::Found(f.shifted(8), next),
            Ok(None) => Record::Skip { next },
            Err(d) => Record::Damaged(d),
        }
    }

    fn interface(&mut self, body: &[u8]) -> Result<Option<Found>, Damage> {
        if body.len() < 8 {
            return Err(Damage::Short(IDB));
        }
        if self.ifaces.len() >= MAX_INTERFACES {
            return Err(Damage::Interfaces);
        }
        let mut iface = Iface {
            linktype: self.u16_at(body, 0),
            resol: 6,
            offset: 0,
            snaplen: self.u32_at(body, 4),
        };
        let mut opts = &body[8..];
        while opts.len() >= 4 {
            let (code, len) = (self.u16_at(opts, 0), usize::from(self.u16_at(opts, 2)));
            if code == 0 {
                break;
            }
            let padded = len.div_ceil(4) * 4;
            let Some(v) = opts.get(4..4 + len) else {
                return Err(Damage::Options);
            };
            match (code, len) {
                // if_tsresol.
                (9, 1) => iface.resol = v[0],
                // if_tsoffset: seconds, signed.
                (14, 8) => {
                    let x = [v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]];
                    iface.offset = if self.big {
                        i64::from_be_bytes(x)
                    } else {
                        i64::from_le_bytes(x)
                    };
                }
                _ => {}
            }
            opts = opts.get(4 + padded..).unwrap_or_default();
        }
        self.ifaces.push(iface);
        Ok(None)
    }

    /// An Enhanced Packet Block (`enhanced`) or an obsolete Packet Block, whose interface id
    /// is 16 bits followed by a 16-bit drop count.
    fn packet(&self, body: &[u8], enhanced: bool) -> Result<Option<Found>, Damage> {
        if body.len() < 20 {
            return Err(Damage::Short(if enhanced { EPB } else { PB }));
        }
        let id = if enhanced {
            self.u32_at(body, 0)
        } else {
            u32::from(self.u16_at(body, 0))
        };
        let t = u64::from(self.u32_at(body, 4)) << 32 | u64::from(self.u32_at(body, 8));
        let caplen = self.u32_at(body, 12);
        let Some(iface) = self.ifaces.get(id as usize) else {
            return Err(Damage::Interface(id));
        };
        let len = caplen as usize;
        if len > body.len() - 20 {
            return Err(Damage::Captured(caplen));
        }
        Ok(Some(Found::Packet {
            ts: nanos(t, iface.resol, iface.offset),
            linktype: iface.linktype,
            start: 20,
            len,
            big: self.big,
        }))
    }

    /// A Simple Packet Block: interface 0, no time stamp (0, as libpcap and Wireshark give
    /// it), the captured length the smallest of the original length, the interface's
    /// snapshot length and the block's room.
    fn simple(&self, body: &[u8]) -> Result<Option<Found>, Damage> {
        if body.len() < 4 {
            return Err(Damage::Short(SPB));
        }
        let Some(iface) = self.ifaces.first() else {
            return Err(Damage::Interface(0));
        };
        let orig = self.u32_at(body, 0) as usize;
        let snap = match iface.snaplen {
            0 => usize::MAX,
            s => s as usize,
        };
        Ok(Some(Found::Packet {
            ts: 0,
            linktype: iface.linktype,
            start: 4,
            len: orig.min(snap).min(body.len() - 4),
            big: self.big,
        }))
    }

    fn secrets(&self, body: &[u8]) -> Result<Option<Found>, Damage> {
        if body.len() < 8 {
            return Err(Damage::Short(DSB));
        }
        let (kind, len) = (self.u32_at(body, 0), self.u32_at(body, 4));
        if len as usize > body.len() - 8 {
            return Err(Damage::Secrets(len));
        }
        Ok(Some(Found::Secrets {
            kind,
            start: 8,
            len: len as usize,
        }))
    }
}

/// A pcapng time stamp `t` in units of `resol` (`if_tsresol`: bit 7 clear, 10^-n seconds; set,
/// 2^-n), plus `offset` seconds (`if_tsoffset`), in nanoseconds since the epoch (saturating).
#[inline]
pub fn nanos(t: u64, resol: u8, offset: i64) -> i64 {
    // Micro or nanoseconds without an offset (nearly every file) in 64 bits; the 128-bit
    // path below gives the same and saturates (a tenth of `split`'s instructions before).
    if offset == 0 {
        let ns = match resol {
            6 => t.checked_mul(1_000),
            9 => Some(t),
            _ => None,
        };
        if let Some(ns) = ns.and_then(|n| i64::try_from(n).ok()) {
            return ns;
        }
    }
    let n = u32::from(resol & 0x7f);
    let ns: i128 = if resol & 0x80 == 0 {
        if n <= 9 {
            i128::from(t) * 10i128.pow(9 - n)
        } else {
            10i128.checked_pow(n - 9).map_or(0, |d| i128::from(t) / d)
        }
    } else {
        (i128::from(t) * 1_000_000_000) >> n.min(127)
    };
    let total = ns + i128::from(offset) * 1_000_000_000;
    total.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// How one [`BlockReader::fill`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Filled {
    /// A block was read; more may follow.
    Block,
    /// The file ended after its last whole record.
    End,
    /// Classic pcap: a record [`Blocks`] leaves to libpcap, a file cut inside a record, or a
    /// read error: libpcap reads the rest, from the first packet not delivered.
    Odd,
    /// pcapng: the file is damaged at byte `at` ([`Damage`]); the records before it were
    /// handed out.
    Damaged(Damage, u64),
    /// pcapng: the file ends `got` bytes into a record of `need` (at byte `at`).
    Cut {
        /// Where the cut record begins.
        at: u64,
        /// Its bytes in the file.
        got: usize,
        /// Its length, as far as it is known.
        need: usize,
    },
    /// pcapng: reading failed ([`BlockReader::take_error`]).
    Failed,
}

impl Filled {
    /// A pcapng damage, cut or read error as one line (`None` for the others).
    pub fn reason(&self, error: Option<&std::io::Error>) -> Option<String> {
        match *self {
            Filled::Damaged(d, at) => Some(format!("damaged pcapng at byte {at}: {d}")),
            Filled::Cut { at, got, need } => Some(format!(
                "the pcapng ends inside a block (at byte {at}: {got} of its {need} bytes; a cut \
                 file?)"
            )),
            Filled::Failed => {
                Some(error.map_or_else(|| "read error".to_string(), crate::input::io_reason))
            }
            _ => None,
        }
    }
}

/// A saved capture read in large blocks, each handed out with where its packets (and pcapng
/// secrets) lie in it (decision 264): one read per block and no copy per packet. A record
/// that a block's end cuts begins the next block; a block is `size` bytes or the next whole
/// record if that is longer, plus the cut part of a record from the block before: at most
/// `size` + [`MAX_BLOCK`] bytes, whatever the file says.
pub struct BlockReader<R> {
    r: R,
    blocks: Blocks,
    size: usize,
    /// The bytes of a record that the last block cut, and that record's length if known.
    tail: Vec<u8>,
    need: usize,
    /// Bytes read from `r` so far.
    read: u64,
    error: Option<std::io::Error>,
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
            error: None,
        }
    }

    /// A reader that copies records ([`Blocks::copying`]; each block's records by
    /// [`BlockReader::fill_raw`]).
    pub fn copying(r: R, size: usize) -> BlockReader<R> {
        BlockReader {
            blocks: Blocks::copying(),
            ..BlockReader::new(r, size)
        }
    }

    /// Bytes read from the file so far (a progress display's figure).
    pub fn bytes_read(&self) -> u64 {
        self.read
    }

    /// The walker's state (the format, the first link type).
    pub fn blocks(&self) -> &Blocks {
        &self.blocks
    }

    /// The read error that ended the file ([`Filled::Failed`], or [`Filled::Odd`] on a
    /// classic pcap).
    pub fn take_error(&mut self) -> Option<std::io::Error> {
        self.error.take()
    }

    /// The next block into `data`, and each of its packets and secrets into `found` (both
    /// cleared first).
    pub fn fill(&mut self, data: &mut Vec<u8>, found: &mut Vec<Found>) -> Filled {
        found.clear();
        self.fill_by(data, |blocks, b| blocks.walk(b, |f| found.push(f)))
    }

    /// The next block into `data`, and each of its records whole into `raws` (both cleared
    /// first), for a tool that copies them ([`BlockReader::copying`]). A classic pcap read
    /// this way ends as a pcapng does: a cut record is [`Filled::Cut`], a read error
    /// [`Filled::Failed`] after the whole records before it.
    pub fn fill_raw(&mut self, data: &mut Vec<u8>, raws: &mut Vec<Raw>) -> Filled {
        raws.clear();
        self.fill_by(data, |blocks, b| blocks.walk_raw(b, |r| raws.push(r)))
    }

    /// The next block into `data`, its records walked by `walk`.
    fn fill_by(
        &mut self,
        data: &mut Vec<u8>,
        walk: impl FnOnce(&mut Blocks, &[u8]) -> (usize, Record),
    ) -> Filled {
        // A copying reader ends a classic pcap as a pcapng: nothing is left to libpcap.
        let whole = self.blocks.pcapng || self.blocks.copying;
        data.clear();
        data.extend_from_slice(&self.tail);
        // Enough for the record the tail begins (its length, when known, is at most
        // MAX_BLOCK; a classic pcap's longer records are libpcap's).
        let want = self.size.max(self.need.saturating_sub(self.tail.len())) as u64;
        // `read_to_end` retries an interrupted read itself; on an error the bytes read
        // before it are in `data`.
        let before = data.len();
        // Room for exactly what is asked: `read_to_end` then reads into it and stops at the
        // limit instead of doubling the block (a 256 KiB block took 512 KiB, in each of the
        // batches read ahead; decision 458).
        data.reserve_exact(want as usize);
        let got = (&mut self.r).take(want).read_to_end(data);
        self.read += (data.len() - before) as u64;
        let eof = match got {
            Ok(n) => (n as u64) < want,
            Err(e) => {
                self.error = Some(e);
                if !whole {
                    return Filled::Odd;
                }
                // The whole records before the error are handed out first.
                true
            }
        };
        let start = self.read - data.len() as u64;
        let (at, end) = walk(&mut self.blocks, data);
        let stop = match end {
            Record::More { need } => {
                self.need = need;
                None
            }
            Record::Damaged(d) => Some(Filled::Damaged(d, start + at as u64)),
            _ => Some(Filled::Odd),
        };
        self.tail.clear();
        self.tail.extend_from_slice(&data[at..]);
        data.truncate(at);
        if let Some(s) = stop {
            return s;
        }
        if !eof {
            return Filled::Block;
        }
        if self.error.is_some() {
            return Filled::Failed;
        }
        if self.tail.is_empty() {
            Filled::End
        } else if self.blocks.pcapng
            || self.blocks.copying
            || self.tail.starts_with(&SHB.to_le_bytes())
        {
            Filled::Cut {
                at: start + at as u64,
                got: self.tail.len(),
                need: self.need,
            }
        } else {
            Filled::Odd
        }
    }
}

#[cfg(test)]
mod tests;
