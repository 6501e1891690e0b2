//! Cutting a saved capture by TCP connection (`h2ledger split`, decision 320): every packet of
//! a connection, both directions, goes to the same one of N shards, chosen by a hash of the
//! connection's two endpoints taken in sorted order ([`conn_hash`], symmetric). The records are
//! copied as they are: a pcap file's shards are pcap files with the same header (link type,
//! snapshot length, byte order, timestamp precision); a pcapng file's shards are pcapng files
//! with every block that is not a packet (Section Header, Interface Description, Decryption
//! Secrets, Name Resolution, Interface Statistics, custom blocks) copied to every shard where
//! it stood, so that each shard's packets keep their interfaces and any key can serve any
//! connection. A Section Header Block's section length is set to -1 (unknown) in the copies:
//! the length of the whole section no longer holds for a part of it. A packet that is not TCP
//! over IP, or that cannot be decoded (a truncated header, an unknown link type), goes to
//! shard 0 and is counted. An IP fragment of a TCP segment goes to its connection's shard
//! ([`Router`]): the first fragment carries the ports, and the datagram's later fragments follow
//! it (by source, destination and identification), so that each shard's reassembly makes the
//! segment whole; a fragment captured before its datagram's first goes to shard 0, counted.
//!
//! The records are read by the one reader of saved captures ([`crate::input`]'s
//! [`BlockReader::copying`], decision 421), which hands each one out whole with what it is:
//! the same walk, bounds ([`crate::input::MAX_BLOCK`], [`crate::input::MAX_INTERFACES`];
//! decision 422) and damage as `replay`'s.
//!
//! Pure: a `Read` in, `Write`s out, one streaming pass with a buffer of at most one read plus
//! [`crate::input::MAX_BLOCK`]; hostile bytes end in an error, never a panic.
#![forbid(unsafe_code)]

mod files;
pub use files::{split_to_dir, stem, Split};

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr};

use crate::input::{BlockReader, Damage, Filled, Found, Kind};
use h2ledger_tcp::link::{decode_any, Decoded};
use h2ledger_tcp::LinkType;

/// Bytes read at a time (the reader holds at most this plus one record of at most
/// [`crate::input::MAX_BLOCK`]).
const READ: usize = 1 << 20;

/// A 64-bit hash of the connection of endpoints `a` and `b`, the same whichever is the
/// sender: the two endpoints in sorted order, each as its address (IPv4 as an IPv4-mapped
/// IPv6 address, two 64-bit words) and its port, six words folded by multiply and xor
/// (FNV-1a's prime and offset, a word at a time), then murmur3's 64-bit finalizer (`fmix64`)
/// so that the low bits, taken by the modulo, depend on every bit. Stable across runs and
/// machines (no random seed), so a shard number can be recomputed anywhere.
pub fn conn_hash(a: SocketAddr, b: SocketAddr) -> u64 {
    fn key(s: SocketAddr) -> (u128, u16) {
        let ip = match s.ip() {
            IpAddr::V4(v) => v.to_ipv6_mapped(),
            IpAddr::V6(v) => v,
        };
        (u128::from(ip), s.port())
    }
    let (x, y) = (key(a), key(b));
    let (lo, hi) = if x <= y { (x, y) } else { (y, x) };
    fold(lo, hi)
}

fn fold(lo: (u128, u16), hi: (u128, u16)) -> u64 {
    let words = [
        (lo.0 >> 64) as u64,
        lo.0 as u64,
        u64::from(lo.1),
        (hi.0 >> 64) as u64,
        hi.0 as u64,
        u64::from(hi.1),
    ];
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for w in words {
        h = (h ^ w).wrapping_mul(0x0100_0000_01b3);
        h ^= h >> 29;
    }
    // fmix64 (MurmurHash3, Austin Appleby, public domain).
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// The shard of a captured frame of link type `linktype`, out of `shards` (at least 1):
/// `Some` by [`conn_hash`] for TCP over IP, `None` for any other frame or one that cannot be
/// decoded (the caller puts it in shard 0). The endpoints are those `link::decode` finds;
/// a plain IPv4 TCP segment (Ethernet without VLAN tags, Linux cooked v1, raw IP) whose
/// headers are whole is read by a short path that gives the same endpoints (a test
/// compares the two on altered packets), anything else by `link::decode`.
pub fn shard_of(linktype: LinkType, frame: &[u8], shards: usize) -> Option<usize> {
    let h = match fast_ipv4(linktype, frame) {
        Some((s, d)) => {
            let (lo, hi) = if s <= d { (s, d) } else { (d, s) };
            fold(lo, hi)
        }
        None => match decode_any(linktype, frame).ok()?? {
            Decoded::Tcp(seg) => conn_hash(seg.src, seg.dst),
            Decoded::Fragment(_) => return None,
        },
    };
    Some((h % shards.max(1) as u64) as usize)
}

/// A datagram a fragment belongs to: source, destination, identification.
type DatagramKey = (IpAddr, IpAddr, u32);

/// [`shard_of`] for a stream of frames, with IP fragments of TCP sent where their segment's
/// connection goes (decision 471): a datagram's first fragment (offset 0) carries the TCP
/// ports, so it goes to [`conn_hash`]'s shard and the route is kept, and its later fragments
/// (same source, destination and identification) take the same route. The routes are at most
/// [`h2ledger_tcp::defrag::MAX_DATAGRAMS`], the bound of the reassembly they feed, the oldest
/// given up first; a fragment with no route (captured before its first, or after its route
/// was given up) goes to shard 0 and is counted in [`Router::unrouted`].
#[derive(Debug, Default)]
pub struct Router {
    routes: std::collections::HashMap<DatagramKey, (usize, u64)>,
    order: std::collections::VecDeque<(DatagramKey, u64)>,
    serial: u64,
    /// Fragments sent to shard 0 for want of a route.
    pub unrouted: u64,
}

impl Router {
    /// The shard of `frame` out of `shards` (at least 1); `None` as [`shard_of`] says (the
    /// caller puts it in shard 0).
    pub fn shard(&mut self, linktype: LinkType, frame: &[u8], shards: usize) -> Option<usize> {
        if let Some(k) = shard_of(linktype, frame, shards) {
            return Some(k);
        }
        let Ok(Some(Decoded::Fragment(f))) = decode_any(linktype, frame) else {
            return None;
        };
        if f.proto != 6 {
            return None;
        }
        let key = (f.src, f.dst, f.id);
        if f.offset == 0 {
            let p = f.payload;
            if p.len() < 4 {
                self.unrouted += 1;
                return None;
            }
            let sport = u16::from_be_bytes([p[0], p[1]]);
            let dport = u16::from_be_bytes([p[2], p[3]]);
            let h = conn_hash(SocketAddr::new(f.src, sport), SocketAddr::new(f.dst, dport));
            let k = (h % shards.max(1) as u64) as usize;
            self.route(key, k);
            return Some(k);
        }
        match self.routes.get(&key) {
            Some(&(k, _)) => Some(k),
            None => {
                self.unrouted += 1;
                None
            }
        }
    }

    fn route(&mut self, key: DatagramKey, k: usize) {
        self.serial += 1;
        self.routes.insert(key, (k, self.serial));
        self.order.push_back((key, self.serial));
        while self.order.len() > h2ledger_tcp::defrag::MAX_DATAGRAMS {
            let Some((old, serial)) = self.order.pop_front() else {
                break;
            };
            // A key routed again since keeps its newer route.
            if self.routes.get(&old).is_some_and(|&(_, s)| s == serial) {
                self.routes.remove(&old);
            }
        }
    }
}

/// The endpoints of a plain IPv4 TCP segment whose IP and TCP headers are whole and
/// unremarkable (not a fragment, lengths consistent), as (IPv4-mapped address, port); `None`
/// for anything else, which `link::decode` reads.
fn fast_ipv4(linktype: LinkType, frame: &[u8]) -> Option<((u128, u16), (u128, u16))> {
    let ip = match linktype {
        LinkType::ETHERNET if frame.len() >= 14 && frame[12..14] == [0x08, 0x00] => &frame[14..],
        LinkType::LINUX_SLL if frame.len() >= 16 && frame[14..16] == [0x08, 0x00] => &frame[16..],
        LinkType::RAW | LinkType::RAW_12 | LinkType::RAW_14 | LinkType::IPV4 => frame,
        _ => return None,
    };
    if ip.len() < 20 || ip[0] >> 4 != 4 || ip[9] != 6 {
        return None;
    }
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    // More fragments, or a fragment offset: a fragment.
    if ihl < 20 || ip[6] & 0x3f != 0 || ip[7] != 0 || total < ihl + 20 {
        return None;
    }
    let end = total.min(ip.len());
    let tcp = ip.get(ihl..end)?;
    if tcp.len() < 20 {
        return None;
    }
    let doff = usize::from(tcp[12] >> 4) * 4;
    if doff < 20 || doff > tcp.len() {
        return None;
    }
    let addr = |i: usize| {
        let v = std::net::Ipv4Addr::new(ip[i], ip[i + 1], ip[i + 2], ip[i + 3]);
        u128::from(v.to_ipv6_mapped())
    };
    Some((
        (addr(12), u16::from_be_bytes([tcp[0], tcp[1]])),
        (addr(16), u16::from_be_bytes([tcp[2], tcp[3]])),
    ))
}

/// What [`split`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// "pcap" or "pcapng".
    pub format: &'static str,
    /// Packets written to each shard.
    pub packets: Vec<u64>,
    /// Bytes written to each shard (headers and copied blocks included).
    pub bytes: Vec<u64>,
    /// Packets that were not TCP over IP or could not be decoded (in shard 0).
    pub not_tcp: u64,
    /// pcapng: blocks other than packets, copied to every shard.
    pub copied_blocks: u64,
    /// The input ended inside a record that began at this byte: the records before it were
    /// split, the cut one was not.
    pub cut_at: Option<u64>,
}

/// Why [`split`] stopped.
#[derive(Debug)]
pub enum SplitError {
    /// The input could not be read.
    Read(std::io::Error),
    /// A shard could not be written (its index).
    Write(usize, std::io::Error),
    /// The input is not a capture this reads, or is damaged at a byte offset.
    Format(String),
}

impl std::fmt::Display for SplitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SplitError::Read(e) => write!(f, "cannot read: {e}"),
            SplitError::Write(k, e) => write!(f, "cannot write shard {k}: {e}"),
            SplitError::Format(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for SplitError {}

/// Reads the capture `r` (pcap or pcapng, not compressed: decompress first) once and writes
/// each record to `outs` as the module docs say: packets to the shard of their connection,
/// headers and other blocks to every shard. The records are those of the one reader of saved
/// captures ([`BlockReader::copying`], decision 421), its bounds the reader's. `outs` must
/// not be empty. Returns what was written; a read or write error, or bytes that are not a
/// capture or are damaged, stop it.
pub fn split<R: Read, W: Write>(r: R, outs: &mut [W]) -> Result<Counts, SplitError> {
    let n = outs.len();
    if n == 0 {
        return Err(SplitError::Format("no shards to write".into()));
    }
    let mut reader = BlockReader::copying(r, READ);
    let mut c = Counts {
        packets: vec![0; n],
        bytes: vec![0; n],
        ..Counts::default()
    };
    let (mut data, mut raws) = (Vec::with_capacity(READ * 2), Vec::new());
    let mut router = Router::default();
    loop {
        let end = reader.fill_raw(&mut data, &mut raws);
        for raw in &raws {
            let b = &data[raw.start..raw.start + raw.len];
            if let Kind::Found(Found::Packet {
                linktype,
                start,
                len,
                ..
            }) = raw.kind
            {
                let frame = &data[start..start + len];
                let k = router
                    .shard(LinkType(i32::from(linktype)), frame, n)
                    .unwrap_or_else(|| {
                        c.not_tcp += 1;
                        0
                    });
                outs[k].write_all(b).map_err(|e| SplitError::Write(k, e))?;
                c.packets[k] += 1;
                c.bytes[k] += b.len() as u64;
                continue;
            }
            for (k, w) in outs.iter_mut().enumerate() {
                let res = if raw.kind == Kind::Section {
                    // Section length (body bytes 8..16, block bytes 16..24): -1, unknown.
                    w.write_all(&b[..16])
                        .and_then(|()| w.write_all(&[0xff; 8]))
                        .and_then(|()| w.write_all(&b[24..]))
                } else {
                    w.write_all(b)
                };
                res.map_err(|e| SplitError::Write(k, e))?;
                c.bytes[k] += b.len() as u64;
            }
            // A classic pcap's header is no block.
            if raw.kind != Kind::Header {
                c.copied_blocks += 1;
            }
        }
        match end {
            Filled::Block => {}
            Filled::End | Filled::Cut { .. } if !reader.blocks().started() => {
                let got = match end {
                    Filled::Cut { got, .. } => got,
                    _ => 0,
                };
                return Err(SplitError::Format(format!(
                    "{got} bytes, too short for a capture's header (make one with: tcpdump -i \
                     lo -w FILE)"
                )));
            }
            Filled::End => break,
            Filled::Cut { at, .. } => {
                c.cut_at = Some(at);
                break;
            }
            Filled::Damaged(d @ (Damage::NotCapture | Damage::PcapVersion(..)), _) => {
                return Err(SplitError::Format(d.to_string()))
            }
            Filled::Damaged(d, at) => {
                // A section header's damage is a pcapng's, even before the format is known.
                let format = if reader.blocks().is_pcapng() || matches!(d, Damage::Magic) {
                    "pcapng"
                } else {
                    "pcap"
                };
                return Err(SplitError::Format(format!(
                    "damaged {format} at byte {at}: {d}; nothing was split (replay reads the \
                     packets before the damage)"
                )));
            }
            Filled::Failed | Filled::Odd => {
                let e = reader
                    .take_error()
                    .unwrap_or_else(|| std::io::Error::other("read error"));
                return Err(SplitError::Read(e));
            }
        }
    }
    c.format = if reader.blocks().is_pcapng() {
        "pcapng"
    } else {
        "pcap"
    };
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use h2ledger_tcp::link::decode;

    /// The two IPv4 fragments (24 bytes, then 16 at offset 3) of a TCP segment of 40 bytes
    /// (header and 20 bytes of data) from `src`:`sport` to `dst`:`dport`, datagram `id`.
    fn fragments(src: [u8; 4], sport: u16, dst: [u8; 4], dport: u16, id: u16) -> [Vec<u8>; 2] {
        let mut tcp = sport.to_be_bytes().to_vec();
        tcp.extend_from_slice(&dport.to_be_bytes());
        tcp.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0]);
        tcp.extend_from_slice(&[0x61; 20]);
        let ip = |part: &[u8], frag: u16| {
            let mut p = vec![0x45, 0];
            p.extend_from_slice(&(20 + part.len() as u16).to_be_bytes());
            p.extend_from_slice(&id.to_be_bytes());
            p.extend_from_slice(&frag.to_be_bytes());
            p.extend_from_slice(&[64, 6, 0, 0]);
            p.extend_from_slice(&src);
            p.extend_from_slice(&dst);
            p.extend_from_slice(part);
            p
        };
        [ip(&tcp[..24], 0x2000), ip(&tcp[24..], 3)]
    }

    /// A segment sent in IP fragments goes to its connection's shard, both fragments, as the
    /// connection's whole segments do either way (decision 471); a later fragment whose first
    /// was not seen has no route.
    #[test]
    fn fragments_follow_their_connection() {
        for n in 2..8 {
            for port in 40000..40040 {
                let whole = tcp4([10, 0, 0, 2], 443, [10, 0, 0, 1], port);
                let want = shard_of(LinkType::RAW, &whole, n);
                assert!(want.is_some());
                let mut r = Router::default();
                let [first, second] = fragments([10, 0, 0, 1], port, [10, 0, 0, 2], 443, 7);
                assert_eq!(shard_of(LinkType::RAW, &first, n), None, "no ports alone");
                assert_eq!(r.shard(LinkType::RAW, &first, n), want);
                assert_eq!(r.shard(LinkType::RAW, &second, n), want);
                let [_, other] = fragments([10, 0, 0, 1], port, [10, 0, 0, 2], 443, 8);
                assert_eq!(r.shard(LinkType::RAW, &other, n), None);
                assert_eq!(r.unrouted, 1);
            }
        }
    }

    /// The routes are bounded: past `defrag::MAX_DATAGRAMS` the oldest is given up.
    #[test]
    fn routes_are_bounded() {
        let mut r = Router::default();
        let max = h2ledger_tcp::defrag::MAX_DATAGRAMS as u16;
        for id in 0..=max {
            let [first, _] = fragments([10, 0, 0, 1], 40000, [10, 0, 0, 2], 443, id);
            assert!(r.shard(LinkType::RAW, &first, 4).is_some());
        }
        assert_eq!(r.routes.len(), usize::from(max));
        let [_, oldest] = fragments([10, 0, 0, 1], 40000, [10, 0, 0, 2], 443, 0);
        assert_eq!(r.shard(LinkType::RAW, &oldest, 4), None);
        let [_, newest] = fragments([10, 0, 0, 1], 40000, [10, 0, 0, 2], 443, max);
        assert!(r.shard(LinkType::RAW, &newest, 4).is_some());
    }

    fn tcp4(src: [u8; 4], sport: u16, dst: [u8; 4], dport: u16) -> Vec<u8> {
        let mut p = vec![0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, 6, 0, 0];
        p.extend_from_slice(&src);
        p.extend_from_slice(&dst);
        p.extend_from_slice(&sport.to_be_bytes());
        p.extend_from_slice(&dport.to_be_bytes());
        p.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x10, 0xff, 0xff, 0, 0, 0, 0]);
        p
    }

    fn pcap(packets: &[Vec<u8>]) -> Vec<u8> {
        let mut f = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0];
        f.extend_from_slice(&[0; 8]);
        f.extend_from_slice(&65535u32.to_le_bytes());
        f.extend_from_slice(&101u32.to_le_bytes());
        for p in packets {
            f.extend_from_slice(&[1, 0, 0, 0, 2, 0, 0, 0]);
            f.extend_from_slice(&(p.len() as u32).to_le_bytes());
            f.extend_from_slice(&(p.len() as u32).to_le_bytes());
            f.extend_from_slice(p);
        }
        f
    }

    #[test]
    fn hash_is_symmetric() {
        let a: SocketAddr = "127.0.0.1:50000".parse().unwrap();
        let b: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        assert_eq!(conn_hash(a, b), conn_hash(b, a));
        let c: SocketAddr = "127.0.0.1:50001".parse().unwrap();
        assert_ne!(conn_hash(a, b), conn_hash(c, b));
        let there = tcp4([10, 0, 0, 1], 40000, [10, 0, 0, 2], 443);
        let back = tcp4([10, 0, 0, 2], 443, [10, 0, 0, 1], 40000);
        for n in 1..8 {
            assert_eq!(
                shard_of(LinkType::RAW, &there, n),
                shard_of(LinkType::RAW, &back, n)
            );
        }
        assert_eq!(shard_of(LinkType::RAW, &[0x45, 0], 3), None);
    }

    /// The short path gives what `link::decode` gives, on packets altered byte by byte.
    #[test]
    fn short_path_agrees_with_decode() {
        let base = tcp4([10, 0, 0, 1], 40000, [10, 0, 0, 2], 443);
        let mut eth = vec![0u8; 12];
        eth.extend_from_slice(&[0x08, 0x00]);
        eth.extend_from_slice(&base);
        let mut seed: u64 = 1;
        let mut fast = 0;
        for (link, frame) in [(LinkType::RAW, &base), (LinkType::ETHERNET, &eth)] {
            for _ in 0..20_000 {
                let mut f = frame.clone();
                for _ in 0..3 {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let i = (seed >> 33) as usize % f.len();
                    f[i] = (seed >> 20) as u8;
                }
                if seed.is_multiple_of(7) {
                    f.truncate((seed >> 40) as usize % f.len());
                }
                let slow = decode(link, &f)
                    .ok()
                    .flatten()
                    .map(|s| conn_hash(s.src, s.dst));
                if let Some((s, d)) = fast_ipv4(link, &f) {
                    fast += 1;
                    let (lo, hi) = if s <= d { (s, d) } else { (d, s) };
                    assert_eq!(Some(fold(lo, hi)), slow, "{f:?}");
                }
            }
        }
        assert!(fast > 1000, "the short path was taken {fast} times");
    }

    #[test]
    fn pcap_splits_by_connection() {
        let mut pkts = Vec::new();
        for port in 40000..40020u16 {
            pkts.push(tcp4([10, 0, 0, 1], port, [10, 0, 0, 2], 443));
            pkts.push(tcp4([10, 0, 0, 2], 443, [10, 0, 0, 1], port));
        }
        pkts.push(vec![0x45, 0, 0, 20]); // not decodable
        let file = pcap(&pkts);
        // Read one byte at a time: records cut across reads.
        struct Slow<'a>(&'a [u8]);
        impl Read for Slow<'_> {
            fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
                let n = self.0.len().min(b.len()).min(7);
                b[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let mut outs = vec![Vec::new(); 3];
        let c = split(Slow(&file), &mut outs).unwrap();
        assert_eq!(c.format, "pcap");
        assert_eq!(c.packets.iter().sum::<u64>(), 41);
        assert_eq!(c.not_tcp, 1);
        assert_eq!(c.cut_at, None);
        assert!(c.packets.iter().all(|&p| p > 0));
        // Both directions in one shard: every shard holds an even number of TCP packets.
        assert_eq!((c.packets[0] - 1) % 2, 0);
        assert_eq!(c.packets[1] % 2, 0);
        for o in &outs {
            assert_eq!(o[..24], file[..24]);
        }
        let total: usize = outs.iter().map(|o| o.len()).sum();
        assert_eq!(total, file.len() + 2 * 24);
        // Cut inside the last record.
        let mut outs = vec![Vec::new(); 2];
        let c = split(&file[..file.len() - 2], &mut outs).unwrap();
        assert_eq!(c.packets.iter().sum::<u64>(), 40);
        assert!(c.cut_at.is_some());
    }

    #[test]
    fn refuses_what_is_not_a_capture() {
        let mut outs = vec![Vec::new(); 2];
        assert!(matches!(
            split(&b"hello world, this is text"[..], &mut outs),
            Err(SplitError::Format(_))
        ));
        assert!(matches!(
            split(&b""[..], &mut outs),
            Err(SplitError::Format(_))
        ));
        // A pcapng block that claims 4 GiB.
        let mut b = vec![
            0x0a, 0x0d, 0x0d, 0x0a, 0xff, 0xff, 0xff, 0xff, 0x4d, 0x3c, 0x2b, 0x1a,
        ];
        b.extend_from_slice(&[0; 20]);
        assert!(matches!(
            split(&b[..], &mut outs),
            Err(SplitError::Format(_))
        ));
    }

    #[test]
    fn pcapng_copies_blocks_and_opens_sections() {
        let le = |x: u32| x.to_le_bytes();
        let block = |kind: u32, body: &[u8]| {
            let total = 12 + body.len() as u32;
            let mut b = le(kind).to_vec();
            b.extend_from_slice(&le(total));
            b.extend_from_slice(body);
            b.extend_from_slice(&le(total));
            b
        };
        let mut shb = vec![0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0];
        shb.extend_from_slice(&1000u64.to_le_bytes());
        let mut idb = 101u16.to_le_bytes().to_vec();
        idb.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
        let dsb = block(
            10,
            &[0x4b, 0x53, 0x4c, 0x54, 4, 0, 0, 0, b'k', b'e', b'y', b's'],
        );
        let mut file = block(0x0A0D_0D0A, &shb);
        file.extend(block(1, &idb));
        file.extend(&dsb);
        let p = tcp4([10, 0, 0, 1], 1, [10, 0, 0, 2], 2);
        let mut epb = vec![0; 12];
        epb.extend_from_slice(&le(p.len() as u32));
        epb.extend_from_slice(&le(p.len() as u32));
        epb.extend_from_slice(&p);
        file.extend(block(6, &epb));
        // Hostile bytes: an error or a count, never a panic or a loop.
        let mut seed: u64 = 7;
        for _ in 0..300 {
            let mut f = file.clone();
            for _ in 0..4 {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let i = (seed >> 33) as usize % f.len();
                f[i] = (seed >> 20) as u8;
            }
            let cut = (seed >> 40) as usize % (f.len() + 1);
            let mut outs = vec![Vec::new(); 3];
            let _ = split(&f[..cut], &mut outs);
        }
        let mut outs = vec![Vec::new(); 4];
        let c = split(&file[..], &mut outs).unwrap();
        assert_eq!(c.format, "pcapng");
        assert_eq!(c.copied_blocks, 3);
        assert_eq!(c.not_tcp, 0);
        let k = shard_of(LinkType::RAW, &p, 4).unwrap();
        assert_eq!(c.packets[k], 1);
        for (i, o) in outs.iter().enumerate() {
            assert_eq!(o[16..24], [0xff; 8], "section length unknown");
            assert!(
                o.windows(dsb.len()).any(|w| w == dsb),
                "secrets in shard {i}"
            );
            assert_eq!(o.len() > file.len() - 40, i == k);
        }
    }
}
