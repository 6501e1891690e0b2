//! What [`super::Analysis`] reports for one scope (the whole capture or a phase). Every key is
//! documented in docs/ledger.md; the documented ones are a public contract.

use std::collections::BTreeMap;

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use super::stats::Percentiles;
use crate::model::Sides;

/// A histogram indexed by a small count, serialized as `{"0": n, "1": n, ...}` in numeric order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hist(pub Vec<u64>);

impl Hist {
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }
}

impl Serialize for Hist {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (i, n) in self.0.iter().enumerate() {
            m.serialize_entry(&i.to_string(), n)?;
        }
        m.end()
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct FramesPerWrite {
    /// Over the writes in which at least one frame ends.
    pub mean: Option<f64>,
    pub histogram: Hist,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct BytesPerWrite {
    pub mean: Option<f64>,
    pub max: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct PingSide {
    /// PINGs (not ACKs) this side sent.
    pub sent: u64,
    /// Of those, answered by an ACK with the same payload.
    pub acked: u64,
    pub unanswered: u64,
    /// ACKs this side sent that answer no PING seen in the capture.
    pub acks_unmatched: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct RoundSide {
    /// BDP rounds this side opened (one per BDP PING it sent).
    pub rounds: u64,
    pub acked: u64,
    pub calls_per_round: Option<f64>,
    pub calls_per_round_histogram: Hist,
    /// Calls whose DATA made this side send a BDP PING.
    pub calls_opening: u64,
    pub share_of_calls_opening: Option<f64>,
}

/// The analysis of one side.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SideAnalysis {
    pub writes_by_calls: Hist,
    pub writes_without_frame_end: u64,
    pub control_only_writes: u64,
    pub frames_per_write: FramesPerWrite,
    pub bytes_per_write: BytesPerWrite,
    pub pings: PingSide,
    pub rounds: RoundSide,
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
    /// Other calls in flight on the connection when a call starts.
    pub mean_in_flight: Option<f64>,
    pub max_in_flight: u16,
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

#[derive(Clone, Debug, Default, Serialize)]
pub struct MethodReport {
    pub method: String,
    pub calls: u64,
    pub status: BTreeMap<String, u64>,
    /// Per side, as the keys `client` and `server`.
    #[serde(flatten)]
    pub sides: Sides<MethodSide>,
    pub latency_us: Percentiles,
}

#[derive(Clone, Debug, Serialize)]
pub struct GoAwayReport {
    pub time: f64,
    pub conn: u32,
    pub side: &'static str,
    pub last_stream_id: u32,
    pub error: String,
    pub debug: String,
    /// ENHANCE_YOUR_CALM: the peer judged our PINGs (or other frames) abusive; grpc-go sends it
    /// with debug data `too_many_pings`.
    pub too_many_pings: bool,
}

/// Everything [`Analysis`] reports for one scope.
#[derive(Clone, Debug, Default, Serialize)]
pub struct AnalysisReport {
    /// Not a key of its own: a report merges each side into the ledger's side of the same
    /// name (`h2ledger_run::Report`).
    #[serde(skip)]
    pub sides: Sides<SideAnalysis>,
    pub latency_us: Latency,
    pub concurrency: Concurrency,
    pub methods: Vec<MethodReport>,
    pub goaways: Vec<GoAwayReport>,
    /// GOAWAY frames with ENHANCE_YOUR_CALM.
    pub too_many_pings: u64,
    pub limits: AnalysisLimits,
    /// Flow-control windows and stalls per side (docs/ledger.md, "Flow control").
    pub flow_control: crate::flow::FlowReport,
    /// gRPC messages per side and per method (docs/ledger.md, "gRPC messages").
    pub grpc: crate::grpc::GrpcReport,
}

/// The analysis' internal caps and how often each was hit (all 0 on ordinary captures). A cap
/// that is hit is also a warning; docs/ledger.md states each bound.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AnalysisLimits {
    /// Calls not followed because [`super::MAX_ACTIVE_CALLS`] calls were in flight.
    pub untracked_calls: u64,
    /// GOAWAY frames counted in `too_many_pings` but not listed (beyond [`super::MAX_GOAWAYS`]).
    pub goaways_omitted: u64,
    /// Events (writes, frames, calls, round trips) kept out of the phases because
    /// [`super::phase::MAX_PHASES`] phases already held something.
    pub phase_events_dropped: u64,
    /// Calls counted under the method `(other)`: more than [`super::MAX_METHODS`] distinct
    /// `:path` values in all, or [`super::MAX_PHASE_METHODS`] in one phase.
    pub methods_folded: u64,
}
