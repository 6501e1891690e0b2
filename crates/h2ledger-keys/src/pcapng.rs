//! `-w FILE` as pcapng (draft-ietf-opsawg-pcapng), the format that can carry TLS secrets: a
//! Section Header Block, one Interface Description Block (the device's link type and snap
//! length, `if_tsresol` = 9: nanosecond timestamps), then an Enhanced Packet Block per packet
//! and, whenever `--keys-from` delivered new secrets, a Decryption Secrets Block holding them
//! (SSLKEYLOGFILE lines, h2ledger-keys' [`decryption_secrets_block`]) *before* the next packet.
//! Wireshark applies a DSB to the packets after it, and so does `h2ledger replay`
//! (h2ledger-tls reads every DSB of the file before the packets).
//!
//! Why a secret always comes before the packets it decrypts: the capture hands a packet over
//! only after it was sent, and the program logged the secret (the uprobe copied it into the
//! ring buffer) before it sent any record protected by it; the writer drains the probes after
//! libpcap hands a packet over and before writing it (h2ledger's `source::live`).
//!
//! Little-endian blocks on every machine (pcapng readers take either byte order); the block
//! encoders are pure functions.

#![forbid(unsafe_code)]

use std::io::{self, Write};

use crate::decryption_secrets_block;

/// Nanoseconds since the Unix epoch (h2ledger-tcp's `Nanos`).
pub type Nanos = i64;

const SHB: u32 = 0x0A0D_0D0A;
const IDB: u32 = 0x0000_0001;
const EPB: u32 = 0x0000_0006;
const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;
const OPT_END: u16 = 0;
const SHB_USERAPPL: u16 = 4;
const IF_NAME: u16 = 2;
const IF_TSRESOL: u16 = 9;

fn pad4(n: usize) -> usize {
    n.div_ceil(4) * 4
}

/// One option: code, length, value padded to 4 bytes.
fn option(b: &mut Vec<u8>, code: u16, value: &[u8]) {
    // Option values longer than 65,535 bytes cannot be said; ours are names.
    let value = &value[..value.len().min(u16::MAX as usize)];
    b.extend_from_slice(&code.to_le_bytes());
    b.extend_from_slice(&(value.len() as u16).to_le_bytes());
    b.extend_from_slice(value);
    b.resize(pad4(b.len()), 0);
}

/// A block of `kind` around `body` (already padded): type, total length, body, total length.
fn block(kind: u32, body: &[u8]) -> Vec<u8> {
    let total = (body.len() + 12) as u32;
    let mut b = Vec::with_capacity(body.len() + 12);
    b.extend_from_slice(&kind.to_le_bytes());
    b.extend_from_slice(&total.to_le_bytes());
    b.extend_from_slice(body);
    b.extend_from_slice(&total.to_le_bytes());
    b
}

/// The Section Header Block: version 1.0, section length unknown (-1), the writing program.
pub fn section_header(app: &str) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&BYTE_ORDER_MAGIC.to_le_bytes());
    body.extend_from_slice(&1u16.to_le_bytes());
    body.extend_from_slice(&0u16.to_le_bytes());
    body.extend_from_slice(&(-1i64).to_le_bytes());
    option(&mut body, SHB_USERAPPL, app.as_bytes());
    option(&mut body, OPT_END, &[]);
    block(SHB, &body)
}

/// The Interface Description Block of the capture device: link type, snap length, name, and
/// nanosecond timestamps (`if_tsresol` 9).
pub fn interface(linktype: u16, snaplen: u32, name: &str) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&linktype.to_le_bytes());
    body.extend_from_slice(&0u16.to_le_bytes());
    body.extend_from_slice(&snaplen.to_le_bytes());
    option(&mut body, IF_NAME, name.as_bytes());
    option(&mut body, IF_TSRESOL, &[9]);
    option(&mut body, OPT_END, &[]);
    block(IDB, &body)
}

/// An Enhanced Packet Block on interface 0: `ts` in nanoseconds since the epoch, the bytes
/// captured, and the packet's length on the wire.
pub fn packet(ts: Nanos, data: &[u8], orig_len: u32) -> Vec<u8> {
    let ts = ts.max(0) as u64;
    let mut body = Vec::with_capacity(20 + pad4(data.len()));
    body.extend_from_slice(&0u32.to_le_bytes());
    body.extend_from_slice(&((ts >> 32) as u32).to_le_bytes());
    body.extend_from_slice(&(ts as u32).to_le_bytes());
    body.extend_from_slice(&(data.len() as u32).to_le_bytes());
    body.extend_from_slice(&orig_len.max(data.len() as u32).to_le_bytes());
    body.extend_from_slice(data);
    body.resize(20 + pad4(data.len()), 0);
    block(EPB, &body)
}

/// A pcapng file being written: the section and interface come first, then packets and
/// secrets in the order they are given.
pub struct Writer<W: Write> {
    out: W,
    /// Decryption Secrets Blocks written.
    pub secrets_blocks: u64,
}

impl<W: Write> Writer<W> {
    /// Writes the Section Header Block and the Interface Description Block.
    pub fn new(mut out: W, linktype: u16, snaplen: u32, device: &str) -> io::Result<Self> {
        let app = format!("h2ledger {}", env!("CARGO_PKG_VERSION"));
        out.write_all(&section_header(&app))?;
        out.write_all(&interface(linktype, snaplen, device))?;
        Ok(Writer {
            out,
            secrets_blocks: 0,
        })
    }

    /// One Enhanced Packet Block: `data` as captured, `orig_len` its length on the wire.
    pub fn packet(&mut self, ts: Nanos, data: &[u8], orig_len: u32) -> io::Result<()> {
        self.out.write_all(&packet(ts, data, orig_len))
    }

    /// Key log lines (each ending with a newline) as one Decryption Secrets Block.
    pub fn secrets(&mut self, keylog: &str) -> io::Result<()> {
        if keylog.is_empty() {
            return Ok(());
        }
        let b = decryption_secrets_block(keylog)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "secrets too long"))?;
        self.secrets_blocks += 1;
        self.out.write_all(&b)
    }

    /// Flushes the underlying writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = "CLIENT_RANDOM 0101010101010101010101010101010101010101010101010101010101010101 \
        020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202\n";

    fn u32_at(b: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
    }

    /// Every block: a multiple of 4 bytes, its length before and after.
    fn blocks(mut b: &[u8]) -> Vec<(u32, Vec<u8>)> {
        let mut out = Vec::new();
        while !b.is_empty() {
            let len = u32_at(b, 4) as usize;
            assert_eq!(len % 4, 0);
            assert_eq!(u32_at(b, len - 4) as usize, len);
            out.push((u32_at(b, 0), b[8..len - 4].to_vec()));
            b = &b[len..];
        }
        out
    }

    #[test]
    fn block_layout() {
        let mut w = Writer::new(Vec::new(), 113, 262_144, "lo").unwrap();
        w.packet(1_700_000_000_123_456_789, &[1, 2, 3, 4, 5], 60)
            .unwrap();
        w.secrets(LINE).unwrap();
        w.secrets("").unwrap();
        let file = w.out;
        let b = blocks(&file);
        assert_eq!(
            b.iter().map(|(t, _)| *t).collect::<Vec<_>>(),
            [SHB, IDB, EPB, 0x0A]
        );
        // SHB: magic, version 1.0, length -1, then options.
        assert_eq!(u32_at(&b[0].1, 0), BYTE_ORDER_MAGIC);
        assert_eq!(&b[0].1[4..8], &[1, 0, 0, 0]);
        assert_eq!(&b[0].1[8..16], &[0xff; 8]);
        // IDB: link type 113 (Linux cooked), snap length, if_name "lo", if_tsresol 9.
        let idb = &b[1].1;
        assert_eq!(&idb[..4], &[113, 0, 0, 0]);
        assert_eq!(u32_at(idb, 4), 262_144);
        assert_eq!(&idb[8..16], &[2, 0, 2, 0, b'l', b'o', 0, 0]);
        assert_eq!(&idb[16..24], &[9, 0, 1, 0, 9, 0, 0, 0]);
        assert_eq!(&idb[24..], &[0, 0, 0, 0]);
        // EPB: interface 0, the 64-bit time in nanoseconds, lengths, padded data.
        let epb = &b[2].1;
        let ts = (u64::from(u32_at(epb, 4)) << 32) | u64::from(u32_at(epb, 8));
        assert_eq!(ts, 1_700_000_000_123_456_789);
        assert_eq!((u32_at(epb, 12), u32_at(epb, 16)), (5, 60));
        assert_eq!(&epb[20..], &[1, 2, 3, 4, 5, 0, 0, 0]);
        assert_eq!(w.secrets_blocks, 1);
    }

    /// h2ledger-run's reader of records, which `replay` uses, finds the secrets in the file
    /// written.
    #[test]
    fn the_secrets_read_back() {
        let mut w = Writer::new(Vec::new(), 1, 65_535, "eth0").unwrap();
        w.secrets(LINE).unwrap();
        w.packet(5, &[0; 14], 14).unwrap();
        let (text, blocks) = h2ledger_run::input::key_log_of(&w.out).unwrap();
        assert_eq!((blocks, text.as_str()), (1, LINE));
    }
}
