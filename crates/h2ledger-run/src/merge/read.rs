//! A published report (`replay -T json`) read back into a [`Report`], for `h2ledger merge`.
//!
//! The reader takes exactly the keys the whole capture's report writes (docs/ledger.md),
//! with `--analyze` those its figures are made of (`analysis`: the counts and the `merge`
//! key); `per_call`, percentiles and means are derived and ignored. A report with phases,
//! or an analysis without `merge` (made before it existed), is refused with a
//! [`ReadError`] that says so (docs/scale.md: what merges). Strings the
//! report keeps as `&'static str` (a connection's `client_by`, PING labels, evidence keys)
//! are interned once each, at most [`MAX_INTERNED`] distinct ones.

mod analysis;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use h2ledger_core::findings::{Evidence, Finding, FindingId, Num, Severity};
use h2ledger_core::tally::{ConnOwners, Owner};
use h2ledger_core::{
    ConnLedger, FrameClass, FrameCounts, LedgerReport, Side, SideTally, Sides, Unlisted,
};
use h2ledger_tcp::Nanos;
use h2ledger_tls::{ConnReport, KeyLogStats, Status, TlsReport};
use serde_json::{Map, Value};

use crate::report::{CaptureStats, Drops, Report, TcpReport};

/// Distinct strings interned across all the reports read (a hostile input cannot make the
/// process keep more).
pub const MAX_INTERNED: usize = 4096;

/// Why a report could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadError(pub String);

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ReadError {}

type R<T> = Result<T, ReadError>;

fn err<T>(what: impl Into<String>) -> R<T> {
    Err(ReadError(what.into()))
}

static INTERNED: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());

fn intern(s: &str) -> R<&'static str> {
    let mut set = INTERNED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(k) = set.get(s) {
        return Ok(k);
    }
    if set.len() >= MAX_INTERNED {
        return err(format!(
            "more than {MAX_INTERNED} distinct labels and keys across the reports"
        ));
    }
    let k: &'static str = Box::leak(s.to_owned().into_boxed_str());
    set.insert(k);
    Ok(k)
}

/// Where key `k` of the object at `at` is, as an error names it: `k` alone at the top.
fn path(at: &str, k: &str) -> String {
    if at == "the report" {
        k.to_owned()
    } else {
        format!("{at}.{k}")
    }
}

fn obj<'a>(v: &'a Value, at: &str) -> R<&'a Map<String, Value>> {
    v.as_object()
        .map_or_else(|| err(format!("`{at}` is not an object")), Ok)
}

fn field<'a>(m: &'a Map<String, Value>, k: &str, at: &str) -> R<&'a Value> {
    m.get(k)
        .map_or_else(|| err(format!("`{at}` has no key `{k}`")), Ok)
}

fn u(m: &Map<String, Value>, k: &str, at: &str) -> R<u64> {
    let v = field(m, k, at)?;
    v.as_u64()
        .map_or_else(|| err(format!("`{}` is not a count", path(at, k))), Ok)
}

fn b(m: &Map<String, Value>, k: &str, at: &str) -> R<bool> {
    let v = field(m, k, at)?;
    v.as_bool().map_or_else(
        || err(format!("`{}` is not true or false", path(at, k))),
        Ok,
    )
}

fn s(m: &Map<String, Value>, k: &str, at: &str) -> R<String> {
    let v = field(m, k, at)?;
    v.as_str().map_or_else(
        || err(format!("`{}` is not a string", path(at, k))),
        |x| Ok(x.to_owned()),
    )
}

fn opt_s(m: &Map<String, Value>, k: &str, at: &str) -> R<Option<String>> {
    match m.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(_) => s(m, k, at).map(Some),
    }
}

/// Seconds since the epoch (the JSON's unit) back to nanoseconds: `secs` of the result is
/// the number read (f64 seconds of a nanosecond count round-trip; a unit test holds it).
pub(crate) fn nanos(x: f64) -> Nanos {
    (x * 1e9).round() as Nanos
}

fn time(m: &Map<String, Value>, k: &str, at: &str) -> R<Option<Nanos>> {
    match m.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_f64().map_or_else(
            || err(format!("`{}` is not a time", path(at, k))),
            |x| Ok(Some(nanos(x))),
        ),
    }
}

/// `unlisted_first`: absent (none, or a report before it existed), `null` (not known), or
/// the first packets of the connections the report does not list.
fn unlisted(m: &Map<String, Value>) -> R<Unlisted> {
    match m.get("unlisted_first") {
        None => Ok(Unlisted::NotGiven),
        Some(Value::Null) => Ok(Unlisted::Unknown),
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| x.as_f64().map(nanos))
            .collect::<Option<Vec<_>>>()
            .map(Unlisted::Known)
            .map_or_else(|| err("`unlisted_first` is not a list of times"), Ok),
        Some(_) => err("`unlisted_first` is not a list of times"),
    }
}

fn counts(v: &Value, at: &str) -> R<BTreeMap<String, u64>> {
    obj(v, at)?
        .iter()
        .map(|(k, n)| {
            n.as_u64()
                .map(|n| (k.clone(), n))
                .map_or_else(|| err(format!("`{}` is not a count", path(at, k))), Ok)
        })
        .collect()
}

fn frames(v: &Value, at: &str) -> R<FrameCounts> {
    let mut f = FrameCounts::default();
    for (k, n) in counts(v, at)? {
        let Some(c) = FrameClass::from_name(&k) else {
            return err(format!("`{at}` has an unknown frame class `{k}`"));
        };
        f.0[c.index()] = n;
    }
    Ok(f)
}

fn side_tally(v: &Value, at: &str) -> R<SideTally> {
    let m = obj(v, at)?;
    let mut ping_labels = BTreeMap::new();
    for (k, n) in counts(field(m, "ping_labels", at)?, &format!("{at}.ping_labels"))? {
        ping_labels.insert(intern(&k)?, n);
    }
    Ok(SideTally {
        bdp_pings: u(m, "bdp_pings", at)?,
        bytes: u(m, "bytes", at)?,
        frames: frames(field(m, "frames", at)?, &format!("{at}.frames"))?,
        ping_labels,
        tls_records: u(m, "tls_records", at)?,
        writes: u(m, "writes", at)?,
    })
}

fn sides(v: &Value, at: &str) -> R<Sides<SideTally>> {
    let m = obj(v, at)?;
    Ok(Sides {
        client: side_tally(field(m, "client", at)?, &format!("{at}.client"))?,
        server: side_tally(field(m, "server", at)?, &format!("{at}.server"))?,
    })
}

/// `per_connection[].process` (`sniff`): null, or the process at each end (each null when
/// not found).
fn owners(v: Option<&Value>, at: &str) -> R<Option<ConnOwners>> {
    let owner = |v: Option<&Value>, at: &str| -> R<Option<Owner>> {
        match v {
            None | Some(Value::Null) => Ok(None),
            Some(v) => {
                let m = obj(v, at)?;
                Ok(Some(Owner {
                    cgroup: opt_s(m, "cgroup", at)?,
                    comm: s(m, "comm", at)?,
                    pid: u32::try_from(u(m, "pid", at)?)
                        .or_else(|_| err(format!("`{at}.pid` too large")))?,
                }))
            }
        }
    };
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(v) => {
            let m = obj(v, at)?;
            Ok(Some(ConnOwners {
                client: owner(m.get("client"), &format!("{at}.client"))?,
                server: owner(m.get("server"), &format!("{at}.server"))?,
            }))
        }
    }
}

fn conn(v: &Value) -> R<ConnLedger> {
    let at = "per_connection[]";
    let m = obj(v, at)?;
    let Some(first) = time(m, "first", at)? else {
        return err(
            "`per_connection[]` has no `first` (a report of h2ledger before merge existed: replay the capture again)",
        );
    };
    Ok(ConnLedger {
        calls: u(m, "calls", at)?,
        client: s(m, "client", at)?,
        client_by: intern(&s(m, "client_by", at)?)?,
        first,
        id: u32::try_from(u(m, "id", at)?).or_else(|_| err("`per_connection[].id` too large"))?,
        mid_stream: b(m, "mid_stream", at)?,
        prelude: opt_s(m, "prelude", at)?.map(|p| intern(&p)).transpose()?,
        process: owners(m.get("process"), &format!("{at}.process"))?,
        server: s(m, "server", at)?,
        sides: sides(field(m, "sides", at)?, &format!("{at}.sides"))?,
        upgraded_calls: u(m, "upgraded_calls", at)?,
    })
}

/// Evidence keys whose value is a time (seconds in the JSON), as the findings engine sets
/// them (crates/h2ledger-core/src/findings/observer.rs).
const EVIDENCE_TIMES: [&str; 4] = [
    "first_strike",
    "goaway",
    "next_fatal_before",
    "predicted_goaway",
];

fn evidence(v: &Value, at: &str) -> R<Evidence> {
    let mut e = Evidence::default();
    for (k, n) in obj(v, at)? {
        let key = intern(k)?;
        let num = match n {
            Value::Array(ts) => Num::Times(
                ts.iter()
                    .map(|t| t.as_f64().map(nanos))
                    .collect::<Option<Vec<_>>>()
                    .map_or_else(
                        || err(format!("`{}` is not a list of times", path(at, k))),
                        Ok,
                    )?,
            ),
            Value::Number(x) if x.is_u64() => Num::U(x.as_u64().unwrap_or_default()),
            Value::Number(x) => {
                let f = x.as_f64().unwrap_or_default();
                if EVIDENCE_TIMES.contains(&k.as_str()) {
                    Num::At(nanos(f))
                } else {
                    Num::F(f)
                }
            }
            // A name the numbers are about (`method-errors`' `method`).
            Value::String(t) => Num::Text(t.as_str().into()),
            _ => {
                return err(format!(
                    "`{}` is not a number, a time or a name",
                    path(at, k)
                ))
            }
        };
        e.set(key, num);
    }
    Ok(e)
}

fn finding(v: &Value) -> R<Finding> {
    let at = "findings[]";
    let m = obj(v, at)?;
    let id = s(m, "id", at)?;
    let sev = s(m, "severity", at)?;
    let side = match opt_s(m, "side", at)?.as_deref() {
        None => None,
        Some("client") => Some(Side::Client),
        Some("server") => Some(Side::Server),
        Some(o) => return err(format!("`{at}.side` is `{o}`")),
    };
    let small = |k: &str| -> R<Option<u32>> {
        match m.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(x) => x.as_u64().and_then(|x| u32::try_from(x).ok()).map_or_else(
                || err(format!("`{}` is not an id", path(at, k))),
                |x| Ok(Some(x)),
            ),
        }
    };
    Ok(Finding {
        id: FindingId::from_name(&id)
            .map_or_else(|| err(format!("unknown finding id `{id}`")), Ok)?,
        severity: Severity::from_name(&sev)
            .map_or_else(|| err(format!("unknown severity `{sev}`")), Ok)?,
        title: s(m, "title", at)?,
        conn: small("conn")?,
        stream: small("stream")?,
        side,
        first: time(m, "first", at)?.unwrap_or_default(),
        last: time(m, "last", at)?.unwrap_or_default(),
        count: u(m, "count", at)?,
        evidence: evidence(field(m, "evidence", at)?, "findings[].evidence")?,
        rule: s(m, "rule", at)?,
        advice: s(m, "advice", at)?,
    })
}

fn capture(v: &Value) -> R<CaptureStats> {
    let at = "capture";
    let m = obj(v, at)?;
    Ok(CaptureStats {
        first: time(m, "first", at)?,
        last: time(m, "last", at)?,
        not_tcp: u(m, "not_tcp", at)?,
        packets: u(m, "packets", at)?,
        tcp_segments: u(m, "tcp_segments", at)?,
        undecodable: u(m, "undecodable", at)?,
    })
}

fn tcp(v: &Value) -> R<TcpReport> {
    let at = "tcp";
    let m = obj(v, at)?;
    Ok(TcpReport {
        bound_hits: u(m, "bound_hits", at)?,
        data_after_rst: u(m, "data_after_rst", at)?,
        data_after_rst_ignored: u(m, "data_after_rst_ignored", at)?,
        evicted: u(m, "evicted", at)?,
        evicted_forgotten: u(m, "evicted_forgotten", at)?,
        gap_bytes: u(m, "gap_bytes", at)?,
        gaps: u(m, "gaps", at)?,
        out_of_order: u(m, "out_of_order", at)?,
        overlaps: u(m, "overlaps", at)?,
        resumed: u(m, "resumed", at)?,
        retransmissions: u(m, "retransmissions", at)?,
        segments: u(m, "segments", at)?,
        truncated: u(m, "truncated", at)?,
    })
}

fn pair(m: &Map<String, Value>, k: &str, at: &str) -> R<[u64; 2]> {
    let v = field(m, k, at)?;
    match v
        .as_array()
        .map(|a| a.iter().map(Value::as_u64).collect::<Vec<_>>())
    {
        Some(a) if a.len() == 2 && a.iter().all(Option::is_some) => {
            Ok([a[0].unwrap_or_default(), a[1].unwrap_or_default()])
        }
        _ => err(format!("`{}` is not two counts", path(at, k))),
    }
}

const STATUSES: [Status; 7] = [
    Status::Decrypted,
    Status::NoKey,
    Status::NotH2,
    Status::NoHandshake,
    Status::TruncatedHandshake,
    Status::Unsupported,
    Status::AuthFailed,
];

fn tls_conn(v: &Value) -> R<ConnReport> {
    let at = "tls.per_connection[]";
    let m = obj(v, at)?;
    let status = s(m, "status", at)?;
    let offered = field(m, "alpn_offered", at)?
        .as_array()
        .and_then(|a| a.iter().map(|x| x.as_str().map(str::to_owned)).collect())
        .map_or_else(
            || err(format!("`{at}.alpn_offered` is not a list of names")),
            Ok,
        )?;
    Ok(ConnReport {
        alpn: opt_s(m, "alpn", at)?,
        alpn_offered: offered,
        auth_failures: u(m, "auth_failures", at)?,
        cipher: opt_s(m, "cipher", at)?,
        client: s(m, "client", at)?,
        client_random: opt_s(m, "client_random", at)?,
        encrypted_bytes: pair(m, "encrypted_bytes", at)?,
        id: u32::try_from(u(m, "id", at)?)
            .or_else(|_| err("`tls.per_connection[].id` too large"))?,
        key_updates: u(m, "key_updates", at)?,
        plaintext_bytes: pair(m, "plaintext_bytes", at)?,
        records: pair(m, "records", at)?,
        server: s(m, "server", at)?,
        status: STATUSES
            .into_iter()
            .find(|x| x.name() == status)
            .map_or_else(|| err(format!("unknown TLS status `{status}`")), Ok)?,
        version: opt_s(m, "version", at)?.map(|x| intern(&x)).transpose()?,
    })
}

fn tls(v: &Value) -> R<TlsReport> {
    let at = "tls";
    let m = obj(v, at)?;
    let kl = obj(field(m, "keylog", at)?, "tls.keylog")?;
    Ok(TlsReport {
        auth_failed: u(m, "auth_failed", at)?,
        auth_failures: u(m, "auth_failures", at)?,
        connections: u(m, "connections", at)?,
        decrypted: u(m, "decrypted", at)?,
        held_limit_hits: u(m, "held_limit_hits", at)?,
        key_updates: u(m, "key_updates", at)?,
        keylog: KeyLogStats {
            key_lines: u(kl, "key_lines", "tls.keylog")?,
            skipped_lines: u(kl, "skipped_lines", "tls.keylog")?,
        },
        keylog_randoms: u(m, "keylog_randoms", at)?,
        no_handshake: u(m, "no_handshake", at)?,
        not_h2: u(m, "not_h2", at)?,
        per_connection: field(m, "per_connection", at)?
            .as_array()
            .map_or_else(|| err("`tls.per_connection` is not a list"), Ok)?
            .iter()
            .map(tls_conn)
            .collect::<R<_>>()?,
        per_connection_dropped: u(m, "per_connection_dropped", at)?,
        records: u(m, "records", at)?,
        truncated_handshake: u(m, "truncated_handshake", at)?,
        unsupported: u(m, "unsupported", at)?,
        without_key: u(m, "without_key", at)?,
        without_key_h2: u(m, "without_key_h2", at)?,
    })
}

/// Every report in the text of one file (`name`, for the errors): one JSON document,
/// several, or JSON lines (only their `summary` lines are reports), appended to `into`.
pub fn reports(name: &str, text: &str, into: &mut Vec<Report>) -> R<()> {
    summaries(name, text, into, from_json)
}

/// Every report in the text of one file, as [`reports`], each with its phases (`replay
/// --split-at` or `--every`; none without): what [`super::phased::merge_published`] merges.
pub fn reports_with_phases(name: &str, text: &str, into: &mut Vec<(Report, Vec<Report>)>) -> R<()> {
    summaries(name, text, into, with_phases)
}

/// The reports of [`reports`], each read by `read`.
fn summaries<T>(name: &str, text: &str, into: &mut Vec<T>, read: fn(&Value) -> R<T>) -> R<()> {
    let before = into.len();
    for v in serde_json::Deserializer::from_str(text).into_iter::<Value>() {
        let v = v.map_err(|e| ReadError(format!("{name}: not JSON: {e}")))?;
        if v.get("type")
            .and_then(Value::as_str)
            .is_some_and(|t| t != "summary")
        {
            continue;
        }
        into.push(read(&v).map_err(|e| ReadError(format!("{name}: {e}")))?);
    }
    if into.len() == before {
        return err(format!(
            "{name}: no report in it (give what `replay -T json` wrote)"
        ));
    }
    Ok(())
}

/// A whole capture's report and its phases (each read as a report of its own, with its
/// `name`, `start` and `end`).
pub fn with_phases(v: &Value) -> R<(Report, Vec<Report>)> {
    let m = obj(v, "the report")?;
    if m.contains_key("name") {
        return err("a phase is not a whole capture's report");
    }
    let whole = body(m, "the report")?;
    let phases = match m.get("phases") {
        None => Vec::new(),
        Some(p) => p
            .as_array()
            .map_or_else(|| err("`phases` is not a list"), Ok)?
            .iter()
            .enumerate()
            .map(|(k, p)| {
                let at = format!("phases[{k}]");
                let pm = obj(p, &at)?;
                let mut r = body(pm, &at)?;
                r.name = field(pm, "name", &at)?
                    .as_str()
                    .map_or_else(|| err(format!("`{at}.name` is not a string")), Ok)?
                    .to_owned();
                r.start = time(pm, "start", &at)?;
                r.end = time(pm, "end", &at)?;
                if r.start.is_none() || r.end.is_none() {
                    return err(format!("`{at}` has no `start` or `end`"));
                }
                Ok(r)
            })
            .collect::<R<Vec<_>>>()?,
    };
    Ok((whole, phases))
}

/// A whole capture's report, as `replay -T json` (or the `summary` line of `-T jsonl`)
/// wrote it.
pub fn from_json(v: &Value) -> R<Report> {
    let m = obj(v, "the report")?;
    if m.contains_key("phases") || m.contains_key("name") {
        return err("the report has phases; merge takes whole-capture reports");
    }
    body(m, "the report")
}

/// The keys of a report (a whole capture's or a phase's).
fn body(m: &Map<String, Value>, at: &str) -> R<Report> {
    if let Some(t) = m.get("type").and_then(Value::as_str) {
        if t != "summary" {
            return err(format!(
                "a `{t}` line is not a report (give the `summary` line)"
            ));
        }
    }
    let warnings = field(m, "warnings", at)?
        .as_array()
        .and_then(|a| a.iter().map(|x| x.as_str().map(str::to_owned)).collect())
        .map_or_else(|| err("`warnings` is not a list of strings"), Ok)?;
    let ledger = LedgerReport {
        anomalies: counts(field(m, "anomalies", at)?, "anomalies")?,
        calls: u(m, "calls", at)?,
        connections: u(m, "connections", at)?,
        per_connection: field(m, "per_connection", at)?
            .as_array()
            .map_or_else(|| err("`per_connection` is not a list"), Ok)?
            .iter()
            .map(conn)
            .collect::<R<_>>()?,
        per_connection_omitted: u(m, "per_connection_omitted", at)?,
        sides: sides(field(m, "sides", at)?, "sides")?,
        upgraded_calls: u(m, "upgraded_calls", at)?,
        warnings,
        unlisted_first: unlisted(m)?,
    };
    let findings = match m.get("findings") {
        None => None,
        Some(f) => Some(
            f.as_array()
                .map_or_else(|| err("`findings` is not a list"), Ok)?
                .iter()
                .map(finding)
                .collect::<R<_>>()?,
        ),
    };
    Ok(Report {
        ledger,
        capture: m.get("capture").map(capture).transpose()?,
        tcp: m.get("tcp").map(tcp).transpose()?,
        tls: m.get("tls").map(tls).transpose()?,
        drops: m
            .get("drops")
            .map(|d| {
                let m = obj(d, "drops")?;
                Ok(Drops {
                    interface: u(m, "interface", "drops")?,
                    kernel: u(m, "kernel", "drops")?,
                    received: u(m, "received", "drops")?,
                })
            })
            .transpose()?,
        findings,
        analysis: analysis::analysis(m)?,
        ..Report::default()
    })
}
