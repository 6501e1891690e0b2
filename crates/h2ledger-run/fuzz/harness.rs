//! Drives a whole run (link decode, reassembly, the ledger, the analysis, phases and the plot
//! timeline) with arbitrary input, then builds every report. The input is a header byte and a
//! sequence of operations, each either a raw packet of any link type or a TCP segment the
//! harness wraps in IPv4 (so reassembly and HTTP/2 are reached often): up to four connections,
//! either direction, SYN/FIN/RST, sequence jumps (gaps, retransmissions) and time jumps of up
//! to 2^40 ns either way. Header bit 3 lets the pipeline track only two connections at once,
//! so eviction and the return of an evicted connection are fuzzed too. The findings engine
//! runs with the analysis' flow tracker or its own (header bit 2), drained as it fires. The
//! run must never panic, loop, or grow with the time span.
//!
//! [`threads_agree`] runs the same operations with the analysis on the ledger's thread and on
//! a thread of its own (decision 261) and requires the same report, byte for byte.

// Each target and the tests use a part.
#![allow(dead_code)]

use h2ledger_core::analysis::{Cut, Splitter};
use h2ledger_run::{End, Finished, Obs, Options, Session, Wanted};
use h2ledger_tcp::LinkType;

const LINKTYPES: [LinkType; 4] = [
    LinkType::RAW,
    LinkType::ETHERNET,
    LinkType::NULL,
    LinkType::LINUX_SLL,
];

/// Returns the reassembly counters, for the tests.
pub fn run(data: &[u8]) -> h2ledger_run::TcpReport {
    let Some((&head, rest)) = data.split_first() else {
        return h2ledger_run::TcpReport::default();
    };
    let splitter = match head & 3 {
        0 => None,
        1 => Some(Splitter::every(1)),
        2 => Some(Splitter::every(1_000_000_000)),
        _ => Some(Splitter::at(vec![
            Cut::Offset(1_000),
            Cut::At(0),
            Cut::Offset(1 << 40),
        ])),
    };
    let wanted = Wanted {
        analysis: head & 4 == 0,
        splitter,
        timeline: Some(100_000_000),
        ..Wanted::default()
    };
    let (p, done) = feed(head, rest, &wanted);
    let findings = done.report.findings.as_deref().unwrap_or_default();
    assert!(findings.len() <= h2ledger_core::findings::MAX_FINDINGS);
    assert!(done.phase_count() <= h2ledger_core::analysis::MAX_PHASES);
    // Phase reports are built when asked for: build each one.
    for r in p.phases(&done) {
        let _ = r.ledger.sides.server.frames.total();
    }
    let _ = done.report.ledger.sides.client.frames.total();
    if let Some(plot) = p.plot(&done) {
        assert!(plot.timeline.counts.len() <= h2ledger_core::analysis::timeline::MAX_BUCKETS);
    }
    p.tcp()
}

/// The analysis here and on a thread of its own: the same report (header bits as [`run`]'s;
/// no phases, which keep the analysis here).
pub fn threads_agree(data: &[u8]) {
    let Some((&head, rest)) = data.split_first() else {
        return;
    };
    let report = |threads: bool| {
        let wanted = Wanted {
            analysis: true,
            timeline: (head & 4 != 0).then_some(100_000_000),
            threads,
            ..Wanted::default()
        };
        let (_, done) = feed(head, rest, &wanted);
        format!("{:?}", done.report)
    };
    let near = report(false);
    assert!(
        near == report(true),
        "the analysis' thread changed the report"
    );
}

/// The operations of `rest` fed to a session of `wanted` (see the module docs), finished.
fn feed(head: u8, mut rest: &[u8], wanted: &Wanted) -> (Session, Finished) {
    let obs = Obs::new(wanted);
    let opts = Options {
        max_connections: if head & 8 == 0 { 4096 } else { 2 },
        ..Options::default()
    };
    let mut p = Session::new(obs, opts);
    let mut ts: i64 = 1_700_000_000_000_000_000;
    let mut seq = [[1000u32; 2]; 4];
    while rest.len() >= 4 {
        let (op, b1, len) = (
            rest[0],
            rest[1],
            u16::from_be_bytes([rest[2], rest[3]]) as usize,
        );
        rest = &rest[4..];
        // Time: mostly small steps, sometimes a jump either way.
        ts = match b1 >> 6 {
            0 | 1 => ts.saturating_add(i64::from(b1 & 0x3f) * 1_000),
            2 => ts.saturating_add(1i64 << (b1 & 0x3f).min(40)),
            _ => ts.saturating_sub(1i64 << (b1 & 0x3f).min(40)),
        };
        let n = len.min(rest.len());
        let (payload, tail) = rest.split_at(n);
        rest = tail;
        if op & 0x80 != 0 {
            // A raw packet of one of the link types.
            let _ = p.feed(LINKTYPES[usize::from(op & 3)], ts, payload);
            continue;
        }
        let conn = usize::from(op & 3);
        let dir = usize::from(op >> 2 & 1);
        let flags = match op >> 3 & 7 {
            0 => 0x02, // SYN
            1 => 0x11, // FIN
            2 => 0x04, // RST
            3 => 0x10, // ACK, payload
            _ => 0x18, // PSH ACK, payload
        };
        if op & 0x40 != 0 {
            // A jump in sequence space: a gap, or a retransmission when it wraps back.
            seq[conn][dir] = seq[conn][dir].wrapping_add(u32::from(b1) * 97);
        }
        let body = if flags & 0x07 != 0 { &[][..] } else { payload };
        let pkt = ipv4_tcp(conn, dir, seq[conn][dir], seq[conn][1 - dir], flags, body);
        seq[conn][dir] = seq[conn][dir]
            .wrapping_add(body.len() as u32)
            .wrapping_add(u32::from(flags & 0x03 != 0));
        let _ = p.feed(LinkType::RAW, ts, &pkt);
        // The live path of the findings: what fired, drained as it fires.
        p.drain_findings(|f| {
            let _ = f.title.len();
        });
    }
    let done = p.finish(&End::Complete, None);
    (p, done)
}

fn ipv4_tcp(conn: usize, dir: usize, seq: u32, ack: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
    let (client, server) = ([127, 0, 0, 1 + conn as u8], [127, 0, 0, 100]);
    let (src, dst, sport, dport) = if dir == 0 {
        (client, server, 40_000 + conn as u16, 50_051u16)
    } else {
        (server, client, 50_051, 40_000 + conn as u16)
    };
    let total = (40 + payload.len()).min(65_535);
    let mut p = vec![
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        0,
        0,
        0x40,
        0,
        64,
        6,
        0,
        0,
    ];
    p.extend_from_slice(&src);
    p.extend_from_slice(&dst);
    p.extend_from_slice(&sport.to_be_bytes());
    p.extend_from_slice(&dport.to_be_bytes());
    p.extend_from_slice(&seq.to_be_bytes());
    p.extend_from_slice(&ack.to_be_bytes());
    p.extend_from_slice(&[0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
    p.extend_from_slice(&payload[..payload.len().min(65_535 - 40)]);
    p
}

/// The reader of records (decisions 264, 402) on any bytes: the first byte sets the block
/// size (1 to 256 bytes) and the second the largest read the source gives at once, so records
/// are cut at every place. The packets and secrets blocks must be those of the whole file
/// parsed at once, in the same order, up to the same end (a damaged pcapng at the same byte
/// for the same reason), and every one must lie within its block. The copying reader
/// (`split`) is held to the same ([`copied`]).
pub fn blocks(data: &[u8]) {
    use h2ledger_run::input::{BlockReader, Blocks, Filled, Found, Record};
    let [size, chunk, file @ ..] = data else {
        return;
    };
    /// A found thing's bytes and what it says, wherever it lies.
    fn item(b: &[u8], f: Found) -> (i64, u32, Vec<u8>) {
        match f {
            Found::Packet {
                ts,
                linktype,
                start,
                len,
                big,
            } => (
                ts,
                u32::from(linktype) | u32::from(big) << 16,
                b[start..start + len].to_vec(),
            ),
            Found::Secrets { kind, start, len } => (-1, kind, b[start..start + len].to_vec()),
        }
    }
    // The whole file at once.
    let mut whole = Vec::new();
    let mut walker = Blocks::new();
    let (at, end) = walker.walk(file, |f| whole.push(item(file, f)));
    let ng = walker.is_pcapng() || file[at..].starts_with(&[0x0a, 0x0d, 0x0d, 0x0a]);
    let want = match end {
        Record::More { .. } if at == file.len() => Filled::End,
        Record::More { need } if ng => Filled::Cut {
            at: at as u64,
            got: file.len() - at,
            need,
        },
        Record::Damaged(d) => Filled::Damaged(d, at as u64),
        _ => Filled::Odd,
    };
    /// A source that gives at most `max` bytes a read.
    struct Short<'a>(&'a [u8], usize);
    impl std::io::Read for Short<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(self.1).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }
    let mut reader = BlockReader::new(Short(file, usize::from(*chunk) + 1), usize::from(*size) + 1);
    let (mut data, mut found, mut got) = (Vec::new(), Vec::new(), Vec::new());
    let end = loop {
        let f = reader.fill(&mut data, &mut found);
        for &x in &found {
            let (start, len) = match x {
                Found::Packet { start, len, .. } | Found::Secrets { start, len, .. } => {
                    (start, len)
                }
            };
            assert!(start + len <= data.len(), "a record beyond its block");
            got.push(item(&data, x));
        }
        if f != Filled::Block {
            break f;
        }
    };
    assert_eq!(got, whole, "the same records block by block");
    // A cut record's length is known once its header was read: the reader may have read
    // less of it than the whole file holds.
    match (end, want) {
        (Filled::Cut { at: a, got: g, .. }, Filled::Cut { at: b, got: h, .. }) => {
            assert_eq!((a, g), (b, h), "the same cut")
        }
        (e, w) => assert_eq!(e, w, "the same end"),
    }
    copied(file, &whole, *size, *chunk);
}

/// The copying reader (`split`, decision 421) on the same bytes: every record whole, one after
/// the other from the file's first byte, a packet or secrets block within its record; a
/// pcapng's packets and secrets those of the reading walker, up to the same end (a classic
/// pcap's begin with them: the copier also takes what the reader leaves to libpcap); and the
/// same records and end block by block.
fn copied(file: &[u8], read: &[(i64, u32, Vec<u8>)], size: u8, chunk: u8) {
    use h2ledger_run::input::{BlockReader, Blocks, Filled, Found, Kind, Raw, Record};
    type Item = (u32, u32, Vec<u8>, Option<(i64, u32, Vec<u8>)>);
    fn span(f: Found) -> (usize, usize) {
        match f {
            Found::Packet { start, len, .. } | Found::Secrets { start, len, .. } => (start, len),
        }
    }
    fn item(b: &[u8], f: Found) -> (i64, u32, Vec<u8>) {
        let (start, len) = span(f);
        match f {
            Found::Packet {
                ts, linktype, big, ..
            } => (
                ts,
                u32::from(linktype) | u32::from(big) << 16,
                b[start..start + len].to_vec(),
            ),
            Found::Secrets { kind, .. } => (-1, kind, b[start..start + len].to_vec()),
        }
    }
    /// A record's kind, bytes and found thing, wherever it lies; checked to lie within `b`.
    fn raw_item(b: &[u8], r: Raw) -> Item {
        assert!(
            r.len > 0 && r.start + r.len <= b.len(),
            "a record beyond its block"
        );
        let bytes = b[r.start..r.start + r.len].to_vec();
        match r.kind {
            Kind::Header => (0, 0, bytes, None),
            Kind::Section => (1, 0, bytes, None),
            Kind::Other(t) => (2, t, bytes, None),
            Kind::Found(f) => {
                let (start, len) = span(f);
                assert!(
                    r.start <= start && start + len <= r.start + r.len,
                    "a packet beyond its record"
                );
                (3, 0, bytes, Some(item(b, f)))
            }
        }
    }
    let mut walker = Blocks::copying();
    let (mut whole, mut next) = (Vec::new(), 0);
    let (at, end) = walker.walk_raw(file, |r| {
        assert_eq!(r.start, next, "records follow one another");
        next = r.start + r.len;
        whole.push(raw_item(file, r));
    });
    assert_eq!(next, at, "the walk ends after its last record");
    assert!(end != Record::Odd, "a copier leaves nothing to libpcap");
    let found: Vec<_> = whole.iter().filter_map(|i| i.3.clone()).collect();
    if walker.is_pcapng() {
        assert_eq!(
            found, read,
            "a pcapng's packets and secrets are the reader's"
        );
        let mut reading = Blocks::new();
        assert_eq!(reading.walk(file, |_| {}), (at, end), "the same end");
    } else {
        assert!(
            found.starts_with(read),
            "a classic pcap's packets begin with the reader's"
        );
    }
    let want = match end {
        Record::More { .. } if at == file.len() => Filled::End,
        Record::More { need } => Filled::Cut {
            at: at as u64,
            got: file.len() - at,
            need,
        },
        Record::Damaged(d) => Filled::Damaged(d, at as u64),
        _ => Filled::Odd,
    };
    /// A source that gives at most `max` bytes a read.
    struct Short<'a>(&'a [u8], usize);
    impl std::io::Read for Short<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(self.1).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }
    let source = Short(file, usize::from(chunk) + 1);
    let mut reader = BlockReader::copying(source, usize::from(size) + 1);
    let (mut data, mut raws, mut got) = (Vec::new(), Vec::new(), Vec::new());
    let end = loop {
        let f = reader.fill_raw(&mut data, &mut raws);
        let mut next = 0;
        for &r in &raws {
            assert_eq!(r.start, next, "records follow one another in a block");
            next = r.start + r.len;
            got.push(raw_item(&data, r));
        }
        if f != Filled::Block {
            break f;
        }
    };
    assert_eq!(got, whole, "the same records block by block");
    match (end, want) {
        (Filled::Cut { at: a, got: g, .. }, Filled::Cut { at: b, got: h, .. }) => {
            assert_eq!((a, g), (b, h), "the same cut")
        }
        (e, w) => assert_eq!(e, w, "the same end"),
    }
}

/// The decompressing reader (gzip, zstd, or the bytes as they are, by their magic) on any
/// bytes: read to the end or the first error, never a panic, at most 64 MiB out (a zstd window
/// is at most 100 MiB, ruzstd's limit). A cut or damaged zstd frame hands out what it decoded
/// before the damage (decision 83), then the error.
pub fn decompress(data: &[u8]) {
    use std::io::Read as _;
    let head = data[..data.len().min(4)].to_vec();
    let kind = h2ledger_run::input::compression_of(&head);
    let rest = data[head.len()..].to_vec();
    let Ok(mut r) = h2ledger_run::input::decoder(head, std::io::Cursor::new(rest), kind) else {
        return;
    };
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0usize;
    while total < 64 << 20 {
        match r.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => total += n,
        }
    }
}
