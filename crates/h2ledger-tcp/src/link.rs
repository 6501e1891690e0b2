//! Link, IP and TCP header decoding of one captured frame.
//!
//! **Contract:** [`decode`] never panics, whatever the bytes: every length is checked
//! before it is used (etherparse checks its own slices; the hand-written link headers
//! below index only after a length check). Malformed input is a [`DecodeError`], a
//! frame that is valid but not TCP over IP is `Ok(None)`.
//!
//! Link types are pcap `LINKTYPE_` numbers:
//!
//! | linktype | name | header |
//! | --- | --- | --- |
//! | 1 | `ETHERNET` | Ethernet II, up to 3 VLAN tags (802.1Q, 802.1ad, 0x9100) via etherparse |
//! | 113 | `LINUX_SLL` | 16 bytes, protocol type at offset 14 (parsed here: etherparse rejects ARPHRD 772, loopback) |
//! | 276 | `LINUX_SLL2` | 20 bytes, protocol type at offset 0 |
//! | 0 | `NULL` | 4-byte address family in the capturing host's byte order (both orders accepted) |
//! | 108 | `LOOP` | 4-byte address family in network byte order |
//! | 101, 12, 14 | `RAW` | none: IP version from the first nibble |
//! | 228 / 229 | `IPV4` / `IPV6` | none |
//!
//! Lengths: the IP header's length field is trusted over the frame length, so Ethernet
//! padding (frames padded to 60 bytes) never becomes payload. When the frame is shorter
//! than the IP length says (cut by the snapshot length), [`TcpSegment::payload`] holds the
//! bytes present and [`TcpSegment::wire_payload_len`] the bytes sent. An IPv4 total length
//! smaller than the header (0 in captures of TSO/GSO super-packets) or an IPv6 payload
//! length of 0 falls back to the frame length.
//!
//! Also 802.11 data frames (105; 127 after radiotap) and NFLOG (239). Inside these, the
//! tunnels tshark opens by default are opened (at most `MAX_TUNNEL_DEPTH` deep): MPLS, PPPoE,
//! IP in IP, GRE (with ERSPAN II and III), GTP-U (UDP 2152), VXLAN (UDP 4789) and Geneve (UDP
//! 6081); the segment is the innermost one.
//!
//! An IP fragment (first or not, v4 or v6) is [`DecodeError::IpFragment`] to [`decode`];
//! [`decode_any`] hands it back as a [`Fragment`] for [`crate::defrag::Defrag`], and
//! [`tcp_in`] decodes the TCP segment of the datagram made whole.

use core::fmt;
use core::net::{IpAddr, SocketAddr};

use etherparse::err::ip::LaxHeaderSliceError;
use etherparse::{
    EtherType, Ethernet2Slice, IpNumber, LaxIpSlice, SingleVlanSlice, TcpHeaderSlice,
};

use crate::{TcpFlags, TcpSegment};

/// A pcap `LINKTYPE_` number: how a captured frame begins.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LinkType(pub i32);

impl LinkType {
    /// `LINKTYPE_NULL`: BSD loopback, family in host byte order.
    pub const NULL: LinkType = LinkType(0);
    /// `LINKTYPE_ETHERNET`.
    pub const ETHERNET: LinkType = LinkType(1);
    /// `DLT_RAW` as found in some pcap files (OpenBSD numbering).
    pub const RAW_12: LinkType = LinkType(12);
    /// `DLT_RAW` as found in some pcap files (BSD/OS numbering).
    pub const RAW_14: LinkType = LinkType(14);
    /// `LINKTYPE_RAW`: raw IPv4 or IPv6.
    pub const RAW: LinkType = LinkType(101);
    /// `LINKTYPE_LOOP`: OpenBSD loopback, family in network byte order.
    pub const LOOP: LinkType = LinkType(108);
    /// `LINKTYPE_LINUX_SLL`: Linux cooked capture v1.
    pub const LINUX_SLL: LinkType = LinkType(113);
    /// `LINKTYPE_IPV4`.
    pub const IPV4: LinkType = LinkType(228);
    /// `LINKTYPE_IPV6`.
    pub const IPV6: LinkType = LinkType(229);
    /// `LINKTYPE_LINUX_SLL2`: Linux cooked capture v2.
    pub const LINUX_SLL2: LinkType = LinkType(276);
    /// `LINKTYPE_IEEE802_11`: 802.11 frames.
    pub const IEEE802_11: LinkType = LinkType(105);
    /// `LINKTYPE_IEEE802_11_RADIOTAP`: 802.11 frames after a radiotap header.
    pub const RADIOTAP: LinkType = LinkType(127);
    /// `LINKTYPE_NFLOG`: Linux netfilter log messages (`nflog:N` devices).
    pub const NFLOG: LinkType = LinkType(239);
}

impl std::fmt::Display for LinkType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

const SLL_HEADER_LEN: usize = 16;
const SLL2_HEADER_LEN: usize = 20;
const NULL_HEADER_LEN: usize = 4;
/// Etherparse's own bound for stacked link extension headers.
const MAX_VLAN_TAGS: usize = 3;

/// `AF_INET` is 2 on every system that writes these headers.
const AF_INET: u32 = 2;
/// `AF_INET6`: Linux 10, NetBSD/OpenBSD 24, FreeBSD 28, macOS/Darwin 30.
const AF_INET6: [u32; 4] = [10, 24, 28, 30];

/// Why a frame could not be decoded. Small, `Copy`, and its `Display` allocates nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// The pcap link type is not one listed in the module docs.
    UnsupportedLinktype(i32),
    /// The frame ends inside the link-layer header.
    TruncatedLink,
    /// The frame ends inside the IP header or its extension headers.
    TruncatedIp,
    /// The frame ends inside the TCP header.
    TruncatedTcp,
    /// The IP header is invalid (bad version nibble for the link type, IHL < 5, bad
    /// extension header).
    BadIpHeader,
    /// The TCP header is invalid (data offset < 5, or longer than the IP payload).
    BadTcpHeader,
    /// An IP fragment: not reassembled (see the module docs).
    IpFragment,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::UnsupportedLinktype(t) => write!(f, "unsupported link type {t}"),
            DecodeError::TruncatedLink => f.write_str("frame truncated in the link-layer header"),
            DecodeError::TruncatedIp => f.write_str("frame truncated in the IP header"),
            DecodeError::TruncatedTcp => f.write_str("frame truncated in the TCP header"),
            DecodeError::BadIpHeader => f.write_str("malformed IP header"),
            DecodeError::BadTcpHeader => f.write_str("malformed TCP header"),
            DecodeError::IpFragment => f.write_str("IP fragment (not reassembled)"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Decodes one captured frame of pcap link type `linktype` down to its TCP segment.
///
/// `Ok(None)`: a valid frame that is not TCP over IPv4/IPv6 (ARP, UDP, ICMP, ...).
pub fn decode(linktype: LinkType, frame: &[u8]) -> Result<Option<TcpSegment<'_>>, DecodeError> {
    match decode_any(linktype, frame)? {
        Some(Decoded::Tcp(seg)) => Ok(Some(seg)),
        Some(Decoded::Fragment(_)) => Err(DecodeError::IpFragment),
        None => Ok(None),
    }
}

/// What [`decode_any`] finds in a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoded<'a> {
    /// A whole TCP segment.
    Tcp(TcpSegment<'a>),
    /// A fragment of an IP datagram (of any protocol), for [`crate::defrag::Defrag`].
    Fragment(Fragment<'a>),
}

/// A fragment of an IPv4 or IPv6 datagram: what reassembly needs of it (RFC 791, RFC 8200
/// §4.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fragment<'a> {
    /// The datagram's source.
    pub src: IpAddr,
    /// The datagram's destination.
    pub dst: IpAddr,
    /// Identification (16 bits in IPv4, 32 in IPv6).
    pub id: u32,
    /// The protocol of the datagram's payload (6: TCP).
    pub proto: u8,
    /// Where this fragment's bytes go in the datagram's payload, in bytes.
    pub offset: u32,
    /// More fragments follow (false: this one ends the datagram).
    pub more: bool,
    /// The fragment's bytes present in the capture.
    pub payload: &'a [u8],
    /// The frame was cut by the snapshot length: some of the fragment's bytes are missing.
    pub cut: bool,
}

/// [`decode`], but an IP fragment is handed back ([`Decoded::Fragment`]) for reassembly
/// instead of being an error.
pub fn decode_any(linktype: LinkType, frame: &[u8]) -> Result<Option<Decoded<'_>>, DecodeError> {
    match linktype {
        LinkType::ETHERNET => {
            let eth = Ethernet2Slice::from_slice_without_fcs(frame)
                .map_err(|_| DecodeError::TruncatedLink)?;
            by_ether_type(eth.ether_type(), eth.payload_slice(), 0)
        }
        LinkType::LINUX_SLL => {
            // packet type (2), ARPHRD type (2), address length (2), address (8), protocol (2)
            if frame.len() < SLL_HEADER_LEN {
                return Err(DecodeError::TruncatedLink);
            }
            let proto = u16::from_be_bytes([frame[14], frame[15]]);
            by_ether_type(EtherType(proto), &frame[SLL_HEADER_LEN..], 0)
        }
        LinkType::LINUX_SLL2 => {
            // protocol (2), reserved (2), ifindex (4), ARPHRD type (2), packet type (1),
            // address length (1), address (8)
            if frame.len() < SLL2_HEADER_LEN {
                return Err(DecodeError::TruncatedLink);
            }
            let proto = u16::from_be_bytes([frame[0], frame[1]]);
            by_ether_type(EtherType(proto), &frame[SLL2_HEADER_LEN..], 0)
        }
        LinkType::NULL | LinkType::LOOP => {
            if frame.len() < NULL_HEADER_LEN {
                return Err(DecodeError::TruncatedLink);
            }
            let raw = [frame[0], frame[1], frame[2], frame[3]];
            let be = u32::from_be_bytes(raw);
            // NULL is in the capturing host's order, which the file does not record:
            // try both. LOOP is always network order.
            let family = if linktype == LinkType::LOOP || is_known_family(be) {
                be
            } else {
                u32::from_le_bytes(raw)
            };
            let rest = &frame[NULL_HEADER_LEN..];
            match family {
                AF_INET => ip(Some(4), rest, 0),
                f if AF_INET6.contains(&f) => ip(Some(6), rest, 0),
                _ => Ok(None),
            }
        }
        LinkType::RAW | LinkType::RAW_12 | LinkType::RAW_14 => ip(None, frame, 0),
        LinkType::IEEE802_11 => wifi(frame),
        LinkType::RADIOTAP => {
            // version, pad, length (little-endian), then the fields it counts.
            let len = match frame.get(..4) {
                Some(h) => usize::from(u16::from_le_bytes([h[2], h[3]])),
                None => return Err(DecodeError::TruncatedLink),
            };
            wifi(frame.get(len..).ok_or(DecodeError::TruncatedLink)?)
        }
        LinkType::NFLOG => nflog(frame),
        LinkType::IPV4 => ip(Some(4), frame, 0),
        LinkType::IPV6 => ip(Some(6), frame, 0),
        other => Err(DecodeError::UnsupportedLinktype(other.0)),
    }
}

fn is_known_family(f: u32) -> bool {
    f == AF_INET || AF_INET6.contains(&f)
}

/// Follows VLAN tags, an MPLS label stack and a PPPoE session header, then hands IPv4/IPv6
/// to [`ip`]; any other ether type is not TCP. `depth`: tunnels already opened.
fn by_ether_type(
    mut ether_type: EtherType,
    mut payload: &[u8],
    depth: u8,
) -> Result<Option<Decoded<'_>>, DecodeError> {
    for _ in 0..=MAX_VLAN_TAGS {
        match ether_type {
            EtherType::IPV4 => return ip(Some(4), payload, depth),
            EtherType::IPV6 => return ip(Some(6), payload, depth),
            EtherType::VLAN_TAGGED_FRAME
            | EtherType::PROVIDER_BRIDGING
            | EtherType::VLAN_DOUBLE_TAGGED_FRAME => {
                let vlan =
                    SingleVlanSlice::from_slice(payload).map_err(|_| DecodeError::TruncatedLink)?;
                ether_type = vlan.ether_type();
                payload = vlan.payload_slice();
            }
            ETHERTYPE_MPLS | ETHERTYPE_MPLS_MULTICAST => return mpls(payload, depth),
            ETHERTYPE_PPPOE_SESSION => return pppoe(payload, depth),
            _ => return Ok(None),
        }
    }
    Ok(None)
}

/// An 802.11 data frame (not protected): its MAC header (24 bytes, 30 with four addresses, 2
/// more with QoS, 4 more with HT control), then LLC/SNAP and an ether type. Management and
/// control frames, and encrypted ones, are not TCP to us.
fn wifi(frame: &[u8]) -> Result<Option<Decoded<'_>>, DecodeError> {
    let Some(fc) = frame.get(..2) else {
        return Err(DecodeError::TruncatedLink);
    };
    if (fc[0] >> 2) & 3 != 2 || fc[1] & 0x40 != 0 || (fc[0] >> 4) & 4 != 0 {
        return Ok(None); // not data, protected, or a data frame without a body (null)
    }
    let qos = (fc[0] >> 4) & 8 != 0;
    let len = 24
        + 6 * usize::from(fc[1] & 3 == 3)
        + 2 * usize::from(qos)
        + 4 * usize::from(qos && fc[1] & 0x80 != 0);
    match frame.get(len..len + 8) {
        Some(llc) if llc[..6] == [0xaa, 0xaa, 0x03, 0, 0, 0] => by_ether_type(
            EtherType(u16::from_be_bytes([llc[6], llc[7]])),
            &frame[len + 8..],
            0,
        ),
        Some(_) => Ok(None),
        None => Err(DecodeError::TruncatedLink),
    }
}

/// A netfilter log message: a 4-byte header (address family, version, resource id), then
/// TLVs (length and type in the capturing host's byte order, little-endian read first, as
/// libpcap hands them over; the length counts the 4-byte TLV head, each padded to 4 bytes);
/// type 9 (`NFULA_PAYLOAD`) is the IP packet.
fn nflog(frame: &[u8]) -> Result<Option<Decoded<'_>>, DecodeError> {
    const NFULA_PAYLOAD: u16 = 9;
    let Some(&family) = frame.first() else {
        return Err(DecodeError::TruncatedLink);
    };
    let version = match family {
        2 => 4,
        10 => 6,
        _ => return Ok(None),
    };
    for le in [true, false] {
        let rd = |b: &[u8]| {
            if le {
                u16::from_le_bytes([b[0], b[1]])
            } else {
                u16::from_be_bytes([b[0], b[1]])
            }
        };
        let mut at = 4;
        while let Some(h) = frame.get(at..at + 4) {
            let (len, kind) = (usize::from(rd(&h[..2])), rd(&h[2..]));
            if len < 4 || at + len > frame.len() {
                break;
            }
            if kind == NFULA_PAYLOAD {
                return ip(Some(version), &frame[at + 4..at + len], 0);
            }
            at += len.div_ceil(4) * 4;
        }
    }
    Ok(None)
}

/// MPLS unicast and multicast (RFC 3032).
const ETHERTYPE_MPLS: EtherType = EtherType(0x8847);
const ETHERTYPE_MPLS_MULTICAST: EtherType = EtherType(0x8848);
/// PPPoE session stage (RFC 2516).
const ETHERTYPE_PPPOE_SESSION: EtherType = EtherType(0x8864);
/// Transparent Ethernet bridging: an Ethernet frame inside GRE (NVGRE, ERSPAN-less bridges).
const ETHERTYPE_TEB: u16 = 0x6558;
/// ERSPAN types II and III (Cisco's mirroring over GRE; tshark decodes both).
const ETHERTYPE_ERSPAN_II: u16 = 0x88be;
const ETHERTYPE_ERSPAN_III: u16 = 0x22eb;
/// Tunnels opened inside one another at most (IP in IP in GRE in ...): a deeper frame is not
/// TCP to us, so a packet of nested headers costs a bounded amount of work.
const MAX_TUNNEL_DEPTH: u8 = 4;
/// UDP ports of the tunnels tshark opens by default: GTP-U (3GPP TS 29.281, the user plane of
/// 4G and 5G cores) and VXLAN (RFC 7348, IANA port).
const GTP_U_PORT: u16 = 2152;
const VXLAN_PORT: u16 = 4789;
/// Geneve (RFC 8926, IANA port).
const GENEVE_PORT: u16 = 6081;

/// An MPLS label stack: labels up to the one with the bottom-of-stack bit, then IPv4 or IPv6
/// by the version nibble (as tshark guesses it); anything else (a pseudowire) is not TCP.
fn mpls(mut payload: &[u8], depth: u8) -> Result<Option<Decoded<'_>>, DecodeError> {
    // A label stack deeper than this is not a real one.
    for _ in 0..16 {
        let Some(label) = payload.get(..4) else {
            return Err(DecodeError::TruncatedLink);
        };
        let bottom = label[2] & 1 == 1;
        payload = &payload[4..];
        if bottom {
            return match payload.first().map(|b| b >> 4) {
                Some(4) => ip(Some(4), payload, depth),
                Some(6) => ip(Some(6), payload, depth),
                Some(_) => Ok(None),
                None => Err(DecodeError::TruncatedLink),
            };
        }
    }
    Ok(None)
}

/// A PPPoE session header (6 bytes) and the PPP protocol field: IPv4 0x0021, IPv6 0x0057.
fn pppoe(payload: &[u8], depth: u8) -> Result<Option<Decoded<'_>>, DecodeError> {
    let Some(h) = payload.get(..8) else {
        return Err(DecodeError::TruncatedLink);
    };
    let rest = &payload[8..];
    match u16::from_be_bytes([h[6], h[7]]) {
        0x0021 => ip(Some(4), rest, depth),
        0x0057 => ip(Some(6), rest, depth),
        _ => Ok(None),
    }
}

/// GRE (RFC 2784, RFC 2890): version 0, its optional checksum, key and sequence fields, then
/// the protocol by its ether type (IP, or Ethernet bridged inside).
fn gre(payload: &[u8], depth: u8) -> Result<Option<Decoded<'_>>, DecodeError> {
    let Some(h) = payload.get(..4) else {
        return Err(DecodeError::TruncatedIp);
    };
    if h[1] & 0x07 != 0 {
        return Ok(None); // version 1 (PPTP) and others
    }
    let len = 4
        + 4 * usize::from(h[0] & 0x80 != 0)
        + 4 * usize::from(h[0] & 0x20 != 0)
        + 4 * usize::from(h[0] & 0x10 != 0);
    let Some(rest) = payload.get(len..) else {
        return Err(DecodeError::TruncatedIp);
    };
    match u16::from_be_bytes([h[2], h[3]]) {
        ETHERTYPE_TEB => ethernet(rest, depth),
        // ERSPAN type II: an 8-byte header, then the mirrored Ethernet frame.
        ETHERTYPE_ERSPAN_II => ethernet(rest.get(8..).ok_or(DecodeError::TruncatedLink)?, depth),
        // ERSPAN type III: 12 bytes, 8 more when its O bit says a platform subheader follows.
        ETHERTYPE_ERSPAN_III => {
            let o = rest.get(11).ok_or(DecodeError::TruncatedLink)? & 1;
            let skip = 12 + 8 * usize::from(o);
            ethernet(rest.get(skip..).ok_or(DecodeError::TruncatedLink)?, depth)
        }
        proto => by_ether_type(EtherType(proto), rest, depth),
    }
}

fn ethernet(frame: &[u8], depth: u8) -> Result<Option<Decoded<'_>>, DecodeError> {
    let eth =
        Ethernet2Slice::from_slice_without_fcs(frame).map_err(|_| DecodeError::TruncatedLink)?;
    by_ether_type(eth.ether_type(), eth.payload_slice(), depth)
}

/// UDP: the tunnels of [`GTP_U_PORT`] and [`VXLAN_PORT`]; any other datagram is not TCP.
fn udp(payload: &[u8], depth: u8) -> Result<Option<Decoded<'_>>, DecodeError> {
    let Some(h) = payload.get(..8) else {
        return Ok(None);
    };
    let (sport, dport) = (
        u16::from_be_bytes([h[0], h[1]]),
        u16::from_be_bytes([h[2], h[3]]),
    );
    let rest = &payload[8..];
    if sport == GTP_U_PORT || dport == GTP_U_PORT {
        gtp_u(rest, depth)
    } else if sport == VXLAN_PORT || dport == VXLAN_PORT {
        // 8 bytes: flags (the I bit says a VNI follows), reserved, VNI, reserved.
        match rest.get(..8) {
            Some(v) if v[0] & 0x08 != 0 => ethernet(&rest[8..], depth),
            _ => Ok(None),
        }
    } else if sport == GENEVE_PORT || dport == GENEVE_PORT {
        // Version and options length (4-byte units), flags, protocol type; then options.
        let Some(g) = rest.get(..8) else {
            return Ok(None);
        };
        let skip = 8 + 4 * usize::from(g[0] & 0x3f);
        let inner = rest.get(skip..).unwrap_or_default();
        match u16::from_be_bytes([g[2], g[3]]) {
            ETHERTYPE_TEB => ethernet(inner, depth),
            proto => by_ether_type(EtherType(proto), inner, depth),
        }
    } else {
        Ok(None)
    }
}

/// A GTP-U G-PDU (version 1, message type 255): its 8-byte header, the 4 optional bytes when
/// any of the E, S, PN flags is set, its extension headers (5G's PDU Session Container among
/// them), then the user's IP packet by its version nibble. Other messages (echo, end marker)
/// carry no packet.
fn gtp_u(p: &[u8], depth: u8) -> Result<Option<Decoded<'_>>, DecodeError> {
    let Some(h) = p.get(..8) else {
        return Ok(None);
    };
    if h[0] >> 5 != 1 || h[0] & 0x10 == 0 || h[1] != 0xff {
        return Ok(None);
    }
    let mut at = 8;
    if h[0] & 0x07 != 0 {
        let Some(&next) = p.get(11) else {
            return Ok(None);
        };
        at = 12;
        let mut next = if h[0] & 0x04 != 0 { next } else { 0 };
        // Each extension: a length in 4-byte units, its content, the next one's type.
        for _ in 0..16 {
            if next == 0 {
                break;
            }
            let Some(&units) = p.get(at) else {
                return Ok(None);
            };
            let len = 4 * usize::from(units);
            let Some(&n) = p.get((at + len).wrapping_sub(1)).filter(|_| len > 0) else {
                return Ok(None);
            };
            next = n;
            at += len;
        }
        if next != 0 {
            return Ok(None);
        }
    }
    let inner = p.get(at..).unwrap_or_default();
    match inner.first().map(|b| b >> 4) {
        Some(4) => ip(Some(4), inner, depth),
        Some(6) => ip(Some(6), inner, depth),
        _ => Ok(None),
    }
}

/// Decodes an IP packet (version `want`, or either when `None`) down to TCP, opening the
/// tunnels tshark opens by default (IP in IP, GRE, GTP-U, VXLAN) up to [`MAX_TUNNEL_DEPTH`].
fn ip(want: Option<u8>, packet: &[u8], depth: u8) -> Result<Option<Decoded<'_>>, DecodeError> {
    let Some(&first) = packet.first() else {
        return Err(DecodeError::TruncatedIp);
    };
    let version = first >> 4;
    if want.is_some_and(|w| w != version) || !(version == 4 || version == 6) {
        return Err(DecodeError::BadIpHeader);
    }
    let (ip, ext_err) = LaxIpSlice::from_slice(packet).map_err(|e| match e {
        LaxHeaderSliceError::Len(_) => DecodeError::TruncatedIp,
        LaxHeaderSliceError::Content(_) => DecodeError::BadIpHeader,
    })?;
    let body = ip.payload();
    if ext_err.is_some() {
        // etherparse stopped inside an extension header: cut or malformed.
        return Err(if body.incomplete {
            DecodeError::TruncatedIp
        } else {
            DecodeError::BadIpHeader
        });
    }
    if body.fragmented {
        let (id, offset, more) = match &ip {
            LaxIpSlice::Ipv4(v4) => {
                let h = v4.header();
                (
                    u32::from(h.identification()),
                    u32::from(h.fragments_offset().byte_offset()),
                    h.more_fragments(),
                )
            }
            LaxIpSlice::Ipv6(v6) => {
                let Some(f) = v6.extensions().clone().into_iter().find_map(|e| match e {
                    etherparse::Ipv6ExtensionSlice::Fragment(f) => Some(f),
                    _ => None,
                }) else {
                    return Err(DecodeError::IpFragment);
                };
                (
                    f.identification(),
                    u32::from(f.fragment_offset().byte_offset()),
                    f.more_fragments(),
                )
            }
        };
        return Ok(Some(Decoded::Fragment(Fragment {
            src: ip.source_addr(),
            dst: ip.destination_addr(),
            id,
            proto: body.ip_number.0,
            offset,
            more,
            payload: body.payload,
            cut: body.incomplete,
        })));
    }
    if body.ip_number != IpNumber::TCP {
        if depth >= MAX_TUNNEL_DEPTH {
            return Ok(None);
        }
        let depth = depth + 1;
        return match body.ip_number {
            IpNumber::IPV4 => self::ip(Some(4), body.payload, depth),
            IpNumber::IPV6 => self::ip(Some(6), body.payload, depth),
            IpNumber::GRE => gre(body.payload, depth),
            IpNumber::UDP => udp(body.payload, depth),
            _ => Ok(None),
        };
    }
    // Bytes of IP payload the header says were sent. `incomplete` is set only when the
    // header's length is larger than the frame, i.e. the frame was cut: then the header
    // is right. Otherwise the payload slice was already bounded by the header length
    // (or by the frame when the header length is unusable).
    let wire_ip_payload = if body.incomplete {
        let claimed = match &ip {
            LaxIpSlice::Ipv4(v4) => usize::from(v4.header().total_len()),
            LaxIpSlice::Ipv6(v6) => 40 + usize::from(v6.header().payload_length()),
        };
        let headers = packet.len() - body.payload.len();
        claimed.saturating_sub(headers)
    } else {
        body.payload.len()
    };
    tcp(
        ip.source_addr(),
        ip.destination_addr(),
        body.payload,
        wire_ip_payload,
        body.incomplete,
    )
    .map(|seg| Some(Decoded::Tcp(seg)))
}

/// The TCP segment that is the payload of a reassembled IP datagram from `src` to `dst`.
pub fn tcp_in(src: IpAddr, dst: IpAddr, ip_payload: &[u8]) -> Result<TcpSegment<'_>, DecodeError> {
    tcp(src, dst, ip_payload, ip_payload.len(), false)
}

/// The TCP segment in `ip_payload` (`wire` bytes of it sent; `cut`: the frame was cut).
fn tcp(
    src: IpAddr,
    dst: IpAddr,
    ip_payload: &[u8],
    wire: usize,
    cut: bool,
) -> Result<TcpSegment<'_>, DecodeError> {
    let tcp = TcpHeaderSlice::from_slice(ip_payload).map_err(|e| match e {
        etherparse::err::tcp::HeaderSliceError::Len(_) if cut => DecodeError::TruncatedTcp,
        _ => DecodeError::BadTcpHeader,
    })?;
    let header_len = tcp.slice().len();
    let wire_payload_len = wire
        .checked_sub(header_len)
        .ok_or(DecodeError::BadTcpHeader)?;
    let payload = &ip_payload[header_len..];
    Ok(TcpSegment {
        src: SocketAddr::new(src, tcp.source_port()),
        dst: SocketAddr::new(dst, tcp.destination_port()),
        seq: tcp.sequence_number(),
        ack: tcp.acknowledgment_number(),
        flags: TcpFlags {
            syn: tcp.syn(),
            fin: tcp.fin(),
            rst: tcp.rst(),
            ack: tcp.ack(),
            psh: tcp.psh(),
        },
        window: tcp.window_size(),
        payload,
        // An IP length is at most 16 bits (no jumbograms), so this cannot saturate.
        wire_payload_len: u32::try_from(wire_payload_len).unwrap_or(u32::MAX),
    })
}

#[cfg(test)]
mod tests;
