//! What the engine keeps per open connection: counters per direction, the keepalive state, the
//! client streams in flight, the windows held at zero.

use h2ledger_tcp::{Dir, Dirs, Nanos};

use crate::model::Side;

/// A client stream's record by its id.
pub(super) type StreamMap = crate::table::IdTable<StreamF>;

use super::{MAX_HOLDS, PING_RING};

/// A token bucket as nghttp2's `nghttp2_ratelim` (lib/nghttp2_ratelim.c): `burst` tokens,
/// `rate` more each whole second (refilled by the second, as nghttp2 does with
/// `nghttp2_time_now_sec`), one drained per event; an event finding it empty is over the limit.
/// The burst and rate are constants of the type, not fields: a connection keeps seven buckets.
#[derive(Clone, Copy, Debug)]
pub(super) struct Bucket<const BURST: u64, const RATE: u64> {
    val: u64,
    /// The second of the last refill; `i64::MIN` before the first event.
    sec: i64,
}

/// The PING and SETTINGS rates of a direction ([`super::FRAME_RATE`]).
pub(super) type FrameBucket = Bucket<{ super::FRAME_RATE }, { super::FRAME_RATE }>;
/// A stream-reset budget ([`super::RESET_BURST`], [`super::RESET_RATE`]).
pub(super) type ResetBucket = Bucket<{ super::RESET_BURST }, { super::RESET_RATE }>;

impl<const BURST: u64, const RATE: u64> Bucket<BURST, RATE> {
    /// Full: `BURST` tokens, no event yet.
    pub(super) const fn new() -> Self {
        Bucket {
            val: BURST,
            sec: i64::MIN,
        }
    }

    /// One event at `ts`: `true` when the bucket was empty (the limit is exceeded).
    pub(super) fn drain(&mut self, ts: Nanos) -> bool {
        let sec = ts.div_euclid(1_000_000_000);
        if self.sec == i64::MIN {
            self.sec = sec;
        } else if sec > self.sec {
            let add = (sec - self.sec) as u64;
            self.val = self.val.saturating_add(add.saturating_mul(RATE)).min(BURST);
            self.sec = sec;
        }
        if self.val == 0 {
            return true;
        }
        self.val -= 1;
        false
    }
}

/// Counters of the frames one direction sent.
#[derive(Clone, Debug, Default)]
pub(super) struct DirF {
    // PING (ping-flood)
    pub(super) pings: u64,
    /// PINGs sent while an earlier one of this direction still waited for its ACK.
    pub(super) pings_pipelined: u64,
    pub(super) max_pings_owed: u64,
    pub(super) ping_rate: FrameBucket,
    pub(super) ping_rate_hits: u64,
    // SETTINGS (settings-flood)
    pub(super) settings: u64,
    pub(super) settings_owed: u64,
    pub(super) max_settings_owed: u64,
    pub(super) settings_rate: FrameBucket,
    pub(super) settings_rate_hits: u64,
    pub(super) max_settings_entries: u64,
    // header blocks (continuation-flood, hpack-bomb; Envoy's inbound_streams_)
    pub(super) header_blocks: u64,
    pub(super) block_open: bool,
    pub(super) block_stream: u32,
    pub(super) continuations: u64,
    pub(super) max_continuations: u64,
    pub(super) blocks_over: u64,
    pub(super) bombs: u64,
    pub(super) max_list: u64,
    pub(super) bomb_encoded: u64,
    // empty-frames-flood, priority-flood, window-update-flood
    pub(super) empty_run: u64,
    pub(super) max_empty_run: u64,
    pub(super) empty_frames: u64,
    pub(super) priority: u64,
    pub(super) window_updates: u64,
    pub(super) data_frames: u64,
    // bdp-ping-per-call
    pub(super) bdp_pings: u64,
    pub(super) control_frames: u64,
    pub(super) writes: u64,
}

/// grpc-go's keepalive enforcement state of the server (`http2Server`: `lastPingAt`,
/// `pingStrikes`, `resetPingStrikes`).
#[derive(Clone, Debug, Default)]
pub(super) struct Keepalive {
    pub(super) last_ping: Option<Nanos>,
    pub(super) strikes: u64,
    pub(super) total_strikes: u64,
    pub(super) first_strike: Option<Nanos>,
    /// The emulation's GOAWAY: the PING that made strikes exceed `maxPingStrikes`.
    pub(super) fatal_at: Option<Nanos>,
    /// The gap before the last strike, and the policy's minimum then.
    pub(super) last_gap: Nanos,
    pub(super) last_min: Nanos,
    /// The last client PINGs, oldest first.
    pub(super) ring: [Nanos; PING_RING],
    pub(super) ring_len: usize,
    /// The server's GOAWAY ENHANCE_YOUR_CALM "too_many_pings", when seen.
    pub(super) goaway_at: Option<Nanos>,
}

/// The keepalive state of a connection that has had no client PING (nor a GOAWAY
/// "too_many_pings"): what [`ConnF::ka`] stands for while it is `None`.
pub(super) static NO_PINGS: Keepalive = Keepalive {
    last_ping: None,
    strikes: 0,
    total_strikes: 0,
    first_strike: None,
    fatal_at: None,
    last_gap: 0,
    last_min: 0,
    ring: [0; PING_RING],
    ring_len: 0,
    goaway_at: None,
};

impl Keepalive {
    pub(super) fn remember(&mut self, ts: Nanos) {
        if self.ring_len == PING_RING {
            self.ring.copy_within(1.., 0);
            self.ring[PING_RING - 1] = ts;
        } else {
            self.ring[self.ring_len] = ts;
            self.ring_len += 1;
        }
    }

    pub(super) fn pings(&self) -> Vec<Nanos> {
        self.ring[..self.ring_len].to_vec()
    }
}

/// A client stream in flight: when it opened and what was seen of it.
#[derive(Clone, Copy, Debug)]
pub(super) struct StreamF {
    pub(super) opened: Nanos,
    pub(super) bits: u8,
    /// The call on the stream as the failure and latency rules follow it (its method, times
    /// and outcome): kept here, in the one table of the connection's streams, not in a map
    /// of its own.
    pub(super) call: CallF,
}

/// The server's half is closed (END_STREAM), as the ledger's [`crate::StreamStep`] told: the
/// call is no longer in flight for the rules that scan the table (a GOAWAY's cut calls).
pub(super) const SERVER_END: u8 = 2;
/// The server sent its response header block: a server frame the ledger classed HEADERS (its
/// first header block on the stream, not TRAILERS), kept here for the stream's RST_STREAM, when
/// the ledger's entry has left its table (decision 434).
pub(super) const SERVER_HEADERS: u8 = 4;
/// The client sent a frame on the stream after its request header block (DATA, WINDOW_UPDATE,
/// PRIORITY, trailers): the frame a server may answer with a reset (made-you-reset). The
/// findings' own fact, not a step of the stream's life (decision 434).
pub(super) const FOLLOWUP: u8 = 8;

/// The stream slots of the server's SETTINGS_MAX_CONCURRENT_STREAMS, as the client fills them.
#[derive(Clone, Debug, Default)]
pub(super) struct Slots {
    /// The limit in force (the server's value, once the client ACKed its SETTINGS).
    pub(super) limit: Option<u32>,
    pub(super) pending: Option<u32>,
    pub(super) full_since: Option<Nanos>,
    pub(super) times_full: u64,
    pub(super) full_ns: i64,
    pub(super) max_full_ns: i64,
    /// A stream ended while every slot was taken: the next streams may be calls that waited.
    pub(super) freed_at: Option<Nanos>,
    /// Streams opened since `freed_at` (a refill: counted as waited once the slots are full
    /// again within [`super::rules::REFILL_NS`]).
    pub(super) refilled: u32,
    pub(super) waited: u64,
    /// Streams the client opened beyond the limit.
    pub(super) over: u64,
    pub(super) max_in_flight: u32,
    /// How long the last full stretch lasted (slow-calls: the most a call opened at its end
    /// can have waited for a slot).
    pub(super) last_full_ns: i64,
}

/// A window held at zero while its sender has data (`zero-window`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Hold {
    /// The side that waits (the sender).
    pub(super) side: Side,
    pub(super) dir: Dir,
    pub(super) stream: u32,
    pub(super) since: Nanos,
    /// From a flow-control stall (DATA exhausted the window), not from a zero window at the
    /// stream's start.
    pub(super) stall: bool,
    pub(super) fired: bool,
}

/// Everything kept for one open connection.
#[derive(Debug, Default)]
pub(super) struct ConnF {
    /// The findings filed for this connection, by id and side (written by `sync`).
    pub(super) fired: Vec<(super::FindingId, Option<Side>)>,
    /// The connection is gRPC: a request with `content-type: application/grpc*`, a PING with
    /// grpc-go's BDP payload, or a GOAWAY "too_many_pings" was seen.
    pub(super) grpc: bool,
    pub(super) mid: bool,
    pub(super) gapped: bool,
    /// A gap lost framing on this connection: frames may be missing from the counts.
    pub(super) lossy: bool,
    pub(super) last_ts: Nanos,
    pub(super) dirs: Dirs<DirF>,
    /// The side of each direction, as the ledger last told it.
    pub(super) client: Option<Dir>,
    /// By stream id, in a table with a multiply-shift hash (ids are small integers, and the
    /// table is bounded by [`super::MAX_FINDING_STREAMS`]; decision 240).
    pub(super) streams: StreamMap,
    /// Client streams open (not ended both ways, not reset).
    pub(super) in_flight: u32,
    /// Client streams the server has not ended (grpc-go's `activeStreams`).
    pub(super) server_active: u32,
    pub(super) calls: u64,
    pub(super) slots: Slots,
    /// Made at the first client PING (or GOAWAY "too_many_pings"): 168 bytes that most
    /// connections, which send none, do not hold (decision 458).
    pub(super) ka: Option<Box<Keepalive>>,
    /// The server wrote HEADERS or DATA since the last client PING (grpc-go
    /// `resetPingStrikes`).
    pub(super) ka_reset: bool,
    // rapid-reset
    pub(super) client_resets: u64,
    pub(super) reset_budget: ResetBucket,
    pub(super) budget_exhausted: u64,
    pub(super) closed_streams: u64,
    pub(super) premature: u64,
    // server resets (made-you-reset, reset-flood, refused-stream)
    pub(super) myr: u64,
    pub(super) myr_premature: u64,
    pub(super) myr_budget: ResetBucket,
    pub(super) myr_exhausted: u64,
    pub(super) flood_resets: u64,
    pub(super) flood_budget: ResetBucket,
    pub(super) flood_exhausted: u64,
    pub(super) refused: u64,
    pub(super) refused_in_flight: u32,
    // flow-stall, zero-window: per side (index)
    pub(super) stalls: [u64; 2],
    pub(super) stall_limits: [[u64; 3]; 2],
    pub(super) unresolved: [u64; 2],
    pub(super) waited_ns: [i64; 2],
    pub(super) max_wait_ns: [i64; 2],
    pub(super) needed: [u64; 2],
    pub(super) initial: [i64; 2],
    pub(super) holds: Vec<Hold>,
    pub(super) earliest_hold: Option<Nanos>,
    pub(super) held_ns: [i64; 2],
    pub(super) max_held_ns: [i64; 2],
    pub(super) holds_long: [u64; 2],
    // call-errors, goaway-cut-calls
    pub(super) fail: Failures,
    // slow-calls: the round trips measured (PINGs matched by the connection model)
    /// The address of each direction's sender ([`Dir::index`]), from the connection's first
    /// packet (goaway-retries: the server a retry goes to).
    pub(super) addrs: Option<[std::net::SocketAddr; 2]>,
    pub(super) rtt_min_ns: i64,
    pub(super) rtts: u64,
}

impl ConnF {
    pub(super) fn new() -> ConnF {
        ConnF {
            holds: Vec::new(),
            // RFC 9113 §6.9.2 until a SETTINGS says otherwise.
            initial: [65_535; 2],
            ..ConnF::default()
        }
    }

    pub(super) fn dir_of(&self, s: Side) -> Dir {
        let c = self.client.unwrap_or(Dir::Fwd);
        match s {
            Side::Client => c,
            Side::Server => c.other(),
        }
    }

    pub(super) fn add_hold(&mut self, h: Hold) {
        if self.holds.len() < MAX_HOLDS
            && !self
                .holds
                .iter()
                .any(|x| x.stream == h.stream && x.dir == h.dir)
        {
            self.holds.push(h);
            self.earliest_hold = self.unfired_since();
        }
    }

    /// The start of the oldest hold not yet counted as `zero-window`.
    pub(super) fn unfired_since(&self) -> Option<Nanos> {
        self.holds
            .iter()
            .filter(|h| !h.fired)
            .map(|h| h.since)
            .min()
    }
}

impl<const BURST: u64, const RATE: u64> Default for Bucket<BURST, RATE> {
    fn default() -> Self {
        Bucket::new()
    }
}

/// One connection's failed calls and GOAWAY cuts.
#[derive(Clone, Debug, Default)]
pub(super) struct Failures {
    /// Failed responses by gRPC status ([`super::failures::GRPC_KEYS`]' slots).
    pub(super) grpc: [u64; 18],
    /// Responses without grpc-status with :status 400-499 and 500 or more.
    pub(super) http_4xx: u64,
    pub(super) http_5xx: u64,
    /// The client's RST_STREAM CANCEL.
    pub(super) client_cancels: u64,
    /// Of those, at or past the request's grpc-timeout (DEADLINE_EXCEEDED at the client).
    pub(super) deadline_cancels: u64,
    /// The server's GOAWAYs, the last one's last_stream_id and error code.
    pub(super) goaways: u64,
    pub(super) last_stream_id: Option<u32>,
    pub(super) goaway_code: u32,
    /// Client streams above the last_stream_id: in flight at the GOAWAY, or opened after it.
    pub(super) cut: u64,
    /// The streams up to this id have been looked at for a cut (the lowest last_stream_id).
    pub(super) counted_above: u32,
    /// The shortest and longest `grpc-timeout` of the requests, and how many carried one.
    pub(super) timeouts: u64,
    pub(super) timeout_min: i64,
    pub(super) timeout_max: i64,
    /// The requests' methods (`:path`), at most [`super::rules::MAX_METHODS`]; beyond, their
    /// calls are counted in `methods_untracked`.
    pub(super) methods: Vec<MethodF>,
    pub(super) methods_untracked: u64,
    /// The last request block read ([`super::failures::request`]): its list's stamp
    /// ([`crate::HeaderList::stamp`]), its method's index in `methods` (`u16::MAX`: untracked),
    /// whether it was gRPC and its `grpc-timeout`. A block the ledger did not decode again (the
    /// same bytes as the direction's last, decision 220) keeps the stamp, and is read from here
    /// (decision 475).
    pub(super) last_request: (u64, u16, bool, Option<i64>),
    /// slow-calls: calls at or above [`super::rules::SLOW_CALL`], and the slowest one.
    pub(super) slow: u64,
    pub(super) slowest: Option<SlowF>,
    /// gRPC calls as long, left out as streams ([`super::rules::STREAMED`]).
    pub(super) streamed_long: u64,
    /// The methods of calls cut by a GOAWAY since the observer last looked (goaway-retries).
    pub(super) new_cut: Vec<Box<[u8]>>,
    /// `method-errors-rise`: the method whose rise was largest when it held, its windows
    /// then, and how many methods it held for.
    pub(super) rising: Option<(u16, Halves)>,
    pub(super) methods_rising: u64,
    /// The streams of the last [`CANCELLED_KEPT`] calls the client cancelled (counted in
    /// `client_cancels`), for a response that crosses the RST_STREAM on the wire: its status
    /// is the same call's failure, counted once (decision 472).
    pub(super) cancelled: Cancelled,
}

/// The client's cancels a response may still cross: as many as the ledger keeps reset streams
/// for the frames that cross a RST_STREAM (the same bound, one constant).
pub(super) const CANCELLED_KEPT: usize = crate::ledger::MAX_RECENT_RESETS;

/// A ring of the last [`CANCELLED_KEPT`] cancelled streams (0: an empty place).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Cancelled {
    ids: [u32; CANCELLED_KEPT],
    next: u8,
    /// Some stream was ever added (the common connection, with no cancel, looks no further).
    any: bool,
}

impl Cancelled {
    /// The client cancelled the call on `sid`.
    pub(super) fn add(&mut self, sid: u32) {
        self.ids[usize::from(self.next)] = sid;
        self.next = (self.next + 1) % CANCELLED_KEPT as u8;
        self.any = true;
    }

    /// Whether the client cancelled the call on `sid` lately; `end`: the server's half ends
    /// with this block, and the stream is forgotten.
    pub(super) fn crossed(&mut self, sid: u32, end: bool) -> bool {
        if !self.any || sid == 0 {
            return false;
        }
        let Some(i) = self.ids.iter().position(|&s| s == sid) else {
            return false;
        };
        if end {
            self.ids[i] = 0;
        }
        true
    }
}

/// A client stream in flight: its method and the times that split its duration (slow-calls);
/// the request's HEADERS is the stream's `opened`.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct CallF {
    /// Index into [`Failures::methods`]; `u16::MAX`: a method not followed.
    pub(super) method: u16,
    /// Its outcome (status) was counted for its method.
    pub(super) judged: bool,
    /// A gRPC request (`content-type: application/grpc...`).
    pub(super) grpc: bool,
    /// The request's deadline (its HEADERS' time plus its `grpc-timeout`), 0 without one.
    pub(super) deadline: Nanos,
    /// The request's END_STREAM, 0 until seen.
    pub(super) req_end: Nanos,
    /// The server's first frame on the stream (its HEADERS), 0 until seen.
    pub(super) first_byte: Nanos,
    /// Stalls of either side on this stream, resolved (nanoseconds).
    pub(super) window_ns: i64,
    /// The most it can have waited for a stream slot before its HEADERS (nanoseconds).
    pub(super) slot_ns: i64,
}

/// The slowest call of a connection, its time split as the wire shows it.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct SlowF {
    pub(super) stream: u32,
    pub(super) method: u16,
    pub(super) duration_ns: i64,
    pub(super) request_ns: i64,
    pub(super) first_byte_ns: i64,
    pub(super) response_ns: i64,
    pub(super) window_ns: i64,
    pub(super) slot_ns: i64,
}

/// One method's calls and failures on a connection (`method-errors`).
#[derive(Clone, Debug, Default)]
pub(super) struct MethodF {
    /// The request's `:path`, cut at [`super::rules::METHOD_PATH_MAX`] bytes (as sent: text
    /// only in the evidence).
    pub(super) path: Box<[u8]>,
    pub(super) calls: u64,
    pub(super) failed: u64,
    /// Failed gRPC statuses by code ([`super::failures::GRPC_KEYS`]' slots).
    pub(super) grpc: [u64; 18],
    pub(super) http_5xx: u64,
    /// Calls of the method the client cancelled (not failures of the method).
    pub(super) cancels: u64,
    /// Its answered calls over time (`method-errors-rise`).
    pub(super) trend: Trend,
    /// `method-errors-rise` held for it once.
    pub(super) rose: bool,
}

/// `method-errors-rise`: a method's answered calls are placed by their request's time in
/// at most this many buckets of equal width from the method's first call (the width starts
/// at [`TREND_WIDTH`] and doubles, pairs merged, when a call falls beyond the last bucket), so
/// a method costs the same 16 counters whether the connection lasts 40 ms or a day; the
/// earlier window is the first half of the buckets in use (rounded up), the later the rest.
pub const TREND_BUCKETS: usize = 16;
/// ... the first width of a bucket (ours: a millisecond, finer than any capture's calls).
pub const TREND_WIDTH: Nanos = 1_000_000;

/// A method's answered calls and failures by the time of their request, in
/// [`TREND_BUCKETS`] buckets of `width` from `t0` (its first call): bounded whatever the
/// connection's length (`method-errors-rise`; decision 380).
#[derive(Clone, Debug)]
pub(super) struct Trend {
    pub(super) t0: Nanos,
    pub(super) width: Nanos,
    /// (calls, failed) per bucket.
    pub(super) b: [[u32; 2]; TREND_BUCKETS],
}

impl Default for Trend {
    fn default() -> Self {
        Trend {
            t0: 0,
            width: TREND_WIDTH,
            b: [[0; 2]; TREND_BUCKETS],
        }
    }
}

/// The two windows of a [`Trend`]: (calls, failed) before and from `split` (nanoseconds
/// after the first call), and the span the buckets in use cover.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Halves {
    pub(super) earlier: [u64; 2],
    pub(super) later: [u64; 2],
    pub(super) split: Nanos,
    pub(super) span: Nanos,
}

impl Halves {
    /// The later window's failed share less the earlier one's.
    pub(super) fn rise(&self) -> f64 {
        let share = |w: [u64; 2]| w[1] as f64 / w[0].max(1) as f64;
        share(self.later) - share(self.earlier)
    }
}

impl Trend {
    /// A call whose request came at `t` was answered, `failed` or not.
    pub(super) fn add(&mut self, t: Nanos, failed: bool) {
        let at = |tr: &Trend| ((t - tr.t0).max(0) / tr.width) as u64;
        while at(self) >= TREND_BUCKETS as u64 {
            for k in 0..TREND_BUCKETS / 2 {
                let (a, b) = (self.b[2 * k], self.b[2 * k + 1]);
                self.b[k] = [a[0].saturating_add(b[0]), a[1].saturating_add(b[1])];
            }
            for k in TREND_BUCKETS / 2..TREND_BUCKETS {
                self.b[k] = [0; 2];
            }
            self.width = self.width.saturating_mul(2);
        }
        let c = &mut self.b[at(self) as usize];
        c[0] = c[0].saturating_add(1);
        c[1] = c[1].saturating_add(u32::from(failed));
    }

    /// The earlier and later windows: the first half of the buckets in use (rounded up) and
    /// the rest; `None` with fewer than two buckets in use.
    pub(super) fn halves(&self) -> Option<Halves> {
        let n = self.b.iter().rposition(|c| c[0] > 0)? + 1;
        if n < 2 {
            return None;
        }
        let mid = n.div_ceil(2);
        let sum = |r: &[[u32; 2]]| {
            r.iter().fold([0u64; 2], |s, c| {
                [s[0] + u64::from(c[0]), s[1] + u64::from(c[1])]
            })
        };
        Some(Halves {
            earlier: sum(&self.b[..mid]),
            later: sum(&self.b[mid..n]),
            split: self.width.saturating_mul(mid as i64),
            span: self.width.saturating_mul(n as i64),
        })
    }
}

impl Failures {
    /// Failed calls: failed gRPC statuses, HTTP 5xx and cancels. An HTTP 4xx is counted (the
    /// evidence shows it) but is the request's fault (a `GET /missing`), not a failure of the
    /// service: it does not make the finding.
    pub(super) fn failed(&self) -> u64 {
        self.grpc.iter().sum::<u64>() + self.http_5xx + self.client_cancels
    }

    /// Calls that ended past their deadline: grpc-status 4 from the server, or cancelled by
    /// the client at its grpc-timeout.
    pub(super) fn deadline_calls(&self) -> u64 {
        self.grpc[4] + self.deadline_cancels
    }

    /// The client's cancels not explained by a deadline.
    pub(super) fn plain_cancels(&self) -> u64 {
        self.client_cancels - self.deadline_cancels
    }
}
