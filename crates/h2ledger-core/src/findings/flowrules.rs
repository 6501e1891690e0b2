//! Windows: `flow-stall` from the flow tracker's stalls ([`crate::flow::FlowEvent`]), and
//! `zero-window`: a sender kept from sending for at least [`ZERO_WINDOW_HOLD`], by a stall or
//! by a window that was zero when its stream began.

use h2ledger_tcp::{Dir, Nanos};

use crate::flow::{Flow, FlowEvent, Limit};
use crate::ledger::FrameEvent;
use crate::model::{FrameClass, Side, StreamStep};

use super::conn::{ConnF, Hold};
use super::rules::{Fire, ZERO_WINDOW_HOLD};
use super::FindingId;

/// One flow-control event of connection `c` (the flow tracker's).
pub(super) fn flow_event(c: &mut ConnF, e: FlowEvent, out: &mut Vec<Fire>) {
    match e {
        FlowEvent::Stall {
            side,
            stream,
            ts,
            limit,
            initial,
            ..
        } => {
            let i = side.index();
            c.stalls[i] += 1;
            c.stall_limits[i][match limit {
                Limit::Stream => 0,
                Limit::Connection => 1,
                Limit::Both => 2,
            }] += 1;
            c.initial[side.other().index()] = initial;
            let dir = c.dir_of(side);
            c.add_hold(Hold {
                side,
                dir,
                stream,
                since: ts,
                stall: true,
                fired: false,
            });
            out.push((FindingId::FlowStall, Some(side), None));
        }
        FlowEvent::Resolved {
            side,
            stream,
            start,
            end,
            ..
        } => {
            let i = side.index();
            let d = (end - start).max(0);
            super::failures::stalled(c, stream, d);
            c.waited_ns[i] += d;
            c.max_wait_ns[i] = c.max_wait_ns[i].max(d);
            end_hold(c, side, stream, true, end, out);
        }
        FlowEvent::Unresolved {
            side,
            stream,
            start,
            ..
        } => {
            // Never resolved: the wait ended with the stream's reset or the connection's
            // end (the frame or close the tracker ends it at), and counts until then.
            let i = side.index();
            c.unresolved[i] += 1;
            let t = c.last_ts;
            let d = (t - start).max(0);
            c.waited_ns[i] += d;
            c.max_wait_ns[i] = c.max_wait_ns[i].max(d);
            end_hold(c, side, stream, true, t, out);
        }
        FlowEvent::Done { side, sent, .. } => {
            let i = side.index();
            c.needed[i] = c.needed[i].max(sent);
        }
    }
}

/// A hold of `side` on `stream` ended at `t` (its window opened, or the stream or connection
/// ended): counted when it lasted [`ZERO_WINDOW_HOLD`].
fn end_hold(c: &mut ConnF, side: Side, stream: u32, stall: bool, t: Nanos, out: &mut Vec<Fire>) {
    let Some(k) = c
        .holds
        .iter()
        .position(|h| h.side == side && h.stream == stream && h.stall == stall)
    else {
        return;
    };
    let h = c.holds.swap_remove(k);
    c.earliest_hold = c.unfired_since();
    let d = (t - h.since).max(0);
    if d >= ZERO_WINDOW_HOLD {
        let i = side.index();
        c.held_ns[i] += d;
        c.max_held_ns[i] = c.max_held_ns[i].max(d);
        if !h.fired {
            c.holds_long[i] += 1;
            out.push((FindingId::ZeroWindow, Some(side.other()), Some(stream)));
        }
    }
}

/// Whether [`window_rules`] has anything to do on this frame: a hold is open, or a header
/// block opens a stream while the peer's initial window is <= 0 (the common case, neither,
/// costs this test only).
#[inline]
pub(super) fn window_rules_apply(c: &ConnF, ev: &FrameEvent<'_>) -> bool {
    !c.holds.is_empty() || (opens_half(ev) && c.initial[ev.side.other().index()] <= 0)
}

/// The sender's first header block on the stream, after which its half is open (the ledger's
/// class and step, decision 435): its DATA may wait for a window from here.
#[inline]
fn opens_half(ev: &FrameEvent<'_>) -> bool {
    ev.class == FrameClass::Headers && matches!(ev.stream, StreamStep::Opened | StreamStep::None)
}

/// After each frame of `c` (the flow tracker has seen it): a stream whose window was zero when
/// its sender opened it with a header block (no DATA, hence no stall), windows reopened by a
/// WINDOW_UPDATE or a SETTINGS ACK, streams that ended with their window held, and holds that
/// just reached [`ZERO_WINDOW_HOLD`] (live: said while still held).
pub(super) fn window_rules(
    c: &mut ConnF,
    ev: &FrameEvent<'_>,
    flow: Option<&Flow>,
    out: &mut Vec<Fire>,
) {
    let sid = ev.head.stream_id.0;
    let conn = ev.conn.0;
    match ev.class {
        // A window can be <= 0 when a stream opens only if the peer's initial window is, or
        // the connection window ran out (a stall is then in progress): else no lookup.
        FrameClass::Headers
            if opens_half(ev)
                && (c.initial[ev.side.other().index()] <= 0 || !c.holds.is_empty()) =>
        {
            let w = flow.and_then(|f| f.available(conn, ev.dir, sid));
            if w.is_some_and(|w| w <= 0) {
                c.add_hold(Hold {
                    side: ev.side,
                    dir: ev.dir,
                    stream: sid,
                    since: ev.ts,
                    stall: false,
                    fired: false,
                });
            }
        }
        FrameClass::WindowUpdate | FrameClass::SettingsAck if !c.holds.is_empty() => {
            // A WINDOW_UPDATE opens the other direction's windows; a SETTINGS ACK applies the
            // peer's initial window to the ACKing direction.
            let d = if ev.class == FrameClass::WindowUpdate {
                ev.dir.other()
            } else {
                ev.dir
            };
            reopen(c, d, flow, conn, ev.ts, out);
        }
        _ => {}
    }
    // A half closed, the stream over or reset, as the ledger's step says: the stream's holds
    // end (a hold is on a stream the flow tracker follows, hence one the ledger holds).
    let ended = matches!(
        ev.stream,
        StreamStep::HalfClosed | StreamStep::Ended | StreamStep::Reset { .. } | StreamStep::Refused
    );
    if sid != 0 && ended && !c.holds.is_empty() {
        for side in Side::ALL {
            end_hold(c, side, sid, false, ev.ts, out);
        }
    }
    if let Some(e) = c.earliest_hold {
        if ev.ts - e >= ZERO_WINDOW_HOLD {
            for h in c.holds.iter_mut() {
                if !h.fired && ev.ts - h.since >= ZERO_WINDOW_HOLD {
                    h.fired = true;
                    c.holds_long[h.side.index()] += 1;
                    out.push((FindingId::ZeroWindow, Some(h.side.other()), Some(h.stream)));
                }
            }
            // Not again for these: the next to reach it is a hold not fired yet.
            c.earliest_hold = c.unfired_since();
        }
    }
}

/// Holds from a zero window at the stream's start, of sending direction `d`, whose window is
/// > 0 now.
fn reopen(c: &mut ConnF, d: Dir, flow: Option<&Flow>, conn: u32, ts: Nanos, out: &mut Vec<Fire>) {
    let open: Vec<(Side, u32)> = c
        .holds
        .iter()
        .filter(|h| !h.stall && h.dir == d)
        .filter(|h| {
            flow.and_then(|f| f.available(conn, d, h.stream))
                .is_none_or(|w| w > 0)
        })
        .map(|h| (h.side, h.stream))
        .collect();
    for (side, stream) in open {
        end_hold(c, side, stream, false, ts, out);
    }
}

/// The connection is over: holds still open end at its last frame.
pub(super) fn close_holds(c: &mut ConnF, out: &mut Vec<Fire>) {
    let t = c.last_ts;
    let left: Vec<(Side, u32, bool)> = c
        .holds
        .iter()
        .map(|h| (h.side, h.stream, h.stall))
        .collect();
    for (side, stream, stall) in left {
        end_hold(c, side, stream, stall, t, out);
    }
}
