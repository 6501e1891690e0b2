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

#[derive(Clone, Debug, Default, Serialize)]
pub struct FramesPerWrite {
    pub histogram: Hist,
    /// Over the writes in which at least one frame ends.
    pub mean: Option<f64>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct BytesPerWrite {
    pub max: u64,
    pub mean: Option<f64>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct PingSide {
    /// Of those, answered by an ACK with the same payload.
    pub acked: u64,
    /// ACKs this side sent that answer no PING seen in the capture.
    pub acks_unmatched: u64,
    /// PINGs (not ACKs) this side sent.
    pub sent: u64,
    pub unanswered: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct RoundSide {
    pub acked: u64,
    /// Calls whose DATA made this side send a BDP PING.
    pub calls_opening: u64,
    pub calls_per_round: Option<f64>,
    pub calls_per_round_histogram: Hist,
    /// BDP rounds this side opened (one per BDP PING it sent).
    pub rounds: u64,
    pub share_of_calls_opening: Option<f64>,
}

/// The analysis of one side.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SideAnalysis {
    pub bytes_per_write: BytesPerWrite,
    pub control_only_writes: u64,
    pub frames_per_write: FramesPerWrite,
    pub pings: PingSide,
    pub rounds: RoundSide,
    pub writes_by_calls: Hist,
    pub writes_without_frame_end: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Latency {
    /// Request HEADERS to the response's END_STREAM.
    pub call: Percentiles,
    /// Request HEADERS to the first response frame.
    pub first_byte: Percentiles,
    /// PING to its ACK, every label.
    pub ping_rtt: Percentiles,
    pub ping_rtt_by_label: BTreeMap<&'static str, Percentiles>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Concurrency {
    pub calls: u64,
    pub max_in_flight: u16,
    /// Other calls in flight on the connection when a call starts.
    pub mean_in_flight: Option<f64>,
    pub reset: u64,
    pub unfinished: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct MethodSide {
    pub frames: BTreeMap<&'static str, u64>,
    pub frames_per_call: Option<f64>,
    pub writes: u64,
    pub writes_per_call: Option<f64>,
}

#[derive(Clone, Debug, Default)]
pub struct MethodReport {
    pub method: String,
    pub calls: u64,
    pub status: BTreeMap<String, u64>,
    /// Per side, as the keys `client` and `server`.
    pub sides: Sides<MethodSide>,
    pub latency_us: Percentiles,
}

impl Serialize for MethodReport {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        /// The published keys, in their order.
        #[derive(Serialize)]
        struct Json<'a> {
            calls: u64,
            client: &'a MethodSide,
            latency_us: &'a Percentiles,
            method: &'a str,
            server: &'a MethodSide,
            status: &'a BTreeMap<String, u64>,
        }
        Json {
            calls: self.calls,
            client: &self.sides.client,
            latency_us: &self.latency_us,
            method: &self.method,
            server: &self.sides.server,
            status: &self.status,
        }
        .serialize(s)
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct GoAwayReport {
    pub conn: u32,
    pub debug: String,
    pub error: String,
    pub last_stream_id: u32,
    pub side: &'static str,
    pub time: f64,
    /// ENHANCE_YOUR_CALM: the peer judged our PINGs (or other frames) abusive; grpc-go sends it
    /// with debug data `too_many_pings`.
    pub too_many_pings: bool,
}

/// Everything [`super::Analysis`] reports for one scope.
#[derive(Clone, Debug, Default, Serialize)]
pub struct AnalysisReport {
    pub concurrency: Concurrency,
    /// Flow-control windows and stalls per side (docs/ledger.md, "Flow control").
    pub flow_control: crate::flow::FlowReport,
    pub goaways: Vec<GoAwayReport>,
    /// gRPC messages per side and per method (docs/ledger.md, "gRPC messages").
    pub grpc: crate::grpc::GrpcReport,
    pub latency_us: Latency,
    pub limits: AnalysisLimits,
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
