//! The client's streams in flight: the server's stream slots (`stream-slots-full`,
//! `refused-stream`), and resets by either side (`rapid-reset`, `made-you-reset`,
//! `reset-flood`).

use h2_frame_parser::{ErrorCode, Frame, Kind};
use h2ledger_tcp::Nanos;

use crate::ledger::FrameEvent;
use crate::model::{FrameClass, Side, StreamStep};

use super::conn::{CallF, ConnF, StreamF, FOLLOWUP, SERVER_END, SERVER_HEADERS};
use super::rules::{Fire, PREMATURE_LIFETIME, PREMATURE_MIN_STREAMS, REFILL_NS};
use super::{FindingId, MAX_FINDING_STREAMS};

/// The stream bookkeeping of one frame on a stream (`sid != 0`); a request's HEADERS opens a
/// stream with `call`, its call as the failure rules made it. When a half or the stream ends
/// is the ledger's word ([`FrameEvent::stream`]), not derived here again. `streams` is the number of
/// streams followed over every connection, `untracked` those beyond [`MAX_FINDING_STREAMS`].
/// Inlined into its one caller (left to itself, the compiler's choice changes with unrelated
/// edits of the crate, and a call costs 3% of a plain replay).
#[inline(always)]
pub(super) fn stream_frame(
    c: &mut ConnF,
    ev: &FrameEvent<'_>,
    call: CallF,
    found: super::failures::Found,
    streams: &mut usize,
    untracked: &mut u64,
    out: &mut Vec<Fire>,
) {
    let sid = ev.head.stream_id.0;
    let ts = ev.ts;
    let client = ev.side == Side::Client;
    // Client streams are odd (RFC 9113 §5.1.1); the server's pushed streams are not followed.
    if sid & 1 == 0 {
        return;
    }
    match ev.class {
        FrameClass::Headers if client => {
            c.calls += 1;
            if c.streams.contains_key(sid) {
                return;
            }
            if *streams >= MAX_FINDING_STREAMS {
                *untracked += 1;
                return;
            }
            c.streams.insert(
                sid,
                StreamF {
                    opened: ts,
                    bits: 0,
                    call,
                },
            );
            *streams += 1;
            opened(c, ts, out);
        }
        // The server's DATA that closes no half changes nothing here: no lookup.
        FrameClass::Data
            if !client && !matches!(ev.stream, StreamStep::HalfClosed | StreamStep::Ended) => {}
        FrameClass::RstStream => {
            let code = match ev.frame {
                Some(Frame::RstStream(r)) => Some(r.code),
                _ => None,
            };
            let slot = c.streams.find(sid);
            let st = slot.and_then(|i| c.streams.slot(i)).copied();
            if client {
                client_reset(c, st, ts, out);
            } else {
                server_reset(c, sid, st, code, ts, out);
            }
            // The resets above leave the table as it was: the slot still holds the stream.
            if let Some(st) = slot.and_then(|i| c.streams.remove_at(i)) {
                closed(c, st.bits, ts, streams, out);
            }
        }
        _ => {
            // One lookup, whose slot also serves the removal when the stream is over: the
            // failure rules' when they made it (decision 476).
            let Some(slot) = found.unwrap_or_else(|| c.streams.find(sid)) else {
                return;
            };
            let Some(st) = c.streams.slot_mut(slot) else {
                return;
            };
            if client {
                if ev.head.kind != Kind::Continuation {
                    st.bits |= FOLLOWUP;
                }
            } else if ev.class == FrameClass::Headers {
                st.bits |= SERVER_HEADERS;
            }
            // A header block's step where the block ends (decision 454): the failure rules
            // read its fields there, on a call not yet ended.
            let step = ev.block_step();
            let server_ended = !client
                && matches!(step, StreamStep::HalfClosed | StreamStep::Ended)
                && st.bits & SERVER_END == 0;
            if server_ended {
                st.bits |= SERVER_END;
            }
            let bits = st.bits;
            let done = step == StreamStep::Ended;
            if done {
                c.streams.discard_at(slot);
            }
            if server_ended {
                c.server_active = c.server_active.saturating_sub(1);
            }
            if done {
                closed(c, bits, ts, streams, out);
            }
        }
    }
}

/// A client stream opened: the slots it takes.
#[inline(always)]
fn opened(c: &mut ConnF, ts: Nanos, out: &mut Vec<Fire>) {
    c.in_flight += 1;
    c.server_active += 1;
    let s = &mut c.slots;
    s.max_in_flight = s.max_in_flight.max(c.in_flight);
    let Some(limit) = s.limit else {
        return;
    };
    // A refill: the streams opened within REFILL_NS of a slot freeing that fill the slots
    // again are calls that waited for them (one at a time, as grpc-go refills, or a batch, as
    // h2load does when both of nghttpd -m 2's streams end in one read).
    if let Some(t) = s.freed_at {
        if ts - t > REFILL_NS {
            s.freed_at = None;
            s.refilled = 0;
        } else {
            s.refilled += 1;
            if c.in_flight == limit {
                s.waited += u64::from(s.refilled);
                s.freed_at = None;
                s.refilled = 0;
                out.push((FindingId::StreamSlotsFull, Some(Side::Client), None));
            }
        }
    }
    if c.in_flight > limit {
        s.over += 1;
        out.push((FindingId::StreamSlotsFull, Some(Side::Client), None));
    }
    if c.in_flight >= limit && s.full_since.is_none() {
        s.full_since = Some(ts);
        s.times_full += 1;
    }
}

/// A client stream is over, its record (with `bits`) taken out of the table.
#[inline(always)]
fn closed(c: &mut ConnF, bits: u8, ts: Nanos, streams: &mut usize, out: &mut Vec<Fire>) {
    *streams -= 1;
    c.in_flight = c.in_flight.saturating_sub(1);
    if bits & SERVER_END == 0 {
        c.server_active = c.server_active.saturating_sub(1);
    }
    c.closed_streams += 1;
    let s = &mut c.slots;
    match (s.limit.or(s.pending), s.full_since) {
        (Some(limit), Some(since)) if c.in_flight < limit => {
            let d = ts - since;
            s.full_ns += d;
            s.max_full_ns = s.max_full_ns.max(d);
            s.last_full_ns = d;
            s.full_since = None;
            s.freed_at = Some(ts);
            s.refilled = 0;
        }
        // Another slot freed in the same burst (streams ended in one read): the refill is
        // still measured from the first.
        (Some(_), None) if s.freed_at.is_some_and(|t| ts - t <= REFILL_NS) => {}
        _ => {
            s.freed_at = None;
            s.refilled = 0;
        }
    }
    premature_rules(c, out);
}

fn premature(st: &StreamF, ts: Nanos) -> bool {
    st.bits & SERVER_HEADERS == 0 && ts - st.opened < PREMATURE_LIFETIME
}

/// Envoy's premature-reset rule, on every stream close: at least
/// [`PREMATURE_MIN_STREAMS`] closed and at least half reset prematurely, by the client
/// (`rapid-reset`) or by the server for the client's errors (`made-you-reset`).
fn premature_rules(c: &ConnF, out: &mut Vec<Fire>) {
    if c.closed_streams < PREMATURE_MIN_STREAMS {
        return;
    }
    if c.premature * 2 >= c.closed_streams {
        out.push((FindingId::RapidReset, Some(Side::Client), None));
    }
    if c.myr_premature * 2 >= c.closed_streams {
        out.push((FindingId::MadeYouReset, Some(Side::Client), None));
    }
}

/// A RST_STREAM from the client: nghttp2's stream-reset budget, and Envoy's premature count.
fn client_reset(c: &mut ConnF, st: Option<StreamF>, ts: Nanos, out: &mut Vec<Fire>) {
    c.client_resets += 1;
    if c.reset_budget.drain(ts) {
        c.budget_exhausted += 1;
        out.push((FindingId::RapidReset, Some(Side::Client), None));
    }
    if st.is_some_and(|s| premature(&s, ts)) {
        c.premature += 1;
    }
}

/// A RST_STREAM from the server. REFUSED_STREAM: the stream was not processed (RFC 9113 §8.7).
/// An error code that blames the client (not NO_ERROR, CANCEL or INTERNAL_ERROR): a stream the
/// client followed up after its request (a WINDOW_UPDATE, DATA, PRIORITY, trailers) was reset
/// for that frame, made-you-reset's trigger; otherwise the request itself (or a frame on a
/// stream never opened) was refused, reset-flood's.
fn server_reset(
    c: &mut ConnF,
    sid: u32,
    st: Option<StreamF>,
    code: Option<ErrorCode>,
    ts: Nanos,
    out: &mut Vec<Fire>,
) {
    let Some(code) = code else {
        return;
    };
    if code == ErrorCode::REFUSED_STREAM {
        c.refused += 1;
        c.refused_in_flight = c.refused_in_flight.max(c.in_flight);
        out.push((FindingId::RefusedStream, Some(Side::Server), Some(sid)));
        // Refused with the slots full: the client went past the limit the server announced
        // (in force once ACKed; nghttp2 refuses past the one it has sent, not yet ACKed).
        let s = &mut c.slots;
        if let Some(limit) = s.limit.or(s.pending) {
            if c.in_flight > limit {
                s.over += 1;
                if s.full_since.is_none() {
                    s.full_since = Some(ts);
                    s.times_full += 1;
                }
                out.push((FindingId::StreamSlotsFull, Some(Side::Client), None));
            }
        }
        return;
    }
    if matches!(
        code,
        ErrorCode::NO_ERROR | ErrorCode::CANCEL | ErrorCode::INTERNAL_ERROR
    ) {
        return;
    }
    match st {
        Some(s) if s.bits & FOLLOWUP != 0 => {
            c.myr += 1;
            if premature(&s, ts) {
                c.myr_premature += 1;
            }
            if c.myr_budget.drain(ts) {
                c.myr_exhausted += 1;
                out.push((FindingId::MadeYouReset, Some(Side::Client), None));
            }
        }
        _ => {
            c.flood_resets += 1;
            if c.flood_budget.drain(ts) {
                c.flood_exhausted += 1;
                out.push((FindingId::ResetFlood, Some(Side::Client), None));
            }
        }
    }
}
