//! `grpc` of the analysis: per side and per method, per scope.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::Sides;

/// Distinct methods kept per scope in the gRPC block; calls of further methods are counted in
/// the scope's `calls` only.
pub(crate) const MAX_GRPC_METHODS: usize = 256;

/// The per-method totals of one scope.
#[derive(Clone, Debug, Default)]
pub(super) struct GrpcScope {
    pub(super) calls: u64,
    pub(super) methods: BTreeMap<String, GrpcMethodAgg>,
    pub(super) methods_folded: u64,
}

#[derive(Clone, Debug, Default)]
pub(super) struct GrpcMethodAgg {
    pub(super) calls: u64,
    pub(super) status: BTreeMap<String, u64>,
    pub(super) messages: [u64; 2],
    pub(super) bytes: [u64; 2],
    pub(super) latency: crate::stats::LatencyHist,
}

/// `message_size`: bytes per complete message (the log histogram: at most 6.25 % above the
/// true percentile, `max` exact); `null` without a message.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MessageSize {
    /// The largest message.
    pub max: Option<u64>,
    /// Median message.
    pub p50: Option<u64>,
    /// 99th percentile message.
    pub p99: Option<u64>,
}

/// `grpc.client` / `.server` of the analysis.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct GrpcSide {
    /// Complete messages with the Compressed-Flag set.
    pub compressed: u64,
    /// Messages the capture lacks bytes of, or unfinished when their direction ended.
    pub incomplete: u64,
    /// Sum of the complete messages' Message-Length fields.
    pub message_bytes: u64,
    /// Bytes per message (p50/p99 per [`crate::stats::LogHist`]).
    pub message_size: MessageSize,
    /// Complete messages this side sent.
    pub messages: u64,
}

/// `latency_us` of a gRPC method: nearest-rank percentiles, microseconds; `null` without a
/// finished call.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LatencyP {
    /// Median.
    pub p50: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
}

/// One element of `grpc.methods`: the gRPC calls of one `:path` in the scope.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct GrpcMethod {
    /// gRPC calls of this method.
    pub calls: u64,
    /// Call latency (request HEADERS to the response's END_STREAM), microseconds.
    pub latency_us: LatencyP,
    /// Sum of the complete messages' lengths, per side.
    pub message_bytes: Sides<u64>,
    /// Complete messages, per side.
    pub messages: Sides<u64>,
    /// The `:path`.
    pub method: String,
    /// Calls by outcome: `grpc-status N`, `:status N`, `RST_STREAM` or `none`.
    pub status: BTreeMap<String, u64>,
}

/// `grpc` of the analysis.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GrpcReport {
    /// Calls whose request content-type is gRPC.
    pub calls: u64,
    /// Per side, as the keys `client` and `server`.
    pub sides: Sides<GrpcSide>,
    /// Per `:path`, at most 256 per scope, in byte order of the path.
    pub methods: Vec<GrpcMethod>,
    /// Calls not followed because [`super::MAX_GRPC_STREAMS`] calls were open (over the whole
    /// run: every phase reports the run's count).
    pub untracked_calls: u64,
    /// Calls in `calls` whose method is not listed (beyond 256 methods in the scope).
    pub methods_folded: u64,
}

impl Serialize for GrpcReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        /// The published keys, in their order.
        #[derive(Serialize)]
        struct Json<'a> {
            calls: u64,
            client: &'a GrpcSide,
            methods: &'a [GrpcMethod],
            methods_folded: u64,
            server: &'a GrpcSide,
            untracked_calls: u64,
        }
        Json {
            calls: self.calls,
            client: &self.sides.client,
            methods: &self.methods,
            methods_folded: self.methods_folded,
            server: &self.sides.server,
            untracked_calls: self.untracked_calls,
        }
        .serialize(s)
    }
}
