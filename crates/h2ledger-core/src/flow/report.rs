//! `flow_control` of the analysis: per side, per scope.

use serde::Serialize;

use super::state::{FlowAcc, Limit};
use crate::model::Sides;

/// `flow_control.client` / `.server` of the analysis.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FlowSide {
    /// Stalls by the window that was <= 0 when they began.
    pub by_limit: ByLimit,
    /// The largest windows this side reached.
    pub max_window: MaxWindow,
    /// Time stalled, microseconds, over the stalls that ended.
    pub stalled_us: StalledUs,
    /// DATA frames without END_STREAM after which this side's available window was <= 0; every
    /// stall, ended or not.
    pub stalls: u64,
    /// Of those, stalls the capture never sees end (not timed).
    pub unresolved: u64,
}

/// `by_limit`: stalls by the window that was <= 0 when they began.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ByLimit {
    /// Both the stream and the connection window.
    pub both: u64,
    /// The connection window only.
    pub connection: u64,
    /// The stream window only.
    pub stream: u64,
}

/// Time stalled, microseconds, over the stalls that ended (p50/p99 per [`crate::stats::LogHist`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StalledUs {
    /// The longest stall (exact); `null` without a stall that ended.
    pub max: Option<f64>,
    /// Median stall; `null` without a stall that ended.
    pub p50: Option<f64>,
    /// 99th percentile stall; `null` without a stall that ended.
    pub p99: Option<f64>,
    /// Sum of every ended stall (exact).
    pub total: f64,
}

impl StalledUs {
    /// The figures of a stall histogram (nanoseconds), in microseconds.
    pub(crate) fn of(h: &crate::stats::LogHist) -> StalledUs {
        let us = |ns: u64| ns as f64 / 1000.0;
        StalledUs {
            total: us(h.sum),
            p50: h.percentile(50).map(us),
            p99: h.percentile(99).map(us),
            max: (h.count > 0).then(|| us(h.max)),
        }
    }
}

/// `max_window`: the largest windows of the sending side, bytes (docs/ledger.md, "Flow
/// control").
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MaxWindow {
    /// The largest value its connection window reached.
    pub connection: i64,
    /// The largest value any of its stream windows reached.
    pub stream: i64,
}

impl FlowSide {
    pub(super) fn of(a: &FlowAcc) -> FlowSide {
        let h = &a.stalled;
        FlowSide {
            stalls: a.stalls,
            unresolved: a.unresolved,
            by_limit: ByLimit {
                stream: a.by_limit[Limit::Stream as usize],
                connection: a.by_limit[Limit::Connection as usize],
                both: a.by_limit[Limit::Both as usize],
            },
            stalled_us: StalledUs::of(h),
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
    /// Connections whose windows are unknown (start not captured, HTTP/2 after other bytes, or
    /// framing lost): nothing of them is counted (decision 38).
    pub unknown_connections: u64,
    /// Streams not followed because [`super::MAX_FLOW_STREAMS`] were open.
    pub untracked_streams: u64,
}
