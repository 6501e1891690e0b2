use super::*;
use crate::testkit::*;

const IWS: u16 = 4;

fn flow(c: &Conn) -> FlowReport {
    c.ledger.observer.flow.report(None)
}

/// 65,535 bytes of DATA in frames of at most 16,384.
fn fill(c: &mut Conn, stream: u32, mut n: usize) {
    while n > 0 {
        let k = n.min(16_384);
        c.client(&data(stream, false, k));
        n -= k;
    }
}

#[test]
fn stream_limited_stall_ends_at_window_update() {
    let mut c = Conn::started(&[]);
    c.server(&wu(0, 1 << 20)); // the connection window is not the limit
    c.client(&request(1, "/a", false));
    fill(&mut c, 1, 65_535);
    let t0 = c.t;
    c.server(&wu(1, 32_768));
    let r = flow(&c);
    assert_eq!(r.sides.client.stalls, 1);
    assert_eq!(r.sides.client.by_limit.stream, 1);
    assert_eq!(r.sides.client.stalled_us.total, (c.t - t0) as f64 / 1000.0);
    assert_eq!(r.sides.client.max_window.connection, 65_535 + (1 << 20));
    assert_eq!(r.sides.client.max_window.stream, 65_535);
    assert_eq!(r.sides.server.stalls, 0);
    assert_eq!(r.unknown_connections, 0);
    let call = c.ledger.observer.flow.call(0);
    assert_eq!(call.stalls, [1, 0]);
    assert_eq!(call.stalled_ns[0], c.t - t0);
}

#[test]
fn both_windows_then_connection_only() {
    let mut c = Conn::started(&[]);
    c.client(&request(1, "/a", false));
    fill(&mut c, 1, 65_535);
    // Stream window opens, the connection's does not: still stalled.
    c.server(&wu(1, 100_000));
    assert_eq!(flow(&c).sides.client.stalled_us.p50, None);
    c.server(&wu(0, 10));
    let r = flow(&c);
    assert_eq!(
        (r.sides.client.stalls, r.sides.client.by_limit.both),
        (1, 1)
    );
    assert_eq!(r.sides.client.stalled_us.total, 2000.0);
    assert_eq!(r.sides.client.max_window.stream, 100_000);
    // A second stream is limited by the connection only.
    c.client(&request(3, "/a", false));
    c.client(&data(3, false, 10));
    let r = flow(&c);
    assert_eq!(
        (r.sides.client.stalls, r.sides.client.by_limit.connection),
        (2, 1)
    );
    c.close();
    let r = flow(&c);
    assert_eq!(r.sides.client.unresolved, 1);
    assert_eq!(r.sides.client.stalled_us.max, Some(2000.0));
}

#[test]
fn settings_ack_shifts_open_streams_and_ends_stalls() {
    let mut c = Conn::started(&[]);
    c.server(&wu(0, 1 << 20));
    c.client(&request(1, "/a", false));
    fill(&mut c, 1, 65_535);
    // A larger initial window from the server ends the stall at the client's ACK, not at
    // the SETTINGS.
    c.server(&settings(&[(IWS, 100_000)]));
    assert_eq!(flow(&c).sides.client.stalled_us.p99, None);
    c.client(&settings_ack());
    let r = flow(&c);
    assert_eq!(r.sides.client.stalled_us.total, 2000.0);
    assert_eq!(r.sides.client.max_window.stream, 65_535);
    // New streams open at 100,000; a smaller value shifts them down.
    c.client(&request(3, "/a", false));
    assert_eq!(flow(&c).sides.client.max_window.stream, 100_000);
    c.server(&settings(&[(IWS, 10)]));
    c.client(&settings_ack());
    c.client(&data(3, false, 10));
    let r = flow(&c);
    assert_eq!(
        (r.sides.client.stalls, r.sides.client.by_limit.stream),
        (2, 2)
    );
}

#[test]
fn end_stream_and_padding() {
    let mut c = Conn::started(&[(IWS, 19)]);
    c.client(&request(1, "/a", false));
    // DATA with END_STREAM never stalls; padding counts against the window.
    c.client(&fr(
        0,
        0x8,
        1,
        &[9, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    ));
    let r = flow(&c);
    assert_eq!(
        (r.sides.client.stalls, r.sides.client.by_limit.stream),
        (1, 1)
    );
    c.client(&request(3, "/a", false));
    c.client(&data(3, true, 19));
    assert_eq!(flow(&c).sides.client.stalls, 1);
    // A stall on a stream that is reset never ends: unresolved.
    c.client(&fr(3, 0, 1, &[0, 0, 0, 8]));
    let r = flow(&c);
    assert_eq!((r.sides.client.stalls, r.sides.client.unresolved), (1, 1));
    assert_eq!(r.sides.client.stalled_us.max, None);
}

#[test]
fn server_side_and_window_updates_after_close_ignored() {
    let mut c = Conn::started(&[]);
    c.client(&[settings(&[(IWS, 1000)])].concat());
    c.server(&settings_ack());
    c.client(&request(1, "/a", false));
    c.client(&data(1, true, 5));
    c.server(&response(1, false, &[]));
    c.server(&data(1, false, 1000));
    c.client(&wu(1, 500));
    c.server(&data(1, true, 0));
    c.client(&wu(1, 500)); // a stream already closed: ignored
    let r = flow(&c);
    assert_eq!(
        (r.sides.server.stalls, r.sides.server.by_limit.stream),
        (1, 1)
    );
    assert_eq!(r.sides.server.stalled_us.total, 1000.0);
    assert_eq!(r.sides.server.max_window.stream, 1000);
    assert_eq!(r.sides.client.stalls, 0);
    assert_eq!(c.ledger.observer.flow.call(0).stalls, [0, 1]);
    assert!(c
        .ledger
        .observer
        .flow
        .conns
        .get(0)
        .unwrap()
        .streams
        .is_empty());
}

#[test]
fn unknown_without_the_start_and_after_lost_framing() {
    let mut c = Conn::new(false);
    let mut p = PREFACE.to_vec();
    p.extend(settings(&[]));
    c.client(&p);
    c.client(&request(1, "/a", false));
    c.client(&data(1, false, 16_384));
    assert_eq!(flow(&c).unknown_connections, 1);
    assert_eq!(flow(&c).sides.client.stalls, 0);

    let mut c = Conn::started(&[]);
    c.client(&request(1, "/a", false));
    fill(&mut c, 1, 65_535);
    c.gap(Dir::Fwd, 100);
    let r = flow(&c);
    assert_eq!(
        (
            r.unknown_connections,
            r.sides.client.stalls,
            r.sides.client.unresolved
        ),
        (1, 1, 1)
    );
}

#[test]
fn hostile_settings() {
    // Many stalled streams and SETTINGS flipping the initial window: each change costs
    // O(log n) per stall it ends, not a walk over every stream.
    let mut c = Conn::started(&[(IWS, 1)]);
    c.server(&wu(0, 1 << 30));
    let mut reqs = Vec::new();
    for s in (1..4000).step_by(2) {
        reqs.extend(request(s, "/a", false));
        reqs.extend(data(s, false, 1));
    }
    c.client(&reqs);
    assert_eq!(flow(&c).sides.client.stalls, 2000);
    for i in 0..200 {
        c.server(&settings(&[(IWS, if i % 2 == 0 { 0 } else { 1 })]));
        c.client(&settings_ack());
    }
    let r = flow(&c);
    assert_eq!(r.sides.client.stalls, 2000);
    assert_eq!(
        r.sides.client.stalled_us.p50, None,
        "a window of 0 ends no stall"
    );
    c.server(&settings(&[(IWS, 2)]));
    c.client(&settings_ack());
    assert_eq!(flow(&c).sides.client.stalled_us.p50, Some(402_000.0));
    // SETTINGS never ACKed beyond the bound: the windows are unknown, not guessed.
    for _ in 0..=MAX_PENDING_SETTINGS {
        c.server(&settings(&[]));
    }
    assert_eq!(flow(&c).unknown_connections, 1);
}

#[test]
fn memory_follows_open_streams() {
    let mut c = Conn::started(&[]);
    for s in (1..2000).step_by(2) {
        c.client(&request(s, "/a", false));
        c.client(&data(s, true, 1));
        c.server(&response(s, true, &[]));
    }
    let f = &c.ledger.observer.flow;
    assert_eq!((f.streams, f.conns.get(0).unwrap().streams.len()), (0, 0));
    // The heaps of open streams' windows hold stale entries only up to their slack.
    assert!(f
        .conns
        .get(0)
        .unwrap()
        .sides
        .iter()
        .all(|(_, s)| s.top.len() <= state::HEAP_SLACK));
    c.close();
    assert!(c.ledger.observer.flow.conns.is_empty());
}

/// Issue 20 item 2: a phase where the windows do not change still has their values as its
/// largest (tonic-adaptive at 200 ms showed 0 for the client's connection window).
#[test]
fn a_window_not_changed_in_a_phase_has_its_value_there() {
    let a = crate::Analysis::new(Some(crate::Splitter::every(100_000_000)));
    let mut c = Conn::started_with(a, &[]);
    c.server(&wu(0, 1 << 20));
    c.client(&request(1, "/a", false));
    c.client(&data(1, false, 10));
    let phase = |c: &Conn| c.ledger.observer.splitter().unwrap().phase_of(c.t);
    let mut phases = vec![phase(&c)];
    // Later phases: DATA only, no WINDOW_UPDATE or SETTINGS.
    for _ in 0..3 {
        c.t += 150_000_000;
        c.client(&data(1, false, 10));
        phases.push(phase(&c));
    }
    phases.dedup();
    assert_eq!(phases, [0, 1, 3, 4]);
    // Phase 2 saw no frame at all: the windows were unchanged there, so it has them too.
    phases.push(2);
    for p in phases {
        let r = c.ledger.observer.flow.report(Some(p));
        let w = &r.sides.client.max_window;
        assert!(
            w.connection >= 65_535 + (1 << 20) - 40 && w.stream >= 65_535 - 40,
            "phase {p}: {w:?}"
        );
        // The server sent nothing after the first phase; its windows are still there.
        assert_eq!(r.sides.server.max_window.connection, 65_535, "phase {p}");
    }
}

/// Decision 433: the tracker opens, half-closes and drops a stream at the ledger's step. DATA
/// on a stream no header block opened (idle, RFC 9113 §5.1: a connection error) opens nothing:
/// it costs the connection window only, so no stream stall. The tracker of before opened the
/// stream at that DATA and counted a stall limited by both windows.
#[test]
fn data_on_an_idle_stream_opens_nothing() {
    let mut c = Conn::started(&[(IWS, 10)]);
    c.server(&wu(0, 1 << 20));
    c.client(&data(1, false, 20));
    let r = flow(&c);
    assert_eq!((r.sides.client.stalls, r.sides.client.unresolved), (0, 0));
    assert_eq!(c.ledger.observer.flow.streams, 0);
    // The connection window was charged all the same: a request's DATA of 65,535 - 20 + 2^20
    // more bytes exhausts it.
    c.client(&request(3, "/a", false));
    c.server(&wu(3, 1 << 21));
    fill(&mut c, 3, 65_535 - 20);
    fill(&mut c, 3, 1 << 20);
    let r = flow(&c);
    assert_eq!(
        (r.sides.client.stalls, r.sides.client.by_limit.connection),
        (1, 1)
    );
}

/// DATA after the sender's END_STREAM (a second END_STREAM or none: RFC 9113 §5.1,
/// half-closed (local) sends no DATA) starts no stall: the half is closed, as the ledger's
/// `HalfClosed` step said; nothing waits. Before, only the frame's own flag was read.
#[test]
fn data_after_the_senders_end_stream_starts_no_stall() {
    let mut c = Conn::started(&[(IWS, 10)]);
    c.client(&request(1, "/a", false));
    c.client(&data(1, true, 5));
    c.client(&data(1, false, 10));
    c.client(&data(1, true, 10));
    assert_eq!(flow(&c).sides.client.stalls, 0);
    // The server's half is still open: its DATA stalls, and the stream is dropped at the
    // server's END_STREAM (`Ended`), the stall unresolved.
    c.server(&response(1, false, &[]));
    for _ in 0..4 {
        c.server(&data(1, false, 16_384));
    }
    let r = flow(&c);
    assert_eq!((r.sides.server.stalls, r.sides.server.unresolved), (1, 0));
    assert_eq!(c.ledger.observer.flow.streams, 1);
    c.server(&trailers(1, &[("grpc-status", "0")]));
    let r = flow(&c);
    assert_eq!((r.sides.server.stalls, r.sides.server.unresolved), (1, 1));
    assert_eq!(c.ledger.observer.flow.streams, 0);
}

/// CONTINUATION defines no END_STREAM (RFC 9113 §6.10; flags it does not define are ignored,
/// §4.1): its bit 0x1 closes no half, so the request's DATA still stalls. A RST_STREAM on an
/// idle stream frees nothing and an END_STREAM on a reset stream (crossing the RST) ends
/// nothing twice.
#[test]
fn continuation_flag_and_resets_of_idle_and_closed_streams() {
    let mut c = Conn::started(&[(IWS, 10)]);
    let mut b = vec![0x83, 0x86];
    b.extend(lit(":path", "/a"));
    let (head, rest) = b.split_at(2);
    c.client(&[fr(1, 0, 1, head), fr(9, 0x1 | 0x4, 1, rest)].concat());
    c.client(&data(1, false, 10));
    assert_eq!(flow(&c).sides.client.stalls, 1);
    assert_eq!(c.ledger.observer.flow.streams, 1);
    c.client(&fr(3, 0, 5, &[0, 0, 0, 8])); // RST_STREAM on idle stream 5
    assert_eq!(c.ledger.observer.flow.streams, 1);
    c.server(&fr(3, 0, 1, &[0, 0, 0, 8])); // the server resets stream 1: the stall is over
    let r = flow(&c);
    assert_eq!((r.sides.client.stalls, r.sides.client.unresolved), (1, 1));
    assert_eq!(c.ledger.observer.flow.streams, 0);
    c.client(&data(1, true, 0)); // crossing the RST: `Untracked`
    c.server(&response(1, true, &[]));
    let r = flow(&c);
    assert_eq!((r.sides.client.unresolved, r.untracked_streams), (1, 0));
}

/// Decision 433: a stream the ledger does not follow (its table of open streams full) is not
/// followed here either, which could not see it end: counted in `untracked_streams`. The
/// ledger's table is filled with streams closed and met again (the server's header blocks on
/// streams that had ended, kept for HEADERS vs TRAILERS), which the tracker does not hold, so
/// its own cap is far: the tracker of before followed the new stream and counted its stall.
#[test]
fn a_stream_beyond_the_ledgers_cap_is_untracked() {
    let mut c = Conn::started(&[(IWS, 10)]);
    let n = crate::MAX_OPEN_STREAMS as u32;
    for s in (1..2 * n).step_by(2) {
        c.client(&request(s, "/a", false));
        c.client(&data(s, true, 0));
        c.server(&response(s, true, &[]));
    }
    for s in (1..2 * n).step_by(2) {
        c.server(&response(s, true, &[]));
    }
    assert_eq!(flow(&c).untracked_streams, 0);
    c.client(&request(2 * n + 1, "/a", false));
    c.client(&data(2 * n + 1, false, 10));
    let r = flow(&c);
    assert_eq!((r.untracked_streams, r.sides.client.stalls), (1, 0));
    assert_eq!(c.ledger.observer.flow.streams, 0);
}
