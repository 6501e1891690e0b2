//! The analysis of a published report (`replay --analyze -T json`) read back: the counts
//! its figures add from and its `merge` key (histograms as data, the sums behind the
//! means, each method's first time). Figures a merge computes again (percentiles, means,
//! per-call ratios, `unanswered`, `too_many_pings`) are not read.

use std::collections::BTreeMap;

use h2ledger_core::analysis::merge::{
    ConcurrencyData, GrpcData, LatencyData, MergeData, MethodData, SideData,
};
use h2ledger_core::analysis::{
    AnalysisLimits, AnalysisReport, Concurrency, GoAwayReport, Hist, MethodReport, MethodSide,
    SideAnalysis, CALL_KINDS,
};
use h2ledger_core::flow::{ByLimit, FlowReport, FlowSide, MaxWindow};
use h2ledger_core::grpc::{GrpcMethod, GrpcReport, GrpcSide};
use h2ledger_core::stats::{HistBuckets, LogBuckets};
use h2ledger_core::{Side, Sides};
use serde_json::{Map, Value};

use super::{b, counts, err, field, intern, nanos, obj, s, u, R};

fn sides<T>(v: &Value, at: &str, f: impl Fn(&Value, &str) -> R<T>) -> R<Sides<T>> {
    let m = obj(v, at)?;
    Ok(Sides {
        client: f(field(m, "client", at)?, &format!("{at}.client"))?,
        server: f(field(m, "server", at)?, &format!("{at}.server"))?,
    })
}

fn list<'a>(v: &'a Value, at: &str) -> R<&'a Vec<Value>> {
    v.as_array()
        .map_or_else(|| err(format!("`{at}` is not a list")), Ok)
}

fn i64_of(m: &Map<String, Value>, k: &str, at: &str) -> R<i64> {
    field(m, k, at)?
        .as_i64()
        .map_or_else(|| err(format!("`{at}.{k}` is not an integer")), Ok)
}

/// `{"0": n, "1": n, ...}`: the bins of a small-count histogram.
fn hist(v: &Value, at: &str) -> R<Hist> {
    let mut h = Vec::new();
    for (k, n) in counts(v, at)? {
        let i: usize = k
            .parse()
            .ok()
            .filter(|i| *i <= 4096)
            .map_or_else(|| err(format!("`{at}` has a bin `{k}`")), Ok)?;
        if h.len() <= i {
            h.resize(i + 1, 0);
        }
        h[i] = n;
    }
    Ok(Hist(h))
}

/// `[[index, count], ...]`.
fn pairs(m: &Map<String, Value>, k: &str, at: &str) -> R<Vec<(u16, u64)>> {
    let Some(v) = m.get(k) else {
        return Ok(Vec::new());
    };
    list(v, &format!("{at}.{k}"))?
        .iter()
        .map(|p| match p.as_array().map(Vec::as_slice) {
            Some([i, n]) => match (i.as_u64().and_then(|i| u16::try_from(i).ok()), n.as_u64()) {
                (Some(i), Some(n)) => Ok((i, n)),
                _ => err(format!("`{at}.{k}` holds a pair that is not two counts")),
            },
            _ => err(format!("`{at}.{k}` holds something other than pairs")),
        })
        .collect()
}

fn hist_buckets(v: &Value, at: &str) -> R<HistBuckets> {
    let m = obj(v, at)?;
    let exact = match m.get("exact") {
        None => Vec::new(),
        Some(e) => list(e, &format!("{at}.exact"))?
            .iter()
            .map(|x| {
                x.as_i64()
                    .map_or_else(|| err(format!("`{at}.exact` holds a non-integer")), Ok)
            })
            .collect::<R<_>>()?,
    };
    Ok(HistBuckets {
        buckets: pairs(m, "buckets", at)?,
        count: u(m, "count", at)?,
        exact,
        max: i64_of(m, "max", at)?,
        min: i64_of(m, "min", at)?,
    })
}

fn log_buckets(v: &Value, at: &str) -> R<LogBuckets> {
    let m = obj(v, at)?;
    Ok(LogBuckets {
        buckets: pairs(m, "buckets", at)?,
        count: u(m, "count", at)?,
        max: u(m, "max", at)?,
        sum: u(m, "sum", at)?,
    })
}

fn merge_data(v: &Value) -> R<MergeData> {
    let at = "merge";
    let m = obj(v, at)?;
    let c = obj(field(m, "concurrency", at)?, "merge.concurrency")?;
    let g = obj(field(m, "grpc", at)?, "merge.grpc")?;
    let l = obj(field(m, "latency_us", at)?, "merge.latency_us")?;
    let lat = |k: &str| {
        hist_buckets(
            field(l, k, "merge.latency_us")?,
            &format!("merge.latency_us.{k}"),
        )
    };
    let mut by_label = BTreeMap::new();
    for (k, h) in obj(
        field(l, "ping_rtt_by_label", "merge.latency_us")?,
        "merge.latency_us.ping_rtt_by_label",
    )? {
        by_label.insert(
            intern(k)?,
            hist_buckets(h, "merge.latency_us.ping_rtt_by_label")?,
        );
    }
    Ok(MergeData {
        concurrency: ConcurrencyData {
            in_flight_sum: u(c, "in_flight_sum", "merge.concurrency")?,
        },
        flow_control: sides(
            field(m, "flow_control", at)?,
            "merge.flow_control",
            log_buckets,
        )?,
        grpc: GrpcData {
            client: log_buckets(field(g, "client", "merge.grpc")?, "merge.grpc.client")?,
            methods: list(field(g, "methods", "merge.grpc")?, "merge.grpc.methods")?
                .iter()
                .map(|h| hist_buckets(h, "merge.grpc.methods[]"))
                .collect::<R<_>>()?,
            server: log_buckets(field(g, "server", "merge.grpc")?, "merge.grpc.server")?,
        },
        latency_us: LatencyData {
            call: lat("call")?,
            first_byte: lat("first_byte")?,
            ping_rtt: lat("ping_rtt")?,
            ping_rtt_by_label: by_label,
        },
        methods: list(field(m, "methods", at)?, "merge.methods")?
            .iter()
            .map(|x| {
                let at = "merge.methods[]";
                let mm = obj(x, at)?;
                let first = field(mm, "first", at)?
                    .as_f64()
                    .map_or_else(|| err(format!("`{at}.first` is not a time")), Ok)?;
                Ok(MethodData {
                    first: nanos(first),
                    latency_us: hist_buckets(field(mm, "latency_us", at)?, at)?,
                })
            })
            .collect::<R<_>>()?,
        sides: sides(field(m, "sides", at)?, "merge.sides", |v, at| {
            let m = obj(v, at)?;
            Ok(SideData {
                bytes: u(m, "bytes", at)?,
                frames_in_writes: u(m, "frames_in_writes", at)?,
                round_calls: u(m, "round_calls", at)?,
                writes: u(m, "writes", at)?,
            })
        })?,
    })
}

fn side_analysis(v: &Value, at: &str) -> R<SideAnalysis> {
    let m = obj(v, at)?;
    let sub = |k: &str| -> R<&Map<String, Value>> { obj(field(m, k, at)?, &format!("{at}.{k}")) };
    let (bpw, fpw, pings, rounds) = (
        sub("bytes_per_write")?,
        sub("frames_per_write")?,
        sub("pings")?,
        sub("rounds")?,
    );
    let mut a = SideAnalysis::default();
    a.bytes_per_write.max = u(bpw, "max", at)?;
    a.frames_per_write.histogram = hist(field(fpw, "histogram", at)?, at)?;
    a.pings.acked = u(pings, "acked", at)?;
    a.pings.acks_unmatched = u(pings, "acks_unmatched", at)?;
    a.pings.sent = u(pings, "sent", at)?;
    a.rounds.acked = u(rounds, "acked", at)?;
    a.rounds.calls_opening = u(rounds, "calls_opening", at)?;
    a.rounds.calls_per_round_histogram = hist(field(rounds, "calls_per_round_histogram", at)?, at)?;
    a.rounds.rounds = u(rounds, "rounds", at)?;
    a.rst_stream_codes = counts(field(m, "rst_stream_codes", at)?, at)?;
    a.writes_by_calls = hist(field(m, "writes_by_calls", at)?, at)?;
    a.writes_without_frame_end = u(m, "writes_without_frame_end", at)?;
    Ok(a)
}

fn flow(v: &Value) -> R<FlowReport> {
    let at = "flow_control";
    let m = obj(v, at)?;
    let side = |v: &Value, at: &str| -> R<FlowSide> {
        let m = obj(v, at)?;
        let bl = obj(field(m, "by_limit", at)?, at)?;
        let mw = obj(field(m, "max_window", at)?, at)?;
        Ok(FlowSide {
            by_limit: ByLimit {
                both: u(bl, "both", at)?,
                connection: u(bl, "connection", at)?,
                stream: u(bl, "stream", at)?,
            },
            max_window: MaxWindow {
                connection: i64_of(mw, "connection", at)?,
                stream: i64_of(mw, "stream", at)?,
            },
            stalled_us: Default::default(),
            stalls: u(m, "stalls", at)?,
            unresolved: u(m, "unresolved", at)?,
        })
    };
    Ok(FlowReport {
        sides: Sides {
            client: side(field(m, "client", at)?, "flow_control.client")?,
            server: side(field(m, "server", at)?, "flow_control.server")?,
        },
        unknown_connections: u(m, "unknown_connections", at)?,
        untracked_streams: u(m, "untracked_streams", at)?,
    })
}

fn two(v: &Value, at: &str) -> R<Sides<u64>> {
    sides(v, at, |v, at| {
        v.as_u64()
            .map_or_else(|| err(format!("`{at}` is not a count")), Ok)
    })
}

fn grpc(v: &Value) -> R<GrpcReport> {
    let at = "grpc";
    let m = obj(v, at)?;
    let side = |v: &Value, at: &str| -> R<GrpcSide> {
        let m = obj(v, at)?;
        Ok(GrpcSide {
            compressed: u(m, "compressed", at)?,
            incomplete: u(m, "incomplete", at)?,
            messages: u(m, "messages", at)?,
            ..GrpcSide::default()
        })
    };
    let method = |v: &Value| -> R<GrpcMethod> {
        let at = "grpc.methods[]";
        let m = obj(v, at)?;
        Ok(GrpcMethod {
            calls: u(m, "calls", at)?,
            latency_us: Default::default(),
            message_bytes: two(field(m, "message_bytes", at)?, at)?,
            messages: two(field(m, "messages", at)?, at)?,
            method: s(m, "method", at)?,
            status: counts(field(m, "status", at)?, at)?,
        })
    };
    Ok(GrpcReport {
        calls: u(m, "calls", at)?,
        sides: Sides {
            client: side(field(m, "client", at)?, "grpc.client")?,
            server: side(field(m, "server", at)?, "grpc.server")?,
        },
        methods: list(field(m, "methods", at)?, "grpc.methods")?
            .iter()
            .map(method)
            .collect::<R<_>>()?,
        untracked_calls: u(m, "untracked_calls", at)?,
        methods_folded: u(m, "methods_folded", at)?,
    })
}

fn method(v: &Value) -> R<MethodReport> {
    let at = "methods[]";
    let m = obj(v, at)?;
    let side = |v: &Value, at: &str| -> R<MethodSide> {
        let m = obj(v, at)?;
        let mut frames = BTreeMap::new();
        for (k, n) in counts(field(m, "frames", at)?, at)? {
            let Some(kind) = CALL_KINDS.iter().find(|c| **c == k) else {
                return err(format!("`{at}.frames` has an unknown kind `{k}`"));
            };
            frames.insert(*kind, n);
        }
        Ok(MethodSide {
            frames,
            writes: u(m, "writes", at)?,
            ..MethodSide::default()
        })
    };
    Ok(MethodReport {
        method: s(m, "method", at)?,
        http_method: s(m, "http_method", at)?,
        calls: u(m, "calls", at)?,
        status: counts(field(m, "status", at)?, at)?,
        sides: Sides {
            client: side(field(m, "client", at)?, "methods[].client")?,
            server: side(field(m, "server", at)?, "methods[].server")?,
        },
        latency_us: Default::default(),
    })
}

fn goaway(v: &Value) -> R<GoAwayReport> {
    let at = "goaways[]";
    let m = obj(v, at)?;
    let side = match s(m, "side", at)?.as_str() {
        "client" => Side::Client.name(),
        "server" => Side::Server.name(),
        o => return err(format!("`{at}.side` is `{o}`")),
    };
    Ok(GoAwayReport {
        conn: u32::try_from(u(m, "conn", at)?).or_else(|_| err("`goaways[].conn` too large"))?,
        debug: s(m, "debug", at)?,
        error: s(m, "error", at)?,
        last_stream_id: u32::try_from(u(m, "last_stream_id", at)?)
            .or_else(|_| err("`goaways[].last_stream_id` too large"))?,
        side,
        time: field(m, "time", at)?
            .as_f64()
            .map_or_else(|| err("`goaways[].time` is not a time"), Ok)?,
        too_many_pings: b(m, "too_many_pings", at)?,
    })
}

/// The analysis of report `m` (its top-level object), if it has one.
pub(super) fn analysis(m: &Map<String, Value>) -> R<Option<AnalysisReport>> {
    let Some(c) = m.get("concurrency") else {
        return Ok(None);
    };
    let Some(d) = m.get("merge") else {
        return err(
            "the report has an analysis (`--analyze`) without its `merge` key (made by an h2ledger before merge took analyses: replay the capture again)",
        );
    };
    let at = "the report";
    let cm = obj(c, "concurrency")?;
    let lm = obj(field(m, "limits", at)?, "limits")?;
    let sm = obj(field(m, "sides", at)?, "sides")?;
    Ok(Some(AnalysisReport {
        concurrency: Concurrency {
            calls: u(cm, "calls", "concurrency")?,
            max_in_flight: u16::try_from(u(cm, "max_in_flight", "concurrency")?)
                .or_else(|_| err("`concurrency.max_in_flight` too large"))?,
            mean_in_flight: None,
            reset: u(cm, "reset", "concurrency")?,
            unfinished: u(cm, "unfinished", "concurrency")?,
        },
        flow_control: flow(field(m, "flow_control", at)?)?,
        goaways: list(field(m, "goaways", at)?, "goaways")?
            .iter()
            .map(goaway)
            .collect::<R<_>>()?,
        grpc: grpc(field(m, "grpc", at)?)?,
        latency_us: Default::default(),
        limits: AnalysisLimits {
            goaways_omitted: u(lm, "goaways_omitted", "limits")?,
            methods_folded: u(lm, "methods_folded", "limits")?,
            phase_events_dropped: u(lm, "phase_events_dropped", "limits")?,
            untracked_calls: u(lm, "untracked_calls", "limits")?,
        },
        merge: Some(merge_data(d)?),
        methods: list(field(m, "methods", at)?, "methods")?
            .iter()
            .map(method)
            .collect::<R<_>>()?,
        too_many_pings: 0,
        sides: Sides {
            client: side_analysis(field(sm, "client", "sides")?, "sides.client")?,
            server: side_analysis(field(sm, "server", "sides")?, "sides.server")?,
        },
    }))
}
