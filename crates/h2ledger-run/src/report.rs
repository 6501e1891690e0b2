//! The typed report of a run: what the tables and the JSON both render.
//!
//! A [`Report`] is one scope (the whole capture, or one phase): its ledger, its analysis when
//! one was attached, and for the whole capture the capture, TCP, TLS and live-drop facts.
//! Its JSON is the published shape (docs/ledger.md): the ledger's keys, each side extended
//! with `per_call` and the analysis of that side, the analysis' other keys at the top level,
//! and a phase's `name`, `start` and `end` (seconds since the epoch). Times are [`Nanos`]
//! everywhere in the report and become seconds only when serialized.

use std::collections::BTreeMap;

use h2ledger_core::analysis::SideAnalysis;
use h2ledger_core::{AnalysisReport, ConnLedger, LedgerReport, SideTally, Sides};
use h2ledger_tcp::{Nanos, Stats};
use h2ledger_tls::TlsReport;
use serde::{Serialize, Serializer};

use crate::pipeline::CaptureStats;

/// TCP reassembly facts: the JSON `tcp` object.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TcpReport {
    pub segments: u64,
    pub retransmissions: u64,
    pub overlaps: u64,
    pub out_of_order: u64,
    pub gaps: u64,
    pub gap_bytes: u64,
    pub truncated: u64,
    pub bound_hits: u64,
    pub evicted: u64,
    pub resumed: u64,
    pub data_after_rst: u64,
}

impl From<&Stats> for TcpReport {
    fn from(t: &Stats) -> TcpReport {
        TcpReport {
            segments: t.tcp_segments,
            retransmissions: t.retransmissions,
            overlaps: t.overlaps,
            out_of_order: t.out_of_order,
            gaps: t.gaps,
            gap_bytes: t.gap_bytes,
            truncated: t.truncated,
            bound_hits: t.bound_hits,
            evicted: t.evicted,
            resumed: t.resumed,
            data_after_rst: t.data_after_rst,
        }
    }
}

/// A live capture's packet counters (libpcap's): the JSON `drops` object.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Drops {
    /// Packets the filter accepted.
    pub received: u64,
    /// Dropped by the kernel: its buffer was full.
    pub kernel: u64,
    /// Dropped by the interface or its driver.
    pub interface: u64,
}

/// One scope's report: the whole capture (`name` empty) or one phase.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// `phase N` for a phase; empty for the whole capture.
    pub name: String,
    /// The scope's bounds: the first and last packet for the whole capture, `[start, end)`
    /// for a phase.
    pub start: Option<Nanos>,
    pub end: Option<Nanos>,
    pub ledger: LedgerReport,
    pub analysis: Option<AnalysisReport>,
    /// The whole capture's packet counts, reassembly, TLS and (live) drop counters.
    pub capture: Option<CaptureStats>,
    pub tcp: Option<TcpReport>,
    pub tls: Option<TlsReport>,
    pub drops: Option<Drops>,
}

impl Report {
    /// Whether this is one phase of a run.
    pub fn is_phase(&self) -> bool {
        self.start.is_some() && !self.name.is_empty()
    }

    /// `n` per call (None without calls): the `per_call` values.
    fn per_call(&self, n: u64) -> Option<f64> {
        per_call(n, self.ledger.calls)
    }
}

fn per_call(n: u64, calls: u64) -> Option<f64> {
    (calls > 0).then(|| n as f64 / calls as f64)
}

/// Nanoseconds since the epoch as seconds, the unit of every time in the JSON.
pub fn secs(ns: Nanos) -> f64 {
    ns as f64 / 1e9
}

pub(crate) fn secs_opt<S: Serializer>(t: &Option<Nanos>, s: S) -> Result<S::Ok, S::Error> {
    t.map(secs).serialize(s)
}

#[derive(Serialize)]
struct PerCall {
    frames: Option<f64>,
    control_frames: Option<f64>,
    writes: Option<f64>,
}

#[derive(Serialize)]
struct SideJson<'a> {
    #[serde(flatten)]
    tally: &'a SideTally,
    per_call: PerCall,
    #[serde(flatten)]
    analysis: Option<&'a SideAnalysis>,
}

/// The JSON object of a [`Report`]. The ledger's keys are listed here (its `sides` are
/// extended); the analysis' keys come from [`AnalysisReport`] itself.
#[derive(Serialize)]
struct Json<'a> {
    connections: u64,
    calls: u64,
    upgraded_calls: u64,
    sides: Sides<SideJson<'a>>,
    per_connection: &'a [ConnLedger],
    per_connection_omitted: u64,
    warnings: &'a [String],
    anomalies: &'a BTreeMap<String, u64>,
    #[serde(flatten)]
    analysis: Option<&'a AnalysisReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    capture: Option<&'a CaptureStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tcp: Option<&'a TcpReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    start: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    end: Option<Option<f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tls: Option<&'a TlsReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    drops: Option<&'a Drops>,
}

impl Serialize for Report {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let l = &self.ledger;
        let a = self.analysis.as_ref();
        let phase = self.is_phase();
        Json {
            connections: l.connections,
            calls: l.calls,
            upgraded_calls: l.upgraded_calls,
            sides: Sides::from_fn(|side| {
                let t = l.sides.get(side);
                SideJson {
                    tally: t,
                    per_call: PerCall {
                        frames: self.per_call(t.frames.total()),
                        control_frames: self.per_call(t.frames.control()),
                        writes: self.per_call(t.writes),
                    },
                    analysis: a.map(|a| a.sides.get(side)),
                }
            }),
            per_connection: &l.per_connection,
            per_connection_omitted: l.per_connection_omitted,
            warnings: &l.warnings,
            anomalies: &l.anomalies,
            analysis: a,
            capture: self.capture.as_ref(),
            tcp: self.tcp.as_ref(),
            name: phase.then_some(self.name.as_str()),
            start: phase.then(|| self.start.map(secs)).flatten(),
            end: phase.then(|| self.end.map(secs)),
            tls: self.tls.as_ref(),
            drops: self.drops.as_ref(),
        }
        .serialize(s)
    }
}

/// What `sniff --every` prints at each tick (`--format json`, one line): the running ledger
/// with the capture facts, and the last complete period's ledger.
#[derive(Serialize)]
pub struct Tick<'a> {
    #[serde(flatten)]
    pub ledger: &'a LedgerReport,
    pub capture: &'a CaptureStats,
    pub tcp: TcpReport,
    pub drops: Drops,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last: Option<&'a LedgerReport>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn keys(v: &Value) -> Vec<String> {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    }

    /// The report's JSON keeps every key of the ledger and of the analysis (nothing is lost
    /// when either grows a key), and adds only its own.
    #[test]
    fn json_has_every_ledger_and_analysis_key() {
        let r = Report {
            analysis: Some(AnalysisReport::default()),
            ..Report::default()
        };
        let v = serde_json::to_value(&r).unwrap();
        let mut want = keys(&serde_json::to_value(&r.ledger).unwrap());
        want.extend(keys(
            &serde_json::to_value(r.analysis.as_ref().unwrap()).unwrap(),
        ));
        want.sort();
        assert_eq!(keys(&v), want);
        let side = &v["sides"]["client"];
        let mut want = keys(&serde_json::to_value(SideTally::default()).unwrap());
        want.extend(keys(
            &serde_json::to_value(SideAnalysis::default()).unwrap(),
        ));
        want.push("per_call".into());
        want.sort();
        assert_eq!(keys(side), want);
        assert_eq!(side["per_call"]["frames"], Value::Null);
    }

    #[test]
    fn a_phase_has_its_name_and_bounds_in_seconds() {
        let r = Report {
            name: "phase 2".into(),
            start: Some(1_500_000_000),
            end: Some(2_000_000_000),
            ..Report::default()
        };
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["name"], "phase 2");
        assert_eq!(v["start"], 1.5);
        assert_eq!(v["end"], 2.0);
        let whole = serde_json::to_value(Report::default()).unwrap();
        assert!(whole.get("name").is_none() && whole.get("tcp").is_none());
    }
}
