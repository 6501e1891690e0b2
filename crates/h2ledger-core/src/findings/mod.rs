//! Findings: what is wrong on the wire, named, with the evidence and the rule that says so.
//!
//! [`Findings`] is an [`crate::Observer`] fed frame by frame (live and replayed alike). Each
//! rule watches counters it keeps per connection and fires a [`Finding`] the moment its
//! threshold is crossed; later events update it (its `last`, `count` and evidence). The ids
//! ([`FindingId`]) are a public contract, and so is each rule's threshold: docs/findings.md
//! states every one with the server source it comes from.
//!
//! Memory (docs/ledger.md, "Memory bounds"): per open connection a few counters, a ring of the
//! last [`PING_RING`] client PING times, at most [`MAX_HOLDS`] windows held at zero, and one
//! 64-byte record per client stream in flight (in a table at most half full, with its id:
//! the stream's state and its call's method, deadline and times), at most
//! [`MAX_FINDING_STREAMS`] over all connections (beyond, streams are counted, not followed:
//! `streams_untracked`). For the failure and latency rules, per connection at most
//! [`MAX_METHODS`] methods (beyond, counted in the evidence). At most
//! [`MAX_FINDINGS`] findings are kept; later ones are counted by id (`omitted`). A connection's
//! state is folded into its findings and freed when it closes.
//!
//! ```
//! use h2ledger_core::findings::{FindingId, Findings, FindingsConfig};
//! use h2ledger_core::Ledger;
//!
//! let mut ledger = Ledger::new(Findings::new(FindingsConfig::default()));
//! // ... feed the ledger from a Reassembler, then:
//! ledger.finish();
//! let report = ledger.observer.report();
//! assert!(report.findings.iter().all(|f| f.id != FindingId::RapidReset));
//! ```

mod conn;
mod explain;
mod failures;
mod flowrules;
mod ids;
mod observer;
mod rules;
mod streams;
mod text;

use std::collections::BTreeMap;

use h2ledger_tcp::Nanos;
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

use crate::model::Side;
use crate::FastMap;

use conn::ConnF;
pub use explain::{explain, Explanation};
pub use failures::GRPC_KEYS;
pub use ids::{FindingId, Severity};
pub use rules::{
    BDP_MIN_CALLS, BDP_PER_CALL, CANCEL_STORM_MIN, CANCEL_STORM_SHARE, DEADLINE_MIN_CALLS,
    FAILED_MIN_CALLS, FAILED_SHARE, MAX_METHODS, MAX_NEW_CUTS, METHOD_FAILED_SHARE,
    METHOD_MIN_CALLS, SLOW_CALL,
};

/// Findings kept; later ones are counted by id in [`FindingsReport::omitted`].
pub const MAX_FINDINGS: usize = 1000;
/// Client streams in flight followed at once over every connection (16 bytes each); beyond,
/// streams are counted in [`FindingsReport::streams_untracked`] and the rules that need a
/// stream's age or state (rapid-reset's premature resets, made-you-reset, stream slots) skip
/// them.
pub const MAX_FINDING_STREAMS: usize = crate::model::MAX_OPEN_STREAMS;
/// Client PING times kept per connection, the evidence of `too-many-pings`.
pub const PING_RING: usize = 8;
/// Windows held at zero followed at once per connection (`zero-window`).
pub const MAX_HOLDS: usize = 16;
/// PING or SETTINGS frames per second: Jetty `AbstractHTTP2ServerConnectionFactory`
/// `new WindowRateControl.Factory(128)` (PingBodyParser: ENHANCE_YOUR_CALM
/// `invalid_ping_frame_rate`), here a token bucket of 128 refilled with 128 a second.
pub const FRAME_RATE: u64 = 128;
/// The stream-reset budget: nghttp2 lib/nghttp2_session.h `NGHTTP2_DEFAULT_STREAM_RESET_BURST`
/// and `NGHTTP2_DEFAULT_STREAM_RESET_RATE` (CVE-2023-44487; nghttp2 sends GOAWAY when a
/// RST_STREAM finds it empty). The same values started nghttp2's glitch counter (1.66.0,
/// `NGHTTP2_DEFAULT_GLITCH_BURST`/`_RATE`, for CVE-2025-8671), which counts the peer's errors
/// that make the server reset a stream; both server-reset rules use them.
pub const RESET_BURST: u64 = 1000;
/// Tokens a second the stream-reset budget gets back (see [`RESET_BURST`]).
pub const RESET_RATE: u64 = 33;

/// The severity each id is reported with: its own ([`FindingId::severity`]) unless the user set
/// another (`--severity ID=LEVEL`, decision 301).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Severities([Option<Severity>; FindingId::COUNT]);

impl Default for Severities {
    fn default() -> Self {
        Severities([None; FindingId::COUNT])
    }
}

impl Severities {
    /// Reports `id` with severity `s`.
    pub fn set(&mut self, id: FindingId, s: Severity) {
        self.0[id as usize] = Some(s);
    }

    /// The severity `id` is reported with.
    pub fn of(&self, id: FindingId) -> Severity {
        self.0[id as usize].unwrap_or_else(|| id.severity())
    }

    /// Whether the user changed `id`'s severity.
    pub fn changed(&self, id: FindingId) -> bool {
        self.0[id as usize].is_some()
    }
}

/// The server policy the keepalive emulation assumes: it is not on the wire
/// (`--keepalive-min-time`, `--permit-without-stream`); and the severities the user set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FindingsConfig {
    /// The severity of each id (`--severity ID=LEVEL`).
    pub severities: Severities,
    /// The server's keepalive EnforcementPolicy.MinTime (grpc-go
    /// `defaultKeepalivePolicyMinTime`, 5 minutes; grpc-java `permitKeepAliveTime`, 5 minutes).
    pub keepalive_min_time: Nanos,
    /// EnforcementPolicy.PermitWithoutStream: without it, a PING while no stream is open must
    /// come 2 hours after the previous one.
    pub permit_without_stream: bool,
}

/// grpc-go `internal/transport/defaults.go` `defaultKeepalivePolicyMinTime`.
pub const DEFAULT_KEEPALIVE_MIN_TIME: Nanos = 300 * 1_000_000_000;

impl Default for FindingsConfig {
    fn default() -> Self {
        FindingsConfig {
            keepalive_min_time: DEFAULT_KEEPALIVE_MIN_TIME,
            permit_without_stream: false,
            severities: Severities::default(),
        }
    }
}

/// One number of a finding's evidence.
#[derive(Clone, Debug, PartialEq)]
pub enum Num {
    /// A count or a size; durations are microseconds (the key ends in `_us`).
    U(u64),
    /// A ratio.
    F(f64),
    /// A time (nanoseconds since the epoch; seconds in the JSON).
    At(Nanos),
    /// Times (seconds in the JSON).
    Times(Vec<Nanos>),
    /// A name the numbers are about (`method-errors`' `method`, a request's `:path`).
    Text(Box<str>),
}

/// The numbers that triggered a finding, by name (serialized as an object, keys sorted).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Evidence(Vec<(&'static str, Num)>);

impl Evidence {
    /// Sets `key` to `v`.
    pub fn set(&mut self, key: &'static str, v: Num) {
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some(e) => e.1 = v,
            None => self.0.push((key, v)),
        }
    }

    /// Sets a count.
    pub fn u(&mut self, key: &'static str, v: u64) {
        self.set(key, Num::U(v));
    }

    /// A count, 0 when absent.
    pub fn n(&self, key: &str) -> u64 {
        match self.get(key) {
            Some(Num::U(v)) => *v,
            _ => 0,
        }
    }

    /// A ratio, 0 when absent.
    pub fn f(&self, key: &str) -> f64 {
        match self.get(key) {
            Some(Num::F(v)) => *v,
            Some(Num::U(v)) => *v as f64,
            _ => 0.0,
        }
    }

    /// A text, "" when absent.
    pub fn text(&self, key: &str) -> &str {
        match self.get(key) {
            Some(Num::Text(t)) => t,
            _ => "",
        }
    }

    /// A time, when present.
    pub fn at(&self, key: &str) -> Option<Nanos> {
        match self.get(key) {
            Some(Num::At(t)) => Some(*t),
            _ => None,
        }
    }

    /// The value under `key`.
    pub fn get(&self, key: &str) -> Option<&Num> {
        self.0.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// Every entry, sorted by name.
    pub fn sorted(&self) -> Vec<(&'static str, &Num)> {
        let mut v: Vec<(&'static str, &Num)> = self.0.iter().map(|(k, v)| (*k, v)).collect();
        v.sort_unstable_by_key(|(k, _)| *k);
        v
    }
}

fn secs(t: Nanos) -> f64 {
    t as f64 / 1e9
}

impl Serialize for Num {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Num::U(v) => s.serialize_u64(*v),
            Num::F(v) => s.serialize_f64((v * 1e4).round() / 1e4),
            Num::At(t) => s.serialize_f64(secs(*t)),
            Num::Times(ts) => {
                let mut seq = s.serialize_seq(Some(ts.len()))?;
                for t in ts {
                    seq.serialize_element(&secs(*t))?;
                }
                seq.end()
            }
            Num::Text(t) => s.serialize_str(t),
        }
    }
}

impl Serialize for Evidence {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let v = self.sorted();
        let mut m = s.serialize_map(Some(v.len()))?;
        for (k, n) in v {
            m.serialize_entry(k, n)?;
        }
        m.end()
    }
}

/// One finding, as reported: the published JSON object (keys in alphabetical order).
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    /// What it is (a public name).
    pub id: FindingId,
    /// The id's severity.
    pub severity: Severity,
    /// One line, with the numbers that matter.
    pub title: String,
    /// The connection (in order of appearance, from 0); `None` for a capture-wide finding.
    pub conn: Option<u32>,
    /// The stream concerned, when one is.
    pub stream: Option<u32>,
    /// The side whose frames the finding is about (docs/findings.md, per id).
    pub side: Option<Side>,
    /// When it first held and when it was last seen (nanoseconds since the epoch).
    pub first: Nanos,
    /// See `first`.
    pub last: Nanos,
    /// Occurrences: what is counted is per id (docs/findings.md).
    pub count: u64,
    /// The numbers behind it, by name.
    pub evidence: Evidence,
    /// The threshold and where it comes from (library, file, constant).
    pub rule: String,
    /// What to change.
    pub advice: String,
}

impl Finding {
    /// Severity first (critical first), then time, then connection: the order findings are
    /// listed in.
    pub fn order(a: &Finding, b: &Finding) -> std::cmp::Ordering {
        b.severity
            .cmp(&a.severity)
            .then(a.first.cmp(&b.first))
            .then(a.conn.cmp(&b.conn))
            .then(a.id.cmp(&b.id))
    }

    /// The same finding with other evidence and count (a phase's own numbers: the demo's
    /// findings per phase), its title, rule and advice written from them as the engine writes
    /// them under the default server policy; its severity, place and times kept.
    pub fn with_evidence(&self, evidence: Evidence, count: u64) -> Finding {
        let (title, rule, advice) =
            text::words(self.id, &evidence, self.side, &FindingsConfig::default());
        Finding {
            title,
            rule,
            advice,
            evidence,
            count,
            ..self.clone()
        }
    }

    /// Whether it held at some time in `[start, end)` (a phase).
    pub fn overlaps(&self, start: Nanos, end: Nanos) -> bool {
        self.first < end && self.last >= start
    }
}

#[derive(Serialize)]
struct FindingJson<'a> {
    advice: &'a str,
    conn: Option<u32>,
    count: u64,
    evidence: &'a Evidence,
    first: f64,
    id: &'static str,
    last: f64,
    rule: &'a str,
    severity: &'static str,
    side: Option<&'static str>,
    stream: Option<u32>,
    title: &'a str,
}

impl Finding {
    fn json(&self) -> FindingJson<'_> {
        FindingJson {
            advice: &self.advice,
            conn: self.conn,
            count: self.count,
            evidence: &self.evidence,
            first: secs(self.first),
            id: self.id.name(),
            last: secs(self.last),
            rule: &self.rule,
            severity: self.severity.name(),
            side: self.side.map(Side::name),
            stream: self.stream,
            title: &self.title,
        }
    }
}

impl Serialize for Finding {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.json().serialize(s)
    }
}

/// A finding as a JSON line: its object with `record` and `type` (`finding`).
#[derive(Serialize)]
struct FindingLine<'a> {
    advice: &'a str,
    conn: Option<u32>,
    count: u64,
    evidence: &'a Evidence,
    first: f64,
    id: &'static str,
    last: f64,
    record: &'static str,
    rule: &'a str,
    severity: &'static str,
    side: Option<&'static str>,
    stream: Option<u32>,
    title: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
}

impl Finding {
    /// This finding as a JSON line record (`record` and `type` are `finding`).
    pub fn line(&self) -> impl Serialize + '_ {
        let j = self.json();
        FindingLine {
            advice: j.advice,
            conn: j.conn,
            count: j.count,
            evidence: j.evidence,
            first: j.first,
            id: j.id,
            last: j.last,
            record: "finding",
            rule: j.rule,
            severity: j.severity,
            side: j.side,
            stream: j.stream,
            title: j.title,
            kind: "finding",
        }
    }
}

/// What the engine reports: the findings, most severe first, and its caps.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FindingsReport {
    /// Most severe first ([`Finding::order`]).
    pub findings: Vec<Finding>,
    /// Findings not kept beyond [`MAX_FINDINGS`], by id.
    pub omitted: BTreeMap<FindingId, u64>,
    /// Client streams not followed beyond [`MAX_FINDING_STREAMS`].
    pub streams_untracked: u64,
}

impl FindingsReport {
    /// The most severe finding's severity.
    pub fn worst(&self) -> Option<Severity> {
        self.findings.iter().map(|f| f.severity).max()
    }

    /// The findings of a phase `[start, end)`: those that held at some time in it.
    pub fn within(&self, start: Nanos, end: Nanos) -> Vec<Finding> {
        self.findings
            .iter()
            .filter(|f| f.overlaps(start, end))
            .cloned()
            .collect()
    }
}

/// A finding while the run goes on: the numbers; its text is written when it is reported.
#[derive(Clone, Debug)]
struct Rec {
    id: FindingId,
    conn: Option<u32>,
    stream: Option<u32>,
    side: Option<Side>,
    first: Nanos,
    last: Nanos,
    count: u64,
    evidence: Evidence,
}

/// Where a finding is filed: one per id, connection and side.
type Key = (FindingId, u32, u8);

const NO_CONN: u32 = u32::MAX;

fn key(id: FindingId, conn: Option<u32>, side: Option<Side>) -> Key {
    let s = match side {
        None => 2,
        Some(s) => s.index() as u8,
    };
    (id, conn.unwrap_or(NO_CONN), s)
}

/// Capture-wide facts: gaps, mid-stream connections, TLS without keys, live drops.
#[derive(Clone, Debug, Default)]
struct CaptureF {
    gaps: u64,
    gaps_framing_lost: u64,
    gap_connections: u64,
    gap_bytes: u64,
    mid_connections: u64,
    mid_first: Option<u32>,
    gap_first: Option<u32>,
    tls_without_key: u64,
    tls_connections: Vec<u32>,
    drops_kernel: u64,
    drops_interface: u64,
    drops_received: u64,
    /// GOAWAYs that cut calls, with those calls' methods, for the retries on other
    /// connections (goaway-retries): at most [`rules::MAX_CUTS`], the oldest dropped.
    cuts: Vec<Cut>,
}

/// The calls one connection's GOAWAY cut, and their retries seen on other connections.
#[derive(Clone, Debug)]
struct Cut {
    conn: u32,
    server: Option<std::net::SocketAddr>,
    at: Nanos,
    /// Methods (`:path`) of the cut calls not matched by a retry yet, and how many.
    methods: Vec<(Box<[u8]>, u32)>,
    cut: u64,
    /// Cut calls whose method is beyond [`rules::MAX_CUT_METHODS`].
    untracked: u64,
    retried: u64,
    retry_conn: Option<u32>,
    first_retry: Nanos,
    last_retry: Nanos,
}

impl CaptureF {
    /// Calls of `conn` (whose server is `server`) cut at `ts`, by method.
    fn note_cut(
        &mut self,
        conn: u32,
        server: Option<std::net::SocketAddr>,
        ts: Nanos,
        paths: Vec<Box<[u8]>>,
    ) {
        let i = match self.cuts.iter().position(|c| c.conn == conn) {
            Some(i) => i,
            None => {
                if self.cuts.len() == rules::MAX_CUTS {
                    self.cuts.remove(0);
                }
                self.cuts.push(Cut {
                    conn,
                    server,
                    at: ts,
                    methods: Vec::new(),
                    cut: 0,
                    untracked: 0,
                    retried: 0,
                    retry_conn: None,
                    first_retry: 0,
                    last_retry: 0,
                });
                self.cuts.len() - 1
            }
        };
        let cut = &mut self.cuts[i];
        for p in paths {
            cut.cut += 1;
            if let Some(e) = cut.methods.iter_mut().find(|(m, _)| *m == p) {
                e.1 += 1;
            } else if cut.methods.len() < rules::MAX_CUT_METHODS {
                cut.methods.push((p, 1));
            } else {
                cut.untracked += 1;
            }
        }
    }

    /// A request of `path` on `conn` to `server` at `ts`: the connection whose cut call it
    /// retries, if any (another connection, the same server, within [`rules::RETRY_WINDOW`]
    /// of the GOAWAY; each cut call matched once).
    fn retry(
        &mut self,
        conn: u32,
        server: Option<std::net::SocketAddr>,
        path: &[u8],
        ts: Nanos,
    ) -> Option<u32> {
        let cut = self.cuts.iter_mut().find(|c| {
            c.conn != conn
                && c.server == server
                && ts >= c.at
                && ts - c.at <= rules::RETRY_WINDOW
                && c.methods.iter().any(|(m, n)| *n > 0 && &**m == path)
        })?;
        if let Some(e) = cut.methods.iter_mut().find(|(m, n)| *n > 0 && &**m == path) {
            e.1 -= 1;
        }
        if cut.retried == 0 {
            cut.first_retry = ts;
            cut.retry_conn = Some(conn);
        }
        cut.retried += 1;
        cut.last_retry = ts;
        Some(cut.conn)
    }
}

/// The findings engine. See the module docs.
#[derive(Debug, Default)]
pub struct Findings {
    cfg: FindingsConfig,
    /// By connection id (ours, sequential: the multiply-shift table of the stream records).
    conns: crate::table::IdTable<Box<ConnF>>,
    recs: Vec<Rec>,
    index: FastMap<Key, u32>,
    /// Findings fired since the last [`Findings::drain_new`], by index into `recs`.
    fresh: Vec<u32>,
    omitted: BTreeMap<FindingId, u64>,
    /// Client streams followed now, over every connection.
    streams: usize,
    streams_untracked: u64,
    capture: CaptureF,
    /// The latest frame time.
    now: Nanos,
    /// Findings fired by the rules on the frame at hand, filed once the connection is free.
    pending: Vec<rules::Fire>,
    /// A flow tracker of its own, for runs without the analysis ([`Findings::with_own_flow`]);
    /// boxed, as it is taken out and put back at every frame.
    own_flow: Option<Box<crate::flow::Flow>>,
    /// `own_flow` is the run's one tracker, handed to the analysis at the end
    /// ([`Findings::with_shared_flow`]).
    flow_shared: bool,
}

/// Facts of the whole run that only the run knows (the capture's counters, TLS, live drops),
/// told at ticks and at the end ([`Findings::note_capture`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CaptureFacts {
    /// Bytes in reassembly gaps (`tcp.gap_bytes`).
    pub gap_bytes: u64,
    /// TLS connections carrying h2 that could not be decrypted (no key).
    pub tls_without_key: u64,
    /// Their connection ids, when known (the first few).
    pub tls_connections: Vec<u32>,
    /// Live drops: by the kernel, by the interface, and packets received.
    pub drops: Option<(u64, u64, u64)>,
}

impl Findings {
    /// An engine assuming the server policy `cfg`.
    pub fn new(cfg: FindingsConfig) -> Self {
        Findings {
            cfg,
            ..Findings::default()
        }
    }

    /// The server policy assumed.
    pub fn config(&self) -> &FindingsConfig {
        &self.cfg
    }

    /// Files (or refreshes) finding `id` of `conn`/`side` at `ts`: a new one is created (and
    /// queued for [`Findings::drain_new`]) unless [`MAX_FINDINGS`] are kept; an existing one
    /// gets `last = ts`. Returns its index, when kept.
    fn fire(
        &mut self,
        id: FindingId,
        conn: Option<u32>,
        side: Option<Side>,
        stream: Option<u32>,
        ts: Nanos,
    ) -> Option<usize> {
        let k = key(id, conn, side);
        if let Some(&i) = self.index.get(&k) {
            let r = self.recs.get_mut(i as usize)?;
            r.last = r.last.max(ts);
            r.first = r.first.min(ts);
            return Some(i as usize);
        }
        if self.recs.len() >= MAX_FINDINGS {
            *self.omitted.entry(id).or_default() += 1;
            // Counted once per key: remember it with an index past the end.
            self.index.insert(k, u32::MAX);
            return None;
        }
        let i = self.recs.len() as u32;
        self.recs.push(Rec {
            id,
            conn,
            stream,
            side,
            first: ts,
            last: ts,
            count: 0,
            evidence: Evidence::default(),
        });
        self.index.insert(k, i);
        self.fresh.push(i);
        Some(i as usize)
    }

    /// The finding filed under `id`/`conn`/`side`, if kept.
    fn rec_mut(
        &mut self,
        id: FindingId,
        conn: Option<u32>,
        side: Option<Side>,
    ) -> Option<&mut Rec> {
        let i = *self.index.get(&key(id, conn, side))?;
        self.recs.get_mut(i as usize)
    }

    /// Whether a finding is filed under `id`/`conn`/`side` (kept or counted).
    fn has(&self, id: FindingId, conn: Option<u32>, side: Option<Side>) -> bool {
        self.index.contains_key(&key(id, conn, side))
    }

    /// Capture-wide facts (see [`CaptureFacts`]): at each live tick and at the end.
    pub fn note_capture(&mut self, f: &CaptureFacts, now: Nanos) {
        self.capture.gap_bytes = self.capture.gap_bytes.max(f.gap_bytes);
        if f.tls_without_key > self.capture.tls_without_key {
            self.capture.tls_without_key = f.tls_without_key;
            self.capture.tls_connections = f.tls_connections.clone();
            // Capture-wide: no connection nor stream of its own; the first connection without
            // a key is the evidence's `first_conn` (it was also put in `stream` before).
            self.fire(FindingId::TlsNoKeys, None, None, None, now);
        }
        if let Some((kernel, interface, received)) = f.drops {
            self.capture.drops_kernel = kernel;
            self.capture.drops_interface = interface;
            self.capture.drops_received = received;
            if kernel + interface > 0 {
                self.fire(FindingId::CaptureDrops, None, None, None, now);
            }
        }
        self.sync_capture();
    }

    /// The findings fired since the last call, each with its evidence as it is now (live: a
    /// `finding` JSON line the moment it fires).
    pub fn drain_new(&mut self, mut f: impl FnMut(Finding)) {
        if self.fresh.is_empty() {
            return;
        }
        let fresh = std::mem::take(&mut self.fresh);
        let conns: Vec<u32> = {
            let mut v: Vec<u32> = fresh
                .iter()
                .filter_map(|&i| self.recs[i as usize].conn)
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        for c in conns {
            self.sync(c);
        }
        self.sync_capture();
        for i in fresh {
            f(self.render(&self.recs[i as usize]));
        }
    }

    /// How many findings of each id were filed so far, one per id, connection and side
    /// (those beyond [`MAX_FINDINGS`] included): what the metrics' `findings_total` counts. It
    /// only grows.
    pub fn filed(&self) -> BTreeMap<FindingId, u64> {
        let mut n = self.omitted.clone();
        for r in &self.recs {
            *n.entry(r.id).or_default() += 1;
        }
        n
    }

    /// Whether a finding fired since the last [`Findings::drain_new`].
    pub fn has_new(&self) -> bool {
        !self.fresh.is_empty()
    }

    /// Every finding so far, most severe first, with the evidence of connections still open
    /// brought up to date. Call after the ledger's `finish` for the final report.
    pub fn report(&mut self) -> FindingsReport {
        let mut open: Vec<u32> = self.conns.keys().collect();
        // In id order: the table's own order depends on the process (decision 246).
        open.sort_unstable();
        for c in open {
            self.sync(c);
        }
        self.sync_capture();
        let mut findings: Vec<Finding> = self.recs.iter().map(|r| self.render(r)).collect();
        findings.sort_by(Finding::order);
        FindingsReport {
            findings,
            omitted: self.omitted.clone(),
            streams_untracked: self.streams_untracked,
        }
    }

    fn render(&self, r: &Rec) -> Finding {
        let (title, rule, advice) = text::words(r.id, &r.evidence, r.side, &self.cfg);
        Finding {
            id: r.id,
            severity: self.cfg.severities.of(r.id),
            title,
            conn: r.conn,
            stream: r.stream,
            side: r.side,
            first: r.first,
            last: r.last,
            count: r.count,
            evidence: r.evidence.clone(),
            rule,
            advice,
        }
    }
}

#[cfg(test)]
mod tests;
