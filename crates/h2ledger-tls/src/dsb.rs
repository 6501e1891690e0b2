//! TLS key logs embedded in a pcapng file as Decryption Secrets Blocks (pcapng spec §4.7;
//! written by `editcap --inject-secrets`, Wireshark and tcpdump). libpcap skips these blocks,
//! so the binary hands the file's bytes to [`keylog_from_pcapng`].
//!
//! Contract: any input is read without panicking; a damaged block ends the scan with what
//! was found before it.

use std::io::{Read, Seek, SeekFrom};

/// Section Header Block type; its byte-order magic sets the endianness of the section.
const SHB: u32 = 0x0A0D_0D0A;
/// Decryption Secrets Block type.
const DSB: u32 = 0x0000_000A;
/// Secrets type of a TLS key log (`TLSK`).
pub(crate) const TLS_KEY_LOG: u32 = 0x544C_534B;

/// What a scan found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Embedded {
    /// The TLS key log text of every TLS DSB, in file order, each ending with a newline.
    pub text: String,
    /// TLS key log blocks found.
    pub blocks: u32,
    /// Decryption Secrets Blocks of other secret types (WireGuard, ZigBee, ...), ignored.
    pub other_blocks: u32,
}

/// Scans pcapng bytes for TLS key log Decryption Secrets Blocks. Returns `None` when the
/// bytes are not pcapng (no Section Header Block at the start).
pub fn keylog_from_pcapng(bytes: &[u8]) -> Option<Embedded> {
    scan_pcapng(&mut std::io::Cursor::new(bytes)).ok().flatten()
}

/// [`keylog_from_pcapng`] over a file: reads block headers and the Decryption Secrets Blocks,
/// seeks over every other block (give it a reader whose forward seek keeps its buffer: not a
/// bare `BufReader`, whose `seek` empties it, an `lseek` and a full read per block).
/// `Ok(None)`: not pcapng. An I/O error other than a short read is returned; a damaged or cut
/// block ends the scan with what was found before it.
pub fn scan_pcapng<R: Read + Seek>(r: &mut R) -> std::io::Result<Option<Embedded>> {
    let mut head = [0u8; 12];
    if !read_full(r, &mut head)? || u32::from_le_bytes(head[..4].try_into().expect("4")) != SHB {
        return Ok(None);
    }
    let mut out = Embedded::default();
    let mut le = true;
    loop {
        let word = |b: &[u8], le: bool| {
            let b: [u8; 4] = b[..4].try_into().expect("4 bytes");
            if le {
                u32::from_le_bytes(b)
            } else {
                u32::from_be_bytes(b)
            }
        };
        // The SHB's type reads the same in both byte orders; its magic tells the order.
        if word(&head, true) == SHB {
            le = match word(&head[8..], true) {
                0x1A2B_3C4D => true,
                0x4D3C_2B1A => false,
                _ => break,
            };
        }
        let kind = word(&head, le);
        let len = word(&head[4..], le) as usize;
        if len < 12 || !len.is_multiple_of(4) {
            break;
        }
        // `head` holds the block's first 12 bytes; the next block starts `len` bytes in.
        if kind == DSB && (20..=MAX_DSB).contains(&len) {
            let mut body = vec![0u8; len - 12];
            if !read_full(r, &mut body)? {
                break;
            }
            let stype = word(&head[8..], le);
            let slen = word(&body, le) as usize;
            if slen <= len - 20 {
                let data = &body[4..4 + slen];
                if stype == TLS_KEY_LOG {
                    out.blocks += 1;
                    out.text.push_str(&String::from_utf8_lossy(data));
                    if !out.text.ends_with('\n') {
                        out.text.push('\n');
                    }
                } else {
                    out.other_blocks += 1;
                }
            }
        } else if r.seek(SeekFrom::Current(len as i64 - 12)).is_err() {
            break;
        }
        if !read_full(r, &mut head)? {
            break;
        }
    }
    Ok(Some(out))
}

/// Decryption Secrets Blocks larger than this are skipped (a key log for 100 000
/// connections is about 20 MiB).
const MAX_DSB: usize = 256 << 20;

/// Fills `b`; `false` on a short read (end of input).
fn read_full<R: Read>(r: &mut R, b: &mut [u8]) -> std::io::Result<bool> {
    match r.read_exact(b) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(kind: u32, body: &[u8], be: bool) -> Vec<u8> {
        let len = (12 + body.len()).div_ceil(4) * 4;
        let w = |v: u32| {
            if be {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let mut b = w(kind).to_vec();
        b.extend(w(len as u32));
        b.extend(body);
        b.resize(len - 4, 0);
        b.extend(w(len as u32));
        b
    }

    fn dsb(stype: u32, data: &[u8], be: bool) -> Vec<u8> {
        let w = |v: u32| {
            if be {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let mut body = w(stype).to_vec();
        body.extend(w(data.len() as u32));
        body.extend(data);
        block(DSB, &body, be)
    }

    fn shb(be: bool) -> Vec<u8> {
        let magic: [u8; 4] = if be {
            0x1A2B_3C4Du32.to_be_bytes()
        } else {
            0x1A2B_3C4Du32.to_le_bytes()
        };
        let mut body = magic.to_vec();
        body.extend([1, 0, 0, 0]);
        body.extend([0xff; 8]);
        block(SHB, &body, be)
    }

    #[test]
    fn finds_tls_blocks_in_both_byte_orders() {
        let mut f = shb(false);
        f.extend(dsb(TLS_KEY_LOG, b"CLIENT_RANDOM a b", false));
        f.extend(dsb(0x5747_4B4C, b"wireguard", false));
        f.extend(shb(true));
        f.extend(dsb(TLS_KEY_LOG, b"SERVER_TRAFFIC_SECRET_0 c d\n", true));
        let e = keylog_from_pcapng(&f).unwrap();
        assert_eq!(e.blocks, 2);
        assert_eq!(e.other_blocks, 1);
        assert_eq!(e.text, "CLIENT_RANDOM a b\nSERVER_TRAFFIC_SECRET_0 c d\n");
    }

    #[test]
    fn damaged_or_foreign_input_is_not_an_error() {
        assert_eq!(keylog_from_pcapng(b"\xd4\xc3\xb2\xa1 pcap"), None);
        let mut f = shb(false);
        f.extend(dsb(TLS_KEY_LOG, b"x\n", false));
        let whole = keylog_from_pcapng(&f).unwrap();
        assert_eq!(whole.blocks, 1);
        for cut in 0..f.len() {
            let _ = keylog_from_pcapng(&f[..cut]);
        }
        let mut bad = f.clone();
        bad[f.len() - 20 + 4] = 0xff; // the DSB's length
        let _ = keylog_from_pcapng(&bad);
    }
}
