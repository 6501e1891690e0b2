//! The thresholds, each from the server source that enforces it (docs/findings.md), and the
//! rules on one direction's frames: floods, header blocks, keepalive, BDP pings.

use h2_frame_parser::{ping, ErrorCode, Frame, Kind, SettingId};
use h2ledger_tcp::Nanos;

use crate::ledger::FrameEvent;
use crate::model::{FrameClass, Side};

use super::conn::{ConnF, DirF};
// Defined beside the per-connection state that starts from them (findings/mod.rs).
use super::{FindingId, FindingsConfig};
pub use super::{FRAME_RATE, RESET_BURST, RESET_RATE};

const SEC: Nanos = 1_000_000_000;

/// CONTINUATION frames allowed after one HEADERS: nghttp2 lib/nghttp2_session.h
/// `NGHTTP2_DEFAULT_MAX_CONTINUATIONS` (CVE-2024-28182; CVE-2024-27316 for Apache httpd,
/// CVE-2023-45288 for Go, whose fix in x/net http2/frame.go `readMetaFrame` stops at twice the
/// remaining header list size instead).
pub const MAX_CONTINUATIONS: u64 = 8;
/// ACKs (PING or SETTINGS) a peer may owe before it is a flood: nghttp2 lib/nghttp2_session.h
/// `NGHTTP2_DEFAULT_MAX_OBQ_FLOOD_ITEM` (PING and SETTINGS ACKs queued), Envoy
/// `max_outbound_control_frames` (default 1000, source/common/http/http2/protocol_constraints.cc).
pub const MAX_OWED_ACKS: u64 = 1000;
/// Parameters in one SETTINGS frame: nghttp2 lib/includes/nghttp2/nghttp2.h
/// `NGHTTP2_DEFAULT_MAX_SETTINGS` (ENHANCE_YOUR_CALM beyond; Go x/net http2/server.go allows
/// 100, `settings_big_or_dups`).
pub const MAX_SETTINGS_ENTRIES: u64 = 32;
/// Consecutive HEADERS, CONTINUATION or DATA frames with an empty payload and no END_STREAM:
/// Envoy `max_consecutive_inbound_frames_with_empty_payload` (default 1,
/// source/common/http/http2/protocol_constraints.cc `trackInboundFrames`).
pub const MAX_EMPTY_RUN: u64 = 1;
/// PRIORITY frames per header block (plus one): Envoy `max_inbound_priority_frames_per_stream`
/// (default 100; protocol_constraints.cc `checkInboundFrameLimits`).
pub const PRIORITY_PER_STREAM: u64 = 100;
/// WINDOW_UPDATE frames per DATA frame received: Envoy
/// `max_inbound_window_update_frames_per_data_frame_sent` (default 10; the limit is
/// `1 + 2 * (streams + 10 * DATA frames sent)`).
pub const WINDOW_UPDATES_PER_DATA: u64 = 10;
/// Envoy's premature resets (source/common/http/conn_manager_impl.cc
/// `maybeDrainDueToPrematureResets`, `isPrematureRstStream`): once this many streams have
/// closed, a connection with at least half of them reset prematurely is drained
/// (`overload.premature_reset_total_stream_count`, default 500).
pub const PREMATURE_MIN_STREAMS: u64 = 500;
/// A reset is premature when it comes before the response headers and within this long of the
/// stream's start (`overload.premature_reset_min_stream_lifetime_seconds`, default 1).
pub const PREMATURE_LIFETIME: Nanos = SEC;
/// A header list above this many bytes (RFC 9113 §6.5.2 size) ... Envoy
/// envoy/http/codec.h `DEFAULT_MAX_REQUEST_HEADERS_KB` (60 KiB; Go's net/http allows
/// `DefaultMaxHeaderBytes`, 1 MiB) ...
pub const BOMB_LIST: u64 = 60 * 1024;
/// ... decoded from a block at least this many times smaller: references to the dynamic table
/// (a literal header that large would be on the wire byte for byte).
pub const BOMB_RATIO: u64 = 10;
/// grpc-go internal/transport/http2_server.go `maxPingStrikes` (grpc-java
/// `KeepAliveEnforcer.MAX_PING_STRIKES`): more strikes than this get GOAWAY.
pub const MAX_PING_STRIKES: u64 = 2;
/// grpc-go internal/transport/http2_server.go `defaultPingTimeout` (grpc-java
/// `KeepAliveEnforcer.IMPLICIT_PERMIT_TIME_NANOS`): without PermitWithoutStream, the time a
/// PING must wait after the previous one while no stream is open.
pub const NO_STREAM_PING_TIME: Nanos = 2 * 3600 * SEC;
/// A stream opened this soon after one ended while every slot was taken is a call that waited
/// for the slot (a queued call's HEADERS leaves as soon as the trailers are read).
pub const REFILL_NS: Nanos = 10_000_000;
/// A window held at zero this long while its sender has data is `zero-window`.
pub const ZERO_WINDOW_HOLD: Nanos = SEC;
/// `bdp-ping-per-call`: BDP PINGs per call at or above this ...
pub const BDP_PER_CALL: f64 = 0.5;
/// ... over at least this many calls.
pub const BDP_MIN_CALLS: u64 = 10;

/// `call-errors` fires once failed calls are at least this share of the connection's calls
/// (1 in 20), from the first failure on. Ours: no server closes on failed calls; one in twenty
/// is the error budget of a 95% availability target, below what any SLO accepts.
pub const FAILED_SHARE: f64 = 0.05;
/// ... and at least this many failed calls on the connection (ours, as `DEADLINE_MIN_CALLS`:
/// one failure can be an outlier, a browser cancelling a request it no longer needs or one
/// bad request; three in one connection are a pattern. Decision 386).
pub const FAILED_MIN_CALLS: u64 = 3;
/// `method-errors`: a method (`:path`) with at least this many calls on a connection ...
/// (ours: ten calls before a share is a rate, not one unlucky call) ...
pub const METHOD_MIN_CALLS: u64 = 10;
/// ... of which at least this share failed (ours: half its calls, a method that fails more
/// often than it works; the ordinary captures' methods fail 0%, except the `Fail` method of
/// grpcgo-flow-*, which fails on purpose).
pub const METHOD_FAILED_SHARE: f64 = 0.5;
/// Methods followed per connection (`method-errors`); beyond, calls are counted in
/// `methods_untracked`.
pub const MAX_METHODS: usize = 32;
/// A method's `:path` kept up to this many bytes.
pub const METHOD_PATH_MAX: usize = 120;
/// Calls cut by a GOAWAY noted per connection between two looks of the observer
/// (goaway-retries; beyond, a cut call is counted but not matched to a retry). The calls in
/// flight themselves are kept with their streams (`MAX_FINDING_STREAMS`, decision 385).
pub const MAX_NEW_CUTS: usize = 1024;
/// `deadline-exceeded`: calls that ended past their deadline (grpc-status 4 from the server,
/// or the client's CANCEL at its grpc-timeout), at least this many on a connection (ours: one
/// can be a slow outlier, three in one connection is a pattern; the ordinary captures have
/// none).
pub const DEADLINE_MIN_CALLS: u64 = 3;
/// `cancel-storm`: the client's RST_STREAM CANCEL of calls the server had not ended, not at a
/// deadline, at least this many on a connection ... (ours: the ordinary captures reach 3
/// client RST_STREAMs, docs/findings.md "No false alarm"; far below rapid-reset's Envoy
/// threshold of 500 streams) ...
pub const CANCEL_STORM_MIN: u64 = 10;
/// ... and at least this share of its calls (ours: a quarter; node-http2.pcap cancels 1 of 4,
/// kept out by [`CANCEL_STORM_MIN`]).
pub const CANCEL_STORM_SHARE: f64 = 0.25;

/// `slow-calls`: a call from its request's HEADERS to the response's END_STREAM at least this
/// long (ours: one second, the limit for a user's flow of thought in Nielsen's "Response
/// Times: The 3 Important Limits" (1993); the ordinary captures' calls stay under it).
pub const SLOW_CALL: Nanos = SEC;
/// ... except a gRPC call whose request or whose response alone took at least this long, less
/// its window waits: a client, server or bidirectional stream, long by design (ours: half of
/// [`SLOW_CALL`]; a unary call's request and response are each one write or a few, the
/// streaming calls of ../shared/real-captures send for 2 to 3 s).
pub const STREAMED: Nanos = SLOW_CALL / 2;

/// `method-errors-rise`'s buckets (kept with the method's counters in conn.rs, which the
/// rules read).
pub use super::conn::TREND_BUCKETS;
/// ... each window with at least this many answered calls (ours: [`METHOD_MIN_CALLS`], a
/// share is a rate from ten calls) ...
pub const RISING_MIN_CALLS: u64 = METHOD_MIN_CALLS;
/// ... and the later window's failed share at least this far above the earlier one's (ours:
/// a quarter of the calls, e.g. 0% then 25%, or 10% then 35%: far beyond the run-to-run
/// noise of ten calls' share of a steady failure rate (grpcgo-flow-*'s `Fail` method fails
/// always, the ordinary captures' other methods never).
pub const RISING_STEP: f64 = 0.25;

/// `goaway-retries`: a request on another connection to the same server with the method of a
/// call a GOAWAY cut counts as its retry within this long of the GOAWAY (ours: grpc-go retries
/// a cut call at once on its next transport, h2load and curl not at all; a request of the same
/// method ten seconds later is a new call) ...
pub const RETRY_WINDOW: Nanos = 10 * SEC;
/// ... GOAWAYs with cut calls followed over the run (the oldest dropped beyond) ...
pub const MAX_CUTS: usize = 16;
/// ... and the methods of each one's cut calls (beyond, counted in `cut_untracked`).
pub const MAX_CUT_METHODS: usize = 8;

/// A finding to file once the connection is no longer borrowed.
pub(super) type Fire = (FindingId, Option<Side>, Option<u32>);

/// The rules on one frame of `c` that need no stream state. `out` gets what fires. HEADERS
/// and DATA (most frames) take a short path through the rules that can react to them
/// ([`message_rules`]); every other frame the whole of [`all_rules`].
#[inline(always)]
pub(super) fn frame_rules(
    c: &mut ConnF,
    ev: &FrameEvent<'_>,
    cfg: &FindingsConfig,
    out: &mut Vec<Fire>,
) {
    if matches!(ev.head.kind, Kind::Headers | Kind::Data)
        && matches!(
            ev.class,
            FrameClass::Headers | FrameClass::Trailers | FrameClass::Data
        )
    {
        message_rules(c, ev, out);
    } else {
        all_rules(c, ev, cfg, out);
    }
}

/// Envoy's empty-frame count on one direction: an empty HEADERS, CONTINUATION or DATA frame
/// (`counts`: not one that ends the stream) lengthens the run, any other ends it.
#[inline(always)]
fn empty_run(df: &mut DirF, ev: &FrameEvent<'_>, side: Side, counts: bool, out: &mut Vec<Fire>) {
    let empty = if ev.head.kind == Kind::Data {
        // Whether or not its payload was loaded (an observer wanted it, or the analysis runs
        // on its own thread and is sent every payload): no data without Pad Length and
        // padding (decision 275).
        ev.head.length == ev.padding
    } else {
        match ev.frame {
            // Envoy counts `length - padding`: a PRIORITY field's 5 octets are not empty.
            Some(Frame::Headers(x)) => x.fragment.is_empty() && !ev.head.flags.is_priority(),
            Some(Frame::Continuation(x)) => x.fragment.is_empty(),
            // Unread payload (a frame cut by a gap): empty only when the frame is.
            _ => ev.head.length == 0,
        }
    };
    if empty && counts {
        df.empty_run += 1;
        df.empty_frames += 1;
        df.max_empty_run = df.max_empty_run.max(df.empty_run);
        if df.empty_run > MAX_EMPTY_RUN {
            out.push((FindingId::EmptyFramesFlood, Some(side), None));
        }
    } else {
        df.empty_run = 0;
    }
}

/// [`all_rules`] for a HEADERS or DATA frame classified as a header block or DATA: the same
/// rules, those that cannot react to it left out (no control-frame count, no PING, SETTINGS
/// or GOAWAY rule, no CONTINUATION count).
#[inline(always)]
fn message_rules(c: &mut ConnF, ev: &FrameEvent<'_>, out: &mut Vec<Fire>) {
    let d = ev.dir;
    let side = ev.side;
    let end = ev.head.flags.is_end_stream();
    // Envoy's empty-frame count, on the client's frames while every frame is seen.
    if !c.lossy && side == Side::Client {
        empty_run(&mut c.dirs[d], ev, side, !end, out);
    }
    let df = &mut c.dirs[d];
    if ev.head.kind == Kind::Data {
        df.data_frames += 1;
    } else if ev.head.flags.is_end_headers() {
        df.block_open = false;
        df.header_blocks += 1;
    } else {
        df.block_open = true;
        df.block_stream = ev.head.stream_id.0;
        df.continuations = 0;
    }
    if let Some(b) = ev.block {
        bomb(c, ev, b.list, b.encoded, out);
    }
    if side == Side::Server {
        // grpc-go `setResetPingStrikes`: the server wrote HEADERS or DATA.
        c.ka_reset = true;
    } else if ev.class == FrameClass::Headers && !c.grpc && c.calls < 64 {
        grpc_request(c, ev);
    }
}

/// An HPACK bomb: a header list above [`BOMB_LIST`] from a block [`BOMB_RATIO`] times smaller.
#[inline(always)]
fn bomb(c: &mut ConnF, ev: &FrameEvent<'_>, list: u64, encoded: u32, out: &mut Vec<Fire>) {
    if list > BOMB_LIST && list >= BOMB_RATIO * u64::from(encoded.max(1)) {
        let df = &mut c.dirs[ev.dir];
        df.bombs += 1;
        if list > df.max_list {
            df.max_list = list;
            df.bomb_encoded = u64::from(encoded);
        }
        out.push((
            FindingId::HpackBomb,
            Some(ev.side),
            Some(ev.head.stream_id.0),
        ));
    }
}

/// The first requests tell whether the connection is gRPC (a channel carries one kind).
fn grpc_request(c: &mut ConnF, ev: &FrameEvent<'_>) {
    if let Some(h) = ev.headers {
        if h.known(crate::Known::ContentType)
            .is_some_and(|v| v.starts_with(b"application/grpc"))
        {
            c.grpc = true;
        }
    }
}

/// The rules on any frame (see [`frame_rules`]).
#[inline(never)]
fn all_rules(c: &mut ConnF, ev: &FrameEvent<'_>, cfg: &FindingsConfig, out: &mut Vec<Fire>) {
    let d = ev.dir;
    let side = ev.side;
    let sid = ev.head.stream_id.0;
    let end = ev.head.flags.is_end_stream();
    if ev.class.is_control() {
        c.dirs[d].control_frames += 1;
    }
    // Rules that compare counts of frames (one kind against another, or a run of frames) hold
    // only while the capture holds every frame: after a gap that lost framing they stop for
    // this connection. Envoy's three inbound-frame limits guard a server from its clients:
    // they are applied to the client's frames (a server's early per-stream WINDOW_UPDATE comes
    // before its own header block, legitimately).
    let counted = !c.lossy;
    let envoy = counted && side == Side::Client;
    // Envoy's empty-frame count: HEADERS, CONTINUATION and DATA frames only.
    if envoy
        && matches!(
            ev.head.kind,
            Kind::Headers | Kind::Continuation | Kind::Data
        )
    {
        let counts = !(end && ev.head.kind != Kind::Continuation);
        empty_run(&mut c.dirs[d], ev, side, counts, out);
    }
    match ev.head.kind {
        Kind::Headers | Kind::PushPromise => {
            let df = &mut c.dirs[d];
            if ev.head.flags.is_end_headers() {
                df.block_open = false;
                df.header_blocks += 1;
            } else {
                df.block_open = true;
                df.block_stream = sid;
                df.continuations = 0;
            }
        }
        Kind::Continuation => {
            let df = &mut c.dirs[d];
            df.continuations += 1;
            df.max_continuations = df.max_continuations.max(df.continuations);
            if df.continuations == MAX_CONTINUATIONS + 1 {
                df.blocks_over += 1;
                out.push((FindingId::ContinuationFlood, Some(side), Some(sid)));
            }
            if ev.head.flags.is_end_headers() {
                df.block_open = false;
                df.header_blocks += 1;
            }
        }
        Kind::Data => c.dirs[d].data_frames += 1,
        Kind::Priority => {
            let df = &mut c.dirs[d];
            df.priority += 1;
            if envoy && df.priority > PRIORITY_PER_STREAM * (1 + df.header_blocks) {
                out.push((FindingId::PriorityFlood, Some(side), None));
            }
        }
        Kind::WindowUpdate => {
            let data = c.dirs[d.other()].data_frames;
            let df = &mut c.dirs[d];
            df.window_updates += 1;
            if envoy
                && df.window_updates > 1 + 2 * (df.header_blocks + WINDOW_UPDATES_PER_DATA * data)
            {
                out.push((FindingId::WindowUpdateFlood, Some(side), None));
            }
        }
        _ => {}
    }
    if let Some(b) = ev.block {
        bomb(c, ev, b.list, b.encoded, out);
    }
    match (ev.class, ev.frame) {
        (FrameClass::Ping, _) => {
            let payload = match ev.frame {
                Some(Frame::Ping(p)) => Some(p.payload),
                _ => None,
            };
            ping_sent(c, ev, payload, counted, cfg, out);
        }
        (FrameClass::PingAck, _) => {
            // A round trip as the capture point sees it: the PING this ACK answers, as the
            // connection model matched it (FrameEvent::ping).
            if let crate::PingFact::Acked { sent } = ev.ping {
                let rtt = (ev.ts - sent).max(0);
                c.rtt_min_ns = if c.rtts == 0 {
                    rtt
                } else {
                    c.rtt_min_ns.min(rtt)
                };
                c.rtts += 1;
            }
        }
        (FrameClass::Settings, f) => {
            let df = &mut c.dirs[d];
            df.settings += 1;
            if counted && df.settings_owed > 0 && df.settings_rate.drain(ev.ts) {
                df.settings_rate_hits += 1;
                out.push((FindingId::SettingsFlood, Some(side), None));
            }
            df.settings_owed += 1;
            df.max_settings_owed = df.max_settings_owed.max(df.settings_owed);
            if counted && df.settings_owed > MAX_OWED_ACKS {
                out.push((FindingId::SettingsFlood, Some(side), None));
            }
            if let Some(Frame::Settings(s)) = f {
                let n = s.len() as u64;
                df.max_settings_entries = df.max_settings_entries.max(n);
                if n > MAX_SETTINGS_ENTRIES {
                    out.push((FindingId::SettingsFlood, Some(side), None));
                }
                if side == Side::Server {
                    if let Some(v) = s.get(SettingId::MAX_CONCURRENT_STREAMS) {
                        c.slots.pending = Some(v);
                    }
                }
                if let Some(v) = s.get(SettingId::INITIAL_WINDOW_SIZE) {
                    c.initial[side.index()] = i64::from(v);
                }
            }
        }
        (FrameClass::SettingsAck, _) => {
            let df = &mut c.dirs[d.other()];
            df.settings_owed = df.settings_owed.saturating_sub(1);
            if side == Side::Client {
                if let Some(v) = c.slots.pending.take() {
                    c.slots.limit = Some(v);
                }
            }
        }
        (FrameClass::Headers | FrameClass::Trailers | FrameClass::Data, _)
            if side == Side::Server =>
        {
            // grpc-go `setResetPingStrikes`: the server wrote HEADERS or DATA.
            c.ka_reset = true;
        }
        // The first requests tell whether the connection is gRPC (a channel carries one kind).
        (FrameClass::Headers, _) if side == Side::Client && !c.grpc && c.calls < 64 => {
            grpc_request(c, ev);
        }
        (FrameClass::GoAway, Some(Frame::GoAway(g))) if side == Side::Server => {
            let calm = g.code == ErrorCode::ENHANCE_YOUR_CALM;
            if calm && g.debug.windows(14).any(|w| w == b"too_many_pings") {
                let ka = c.ka.get_or_insert_with(Box::default);
                ka.goaway_at.get_or_insert(ev.ts);
                let struck = ka.total_strikes > 0;
                out.push((FindingId::TooManyPings, Some(Side::Client), None));
                // A gRPC server's answer: the strikes before it (not filed while the
                // connection was not known to be gRPC) are filed now, from the first.
                if struck {
                    c.grpc = true;
                    out.push((FindingId::KeepaliveStrikes, Some(Side::Client), None));
                }
            }
        }
        _ => {}
    }
}

/// A PING (not an ACK) from `ev.dir`: the flood rules, the BDP count and, from the client, the
/// server's keepalive enforcement.
fn ping_sent(
    c: &mut ConnF,
    ev: &FrameEvent<'_>,
    payload: Option<[u8; 8]>,
    counted: bool,
    cfg: &FindingsConfig,
    out: &mut Vec<Fire>,
) {
    let side = ev.side;
    let df = &mut c.dirs[ev.dir];
    df.pings += 1;
    // PINGs owed an ACK before this one, as the connection model counts them.
    let owed = match ev.ping {
        crate::PingFact::Sent { owed } => owed,
        _ => 0,
    };
    if counted && owed > 0 {
        // Sent before the previous one's ACK came: a prober waits for its ACK, a flood not.
        df.pings_pipelined += 1;
        if df.ping_rate.drain(ev.ts) {
            df.ping_rate_hits += 1;
            out.push((FindingId::PingFlood, Some(side), None));
        }
    }
    df.max_pings_owed = df.max_pings_owed.max(owed + 1);
    if counted && owed + 1 > MAX_OWED_ACKS {
        out.push((FindingId::PingFlood, Some(side), None));
    }
    if payload == Some(ping::GRPC_GO_BDP) {
        // Only grpc-go sends this payload: the connection is gRPC.
        c.grpc = true;
        let df = &mut c.dirs[ev.dir];
        df.bdp_pings += 1;
        let n = df.bdp_pings;
        if c.calls >= BDP_MIN_CALLS && n as f64 >= BDP_PER_CALL * c.calls as f64 {
            out.push((FindingId::BdpPingPerCall, Some(side), None));
        }
    }
    if side == Side::Client {
        keepalive(c, ev.ts, cfg, out);
    }
}

/// grpc-go `http2Server.handlePing` (internal/transport/http2_server.go), on the server's side of
/// the wire: a client PING sooner than the policy's minimum after the previous one, with no
/// HEADERS or DATA written by the server in between, is a strike; more than
/// [`MAX_PING_STRIKES`] get GOAWAY ENHANCE_YOUR_CALM "too_many_pings". Every PING sets the time
/// the next is measured from; the first PING is never a strike.
fn keepalive(c: &mut ConnF, ts: Nanos, cfg: &FindingsConfig, out: &mut Vec<Fire>) {
    let reset = std::mem::take(&mut c.ka_reset);
    let ka = c.ka.get_or_insert_with(Box::default);
    ka.remember(ts);
    let prev = ka.last_ping.replace(ts);
    if reset {
        ka.strikes = 0;
        return;
    }
    let min = if c.server_active < 1 && !cfg.permit_without_stream {
        NO_STREAM_PING_TIME
    } else {
        cfg.keepalive_min_time
    };
    let Some(p) = prev else {
        return;
    };
    // `lastPingAt.Add(minTime).After(now)`.
    if p.saturating_add(min) > ts {
        ka.strikes += 1;
        ka.total_strikes += 1;
        ka.last_gap = ts - p;
        ka.last_min = min;
        if ka.strikes > MAX_PING_STRIKES && ka.fatal_at.is_none() {
            ka.fatal_at = Some(ts);
        }
        ka.first_strike.get_or_insert(ts);
        // Only gRPC servers enforce this: filed once the connection is known to be gRPC (a
        // gRPC request, grpc-go's BDP PING), or when the server's GOAWAY says so.
        if c.grpc {
            out.push((FindingId::KeepaliveStrikes, Some(Side::Client), None));
        }
    }
}
