//! Failed calls (issue 38): `call-errors` (responses with a gRPC status other than OK or an
//! HTTP status of 500 or more, and calls the client cancelled with RST_STREAM CANCEL) and
//! `goaway-cut-calls` (client streams above a server GOAWAY's last_stream_id: not processed).
//! A few counters per connection ([`Failures`]); each call in flight ([`CallF`]: its method,
//! deadline and times) is kept with its stream in the findings' one stream table
//! ([`super::conn::StreamF`], capped by [`super::MAX_FINDING_STREAMS`]). From the same counters:
//! `method-errors`
//! (a method, by `:path`, that fails at least half of its calls; at most
//! [`super::rules::MAX_METHODS`] methods per connection), `deadline-exceeded` (calls past their
//! deadline) and `cancel-storm` (the client cancelling many of its calls, not at a deadline).
//! The thresholds are in rules.rs, with their justification.

use h2_frame_parser::{ErrorCode, Frame};

use crate::ledger::FrameEvent;
use crate::model::{FrameClass, Side};
use crate::Known;

use h2ledger_tcp::Nanos;

use super::conn::{CallF, ConnF, MethodF, SlowF, SERVER_END};
use super::rules::{
    Fire, CANCEL_STORM_MIN, CANCEL_STORM_SHARE, DEADLINE_MIN_CALLS, FAILED_MIN_CALLS, FAILED_SHARE,
    MAX_METHODS, MAX_NEW_CUTS, METHOD_FAILED_SHARE, METHOD_MIN_CALLS, METHOD_PATH_MAX, REFILL_NS,
    RISING_MIN_CALLS, RISING_STEP, SLOW_CALL, STREAMED,
};
use super::FindingId;

/// Evidence keys of the failed gRPC statuses, by code (`grpc_` and the name in lower case);
/// code 0 (OK) is never counted, codes above 16 count as `grpc_other`.
pub const GRPC_KEYS: [&str; 18] = [
    "grpc_ok",
    "grpc_cancelled",
    "grpc_unknown",
    "grpc_invalid_argument",
    "grpc_deadline_exceeded",
    "grpc_not_found",
    "grpc_already_exists",
    "grpc_permission_denied",
    "grpc_resource_exhausted",
    "grpc_failed_precondition",
    "grpc_aborted",
    "grpc_out_of_range",
    "grpc_unimplemented",
    "grpc_internal",
    "grpc_unavailable",
    "grpc_data_loss",
    "grpc_unauthenticated",
    "grpc_other",
];

/// A `grpc-timeout` value (gRPC over HTTP2, PROTOCOL-HTTP2.md: up to 8 digits and a unit of
/// H, M, S, m, u or n) in nanoseconds.
pub(super) fn grpc_timeout(v: &[u8]) -> Option<i64> {
    let (&unit, digits) = v.split_last()?;
    if digits.is_empty() || digits.len() > 8 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n: i64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    let per: i64 = match unit {
        b'H' => 3_600_000_000_000,
        b'M' => 60_000_000_000,
        b'S' => 1_000_000_000,
        b'm' => 1_000_000,
        b'u' => 1_000,
        b'n' => 1,
        _ => return None,
    };
    n.checked_mul(per)
}

/// A header value's decimal number (`200`, ` 5 `), without going through `str` (this runs on
/// every response's header block).
fn number(v: &[u8]) -> Option<u32> {
    // The common value: a `:status` of three digits, as HPACK's static table and every server
    // write it.
    if let &[a, b, c] = v {
        if a.is_ascii_digit() && b.is_ascii_digit() && c.is_ascii_digit() {
            return Some(
                u32::from(a - b'0') * 100 + u32::from(b - b'0') * 10 + u32::from(c - b'0'),
            );
        }
    }
    let v = v.trim_ascii();
    if v.is_empty() || v.len() > 9 {
        return None;
    }
    v.iter().try_fold(0u32, |n, &b| {
        b.is_ascii_digit().then(|| n * 10 + u32::from(b - b'0'))
    })
}

/// The call in flight on `sid`: its stream is followed and the server has not ended it (the
/// rules run before the stream table takes the frame, so the frame that ends the call still
/// finds it).
fn live_call(c: &mut ConnF, sid: u32) -> Option<&mut CallF> {
    live_stream(c, sid).map(|st| &mut st.call)
}

/// The record of the stream whose call is in flight on `sid` (see [`live_call`]), for the
/// rules that also read its start (`opened`).
fn live_stream(c: &mut ConnF, sid: u32) -> Option<&mut super::conn::StreamF> {
    c.streams
        .get_mut(sid)
        .filter(|st| st.bits & SERVER_END == 0)
}

/// The table slot of the stream whose call is in flight on `sid` (see [`live_stream`]): found
/// once for the rules of a response's header block, which neither add nor remove a stream.
/// The lookup goes to `found` too, for the stream table's own rules of the same frame
/// ([`super::streams::stream_frame`]; decision 476).
fn live_slot(c: &ConnF, sid: u32, found: &mut Found) -> Option<usize> {
    let slot = c.streams.find(sid);
    *found = Some(slot);
    slot.filter(|&i| {
        c.streams
            .slot(i)
            .is_some_and(|st| st.bits & SERVER_END == 0)
    })
}

/// The slot of a frame's stream in the connection's stream table, when the failure rules
/// looked it up (`None`: they did not; `Some(None)`: not in the table). The rules add and
/// remove no stream, so it holds until the stream table's rules of the same frame.
pub(super) type Found = Option<Option<usize>>;

/// The stream in `slot` (from [`live_slot`], the table unchanged since).
fn at_slot(c: &mut ConnF, slot: Option<usize>) -> Option<&mut super::conn::StreamF> {
    slot.and_then(|i| c.streams.slot_mut(i))
}

/// The failure rules of one frame. A request (the client's HEADERS) fills `call`, which the
/// stream table keeps with the stream it opens.
#[inline]
pub(super) fn frame(
    c: &mut ConnF,
    ev: &FrameEvent<'_>,
    call: &mut CallF,
    out: &mut Vec<Fire>,
    found: &mut Found,
) {
    let server = ev.side == Side::Server;
    let sid = ev.head.stream_id.0;
    // A server's header block is read where it ends, as the frame that opened it was
    // classified: a response or trailers split over CONTINUATION frames is one block
    // (decision 454). A request's HEADERS opens the call where the stream opens.
    let class = match ev.block_class() {
        Some(b) if server => b,
        _ => ev.class,
    };
    match class {
        FrameClass::Headers | FrameClass::Trailers if server => {
            let slot = live_slot(c, sid, found);
            if ev.class == FrameClass::Headers && ev.opened.is_none() {
                // A response's first block that CONTINUATION frames end: its first byte is
                // this HEADERS, its fields are read where the block ends.
                first_byte(c, slot, ev.ts);
            }
            let Some(h) = ev.headers else {
                return;
            };
            let ends = class == FrameClass::Trailers || ev.ends_half();
            // A response that crossed the client's RST_STREAM CANCEL on the wire (both sides'
            // deadline timers, say): the call's failure was counted at the cancel, once
            // (decision 472).
            if c.fail.cancelled.crossed(sid, ends) {
                return;
            }
            // grpc-status ends a call: in its trailers, or in a Trailers-Only response, which
            // ends the stream too (gRPC's PROTOCOL-HTTP2.md); `:status` is in the first block.
            // Whether the block ends the server's half is the ledger's word (decisions 448,
            // 454: on the frame that ends the block).
            let grpc = if ends {
                h.known(Known::GrpcStatus).and_then(number)
            } else {
                None
            };
            let status = || match class {
                FrameClass::Headers => h.known(Known::Status).and_then(number),
                _ => None,
            };
            let mut http = None;
            let failed = match grpc {
                Some(0) => false,
                Some(code) => {
                    c.fail.grpc[(code as usize).min(17)] += 1;
                    true
                }
                None => match status() {
                    Some(s @ 400..=499) => {
                        http = Some(s);
                        c.fail.http_4xx += 1;
                        false
                    }
                    Some(s @ 500..) => {
                        http = Some(s);
                        c.fail.http_5xx += 1;
                        true
                    }
                    s => {
                        http = s;
                        false
                    }
                },
            };
            // The call's outcome is known: its grpc-status, or an HTTP response that is not
            // gRPC (its first block's :status; a gRPC response's status is in its trailers).
            let grpc_reply = || {
                h.known(Known::ContentType)
                    .is_some_and(|v| v.starts_with(b"application/grpc"))
            };
            if class == FrameClass::Headers {
                first_byte(c, slot, ev.ts);
            }
            if grpc.is_some() || ends || (http.is_some_and(|s| s >= 200) && !grpc_reply()) {
                method_end(c, slot, failed, grpc, http, out);
            }
            if ends {
                call_end(c, sid, slot, ev.ts, out);
            }
            if failed {
                judge(c, out);
            }
            if grpc == Some(4) {
                judge_deadline(c, out);
            }
        }
        FrameClass::Headers if !server && ev.opened.is_none() => {
            // A request block that CONTINUATION frames end: its stream's record is made now,
            // its call (`:path`, `grpc-timeout`, END_STREAM) where the block ends.
            *call = CallF {
                method: u16::MAX,
                ..CallF::default()
            };
        }
        FrameClass::Headers if !server => *call = request(c, ev, out),
        FrameClass::Continuation if !server && ev.block_class() == Some(FrameClass::Headers) => {
            let mut made = request(c, ev, out);
            if let Some(st) = live_stream(c, sid) {
                made.window_ns = st.call.window_ns;
                st.call = made;
            }
        }
        FrameClass::RstStream if !server => {
            if let Some(Frame::RstStream(r)) = ev.frame {
                // A call cancelled before the server ended it (not one it answered already,
                // counted by its status).
                let open = c
                    .streams
                    .get(sid)
                    .is_some_and(|st| st.bits & SERVER_END == 0);
                let cancel = r.code == ErrorCode::CANCEL && open;
                if cancel {
                    c.fail.client_cancels += 1;
                    c.fail.cancelled.add(sid);
                    let deadline = live_call(c, sid).map_or(0, |call| call.deadline);
                    // Within a millisecond: the client's timer and its write.
                    let at_deadline = deadline > 0 && ev.ts >= deadline - 1_000_000;
                    c.fail.deadline_cancels += u64::from(at_deadline);
                    judge(c, out);
                    if at_deadline {
                        judge_deadline(c, out);
                    } else {
                        judge_cancels(c, out);
                    }
                }
                method_reset(c, sid, cancel);
            }
        }
        FrameClass::RstStream => method_reset(c, sid, false),
        FrameClass::GoAway if server => {
            if let Some(Frame::GoAway(g)) = ev.frame {
                let l = g.last_stream_id;
                c.fail.goaways += 1;
                c.fail.goaway_code = g.code.0;
                c.fail.last_stream_id = Some(l);
                // Client streams in flight above it (each counted once over GOAWAYs that lower
                // the id: grpc-go's graceful close sends 2^31-1, then the real id).
                let upto = if c.fail.goaways == 1 {
                    u32::MAX
                } else {
                    c.fail.counted_above
                };
                let cut = c
                    .streams
                    .keys()
                    .filter(|&k| k > l && k <= upto && k & 1 == 1)
                    .count() as u64;
                c.fail.counted_above = l.min(upto);
                let cut_methods: Vec<u16> = c
                    .streams
                    .iter()
                    .filter(|&(k, st)| {
                        k > l && k <= upto && k & 1 == 1 && st.bits & SERVER_END == 0
                    })
                    .map(|(_, st)| st.call.method)
                    .collect();
                for m in cut_methods {
                    note_cut(c, m);
                }
                if cut > 0 {
                    let first = c.streams.keys().filter(|&k| k > l).min();
                    c.fail.cut += cut;
                    out.push((FindingId::GoawayCutCalls, Some(Side::Server), first));
                }
            }
        }
        _ => {}
    }
}

/// A request's header block, where it ends (its HEADERS, or the CONTINUATION that ends it,
/// decision 454): its call (method, deadline, END_STREAM), and `goaway-cut-calls` for a
/// stream above a GOAWAY's last_stream_id.
fn request(c: &mut ConnF, ev: &FrameEvent<'_>, out: &mut Vec<Fire>) -> CallF {
    let sid = ev.head.stream_id.0;
    let (method, grpc, timeout) = request_fields(c, ev);
    let mut call = method_start(c, ev, method, grpc);
    if ev.ends_half() {
        call.req_end = ev.ts;
    }
    if let Some(t) = timeout {
        let f = &mut c.fail;
        f.timeout_min = if f.timeouts == 0 {
            t
        } else {
            f.timeout_min.min(t)
        };
        f.timeout_max = f.timeout_max.max(t);
        f.timeouts += 1;
        call.deadline = ev.ts.saturating_add(t).max(1);
    }
    if let Some(l) = c.fail.last_stream_id {
        if sid > l && sid & 1 == 1 {
            c.fail.cut += 1;
            note_cut(c, call.method);
            out.push((FindingId::GoawayCutCalls, Some(Side::Server), Some(sid)));
        }
    }
    call
}

/// What a request's block tells the failure rules: its method's index in `methods` (found,
/// or added while there is room; `u16::MAX` and counted untracked beyond), whether it is gRPC,
/// and its `grpc-timeout`. Read once a filling of the ledger's list: a block with the stamp of
/// the last one read holds the same fields, and its answers are the last one's (decision 475).
fn request_fields(c: &mut ConnF, ev: &FrameEvent<'_>) -> (u16, bool, Option<i64>) {
    let stamp = ev.headers.map_or(0, crate::HeaderList::stamp);
    let f = &mut c.fail;
    let (last, i, grpc, timeout) = f.last_request;
    if stamp != 0 && stamp == last {
        if i == u16::MAX {
            f.methods_untracked += 1;
        }
        return (i, grpc, timeout);
    }
    let path = ev.headers.and_then(|h| h.known(Known::Path)).unwrap_or(b"");
    let path = &path[..path.len().min(METHOD_PATH_MAX)];
    let i = match f.methods.iter().position(|m| &*m.path == path) {
        Some(i) => i as u16,
        None if f.methods.len() < MAX_METHODS => {
            // One method at a time (most connections call one or two): a MethodF is 192 bytes,
            // and a Vec's first growth would make room for four.
            f.methods.reserve_exact(1);
            f.methods.push(MethodF {
                path: path.into(),
                ..MethodF::default()
            });
            (f.methods.len() - 1) as u16
        }
        None => {
            f.methods_untracked += 1;
            u16::MAX
        }
    };
    let grpc = ev
        .headers
        .and_then(|h| h.known(Known::ContentType))
        .is_some_and(|v| v.starts_with(b"application/grpc"));
    let timeout = ev
        .headers
        .and_then(|h| h.known(Known::GrpcTimeout))
        .and_then(grpc_timeout);
    f.last_request = (stamp, i, grpc, timeout);
    (i, grpc, timeout)
}

/// The response to the call on `sid` began at `ts`, unless it began before.
fn first_byte(c: &mut ConnF, slot: Option<usize>, ts: Nanos) {
    if let Some(st) = at_slot(c, slot) {
        if st.call.first_byte == 0 {
            st.call.first_byte = ts;
        }
    }
}

/// A request: its method (`:path`), followed until the call ends, and its times.
fn method_start(c: &mut ConnF, ev: &FrameEvent<'_>, i: u16, grpc: bool) -> CallF {
    // The most this call can have waited for a stream slot: it opened within REFILL_NS of a
    // slot freeing after a stretch when all were taken (stream-slots-full's refill).
    let slot_ns = match c.slots.freed_at {
        Some(t) if c.slots.limit.is_some() && ev.ts - t <= REFILL_NS => {
            c.slots.last_full_ns + (ev.ts - t)
        }
        _ => 0,
    };
    if let Some(m) = c.fail.methods.get_mut(usize::from(i)) {
        if m.calls == 0 {
            m.trend.t0 = ev.ts;
        }
        m.calls += 1;
    }
    CallF {
        method: i,
        grpc,
        slot_ns,
        ..CallF::default()
    }
}

/// A call of method `method` was cut by a GOAWAY: the method goes to the run's list of cut
/// calls that a retry on another connection may match (goaway-retries; drained by the
/// observer).
fn note_cut(c: &mut ConnF, method: u16) {
    let f = &mut c.fail;
    if let Some(m) = f.methods.get(usize::from(method)) {
        if f.new_cut.len() < MAX_NEW_CUTS {
            f.new_cut.push(m.path.clone());
        }
    }
}

/// A DATA frame that ends its sender's half ([`FrameEvent::ends_half`]): the request's end
/// (client) or the call's (server).
pub(super) fn data_end(c: &mut ConnF, ev: &FrameEvent<'_>, out: &mut Vec<Fire>, found: &mut Found) {
    let sid = ev.head.stream_id.0;
    if ev.side == Side::Client {
        if let Some(call) = live_call(c, sid) {
            call.req_end = ev.ts;
        }
    } else {
        let slot = live_slot(c, sid, found);
        call_end(c, sid, slot, ev.ts, out);
    }
}

/// The call on `sid` is over at `ts` (the server's END_STREAM): its time split, and
/// `slow-calls` when it took [`SLOW_CALL`] or more.
fn call_end(c: &mut ConnF, sid: u32, slot: Option<usize>, ts: Nanos, out: &mut Vec<Fire>) {
    // Its start first: most calls are not slow, and their record is not copied (decision 475).
    let Some(start) = at_slot(c, slot).map(|st| st.opened) else {
        return;
    };
    let duration = ts - start;
    if duration < SLOW_CALL {
        return;
    }
    slow_call(c, sid, slot, start, duration, out);
}

/// [`call_end`] of a call that took [`SLOW_CALL`] or more.
#[cold]
fn slow_call(
    c: &mut ConnF,
    sid: u32,
    slot: Option<usize>,
    start: Nanos,
    duration: Nanos,
    out: &mut Vec<Fire>,
) {
    let Some(call) = at_slot(c, slot).map(|st| st.call) else {
        return;
    };
    let at = |t: Nanos| {
        if t > 0 {
            (t - start).max(0)
        } else {
            duration
        }
    };
    let first = at(call.first_byte);
    // A gRPC request or response that takes half the threshold by itself, beyond its window
    // waits, is a client or server stream: slow by design (a long-lived Watch, an upload).
    let request = at(call.req_end);
    let streamed = |ns: i64| ns - call.window_ns >= STREAMED;
    if call.grpc && (streamed(request) || streamed(duration - first)) {
        c.fail.streamed_long += 1;
        return;
    }
    let s = SlowF {
        stream: sid,
        method: call.method,
        duration_ns: duration,
        request_ns: request,
        first_byte_ns: first,
        response_ns: duration - first,
        window_ns: call.window_ns,
        slot_ns: call.slot_ns,
    };
    let f = &mut c.fail;
    f.slow += 1;
    // The slowest as its caller waited: a slot's wait before the call counts too.
    if f.slowest.is_none_or(|x| {
        x.duration_ns.saturating_add(x.slot_ns) < duration.saturating_add(call.slot_ns)
    }) {
        f.slowest = Some(s);
    }
    out.push((FindingId::SlowCalls, Some(Side::Server), Some(sid)));
}

/// A stall of either side on `sid` lasted `ns` (slow-calls' window wait).
pub(super) fn stalled(c: &mut ConnF, sid: u32, ns: i64) {
    if let Some(call) = live_call(c, sid) {
        call.window_ns += ns;
    }
}

/// The call on `sid` ended with the server's answer: `failed` (its gRPC status or HTTP status).
fn method_end(
    c: &mut ConnF,
    slot: Option<usize>,
    failed: bool,
    grpc: Option<u32>,
    http: Option<u32>,
    out: &mut Vec<Fire>,
) {
    let Some(st) = at_slot(c, slot) else {
        return;
    };
    if std::mem::replace(&mut st.call.judged, true) {
        return;
    }
    let (i, start) = (st.call.method, st.opened);
    let Some(m) = c.fail.methods.get_mut(usize::from(i)) else {
        return;
    };
    m.trend.add(start, failed);
    if failed {
        m.failed += 1;
        match (grpc, http) {
            (Some(code), _) => m.grpc[(code as usize).min(17)] += 1,
            (None, Some(500..)) => m.http_5xx += 1,
            _ => {}
        }
    }
    // At every end, not only a failure's: failures first and the tenth call later still
    // make the share.
    judge_method(c, usize::from(i), out);
    judge_rising(c, usize::from(i), out);
}

/// `method-errors-rise` when method `i`'s later window has a failed share
/// [`RISING_STEP`] above its earlier one's, each window with [`RISING_MIN_CALLS`] answered
/// calls (decision 380).
fn judge_rising(c: &mut ConnF, i: usize, out: &mut Vec<Fire>) {
    let f = &mut c.fail;
    let Some(m) = f.methods.get_mut(i) else {
        return;
    };
    // A rise needs failures in the later window: a method that never failed (the ordinary
    // call) has none, and its windows are not summed.
    if m.failed == 0 {
        return;
    }
    let Some(h) = m.trend.halves() else {
        return;
    };
    if h.earlier[0] < RISING_MIN_CALLS || h.later[0] < RISING_MIN_CALLS || h.rise() < RISING_STEP {
        return;
    }
    if !std::mem::replace(&mut m.rose, true) {
        f.methods_rising += 1;
    }
    // The method's latest windows while the rule holds, or another method's steeper rise.
    if f.rising
        .is_none_or(|(j, r)| usize::from(j) == i || h.rise() >= r.rise())
    {
        f.rising = Some((i as u16, h));
    }
    out.push((FindingId::MethodErrorsRise, Some(Side::Server), None));
}

/// A RST_STREAM on `sid`: the call is over; `cancel`, the client cancelled it (counted apart:
/// `method-errors` is about the server's answers).
fn method_reset(c: &mut ConnF, sid: u32, cancel: bool) {
    let Some(&mut call) = live_call(c, sid) else {
        return;
    };
    // Not a failure of the method: the client gave up (deadline-exceeded, cancel-storm).
    if let Some(m) = c.fail.methods.get_mut(usize::from(call.method)) {
        m.cancels += u64::from(cancel);
    }
}

/// `method-errors` when method `i` has [`METHOD_MIN_CALLS`] calls and [`METHOD_FAILED_SHARE`]
/// of them failed.
fn judge_method(c: &mut ConnF, i: usize, out: &mut Vec<Fire>) {
    let Some(m) = c.fail.methods.get(i) else {
        return;
    };
    // A method that never failed is under any share above 0 (the ordinary call ends here).
    const _: () = assert!(METHOD_FAILED_SHARE > 0.0);
    if m.failed == 0 {
        return;
    }
    if m.calls >= METHOD_MIN_CALLS && m.failed as f64 >= METHOD_FAILED_SHARE * m.calls as f64 {
        out.push((FindingId::MethodErrors, Some(Side::Server), None));
    }
}

/// The method that fails most: the most failed calls among those over the threshold, else
/// overall (the evidence of `method-errors`), and how many methods are over the threshold.
pub(super) fn worst_method(f: &super::conn::Failures) -> (Option<&MethodF>, u64) {
    let over = |m: &&MethodF| {
        m.calls >= METHOD_MIN_CALLS && m.failed as f64 >= METHOD_FAILED_SHARE * m.calls as f64
    };
    let n = f.methods.iter().filter(over).count() as u64;
    let worst = f
        .methods
        .iter()
        .filter(|m| n == 0 || over(m))
        .max_by(|a, b| a.failed.cmp(&b.failed).then(b.path.cmp(&a.path)));
    (worst, n)
}

/// `deadline-exceeded` once [`DEADLINE_MIN_CALLS`] calls ended past their deadline.
fn judge_deadline(c: &mut ConnF, out: &mut Vec<Fire>) {
    if c.fail.deadline_calls() >= DEADLINE_MIN_CALLS {
        out.push((FindingId::DeadlineExceeded, Some(Side::Client), None));
    }
}

/// `cancel-storm` once the client's cancels not at a deadline reach [`CANCEL_STORM_MIN`] and
/// [`CANCEL_STORM_SHARE`] of the calls.
fn judge_cancels(c: &mut ConnF, out: &mut Vec<Fire>) {
    let n = c.fail.plain_cancels();
    if n >= CANCEL_STORM_MIN && n as f64 >= CANCEL_STORM_SHARE * c.calls.max(1) as f64 {
        out.push((FindingId::CancelStorm, Some(Side::Client), None));
    }
}

/// `call-errors` when the failed calls reach [`FAILED_SHARE`] of the calls.
fn judge(c: &mut ConnF, out: &mut Vec<Fire>) {
    let failed = c.fail.failed();
    if failed >= FAILED_MIN_CALLS && failed as f64 >= FAILED_SHARE * c.calls.max(1) as f64 {
        out.push((FindingId::CallErrors, Some(Side::Server), None));
    }
}

#[cfg(test)]
mod tests {
    use super::super::conn::Trend;

    /// The buckets double when a call falls beyond the last, and the windows split the
    /// buckets in use: 20 calls a millisecond apart that succeed, then 20 of which every
    /// other one fails.
    #[test]
    fn trend_windows_follow_the_calls_times() {
        let mut t = Trend {
            t0: 5_000_000,
            ..Trend::default()
        };
        for i in 0..40i64 {
            t.add(5_000_000 + i * 1_000_000, i >= 20 && i % 2 == 0);
        }
        // 40 ms of calls: widths 1, 2, then 4 ms (16 buckets hold 64 ms), 10 in use.
        assert_eq!(t.width, 4_000_000);
        let h = t.halves().unwrap();
        assert_eq!((h.earlier, h.later), ([20, 0], [20, 10]));
        assert_eq!((h.split, h.span), (20_000_000, 40_000_000));
        assert!((h.rise() - 0.5).abs() < 1e-9);
        // One bucket in use: no windows.
        let mut one = Trend::default();
        one.add(0, true);
        assert_eq!(one.halves(), None);
        // Hours later: still 16 buckets, nothing lost.
        one.add(3_600_000_000_000, false);
        let h = one.halves().unwrap();
        assert_eq!(h.earlier[0] + h.later[0], 2);
    }

    #[test]
    fn grpc_timeouts() {
        assert_eq!(super::grpc_timeout(b"10m"), Some(10_000_000));
        assert_eq!(
            super::grpc_timeout(b"99999999S"),
            Some(99_999_999_000_000_000)
        );
        assert_eq!(super::grpc_timeout(b"1H"), Some(3_600_000_000_000));
        assert_eq!(super::grpc_timeout(b"123456789m"), None);
        assert_eq!(super::grpc_timeout(b"m"), None);
        assert_eq!(super::grpc_timeout(b"10x"), None);
        assert_eq!(super::grpc_timeout(b""), None);
    }
}
