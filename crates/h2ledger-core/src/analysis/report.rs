//! What [`super::Analysis`] reports for one scope (the whole capture or a phase). Every key is
//! documented in docs/ledger.md; the documented ones are a public contract.

use std::collections::BTreeMap;

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use crate::model::Sides;
use crate::stats::Percentiles;

/// A histogram indexed by a small count, serialized as `{"0": n, "1": n, ...}`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hist(pub Vec<u64>);

impl Hist {
    /// The sum over every bin.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }
}

impl Serialize for Hist {
    /// The keys in the published order of every JSON object: as strings, in byte order
    /// (`"0", "1", "10", "11", "2", ...` once there are more than ten).
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut keys: Vec<(String, u64)> = self
            .0
            .iter()
            .enumerate()
            .map(|(i, n)| (i.to_string(), *n))
            .collect();
        keys.sort_unstable();
        let mut m = s.serialize_map(Some(keys.len()))?;
        for (k, n) in &keys {
            m.serialize_entry(k, n)?;
        }
        m.end()
    }
}

/// `frames_per_write` of a side: the writes in which at least one frame ends, by the number
/// of frames that end in them.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FramesPerWrite {
    /// Writes by the number of frames that end in them.
    pub histogram: Hist,
    /// Over the writes in which at least one frame ends.
    pub mean: Option<f64>,
}

/// `bytes_per_write` of a side: payload bytes per write.
#[derive(Clone, Debug, Default, Serialize)]
pub struct BytesPerWrite {
    /// The largest write, bytes.
    pub max: u64,
    /// Bytes per write over every write of the side; `null` without a write.
    pub mean: Option<f64>,
}

/// `pings` of a side: the PINGs it sent, how many were answered, and its ACKs that answer
/// none (docs/pings.md, "Round trips").
#[derive(Clone, Debug, Default, Serialize)]
pub struct PingSide {
    /// Of those, answered by an ACK with the same payload.
    pub acked: u64,
    /// ACKs this side sent that answer no PING seen in the capture.
    pub acks_unmatched: u64,
    /// PINGs (not ACKs) this side sent.
    pub sent: u64,
    /// PINGs this side sent that no ACK answered in the capture (`sent - acked`).
    pub unanswered: u64,
}

/// `rounds` of a side: its BDP rounds, from each BDP PING it sent to that PING's ACK
/// (docs/pings.md, "BDP rounds").
#[derive(Clone, Debug, Default, Serialize)]
pub struct RoundSide {
    /// Rounds whose PING was acknowledged (the others were closed by a newer BDP PING, or by
    /// the end of the connection or of the capture).
    pub acked: u64,
    /// Calls whose DATA made this side send a BDP PING.
    pub calls_opening: u64,
    /// Mean number of distinct calls in a round; `null` without a round.
    pub calls_per_round: Option<f64>,
    /// Rounds by the number of distinct calls in them.
    pub calls_per_round_histogram: Hist,
    /// BDP rounds this side opened (one per BDP PING it sent).
    pub rounds: u64,
    /// `calls_opening` over the calls of the scope; `null` without a call.
    pub share_of_calls_opening: Option<f64>,
}

/// The analysis of one side.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SideAnalysis {
    /// Payload bytes per write: mean over every write, and the largest.
    pub bytes_per_write: BytesPerWrite,
    /// Writes in which frames end but only control frames (`writes_by_calls["0"]` again).
    pub control_only_writes: u64,
    /// Frames ending per write, over the writes in which at least one frame ends.
    pub frames_per_write: FramesPerWrite,
    /// PINGs sent, acknowledged and unanswered, and unmatched ACKs.
    pub pings: PingSide,
    /// BDP rounds this side opened and the calls in them.
    pub rounds: RoundSide,
    /// RST_STREAM frames this side sent, by error code (RFC 9113's name, `other` for codes
    /// beyond 0xd); codes none was sent with are left out.
    pub rst_stream_codes: BTreeMap<String, u64>,
    /// Writes in which at least one frame ends, by the number of distinct calls whose frames end
    /// in them; `"0"`: only control frames.
    pub writes_by_calls: Hist,
    /// Writes in which no frame ends (the preface, the middle of a frame larger than a segment,
    /// bytes before the first frame boundary); with `writes_by_calls` they add up to `writes`.
    pub writes_without_frame_end: u64,
}

/// `latency_us`: duration percentiles of the scope, microseconds (nearest rank; the bounded
/// histogram of [`super::LatencyHist`]).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Latency {
    /// Request HEADERS to the response's END_STREAM.
    pub call: Percentiles,
    /// Request HEADERS to the first response frame.
    pub first_byte: Percentiles,
    /// PING to its ACK, every label.
    pub ping_rtt: Percentiles,
    /// PING to its ACK, by the PING's payload label (`grpc-go-bdp`, `h2-user`, ..., `other`).
    pub ping_rtt_by_label: BTreeMap<&'static str, Percentiles>,
}

/// `concurrency`: the calls of the scope (a call belongs to the phase of its request HEADERS).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Concurrency {
    /// Calls whose request HEADERS the client sent in this scope.
    pub calls: u64,
    /// The most other calls in flight on the connection when a call started.
    pub max_in_flight: u16,
    /// Other calls in flight on the connection when a call starts.
    pub mean_in_flight: Option<f64>,
    /// Calls ended by an RST_STREAM.
    pub reset: u64,
    /// Calls that neither saw the response's END_STREAM nor were reset before their connection
    /// or the capture ended.
    pub unfinished: u64,
}

/// One side of a method's calls (`client`: the request side, `server`: the response side).
#[derive(Clone, Debug, Default, Serialize)]
pub struct MethodSide {
    /// Frames this side sent on the calls' streams, by kind ([`super::CALL_KINDS`]).
    pub frames: BTreeMap<&'static str, u64>,
    /// Those frames per call; `null` without a call.
    pub frames_per_call: Option<f64>,
    /// Writes of this side that carried the end of at least one frame of a call, summed over the
    /// calls.
    pub writes: u64,
    /// Those writes per call; `null` without a call.
    pub writes_per_call: Option<f64>,
}

/// One element of `methods`: the calls of one `:path` in the scope.
#[derive(Clone, Debug, Default)]
pub struct MethodReport {
    /// The `:path` (escaped as [`super::escape_bytes`] does); `(other)` for the calls beyond the
    /// method caps, `(unknown)` for requests without `:path`.
    pub method: String,
    /// The `:method` (`GET`, `POST`), empty when the requests had none: calls are grouped by
    /// it and the path.
    pub http_method: String,
    /// Calls of this method.
    pub calls: u64,
    /// Calls by outcome: `grpc-status N`, `:status N`, `RST_STREAM` or `none`.
    pub status: BTreeMap<String, u64>,
    /// Per side, as the keys `client` and `server`.
    pub sides: Sides<MethodSide>,
    /// Call latency (request HEADERS to the response's END_STREAM), microseconds.
    pub latency_us: Percentiles,
}

impl Serialize for MethodReport {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        /// The published keys, in their order.
        #[derive(Serialize)]
        struct Json<'a> {
            calls: u64,
            client: &'a MethodSide,
            http_method: &'a str,
            latency_us: &'a Percentiles,
            method: &'a str,
            server: &'a MethodSide,
            status: &'a BTreeMap<String, u64>,
        }
        Json {
            calls: self.calls,
            client: &self.sides.client,
            http_method: &self.http_method,
            latency_us: &self.latency_us,
            method: &self.method,
            server: &self.sides.server,
            status: &self.status,
        }
        .serialize(s)
    }
}

/// One element of `goaways`: a GOAWAY frame.
#[derive(Clone, Debug, Serialize)]
pub struct GoAwayReport {
    /// The connection's id.
    pub conn: u32,
    /// Its debug data, at most 256 bytes, escaped as [`super::escape_bytes`] does.
    pub debug: String,
    /// Its error code: the RFC 9113 name (`ENHANCE_YOUR_CALM`), or `0x..` when it has none.
    pub error: String,
    /// Its Last-Stream-ID.
    pub last_stream_id: u32,
    /// The side that sent it: `client` or `server`.
    pub side: &'static str,
    /// When it was carried, seconds since the epoch.
    pub time: f64,
    /// ENHANCE_YOUR_CALM: the peer judged our PINGs (or other frames) abusive; grpc-go sends it
    /// with debug data `too_many_pings`.
    pub too_many_pings: bool,
}

/// Everything [`super::Analysis`] reports for one scope.
#[derive(Clone, Debug, Default, Serialize)]
pub struct AnalysisReport {
    /// Calls, calls in flight, resets and unfinished calls.
    pub concurrency: Concurrency,
    /// Flow-control windows and stalls per side (docs/ledger.md, "Flow control").
    pub flow_control: crate::flow::FlowReport,
    /// GOAWAY frames, the first [`super::MAX_GOAWAYS`] (`limits.goaways_omitted` counts the rest).
    pub goaways: Vec<GoAwayReport>,
    /// gRPC messages per side and per method (docs/ledger.md, "gRPC messages").
    pub grpc: crate::grpc::GrpcReport,
    /// Call, first-byte and PING round-trip percentiles, microseconds.
    pub latency_us: Latency,
    /// How often each of the analysis' caps was hit, over the whole run (a phase's report
    /// gives the run's counts too).
    pub limits: AnalysisLimits,
    /// What the figures are made of, for `merge` (a whole capture's report and each phase's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merge: Option<super::merge::MergeData>,
    /// Calls per `:path`, in the order of each method's first call (the whole capture), or
    /// in the order the run first saw each path (a phase).
    pub methods: Vec<MethodReport>,
    /// GOAWAY frames with ENHANCE_YOUR_CALM.
    pub too_many_pings: u64,
    /// Not a key of its own: a report merges each side into the ledger's side of the same
    /// name (`h2ledger_run::Report`).
    #[serde(skip)]
    pub sides: Sides<SideAnalysis>,
}

/// The analysis' internal caps and how often each was hit (all 0 on ordinary captures). A cap
/// that is hit is also a warning; docs/ledger.md states each bound.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AnalysisLimits {
    /// GOAWAY frames counted in `too_many_pings` but not listed (beyond [`super::MAX_GOAWAYS`]).
    pub goaways_omitted: u64,
    /// Calls counted under the method `(other)`: more than [`super::MAX_METHODS`] distinct
    /// `:path` values in all, or [`super::MAX_PHASE_METHODS`] in one phase.
    pub methods_folded: u64,
    /// Events (writes, frames, calls, round trips) kept out of the phases because
    /// [`crate::phase::MAX_PHASES`] phases already held something.
    pub phase_events_dropped: u64,
    /// Calls not followed because [`super::MAX_ACTIVE_CALLS`] calls were in flight.
    pub untracked_calls: u64,
}
