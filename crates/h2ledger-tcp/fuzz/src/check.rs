//! The fuzz harness, shared by the fuzz target and the crate's regression tests
//! (`tests/fuzz_regressions.rs`): decode every record, reassemble with a tiny
//! `Config`, and check the `Sink` contract on the way.

use std::collections::HashMap;

use h2ledger_tcp::{
    link, CloseKind, Config, ConnId, ConnMeta, Dir, Nanos, Reassembler, Sink, Write,
};

/// Record selector byte -> pcap linktype (two unsupported ones included).
const LINKTYPES: [i32; 12] = [0, 1, 12, 14, 101, 108, 113, 228, 229, 276, 147, -1];

/// Runs one input. Panics when a contract is broken.
pub fn run(data: &[u8]) {
    let cfg = Config {
        max_buffered_per_dir: 512,
        max_holes_per_dir: 4,
        max_connections: 4,
        max_evicted: 4,
    };
    let mut reasm = Reassembler::new(cfg);
    let mut sink = Checker::default();
    let mut ts: Nanos = 0;
    let mut rest = data;
    while rest.len() >= 4 {
        let linktype = LINKTYPES[usize::from(rest[0]) % LINKTYPES.len()];
        ts += i64::from(rest[1]);
        let len = usize::from(u16::from_be_bytes([rest[2], rest[3]]));
        rest = &rest[4..];
        let frame = &rest[..len.min(rest.len())];
        rest = &rest[frame.len()..];
        if let Ok(Some(seg)) = link::decode(link::LinkType(linktype), frame) {
            assert!(seg.payload.len() <= seg.wire_payload_len as usize);
            reasm.push(ts, &seg, &mut sink);
        }
    }
    reasm.finish(ts, &mut sink);
    sink.check_end();
    let st = reasm.stats();
    assert_eq!(st.gaps, sink.gaps);
}

#[derive(Default)]
struct Side {
    next_index: u64,
    /// write index -> (len, bytes delivered so far)
    writes: HashMap<u64, (u32, u64)>,
}

#[derive(Default)]
struct Conn {
    closed: bool,
    sides: [Side; 2],
}

#[derive(Default)]
struct Checker {
    conns: HashMap<ConnId, Conn>,
    next_id: u32,
    gaps: u64,
}

impl Checker {
    fn live(&mut self, id: ConnId) -> &mut Conn {
        let c = self
            .conns
            .get_mut(&id)
            .expect("event for a connection never opened");
        assert!(!c.closed, "event after close");
        c
    }

    fn side(&mut self, id: ConnId, dir: Dir) -> &mut Side {
        &mut self.live(id).sides[usize::from(dir == Dir::Rev)]
    }

    fn check_end(&self) {
        assert!(
            self.conns.values().all(|c| c.closed),
            "connection left open"
        );
        for c in self.conns.values() {
            for s in &c.sides {
                for (len, got) in s.writes.values() {
                    assert!(*got <= u64::from(*len));
                }
            }
        }
    }
}

impl Sink for Checker {
    fn open(&mut self, meta: &ConnMeta) {
        assert_eq!(meta.id, ConnId(self.next_id), "ids in order from 0");
        self.next_id += 1;
        let mut conn = Conn::default();
        if let Some(old) = meta.resumes {
            // An evicted connection back (`ConnMeta::resumes`): each direction's write
            // indices go on from where the evicted one's stopped.
            let old = self
                .conns
                .get(&old)
                .expect("resumes a connection never opened");
            assert!(old.closed, "resumes a connection still open");
            for (new, old) in conn.sides.iter_mut().zip(&old.sides) {
                new.next_index = old.next_index;
            }
        }
        assert!(self.conns.insert(meta.id, conn).is_none());
    }

    fn write(&mut self, conn: ConnId, dir: Dir, w: &Write) {
        let side = self.side(conn, dir);
        assert_eq!(
            w.index, side.next_index,
            "write indices dense from 0 (from the evicted one's on a resumed connection)"
        );
        assert!(w.len > 0, "empty write");
        side.next_index += 1;
        side.writes.insert(w.index, (w.len, 0));
    }

    fn data(&mut self, conn: ConnId, dir: Dir, w: &Write, bytes: &[u8]) {
        assert!(!bytes.is_empty(), "empty data");
        let side = self.side(conn, dir);
        let entry = side
            .writes
            .get_mut(&w.index)
            .expect("data before its write");
        assert_eq!(entry.0, w.len);
        entry.1 += bytes.len() as u64;
        assert!(
            entry.1 <= u64::from(w.len),
            "more bytes than the write carried"
        );
    }

    fn gap(&mut self, conn: ConnId, dir: Dir, _ts: Nanos, len: u64) {
        assert!(len > 0, "empty gap");
        self.side(conn, dir);
        self.gaps += 1;
    }

    fn close(&mut self, conn: ConnId, _ts: Nanos, _kind: CloseKind) {
        self.live(conn).closed = true;
    }
}
