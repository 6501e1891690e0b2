//! The ledger on byte vectors fed through its `Sink` interface: framing across writes,
//! classification, HPACK state across SETTINGS, gaps and resynchronisation.

use h2ledger_core::{FrameClass, FrameEvent, Ledger, LedgerReport, Observer, Side, Tally};
use h2ledger_tcp::{ConnId, ConnMeta, Dir, Sink, Write};

/// One frame: 9-byte head + payload.
macro_rules! frame_bytes {
    ($kind:expr, $flags:expr, $stream:expr, [$b:expr; $n:expr]) => {{
        frame_bytes!(@build $kind, $flags, $stream, vec![$b; $n])
    }};
    ($kind:expr, $flags:expr, $stream:expr, [$($b:expr),* $(,)?]) => {{
        frame_bytes!(@build $kind, $flags, $stream, vec![$($b),*])
    }};
    (@build $kind:expr, $flags:expr, $stream:expr, $payload:expr) => {{
        let payload: Vec<u8> = $payload;
        let len = payload.len();
        let mut v = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, $kind, $flags];
        v.extend_from_slice(&($stream as u32).to_be_bytes());
        v.extend(payload);
        v
    }};
}

const DATA: u8 = 0;
const HEADERS: u8 = 1;
const SETTINGS: u8 = 4;
const PING: u8 = 6;
const CONTINUATION: u8 = 9;

/// One frame as seen: direction, class, stream, write index, decoded header fields.
type Seen = (Dir, FrameClass, u32, u64, Vec<(String, String)>);

/// Records every frame event for inspection.
#[derive(Default)]
struct Log {
    frames: Vec<Seen>,
}

impl Observer for Log {
    fn frame(&mut self, ev: &FrameEvent<'_>) {
        let headers = ev
            .headers
            .map(|h| {
                h.iter()
                    .map(|f| {
                        (
                            String::from_utf8_lossy(f.name).into_owned(),
                            String::from_utf8_lossy(f.value).into_owned(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        self.frames
            .push((ev.dir, ev.class, ev.head.stream_id.0, ev.write, headers));
    }
}

struct Conn {
    ledger: Ledger<(Tally, Log)>,
    writes: [u64; 2],
    ts: i64,
}

fn conn(syn: bool) -> Conn {
    let mut ledger = Ledger::new((Tally::new(), Log::default()));
    ledger.open(&ConnMeta {
        id: ConnId(0),
        first_src: "127.0.0.1:50000".parse().unwrap(),
        first_dst: "127.0.0.1:443".parse().unwrap(),
        syn_sender: syn.then_some(Dir::Fwd),
        start: 0,
        resumes: None,
    });
    Conn {
        ledger,
        writes: [0; 2],
        ts: 0,
    }
}

impl Conn {
    /// One TCP write from `dir`, delivered in the given pieces (as reassembly would).
    fn write(&mut self, dir: Dir, pieces: &[&[u8]]) {
        let i = if dir == Dir::Fwd { 0 } else { 1 };
        self.ts += 1000;
        let w = Write {
            index: self.writes[i],
            ts: self.ts,
            len: pieces.iter().map(|p| p.len() as u32).sum(),
        };
        self.writes[i] += 1;
        self.ledger.write(ConnId(0), dir, &w);
        for p in pieces {
            self.ledger.data(ConnId(0), dir, &w, p);
        }
    }

    fn report(&self) -> LedgerReport {
        LedgerReport::build(&self.ledger.connections(), &self.ledger.observer.0)
    }

    fn classes(&self, dir: Dir) -> Vec<FrameClass> {
        let log = &self.ledger.observer.1;
        log.frames
            .iter()
            .filter(|f| f.0 == dir)
            .map(|f| f.1)
            .collect()
    }
}

fn preface_and_settings() -> Vec<u8> {
    let mut v = h2_frame_parser::PREFACE.to_vec();
    v.extend(frame_bytes!(SETTINGS, 0, 0, []));
    v
}

#[test]
fn one_frame_over_many_writes_and_many_frames_in_one() {
    let mut c = conn(true);
    c.write(Dir::Fwd, &[&preface_and_settings()]);
    // A 40-byte DATA frame in three writes, the head itself split.
    let data = frame_bytes!(DATA, 1, 1, [7; 40]);
    c.write(Dir::Fwd, &[&data[..4]]);
    c.write(Dir::Fwd, &[&data[4..20]]);
    c.write(Dir::Fwd, &[&data[20..]]);
    // Four frames in one write.
    let mut many = frame_bytes!(SETTINGS, 0, 0, []);
    many.extend(frame_bytes!(PING, 0, 0, [2, 4, 16, 16, 9, 14, 7, 7]));
    many.extend(frame_bytes!(PING, 1, 0, [1; 8]));
    many.extend(frame_bytes!(SETTINGS, 1, 0, []));
    c.write(Dir::Rev, &[&many]);
    let r = c.report();
    assert_eq!(r.connections, 1);
    let client = &r.sides.client;
    assert_eq!(client.frames.get(FrameClass::Data), 1);
    assert_eq!(client.writes, 4);
    let server = &r.sides.server;
    assert_eq!(server.frames.get(FrameClass::Settings), 1);
    assert_eq!(server.frames.get(FrameClass::SettingsAck), 1);
    assert_eq!(server.frames.get(FrameClass::Ping), 1);
    assert_eq!(server.frames.get(FrameClass::PingAck), 1);
    assert_eq!(server.bdp_pings, 1);
    // The DATA frame ends in the client's fourth write (index 3).
    let log = &c.ledger.observer.1;
    let data_ev = log.frames.iter().find(|f| f.1 == FrameClass::Data).unwrap();
    assert_eq!(data_ev.3, 3);
}

/// Literal with incremental indexing, new name, no Huffman: `name: value`.
fn literal_indexed(name: &str, value: &str) -> Vec<u8> {
    let mut v = vec![0x40, name.len() as u8];
    v.extend_from_slice(name.as_bytes());
    v.push(value.len() as u8);
    v.extend_from_slice(value.as_bytes());
    v
}

#[test]
fn headers_trailers_continuation_and_hpack_state() {
    let mut c = conn(true);
    c.write(Dir::Fwd, &[&preface_and_settings()]);
    // Request: :method POST (static 3), :path / (static 4), then a new literal, across
    // HEADERS + CONTINUATION.
    let mut block = vec![0x83, 0x84];
    block.extend(literal_indexed("x-call", "one"));
    let mut w = frame_bytes!(HEADERS, 0, 1, []);
    w.splice(9.., block[..2].iter().copied());
    w[2] = 2;
    let mut cont = frame_bytes!(CONTINUATION, 4, 1, []);
    cont.extend_from_slice(&block[2..]);
    cont[2] = (block.len() - 2) as u8;
    w.extend(cont);
    c.write(Dir::Fwd, &[&w]);
    // Response headers (:status 200 = static 8), then trailers (a new literal) on stream 1.
    let resp = frame_bytes!(HEADERS, 4, 1, [0x88]);
    let mut trailers = frame_bytes!(HEADERS, 5, 1, []);
    let t = literal_indexed("grpc-status", "0");
    trailers[2] = t.len() as u8;
    trailers.extend(t);
    c.write(Dir::Rev, &[&resp, &trailers]);
    // A second request reuses the client's dynamic entry (index 62).
    let again = frame_bytes!(HEADERS, 5, 3, [0x83, 0x84, 0xbe]);
    c.write(Dir::Fwd, &[&again]);

    assert_eq!(
        c.classes(Dir::Fwd),
        [
            FrameClass::Settings,
            FrameClass::Headers,
            FrameClass::Continuation,
            FrameClass::Headers
        ]
    );
    assert_eq!(
        c.classes(Dir::Rev),
        [FrameClass::Headers, FrameClass::Trailers]
    );
    let log = &c.ledger.observer.1;
    let with_headers: Vec<_> = log.frames.iter().filter(|f| !f.4.is_empty()).collect();
    // The block is complete on the CONTINUATION, not on the HEADERS frame.
    assert_eq!(with_headers[0].1, FrameClass::Continuation);
    assert_eq!(
        with_headers[0].4,
        [
            (":method".into(), "POST".into()),
            (":path".into(), "/".into()),
            ("x-call".into(), "one".into())
        ]
    );
    assert_eq!(
        with_headers.last().unwrap().4[2],
        ("x-call".into(), "one".into())
    );
    let r = c.report();
    assert_eq!(r.calls, 2);
    assert_eq!(r.sides.server.frames.get(FrameClass::Trailers), 1);
    assert_eq!(c.ledger.connections()[0].client_dir, Dir::Fwd);
}

#[test]
fn header_table_size_applies_when_acked() {
    let mut c = conn(true);
    // The server says: my decoder's table is 0 bytes. Until the client ACKs, the client's
    // encoder may still use 4096; after the ACK a size update above 0 is an error.
    c.write(Dir::Fwd, &[&preface_and_settings()]);
    c.write(
        Dir::Rev,
        &[&frame_bytes!(SETTINGS, 0, 0, [0, 1, 0, 0, 0, 0])],
    );
    // Before the ACK: a size update to 100 (0x20 | 31, 69) is fine.
    c.write(
        Dir::Fwd,
        &[&frame_bytes!(HEADERS, 5, 1, [0x3f, 0x45, 0x83, 0x84])],
    );
    c.write(Dir::Fwd, &[&frame_bytes!(SETTINGS, 1, 0, [])]);
    // After it: the same update exceeds the acknowledged limit.
    c.write(
        Dir::Fwd,
        &[&frame_bytes!(HEADERS, 5, 3, [0x3f, 0x45, 0x83, 0x84])],
    );
    let w = &c.ledger.warnings;
    assert_eq!(w.counts.get("hpack-error"), Some(&1), "{:?}", w.messages);
    assert!(w.messages[0].contains("HPACK"), "{:?}", w.messages);
}

#[test]
fn gap_inside_data_keeps_framing_gap_across_frames_resyncs() {
    let mut c = conn(true);
    c.write(Dir::Fwd, &[&preface_and_settings()]);
    let data = frame_bytes!(DATA, 0, 1, [1; 100]);
    c.write(Dir::Fwd, &[&data[..30]]);
    c.ledger.gap(ConnId(0), Dir::Fwd, 0, 50);
    c.write(Dir::Fwd, &[&data[80..]]);
    let ping = frame_bytes!(PING, 0, 0, [0; 8]);
    c.write(Dir::Fwd, &[&ping]);
    assert_eq!(
        c.classes(Dir::Fwd),
        [FrameClass::Settings, FrameClass::Data, FrameClass::Ping]
    );
    // Now a gap that swallows a frame boundary: the next frames are found by proof.
    let d2 = frame_bytes!(DATA, 0, 1, [1; 20]);
    c.write(Dir::Fwd, &[&d2[..10]]);
    c.ledger.gap(ConnId(0), Dir::Fwd, 0, 40); // the rest of d2 and 21 bytes beyond
    let mut tail = vec![0xAA; 5]; // the end of a frame whose head we lost
    for _ in 0..3 {
        tail.extend(frame_bytes!(PING, 1, 0, [9; 8]));
    }
    c.write(Dir::Fwd, &[&tail]);
    let classes = c.classes(Dir::Fwd);
    // d2 counted from its head; then three PING ACKs after resynchronising.
    assert_eq!(
        classes[3..],
        [
            FrameClass::Data,
            FrameClass::PingAck,
            FrameClass::PingAck,
            FrameClass::PingAck
        ]
    );
    assert_eq!(c.ledger.warnings.counts.get("gap"), Some(&2));
    assert_eq!(c.ledger.warnings.counts.get("skipped-bytes"), Some(&1));
}

#[test]
fn mid_connection_client_from_pseudo_headers() {
    // No SYN, and the first packet is from the server (a response): the client is the side
    // whose header block starts with :method.
    let mut c = conn(false);
    let mut resp = frame_bytes!(HEADERS, 4, 5, [0x88]);
    resp.extend(frame_bytes!(DATA, 0, 5, [0; 5]));
    resp.extend(frame_bytes!(PING, 0, 0, [0; 8]));
    c.write(Dir::Fwd, &[&resp]);
    let mut req = frame_bytes!(HEADERS, 5, 7, [0x83, 0x84]);
    req.extend(frame_bytes!(PING, 1, 0, [0; 8]));
    req.extend(frame_bytes!(DATA, 1, 7, [0; 5]));
    c.write(Dir::Rev, &[&req]);
    let conns = c.ledger.connections();
    assert_eq!(conns[0].client_dir, Dir::Rev);
    assert_eq!(conns[0].client_by.name(), "pseudo-headers");
    assert!(conns[0].mid_stream);
    // Closed, the connection is folded into the totals by its final side, and freed.
    c.ledger
        .close(ConnId(0), 0, h2ledger_tcp::CloseKind::EndOfCapture);
    assert!(c.ledger.connections().is_empty());
    let r = c.report();
    assert_eq!(r.connections, 1);
    assert_eq!(r.per_connection[0].client_by, "pseudo-headers");
    assert_eq!(r.sides.get(Side::Client).frames.get(FrameClass::Headers), 1);
    assert_eq!(r.sides.get(Side::Server).frames.get(FrameClass::Headers), 1);
}

/// The same block sent again is decoded again as soon as the table changed in between: the
/// ledger remembers a block only while the decoder is as it left it (decision 220).
#[test]
fn a_repeated_block_follows_the_table() {
    let headers = |stream: u32, block: &[u8]| {
        let mut h = frame_bytes!(HEADERS, 5, stream, []);
        h[2] = block.len() as u8;
        h.extend_from_slice(block);
        h
    };
    let mut c = conn(true);
    c.write(Dir::Fwd, &[&preface_and_settings()]);
    let mut first = vec![0x82, 0x84];
    first.extend(literal_indexed("x-id", "a"));
    c.write(Dir::Fwd, &[&headers(1, &first)]);
    // :method GET, :path /, index 62 (the newest entry): x-id a twice, then x-id b once the
    // next block inserted it.
    let again = [0x82, 0x84, 0xbe];
    c.write(Dir::Fwd, &[&headers(3, &again)]);
    c.write(Dir::Fwd, &[&headers(5, &again)]);
    let mut insert = vec![0x82, 0x84];
    insert.extend(literal_indexed("x-id", "b"));
    c.write(Dir::Fwd, &[&headers(7, &insert)]);
    c.write(Dir::Fwd, &[&headers(9, &again)]);
    c.write(Dir::Fwd, &[&headers(11, &again)]);
    // The server asks for an empty table; the client's ACK applies it: index 62 is gone, and
    // the same block no longer decodes.
    c.write(
        Dir::Rev,
        &[&frame_bytes!(SETTINGS, 0, 0, [0, 1, 0, 0, 0, 0])],
    );
    c.write(Dir::Fwd, &[&frame_bytes!(SETTINGS, 1, 0, [])]);
    c.write(Dir::Fwd, &[&headers(13, &again)]);
    let ids: Vec<String> = c
        .ledger
        .observer
        .1
        .frames
        .iter()
        .filter(|f| f.1 == FrameClass::Headers)
        .map(|f| {
            f.4.iter()
                .find(|h| h.0 == "x-id")
                .map(|h| h.1.clone())
                .unwrap_or_default()
        })
        .collect();
    assert_eq!(ids, ["a", "a", "a", "b", "b", "b", ""]);
}
