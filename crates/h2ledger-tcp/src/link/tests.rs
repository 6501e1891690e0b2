use super::*;
use etherparse::{PacketBuilder, VlanId};

const PAYLOAD: &[u8] = b"\x00\x00\x04\x08\x00\x00\x00\x00\x00";

/// Raw IPv4 packet 127.0.0.1:40000 -> 127.0.0.2:50051, seq 1000, ack 7, PSH.
fn v4(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    PacketBuilder::ipv4([127, 0, 0, 1], [127, 0, 0, 2], 64)
        .tcp(40000, 50051, 1000, 65535)
        .ack(7)
        .psh()
        .write(&mut out, payload)
        .unwrap();
    out
}

/// Raw IPv6 packet [::1]:40000 -> [::2]:50051, seq 1000, ack 7.
fn v6(payload: &[u8]) -> Vec<u8> {
    let mut a = [0u8; 16];
    let mut b = [0u8; 16];
    a[15] = 1;
    b[15] = 2;
    let mut out = Vec::new();
    PacketBuilder::ipv6(a, b, 64)
        .tcp(40000, 50051, 1000, 65535)
        .ack(7)
        .write(&mut out, payload)
        .unwrap();
    out
}

fn cat(head: &[u8], rest: &[u8]) -> Vec<u8> {
    [head, rest].concat()
}

#[track_caller]
fn assert_v4_segment(linktype: LinkType, frame: &[u8]) {
    let seg = decode(linktype, frame).unwrap().expect("TCP");
    assert_eq!(seg.src, "127.0.0.1:40000".parse().unwrap());
    assert_eq!(seg.dst, "127.0.0.2:50051".parse().unwrap());
    assert_eq!((seg.seq, seg.ack, seg.window), (1000, 7, 65535));
    assert_eq!(
        seg.flags,
        TcpFlags {
            ack: true,
            psh: true,
            ..TcpFlags::default()
        }
    );
    assert_eq!(seg.payload, PAYLOAD);
    assert_eq!(seg.wire_payload_len, PAYLOAD.len() as u32);
}

#[track_caller]
fn assert_v6_segment(linktype: LinkType, frame: &[u8]) {
    let seg = decode(linktype, frame).unwrap().expect("TCP");
    assert_eq!(seg.src, "[::1]:40000".parse().unwrap());
    assert_eq!(seg.dst, "[::2]:50051".parse().unwrap());
    assert_eq!(seg.payload, PAYLOAD);
    assert_eq!(seg.wire_payload_len, PAYLOAD.len() as u32);
}

#[test]
fn ethernet_loopback_zero_macs() {
    let mut frame = Vec::new();
    PacketBuilder::ethernet2([0; 6], [0; 6])
        .ipv4([127, 0, 0, 1], [127, 0, 0, 2], 64)
        .tcp(40000, 50051, 1000, 65535)
        .ack(7)
        .psh()
        .write(&mut frame, PAYLOAD)
        .unwrap();
    assert_eq!(&frame[12..14], &[0x08, 0x00]);
    assert_v4_segment(LinkType::ETHERNET, &frame);
}

#[test]
fn ethernet_vlan() {
    let mut frame = Vec::new();
    PacketBuilder::ethernet2([1; 6], [2; 6])
        .single_vlan(VlanId::try_new(42).unwrap())
        .ipv4([127, 0, 0, 1], [127, 0, 0, 2], 64)
        .tcp(40000, 50051, 1000, 65535)
        .ack(7)
        .psh()
        .write(&mut frame, PAYLOAD)
        .unwrap();
    assert_eq!(&frame[12..14], &[0x81, 0x00]);
    assert_v4_segment(LinkType::ETHERNET, &frame);
}

#[test]
fn ethernet_padding_is_not_payload() {
    // 14 + 20 + 20 + 2 = 56 bytes: padded to the 60-byte minimum with junk.
    let mut frame = cat(&[0; 12], &[0x08, 0x00]);
    frame.extend(v4(b"hi"));
    frame.extend([0xAA; 4]);
    assert_eq!(frame.len(), 60);
    let seg = decode(LinkType::ETHERNET, &frame).unwrap().unwrap();
    assert_eq!(seg.payload, b"hi");
    assert_eq!(seg.wire_payload_len, 2);

    // A pure ACK padded to 60 bytes has no payload at all.
    let mut frame = cat(&[0; 12], &[0x08, 0x00]);
    frame.extend(v4(b""));
    frame.extend([0xAA; 6]);
    let seg = decode(LinkType::ETHERNET, &frame).unwrap().unwrap();
    assert_eq!(seg.payload, b"");
    assert_eq!(seg.wire_payload_len, 0);
}

#[test]
fn ethernet_ipv6() {
    let frame = cat(
        &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x86, 0xdd],
        &v6(PAYLOAD),
    );
    assert_v6_segment(LinkType::ETHERNET, &frame);
}

#[test]
fn linux_sll_loopback_arphrd_772() {
    // packet type 0 (host), ARPHRD 772 (loopback), address length 6, address, IPv4
    let head = [0, 0, 0x03, 0x04, 0, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0x08, 0x00];
    assert_v4_segment(LinkType::LINUX_SLL, &cat(&head, &v4(PAYLOAD)));
    let head6 = [0, 4, 0x03, 0x04, 0, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0x86, 0xdd];
    assert_v6_segment(LinkType::LINUX_SLL, &cat(&head6, &v6(PAYLOAD)));
    // Too short for the header.
    assert_eq!(
        decode(LinkType::LINUX_SLL, &head[..15]),
        Err(DecodeError::TruncatedLink)
    );
    // ARP: not TCP.
    let arp = [0, 0, 0, 1, 0, 6, 1, 2, 3, 4, 5, 6, 0, 0, 0x08, 0x06, 0, 1];
    assert_eq!(decode(LinkType::LINUX_SLL, &arp), Ok(None));
}

#[test]
fn linux_sll2() {
    // protocol, reserved, ifindex 1, ARPHRD 772, packet type 0, address length 6, address
    let head = [
        0x08, 0x00, 0, 0, 0, 0, 0, 1, 0x03, 0x04, 0, 6, 0, 0, 0, 0, 0, 0, 0, 0,
    ];
    assert_v4_segment(LinkType::LINUX_SLL2, &cat(&head, &v4(PAYLOAD)));
    let mut head6 = head;
    head6[..2].copy_from_slice(&[0x86, 0xdd]);
    assert_v6_segment(LinkType::LINUX_SLL2, &cat(&head6, &v6(PAYLOAD)));
    assert_eq!(
        decode(LinkType::LINUX_SLL2, &head[..19]),
        Err(DecodeError::TruncatedLink)
    );
}

#[test]
fn bsd_null_both_byte_orders() {
    assert_v4_segment(LinkType::NULL, &cat(&[2, 0, 0, 0], &v4(PAYLOAD)));
    assert_v4_segment(LinkType::NULL, &cat(&[0, 0, 0, 2], &v4(PAYLOAD)));
    for family in [10u32, 24, 28, 30] {
        assert_v6_segment(LinkType::NULL, &cat(&family.to_le_bytes(), &v6(PAYLOAD)));
        assert_v6_segment(LinkType::NULL, &cat(&family.to_be_bytes(), &v6(PAYLOAD)));
    }
    // Unknown family (e.g. AF_UNIX): not TCP over IP.
    assert_eq!(
        decode(LinkType::NULL, &cat(&[1, 0, 0, 0], &v4(PAYLOAD))),
        Ok(None)
    );
    assert_eq!(
        decode(LinkType::NULL, &[2, 0, 0]),
        Err(DecodeError::TruncatedLink)
    );
}

#[test]
fn openbsd_loop_network_order() {
    assert_v4_segment(LinkType::LOOP, &cat(&[0, 0, 0, 2], &v4(PAYLOAD)));
    assert_v6_segment(LinkType::LOOP, &cat(&[0, 0, 0, 24], &v6(PAYLOAD)));
    // Host order is not accepted for LOOP.
    assert_eq!(
        decode(LinkType::LOOP, &cat(&[2, 0, 0, 0], &v4(PAYLOAD))),
        Ok(None)
    );
}

#[test]
fn raw_ip_linktypes() {
    for lt in [LinkType::RAW, LinkType::RAW_12, LinkType::RAW_14] {
        assert_v4_segment(lt, &v4(PAYLOAD));
        assert_v6_segment(lt, &v6(PAYLOAD));
    }
    assert_v4_segment(LinkType::IPV4, &v4(PAYLOAD));
    assert_v6_segment(LinkType::IPV6, &v6(PAYLOAD));
    assert_eq!(
        decode(LinkType::IPV4, &v6(PAYLOAD)),
        Err(DecodeError::BadIpHeader)
    );
    assert_eq!(
        decode(LinkType::IPV6, &v4(PAYLOAD)),
        Err(DecodeError::BadIpHeader)
    );
    assert_eq!(
        decode(LinkType::RAW, &[0x75; 40]),
        Err(DecodeError::BadIpHeader)
    );
    assert_eq!(decode(LinkType::RAW, &[]), Err(DecodeError::TruncatedIp));
}

#[test]
fn ipv4_options() {
    let mut p = v4(PAYLOAD);
    p[0] = 0x46; // IHL 6
    let total = u16::from_be_bytes([p[2], p[3]]) + 4;
    p[2..4].copy_from_slice(&total.to_be_bytes());
    p.splice(20..20, [1, 1, 1, 0]); // NOP NOP NOP EOL
    assert_v4_segment(LinkType::RAW, &p);
}

#[test]
fn ipv6_extension_header() {
    let mut p = v6(PAYLOAD);
    p[6] = 0; // next header: hop-by-hop options
    let len = u16::from_be_bytes([p[4], p[5]]) + 8;
    p[4..6].copy_from_slice(&len.to_be_bytes());
    // next header TCP, length 0 (8 bytes), PadN of 4
    p.splice(40..40, [6, 0, 1, 4, 0, 0, 0, 0]);
    assert_v6_segment(LinkType::RAW, &p);
}

#[test]
fn truncated_by_snaplen() {
    let full = cat(&[0; 12], &[0x08, 0x00]);
    let full = cat(&full, &v4(&[7u8; 100]));
    // Snaplen 84: 14 + 20 + 20 + 30 payload bytes.
    let seg = decode(LinkType::ETHERNET, &full[..84]).unwrap().unwrap();
    assert_eq!(seg.payload, &[7u8; 30]);
    assert_eq!(seg.wire_payload_len, 100);

    let six = v6(&[9u8; 50]);
    let seg = decode(LinkType::RAW, &six[..70]).unwrap().unwrap();
    assert_eq!(seg.payload, &[9u8; 10]);
    assert_eq!(seg.wire_payload_len, 50);

    // Cut inside the TCP header, inside the IP header.
    assert_eq!(
        decode(LinkType::RAW, &six[..50]),
        Err(DecodeError::TruncatedTcp)
    );
    assert_eq!(
        decode(LinkType::RAW, &six[..30]),
        Err(DecodeError::TruncatedIp)
    );
    assert_eq!(
        decode(LinkType::ETHERNET, &full[..10]),
        Err(DecodeError::TruncatedLink)
    );
}

#[test]
fn ipv4_zero_total_length_uses_frame() {
    // TSO/GSO super-packets are captured with total length 0.
    let mut p = v4(PAYLOAD);
    p[2..4].copy_from_slice(&[0, 0]);
    assert_v4_segment(LinkType::RAW, &p);
}

#[test]
fn tcp_header_longer_than_ip_payload_is_malformed() {
    let mut p = v4(b"");
    p[32] = 0xf0; // data offset 15 words, but only 20 TCP bytes in the packet
    assert_eq!(decode(LinkType::RAW, &p), Err(DecodeError::BadTcpHeader));
    p[32] = 0x40; // data offset 4 < 5
    assert_eq!(decode(LinkType::RAW, &p), Err(DecodeError::BadTcpHeader));
}

#[test]
fn fragments_are_errors() {
    let mut first = v4(PAYLOAD);
    first[6] = 0x20; // MF, offset 0
    assert_eq!(decode(LinkType::RAW, &first), Err(DecodeError::IpFragment));
    let mut later = v4(PAYLOAD);
    later[6..8].copy_from_slice(&[0x00, 0x10]); // offset 16 * 8 bytes, last fragment
    assert_eq!(decode(LinkType::RAW, &later), Err(DecodeError::IpFragment));
}

#[test]
fn non_tcp_is_none() {
    let mut udp = Vec::new();
    PacketBuilder::ipv4([127, 0, 0, 1], [127, 0, 0, 2], 64)
        .udp(1, 2)
        .write(&mut udp, b"x")
        .unwrap();
    assert_eq!(decode(LinkType::RAW, &udp), Ok(None));
    let arp = cat(&[0; 12], &[0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1]);
    assert_eq!(decode(LinkType::ETHERNET, &arp), Ok(None));
}

#[test]
fn unsupported_linktype() {
    assert_eq!(
        decode(LinkType(147), &v4(PAYLOAD)),
        Err(DecodeError::UnsupportedLinktype(147))
    );
    assert_eq!(
        DecodeError::UnsupportedLinktype(147).to_string(),
        "unsupported link type 147"
    );
}

#[test]
fn syn_fin_rst_flags() {
    let mut p = Vec::new();
    PacketBuilder::ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
        .tcp(1, 2, u32::MAX, 100)
        .syn()
        .fin()
        .rst()
        .write(&mut p, b"")
        .unwrap();
    let seg = decode(LinkType::IPV4, &p).unwrap().unwrap();
    assert_eq!(
        seg.flags,
        TcpFlags {
            syn: true,
            fin: true,
            rst: true,
            ack: false,
            psh: false
        }
    );
    assert_eq!((seg.seq, seg.window), (u32::MAX, 100));
}

/// An outer IPv4 header (10.9.9.1 -> 10.9.9.2) of protocol `proto` around `inner`.
fn outer4(proto: u8, inner: &[u8]) -> Vec<u8> {
    let total = (20 + inner.len()) as u16;
    let mut h = vec![
        0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, proto, 0, 0, 10, 9, 9, 1, 10, 9, 9, 2,
    ];
    h[2..4].copy_from_slice(&total.to_be_bytes());
    cat(&h, inner)
}

fn udp(sport: u16, dport: u16, body: &[u8]) -> Vec<u8> {
    let mut h = Vec::new();
    h.extend(sport.to_be_bytes());
    h.extend(dport.to_be_bytes());
    h.extend(((8 + body.len()) as u16).to_be_bytes());
    h.extend([0, 0]);
    cat(&h, body)
}

/// The tunnels tshark opens by default carry the inner connection: IP in IP (4 and 41), GRE
/// (with key and sequence, IP or bridged Ethernet inside), GTP-U with 5G's PDU Session
/// Container, VXLAN; and MPLS and PPPoE under Ethernet (decision 470).
#[test]
fn tunnels_carry_the_inner_segment() {
    let eth = |etype: u16, body: &[u8]| cat(&cat(&[2; 12], &etype.to_be_bytes()), body);
    assert_v4_segment(LinkType::RAW, &outer4(4, &v4(PAYLOAD)));
    assert_v6_segment(LinkType::RAW, &outer4(41, &v6(PAYLOAD)));
    let gre = cat(&[0x30, 0, 0x08, 0x00, 0, 0, 0, 7, 0, 0, 0, 1], &v4(PAYLOAD));
    assert_v4_segment(LinkType::RAW, &outer4(47, &gre));
    let teb = cat(&[0, 0, 0x65, 0x58], &eth(0x0800, &v4(PAYLOAD)));
    assert_v4_segment(LinkType::RAW, &outer4(47, &teb));
    let gtp = cat(
        &[
            0x34, 0xff, 0, 0, 0, 0, 0x12, 0x34, 0, 0, 0, 0x85, 1, 0, 1, 0,
        ],
        &v4(PAYLOAD),
    );
    assert_v4_segment(LinkType::RAW, &outer4(17, &udp(2152, 2152, &gtp)));
    let vxlan = cat(&[0x08, 0, 0, 0, 0, 0, 42, 0], &eth(0x0800, &v4(PAYLOAD)));
    assert_v4_segment(LinkType::RAW, &outer4(17, &udp(50000, 4789, &vxlan)));
    let mpls = cat(&[0, 1, 0, 64, 0, 1, 1, 64], &v4(PAYLOAD));
    assert_v4_segment(LinkType::ETHERNET, &eth(0x8847, &mpls));
    let pppoe = cat(&[0x11, 0, 0, 1, 0, 0, 0x00, 0x57], &v6(PAYLOAD));
    assert_v6_segment(LinkType::ETHERNET, &eth(0x8864, &pppoe));
    // Other UDP, a GTP-U echo, GRE version 1: not TCP.
    assert_eq!(
        decode(LinkType::RAW, &outer4(17, &udp(53, 53, &v4(PAYLOAD)))),
        Ok(None)
    );
    let echo = cat(&[0x32, 0x01, 0, 4, 0, 0, 0, 0], &[0; 4]);
    assert_eq!(
        decode(LinkType::RAW, &outer4(17, &udp(2152, 2152, &echo))),
        Ok(None)
    );
    assert_eq!(
        decode(
            LinkType::RAW,
            &outer4(47, &cat(&[0, 1, 0x08, 0], &v4(PAYLOAD)))
        ),
        Ok(None)
    );
    // Nested deeper than MAX_TUNNEL_DEPTH: not TCP, after a bounded walk.
    let mut p = v4(PAYLOAD);
    for _ in 0..MAX_TUNNEL_DEPTH {
        p = outer4(4, &p);
    }
    assert_v4_segment(LinkType::RAW, &p);
    assert_eq!(decode(LinkType::RAW, &outer4(4, &p)), Ok(None));
}

/// `decode_any` hands a fragment's identity and place back for reassembly.
#[test]
fn fragments_for_reassembly() {
    let mut first = v4(PAYLOAD);
    first[4..8].copy_from_slice(&[0x12, 0x34, 0x20, 0x00]); // id 0x1234, MF, offset 0
    let Ok(Some(Decoded::Fragment(f))) = decode_any(LinkType::RAW, &first) else {
        panic!("a fragment");
    };
    assert_eq!(
        (f.id, f.proto, f.offset, f.more, f.cut),
        (0x1234, 6, 0, true, false)
    );
    assert_eq!(f.payload.len(), 20 + PAYLOAD.len());
    let seg = tcp_in(f.src, f.dst, f.payload).unwrap();
    assert_eq!(seg.dst, "127.0.0.2:50051".parse().unwrap());
    assert_eq!(seg.payload, PAYLOAD);
}

/// 802.11 data frames (bare and after radiotap), NFLOG's payload TLV, ERSPAN II and III in
/// GRE, Geneve: as tshark decodes them (Arkime's test captures 80211http, nflog,
/// gre-erspan-vxlan and tcpdump-geneve hold them).
#[test]
fn wifi_nflog_erspan_geneve() {
    let llc = |ip: &[u8]| cat(&[0xaa, 0xaa, 0x03, 0, 0, 0, 0x08, 0x00], ip);
    let qos_data = cat(&cat(&[0x88, 0x01], &[0; 24]), &llc(&v4(PAYLOAD)));
    assert_v4_segment(LinkType::IEEE802_11, &qos_data);
    assert_v4_segment(
        LinkType::RADIOTAP,
        &cat(&[0, 0, 8, 0, 0, 0, 0, 0], &qos_data),
    );
    let beacon = cat(&[0x80, 0], &[0; 30]);
    assert_eq!(decode(LinkType::IEEE802_11, &beacon), Ok(None));
    let mut protected = qos_data.clone();
    protected[1] |= 0x40;
    assert_eq!(decode(LinkType::IEEE802_11, &protected), Ok(None));
    let p = v4(PAYLOAD);
    let mut nflog = vec![2, 0, 0, 0, 8, 0, 10, 0, b'h', b'i', 0, 0];
    nflog.extend(((4 + p.len()) as u16).to_le_bytes());
    nflog.extend(9u16.to_le_bytes());
    nflog.extend(&p);
    assert_v4_segment(LinkType::NFLOG, &nflog);
    let eth = cat(&cat(&[2; 12], &[0x08, 0x00]), &v4(PAYLOAD));
    let erspan2 = cat(
        &[0x10, 0, 0x88, 0xbe, 0, 0, 0, 1, 0x10, 0, 0, 1, 0, 0, 0, 0],
        &eth,
    );
    assert_v4_segment(LinkType::RAW, &outer4(47, &erspan2));
    let mut e3 = vec![0, 0, 0x22, 0xeb, 0x20];
    e3.extend([0; 10]);
    e3.push(1); // O: an 8-byte platform subheader follows
    e3.extend([0; 8]);
    assert_v4_segment(LinkType::RAW, &outer4(47, &cat(&e3, &eth)));
    let geneve = cat(
        &[2, 0, 0x65, 0x58, 0, 0, 7, 0, 1, 2, 3, 1, 0, 0, 0, 0],
        &eth,
    );
    assert_v4_segment(LinkType::RAW, &outer4(17, &udp(50000, 6081, &geneve)));
}
