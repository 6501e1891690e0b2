//! Internal limits (issue 7, item 5): each cap, when hit, is reported and does not miscount.
//! Byte vectors: no peer reaches these limits.

use h2ledger_core::{FrameClass, FrameEvent, Ledger, LedgerReport, Observer, Side, Tally};
use h2ledger_tcp::{
    CloseKind, Config, ConnId, ConnMeta, Dir, Reassembler, Sink, TcpFlags, TcpSegment, Write,
};

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len();
    let mut v = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    v.extend_from_slice(&stream.to_be_bytes());
    v.extend_from_slice(payload);
    v
}

const DATA: u8 = 0;
const HEADERS: u8 = 1;
const SETTINGS: u8 = 4;

/// Frame events as (direction, class, write index).
#[derive(Default)]
struct Log(Vec<(Dir, FrameClass, u64)>);

impl Observer for Log {
    fn frame(&mut self, ev: &FrameEvent<'_>) {
        self.0.push((ev.dir, ev.class, ev.write));
    }
}

struct C {
    ledger: Ledger<(Tally, Log)>,
    writes: [u64; 2],
}

fn conn() -> C {
    let mut ledger = Ledger::new((Tally::new(), Log::default()));
    ledger.open(&ConnMeta {
        id: ConnId(0),
        first_src: "127.0.0.1:50000".parse().unwrap(),
        first_dst: "127.0.0.1:8080".parse().unwrap(),
        syn_sender: Some(Dir::Fwd),
        start: 0,
        resumes: None,
    });
    C {
        ledger,
        writes: [0; 2],
    }
}

impl C {
    /// One write of `bytes` from `dir`, of which the last `cut` were cut by the snap length.
    fn write_cut(&mut self, dir: Dir, bytes: &[u8], cut: usize) {
        let i = usize::from(dir == Dir::Rev);
        let w = Write {
            index: self.writes[i],
            ts: 1000 * (self.writes[0] + self.writes[1] + 1) as i64,
            len: bytes.len() as u32,
        };
        self.writes[i] += 1;
        self.ledger.write(ConnId(0), dir, &w);
        let present = bytes.len() - cut;
        self.ledger.data(ConnId(0), dir, &w, &bytes[..present]);
        if cut > 0 {
            self.ledger.gap(ConnId(0), dir, w.ts, cut as u64);
        }
    }
    fn write(&mut self, dir: Dir, bytes: &[u8]) {
        self.write_cut(dir, bytes, 0);
    }
    fn report(&self) -> LedgerReport {
        let mut r = LedgerReport::build(&self.ledger.connections(), &self.ledger.observer.0);
        r.anomalies = self
            .ledger
            .warnings
            .counts
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect();
        r
    }
    fn count(&self, side: Side, class: FrameClass) -> u64 {
        self.report().sides.get(side).frames.get(class)
    }
}

fn preface() -> Vec<u8> {
    let mut v = h2_frame_parser::PREFACE.to_vec();
    v.extend(frame(SETTINGS, 0, 0, &[]));
    v
}

fn setting(id: u16, value: u32) -> Vec<u8> {
    let mut v = id.to_be_bytes().to_vec();
    v.extend_from_slice(&value.to_be_bytes());
    v
}

/// The 17th SETTINGS in flight raises MAX_FRAME_SIZE: once ACKed, a 100 kB frame is legal.
/// It used to be dropped (16-entry queue), and the frame broke framing.
#[test]
fn settings_in_flight_beyond_the_queue_still_apply() {
    for n in [17, 70] {
        let mut c = conn();
        let mut client = preface();
        for i in 0..n {
            let p = if i == n - 1 {
                setting(5, 100_000)
            } else {
                vec![]
            };
            client.extend(frame(SETTINGS, 0, 0, &p));
        }
        client.extend(frame(HEADERS, 5, 1, &[0x82, 0x86, 0x84]));
        c.write(Dir::Fwd, &client);
        let mut server = frame(SETTINGS, 0, 0, &[]);
        for _ in 0..=n {
            server.extend(frame(SETTINGS, 1, 0, &[]));
        }
        server.extend(frame(HEADERS, 4, 1, &[0x88]));
        server.extend(frame(DATA, 1, 1, &vec![0; 100_000]));
        c.write(Dir::Rev, &server);
        let r = c.report();
        assert_eq!(c.count(Side::Server, FrameClass::Data), 1, "n={n}");
        assert!(
            !r.anomalies.contains_key("malformed-frame"),
            "n={n}: {:?}",
            c.ledger.warnings.messages
        );
        assert_eq!(
            r.anomalies.get("settings-cap").copied(),
            (n > h2ledger_core::ledger::MAX_PENDING_SETTINGS).then_some(1),
            "n={n}"
        );
    }
}

/// Beyond MAX_STREAMS open streams, HEADERS vs TRAILERS is read from the block and the cap
/// is reported (it was 20 HEADERS / 0 TRAILERS, silently).
#[test]
fn streams_beyond_the_cap_are_classified_and_reported() {
    let mut c = conn();
    c.write(Dir::Fwd, &preface());
    c.write(Dir::Rev, &frame(SETTINGS, 0, 0, &[]));
    let n = h2ledger_core::ledger::MAX_STREAMS as u32;
    let mut req = Vec::with_capacity(n as usize * 12);
    for i in 0..n {
        req.extend(frame(HEADERS, 4, 2 * i + 1, &[0x82, 0x86, 0x84]));
    }
    c.write(Dir::Fwd, &req);
    // 10 more streams, each with a response and trailers (grpc-status: 0).
    let trailer = [&[0x00, 11][..], b"grpc-status", &[1], b"0"].concat();
    for i in n..n + 10 {
        let s = 2 * i + 1;
        c.write(Dir::Fwd, &frame(HEADERS, 4, s, &[0x82, 0x86, 0x84]));
        let mut resp = frame(HEADERS, 4, s, &[0x88]);
        resp.extend(frame(HEADERS, 5, s, &trailer));
        c.write(Dir::Rev, &resp);
    }
    assert_eq!(c.count(Side::Server, FrameClass::Headers), 10);
    assert_eq!(c.count(Side::Server, FrameClass::Trailers), 10);
    assert_eq!(c.report().anomalies.get("streams-cap"), Some(&1));
}

/// A DATA frame whose last bytes fall in a snaplen-cut tail is counted at once, with the
/// write that carried it (it waited for the next byte of that side, and the last one was
/// never counted).
#[test]
fn frame_ending_in_a_snaplen_cut_tail_is_emitted_at_once() {
    let mut c = conn();
    c.write(Dir::Fwd, &preface());
    c.write(Dir::Rev, &frame(SETTINGS, 0, 0, &[]));
    let mut w = frame(HEADERS, 4, 1, &[0x82, 0x86, 0x84]);
    w.extend(frame(DATA, 1, 1, &[7; 100]));
    c.write_cut(Dir::Fwd, &w, 60);
    let last = *c.ledger.observer.1 .0.last().unwrap();
    assert_eq!(
        last,
        (Dir::Fwd, FrameClass::Data, 1),
        "DATA with write 1, at once"
    );
    c.ledger.close(ConnId(0), 10_000, CloseKind::Fin(Dir::Fwd));
    assert_eq!(c.count(Side::Client, FrameClass::Data), 1);
    assert!(!c.report().anomalies.contains_key("truncated-frame"));
}

/// SETTINGS_HEADER_TABLE_SIZE of 4 GiB - 1 and a size update to it: the table is capped and
/// the cap reported; the newest entries still decode exactly.
#[test]
fn huge_header_table_is_capped_and_reported() {
    let mut c = conn();
    let mut client = preface();
    let mut big = setting(1, u32::MAX);
    big.extend(setting(5, 1 << 20));
    client.extend(frame(SETTINGS, 0, 0, &big));
    c.write(Dir::Fwd, &client);
    let mut server = frame(SETTINGS, 0, 0, &[]);
    server.extend(frame(SETTINGS, 1, 0, &[]));
    server.extend(frame(SETTINGS, 1, 0, &[]));
    c.write(Dir::Rev, &server);
    c.write(Dir::Fwd, &frame(SETTINGS, 1, 0, &[]));
    // Size update to 2^32-1 (0x3f then 2^32-1-31 in 7-bit groups), :status 200, then 40
    // literal entries of 4 KiB each (160 KiB > the cap), the last one referenced at once.
    let mut block = vec![0x3f];
    let mut v = u32::MAX - 31;
    while v >= 128 {
        block.push((v % 128) as u8 | 0x80);
        v /= 128;
    }
    block.push(v as u8);
    block.push(0x88);
    for i in 0..40u8 {
        block.extend([0x40, 1, b'a' + i % 26, 0x7f, 0x81, 0x1f]); // value length 4096
        block.extend(vec![b'x'; 4096]);
    }
    block.push(0xbe); // index 62: the newest entry
    c.write(Dir::Fwd, &frame(HEADERS, 5, 1, &[0x82, 0x86, 0x84]));
    c.write(Dir::Rev, &frame(HEADERS, 5, 1, &block));
    let r = c.report();
    assert_eq!(
        r.anomalies.get("hpack-cap"),
        Some(&1),
        "{:?}",
        c.ledger.warnings.messages
    );
    assert!(!r.anomalies.contains_key("hpack-error"));
    assert_eq!(c.count(Side::Server, FrameClass::Headers), 1);
}

/// After an HPACK error the decoder is in mid-stream mode; a size update there is still
/// bounded by the cap (it used to accept any size).
#[test]
fn decoder_after_an_hpack_error_stays_capped() {
    let mut c = conn();
    c.write(Dir::Fwd, &preface());
    c.write(Dir::Rev, &frame(SETTINGS, 0, 0, &[]));
    // Index 0 is an HPACK error.
    c.write(Dir::Fwd, &frame(HEADERS, 5, 1, &[0x80]));
    // Size update to 2^30.
    let mut block = vec![0x3f];
    let mut v = (1u32 << 30) - 31;
    while v >= 128 {
        block.push((v % 128) as u8 | 0x80);
        v /= 128;
    }
    block.push(v as u8);
    block.extend([0x82, 0x86, 0x84]);
    c.write(Dir::Fwd, &frame(HEADERS, 5, 3, &block));
    let r = c.report();
    assert_eq!(r.anomalies.get("hpack-error"), Some(&1));
    assert_eq!(
        r.anomalies.get("hpack-cap"),
        Some(&1),
        "{:?}",
        c.ledger.warnings.messages
    );
}

fn seg<'a>(src: &str, dst: &str, seq: u32, flags: &str, payload: &'a [u8]) -> TcpSegment<'a> {
    TcpSegment {
        src: src.parse().unwrap(),
        dst: dst.parse().unwrap(),
        seq,
        ack: 0,
        flags: TcpFlags {
            syn: flags.contains('S'),
            ack: flags.contains('A'),
            ..TcpFlags::default()
        },
        window: 65535,
        payload,
        wire_payload_len: payload.len() as u32,
    }
}

/// An HTTP/2 connection evicted at the connection cap and then active again is one
/// connection (it came back as a second, mid-stream one), and the eviction is reported.
#[test]
fn evicted_connection_is_counted_once() {
    let mut ledger = Ledger::new(Tally::new());
    let mut r = Reassembler::new(Config {
        max_connections: 2,
        ..Config::default()
    });
    let (a, s) = ("10.0.0.1:40000", "10.0.0.2:8080");
    r.push(1, &seg(a, s, 99, "S", b""), &mut ledger);
    r.push(2, &seg(s, a, 499, "SA", b""), &mut ledger);
    let mut req = preface();
    req.extend(frame(HEADERS, 4, 1, &[0x82, 0x86, 0x84]));
    r.push(3, &seg(a, s, 100, "A", &req), &mut ledger);
    let resp = frame(SETTINGS, 0, 0, &[]);
    r.push(4, &seg(s, a, 500, "A", &resp), &mut ledger);
    // Two other connections: the first is evicted.
    r.push(5, &seg("10.0.0.3:1", s, 1, "S", b""), &mut ledger);
    r.push(6, &seg("10.0.0.4:1", s, 1, "S", b""), &mut ledger);
    // Back: the request's DATA (one segment, exactly one frame), the response.
    let data = frame(DATA, 1, 1, &[1; 10]);
    r.push(
        7,
        &seg(a, s, 100 + req.len() as u32, "A", &data),
        &mut ledger,
    );
    let mut resp2 = frame(HEADERS, 4, 1, &[0x88]);
    resp2.extend(frame(DATA, 1, 1, &[2; 10]));
    r.push(
        8,
        &seg(s, a, 500 + resp.len() as u32, "A", &resp2),
        &mut ledger,
    );
    r.finish(9, &mut ledger);
    let rep = LedgerReport::build(&ledger.connections(), &ledger.observer);
    assert_eq!(rep.connections, 1, "{:?}", ledger.warnings.messages);
    assert_eq!(rep.calls, 1);
    assert_eq!(rep.sides.get(Side::Client).frames.get(FrameClass::Data), 1);
    assert_eq!(
        rep.sides.get(Side::Server).frames.get(FrameClass::Headers),
        1
    );
    assert_eq!(rep.sides.get(Side::Server).frames.get(FrameClass::Data), 1);
    // Only the HTTP/2 connection's eviction is worth a warning.
    assert_eq!(ledger.warnings.counts.get("evicted"), Some(&1));
    assert_eq!(r.stats().resumed, 1);
}

/// Bytes of an HTTP/2 connection that never get a proven frame boundary are not counted
/// silently: the warning names the connection, the direction and the bytes.
#[test]
fn unframed_bytes_at_the_end_are_reported() {
    let mut c = conn();
    c.write(Dir::Fwd, &preface());
    c.write(Dir::Rev, &frame(SETTINGS, 0, 0, &[]));
    c.ledger.gap(ConnId(0), Dir::Rev, 5000, 100);
    // After the gap: the tail of a frame, not a boundary.
    c.write(Dir::Rev, &[0xab; 30]);
    c.ledger.close(ConnId(0), 10_000, CloseKind::EndOfCapture);
    let w = c.ledger.warnings.messages.join("\n");
    assert!(
        w.contains(
            "127.0.0.1:8080 -> 127.0.0.1:50000: the last 30 bytes have no proven frame boundary"
        ),
        "{w}"
    );
}

/// Every DATA frame is checked, whether an observer wants its payload or not (decision 260):
/// stream 0, and padding longer than the payload, also when the frame spans writes. Before,
/// only frames an observer wanted were checked, so `--analyze` counted anomalies a plain
/// replay did not.
#[test]
fn malformed_data_is_reported_whoever_reads_it() {
    let mut c = conn();
    c.write(Dir::Fwd, &preface());
    c.write(Dir::Rev, &frame(SETTINGS, 0, 0, &[]));
    let mut w = frame(HEADERS, 4, 1, &[0x82, 0x86, 0x84]);
    w.extend(frame(HEADERS, 4, 3, &[0x82, 0x86, 0x84]));
    w.extend(frame(HEADERS, 4, 5, &[0x82, 0x86, 0x84]));
    c.write(Dir::Fwd, &w);
    // Stream 0, and Pad Length 5 in a 3-byte payload, each in one write.
    c.write(Dir::Fwd, &frame(DATA, 0, 0, b"x"));
    c.write(Dir::Fwd, &frame(DATA, 0x8, 1, &[5, 1, 2]));
    // Pad Length 200 in a 10-byte payload, in two writes.
    let bad = frame(DATA, 0x8, 3, &[200, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    c.write(Dir::Fwd, &bad[..11]);
    c.write(Dir::Fwd, &bad[11..]);
    // A good padded frame in two writes: no warning.
    let good = frame(DATA, 0x9, 5, &[2, 7, 7, 7, 0, 0]);
    c.write(Dir::Fwd, &good[..10]);
    c.write(Dir::Fwd, &good[10..]);
    let r = c.report();
    assert_eq!(
        r.anomalies.get("malformed-frame"),
        Some(&3),
        "{:?}",
        c.ledger.warnings.messages
    );
    assert_eq!(c.count(Side::Client, FrameClass::Data), 4);
    let m = c.ledger.warnings.messages.join("\n");
    assert!(m.contains("malformed DATA frame on stream 0"), "{m}");
    assert!(m.contains("malformed DATA frame on stream 3"), "{m}");
}
