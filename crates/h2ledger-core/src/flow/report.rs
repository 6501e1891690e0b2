//! `flow_control` of the analysis: per side, per scope.

use serde::Serialize;

use super::state::{FlowAcc, Limit};
use crate::model::Sides;

/// `flow_control.client` / `.server` of the analysis.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FlowSide {
    pub by_limit: ByLimit,
    pub max_window: MaxWindow,
    pub stalled_us: StalledUs,
    pub stalls: u64,
    pub unresolved: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ByLimit {
    pub both: u64,
    pub connection: u64,
    pub stream: u64,
}

/// Time stalled, microseconds, over the stalls that ended (p50/p99 per [`crate::stats::LogHist`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StalledUs {
    pub max: Option<f64>,
    pub p50: Option<f64>,
    pub p99: Option<f64>,
    pub total: f64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MaxWindow {
    pub connection: i64,
    pub stream: i64,
}

impl FlowSide {
    pub(super) fn of(a: &FlowAcc) -> FlowSide {
        let us = |ns: u64| ns as f64 / 1000.0;
        let h = &a.stalled;
        FlowSide {
            stalls: a.stalls,
            unresolved: a.unresolved,
            by_limit: ByLimit {
                stream: a.by_limit[Limit::Stream as usize],
                connection: a.by_limit[Limit::Connection as usize],
                both: a.by_limit[Limit::Both as usize],
            },
            stalled_us: StalledUs {
                total: us(h.sum),
                p50: h.percentile(50).map(us),
                p99: h.percentile(99).map(us),
                max: (h.count > 0).then(|| us(h.max)),
            },
            max_window: MaxWindow {
                stream: a.max_stream,
                connection: a.max_conn,
            },
        }
    }
}

/// `flow_control` of the analysis.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FlowReport {
    /// Per side, as the keys `client` and `server`.
    #[serde(flatten)]
    pub sides: Sides<FlowSide>,
    pub unknown_connections: u64,
    /// Streams not followed because [`super::MAX_FLOW_STREAMS`] were open.
    pub untracked_streams: u64,
}
