use super::*;
use crate::TcpFlags;
use std::collections::HashMap;

const C: &str = "10.0.0.1:40000";
const S: &str = "10.0.0.2:50051";

#[derive(Debug, Clone, PartialEq, Eq)]
enum Ev {
    Open(ConnMeta),
    Write(ConnId, Dir, Write),
    Data(ConnId, Dir, u64, Vec<u8>),
    Gap(ConnId, Dir, u64),
    Close(ConnId, CloseKind),
}

#[derive(Default)]
/// Events, and each close's timestamp.
struct Rec(Vec<Ev>, Vec<Nanos>);

impl Sink for Rec {
    fn open(&mut self, meta: &ConnMeta) {
        self.0.push(Ev::Open(meta.clone()));
    }
    fn write(&mut self, conn: ConnId, dir: Dir, w: &Write) {
        self.0.push(Ev::Write(conn, dir, *w));
    }
    fn data(&mut self, conn: ConnId, dir: Dir, w: &Write, bytes: &[u8]) {
        // Every chunk must come after the write that carried it.
        assert!(
            self.0.contains(&Ev::Write(conn, dir, *w)),
            "data before its write: {w:?}"
        );
        self.0.push(Ev::Data(conn, dir, w.index, bytes.to_vec()));
    }
    fn gap(&mut self, conn: ConnId, dir: Dir, _ts: Nanos, len: u64) {
        self.0.push(Ev::Gap(conn, dir, len));
    }
    fn close(&mut self, conn: ConnId, ts: Nanos, kind: CloseKind) {
        assert!(
            !self
                .0
                .iter()
                .any(|e| matches!(e, Ev::Close(c, _) if *c == conn)),
            "closed twice"
        );
        self.0.push(Ev::Close(conn, kind));
        self.1.push(ts);
    }
}

/// What one direction delivered: `(write index, bytes)` with adjacent chunks of the same
/// write merged, and `(u64::MAX, len as text)` for gaps.
#[derive(Debug, PartialEq, Eq)]
enum Chunk {
    D(u64, String),
    Gap(u64),
}
use Chunk::{Gap, D};

impl Rec {
    fn stream(&self, conn: u32, dir: Dir) -> Vec<Chunk> {
        let mut out: Vec<Chunk> = Vec::new();
        for e in &self.0 {
            match e {
                Ev::Data(c, d, i, b) if c.0 == conn && *d == dir => {
                    let text = String::from_utf8(b.clone()).unwrap();
                    match out.last_mut() {
                        Some(D(j, s)) if j == i => s.push_str(&text),
                        _ => out.push(D(*i, text)),
                    }
                }
                Ev::Gap(c, d, n) if c.0 == conn && *d == dir => out.push(Gap(*n)),
                _ => {}
            }
        }
        out
    }

    fn writes(&self, conn: u32, dir: Dir) -> Vec<(u64, u32)> {
        self.0
            .iter()
            .filter_map(|e| match e {
                Ev::Write(c, d, w) if c.0 == conn && *d == dir => Some((w.index, w.len)),
                _ => None,
            })
            .collect()
    }

    fn closes(&self) -> Vec<(u32, CloseKind)> {
        self.0
            .iter()
            .filter_map(|e| match e {
                Ev::Close(c, k) => Some((c.0, *k)),
                _ => None,
            })
            .collect()
    }

    fn opens(&self) -> Vec<ConnMeta> {
        self.0
            .iter()
            .filter_map(|e| match e {
                Ev::Open(m) => Some(m.clone()),
                _ => None,
            })
            .collect()
    }
}

/// A segment from `src` to `dst`. `flags`: any of `S` (SYN), `F` (FIN), `R` (RST).
fn seg<'a>(
    src: &str,
    dst: &str,
    seq: u32,
    ack: Option<u32>,
    flags: &str,
    p: &'a [u8],
) -> TcpSegment<'a> {
    TcpSegment {
        src: src.parse().unwrap(),
        dst: dst.parse().unwrap(),
        seq,
        ack: ack.unwrap_or(0),
        flags: TcpFlags {
            syn: flags.contains('S'),
            fin: flags.contains('F'),
            rst: flags.contains('R'),
            ack: ack.is_some(),
            psh: !p.is_empty(),
        },
        window: 65535,
        payload: p,
        wire_payload_len: p.len() as u32,
    }
}

struct T {
    r: Reassembler,
    sink: Rec,
    ts: Nanos,
}

impl T {
    fn new() -> T {
        T::with(Config::default())
    }
    fn with(cfg: Config) -> T {
        T {
            r: Reassembler::new(cfg),
            sink: Rec::default(),
            ts: 0,
        }
    }
    fn push(&mut self, s: TcpSegment<'_>) {
        self.ts += 1;
        self.r.push(self.ts, &s, &mut self.sink);
    }
    /// Client data at `seq`.
    fn c(&mut self, seq: u32, p: &[u8]) {
        self.push(seg(C, S, seq, Some(500), "", p));
    }
    /// Handshake: client ISN 100 (data from 101), server ISN 500 (data from 501).
    fn handshake(&mut self) {
        self.push(seg(C, S, 100, None, "S", b""));
        self.push(seg(S, C, 500, Some(101), "S", b""));
        self.push(seg(C, S, 101, Some(501), "", b""));
    }
    fn finish(&mut self) {
        self.ts += 1;
        self.r.finish(self.ts, &mut self.sink);
    }
}

#[test]
fn in_order_handshake_and_data() {
    let mut t = T::new();
    t.handshake();
    t.c(101, b"hello");
    t.c(106, b"world");
    t.push(seg(S, C, 501, Some(111), "", b"resp"));
    t.push(seg(C, S, 111, Some(505), "", b"")); // pure ACK: not a write
    t.finish();
    let m = &t.sink.opens()[0];
    assert_eq!(
        (m.id, m.syn_sender, m.start),
        (ConnId(0), Some(Dir::Fwd), 1)
    );
    assert_eq!(m.first_src, C.parse().unwrap());
    assert_eq!(
        t.sink.stream(0, Dir::Fwd),
        [D(0, "hello".into()), D(1, "world".into())]
    );
    assert_eq!(t.sink.stream(0, Dir::Rev), [D(0, "resp".into())]);
    assert_eq!(t.sink.writes(0, Dir::Fwd), [(0, 5), (1, 5)]);
    assert_eq!(t.sink.closes(), [(0, CloseKind::EndOfCapture)]);
    let st = t.r.stats();
    assert_eq!(
        (st.packets, st.tcp_segments, st.retransmissions, st.gaps),
        (7, 3, 0, 0)
    );
}

#[test]
fn out_of_order_is_buffered_and_keeps_its_write() {
    let mut t = T::new();
    t.handshake();
    t.c(101, b"aaa");
    t.c(107, b"ccc");
    t.c(104, b"bbb");
    t.finish();
    assert_eq!(t.sink.writes(0, Dir::Fwd), [(0, 3), (1, 3), (2, 3)]);
    assert_eq!(
        t.sink.stream(0, Dir::Fwd),
        [D(0, "aaa".into()), D(2, "bbb".into()), D(1, "ccc".into())]
    );
    // write 1 was reported when seen, before write 2.
    let pos = |e: &Ev| t.sink.0.iter().position(|x| x == e).unwrap();
    let w1 = Ev::Write(
        ConnId(0),
        Dir::Fwd,
        Write {
            index: 1,
            ts: 5,
            len: 3,
        },
    );
    let w2 = Ev::Write(
        ConnId(0),
        Dir::Fwd,
        Write {
            index: 2,
            ts: 6,
            len: 3,
        },
    );
    assert!(pos(&w1) < pos(&w2));
    assert_eq!(t.r.stats().out_of_order, 1);
}

#[test]
fn duplicates_are_retransmissions_not_writes() {
    let mut t = T::new();
    t.handshake();
    t.c(101, b"aaa");
    t.c(101, b"aaa");
    t.c(110, b"zzz"); // buffered
    t.c(110, b"zzz"); // duplicate of buffered bytes
    t.c(104, b"bbbbbb");
    t.finish();
    assert_eq!(t.sink.writes(0, Dir::Fwd), [(0, 3), (1, 3), (2, 6)]);
    assert_eq!(
        t.sink.stream(0, Dir::Fwd),
        [
            D(0, "aaa".into()),
            D(2, "bbbbbb".into()),
            D(1, "zzz".into())
        ]
    );
    assert_eq!(t.r.stats().retransmissions, 2);
}

#[test]
fn partial_overlap_delivers_only_new_bytes_first_seen_wins() {
    let mut t = T::new();
    t.handshake();
    t.c(101, b"aaa"); // 101..104
    t.c(102, b"XXbb"); // 102..106: two old bytes, two new
    t.c(110, b"ddd"); // 110..113, buffered
    t.c(106, b"ccccZZZee"); // 106..115: 4 new, 3 over the buffer, 2 new
    t.finish();
    assert_eq!(t.sink.writes(0, Dir::Fwd), [(0, 3), (1, 2), (2, 3), (3, 6)]);
    assert_eq!(
        t.sink.stream(0, Dir::Fwd),
        [
            D(0, "aaa".into()),
            D(1, "bb".into()),
            D(3, "cccc".into()),
            D(2, "ddd".into()),
            D(3, "ee".into())
        ]
    );
    let st = t.r.stats();
    assert_eq!((st.overlaps, st.retransmissions, st.gaps), (2, 0, 0));
}

#[test]
fn sequence_wrap_around() {
    let isn = u32::MAX - 2;
    let mut t = T::new();
    t.push(seg(C, S, isn, None, "S", b""));
    t.push(seg(S, C, 7, Some(isn.wrapping_add(1)), "S", b""));
    t.c(u32::MAX - 1, b"abcd"); // MAX-1, MAX, 0, 1
    t.c(6, b"ijkl"); // buffered across the wrap
    t.c(2, b"efgh");
    t.c(u32::MAX, b"bcdefg"); // retransmission straddling the wrap
    t.push(seg(C, S, 10, Some(8), "F", b"mn"));
    t.push(seg(S, C, 8, Some(13), "F", b""));
    assert_eq!(
        t.sink.stream(0, Dir::Fwd),
        [
            D(0, "abcd".into()),
            D(2, "efgh".into()),
            D(1, "ijkl".into()),
            D(3, "mn".into())
        ]
    );
    assert_eq!(t.sink.closes(), [(0, CloseKind::Fin(Dir::Fwd))]);
    let st = t.r.stats();
    assert_eq!((st.retransmissions, st.gaps, st.out_of_order), (1, 0, 1));
}

#[test]
fn snaplen_cut_tail_is_a_gap_in_order() {
    let mut t = T::new();
    t.handshake();
    // Bytes after the cut arrive first (buffered), then the cut segment.
    t.c(111, b"xyz");
    let mut cut = seg(C, S, 101, Some(501), "", b"abc");
    cut.wire_payload_len = 10;
    t.push(cut);
    t.c(114, b"!");
    t.finish();
    assert_eq!(t.sink.writes(0, Dir::Fwd), [(0, 3), (1, 10), (2, 1)]);
    assert_eq!(
        t.sink.stream(0, Dir::Fwd),
        [
            D(1, "abc".into()),
            Gap(7),
            D(0, "xyz".into()),
            D(2, "!".into())
        ]
    );
    let st = t.r.stats();
    assert_eq!((st.truncated, st.gaps, st.gap_bytes), (1, 1, 7));

    // The same, in order: gap right away, later bytes continue after it.
    let mut t = T::new();
    t.handshake();
    let mut cut = seg(C, S, 101, Some(501), "", b"abc");
    cut.wire_payload_len = 10;
    t.push(cut);
    assert_eq!(t.sink.stream(0, Dir::Fwd), [D(0, "abc".into()), Gap(7)]);
    t.c(111, b"xyz");
    assert_eq!(
        t.sink.stream(0, Dir::Fwd),
        [D(0, "abc".into()), Gap(7), D(1, "xyz".into())]
    );
    assert_eq!(t.r.stats().out_of_order, 0);
}

#[test]
fn capture_starting_mid_connection() {
    let mut t = T::new();
    t.push(seg(S, C, 5000, Some(9000), "", b"resp"));
    t.push(seg(C, S, 9000, Some(5004), "", b"req"));
    t.push(seg(S, C, 5004, Some(9003), "", b"!"));
    t.finish();
    let m = &t.sink.opens()[0];
    assert_eq!(m.first_src, S.parse().unwrap());
    assert_eq!(m.syn_sender, None);
    assert_eq!(
        t.sink.stream(0, Dir::Fwd),
        [D(0, "resp".into()), D(1, "!".into())]
    );
    assert_eq!(t.sink.stream(0, Dir::Rev), [D(0, "req".into())]);
    assert_eq!(t.r.stats().gaps, 0);
}

#[test]
fn syn_sender_from_syn_ack_only() {
    let mut t = T::new();
    t.push(seg(S, C, 500, Some(101), "S", b""));
    t.c(101, b"hi");
    t.push(seg(S, C, 501, Some(103), "", b"yo"));
    t.finish();
    let m = &t.sink.opens()[0];
    assert_eq!(m.first_src, S.parse().unwrap());
    assert_eq!(m.syn_sender, Some(Dir::Rev));
    assert_eq!(t.sink.stream(0, Dir::Rev), [D(0, "hi".into())]);
    assert_eq!(t.sink.stream(0, Dir::Fwd), [D(0, "yo".into())]);
}

#[test]
fn syn_sender_learned_after_open_is_in_meta() {
    let mut t = T::new();
    t.push(seg(S, C, 500, Some(101), "", b"")); // an ACK first
    t.push(seg(C, S, 100, None, "S", b"")); // then a (late) SYN
    assert_eq!(t.sink.opens()[0].syn_sender, None);
    assert_eq!(t.r.meta(ConnId(0)).unwrap().syn_sender, Some(Dir::Rev));
}

#[test]
fn ack_beyond_a_hole_proves_it_lost() {
    let mut t = T::new();
    t.handshake();
    t.c(101, b"aaa");
    t.c(107, b"ccc"); // hole 104..107
    t.c(113, b"eee"); // hole 110..113
    assert_eq!(t.sink.stream(0, Dir::Fwd), [D(0, "aaa".into())]);
    t.push(seg(S, C, 501, Some(105), "", b"")); // covers 104 only
    assert_eq!(t.sink.stream(0, Dir::Fwd), [D(0, "aaa".into()), Gap(1)]);
    t.push(seg(S, C, 501, Some(116), "", b"")); // covers everything
    assert_eq!(
        t.sink.stream(0, Dir::Fwd),
        [
            D(0, "aaa".into()),
            Gap(1),
            Gap(2),
            D(1, "ccc".into()),
            Gap(3),
            D(2, "eee".into())
        ]
    );
    t.finish();
    assert_eq!(t.r.stats().gap_bytes, 6);
}

#[test]
fn acked_but_unseen_bytes_become_a_gap_when_later_data_arrives() {
    let mut t = T::new();
    t.handshake();
    t.c(101, b"aaa");
    t.push(seg(S, C, 501, Some(110), "", b"")); // 104..110 never seen
    assert_eq!(t.sink.stream(0, Dir::Fwd), [D(0, "aaa".into())]);
    t.c(110, b"zzz");
    assert_eq!(
        t.sink.stream(0, Dir::Fwd),
        [D(0, "aaa".into()), Gap(6), D(1, "zzz".into())]
    );
    assert_eq!(t.r.stats().out_of_order, 0);
}

#[test]
fn buffer_bound_forces_a_gap() {
    let cfg = Config {
        max_buffered_per_dir: 200,
        ..Config::default()
    };
    let mut t = T::with(cfg);
    t.handshake();
    t.c(101, b"aaa");
    let hundred = [b'x'; 100];
    t.c(110, &hundred); // cost 164: fits
    assert_eq!(t.r.stats().bound_hits, 0);
    t.c(300, &[b'y'; 100]); // 328 > 200: the first hole goes
    assert_eq!(t.r.stats().bound_hits, 1);
    let x100: String = "x".repeat(100);
    assert_eq!(
        t.sink.stream(0, Dir::Fwd),
        [D(0, "aaa".into()), Gap(6), D(1, x100.clone())]
    );
    t.finish();
    assert_eq!(
        t.sink.stream(0, Dir::Fwd),
        [
            D(0, "aaa".into()),
            Gap(6),
            D(1, x100),
            Gap(90),
            D(2, "y".repeat(100))
        ]
    );
}

#[test]
fn hole_bound_forces_a_gap() {
    let cfg = Config {
        max_holes_per_dir: 1,
        ..Config::default()
    };
    let mut t = T::with(cfg);
    t.handshake();
    t.c(103, b"b");
    t.c(105, b"d"); // two holes: 101..103, 104..105
    assert_eq!(t.r.stats().bound_hits, 1);
    assert_eq!(t.sink.stream(0, Dir::Fwd), [Gap(2), D(0, "b".into())]);
    t.c(104, b"c");
    assert_eq!(
        t.sink.stream(0, Dir::Fwd),
        [Gap(2), D(0, "b".into()), D(2, "c".into()), D(1, "d".into())]
    );
}

#[test]
fn fin_both_ways_closes_after_flushing_holes() {
    let mut t = T::new();
    t.handshake();
    t.c(101, b"aaa");
    t.c(107, b"ccc"); // hole 104..107
    t.push(seg(C, S, 110, Some(501), "F", b"")); // FIN beyond the hole
    t.push(seg(S, C, 501, Some(104), "F", b"ok")); // server data + FIN; ACK does not cover the hole
    assert_eq!(t.sink.closes(), [(0, CloseKind::Fin(Dir::Fwd))]);
    assert_eq!(
        t.sink.stream(0, Dir::Fwd),
        [D(0, "aaa".into()), Gap(3), D(1, "ccc".into())]
    );
    assert_eq!(t.sink.stream(0, Dir::Rev), [D(0, "ok".into())]);
    // Close comes after all data.
    assert!(matches!(t.sink.0.last(), Some(Ev::Close(..))));
    // Late final ACK and a retransmission: no new connection, nothing reported.
    let n = t.sink.0.len();
    t.push(seg(C, S, 111, Some(504), "", b""));
    t.c(101, b"aaa");
    t.finish();
    assert_eq!(t.sink.0.len(), n);
    assert_eq!(t.r.stats().retransmissions, 1);
}

#[test]
fn fin_proves_missing_tail() {
    let mut t = T::new();
    t.handshake();
    t.c(101, b"aaa");
    t.push(seg(C, S, 110, Some(501), "F", b"")); // 104..110 never seen
    t.push(seg(C, S, 111, Some(501), "", b"junk after FIN"));
    t.push(seg(S, C, 501, Some(111), "F", b""));
    assert_eq!(t.sink.stream(0, Dir::Fwd), [D(0, "aaa".into()), Gap(6)]);
    assert_eq!(t.sink.writes(0, Dir::Fwd), [(0, 3)]);
}

#[test]
fn rst_flushes_the_resetting_side_and_later_data_of_that_side_is_ignored() {
    let mut t = T::new();
    t.handshake();
    t.c(101, b"aaa");
    t.c(107, b"ccc");
    t.push(seg(C, S, 110, None, "R", b""));
    let rst_at = t.ts;
    // The resetting side's hole is declared lost at once.
    assert_eq!(
        t.sink.stream(0, Dir::Fwd),
        [D(0, "aaa".into()), Gap(3), D(1, "ccc".into())]
    );
    let n = t.sink.0.len();
    t.c(110, b"late");
    // A RST on a 4-tuple never seen opens nothing.
    t.push(seg("10.0.0.9:1", S, 1, None, "R", b""));
    t.finish();
    assert_eq!(t.sink.0[..n].len(), n);
    assert_eq!(t.sink.writes(0, Dir::Fwd).len(), 2);
    // Closed once, as reset by the client, at the RST's time.
    assert_eq!(t.sink.closes(), [(0, CloseKind::Rst(Dir::Fwd))]);
    assert_eq!(t.sink.1, [rst_at]);
    let st = t.r.stats();
    assert_eq!((st.data_after_rst, st.data_after_rst_ignored), (1, 1));
}

/// What the other side wrote before the RST reached it is on the wire after the RST
/// (Firefox's RST, then facebook's GOAWAY and close_notify): its writes.
#[test]
fn bytes_in_flight_from_the_other_side_after_a_rst_are_delivered() {
    let mut t = T::new();
    t.handshake();
    t.c(101, b"req");
    t.push(seg(C, S, 104, None, "R", b""));
    let rst_at = t.ts;
    assert_eq!(t.sink.closes(), []);
    t.push(seg(S, C, 501, Some(104), "", b"goaway"));
    t.push(seg(S, C, 513, Some(104), "", b"alert")); // after a hole of 6
    t.push(seg(S, C, 518, Some(104), "R", b""));
    // The server's RST ends it: its hole is lost, then the close at the first RST's time.
    assert_eq!(
        t.sink.stream(0, Dir::Rev),
        [D(0, "goaway".into()), Gap(6), D(1, "alert".into())]
    );
    assert_eq!(t.sink.writes(0, Dir::Rev), [(0, 6), (1, 5)]);
    assert_eq!(t.sink.closes(), [(0, CloseKind::Rst(Dir::Fwd))]);
    assert_eq!(t.sink.1, [rst_at]);
    // Later data: closed, ignored.
    t.push(seg(S, C, 523, Some(104), "", b"more"));
    t.finish();
    assert_eq!(t.sink.writes(0, Dir::Rev).len(), 2);
    let st = t.r.stats();
    assert_eq!((st.data_after_rst, st.data_after_rst_ignored), (3, 1));
}

#[test]
fn a_fin_from_the_other_side_ends_a_reset_connection() {
    let mut t = T::new();
    t.handshake();
    t.push(seg(S, C, 501, Some(101), "R", b""));
    t.push(seg(C, S, 101, Some(501), "F", b"bye"));
    assert_eq!(t.sink.stream(0, Dir::Fwd), [D(0, "bye".into())]);
    assert_eq!(t.sink.closes(), [(0, CloseKind::Rst(Dir::Rev))]);
}

#[test]
fn a_reset_connection_closes_when_the_grace_is_over() {
    let mut t = T::new();
    t.handshake();
    t.push(seg(C, S, 101, None, "R", b""));
    let rst_at = t.ts;
    // Time passes on another connection: nothing before the grace, the close after it.
    t.ts += RST_GRACE_NS - 1;
    t.push(seg("10.0.0.3:1", S, 1, None, "S", b""));
    assert_eq!(t.sink.closes(), []);
    t.ts += 1;
    t.push(seg("10.0.0.3:1", S, 2, Some(1), "", b"x"));
    assert_eq!(t.sink.closes(), [(0, CloseKind::Rst(Dir::Fwd))]);
    assert_eq!(t.sink.1, [rst_at]);
    // The server's bytes now come too late.
    t.push(seg(S, C, 501, Some(101), "", b"late"));
    assert!(t.sink.writes(0, Dir::Rev).is_empty());
    // With no packet at all, advance() closes too (live: the wall clock).
    t.push(seg("10.0.0.4:1", S, 1, None, "S", b""));
    t.push(seg("10.0.0.4:1", S, 2, None, "R", b""));
    let now = t.ts + RST_GRACE_NS + 1;
    t.r.advance(now, &mut t.sink);
    assert_eq!(t.sink.closes().len(), 2);
    // A new SYN on a reset 4-tuple closes the old connection and starts a new one.
    t.push(seg("10.0.0.5:1", S, 1, None, "S", b""));
    t.push(seg("10.0.0.5:1", S, 2, None, "R", b""));
    t.push(seg("10.0.0.5:1", S, 900, None, "S", b""));
    assert_eq!(t.sink.closes()[2], (3, CloseKind::Rst(Dir::Fwd)));
    t.finish();
    // The still open 10.0.0.3 and new 10.0.0.5 close at the end of the capture.
    assert_eq!(t.sink.closes().len(), 5);
    assert_eq!(t.r.stats().data_after_rst_ignored, 1);
}

#[test]
fn reused_four_tuple_is_a_new_connection() {
    let mut t = T::new();
    t.handshake();
    t.c(101, b"one");
    t.push(seg(C, S, 104, Some(501), "F", b""));
    t.push(seg(S, C, 501, Some(105), "F", b""));
    // Same 4-tuple, new SYN.
    t.push(seg(C, S, 7000, None, "S", b""));
    t.push(seg(C, S, 7000, None, "S", b"")); // retransmitted SYN: same connection
    t.push(seg(S, C, 9000, Some(7001), "S", b""));
    t.push(seg(C, S, 7001, Some(9001), "", b"two"));
    // And a SYN with another ISN while still open: the old one is superseded.
    t.push(seg(C, S, 12345, None, "S", b""));
    t.push(seg(C, S, 12346, None, "", b"three"));
    t.finish();
    let ids: Vec<_> = t.sink.opens().iter().map(|m| m.id.0).collect();
    assert_eq!(ids, [0, 1, 2]);
    assert_eq!(t.sink.stream(0, Dir::Fwd), [D(0, "one".into())]);
    assert_eq!(t.sink.stream(1, Dir::Fwd), [D(0, "two".into())]);
    assert_eq!(t.sink.stream(2, Dir::Fwd), [D(0, "three".into())]);
    assert_eq!(
        t.sink.closes(),
        [
            (0, CloseKind::Fin(Dir::Fwd)),
            (1, CloseKind::Superseded),
            (2, CloseKind::EndOfCapture)
        ]
    );
}

#[test]
fn lru_eviction_flushes_first() {
    let cfg = Config {
        max_connections: 2,
        ..Config::default()
    };
    let mut t = T::with(cfg);
    let (a, b, c) = ("10.0.0.1:1", "10.0.0.1:2", "10.0.0.1:3");
    t.push(seg(a, S, 1, None, "", b"a"));
    t.push(seg(a, S, 3, None, "", b"A")); // buffered
    t.push(seg(b, S, 1, None, "", b"b"));
    t.push(seg(a, S, 4, None, "", b"!")); // a is now the most recent
    t.push(seg(c, S, 1, None, "", b"c")); // evicts b
    t.push(seg(a, S, 10, None, "", b"z"));
    t.push(seg(b, S, 2, None, "", b"B")); // b again: a new connection, evicts c
    t.finish();
    // b's new id says it continues the evicted b (the ledger counts it once).
    let resumes: Vec<_> = t.sink.opens().iter().map(|m| m.resumes).collect();
    assert_eq!(resumes, [None, None, None, Some(ConnId(1))]);
    assert_eq!(t.r.stats().resumed, 1);
    assert_eq!(
        t.sink.closes(),
        [
            (1, CloseKind::Evicted),
            (2, CloseKind::Evicted),
            (0, CloseKind::EndOfCapture),
            (3, CloseKind::EndOfCapture)
        ]
    );
    assert_eq!(
        t.sink.stream(0, Dir::Fwd),
        [
            D(0, "a".into()),
            Gap(1),
            D(1, "A".into()),
            D(2, "!".into()),
            Gap(5),
            D(3, "z".into())
        ]
    );
    // b goes on where it stopped: the next byte in order, its write index after b's first.
    assert_eq!(t.sink.stream(3, Dir::Fwd), [D(1, "B".into())]);
    assert_eq!(t.r.stats().evicted, 2);
}

/// A connection evicted and back keeps its orientation, even when the other side speaks first
/// on its return, and each direction goes on at the sequence number where it stopped: bytes
/// in order continue the stream, a jump is a gap of exactly the missed length.
#[test]
fn resumed_connection_continues_each_direction() {
    let cfg = Config {
        max_connections: 1,
        ..Config::default()
    };
    let mut t = T::with(cfg);
    let (a, b) = ("10.0.0.1:1", "10.0.0.1:2");
    t.push(seg(a, S, 100, None, "S", b""));
    t.push(seg(S, a, 500, Some(101), "S", b""));
    t.push(seg(a, S, 101, Some(501), "", b"req"));
    t.push(seg(b, S, 1, None, "", b"x")); // evicts a
    t.push(seg(S, a, 501, Some(104), "", b"resp")); // a back, server first: evicts b
    t.push(seg(a, S, 110, Some(505), "", b"more")); // 6 bytes missed while evicted
    t.finish();
    let opens = t.sink.opens();
    assert_eq!(opens[2].resumes, Some(ConnId(0)));
    assert_eq!(opens[2].first_src, opens[0].first_src);
    assert_eq!(opens[2].syn_sender, Some(Dir::Fwd));
    assert_eq!(t.sink.stream(2, Dir::Rev), [D(0, "resp".into())]);
    assert_eq!(t.sink.stream(2, Dir::Fwd), [Gap(6), D(1, "more".into())]);
}

#[test]
fn finish_closes_in_conn_id_order() {
    let mut t = T::new();
    for port in [5, 6, 7] {
        t.push(seg(&format!("10.0.0.1:{port}"), S, 1, None, "", b"x"));
    }
    t.push(seg("10.0.0.1:5", S, 2, None, "", b"y"));
    t.finish();
    let order: Vec<_> = t.sink.closes().iter().map(|c| c.0).collect();
    assert_eq!(order, [0, 1, 2]);
}

#[test]
fn zero_length_segments_are_not_writes() {
    let mut t = T::new();
    t.handshake();
    t.push(seg(C, S, 101, Some(501), "", b""));
    t.push(seg(S, C, 501, Some(101), "", b""));
    t.c(101, b"x");
    t.push(seg(C, S, 102, Some(501), "", b""));
    t.c(102, b"y");
    assert_eq!(t.sink.writes(0, Dir::Fwd), [(0, 1), (1, 1)]);
    assert!(t.sink.writes(0, Dir::Rev).is_empty());
}

/// xorshift64*: deterministic, dependency-free randomness for the shuffle tests.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Replays the events of one direction against the original stream: every delivered
/// byte must be the stream byte at its offset (gaps skip offsets), and each write's
/// bytes must not exceed its `len`. Returns (offset reached, gap bytes).
fn replay(rec: &Rec, stream: &[u8]) -> (usize, u64) {
    let mut at = 0usize;
    let mut gap_bytes = 0;
    let mut per_write: HashMap<u64, (u32, u64)> = HashMap::new();
    for e in &rec.0 {
        match e {
            Ev::Write(_, Dir::Fwd, w) => {
                per_write.insert(w.index, (w.len, 0));
            }
            Ev::Data(_, Dir::Fwd, i, b) => {
                assert_eq!(
                    &stream[at..at + b.len()],
                    &b[..],
                    "wrong bytes at offset {at}"
                );
                at += b.len();
                let w = per_write.get_mut(i).unwrap();
                w.1 += b.len() as u64;
                assert!(w.1 <= u64::from(w.0));
            }
            Ev::Gap(_, Dir::Fwd, n) => {
                at += *n as usize;
                gap_bytes += n;
            }
            _ => {}
        }
    }
    (at, gap_bytes)
}

/// A 3000-byte stream cut into random segments, each sent once or twice (re-cut, so
/// retransmissions overlap partially), shuffled within a window, ISN near the wrap.
fn shuffled_run(seed: u64, drop_one_in: u64, cfg: Config) -> (Rec, Vec<u8>, Stats) {
    let mut rng = Rng(seed);
    let stream: Vec<u8> = (0..3000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let isn = (u32::MAX - 1000).wrapping_add(rng.below(2000) as u32);
    let mut segs: Vec<(usize, usize)> = Vec::new();
    for round in 0..2 {
        let mut at = 0;
        while at < stream.len() {
            let len = 1 + rng.below(200) as usize;
            let end = (at + len).min(stream.len());
            if round == 0 || rng.below(3) == 0 {
                segs.push((at, end));
            }
            at = end;
        }
    }
    // Local reordering: swap each segment with one at most 8 places later.
    for i in 0..segs.len() {
        let j = (i + rng.below(8) as usize).min(segs.len() - 1);
        segs.swap(i, j);
    }
    let mut t = T::with(cfg);
    t.push(seg(C, S, isn, None, "S", b""));
    for (a, b) in segs {
        if drop_one_in > 0 && rng.below(drop_one_in) == 0 {
            continue;
        }
        let s = isn.wrapping_add(1).wrapping_add(a as u32);
        t.push(seg(C, S, s, Some(1), "", &stream[a..b]));
    }
    t.push(seg(
        C,
        S,
        isn.wrapping_add(1 + stream.len() as u32),
        Some(1),
        "F",
        b"",
    ));
    t.finish();
    let stats = t.r.stats();
    (t.sink, stream, stats)
}

#[test]
fn shuffled_retransmitted_stream_is_delivered_exactly() {
    for seed in 1..40 {
        let (rec, stream, st) = shuffled_run(seed, 0, Config::default());
        assert_eq!(replay(&rec, &stream), (stream.len(), 0), "seed {seed}");
        let total: u64 = rec.writes(0, Dir::Fwd).iter().map(|w| u64::from(w.1)).sum();
        assert_eq!(total, stream.len() as u64, "seed {seed}");
        assert_eq!(st.gaps, 0);
    }
}

#[test]
fn shuffled_lossy_stream_delivers_right_bytes_at_right_offsets() {
    let tight = Config {
        max_buffered_per_dir: 600,
        max_holes_per_dir: 2,
        max_connections: 1,
        max_evicted: 2,
    };
    let (mut gaps, mut bound_hits) = (0, 0);
    for cfg in [Config::default(), tight] {
        for seed in 1..40 {
            let (rec, stream, st) = shuffled_run(seed, 4, cfg.clone());
            let (reached, gap_bytes) = replay(&rec, &stream);
            // The FIN proves the tail, so the whole stream is accounted for.
            assert_eq!(reached, stream.len(), "seed {seed}");
            assert_eq!(gap_bytes, st.gap_bytes);
            gaps += st.gaps;
            bound_hits += st.bound_hits;
        }
    }
    assert!(
        gaps > 0 && bound_hits > 0,
        "the runs must lose data and hit bounds"
    );
}

/// The evicted connections remembered are capped: the oldest is forgotten and counted, and
/// its return is a new connection; a younger one still resumes.
#[test]
fn evicted_memory_is_capped_and_counted() {
    let cfg = Config {
        max_connections: 1,
        max_evicted: 2,
        ..Config::default()
    };
    let mut t = T::with(cfg);
    let (a, b, c, d) = ("10.0.0.1:1", "10.0.0.1:2", "10.0.0.1:3", "10.0.0.1:4");
    t.push(seg(a, S, 1, None, "", b"a"));
    t.push(seg(b, S, 1, None, "", b"b")); // evicts a
    t.push(seg(c, S, 1, None, "", b"c")); // evicts b
    t.push(seg(d, S, 1, None, "", b"d")); // evicts c: a is forgotten
    assert_eq!(t.r.stats().evicted_forgotten, 1);
    t.push(seg(a, S, 2, None, "", b"A")); // a again: new (evicts d, forgets b)
    t.push(seg(c, S, 2, None, "", b"C")); // c again: resumes
    t.finish();
    let resumes: Vec<_> = t.sink.opens().iter().map(|m| m.resumes).collect();
    assert_eq!(
        resumes,
        [None, None, None, None, None, Some(ConnId(2))],
        "a is new, c resumes"
    );
    let st = t.r.stats();
    assert_eq!((st.evicted, st.resumed, st.evicted_forgotten), (5, 1, 2));
}

/// What is kept of each evicted connection (up to `max_evicted` of them) stays 32 bytes, and
/// gives back what went in.
#[test]
fn an_evicted_connection_is_32_bytes_and_comes_back_whole() {
    assert_eq!(std::mem::size_of::<Evicted>(), 32);
    let p = |s: u32, isn: Option<u32>, i: u32| {
        let mut h = Half::default();
        h.resume(half::ResumePoint::from_words(
            [s, isn.unwrap_or(0), i],
            isn.is_some(),
        ));
        h.resume_point()
    };
    for fwd_is_first in [false, true] {
        for syn in [None, Some(Dir::Fwd), Some(Dir::Rev)] {
            for halves in [
                [None, None],
                [p(1, None, 2), None],
                [None, p(u32::MAX, Some(0), u32::MAX)],
                [p(7, Some(u32::MAX), 0), p(0, Some(5), 9)],
            ] {
                let e = Evicted::new(ConnId(3), fwd_is_first, syn, halves);
                assert_eq!(e.id, ConnId(3));
                assert_eq!(e.fwd_is_first(), fwd_is_first);
                assert_eq!(e.syn_sender(), syn);
                for (d, h) in halves.iter().enumerate() {
                    let want = h.map(|h| h.to_words());
                    assert_eq!(e.half(d).map(|h| h.to_words()), want);
                }
            }
        }
    }
}

#[test]
fn an_eviction_order_entry_is_12_bytes_and_gives_back_what_went_in() {
    assert_eq!(std::mem::size_of::<Ordered>(), 12);
    for (fp, id) in [
        (0, 0),
        (u64::MAX, u32::MAX),
        (0x1234_5678_9abc_def0, 7),
        (1 << 32, 1),
    ] {
        assert_eq!(Ordered::new(fp, ConnId(id)).get(), (fp, ConnId(id)));
    }
}

/// A keep-alive (one old byte, the one before the highest seen: tshark's
/// `tcp.analysis.keep_alive`) is a write of 1 byte whose byte is not delivered again; a
/// 0-byte one is nothing; the same byte anywhere else is a retransmission (decision 467).
#[test]
fn one_byte_keepalive_is_a_write_not_data() {
    let mut t = T::new();
    t.handshake();
    t.c(101, b"hello");
    t.c(105, b"X"); // keep-alive: seq one below the next, 1 byte
    t.c(105, b""); // Linux keep-alive: 0 bytes
    t.c(103, b"Y"); // an old byte elsewhere: a retransmission
    t.c(106, b"world");
    t.finish();
    assert_eq!(t.sink.writes(0, Dir::Fwd), [(0, 5), (1, 1), (2, 5)]);
    assert_eq!(
        t.sink.stream(0, Dir::Fwd),
        [D(0, "hello".into()), D(2, "world".into())]
    );
    assert_eq!(t.r.stats().retransmissions, 1);
}

/// The payload of a RST is not stream data, but it is a write (tshark counts it: it is not a
/// retransmission to it) unless its bytes are old (decision 468).
#[test]
fn payload_on_a_rst_is_a_write_without_data() {
    let mut t = T::new();
    t.handshake();
    t.push(seg(S, C, 501, Some(101), "", b"resp"));
    t.push(seg(S, C, 505, Some(101), "R", b"diagnostic"));
    t.finish();
    assert_eq!(t.sink.writes(0, Dir::Rev), [(0, 4), (1, 10)]);
    assert_eq!(t.sink.stream(0, Dir::Rev), [D(0, "resp".into())]);
    let mut t = T::new();
    t.handshake();
    t.push(seg(S, C, 501, Some(101), "", b"resp"));
    t.push(seg(S, C, 501, Some(101), "R", b"old!"));
    t.finish();
    assert_eq!(t.sink.writes(0, Dir::Rev), [(0, 4)], "old bytes on the RST");
}

/// Bytes buffered at or after the FIN are not part of the stream: at the close they are
/// dropped, not delivered after a gap; bytes before the FIN still are (decision 468).
#[test]
fn bytes_beyond_the_fin_are_dropped_at_the_close() {
    let mut t = T::new();
    t.handshake();
    t.c(101, b"hello");
    t.c(3_000_101, b"far away"); // out of any window, never filled
    t.c(110, b"late"); // a hole of 3 bytes before it
    t.push(seg(C, S, 114, Some(501), "F", b""));
    t.push(seg(S, C, 501, Some(115), "F", b""));
    assert_eq!(
        t.sink.stream(0, Dir::Fwd),
        [D(0, "hello".into()), Gap(4), D(2, "late".into())]
    );
    assert_eq!(t.sink.closes(), [(0, CloseKind::Fin(Dir::Fwd))]);
}
