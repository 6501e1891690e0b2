//! `grpc` of the analysis: per side and per method, per scope.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::Sides;

/// Distinct methods kept per scope in the gRPC block; calls of further methods are counted in
/// the scope's `calls` only.
pub(super) const MAX_GRPC_METHODS: usize = 256;

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

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MessageSize {
    pub max: Option<u64>,
    pub p50: Option<u64>,
    pub p99: Option<u64>,
}

/// `grpc.client` / `.server` of the analysis.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct GrpcSide {
    pub compressed: u64,
    pub incomplete: u64,
    pub message_bytes: u64,
    /// Bytes per message (p50/p99 per [`crate::stats::LogHist`]).
    pub message_size: MessageSize,
    pub messages: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LatencyP {
    pub p50: Option<f64>,
    pub p99: Option<f64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct GrpcMethod {
    pub calls: u64,
    /// Call latency (request HEADERS to the response's END_STREAM), microseconds.
    pub latency_us: LatencyP,
    pub message_bytes: Sides<u64>,
    pub messages: Sides<u64>,
    pub method: String,
    pub status: BTreeMap<String, u64>,
}

/// `grpc` of the analysis.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GrpcReport {
    /// Calls whose request content-type is gRPC.
    pub calls: u64,
    /// Per side, as the keys `client` and `server`.
    pub sides: Sides<GrpcSide>,
    pub methods: Vec<GrpcMethod>,
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
