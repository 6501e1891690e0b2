//! The figures the counters are raised to ([`Figures`]): a run's running state or its final
//! report, and where each `limit` label's value comes from in the JSON ([`LIMITS`]).

use std::collections::BTreeMap;

use h2ledger_core::analysis::AnalysisLimits;
use h2ledger_core::flow::FlowReport;
use h2ledger_core::{LedgerReport, Side, SideTally, Sides};
use h2ledger_run::{Drops, Report, Running, TcpReport};
/// The figures the counters are raised to: a run's running state ([`Figures::running`]) or
/// its final report ([`Figures::report`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Figures {
    /// Per side: frames by ledger type, BDP pings, writes, bytes (JSON `sides`).
    pub sides: Sides<SideTally>,
    /// Flow-control stalls per side, by window: stream, connection, both (JSON
    /// `flow_control.*.by_limit`).
    pub stalls: Sides<[u64; 3]>,
    /// GOAWAY frames with ENHANCE_YOUR_CALM per sending side (JSON `too_many_pings`, the
    /// `goaways[]` with `too_many_pings`).
    pub calm_goaways: Sides<u64>,
    /// GOAWAY and RST_STREAM frames by sending side and error code (every one, also beyond
    /// the 1,000 GOAWAYs the JSON lists).
    pub error_codes: h2ledger_core::analysis::ErrorCodes,
    /// HTTP/2 connections (JSON `connections`).
    pub connections: u64,
    /// HTTP/2 connections open now.
    pub open: u64,
    /// Packets read (JSON `capture.packets`).
    pub packets: u64,
    /// Live: libpcap's drop counters (JSON `drops`).
    pub drops: Option<Drops>,
    /// Limits hit, by name (see [`LIMITS`]).
    pub limits: BTreeMap<&'static str, u64>,
}

/// The `limit` label values fed from a run's figures, with where each comes from in the JSON;
/// `metrics_paths` and `metrics_statuses` count the calls whose label became `other`.
pub const LIMITS: [(&str, &str); 12] = [
    ("connections", "tcp.evicted"),
    ("evicted_forgotten", "tcp.evicted_forgotten"),
    ("reassembly", "tcp.bound_hits"),
    ("settings", "anomalies.settings-cap"),
    ("streams", "anomalies.streams-cap"),
    ("hpack_table", "anomalies.hpack-cap"),
    ("detection", "anomalies.detect-cap"),
    ("phases", "anomalies.phases-capped"),
    ("methods", "limits.methods_folded"),
    ("calls", "limits.untracked_calls"),
    ("flow_streams", "flow_control.untracked_streams"),
    ("grpc_calls", "grpc.untracked_calls"),
];

impl Figures {
    fn of(
        ledger: &LedgerReport,
        tcp: Option<&TcpReport>,
        flow: Option<&FlowReport>,
        limits: Option<&AnalysisLimits>,
        grpc_untracked: u64,
    ) -> Figures {
        let mut f = Figures {
            sides: ledger.sides.clone(),
            connections: ledger.connections,
            ..Figures::default()
        };
        if let Some(fl) = flow {
            for s in Side::ALL {
                let b = &fl.sides.get(s).by_limit;
                *f.stalls.get_mut(s) = [b.stream, b.connection, b.both];
            }
        }
        let anomaly = |k: &str| ledger.anomalies.get(k).copied().unwrap_or(0);
        let tcp = tcp.copied().unwrap_or_default();
        let l = limits.cloned().unwrap_or_default();
        let values = [
            tcp.evicted,
            tcp.evicted_forgotten,
            tcp.bound_hits,
            anomaly("settings-cap"),
            anomaly("streams-cap"),
            anomaly("hpack-cap"),
            anomaly("detect-cap"),
            anomaly("phases-capped"),
            l.methods_folded,
            l.untracked_calls,
            flow.map_or(0, |f| f.untracked_streams),
            grpc_untracked,
        ];
        for ((name, _), v) in LIMITS.iter().zip(values) {
            f.limits.insert(name, v);
        }
        f
    }

    /// A finished run's figures: its report's, the JSON's (`drops` included, none open).
    pub fn report(r: &Report) -> Figures {
        let a = r.analysis.as_ref();
        let mut f = Figures::of(
            &r.ledger,
            r.tcp.as_ref(),
            a.map(|a| &a.flow_control),
            a.map(|a| &a.limits),
            a.map_or(0, |a| a.grpc.untracked_calls),
        );
        f.packets = r.capture.as_ref().map_or(0, |c| c.packets);
        f.drops = r.drops;
        for g in a.map(|a| a.goaways.as_slice()).unwrap_or_default() {
            if g.too_many_pings {
                let s = if g.side == "client" {
                    Side::Client
                } else {
                    Side::Server
                };
                f.calm_goaways[s] += 1;
            }
        }
        f
    }

    /// Adds `o`'s figures (another session's, `sniff --workers`): every count adds, the
    /// connections open now too, the drop counters when either has them.
    pub fn add(&mut self, o: &Figures) {
        for s in Side::ALL {
            self.sides.get_mut(s).merge(o.sides.get(s));
            for (a, b) in self.stalls.get_mut(s).iter_mut().zip(o.stalls.get(s)) {
                *a += b;
            }
            self.calm_goaways[s] += o.calm_goaways[s];
            for (a, b) in self.error_codes.goaway[s]
                .iter_mut()
                .zip(&o.error_codes.goaway[s])
            {
                *a += b;
            }
            for (a, b) in self.error_codes.rst_stream[s]
                .iter_mut()
                .zip(&o.error_codes.rst_stream[s])
            {
                *a += b;
            }
        }
        self.connections += o.connections;
        self.open += o.open;
        self.packets += o.packets;
        if let Some(d) = o.drops {
            let m = self.drops.get_or_insert_with(Drops::default);
            m.received += d.received;
            m.kernel += d.kernel;
            m.interface += d.interface;
        }
        for (k, v) in &o.limits {
            *self.limits.entry(k).or_default() += v;
        }
    }

    /// A run in progress ([`h2ledger_run::Session::running`]), with a live capture's drops.
    pub fn running(r: &Running, drops: Option<Drops>) -> Figures {
        let mut f = Figures::of(
            &r.ledger,
            Some(&r.tcp),
            r.flow.as_ref(),
            r.limits.as_ref(),
            r.grpc_untracked_calls,
        );
        f.open = r.open;
        f.calm_goaways = r.calm_goaways;
        f.error_codes = r.error_codes;
        f.packets = r.capture.packets;
        f.drops = drops;
        f.limits.insert("ping_rtt_samples", r.rtts_dropped);
        f
    }
}
