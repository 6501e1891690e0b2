//! The typed report of a run: what the tables and the JSON both render.
//!
//! A [`Report`] is one scope (the whole capture, or one phase): its ledger, its analysis when
//! one was attached, and for the whole capture the capture, TCP, TLS and live-drop facts.
//! Its JSON is the published shape (docs/ledger.md): the ledger's keys, each side extended
//! with `per_call` and the analysis of that side, the analysis' other keys at the top level,
//! and a phase's `name`, `start` and `end` (seconds since the epoch). Times are [`Nanos`]
//! everywhere in the report and become seconds only when serialized.

use std::collections::BTreeMap;

use h2ledger_core::analysis::{
    AnalysisLimits, BytesPerWrite, Concurrency, FramesPerWrite, GoAwayReport, Hist, Latency,
    MethodReport, PingSide, RoundSide,
};
use h2ledger_core::findings::Finding;
use h2ledger_core::flow::FlowReport;
use h2ledger_core::grpc::GrpcReport;
use h2ledger_core::{AnalysisReport, ConnLedger, FrameCounts, LedgerReport, Sides, Unlisted};
use h2ledger_tcp::{Nanos, Stats};
use h2ledger_tls::TlsReport;
use serde::{Serialize, Serializer};

/// Packet-level counts of one run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CaptureStats {
    /// First packet time (nanoseconds since the epoch; seconds in the JSON).
    #[serde(serialize_with = "secs_opt")]
    pub first: Option<Nanos>,
    /// Last packet time (nanoseconds since the epoch; seconds in the JSON).
    #[serde(serialize_with = "secs_opt")]
    pub last: Option<Nanos>,
    /// Packets that are not TCP over IPv4 or IPv6.
    pub not_tcp: u64,
    /// Packets read.
    pub packets: u64,
    /// TCP segments among them.
    pub tcp_segments: u64,
    /// Packets whose link, IP or TCP header could not be decoded.
    pub undecodable: u64,
}

/// TCP reassembly facts: the JSON `tcp` object.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TcpReport {
    /// Times a direction's reassembly buffer or hole list was full.
    pub bound_hits: u64,
    /// Segments with payload after a RST on their connection: the other side's bytes in
    /// flight are counted as its writes (within a second of the RST).
    pub data_after_rst: u64,
    /// Of those, segments ignored: sent by the side that reset, or more than a second later.
    pub data_after_rst_ignored: u64,
    /// Connections closed to stay within `--max-connections`.
    pub evicted: u64,
    /// Evicted connections forgotten, beyond the 131,072 remembered: one that came back was
    /// counted again as a new connection.
    pub evicted_forgotten: u64,
    /// Bytes in those gaps.
    pub gap_bytes: u64,
    /// Stretches of a direction the capture lacks.
    pub gaps: u64,
    /// Segments that came before the bytes preceding them.
    pub out_of_order: u64,
    /// Segments overlapping bytes already seen, with new bytes too.
    pub overlaps: u64,
    /// Connections seen again after being evicted.
    pub resumed: u64,
    /// Segments that carried only bytes already seen.
    pub retransmissions: u64,
    /// TCP segments.
    pub segments: u64,
    /// Segments cut short by the snap length.
    pub truncated: u64,
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
            evicted_forgotten: t.evicted_forgotten,
            resumed: t.resumed,
            data_after_rst: t.data_after_rst,
            data_after_rst_ignored: t.data_after_rst_ignored,
        }
    }
}

/// A live capture's packet counters (libpcap's): the JSON `drops` object.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Drops {
    /// Dropped by the interface or its driver.
    pub interface: u64,
    /// Dropped by the kernel: its buffer was full.
    pub kernel: u64,
    /// Packets the filter accepted.
    pub received: u64,
}

/// One scope's report: the whole capture (`name` empty) or one phase.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// `phase N` for a phase; empty for the whole capture.
    pub name: String,
    /// The scope's bounds: the first and last packet for the whole capture, `[start, end)`
    /// for a phase.
    pub start: Option<Nanos>,
    /// See `start`.
    pub end: Option<Nanos>,
    /// The frame ledger.
    pub ledger: LedgerReport,
    /// The analysis, when one was attached.
    pub analysis: Option<AnalysisReport>,
    /// The whole capture's packet counts, reassembly, TLS and (live) drop counters.
    pub capture: Option<CaptureStats>,
    /// The whole capture's reassembly counts.
    pub tcp: Option<TcpReport>,
    /// The whole capture's TLS facts.
    pub tls: Option<TlsReport>,
    /// A live capture's drop counters.
    pub drops: Option<Drops>,
    /// The findings (the whole run's, most severe first; a phase's: those that held in it).
    pub findings: Option<Vec<Finding>>,
}

impl Report {
    /// Whether this is one phase of a run.
    pub fn is_phase(&self) -> bool {
        self.start.is_some() && !self.name.is_empty()
    }

    /// The severity of its most severe finding (`--fail-on` compares it).
    pub fn worst(&self) -> Option<h2ledger_core::findings::Severity> {
        self.findings
            .as_deref()
            .and_then(|f| f.iter().map(|x| x.severity).max())
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
    control_frames: Option<f64>,
    frames: Option<f64>,
    writes: Option<f64>,
}

/// One side of a report: the ledger's keys, `per_call`, and the analysis' keys of that side,
/// in the published order.
#[derive(Serialize)]
struct SideJson<'a> {
    bdp_pings: u64,
    bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    bytes_per_write: Option<&'a BytesPerWrite>,
    #[serde(skip_serializing_if = "Option::is_none")]
    control_only_writes: Option<u64>,
    frames: &'a FrameCounts,
    #[serde(skip_serializing_if = "Option::is_none")]
    frames_per_write: Option<&'a FramesPerWrite>,
    per_call: PerCall,
    ping_labels: &'a BTreeMap<&'static str, u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pings: Option<&'a PingSide>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rounds: Option<&'a RoundSide>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rst_stream_codes: Option<&'a std::collections::BTreeMap<String, u64>>,
    tls_records: u64,
    writes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    writes_by_calls: Option<&'a Hist>,
    #[serde(skip_serializing_if = "Option::is_none")]
    writes_without_frame_end: Option<u64>,
}

/// The JSON object of a [`Report`]: the ledger's keys (its `sides` extended), the analysis'
/// keys, the whole capture's facts or a phase's name and bounds, in the published order
/// (alphabetical, `phases` last); `record` and `type` for a JSON line.
#[derive(Serialize)]
struct Json<'a, P: Serialize> {
    anomalies: &'a BTreeMap<String, u64>,
    calls: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    capture: Option<&'a CaptureStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    concurrency: Option<&'a Concurrency>,
    connections: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    drops: Option<&'a Drops>,
    #[serde(skip_serializing_if = "Option::is_none")]
    end: Option<Option<f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    findings: Option<&'a [Finding]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    flow_control: Option<&'a FlowReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    goaways: Option<&'a [GoAwayReport]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    grpc: Option<&'a GrpcReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    latency_us: Option<&'a Latency>,
    #[serde(skip_serializing_if = "Option::is_none")]
    limits: Option<&'a AnalysisLimits>,
    #[serde(skip_serializing_if = "Option::is_none")]
    merge: Option<Box<serde_json::value::RawValue>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    methods: Option<&'a [MethodReport]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    per_connection: &'a [ConnLedger],
    per_connection_omitted: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    record: Option<&'a str>,
    sides: Sides<SideJson<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    start: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tcp: Option<&'a TcpReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tls: Option<&'a TlsReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    too_many_pings: Option<u64>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    kind: Option<&'a str>,
    /// `null` when not known; absent when none (or a phase).
    #[serde(skip_serializing_if = "Option::is_none")]
    unlisted_first: Option<Option<Vec<f64>>>,
    upgraded_calls: u64,
    warnings: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    phases: Option<P>,
}

impl Report {
    fn json<P: Serialize>(&self, tag: Option<&'static str>, phases: Option<P>) -> Json<'_, P> {
        let l = &self.ledger;
        let a = self.analysis.as_ref();
        let phase = self.is_phase();
        Json {
            anomalies: &l.anomalies,
            calls: l.calls,
            capture: self.capture.as_ref(),
            concurrency: a.map(|a| &a.concurrency),
            connections: l.connections,
            drops: self.drops.as_ref(),
            end: phase.then(|| self.end.map(secs)),
            findings: self.findings.as_deref(),
            flow_control: a.map(|a| &a.flow_control),
            goaways: a.map(|a| &a.goaways[..]),
            grpc: a.map(|a| &a.grpc),
            latency_us: a.map(|a| &a.latency_us),
            limits: a.map(|a| &a.limits),
            merge: a.and_then(|a| a.merge.as_ref()).and_then(one_line),
            methods: a.map(|a| &a.methods[..]),
            name: phase.then_some(self.name.as_str()),
            per_connection: &l.per_connection,
            per_connection_omitted: l.per_connection_omitted,
            record: tag,
            sides: Sides::from_fn(|side| {
                let t = l.sides.get(side);
                let s = a.map(|a| a.sides.get(side));
                SideJson {
                    bdp_pings: t.bdp_pings,
                    bytes: t.bytes,
                    bytes_per_write: s.map(|s| &s.bytes_per_write),
                    control_only_writes: s.map(|s| s.control_only_writes),
                    frames: &t.frames,
                    frames_per_write: s.map(|s| &s.frames_per_write),
                    per_call: PerCall {
                        control_frames: self.per_call(t.frames.control()),
                        frames: self.per_call(t.frames.total()),
                        writes: self.per_call(t.writes),
                    },
                    ping_labels: &t.ping_labels,
                    pings: s.map(|s| &s.pings),
                    rounds: s.map(|s| &s.rounds),
                    rst_stream_codes: s.map(|s| &s.rst_stream_codes),
                    tls_records: t.tls_records,
                    writes: t.writes,
                    writes_by_calls: s.map(|s| &s.writes_by_calls),
                    writes_without_frame_end: s.map(|s| s.writes_without_frame_end),
                }
            }),
            start: phase.then(|| self.start.map(secs)).flatten(),
            tcp: self.tcp.as_ref(),
            tls: self.tls.as_ref(),
            too_many_pings: a.map(|a| a.too_many_pings),
            kind: tag,
            unlisted_first: match &l.unlisted_first {
                _ if phase => None,
                Unlisted::NotGiven => None,
                Unlisted::Known(v) if v.is_empty() => None,
                Unlisted::Known(v) => Some(Some(v.iter().map(|&t| secs(t)).collect())),
                Unlisted::Unknown => Some(None),
            },
            upgraded_calls: l.upgraded_calls,
            warnings: &l.warnings,
            phases,
        }
    }

    /// This report as a JSON line: its object with `record` and `type` set to `tag`.
    pub fn tagged(&self, tag: &'static str) -> impl Serialize + '_ {
        self.json::<()>(Some(tag), None)
    }

    /// This report with `phases`, an array written one element at a time as the iterator
    /// builds them (so that a run of 1,000 phases never holds 1,000 reports), as its last key.
    pub fn with_phases<'a, I: Iterator<Item = Report> + 'a>(
        &'a self,
        phases: I,
    ) -> impl Serialize + 'a {
        self.json(None, Some(Lazy(std::cell::RefCell::new(Some(phases)))))
    }
}

/// `merge` (what the analysis' figures are made of: histograms as data, for `h2ledger
/// merge`) written on one line even in pretty JSON: thousands of bucket counts and values
/// would otherwise take a line each (decision 394).
fn one_line(
    d: &h2ledger_core::analysis::merge::MergeData,
) -> Option<Box<serde_json::value::RawValue>> {
    serde_json::value::to_raw_value(d).ok()
}

/// A sequence serialized from an iterator, once.
struct Lazy<I>(std::cell::RefCell<Option<I>>);

impl<I: Iterator<Item = Report>> Serialize for Lazy<I> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = s.serialize_seq(None)?;
        if let Some(it) = self.0.borrow_mut().take() {
            for r in it {
                seq.serialize_element(&r)?;
            }
        }
        seq.end()
    }
}

impl Serialize for Report {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.json::<()>(None, None).serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use h2ledger_core::analysis::SideAnalysis;
    use h2ledger_core::SideTally;
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
