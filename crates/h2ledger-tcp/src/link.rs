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
//! IP fragments are not reassembled: any fragment (first or not, v4 or v6) is
//! [`DecodeError::IpFragment`]. TCP over IP fragments is rare (TCP sets DF and sizes
//! segments by MSS); the bytes of such a segment surface later as a reassembly gap.

use core::fmt;
use core::net::SocketAddr;

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
    match linktype {
        LinkType::ETHERNET => {
            let eth = Ethernet2Slice::from_slice_without_fcs(frame)
                .map_err(|_| DecodeError::TruncatedLink)?;
            by_ether_type(eth.ether_type(), eth.payload_slice())
        }
        LinkType::LINUX_SLL => {
            // packet type (2), ARPHRD type (2), address length (2), address (8), protocol (2)
            if frame.len() < SLL_HEADER_LEN {
                return Err(DecodeError::TruncatedLink);
            }
            let proto = u16::from_be_bytes([frame[14], frame[15]]);
            by_ether_type(EtherType(proto), &frame[SLL_HEADER_LEN..])
        }
        LinkType::LINUX_SLL2 => {
            // protocol (2), reserved (2), ifindex (4), ARPHRD type (2), packet type (1),
            // address length (1), address (8)
            if frame.len() < SLL2_HEADER_LEN {
                return Err(DecodeError::TruncatedLink);
            }
            let proto = u16::from_be_bytes([frame[0], frame[1]]);
            by_ether_type(EtherType(proto), &frame[SLL2_HEADER_LEN..])
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
                AF_INET => ip(Some(4), rest),
                f if AF_INET6.contains(&f) => ip(Some(6), rest),
                _ => Ok(None),
            }
        }
        LinkType::RAW | LinkType::RAW_12 | LinkType::RAW_14 => ip(None, frame),
        LinkType::IPV4 => ip(Some(4), frame),
        LinkType::IPV6 => ip(Some(6), frame),
        other => Err(DecodeError::UnsupportedLinktype(other.0)),
    }
}

fn is_known_family(f: u32) -> bool {
    f == AF_INET || AF_INET6.contains(&f)
}

/// Follows VLAN tags, then hands IPv4/IPv6 to [`ip`]; any other ether type is not TCP.
fn by_ether_type(
    mut ether_type: EtherType,
    mut payload: &[u8],
) -> Result<Option<TcpSegment<'_>>, DecodeError> {
    for _ in 0..=MAX_VLAN_TAGS {
        match ether_type {
            EtherType::IPV4 => return ip(Some(4), payload),
            EtherType::IPV6 => return ip(Some(6), payload),
            EtherType::VLAN_TAGGED_FRAME
            | EtherType::PROVIDER_BRIDGING
            | EtherType::VLAN_DOUBLE_TAGGED_FRAME => {
                let vlan =
                    SingleVlanSlice::from_slice(payload).map_err(|_| DecodeError::TruncatedLink)?;
                ether_type = vlan.ether_type();
                payload = vlan.payload_slice();
            }
            _ => return Ok(None),
        }
    }
    Ok(None)
}

/// Decodes an IP packet (version `want`, or either when `None`) down to TCP.
fn ip(want: Option<u8>, packet: &[u8]) -> Result<Option<TcpSegment<'_>>, DecodeError> {
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
        return Err(DecodeError::IpFragment);
    }
    if body.ip_number != IpNumber::TCP {
        return Ok(None);
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
    let tcp = TcpHeaderSlice::from_slice(body.payload).map_err(|e| match e {
        etherparse::err::tcp::HeaderSliceError::Len(_) if body.incomplete => {
            DecodeError::TruncatedTcp
        }
        _ => DecodeError::BadTcpHeader,
    })?;
    let header_len = tcp.slice().len();
    let wire_payload_len = wire_ip_payload
        .checked_sub(header_len)
        .ok_or(DecodeError::BadTcpHeader)?;
    let payload = &body.payload[header_len..];
    Ok(Some(TcpSegment {
        src: SocketAddr::new(ip.source_addr(), tcp.source_port()),
        dst: SocketAddr::new(ip.destination_addr(), tcp.destination_port()),
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
    }))
}

#[cfg(test)]
mod tests;
