//! The gRPC tracker's tests: the cutter on byte vectors, calls through the ledger, sizes.

mod unit {
    use crate::grpc::*;

    fn msg(flag: u8, body: &[u8]) -> Vec<u8> {
        let mut v = vec![flag];
        v.extend_from_slice(&(body.len() as u32).to_be_bytes());
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn cutter_any_split() {
        let mut all = msg(0, b"hello");
        all.extend(msg(1, &[7; 300]));
        all.extend(msg(0, b""));
        all.extend(msg(0, b"x"));
        for chunk in 1..all.len() {
            let mut c = Cutter::default();
            let mut got = Vec::new();
            for part in all.chunks(chunk) {
                c.feed(part, |n, z| got.push((n, z)));
            }
            assert_eq!(
                got,
                vec![(5, false), (300, true), (0, false), (1, false)],
                "{chunk}"
            );
            assert!(!c.end());
        }
    }

    #[test]
    fn cutter_partial_and_loss() {
        let mut c = Cutter::default();
        let mut got = 0;
        c.feed(&msg(0, b"hello")[..7], |_, _| got += 1);
        assert_eq!(got, 0);
        assert!(c.end(), "a message in progress at the end is incomplete");
        let mut c = Cutter::default();
        c.feed(&[0, 0], |_, _| got += 1);
        assert!(c.lose());
        assert!(!c.lose(), "one loss counts once");
        c.feed(&msg(0, b"a"), |_, _| got += 1);
        assert_eq!(got, 0, "nothing is cut after a loss");
        assert!(!c.end());
    }

    #[test]
    fn percent() {
        assert_eq!(percent_decode(b"a%20b%zz%4"), b"a b%zz%4");
        assert_eq!(percent_decode(b"%E2%9C%93"), "✓".as_bytes());
    }
}

mod ledger {
    use crate::grpc::*;
    use crate::testkit::*;

    fn grpc_msg(flag: u8, n: usize) -> Vec<u8> {
        let mut v = vec![flag];
        v.extend_from_slice(&(n as u32).to_be_bytes());
        v.extend(std::iter::repeat_n(0xab, n));
        v
    }

    /// The report with every call folded (the input ends here).
    fn report(c: &mut Conn) -> GrpcReport {
        let a = &mut c.ledger.observer;
        a.flush();
        a.grpc.report(None)
    }

    /// `calls` runs the analysis with [`Analysis::calls_only`]: each call's record (times,
    /// frames, writes, BDP round, stalls, gRPC) must be the one the full analysis gives.
    #[test]
    fn calls_only_gives_the_same_call_records() {
        use crate::Analysis;
        let run = |an: Analysis| {
            let mut c = Conn::started_with(an, &[(4, 20)]);
            for s in [1u32, 3, 5, 7] {
                c.client(&request(s, "/pkg.S/M", s != 5));
                // Past the 20-byte window: a stall, which the WINDOW_UPDATE below ends.
                c.client(&fr(0, 0, s, &grpc_msg(0, 30)));
                c.client(&fr(0, 1, s, &[]));
                // BDP estimator PING and its ACK, a WINDOW_UPDATE.
                c.server(&fr(6, 0, 0, &[2, 4, 16, 16, 9, 14, 7, 7]));
                c.client(&fr(6, 1, 0, &[2, 4, 16, 16, 9, 14, 7, 7]));
                c.client(&fr(8, 0, 0, &100u32.to_be_bytes()));
                c.server(&fr(8, 0, s, &100u32.to_be_bytes()));
                if s == 7 {
                    c.client(&fr(3, 0, s, &8u32.to_be_bytes()));
                    continue;
                }
                c.server(&response(s, false, &[]));
                c.server(&fr(0, 0, s, &grpc_msg(0, 25)));
                c.server(&trailers(s, &[("grpc-status", "0")]));
            }
            c.client(&request(9, "/pkg.S/Open", true));
            c.close();
            let mut out = Vec::new();
            c.ledger.observer.drain_finished(|v| {
                out.push(format!(
                    "{:?} {} {:?} {:?}",
                    v.rec, v.method, v.flow, v.grpc
                ));
            });
            out
        };
        let full = run(Analysis::new(None).keep_finished());
        assert_eq!(full.len(), 5, "{full:#?}");
        assert!(full[0].contains("stalls: [1, 0]"), "{full:#?}");
        assert_eq!(full, run(Analysis::new(None).calls_only()));
    }

    /// With [`Grpc::no_plain_records`] (decision 464) a call that is not gRPC gets no record,
    /// and the gRPC report is the same: gRPC and plain calls, one plain call reset, one gRPC
    /// call's request ended after its response, one plain call left open.
    #[test]
    fn no_plain_records_keeps_the_report() {
        use crate::Analysis;
        let run = |no_plain: bool| {
            let mut an = Analysis::new(None);
            if no_plain {
                an.grpc.no_plain_records();
            }
            let mut c = Conn::started_with(an, &[]);
            for s in [1u32, 3, 5, 7, 9] {
                let grpc = s % 4 == 1;
                c.client(&request(s, "/pkg.S/M", grpc));
                if s == 7 {
                    c.client(&fr(3, 0, s, &8u32.to_be_bytes()));
                    continue;
                }
                c.client(&fr(0, u8::from(s != 9), s, &grpc_msg(0, 7)));
                c.server(&response(s, false, &[("grpc-encoding", "gzip")]));
                c.server(&fr(0, 0, s, &grpc_msg(0, 25)));
                c.server(&trailers(
                    s,
                    &[("grpc-status", "0"), ("grpc-message", "a%20b")],
                ));
            }
            c.client(&fr(0, 1, 9, &grpc_msg(0, 3)));
            // The streams open to the tracker at each step (decision 466: a plain stream held
            // by its call, or in the table once its call ended first).
            let mut open = vec![c.ledger.observer.grpc.open];
            // Plain stream 13: the server ends it before the client's half.
            c.client(&fr(1, 4, 13, &[0x83, 0x86, 0x04, 1, b'/']));
            c.server(&response(13, true, &[]));
            open.push(c.ledger.observer.grpc.open);
            c.client(&fr(0, 1, 13, &[]));
            open.push(c.ledger.observer.grpc.open);
            // Plain streams 11 and 15 left open, 15 with a response.
            c.client(&request(11, "/pkg.S/Open", false));
            c.client(&fr(1, 4, 15, &[0x83, 0x86, 0x04, 1, b'/']));
            c.server(&response(15, false, &[]));
            open.push(c.ledger.observer.grpc.open);
            // Call 1 (stream 3, plain) ended, not folded yet (that is at the end).
            let plain = c.ledger.observer.grpc_call(1).cloned();
            let r = report(&mut c);
            open.push(c.ledger.observer.grpc.open);
            (r, plain, c.ledger.observer.grpc.untracked_calls, open)
        };
        let (with, plain, untracked, open) = run(false);
        assert_eq!(with.calls, 3, "{with:#?}");
        assert_eq!(with.sides.server.messages, 3, "{with:#?}");
        assert_eq!(open, [0, 1, 0, 2, 0]);
        let plain = plain.expect("a plain call's record");
        assert!(!plain.grpc && plain.server_time_ns >= 0, "{plain:?}");
        let (without, none, untracked_too, open_too) = run(true);
        assert_eq!(without, with);
        assert_eq!(none, None);
        assert_eq!(untracked_too, untracked);
        assert_eq!(open_too, open);
    }

    /// A plain call's record as its call holds its stream (decision 466): server time, the
    /// response's grpc-encoding and grpc-message, the round trip of a PING answered before;
    /// and of a call whose server ends first, so that its stream goes on in the table and
    /// its last frame, the client's END_STREAM, still sets the round trip.
    #[test]
    fn plain_calls_keep_their_records() {
        let mut c = Conn::started(&[]);
        let ms = 1_000_000;
        c.server(&fr(6, 0, 0, &[1; 8]));
        c.client(&fr(6, 1, 0, &[1; 8]));
        let get = |s: u32| fr(1, 4, s, &[0x83, 0x86, 0x04, 1, b'/']);
        c.client(&get(1));
        c.client(&fr(0, 1, 1, &[]));
        c.server(&response(1, false, &[("grpc-encoding", "gzip")]));
        c.server(&trailers(
            1,
            &[("grpc-status", "0"), ("grpc-message", "a%20b")],
        ));
        c.client(&get(3));
        c.server(&response(3, true, &[("grpc-message", "x")]));
        c.client(&fr(0, 1, 3, &[]));
        c.close();
        let mut got = Vec::new();
        c.ledger
            .observer
            .drain_finished(|v| got.push(v.grpc.cloned()));
        let [Some(one), Some(three)] = &got[..] else {
            panic!("{got:#?}");
        };
        assert!(!one.grpc && !three.grpc);
        assert_eq!(
            (
                one.server_time_ns,
                one.ping_rtt_ns,
                one.grpc_message.as_deref()
            ),
            (ms, ms, Some("a b"))
        );
        assert_eq!(one.encoding[1].as_deref(), Some("gzip"));
        assert_eq!(
            (
                three.server_time_ns,
                three.ping_rtt_ns,
                three.grpc_message.as_deref()
            ),
            (-1, ms, Some("x"))
        );
        assert_eq!(c.ledger.observer.grpc.open, 0);
    }

    #[test]
    fn messages_across_frames_writes_and_padding() {
        let mut c = Conn::started(&[]);
        c.client(&request(1, "/pkg.S/M", true));
        // Two messages in one frame, then one split over three frames and two writes, the
        // middle frame padded.
        let mut m = grpc_msg(0, 3);
        m.extend(grpc_msg(1, 10));
        c.client(&fr(0, 0, 1, &m));
        let big = grpc_msg(0, 40_000);
        c.client(&fr(0, 0, 1, &big[..16_000]));
        let mut padded = vec![5];
        padded.extend_from_slice(&big[16_000..30_000]);
        padded.extend([0; 5]);
        let f = fr(0, 0x8, 1, &padded);
        c.client(&f[..100]);
        c.client(&[&f[100..], &fr(0, 1, 1, &big[30_000..])[..]].concat());
        let t_end = c.t;
        c.server(&response(1, false, &[("grpc-encoding", "gzip")]));
        let server_time = c.t - t_end;
        c.server(&fr(0, 0, 1, &grpc_msg(1, 7)));
        c.server(&trailers(
            1,
            &[
                ("grpc-status", "3"),
                ("grpc-message", "bad%20arg"),
                ("grpc-status-details-bin", "CAMSB2JhZCBhcmc"),
            ],
        ));
        let g = c.ledger.observer.grpc_call(0).unwrap().clone();
        assert!(g.grpc);
        assert_eq!(
            g.counts[0],
            Counts {
                messages: 3,
                bytes: 40_013,
                compressed: 1,
                incomplete: 0
            }
        );
        assert_eq!(
            g.counts[1],
            Counts {
                messages: 1,
                bytes: 7,
                compressed: 1,
                incomplete: 0
            }
        );
        assert_eq!(g.grpc_message.as_deref(), Some("bad arg"));
        assert_eq!(g.status_details.as_deref(), Some(&b"CAMSB2JhZCBhcmc"[..]));
        assert_eq!(g.encoding[1].as_deref(), Some("gzip"));
        assert_eq!(g.encoding[0], None);
        assert_eq!(g.server_time_ns, server_time);
        assert!(
            c.ledger.observer.grpc.conns[&0].streams.is_empty(),
            "freed at the end"
        );
        let r = report(&mut c);
        assert_eq!(r.calls, 1);
        assert_eq!(
            (r.sides.client.messages, r.sides.client.message_bytes),
            (3, 40_013)
        );
        assert_eq!(r.sides.client.message_size.max, Some(40_000));
        assert_eq!(r.sides.client.message_size.p50, Some(10));
        assert_eq!(r.methods.len(), 1);
        assert_eq!(r.methods[0].status.get("grpc-status 3"), Some(&1));
        assert_eq!(
            r.methods[0].messages,
            Sides {
                client: 3,
                server: 1
            }
        );
    }

    #[test]
    fn gap_inside_a_message_is_incomplete_not_guessed() {
        let mut c = Conn::started(&[]);
        c.client(&request(1, "/pkg.S/M", true));
        let m = [grpc_msg(0, 100), grpc_msg(0, 100)].concat();
        let f = fr(0, 0, 1, &m);
        c.client(&f[..50]);
        c.gap(Dir::Fwd, 20); // inside the frame: framing kept, payload lost
        c.client(&f[70..]);
        c.client(&fr(0, 1, 1, &grpc_msg(0, 5)));
        let g = c.ledger.observer.grpc_call(0).unwrap().clone();
        assert_eq!((g.counts[0].messages, g.counts[0].incomplete), (0, 1));
        assert_eq!(report(&mut c).sides.client.incomplete, 1);
    }

    #[test]
    fn lost_framing_and_capture_end() {
        let mut c = Conn::started(&[]);
        c.client(&request(1, "/pkg.S/M", true));
        c.client(&request(3, "/pkg.S/M", true));
        c.client(&fr(0, 0, 3, &grpc_msg(0, 4)));
        c.gap(Dir::Fwd, 1000); // between frames: framing lost, both streams lack bytes
        c.server(&response(1, false, &[]));
        c.server(&fr(0, 0, 1, &grpc_msg(0, 10)[..8]));
        c.close();
        // Folded at the end of the input: the records reach the calls view.
        let calls = c.folded_grpc();
        assert_eq!(calls[&1].counts[0].incomplete, 1);
        assert_eq!(calls[&3].counts[0].messages, 1);
        assert_eq!(calls[&3].counts[0].incomplete, 1);
        // The response message the capture ends inside is incomplete too.
        assert_eq!(calls[&1].counts[1].incomplete, 1);
        let o = &c.ledger.observer;
        assert!(
            (0..2).all(|seq| o.grpc_call(seq).is_none()),
            "folded calls are freed"
        );
        let a = &o.grpc;
        assert!(a.conns.is_empty());
        assert_eq!(a.open, 0);
        assert_eq!(a.open_grpc, 0);
    }

    #[test]
    fn not_grpc_is_not_cut_and_trailers_only() {
        let mut c = Conn::started(&[]);
        c.client(&request(1, "/x", false));
        assert!(!c.ledger.observer.grpc.wants_data(ConnId(0), 1));
        c.client(&fr(0, 1, 1, &grpc_msg(0, 3)));
        c.server(&response(1, true, &[]));
        assert_eq!(
            c.ledger.observer.grpc_call(0).unwrap().counts[0].messages,
            0
        );
        c.client(&request(3, "/pkg.S/M", true));
        c.client(&fr(0, 1, 3, &grpc_msg(0, 3)));
        c.server(&response(
            3,
            true,
            &[
                ("grpc-status", "12"),
                ("grpc-message", "nope"),
                ("grpc-status-details-bin", "CAwSBG5vcGU="),
            ],
        ));
        let g = c.ledger.observer.grpc_call(1).unwrap();
        assert_eq!(g.grpc_message.as_deref(), Some("nope"));
        // Trailers-only: the details are kept as sent, padding included.
        assert_eq!(g.status_details.as_deref(), Some(&b"CAwSBG5vcGU="[..]));
        assert_eq!(g.counts[0].messages, 1);
        assert_eq!(report(&mut c).calls, 1);
    }
}

mod keep {
    use crate::grpc::*;
    use crate::testkit::*;
    use crate::Analysis;

    fn grpc_msg(flag: u8, body: &[u8]) -> Vec<u8> {
        let mut v = vec![flag];
        v.extend_from_slice(&(body.len() as u32).to_be_bytes());
        v.extend_from_slice(body);
        v
    }

    fn keeping(limits: KeepLimits) -> Conn {
        let mut a = Analysis::new(None).keep_finished();
        a.grpc.keep_messages(limits);
        Conn::started_with(a, &[])
    }

    /// (flag, wire length, how, bytes) of each listed message of direction `rel`.
    fn listed(k: &Kept, rel: usize) -> Vec<(u8, u32, KeptHow, Vec<u8>)> {
        k.messages(rel)
            .map(|(m, b)| (m.flag, m.wire_len, m.how, b.to_vec()))
            .collect()
    }

    /// Every message's bytes, in wire order per direction, across frames and writes, with
    /// the call's path; nothing kept for a call that is not gRPC; counts unchanged.
    #[test]
    fn messages_are_kept_whole_across_frames() {
        let mut c = keeping(KeepLimits::default());
        c.client(&request(1, "/pkg.S/M", true));
        let m = [grpc_msg(0, b"abc"), grpc_msg(1, b""), grpc_msg(0, &[7; 40])].concat();
        c.client(&fr(0, 0, 1, &m[..10]));
        c.client(&fr(0, 1, 1, &m[10..]));
        c.server(&response(1, false, &[("grpc-encoding", "gzip")]));
        c.server(&fr(0, 0, 1, &grpc_msg(1, b"zz")));
        c.server(&trailers(1, &[("grpc-status", "0")]));
        c.client(&request(3, "/plain", false));
        c.client(&fr(0, 1, 3, &grpc_msg(0, b"abc")));
        c.server(&response(3, true, &[]));
        let g = c.ledger.observer.grpc_call(0).unwrap().clone();
        let k = g.kept.as_deref().expect("kept");
        assert_eq!(k.path(), "/pkg.S/M");
        assert_eq!(
            listed(k, 0),
            vec![
                (0, 3, KeptHow::Whole, b"abc".to_vec()),
                (1, 0, KeptHow::Whole, vec![]),
                (0, 40, KeptHow::Whole, vec![7; 40]),
            ]
        );
        assert_eq!(listed(k, 1), vec![(1, 2, KeptHow::Whole, b"zz".to_vec())]);
        assert_eq!((k.omitted(0), k.omitted(1)), (0, 0));
        assert_eq!(g.counts[0].messages, 3);
        assert_eq!(c.ledger.observer.grpc_call(1).unwrap().kept, None);
        assert_eq!(c.ledger.observer.grpc.kept_bytes(), 45);
        drop(g);
        c.ledger.observer.flush();
        let mut n = 0;
        c.ledger.observer.drain_finished(|_| n += 1);
        assert_eq!(n, 2);
        assert_eq!(
            c.ledger.observer.grpc.kept_bytes(),
            0,
            "freed with the calls"
        );
    }

    /// `max_messages` per direction (later ones counted), `max_message_bytes` (listed without
    /// bytes), the run's budget (listed without bytes, counted), and a message lost in a gap
    /// (not listed, its bytes given back).
    #[test]
    fn every_bound_is_counted() {
        let mut c = keeping(KeepLimits {
            max_messages: 2,
            max_message_bytes: 10,
            max_total_bytes: 25,
        });
        c.client(&request(1, "/pkg.S/M", true));
        let m = [
            grpc_msg(0, &[1; 11]),
            grpc_msg(0, &[2; 10]),
            grpc_msg(0, &[3; 1]),
            grpc_msg(0, &[4; 1]),
        ]
        .concat();
        c.client(&fr(0, 1, 1, &m));
        c.server(&response(1, false, &[]));
        c.server(&fr(0, 0, 1, &grpc_msg(0, &[5; 10])));
        c.server(&fr(0, 0, 1, &grpc_msg(0, &[6; 10])));
        c.server(&trailers(1, &[("grpc-status", "0")]));
        let g = c.ledger.observer.grpc_call(0).unwrap().clone();
        let k = g.kept.as_deref().unwrap();
        assert_eq!(
            listed(k, 0),
            vec![
                (0, 11, KeptHow::TooLarge, vec![]),
                (0, 10, KeptHow::Whole, vec![2; 10]),
            ]
        );
        assert_eq!(k.omitted(0), 2);
        assert_eq!(
            listed(k, 1),
            vec![
                (0, 10, KeptHow::Whole, vec![5; 10]),
                (0, 10, KeptHow::OverBudget, vec![]),
            ]
        );
        let b = c.ledger.observer.grpc.kept_budget().unwrap();
        assert_eq!((b.held(), b.refused()), (20, 1));
        assert_eq!(c.ledger.observer.grpc.kept_bytes(), 20);

        // A gap inside a message: it is not listed and its bytes go back.
        c.client(&request(3, "/pkg.S/M", true));
        let m = grpc_msg(0, &[8; 10]);
        c.client(&fr(0, 0, 3, &m[..8]));
        assert_eq!(c.ledger.observer.grpc.kept_bytes(), 23);
        // The next frame lacks bytes: it arrives without its payload.
        let f = fr(0, 0, 3, &m[8..]);
        c.client(&f[..10]);
        c.gap(Dir::Fwd, 3);
        c.client(&fr(0, 1, 3, &grpc_msg(0, &[9; 2])));
        let g3 = c.ledger.observer.grpc_call(1).unwrap().clone();
        assert_eq!(listed(g3.kept.as_deref().unwrap(), 0), vec![]);
        assert_eq!(g3.counts[0].incomplete, 1);
        assert_eq!(c.ledger.observer.grpc.kept_bytes(), 20);
    }

    /// A printed call's record is reused by the next call, its bytes freed.
    #[test]
    fn records_are_recycled() {
        let mut c = keeping(KeepLimits::default());
        c.client(&request(1, "/pkg.S/A", true));
        c.client(&fr(0, 1, 1, &grpc_msg(0, b"first")));
        let g = c.ledger.observer.take_grpc_call(0).unwrap();
        let k = g.kept.unwrap();
        let at = std::sync::Arc::as_ptr(&k);
        Kept::recycle(k);
        assert_eq!(c.ledger.observer.grpc.kept_bytes(), 0);
        c.client(&request(3, "/pkg.S/B", true));
        c.client(&fr(0, 1, 3, &grpc_msg(0, b"2nd")));
        let k = c
            .ledger
            .observer
            .grpc_call(1)
            .unwrap()
            .kept
            .clone()
            .unwrap();
        assert_eq!(std::sync::Arc::as_ptr(&k), at, "the same record");
        assert_eq!(k.path(), "/pkg.S/B");
        assert_eq!(listed(&k, 0), vec![(0, 3, KeptHow::Whole, b"2nd".to_vec())]);
        // The tracker gone, the pool goes with it (pooled records hold the budget), and a
        // record given back later is freed.
        let budget = c.ledger.observer.grpc.kept_budget().unwrap().clone();
        let g = c.ledger.observer.take_grpc_call(1).unwrap();
        drop(c);
        drop(k);
        Kept::recycle(g.kept.unwrap());
        assert_eq!(budget.holders(), 1, "only ours");
        assert_eq!(budget.held(), 0);
    }
}

mod size {
    #[test]
    fn per_call_records_are_small() {
        // docs/ledger.md "Memory bounds" quotes these sizes.
        assert_eq!(std::mem::size_of::<crate::grpc::CallGrpc>(), 144);
        assert_eq!(std::mem::size_of::<crate::flow::CallFlow>(), 24);
    }
}

/// [`PerFrame`]: the tracker alone lists each DATA frame's completed messages (decision 440).
mod per_frame {
    use crate::grpc::*;
    use crate::ledger::{Ledger, Observer};
    use crate::testkit::*;
    use crate::StreamId;
    use h2ledger_tcp::{Sink, Write};

    /// (stream, response, encoding, [(wire_len, cut, bytes)]) of each frame that completed
    /// messages, in order.
    type Seen = Vec<(u32, bool, Option<String>, Vec<(u32, bool, Vec<u8>)>)>;

    struct Obs {
        p: PerFrame,
        seen: Seen,
    }

    impl Observer for Obs {
        fn wants_data(&self, conn: ConnId, stream: StreamId) -> bool {
            self.p.wants_data(conn, stream)
        }
        fn gap(&mut self, conn: ConnId, dir: Dir, _ts: Nanos, lost: bool) {
            self.p.gap(conn, dir, lost);
        }
        fn frame(&mut self, ev: &FrameEvent<'_>) {
            self.p.frame(ev);
            let c = self.p.last();
            if c.is_empty() {
                return;
            }
            let msgs = c
                .messages()
                .map(|m| (m.wire_len, m.cut, m.bytes.to_vec()))
                .collect();
            let enc = c.encoding().map(String::from);
            let what = (ev.head.stream_id.0, c.response(), enc, msgs);
            assert_eq!(c.path(), "/p.S/M", "{what:?}");
            self.seen.push(what);
        }
        fn close(&mut self, s: &crate::ConnSummary) {
            self.p.close(s.id);
        }
    }

    struct Run {
        l: Ledger<Obs>,
        t: Nanos,
        idx: [u64; 2],
    }

    impl Run {
        fn new(max: usize) -> Run {
            let mut l = Ledger::new(Obs {
                p: PerFrame::new(max),
                seen: Vec::new(),
            });
            l.open(&crate::testkit::meta(Some(Dir::Fwd)));
            let mut r = Run {
                l,
                t: 0,
                idx: [0; 2],
            };
            let mut p = PREFACE.to_vec();
            p.extend(settings(&[]));
            r.send(Dir::Fwd, &p);
            r.send(Dir::Rev, &[settings(&[]), settings_ack()].concat());
            r.send(Dir::Fwd, &settings_ack());
            r
        }
        fn send(&mut self, dir: Dir, b: &[u8]) {
            self.t += 1_000_000;
            let d = usize::from(dir == Dir::Rev);
            let w = Write {
                index: self.idx[d],
                ts: self.t,
                len: b.len() as u32,
            };
            self.idx[d] += 1;
            self.l.write(ConnId(0), dir, &w);
            self.l.data(ConnId(0), dir, &w, b);
        }
        fn wants(&self, stream: u32) -> bool {
            self.l.observer.p.wants_data(ConnId(0), StreamId(stream))
        }
    }

    fn msg(body: &[u8]) -> Vec<u8> {
        let mut v = vec![0];
        v.extend_from_slice(&(body.len() as u32).to_be_bytes());
        v.extend_from_slice(body);
        v
    }

    fn data(stream: u32, end: bool, payload: &[u8]) -> Vec<u8> {
        fr(0, u8::from(end), stream, payload)
    }

    #[test]
    fn each_frame_lists_what_it_completes() {
        let mut r = Run::new(4);
        let mut req = request(1, "/p.S/M", true);
        req.extend(data(
            1,
            false,
            &[msg(b"ab"), msg(b"hello")[..3].to_vec()].concat(),
        ));
        r.send(Dir::Fwd, &req);
        // The rest of "hello" (cut to 4 bytes) and an empty message, then the end.
        r.send(
            Dir::Fwd,
            &data(1, true, &[msg(b"hello")[3..].to_vec(), msg(b"")].concat()),
        );
        r.send(
            Dir::Rev,
            &[
                response(1, false, &[("grpc-encoding", "gzip")]),
                data(1, false, &msg(b"xyz")),
            ]
            .concat(),
        );
        assert!(r.wants(1));
        r.send(Dir::Rev, &trailers(1, &[("grpc-status", "0")]));
        assert!(!r.wants(1), "both halves ended: the stream is dropped");
        let seen = &r.l.observer.seen;
        assert_eq!(
            *seen,
            vec![
                (1, false, None, vec![(2, false, b"ab".to_vec())]),
                (
                    1,
                    false,
                    None,
                    vec![(5, true, b"hell".to_vec()), (0, false, Vec::new())]
                ),
                (
                    1,
                    true,
                    Some("gzip".into()),
                    vec![(3, false, b"xyz".to_vec())]
                ),
            ]
        );
    }

    #[test]
    fn a_reset_or_a_gap_ends_the_cut_and_only_grpc_streams_are_held() {
        let mut r = Run::new(100);
        r.send(Dir::Fwd, &request(1, "/p.S/M", false));
        assert!(!r.wants(1), "not gRPC: not followed");
        r.send(Dir::Fwd, &request(3, "/p.S/M", true));
        assert!(r.wants(3));
        r.send(Dir::Fwd, &fr(3, 0, 3, &8u32.to_be_bytes()));
        assert!(!r.wants(3), "RST_STREAM drops the stream");
        r.send(Dir::Fwd, &request(5, "/p.S/M", true));
        r.send(Dir::Fwd, &data(5, false, &msg(b"abc")[..4]));
        r.l.gap(ConnId(0), Dir::Fwd, r.t, 10);
        r.send(Dir::Fwd, &data(5, false, &msg(b"def")));
        assert!(r.l.observer.seen.is_empty(), "{:?}", r.l.observer.seen);
        assert_eq!(r.l.observer.p.untracked(), 0);
    }

    #[test]
    fn beyond_the_cap_streams_are_counted_not_followed() {
        let mut r = Run::new(100);
        let n = MAX_GRPC_STREAMS as u32;
        for i in 0..n + 3 {
            r.send(Dir::Fwd, &request(2 * i + 1, "/p.S/M", true));
        }
        assert_eq!(r.l.observer.p.untracked(), 3);
        assert!(r.wants(2 * (n - 1) + 1));
        assert!(!r.wants(2 * n + 1));
    }
}
