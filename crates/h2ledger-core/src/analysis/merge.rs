//! The analysis of parts merged into the analysis of the whole (issue 39: `h2ledger merge`,
//! `replay -j N`, `replay A B C` with `--analyze`).
//!
//! A whole capture's [`AnalysisReport`] carries, besides its published figures, what they
//! are made of ([`MergeData`], the report's `merge` key): every latency histogram as data
//! ([`HistBuckets`]), the stall and message-size histograms ([`LogBuckets`]), the integer
//! sums behind the means, and each method's first time. [`merge`] adds the counts, merges the
//! histograms bucket by bucket and computes every figure again as a run computes it, so the
//! merged analysis of parts whose connections are disjoint is the analysis of the whole
//! (docs/scale.md says where it cannot be, and why).

use std::collections::BTreeMap;

use serde::{Serialize, Serializer};

use super::build::ratio;
use super::{
    AnalysisReport, BytesPerWrite, FramesPerWrite, Hist, Latency, MethodReport, MethodSide,
    PingSide, RoundSide, SideAnalysis, CALL_KINDS, MAX_GOAWAYS, MAX_METHODS,
};
use crate::flow::FlowSide;
use crate::grpc::{GrpcMethod, LatencyP, MessageSize};
use crate::model::{Side, Sides};
use crate::stats::{HistBuckets, LatencyHist, LogBuckets, LogHist, Percentiles};
use h2ledger_tcp::Nanos;

/// `merge`: what a whole capture's analysis is made of beyond its published figures, so
/// that the analyses of parts merge into the whole's. A whole capture's report has it, and
/// each phase's (phases of parts merge phase by phase: decision 413).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MergeData {
    /// The sum behind `concurrency.mean_in_flight`.
    pub concurrency: ConcurrencyData,
    /// Per side, the stall histogram of `flow_control.*.stalled_us` (nanoseconds).
    pub flow_control: Sides<LogBuckets>,
    /// The message-size histograms of `grpc.*.message_size`, and the latency of each of
    /// `grpc.methods`.
    pub grpc: GrpcData,
    /// The histograms of `latency_us` (nanoseconds).
    pub latency_us: LatencyData,
    /// One per element of `methods`, in its order: the method's first time and latency.
    pub methods: Vec<MethodData>,
    /// Per side, the sums behind `bytes_per_write.mean`, `frames_per_write.mean` and
    /// `rounds.calls_per_round`.
    pub sides: Sides<SideData>,
}

/// `merge.concurrency`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ConcurrencyData {
    /// Other calls in flight when each call started, summed over the calls.
    pub in_flight_sum: u64,
}

/// `merge.grpc`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct GrpcData {
    /// The client's message sizes (bytes).
    pub client: LogBuckets,
    /// The latency (nanoseconds) of each element of `grpc.methods`, in its order.
    pub methods: Vec<HistBuckets>,
    /// The server's message sizes (bytes).
    pub server: LogBuckets,
}

/// `merge.latency_us`: the histograms of `latency_us`, nanoseconds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LatencyData {
    /// `latency_us.call`.
    pub call: HistBuckets,
    /// `latency_us.first_byte`.
    pub first_byte: HistBuckets,
    /// `latency_us.ping_rtt`.
    pub ping_rtt: HistBuckets,
    /// `latency_us.ping_rtt_by_label`.
    pub ping_rtt_by_label: BTreeMap<&'static str, HistBuckets>,
}

/// One element of `merge.methods`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MethodData {
    /// The request HEADERS of the method's earliest call (seconds in the JSON).
    #[serde(serialize_with = "secs")]
    pub first: Nanos,
    /// The method's latency (nanoseconds).
    pub latency_us: HistBuckets,
}

/// One side of `merge.sides`: the sums of the analysis' write and round counters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SideData {
    /// Payload bytes of the writes counted in `bytes_per_write`.
    pub bytes: u64,
    /// Frames that ended in a write, summed over the writes in which one ends.
    pub frames_in_writes: u64,
    /// Distinct calls in a BDP round, summed over the rounds.
    pub round_calls: u64,
    /// Writes counted in `bytes_per_write`.
    pub writes: u64,
}

fn secs<S: Serializer>(t: &Nanos, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(*t as f64 / 1e9)
}

/// What could not be merged exactly, said in the merged report's warnings.
#[derive(Debug, Default)]
pub struct Inexact {
    /// Warnings, one line each.
    pub warnings: Vec<String>,
}

/// Why an analysis cannot be merged (a report read back that is not one a run wrote).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeError(pub String);

impl std::fmt::Display for MergeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn hist(b: &HistBuckets, what: &str) -> Result<LatencyHist, MergeError> {
    LatencyHist::from_buckets(b).map_err(|e| MergeError(format!("`merge.{what}`: {e}")))
}

fn log(b: &LogBuckets, what: &str) -> Result<LogHist, MergeError> {
    LogHist::from_data(b.clone()).map_err(|e| MergeError(format!("`merge.{what}`: {e}")))
}

fn add_hist(a: &mut Hist, b: &Hist) {
    if a.0.len() < b.0.len() {
        a.0.resize(b.0.len(), 0);
    }
    for (x, y) in a.0.iter_mut().zip(&b.0) {
        *x += y;
    }
}

fn add_counts<K: Ord + Clone>(a: &mut BTreeMap<K, u64>, b: &BTreeMap<K, u64>) {
    for (k, n) in b {
        *a.entry(k.clone()).or_default() += n;
    }
}

/// A method's calls summed over the parts.
struct MethodSum {
    first: Nanos,
    report: MethodReport,
    latency: LatencyHist,
}

/// A gRPC method's calls summed over the parts.
struct GrpcSum {
    report: GrpcMethod,
    latency: LatencyHist,
}

/// `parts` (whole-capture analyses, each with its [`MergeData`]; the goaways' `conn`
/// already numbered as in the merged report), in the order of their first packet, merged
/// into the analysis of their union; what cannot be exact is said in [`Inexact`].
pub fn merge(parts: &[&AnalysisReport]) -> Result<(AnalysisReport, Inexact), MergeError> {
    let mut r = AnalysisReport::default();
    let mut d = MergeData::default();
    let mut inexact = Inexact::default();
    let mut lat = [LatencyHist::new(), LatencyHist::new(), LatencyHist::new()];
    let mut by_label: BTreeMap<&'static str, LatencyHist> = BTreeMap::new();
    let mut stalled = [LogHist::default(), LogHist::default()];
    let mut sizes = [LogHist::default(), LogHist::default()];
    // In the order met (parts in time order, each part's in its own order), then sorted by
    // first time: a tie keeps that order, as a run keeps the order it saw them in.
    let mut methods: Vec<MethodSum> = Vec::new();
    let mut method_at: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut grpc_methods: BTreeMap<String, GrpcSum> = BTreeMap::new();
    let mut folded_parts = 0;
    let mut grpc_folded_parts = 0;
    for p in parts {
        let Some(pd) = &p.merge else {
            return Err(MergeError(
                "an analysis without its `merge` key (made before h2ledger carried it: replay again)"
                    .into(),
            ));
        };
        if pd.methods.len() != p.methods.len() || pd.grpc.methods.len() != p.grpc.methods.len() {
            return Err(MergeError(
                "`merge.methods` or `merge.grpc.methods` does not match its list".into(),
            ));
        }
        // Concurrency.
        let c = &mut r.concurrency;
        c.calls += p.concurrency.calls;
        c.max_in_flight = c.max_in_flight.max(p.concurrency.max_in_flight);
        c.reset += p.concurrency.reset;
        c.unfinished += p.concurrency.unfinished;
        d.concurrency.in_flight_sum += pd.concurrency.in_flight_sum;
        // Sides.
        for side in Side::ALL {
            let (a, b) = (r.sides.get_mut(side), p.sides.get(side));
            let (ad, bd) = (d.sides.get_mut(side), pd.sides.get(side));
            ad.bytes += bd.bytes;
            ad.writes += bd.writes;
            ad.frames_in_writes += bd.frames_in_writes;
            ad.round_calls += bd.round_calls;
            a.bytes_per_write.max = a.bytes_per_write.max.max(b.bytes_per_write.max);
            a.writes_without_frame_end += b.writes_without_frame_end;
            add_hist(
                &mut a.frames_per_write.histogram,
                &b.frames_per_write.histogram,
            );
            add_hist(&mut a.writes_by_calls, &b.writes_by_calls);
            a.pings.sent += b.pings.sent;
            a.pings.acked += b.pings.acked;
            a.pings.acks_unmatched += b.pings.acks_unmatched;
            a.rounds.rounds += b.rounds.rounds;
            a.rounds.acked += b.rounds.acked;
            a.rounds.calls_opening += b.rounds.calls_opening;
            add_hist(
                &mut a.rounds.calls_per_round_histogram,
                &b.rounds.calls_per_round_histogram,
            );
            add_counts(&mut a.rst_stream_codes, &b.rst_stream_codes);
            stalled[side.index()].merge(&log(pd.flow_control.get(side), "flow_control")?);
            let g = match side {
                Side::Client => &pd.grpc.client,
                Side::Server => &pd.grpc.server,
            };
            sizes[side.index()].merge(&log(g, "grpc")?);
            // Flow control and gRPC per side.
            let (fa, fb) = (
                r.flow_control.sides.get_mut(side),
                p.flow_control.sides.get(side),
            );
            fa.stalls += fb.stalls;
            fa.unresolved += fb.unresolved;
            fa.by_limit.both += fb.by_limit.both;
            fa.by_limit.connection += fb.by_limit.connection;
            fa.by_limit.stream += fb.by_limit.stream;
            fa.max_window.connection = fa.max_window.connection.max(fb.max_window.connection);
            fa.max_window.stream = fa.max_window.stream.max(fb.max_window.stream);
            let (ga, gb) = (r.grpc.sides.get_mut(side), p.grpc.sides.get(side));
            ga.compressed += gb.compressed;
            ga.incomplete += gb.incomplete;
            ga.messages += gb.messages;
        }
        r.flow_control.unknown_connections += p.flow_control.unknown_connections;
        r.flow_control.untracked_streams += p.flow_control.untracked_streams;
        // Latency.
        let l = &pd.latency_us;
        lat[0].merge(&hist(&l.call, "latency_us.call")?);
        lat[1].merge(&hist(&l.first_byte, "latency_us.first_byte")?);
        lat[2].merge(&hist(&l.ping_rtt, "latency_us.ping_rtt")?);
        for (k, h) in &l.ping_rtt_by_label {
            by_label
                .entry(k)
                .or_default()
                .merge(&hist(h, "latency_us.ping_rtt_by_label")?);
        }
        // Methods: one per (`:method`, `:path`), ordered by their first time below.
        for (m, md) in p.methods.iter().zip(&pd.methods) {
            if m.method == "(other)" && m.http_method.is_empty() {
                folded_parts += 1;
            }
            let h = hist(&md.latency_us, "methods[].latency_us")?;
            let i = *method_at
                .entry((m.http_method.clone(), m.method.clone()))
                .or_insert_with(|| {
                    methods.push(MethodSum {
                        first: md.first,
                        report: MethodReport {
                            method: m.method.clone(),
                            http_method: m.http_method.clone(),
                            ..MethodReport::default()
                        },
                        latency: LatencyHist::new(),
                    });
                    methods.len() - 1
                });
            let e = &mut methods[i];
            e.first = e.first.min(md.first);
            e.report.calls += m.calls;
            add_counts(&mut e.report.status, &m.status);
            for side in Side::ALL {
                let (a, b) = (e.report.sides.get_mut(side), m.sides.get(side));
                add_counts(&mut a.frames, &b.frames);
                a.writes += b.writes;
            }
            e.latency.merge(&h);
        }
        // gRPC.
        r.grpc.calls += p.grpc.calls;
        r.grpc.untracked_calls += p.grpc.untracked_calls;
        r.grpc.methods_folded += p.grpc.methods_folded;
        if p.grpc.methods_folded > 0 {
            grpc_folded_parts += 1;
        }
        for (m, h) in p.grpc.methods.iter().zip(&pd.grpc.methods) {
            let h = hist(h, "grpc.methods[]")?;
            let e = grpc_methods
                .entry(m.method.clone())
                .or_insert_with(|| GrpcSum {
                    report: GrpcMethod {
                        method: m.method.clone(),
                        ..GrpcMethod::default()
                    },
                    latency: LatencyHist::new(),
                });
            e.report.calls += m.calls;
            add_counts(&mut e.report.status, &m.status);
            e.report.messages.client += m.messages.client;
            e.report.messages.server += m.messages.server;
            e.report.message_bytes.client += m.message_bytes.client;
            e.report.message_bytes.server += m.message_bytes.server;
            e.latency.merge(&h);
        }
        // Goaways, limits.
        r.goaways.extend(p.goaways.iter().cloned());
        let (a, b) = (&mut r.limits, &p.limits);
        a.goaways_omitted += b.goaways_omitted;
        a.methods_folded += b.methods_folded;
        a.phase_events_dropped += b.phase_events_dropped;
        a.untracked_calls += b.untracked_calls;
    }
    // Figures computed again from the merged sums and histograms, as a run computes them.
    let n_calls = r.concurrency.calls;
    r.concurrency.mean_in_flight = ratio(d.concurrency.in_flight_sum, n_calls);
    for side in Side::ALL {
        let a: &mut SideAnalysis = r.sides.get_mut(side);
        let ad = d.sides.get(side);
        if a.writes_by_calls.0.is_empty() {
            a.writes_by_calls = Hist(vec![0]);
        }
        a.control_only_writes = a.writes_by_calls.0.first().copied().unwrap_or(0);
        a.frames_per_write = FramesPerWrite {
            mean: ratio(
                ad.frames_in_writes,
                ad.writes.saturating_sub(a.writes_without_frame_end),
            ),
            histogram: std::mem::take(&mut a.frames_per_write.histogram),
        };
        a.bytes_per_write = BytesPerWrite {
            mean: ratio(ad.bytes, ad.writes),
            max: a.bytes_per_write.max,
        };
        a.pings = PingSide {
            unanswered: a.pings.sent - a.pings.acked.min(a.pings.sent),
            ..a.pings.clone()
        };
        a.rounds = RoundSide {
            calls_per_round: ratio(ad.round_calls, a.rounds.rounds),
            share_of_calls_opening: ratio(a.rounds.calls_opening, n_calls),
            calls_per_round_histogram: std::mem::take(&mut a.rounds.calls_per_round_histogram),
            ..a.rounds.clone()
        };
        let i = side.index();
        let f: &mut FlowSide = r.flow_control.sides.get_mut(side);
        f.stalled_us = crate::flow::StalledUs::of(&stalled[i]);
        let g = r.grpc.sides.get_mut(side);
        g.message_bytes = sizes[i].sum;
        g.message_size = MessageSize {
            p50: sizes[i].percentile(50),
            p99: sizes[i].percentile(99),
            max: (sizes[i].count > 0).then_some(sizes[i].max),
        };
    }
    d.flow_control = Sides {
        client: stalled[0].data(),
        server: stalled[1].data(),
    };
    d.grpc.client = sizes[0].data();
    d.grpc.server = sizes[1].data();
    let [call, first_byte, ping_rtt] = lat;
    r.latency_us = Latency {
        call: Percentiles::of_hist(&call),
        first_byte: Percentiles::of_hist(&first_byte),
        ping_rtt: Percentiles::of_hist(&ping_rtt),
        ping_rtt_by_label: by_label
            .iter()
            .map(|(k, h)| (*k, Percentiles::of_hist(h)))
            .collect(),
    };
    d.latency_us = LatencyData {
        call: call.buckets(),
        first_byte: first_byte.buckets(),
        ping_rtt: ping_rtt.buckets(),
        ping_rtt_by_label: by_label.iter().map(|(k, h)| (*k, h.buckets())).collect(),
    };
    // Methods in the order of their first call; beyond MAX_METHODS a run folds the later ones
    // into `(other)`, and so does the merge.
    let mut ms = methods;
    ms.sort_by_key(|m| m.first);
    if ms.len() > MAX_METHODS + 1 || (ms.len() > MAX_METHODS && folded_parts == 0) {
        let rest = ms.split_off(MAX_METHODS);
        let at = ms
            .iter()
            .position(|m| m.report.method == "(other)" && m.report.http_method.is_empty());
        let mut other = match at {
            Some(i) => ms.remove(i),
            None => MethodSum {
                first: rest[0].first,
                report: MethodReport {
                    method: "(other)".into(),
                    ..MethodReport::default()
                },
                latency: LatencyHist::new(),
            },
        };
        for m in rest {
            if !(m.report.method == "(other)" && m.report.http_method.is_empty()) {
                r.limits.methods_folded += m.report.calls;
            }
            other.report.calls += m.report.calls;
            add_counts(&mut other.report.status, &m.report.status);
            for side in Side::ALL {
                let (a, b) = (other.report.sides.get_mut(side), m.report.sides.get(side));
                add_counts(&mut a.frames, &b.frames);
                a.writes += b.writes;
            }
            other.latency.merge(&m.latency);
        }
        ms.push(other);
    }
    if folded_parts > 0 {
        inexact.warnings.push(format!(
            "analysis: {folded_parts} of the merged reports folded methods into `(other)` (more than {MAX_METHODS} distinct :path values): their calls cannot be unfolded, so `methods` is exact in its totals only (docs/scale.md)"
        ));
    }
    for m in ms {
        let mut rep = m.report;
        let n = rep.calls;
        for side in Side::ALL {
            let s: &mut MethodSide = rep.sides.get_mut(side);
            for k in CALL_KINDS {
                s.frames.entry(k).or_default();
            }
            s.frames_per_call = ratio(s.frames.values().sum(), n);
            s.writes_per_call = ratio(s.writes, n);
        }
        rep.latency_us = Percentiles::of_hist(&m.latency);
        d.methods.push(MethodData {
            first: m.first,
            latency_us: m.latency.buckets(),
        });
        r.methods.push(rep);
    }
    // gRPC methods in byte order of the path, at most MAX_GRPC_METHODS.
    let max = crate::grpc::MAX_GRPC_METHODS;
    if grpc_methods.len() > max || grpc_folded_parts > 0 {
        inexact.warnings.push(format!(
            "analysis: grpc.methods of the merged reports hold more than {max} methods together, or a report folded some: a run lists the first {max} it folds, the merge the first {max} in byte order (docs/scale.md)"
        ));
    }
    for (i, (_, g)) in grpc_methods.into_iter().enumerate() {
        if i >= max {
            r.grpc.methods_folded += g.report.calls;
            continue;
        }
        let p = Percentiles::of_hist(&g.latency);
        let mut rep = g.report;
        rep.latency_us = LatencyP {
            p50: p.p50,
            p99: p.p99,
        };
        d.grpc.methods.push(g.latency.buckets());
        r.grpc.methods.push(rep);
    }
    // GOAWAY frames in time order (each part's in its own), the first MAX_GOAWAYS listed.
    r.goaways.sort_by(|a, b| a.time.total_cmp(&b.time));
    if r.goaways.len() > MAX_GOAWAYS {
        r.limits.goaways_omitted += (r.goaways.len() - MAX_GOAWAYS) as u64;
        r.goaways.truncate(MAX_GOAWAYS);
    }
    r.too_many_pings = r.goaways.iter().filter(|g| g.too_many_pings).count() as u64;
    r.merge = Some(d);
    Ok((r, inexact))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A part whose methods are `names` (one call each, a latency of `i` microseconds), the
    /// first seen at `t0` and one a nanosecond apart.
    fn part(names: impl Iterator<Item = String>, t0: Nanos) -> AnalysisReport {
        let mut r = AnalysisReport::default();
        let mut d = MergeData::default();
        for (i, name) in names.enumerate() {
            let mut h = LatencyHist::new();
            h.record(i as i64 * 1000);
            r.methods.push(MethodReport {
                method: name,
                calls: 1,
                ..MethodReport::default()
            });
            d.methods.push(MethodData {
                first: t0 + i as Nanos,
                latency_us: h.buckets(),
            });
            r.concurrency.calls += 1;
        }
        r.merge = Some(d);
        r
    }

    /// Methods of two parts come in the order of their first call, interleaved; the same
    /// method in both parts is one, its calls and latencies added.
    #[test]
    fn methods_follow_their_first_call() {
        let a = part(["/a", "/c"].iter().map(|s| s.to_string()), 10);
        let b = part(["/b", "/a"].iter().map(|s| s.to_string()), 10);
        // a: /a at 10, /c at 11; b: /b at 10, /a at 11.
        let (m, inexact) = merge(&[&a, &b]).unwrap();
        let names: Vec<(&str, u64)> = m
            .methods
            .iter()
            .map(|x| (x.method.as_str(), x.calls))
            .collect();
        assert_eq!(names, [("/a", 2), ("/b", 1), ("/c", 1)]);
        assert_eq!(m.methods[0].latency_us.count, 2);
        assert_eq!(m.methods[0].latency_us.max, Some(1.0));
        assert!(inexact.warnings.is_empty());
        let d = m.merge.as_ref().unwrap();
        assert_eq!(
            d.methods.iter().map(|x| x.first).collect::<Vec<_>>(),
            [10, 10, 11]
        );
        assert_eq!(m.concurrency.calls, 4);
    }

    /// Past MAX_METHODS in all, the later methods fold into `(other)` as a run folds them;
    /// a part that folded cannot be unfolded, and the merge says so.
    #[test]
    fn methods_past_the_cap_fold_and_a_folded_part_is_said() {
        let a = part((0..3000).map(|i| format!("/a{i}")), 0);
        let b = part((0..3000).map(|i| format!("/b{i}")), 1_000_000);
        let (m, inexact) = merge(&[&a, &b]).unwrap();
        assert_eq!(m.methods.len(), MAX_METHODS + 1);
        let other = m.methods.last().unwrap();
        assert_eq!(
            (other.method.as_str(), other.calls),
            ("(other)", 6000 - MAX_METHODS as u64)
        );
        assert_eq!(m.limits.methods_folded, other.calls);
        assert_eq!(m.merge.as_ref().unwrap().methods.len(), m.methods.len());
        assert!(inexact.warnings.is_empty());
        let folded = part(["/x".to_string(), "(other)".to_string()].into_iter(), 5);
        let (_, inexact) = merge(&[&a, &folded]).unwrap();
        assert_eq!(inexact.warnings.len(), 1);
        assert!(
            inexact.warnings[0].contains("(other)"),
            "{:?}",
            inexact.warnings
        );
    }

    /// Data that is not a histogram is refused, not merged.
    #[test]
    fn bad_data_is_refused() {
        let mut a = part(["/a".to_string()].into_iter(), 0);
        a.merge.as_mut().unwrap().methods[0].latency_us.count = 7;
        assert!(merge(&[&a]).is_err());
        let mut b = part(["/a".to_string()].into_iter(), 0);
        b.merge.as_mut().unwrap().methods.clear();
        assert!(merge(&[&b]).is_err());
        let mut c = part(["/a".to_string()].into_iter(), 0);
        c.merge = None;
        assert!(merge(&[&c]).is_err());
    }
}
