//! Each rule on frames built byte by byte, at its threshold and one past it.

use h2ledger_tcp::{CloseKind, ConnId, Dir, Nanos, Sink, Write};

use super::conn::Bucket;
use super::*;
use crate::ledger::Ledger;
use crate::testkit::{data, fr, request, response, settings, settings_ack, trailers, wu};

const MS: Nanos = 1_000_000;
const S: Nanos = 1_000_000_000;

/// A connection watched by the findings engine alone (its own flow tracker), with the time
/// of each write set by the test.
struct T {
    ledger: Ledger<Findings>,
    idx: [u64; 2],
    t: Nanos,
}

impl T {
    fn new(cfg: FindingsConfig) -> T {
        let mut ledger = Ledger::new(Findings::new(cfg).with_own_flow());
        ledger.open(&crate::testkit::meta(Some(Dir::Fwd)));
        T {
            ledger,
            idx: [0; 2],
            t: 1_000 * S,
        }
    }

    /// Preface and SETTINGS both ways (`client`, `server`: their parameters), both ACKed.
    fn started(client: &[(u16, u32)], server: &[(u16, u32)]) -> T {
        let mut c = T::new(FindingsConfig::default());
        let mut p = crate::testkit::PREFACE.to_vec();
        p.extend(settings(client));
        c.client(&p);
        c.server(&[settings(server), settings_ack()].concat());
        c.client(&settings_ack());
        c
    }

    fn send(&mut self, dir: Dir, bytes: &[u8]) {
        let d = usize::from(dir == Dir::Rev);
        let w = Write {
            index: self.idx[d],
            ts: self.t,
            len: bytes.len() as u32,
        };
        self.idx[d] += 1;
        self.ledger.write(ConnId(0), dir, &w);
        self.ledger.data(ConnId(0), dir, &w, bytes);
    }

    fn client(&mut self, b: &[u8]) {
        self.t += MS;
        self.send(Dir::Fwd, b);
    }

    fn server(&mut self, b: &[u8]) {
        self.t += MS;
        self.send(Dir::Rev, b);
    }

    fn wait(&mut self, d: Nanos) {
        self.t += d;
    }

    fn report(&mut self) -> FindingsReport {
        self.ledger
            .close(ConnId(0), self.t, CloseKind::EndOfCapture);
        self.ledger.observer.report()
    }

    fn ids(&mut self) -> Vec<&'static str> {
        let mut v: Vec<&'static str> = self.report().findings.iter().map(|f| f.id.name()).collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}

fn ping(payload: [u8; 8]) -> Vec<u8> {
    fr(6, 0, 0, &payload)
}

fn pong(payload: [u8; 8]) -> Vec<u8> {
    fr(6, 1, 0, &payload)
}

fn rst(stream: u32, code: u32) -> Vec<u8> {
    fr(3, 0, stream, &code.to_be_bytes())
}

fn get(stream: u32) -> Vec<u8> {
    // :method GET, :scheme http, :path /, END_STREAM | END_HEADERS
    fr(1, 5, stream, &[0x82, 0x86, 0x84])
}

fn find(r: &FindingsReport, id: FindingId) -> Option<&Finding> {
    r.findings.iter().find(|f| f.id == id)
}

#[test]
fn bucket_is_nghttp2s_ratelim() {
    let mut b = Bucket::<3, 1>::new();
    let t = 10 * S;
    assert!(!b.drain(t) && !b.drain(t) && !b.drain(t));
    assert!(b.drain(t + S / 2), "empty within the same second");
    assert!(!b.drain(t + S), "one token a second");
    assert!(b.drain(t + S));
    assert!(!b.drain(t + 100 * S) && !b.drain(t + 100 * S) && !b.drain(t + 100 * S));
    assert!(b.drain(t + 100 * S), "refilled up to the burst only");
}

/// grpc-go's handlePing on the grpc-go keepalive pattern of issue 21: PINGs every 10 s with no
/// stream open; the first is free, the second and third are strikes, the fourth is fatal.
#[test]
fn keepalive_strikes_then_too_many_pings() {
    let mut c = T::started(&[], &[]);
    c.client(&request(1, "/svc/M", true));
    c.client(&data(1, true, 5));
    c.server(&response(1, false, &[("content-type", "application/grpc")]));
    c.server(&data(1, false, 5));
    c.server(&trailers(1, &[("grpc-status", "0")]));
    for _ in 0..3 {
        c.wait(10 * S);
        c.client(&ping([0; 8]));
        c.server(&pong([0; 8]));
    }
    let r = c.ledger.observer.report();
    // The first PING follows the server's trailers (no strike); the next two are strikes.
    let k = find(&r, FindingId::KeepaliveStrikes).expect("strikes");
    assert_eq!(k.evidence.n("strikes"), 2, "{k:?}");
    assert!(k.title.contains("2 strikes of 2"), "{}", k.title);
    assert!(
        k.title.contains("1 more PING sooner than 2 h"),
        "{}",
        k.title
    );
    assert!(find(&r, FindingId::TooManyPings).is_none());
    c.wait(10 * S);
    c.client(&ping([0; 8]));
    c.wait(10 * S);
    c.client(&ping([0; 8]));
    let mut goaway = vec![0, 0, 0, 0, 0, 0, 0, 0xb];
    goaway.extend_from_slice(b"too_many_pings");
    c.server(&fr(7, 0, 0, &goaway));
    let r = c.report();
    let k = find(&r, FindingId::KeepaliveStrikes).unwrap();
    assert_eq!(k.evidence.n("strikes"), 4);
    assert_eq!(k.count, 4);
    assert!(k.evidence.at("predicted_goaway").is_some());
    let t = find(&r, FindingId::TooManyPings).expect("too-many-pings");
    assert_eq!(t.severity, Severity::Critical);
    match t.evidence.get("pings") {
        Some(Num::Times(v)) => assert_eq!(v.len(), 5),
        e => panic!("{e:?}"),
    }
}

/// A BDP PING follows DATA the server just wrote: it resets the strikes (setResetPingStrikes).
#[test]
fn bdp_pings_escape_strikes() {
    let mut c = T::started(&[], &[]);
    for i in 0..30u32 {
        let s = 2 * i + 1;
        c.client(&request(s, "/svc/M", true));
        c.client(&data(s, true, 5));
        c.server(&response(s, false, &[]));
        c.server(&data(s, false, 5));
        c.client(&ping(h2_frame_parser::ping::GRPC_GO_BDP));
        c.server(&pong(h2_frame_parser::ping::GRPC_GO_BDP));
        c.server(&trailers(s, &[("grpc-status", "0")]));
    }
    let r = c.report();
    assert!(find(&r, FindingId::KeepaliveStrikes).is_none(), "{r:#?}");
    let b = find(&r, FindingId::BdpPingPerCall).expect("bdp-ping-per-call");
    assert_eq!(b.evidence.n("calls"), 30);
    assert_eq!(b.evidence.n("bdp_pings"), 30);
    assert_eq!(b.side, Some(Side::Client));
}

#[test]
fn fewer_bdp_pings_than_half_a_call_do_not_fire() {
    let mut c = T::started(&[], &[]);
    for i in 0..30u32 {
        c.client(&request(2 * i + 1, "/svc/M", true));
        if i % 3 == 0 {
            c.client(&ping(h2_frame_parser::ping::GRPC_GO_BDP));
        }
    }
    assert!(!c.ids().contains(&"bdp-ping-per-call"));
}

/// `--permit-without-stream` and `--keepalive-min-time` change the policy.
#[test]
fn keepalive_policy_is_configurable() {
    let cfg = FindingsConfig {
        keepalive_min_time: 5 * S,
        permit_without_stream: true,
        ..FindingsConfig::default()
    };
    let mut c = T::new(cfg);
    let mut p = crate::testkit::PREFACE.to_vec();
    p.extend(settings(&[]));
    c.client(&p);
    c.client(&request(1, "/svc/M", true));
    for _ in 0..5 {
        c.wait(10 * S);
        c.client(&ping([0; 8]));
    }
    assert!(!c.ids().contains(&"keepalive-strikes"));
}

#[test]
fn rapid_reset_by_nghttp2s_budget() {
    // All within one second: the budget holds 1000.
    let mut c = T::started(&[], &[(3, 100)]);
    let b: Vec<u8> = (0..1001u32)
        .flat_map(|i| [get(2 * i + 1), rst(2 * i + 1, 8)].concat())
        .collect();
    c.client(&b);
    let r = c.report();
    let f = find(&r, FindingId::RapidReset).expect("rapid-reset");
    assert_eq!(f.evidence.n("client_resets"), 1001);
    assert_eq!(f.evidence.n("over_reset_budget"), 1);
}

#[test]
fn rapid_reset_by_envoys_premature_share() {
    let mut c = T::started(&[], &[]);
    // 500 streams: 250 reset before any response, 250 answered.
    for i in 0..500u32 {
        let s = 2 * i + 1;
        c.client(&get(s));
        if i % 2 == 0 {
            c.client(&rst(s, 8));
        } else {
            c.server(&response(s, true, &[]));
        }
    }
    assert!(c.ids().contains(&"rapid-reset"));
    // 499 closed streams: not yet.
    let mut c = T::started(&[], &[]);
    for i in 0..499u32 {
        let s = 2 * i + 1;
        c.client(&[get(s), rst(s, 8)].concat());
    }
    assert!(!c.ids().contains(&"rapid-reset"));
}

#[test]
fn resets_after_a_response_are_not_premature() {
    let mut c = T::started(&[], &[]);
    for i in 0..600u32 {
        let s = 2 * i + 1;
        c.client(&get(s));
        c.server(&response(s, false, &[]));
        c.client(&rst(s, 8));
    }
    assert!(!c.ids().contains(&"rapid-reset"));
}

/// The server resets streams for a frame the client sent after its request (a WINDOW_UPDATE
/// with increment 0): made-you-reset; for the request itself: reset-flood.
#[test]
fn server_resets_made_you_reset_and_reset_flood() {
    let run = |n: u32, followup: bool| {
        let mut c = T::started(&[], &[]);
        let mut req = Vec::new();
        let mut resets = Vec::new();
        for i in 0..n {
            let s = 2 * i + 1;
            req.extend(request(s, "/", false));
            if followup {
                req.extend(fr(8, 0, s, &[0, 0, 0, 0]));
            }
            resets.extend(rst(s, 1));
        }
        c.client(&req);
        c.server(&resets);
        c.ids()
    };
    let ids = run(1001, true);
    assert!(ids.contains(&"made-you-reset"), "{ids:?}");
    assert!(!ids.contains(&"reset-flood"), "{ids:?}");
    let ids = run(1001, false);
    assert!(ids.contains(&"reset-flood"), "{ids:?}");
    assert!(!ids.contains(&"made-you-reset"), "{ids:?}");
    // 1000 fit the budget.
    assert!(!run(1000, false).contains(&"reset-flood"));
}

#[test]
fn continuation_flood_past_eight() {
    for (n, fires) in [(8u8, false), (9, true)] {
        let mut c = T::started(&[], &[]);
        let mut b = fr(1, 0, 1, &[0x82]);
        for k in 0..n {
            let end = if k + 1 == n { 4 } else { 0 };
            b.extend(fr(
                9,
                end,
                1,
                if k + 1 == n {
                    &[0x86, 0x84][..]
                } else {
                    &[][..]
                },
            ));
        }
        c.client(&b);
        assert_eq!(c.ids().contains(&"continuation-flood"), fires, "{n}");
    }
}

#[test]
fn ping_flood_by_unanswered_pings_and_by_rate() {
    let mut c = T::started(&[], &[]);
    let burst: Vec<u8> = (0..1001u64).flat_map(|i| ping(i.to_be_bytes())).collect();
    c.client(&burst);
    let r = c.report();
    let f = find(&r, FindingId::PingFlood).expect("ping-flood");
    assert_eq!(f.evidence.n("max_unacked"), 1001);
    // PINGs answered before the next: a prober, however fast.
    let mut c = T::started(&[], &[]);
    for i in 0..2000u64 {
        c.client(&ping(i.to_be_bytes()));
        c.server(&pong(i.to_be_bytes()));
    }
    assert!(!c.ids().contains(&"ping-flood"));
    // Pipelined, ACKs one behind, 300 in a second.
    let mut c = T::started(&[], &[]);
    for i in 0..300u64 {
        c.client(&ping(i.to_be_bytes()));
        if i > 0 {
            c.server(&pong((i - 1).to_be_bytes()));
        }
        c.t -= MS - MS / 2;
    }
    assert!(c.ids().contains(&"ping-flood"));
}

#[test]
fn settings_flood_by_parameters_in_one_frame() {
    let p: Vec<(u16, u32)> = (0..33).map(|i| (0x100 + i, 1)).collect();
    let mut c = T::started(&[], &[]);
    c.client(&settings(&p));
    assert!(c.ids().contains(&"settings-flood"));
    let mut c = T::started(&[], &[]);
    c.client(&settings(&p[..32]));
    assert!(!c.ids().contains(&"settings-flood"));
}

#[test]
fn empty_frames_flood_after_one() {
    let mut c = T::started(&[], &[]);
    c.client(&request(1, "/", false));
    c.client(&[data(1, false, 0)].concat());
    assert!(!c.ids().contains(&"empty-frames-flood"));
    let mut c = T::started(&[], &[]);
    c.client(&request(1, "/", false));
    c.client(&[data(1, false, 0), data(1, false, 0), data(1, true, 0)].concat());
    assert!(c.ids().contains(&"empty-frames-flood"));
}

/// A PADDED DATA frame that carries nothing but its padding is empty (Envoy counts the
/// payload without padding), whether or not an observer had its payload loaded: the engine
/// alone wants no payload (decision 275). One that carries a byte is not, nor is a HEADERS
/// frame whose only content is its PRIORITY field.
#[test]
fn padded_data_with_only_padding_is_empty() {
    // PADDED (0x8): Pad Length 3, three octets of padding, no data.
    let padded_empty = fr(0, 0x8, 1, &[3, 0, 0, 0]);
    let padded_byte = fr(0, 0x8, 1, &[3, 7, 0, 0, 0]);
    let mut c = T::started(&[], &[]);
    c.client(&request(1, "/", false));
    c.client(&[padded_empty.clone(), padded_empty, data(1, true, 0)].concat());
    assert!(c.ids().contains(&"empty-frames-flood"), "{:?}", c.ids());
    let mut c = T::started(&[], &[]);
    c.client(&request(1, "/", false));
    c.client(&[padded_byte.clone(), padded_byte, data(1, true, 0)].concat());
    assert!(!c.ids().contains(&"empty-frames-flood"), "{:?}", c.ids());
    // HEADERS with PRIORITY (0x20) and an empty block: 5 octets of length, not empty.
    let prio = fr(1, 0x20 | 0x4, 3, &[0, 0, 0, 0, 16]);
    let mut c = T::started(&[], &[]);
    c.client(&[prio.clone(), prio].concat());
    assert!(!c.ids().contains(&"empty-frames-flood"), "{:?}", c.ids());
}

#[test]
fn priority_and_window_update_floods() {
    let prio = |s: u32| fr(2, 0, s, &[0, 0, 0, 0, 16]);
    let mut c = T::started(&[], &[]);
    let b: Vec<u8> = (0..100u32).flat_map(|i| prio(2 * i + 1)).collect();
    c.client(&b);
    assert!(!c.ids().contains(&"priority-flood"));
    let mut c = T::started(&[], &[]);
    let b: Vec<u8> = (0..101u32).flat_map(|i| prio(2 * i + 1)).collect();
    c.client(&b);
    assert!(c.ids().contains(&"priority-flood"));
    // WINDOW_UPDATEs with no DATA received: 1 + 2 x 0 allowed.
    let mut c = T::started(&[], &[]);
    c.client(&[wu(0, 100), wu(0, 100)].concat());
    assert!(c.ids().contains(&"window-update-flood"));
    let mut c = T::started(&[], &[]);
    c.client(&request(1, "/", false));
    c.server(&[response(1, false, &[]), data(1, false, 10)].concat());
    c.client(&(0..23).flat_map(|_| wu(1, 10)).collect::<Vec<u8>>());
    assert!(
        !c.ids().contains(&"window-update-flood"),
        "1 + 2 x (1 + 10) = 23 allowed"
    );
}

/// A 4000-byte header added to the dynamic table once, then referenced by one byte 20 times.
#[test]
fn hpack_bomb() {
    let mut lit_idx = vec![0x40, 1, b'x', 0x7f];
    let mut n = 4000 - 127;
    while n >= 128 {
        lit_idx.push((n % 128) as u8 | 0x80);
        n /= 128;
    }
    lit_idx.push(n as u8);
    lit_idx.extend(std::iter::repeat_n(b'a', 4000));
    let mut c = T::started(&[], &[]);
    c.client(&fr(1, 5, 1, &[&[0x82, 0x86, 0x84][..], &lit_idx].concat()));
    let bomb: Vec<u8> = [0x82, 0x86, 0x84].into_iter().chain([0xbe; 20]).collect();
    c.client(&fr(1, 5, 3, &bomb));
    let r = c.report();
    let f = find(&r, FindingId::HpackBomb).expect("hpack-bomb");
    assert_eq!(f.stream, Some(3));
    assert!(f.evidence.n("header_list_bytes") > 80_000, "{f:?}");
    assert_eq!(f.evidence.n("encoded_bytes"), 23);
    // The first block, 4 KiB on the wire, is not a bomb.
    assert_eq!(f.count, 1);
}

#[test]
fn stream_slots_full_and_refused() {
    // MAX_CONCURRENT_STREAMS 2: two calls in flight, a third opens as soon as one ends.
    let mut c = T::started(&[], &[(3, 2)]);
    c.client(&get(1));
    c.client(&get(3));
    c.wait(50 * MS);
    c.server(&response(1, true, &[]));
    c.client(&get(5));
    c.server(&response(3, true, &[]));
    c.server(&response(5, true, &[]));
    let r = c.report();
    let f = find(&r, FindingId::StreamSlotsFull).expect("slots");
    assert_eq!(f.evidence.n("waited"), 1);
    assert_eq!(f.evidence.n("max_concurrent_streams"), 2);
    assert!(f.evidence.n("full_us_total") >= 50_000);
    assert!(find(&r, FindingId::RefusedStream).is_none());
    // A client that ignores the limit: the server refuses.
    let mut c = T::started(&[], &[(3, 1)]);
    c.client(&[get(1), get(3)].concat());
    c.server(&rst(3, 7));
    c.server(&response(1, true, &[]));
    let ids = c.ids();
    assert!(
        ids.contains(&"refused-stream") && ids.contains(&"stream-slots-full"),
        "{ids:?}"
    );
    // Slow calls one after the other: no wait.
    let mut c = T::started(&[], &[(3, 2)]);
    for i in 0..10u32 {
        c.client(&get(2 * i + 1));
        c.wait(30 * MS);
        c.server(&response(2 * i + 1, true, &[]));
    }
    assert!(c.ids().is_empty(), "{:?}", c.ids());
}

#[test]
fn flow_stall_and_zero_window() {
    // The server's stream window is 10 bytes: a short stall, then a long one.
    let mut c = T::started(&[], &[(4, 10)]);
    c.client(&request(1, "/", false));
    c.client(&data(1, false, 10));
    c.wait(5 * MS);
    c.server(&wu(1, 10));
    c.client(&data(1, false, 10));
    let r = {
        let mut k = T::started(&[], &[(4, 10)]);
        k.client(&request(1, "/", false));
        k.client(&data(1, false, 10));
        k.server(&wu(1, 10));
        k.report()
    };
    let f = find(&r, FindingId::FlowStall).expect("flow-stall");
    assert_eq!(f.severity, Severity::Info);
    assert!(find(&r, FindingId::ZeroWindow).is_none());
    c.wait(2 * S);
    c.server(&wu(1, 100));
    c.client(&data(1, true, 5));
    let r = c.report();
    let z = find(&r, FindingId::ZeroWindow).expect("zero-window");
    assert_eq!(
        z.side,
        Some(Side::Server),
        "the server held the client's window"
    );
    assert_eq!(z.evidence.n("holds"), 1);
    assert!(z.evidence.n("held_us_max") >= 2_000_000);
    let f = find(&r, FindingId::FlowStall).unwrap();
    assert_eq!(f.evidence.n("stalls"), 2);
    assert_eq!(f.evidence.n("needed_window"), 25);
}

/// SETTINGS_INITIAL_WINDOW_SIZE 0 from the client: the server's response cannot start.
#[test]
fn zero_window_from_the_start() {
    let mut c = T::started(&[(4, 0)], &[]);
    c.client(&get(1));
    c.server(&response(1, false, &[]));
    c.wait(3 * S);
    c.client(&ping([1; 8]));
    let r = c.report();
    let z = find(&r, FindingId::ZeroWindow).expect("zero-window");
    assert_eq!(z.side, Some(Side::Client));
    assert_eq!(z.evidence.n("initial_window"), 0);
}

/// Decision 435: a hold ends when its stream's half closes or the stream is reset, as the
/// ledger's step says; a frame's undefined flag 0x1 (a WINDOW_UPDATE's, RFC 9113 §4.1: ignored)
/// is no END_STREAM. Before, any frame with 0x1 on the stream ended its holds.
#[test]
fn zero_window_hold_outlives_an_undefined_flag() {
    let mut c = T::started(&[(4, 0)], &[]);
    c.client(&get(1));
    c.server(&response(1, false, &[]));
    c.server(&fr(8, 0x1, 1, &1u32.to_be_bytes()));
    c.wait(3 * S);
    c.client(&ping([1; 8]));
    let r = c.report();
    let z = find(&r, FindingId::ZeroWindow).expect("zero-window");
    assert_eq!(z.side, Some(Side::Client));
    // The server's END_STREAM ends it.
    let mut c = T::started(&[(4, 0)], &[]);
    c.client(&get(1));
    c.server(&response(1, false, &[]));
    c.wait(100 * MS);
    c.server(&data(1, true, 0));
    c.wait(3 * S);
    c.client(&ping([1; 8]));
    assert!(find(&c.report(), FindingId::ZeroWindow).is_none());
}

#[test]
fn capture_quality_findings() {
    let mut c = T::started(&[], &[]);
    c.client(&request(1, "/", false));
    c.ledger.gap(ConnId(0), Dir::Fwd, c.t, 100);
    let r = c.report();
    let g = find(&r, FindingId::ReassemblyGaps).expect("gaps");
    assert_eq!(g.conn, None);
    assert_eq!(g.evidence.n("gaps"), 1);
    // No SYN: mid-stream.
    let mut ledger = Ledger::new(Findings::new(FindingsConfig::default()));
    ledger.open(&crate::testkit::meta(None));
    let frames = [
        response(1, false, &[]),
        data(1, false, 10),
        trailers(1, &[("grpc-status", "0")]),
    ]
    .concat();
    let w = Write {
        index: 0,
        ts: S,
        len: frames.len() as u32,
    };
    ledger.write(ConnId(0), Dir::Rev, &w);
    ledger.data(ConnId(0), Dir::Rev, &w, &frames);
    ledger.finish();
    let r = ledger.observer.report();
    assert!(find(&r, FindingId::MidStream).is_some(), "{r:#?}");
}

#[test]
fn a_finding_is_drained_once_the_moment_it_fires() {
    let mut c = T::started(&[], &[]);
    let p: Vec<(u16, u32)> = (0..40).map(|i| (0x100 + i, 1)).collect();
    c.client(&settings(&p));
    let mut got = Vec::new();
    c.ledger.observer.drain_new(|f| got.push(f));
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].id, FindingId::SettingsFlood);
    assert_eq!(got[0].evidence.n("max_entries"), 40);
    c.client(&settings(&p));
    c.ledger.observer.drain_new(|f| got.push(f));
    assert_eq!(got.len(), 1, "the same finding again is an update");
    let line = serde_json::to_string(&got[0].line()).unwrap();
    assert!(line.contains("\"record\":\"finding\"") && line.contains("\"type\":\"finding\""));
}

#[test]
fn findings_are_capped_and_counted() {
    let mut f = Findings::new(FindingsConfig::default());
    for i in 0..(MAX_FINDINGS as u32 + 5) {
        f.fire(FindingId::FlowStall, Some(i), Some(Side::Client), None, 1);
    }
    let r = f.report();
    assert_eq!(r.findings.len(), MAX_FINDINGS);
    assert_eq!(r.omitted.get(&FindingId::FlowStall), Some(&5));
}

#[test]
fn ids_and_severities_are_the_contract() {
    let names: Vec<&str> = FindingId::ALL.iter().map(|i| i.name()).collect();
    assert_eq!(
        names,
        [
            "bdp-ping-per-call",
            "keepalive-strikes",
            "too-many-pings",
            "rapid-reset",
            "made-you-reset",
            "continuation-flood",
            "ping-flood",
            "settings-flood",
            "reset-flood",
            "empty-frames-flood",
            "priority-flood",
            "window-update-flood",
            "zero-window",
            "hpack-bomb",
            "stream-slots-full",
            "refused-stream",
            "flow-stall",
            "capture-drops",
            "mid-stream",
            "tls-no-keys",
            "reassembly-gaps",
            "call-errors",
            "goaway-cut-calls",
            "method-errors",
            "deadline-exceeded",
            "cancel-storm",
            "slow-calls",
            "goaway-retries",
            "method-errors-rise"
        ]
    );
    for id in FindingId::ALL {
        assert_eq!(FindingId::from_name(id.name()), Some(*id));
        let (title, rule, advice) =
            text::words(*id, &Evidence::default(), None, &FindingsConfig::default());
        assert!(!title.is_empty() && !rule.is_empty() && !advice.is_empty());
    }
    assert!(Severity::Critical > Severity::Warn && Severity::Warn > Severity::Info);
}

#[test]
fn evidence_serializes_sorted() {
    let mut e = Evidence::default();
    e.u("zeta", 1);
    e.set("alpha", Num::F(0.123456));
    e.set("mid", Num::Times(vec![1_500_000_000]));
    assert_eq!(
        serde_json::to_string(&e).unwrap(),
        r#"{"alpha":0.1235,"mid":[1.5],"zeta":1}"#
    );
}

#[test]
fn hostile_frames_stay_bounded() {
    let mut c = T::started(&[], &[]);
    let mut b = Vec::new();
    for i in 0..20_000u32 {
        b.extend(get(2 * i + 1));
    }
    c.client(&b);
    assert!(c.ledger.observer.streams <= MAX_FINDING_STREAMS);
    let r = c.report();
    assert!(r.findings.len() <= MAX_FINDINGS);
    assert_eq!(c.ledger.observer.streams, 0, "freed at close");
}

/// A gRPC keepalive with no call: nothing says gRPC until the server's GOAWAY, which files the
/// strikes from the first one; PINGs on a connection not known to be gRPC are left alone.
#[test]
fn strikes_without_a_call_are_filed_at_the_goaway() {
    let mut c = T::started(&[], &[]);
    let mut times = Vec::new();
    for _ in 0..4 {
        c.wait(10 * S);
        c.client(&ping([0; 8]));
        times.push(c.t);
        c.server(&pong([0; 8]));
    }
    let mut k = T::started(&[], &[]);
    for _ in 0..4 {
        k.wait(10 * S);
        k.client(&ping([0; 8]));
    }
    assert!(k.ids().is_empty(), "{:?}", k.ids());
    let mut goaway = vec![0, 0, 0, 0, 0, 0, 0, 0xb];
    goaway.extend_from_slice(b"too_many_pings");
    c.server(&fr(7, 0, 0, &goaway));
    let r = c.report();
    let s = find(&r, FindingId::KeepaliveStrikes).expect("strikes");
    assert_eq!(s.first, times[1], "from the first strike");
    assert_eq!(s.evidence.n("strikes_total"), 3);
    assert!(find(&r, FindingId::TooManyPings).is_some());
}

/// Every id has an explanation (the match in explain.rs is exhaustive; here: none is empty and
/// each names where its rule comes from), and its index is its place in `ALL`.
#[test]
fn every_id_is_explained() {
    for (i, id) in FindingId::ALL.iter().enumerate() {
        assert_eq!(*id as usize, i, "{}", id.name());
        let e = super::explain(*id, &FindingsConfig::default());
        assert_eq!(e.id, *id);
        assert_eq!(e.severity, id.severity());
        for (what, s) in [
            ("what", e.what),
            ("side", e.side),
            ("count", e.count),
            ("source", e.source),
            ("rule", &e.rule),
            ("advice", &e.advice),
        ] {
            assert!(s.len() > 2, "{}: {what} is empty", id.name());
        }
    }
}

/// `--severity ID=LEVEL` changes the severity a finding is reported with, and only its id's.
#[test]
fn severities_can_be_set() {
    let mut cfg = FindingsConfig::default();
    assert_eq!(cfg.severities.of(FindingId::FlowStall), Severity::Info);
    cfg.severities.set(FindingId::FlowStall, Severity::Critical);
    assert_eq!(cfg.severities.of(FindingId::FlowStall), Severity::Critical);
    assert!(cfg.severities.changed(FindingId::FlowStall));
    assert_eq!(cfg.severities.of(FindingId::ZeroWindow), Severity::Warn);
    assert!(!cfg.severities.changed(FindingId::ZeroWindow));
}

/// One gRPC call on stream `s` of `path`, answered with grpc-status `code`.
fn grpc_call(c: &mut T, s: u32, path: &str, code: &str) {
    c.client(&request(s, path, true));
    c.client(&data(s, true, 5));
    c.server(&response(s, false, &[("content-type", "application/grpc")]));
    c.server(&trailers(s, &[("grpc-status", code)]));
}

/// `method-errors` names the failing method, not the connection's other one; a method under
/// METHOD_MIN_CALLS calls never fires; beyond MAX_METHODS methods calls are counted apart.
#[test]
fn method_errors_name_the_failing_method() {
    let mut c = T::started(&[], &[]);
    let mut s = 1;
    for i in 0..40 {
        // /ok/Get always works; /bad/Put fails 6 of its 10 calls.
        grpc_call(&mut c, s, "/ok/Get", "0");
        s += 2;
        if i < 10 {
            grpc_call(&mut c, s, "/bad/Put", if i < 6 { "14" } else { "0" });
            s += 2;
        }
    }
    // One call of a method that always fails: under METHOD_MIN_CALLS.
    grpc_call(&mut c, s, "/once/Fail", "13");
    s += 2;
    // More methods than are followed.
    for k in 0..MAX_METHODS {
        grpc_call(&mut c, s, &format!("/many/M{k}"), "0");
        s += 2;
    }
    let r = c.ledger.observer.report();
    let ids: Vec<&str> = r.findings.iter().map(|f| f.id.name()).collect();
    let m = find(&r, FindingId::MethodErrors).unwrap_or_else(|| panic!("method-errors in {ids:?}"));
    assert_eq!(m.evidence.text("method"), "/bad/Put");
    assert_eq!(m.evidence.n("method_calls"), 10);
    assert_eq!(m.evidence.n("method_failed"), 6);
    assert_eq!(m.evidence.n("grpc_unavailable"), 6);
    assert_eq!(m.evidence.n("methods_failing"), 1);
    assert_eq!(m.evidence.n("methods"), MAX_METHODS as u64);
    assert_eq!(m.evidence.n("methods_untracked"), 3);
    assert!(
        m.title
            .starts_with("/bad/Put failed 6 of 10 calls (60%): 6 UNAVAILABLE"),
        "{}",
        m.title
    );
    assert!(find(&r, FindingId::DeadlineExceeded).is_none());
    assert!(find(&r, FindingId::CancelStorm).is_none());
}

/// A request block that repeats the direction's last one byte for byte is not decoded again
/// (decision 220) and keeps its list's stamp: its method, gRPC-ness and timeout are the last
/// one's, read from `Failures::last_request` (decision 475), and its calls count as if read
/// anew: a followed method's calls and failures, an untracked method's in `methods_untracked`.
#[test]
fn a_repeated_request_block_counts_as_the_first() {
    let mut c = T::started(&[], &[]);
    let mut s = 1;
    for k in 0..MAX_METHODS {
        grpc_call(&mut c, s, &format!("/many/M{k}"), "0");
        s += 2;
    }
    let last = |c: &T| c.ledger.observer.conns.get(0).map(|x| x.fail.last_request);
    let mut stamps = Vec::new();
    for _ in 0..3 {
        grpc_call(&mut c, s, "/past/Cap", "0");
        s += 2;
        stamps.push(last(&c).expect("the connection").0);
    }
    // Read once: the three blocks had one stamp (the memo was used), untracked each time.
    assert_ne!(stamps[0], 0);
    assert_eq!(stamps, [stamps[0]; 3]);
    assert_eq!(last(&c).map(|l| l.1), Some(u16::MAX));
    for _ in 0..3 {
        grpc_call(&mut c, s, "/many/M0", "14");
        s += 2;
    }
    let conn = c.ledger.observer.conns.get(0).expect("the connection");
    assert_eq!(conn.fail.last_request.1, 0);
    assert!(conn.fail.last_request.2, "gRPC");
    assert_eq!(conn.fail.methods_untracked, 3);
    assert_eq!(conn.fail.methods[0].calls, 4);
    assert_eq!(conn.fail.methods[0].failed, 3);
    assert_eq!(conn.fail.grpc[14], 3);
}

/// A server's DEADLINE_EXCEEDED counts as a deadline; the client's cancels without a
/// grpc-timeout make a storm from CANCEL_STORM_MIN on, not before.
#[test]
fn deadlines_and_cancel_storms() {
    let mut c = T::started(&[], &[]);
    for s in [1, 3] {
        grpc_call(&mut c, s, "/svc/Slow", "4");
    }
    let r = c.ledger.observer.report();
    assert!(
        find(&r, FindingId::DeadlineExceeded).is_none(),
        "2 < DEADLINE_MIN_CALLS"
    );
    grpc_call(&mut c, 5, "/svc/Slow", "4");
    let r = c.ledger.observer.report();
    let d = find(&r, FindingId::DeadlineExceeded).expect("deadline-exceeded");
    assert_eq!(d.evidence.n("grpc_deadline_exceeded"), 3);
    let mut s = 7;
    for i in 0..CANCEL_STORM_MIN {
        c.client(&request(s, "/svc/Watch", true));
        c.client(&fr(3, 0, s, &8u32.to_be_bytes()));
        s += 2;
        let r = c.ledger.observer.report();
        assert_eq!(
            find(&r, FindingId::CancelStorm).is_some(),
            i + 1 == CANCEL_STORM_MIN,
            "{i}"
        );
    }
    let r = c.ledger.observer.report();
    let k = find(&r, FindingId::CancelStorm).unwrap();
    assert_eq!(k.evidence.n("cancels_not_at_deadline"), CANCEL_STORM_MIN);
    // Cancels are not the method's failures.
    assert!(find(&r, FindingId::MethodErrors).is_none());
}

/// Decision 448: a Trailers-Only response whose block crosses the client's RST_STREAM (a stream
/// the ledger holds closed: step `Untracked`, among the recent resets or forgotten after 16
/// later ones) still ends the server's half, so its grpc-status counts, as a full response's
/// trailers crossing the reset do. Fails if only `HalfClosed`/`Ended` steps end a half.
/// Decision 472: unless the reset was the client's CANCEL, already counted as that call's
/// failure: then the status does not count the call again (grpc-js's deadline: the client's
/// RST_STREAM CANCEL and the server's DEADLINE_EXCEEDED cross on the wire).
#[test]
fn a_trailers_only_status_crossing_a_reset_counts_once() {
    let mut c = T::started(&[], &[]);
    for s in (1..=39).step_by(2) {
        c.client(&request(s, "/svc/M", true));
        c.client(&data(s, true, 5));
        // INTERNAL_ERROR (2) but on the last stream, which the client cancels (CANCEL, 8).
        c.client(&rst(s, if s == 39 { 8 } else { 2 }));
    }
    // Stream 1 was reset 19 resets ago (forgotten); 37 and 39 are among the recent resets.
    for s in [1, 37, 39] {
        let unavailable = [("content-type", "application/grpc"), ("grpc-status", "14")];
        c.server(&response(s, true, &unavailable));
    }
    let r = c.report();
    let e = &find(&r, FindingId::CallErrors)
        .expect("call-errors")
        .evidence;
    assert_eq!(e.n("client_cancels"), 1);
    assert_eq!(e.n("grpc_unavailable"), 2);
    assert_eq!(e.n("failed"), 3);
}

/// Decision 448: an END_STREAM repeated on a half the ledger holds closed (step `None`; its
/// sender may send nothing more there, RFC 9113 §5.1) ends nothing again: the request ended at
/// its first (a GET's HEADERS), and a server's HEADERS after its DATA ended its half is no
/// Trailers-Only answer (its grpc-status is not counted). Fails with the flag read as before:
/// `request_us` was the empty DATA's 800 ms, and the three statuses made `call-errors`.
#[test]
fn a_second_end_stream_of_a_closed_half_ends_nothing() {
    let mut c = T::started(&[], &[]);
    c.client(&get(1));
    c.wait(800 * MS);
    c.client(&data(1, true, 0));
    c.wait(400 * MS);
    c.server(&response(1, true, &[]));
    for s in [3, 5, 7] {
        c.client(&request(s, "/svc/M", true));
        c.server(&data(s, true, 5));
        let unavailable = [("content-type", "application/grpc"), ("grpc-status", "14")];
        c.server(&response(s, true, &unavailable));
    }
    let r = c.report();
    let slow = &find(&r, FindingId::SlowCalls).expect("slow-calls").evidence;
    assert_eq!(slow.n("stream"), 1);
    assert_eq!(slow.n("request_us"), 0);
    assert!(find(&r, FindingId::CallErrors).is_none());
}

/// Decision 454: a Trailers-Only answer whose header block a CONTINUATION ends (a HEADERS with
/// END_STREAM and without END_HEADERS, as grpc-go and Go's net/http send a block above one
/// frame: captures/findings/grpcgo-bigstatus.pcap, big503-goh2c.pcap) is read where the block
/// ends: its grpc-status counts, the call's first byte is its HEADERS, and the call ends with
/// the block. Before, the rules read HEADERS and TRAILERS only: no `call-errors`, and no
/// `slow-calls` (the call never ended).
#[test]
fn a_block_ended_by_continuation_is_read_where_it_ends() {
    let mut c = T::started(&[], &[]);
    let block = [
        vec![0x88],
        crate::testkit::lit("content-type", "application/grpc"),
        crate::testkit::lit("grpc-status", "14"),
    ]
    .concat();
    for s in [1, 3, 5] {
        c.client(&request(s, "/svc/M", true));
        c.client(&data(s, true, 5));
        c.wait(1200 * MS);
        // HEADERS with END_STREAM (:status only), then the CONTINUATION with END_HEADERS.
        c.server(&fr(1, 1, s, &block[..1]));
        c.wait(300 * MS);
        c.server(&fr(9, 4, s, &block[1..]));
    }
    let r = c.report();
    let e = &find(&r, FindingId::CallErrors)
        .expect("call-errors")
        .evidence;
    assert_eq!((e.n("grpc_unavailable"), e.n("calls")), (3, 3));
    let slow = &find(&r, FindingId::SlowCalls).expect("slow-calls").evidence;
    assert_eq!(slow.n("slow_calls"), 3);
    // Each write is a millisecond after the one before: the request at 0, its DATA at 1 ms,
    // the HEADERS at 1,202 ms, the CONTINUATION at 1,503 ms.
    assert_eq!(
        (slow.n("duration_us"), slow.n("first_byte_us")),
        (1_503_000, 1_202_000)
    );
}

/// Decision 455: a request whose header block a CONTINUATION ends is read there too: its
/// method (`:path`, in the CONTINUATION), its deadline, and its END_STREAM (on the HEADERS,
/// taking effect with the block). Before, the call was made at the HEADERS, without fields:
/// its method was the empty path.
#[test]
fn a_request_block_ended_by_continuation_names_its_method() {
    let mut c = T::started(&[], &[]);
    let block = [
        vec![0x83, 0x86], // :method POST, :scheme http
        crate::testkit::lit(":path", "/svc/Split"),
        crate::testkit::lit("content-type", "application/grpc"),
        crate::testkit::lit("grpc-timeout", "5S"),
    ]
    .concat();
    for s in (1..=19).step_by(2) {
        // A GET-like request: END_STREAM on its HEADERS, its fields in the CONTINUATION.
        c.client(&fr(1, 1, s, &block[..2]));
        c.client(&fr(9, 4, s, &block[2..]));
        c.wait(1200 * MS);
        let unavailable = [("content-type", "application/grpc"), ("grpc-status", "14")];
        c.server(&response(s, true, &unavailable));
    }
    let r = c.report();
    let m = &find(&r, FindingId::MethodErrors)
        .expect("method-errors")
        .evidence;
    assert_eq!(m.text("method"), "/svc/Split");
    assert_eq!((m.n("method_calls"), m.n("method_failed")), (10, 10));
    let slow = &find(&r, FindingId::SlowCalls).expect("slow-calls").evidence;
    // The request ended with its block (the CONTINUATION, 1 ms after the HEADERS).
    assert_eq!(
        (slow.n("request_us"), slow.n("duration_us")),
        (1_000, 1_202_000)
    );
    let d = &find(&r, FindingId::CallErrors)
        .expect("call-errors")
        .evidence;
    assert_eq!(d.n("grpc_unavailable"), 10);
}
