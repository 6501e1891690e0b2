//! Failed calls (issue 38): `call-errors` (responses with a gRPC status other than OK or an
//! HTTP status of 500 or more, and calls the client cancelled with RST_STREAM CANCEL) and
//! `goaway-cut-calls` (client streams above a server GOAWAY's last_stream_id: not processed).
//! A few counters per connection ([`Failures`]), and the deadlines of the latest
//! [`MAX_DEADLINES`] requests with a `grpc-timeout`.

use h2_frame_parser::{ErrorCode, Frame};

use crate::ledger::FrameEvent;
use crate::model::{FrameClass, Side};

use super::conn::ConnF;
use super::rules::Fire;
use super::FindingId;

/// `call-errors` fires once failed calls are at least this share of the connection's calls
/// (1 in 20), from the first failure on.
pub const FAILED_SHARE: f64 = 0.05;

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

/// Client streams whose request carried a `grpc-timeout`, followed at once per connection (the
/// latest ones): a CANCEL of one of them at or past its deadline is counted as a deadline.
pub const MAX_DEADLINES: usize = 64;

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
    let v = v.trim_ascii();
    if v.is_empty() || v.len() > 9 {
        return None;
    }
    v.iter().try_fold(0u32, |n, &b| {
        b.is_ascii_digit().then(|| n * 10 + u32::from(b - b'0'))
    })
}

/// The failure rules of one frame.
pub(super) fn frame(c: &mut ConnF, ev: &FrameEvent<'_>, out: &mut Vec<Fire>) {
    let server = ev.side == Side::Server;
    let sid = ev.head.stream_id.0;
    match ev.class {
        FrameClass::Headers | FrameClass::Trailers if server => {
            let Some(h) = ev.headers else {
                return;
            };
            // grpc-status ends a call: in its trailers, or in a Trailers-Only response, which
            // ends the stream too (gRPC's PROTOCOL-HTTP2.md); `:status` is in the first block.
            let ends = ev.class == FrameClass::Trailers || ev.head.flags.is_end_stream();
            let grpc = if ends {
                h.get(b"grpc-status").and_then(number)
            } else {
                None
            };
            let status = || match ev.class {
                FrameClass::Headers => h.get(b":status").and_then(number),
                _ => None,
            };
            let failed = match grpc {
                Some(0) => false,
                Some(code) => {
                    c.fail.grpc[(code as usize).min(17)] += 1;
                    true
                }
                None => match status() {
                    Some(400..=499) => {
                        c.fail.http_4xx += 1;
                        false
                    }
                    Some(500..) => {
                        c.fail.http_5xx += 1;
                        true
                    }
                    _ => false,
                },
            };
            if failed {
                judge(c, out);
            }
        }
        FrameClass::Headers if !server => {
            if let Some(t) = ev
                .headers
                .and_then(|h| h.get(b"grpc-timeout"))
                .and_then(grpc_timeout)
            {
                let d = &mut c.fail.deadlines;
                if d.len() == MAX_DEADLINES {
                    d.remove(0);
                }
                d.push((sid, ev.ts.saturating_add(t)));
            }
            if let Some(l) = c.fail.last_stream_id {
                if sid > l && sid & 1 == 1 {
                    c.fail.cut += 1;
                    out.push((FindingId::GoawayCutCalls, Some(Side::Server), Some(sid)));
                }
            }
        }
        FrameClass::RstStream if !server => {
            if let Some(Frame::RstStream(r)) = ev.frame {
                // A call cancelled before the server ended it (not one it answered already,
                // counted by its status).
                let open = c
                    .streams
                    .get(sid)
                    .is_some_and(|st| st.bits & super::conn::SERVER_END == 0);
                if r.code == ErrorCode::CANCEL && open {
                    c.fail.client_cancels += 1;
                    let d = &mut c.fail.deadlines;
                    if let Some(i) = d.iter().position(|(s, _)| *s == sid) {
                        // Within a millisecond: the client's timer and its write.
                        if ev.ts >= d[i].1 - 1_000_000 {
                            c.fail.deadline_cancels += 1;
                        }
                        d.remove(i);
                    }
                    judge(c, out);
                }
            }
        }
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

/// `call-errors` when the failed calls reach [`FAILED_SHARE`] of the calls.
fn judge(c: &mut ConnF, out: &mut Vec<Fire>) {
    let failed = c.fail.failed();
    if failed > 0 && failed as f64 >= FAILED_SHARE * c.calls.max(1) as f64 {
        out.push((FindingId::CallErrors, Some(Side::Server), None));
    }
}

#[cfg(test)]
mod tests {
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
