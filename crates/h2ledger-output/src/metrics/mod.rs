//! The run as Prometheus metrics (docs/ledger.md, "Metrics", is the contract): `sniff
//! --metrics ADDR:PORT` serves them while it runs, `replay -T prometheus` prints them once.
//!
//! [`Metrics`] is a prometheus-client registry with typed label sets. It is fed three ways, by
//! the thread that runs the session, and read (encoded) by any thread:
//!
//! * [`Metrics::set`] with the run's [`Figures`] (the running ledger, or the final report):
//!   each counter is raised to its figure, never lowered, so it only grows while the run goes
//!   on and equals the report's figure at the end;
//! * [`Metrics::flush`] with the calls the analysis folded (`h2ledger_calls_total`,
//!   `h2ledger_call_duration_seconds`) and the PING round trips it measured, counted by the
//!   session's thread in a [`Batch`] (no lock per call; decision 206); [`Metrics::call`] and
//!   [`Metrics::ping_rtt`] are a batch of one;
//! * [`Metrics::finding`]: the findings of issue 21 (`h2ledger_findings_total`), a count per
//!   `(id, severity)`: the findings filed so far by id (the run calls it at each sync and the end).
//!
//! Label values are bounded: the side (2), the frame type (14), the gRPC or HTTP status (at
//! most [`MAX_STATUSES`] distinct, then `other`), the `:path` (the first `max_paths` distinct
//! paths of the run, then `other`; both folds counted in `h2ledger_limits_hit_total`). Every
//! label value goes through the crate's escaping (`\`, `"`, newline), and a path's control
//! characters are written `\xNN` first, as the tables write them.
//!
//! ```
//! use h2ledger_output::metrics::{Exposition, Figures, Metrics};
//!
//! let m = Metrics::new(200, "0.1.0");
//! let mut f = Figures::default();
//! f.sides.client.writes = 3;
//! m.set(&f);
//! let page = m.encode(Exposition::Prometheus);
//! assert!(page.contains("h2ledger_writes_total{side=\"client\"} 3\n"));
//! ```

use std::fmt::Write as _;
use std::sync::Mutex;

use h2ledger_core::analysis::CallView;
use h2ledger_core::findings::FindingId;
use h2ledger_core::{FrameClass, Side};
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::{Registry, Unit};

mod batch;
mod figures;
mod parts;
mod serve;
use batch::Buckets;
pub use batch::{Batch, FLUSH_CALLS};
pub use figures::{Figures, LIMITS};
pub use parts::{Part, Parts};
pub use serve::{Exporter, Wake, SYNC_WAIT};

/// Distinct `:path` labels by default (`--metrics-max-paths`).
pub const DEFAULT_MAX_PATHS: usize = 200;
/// The most `--metrics-max-paths` may be: the analysis names at most this many paths.
pub const MAX_PATHS: usize = h2ledger_core::analysis::MAX_METHODS;
/// Distinct status labels; later ones are `other`.
pub const MAX_STATUSES: usize = 64;
/// Distinct `comm` labels of `h2ledger_process_connections_total` (both sides together);
/// later commands are `other` (decision 381).
pub const MAX_COMMS: usize = 32;

/// `h2ledger_call_duration_seconds` buckets: 50 us to 10 s, 1-2.5-5 per decade.
pub const CALL_BUCKETS: [f64; 17] = [
    50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3,
    1.0, 2.5, 5.0, 10.0,
];
/// `h2ledger_ping_rtt_seconds` buckets: 10 us (a loopback PING) to 2.5 s.
pub const RTT_BUCKETS: [f64; 17] = [
    10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3,
    250e-3, 500e-3, 1.0, 2.5,
];

/// The label of calls beyond the path cap, and of statuses beyond [`MAX_STATUSES`].
pub const OTHER: &str = "other";

/// The two text formats a scraper may ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exposition {
    /// The Prometheus text format, version 0.0.4 (`text/plain; version=0.0.4`).
    Prometheus,
    /// OpenMetrics 1.0 text (`application/openmetrics-text; version=1.0.0`), ending in
    /// `# EOF`.
    OpenMetrics,
}

impl Exposition {
    /// The format an HTTP `Accept` header asks for: OpenMetrics when it names
    /// `application/openmetrics-text` (Prometheus does, first), else the 0.0.4 text.
    pub fn from_accept(accept: Option<&str>) -> Exposition {
        match accept {
            Some(a) if a.contains("application/openmetrics-text") => Exposition::OpenMetrics,
            _ => Exposition::Prometheus,
        }
    }

    /// The response's `Content-Type`.
    pub fn content_type(self) -> &'static str {
        match self {
            Exposition::Prometheus => prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
            Exposition::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SideLabel {
    side: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FrameLabels {
    side: &'static str,
    r#type: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    path: String,
    status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PathLabel {
    path: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StallLabels {
    side: &'static str,
    window: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CodeLabels {
    side: &'static str,
    code: &'static str,
}

/// The `code` label values: RFC 9113's error code names (0x0 to 0xd), then `other`.
pub const ERROR_CODES: [&str; h2ledger_core::analysis::RST_CODES] = [
    "NO_ERROR",
    "PROTOCOL_ERROR",
    "INTERNAL_ERROR",
    "FLOW_CONTROL_ERROR",
    "SETTINGS_TIMEOUT",
    "STREAM_CLOSED",
    "FRAME_SIZE_ERROR",
    "REFUSED_STREAM",
    "CANCEL",
    "COMPRESSION_ERROR",
    "CONNECT_ERROR",
    "ENHANCE_YOUR_CALM",
    "INADEQUATE_SECURITY",
    "HTTP_1_1_REQUIRED",
    "other",
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProcessLabels {
    side: &'static str,
    comm: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FindingLabels {
    id: &'static str,
    severity: Severity,
}

/// A finding's severity (issue 21), the `severity` label of `h2ledger_findings_total`.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum Severity {
    /// Worth knowing.
    info,
    /// Costs something.
    warning,
    /// Breaks or endangers the service (abuse, floods).
    critical,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DropLabel {
    by: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LimitLabel {
    limit: &'static str,
}

fn call_histogram() -> Buckets {
    Buckets::new(&CALL_BUCKETS)
}

fn rtt_histogram() -> Buckets {
    Buckets::new(&RTT_BUCKETS)
}

/// The handles of one path label: its duration histogram and a counter per status seen.
#[derive(Clone)]
struct PathSlot {
    duration: Buckets,
    statuses: Vec<(StatusKey, Counter)>,
    label: String,
}

/// A call's status as the analysis gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum StatusKey {
    Grpc(u16),
    Http(u16),
    Reset,
    None,
}

impl StatusKey {
    fn of(c: &CallView<'_>) -> StatusKey {
        match c.status_parts() {
            ("RST_STREAM", _) => StatusKey::Reset,
            (p, Some(n)) if p.starts_with("grpc") => StatusKey::Grpc(n),
            (_, Some(n)) => StatusKey::Http(n),
            _ => StatusKey::None,
        }
    }

    /// The label: a gRPC status by name (`OK`, `UNAVAILABLE`; an unknown code `Code(17)`, as
    /// grpc-go prints it), an HTTP status by number, `RST_STREAM`, or `none`.
    fn label(self) -> String {
        match self {
            StatusKey::Grpc(n) => h2ledger_core::grpc::status_name(n).into_owned(),
            StatusKey::Http(n) => n.to_string(),
            StatusKey::Reset => "RST_STREAM".to_string(),
            StatusKey::None => "none".to_string(),
        }
    }
}

/// The path and status labels handed out so far (only the session's thread takes the lock).
struct Labels {
    max_paths: usize,
    /// By the analysis' method index, below `max_paths`.
    paths: Vec<Option<PathSlot>>,
    other: Option<PathSlot>,
    statuses: Vec<StatusKey>,
    /// Several sessions' calls ([`Metrics::flush_part`]): the slots by path, at most
    /// `max_paths`, in the order their first call was handed over.
    named: Vec<PathSlot>,
    by_name: std::collections::HashMap<String, usize>,
    /// Per part, its analysis' method index to its slot in `named` (`None`: `other`); as
    /// many entries as that analysis has methods (at most its `MAX_METHODS`).
    parts: Vec<std::collections::HashMap<u32, Option<usize>>>,
}

/// The run's metrics. See the module docs.
pub struct Metrics {
    registry: Registry,
    frames: Family<FrameLabels, Counter>,
    bdp_pings: Family<SideLabel, Counter>,
    writes: Family<SideLabel, Counter>,
    bytes: Family<SideLabel, Counter>,
    calls: Family<CallLabels, Counter>,
    durations: Family<PathLabel, Buckets, fn() -> Buckets>,
    rtt: Family<SideLabel, Buckets, fn() -> Buckets>,
    stalls: Family<StallLabels, Counter>,
    calm: Family<SideLabel, Counter>,
    goaways: Family<CodeLabels, Counter>,
    rst_streams: Family<CodeLabels, Counter>,
    findings: Family<FindingLabels, Counter>,
    processes: Family<ProcessLabels, Counter>,
    /// The commands given a `comm` label so far, at most [`MAX_COMMS`].
    comms: Mutex<Vec<String>>,
    open: Gauge,
    connections: Counter,
    packets: Counter,
    dropped: Family<DropLabel, Counter>,
    limits: Family<LimitLabel, Counter>,
    labels: Mutex<Labels>,
}

/// Raises `c` to `v` (a counter never goes down).
fn raise(c: &Counter, v: u64) {
    let now = c.get();
    if v > now {
        c.inc_by(v - now);
    }
}

const WINDOWS: [&str; 3] = ["stream", "connection", "both"];

impl Metrics {
    /// Every family registered (with its series at zero where the labels are known ahead:
    /// sides, frame types, windows, drop causes, limits); paths beyond the first `max_paths`
    /// are labelled `other`; `version` goes into `h2ledger_build_info`.
    pub fn new(max_paths: usize, version: &str) -> Metrics {
        let mut r = Registry::with_prefix("h2ledger");
        let m = Metrics {
            registry: Registry::default(),
            frames: Family::default(),
            bdp_pings: Family::default(),
            writes: Family::default(),
            bytes: Family::default(),
            calls: Family::default(),
            durations: Family::new_with_constructor(call_histogram),
            rtt: Family::new_with_constructor(rtt_histogram),
            stalls: Family::default(),
            calm: Family::default(),
            goaways: Family::default(),
            rst_streams: Family::default(),
            findings: Family::default(),
            processes: Family::default(),
            comms: Mutex::new(Vec::new()),
            open: Gauge::default(),
            connections: Counter::default(),
            packets: Counter::default(),
            dropped: Family::default(),
            limits: Family::default(),
            labels: Mutex::new(Labels {
                max_paths: max_paths.min(MAX_PATHS),
                paths: Vec::new(),
                other: None,
                statuses: Vec::new(),
                named: Vec::new(),
                by_name: Default::default(),
                parts: Vec::new(),
            }),
        };
        r.register(
            "frames",
            "HTTP/2 frames sent, by side (client: the side that sent the connection preface; server) and ledger type (the wire types, with TRAILERS for a HEADERS that ends a stream after its first, PING_ACK and SETTINGS_ACK apart; JSON sides.SIDE.frames.TYPE)",
            m.frames.clone(),
        );
        r.register(
            "bdp_pings",
            "PING frames carrying grpc-go's BDP payload, by sending side (JSON sides.SIDE.bdp_pings)",
            m.bdp_pings.clone(),
        );
        r.register(
            "writes",
            "TCP segments carrying new payload, by side (JSON sides.SIDE.writes)",
            m.writes.clone(),
        );
        r.register(
            "bytes",
            "TCP payload bytes of those writes, by side (JSON sides.SIDE.bytes)",
            m.bytes.clone(),
        );
        r.register(
            "calls",
            "Calls folded by the analysis, by :path and status (JSON methods[].status). status: the gRPC status by name (OK, NOT_FOUND, ...; Code(N) for an unknown code), else the HTTP :status (200), RST_STREAM for a call reset before its status, none for a call that ended or was cut (a GOAWAY, the capture's end) with no status seen, other beyond 64 distinct values. path: the :path, other beyond --metrics-max-paths",
            m.calls.clone(),
        );
        r.register_with_unit(
            "call_duration",
            "Call latency, request HEADERS to the response's END_STREAM, by :path",
            Unit::Seconds,
            m.durations.clone(),
        );
        r.register_with_unit(
            "ping_rtt",
            "PING round trips, by the side that sent the PING",
            Unit::Seconds,
            m.rtt.clone(),
        );
        r.register(
            "flow_stalls",
            "Flow-control stalls, by sending side and the window at zero: stream, connection, or both (JSON flow_control.SIDE.by_limit)",
            m.stalls.clone(),
        );
        r.register(
            "enhance_your_calm_goaways",
            "GOAWAY frames with error ENHANCE_YOUR_CALM (grpc-go: too_many_pings, keepalive strikes), by sending side (JSON too_many_pings)",
            m.calm.clone(),
        );
        r.register(
            "goaways",
            "GOAWAY frames, by sending side and error code (code: RFC 9113 name, other for the rest); NO_ERROR is a graceful close (nginx keepalive_requests, a server's max connection age) that cuts the streams above its last_stream_id",
            m.goaways.clone(),
        );
        r.register(
            "rst_streams",
            "RST_STREAM frames, by sending side and error code (code: RFC 9113 name, other for the rest); CANCEL from the client is a call cancelled or past its deadline, REFUSED_STREAM from the server a stream it did not process",
            m.rst_streams.clone(),
        );
        r.register(
            "findings",
            "Findings, by id and severity (docs/findings.md; h2ledger explain ID): every id from the start, at 0 until one fires; severity info, warning (the JSON's warn) or critical, as --severity set it",
            m.findings.clone(),
        );
        r.register(
            "process_connections",
            "TCP connections (sniff only: looked up in /proc at their SYN, those open before the capture at its end) by side and the command of the local process that owns that end (comm: /proc/PID/comm, 15 bytes at most; other beyond 32 distinct commands; an end no local process holds is not counted); JSON per_connection[].process.SIDE.comm",
            m.processes.clone(),
        );
        r.register(
            "connections_open",
            "HTTP/2 connections open now",
            m.open.clone(),
        );
        r.register(
            "connections",
            "HTTP/2 connections seen (JSON connections)",
            m.connections.clone(),
        );
        r.register(
            "packets",
            "Packets read (JSON capture.packets)",
            m.packets.clone(),
        );
        r.register(
            "packets_dropped",
            "Packets dropped before h2ledger saw them, by: kernel (libpcap ps_drop) or interface (ps_ifdrop) (JSON drops)",
            m.dropped.clone(),
        );
        r.register(
            "limits_hit",
            "Events a memory bound folded or dropped, by limit: metrics_paths and metrics_statuses (calls labelled other), connections (evicted), the others as docs/ledger.md, \"Metrics\", lists them",
            m.limits.clone(),
        );
        r.register(
            "build",
            "The h2ledger that made these metrics",
            Info::new(vec![("version".to_string(), version.to_string())]),
        );
        for s in Side::ALL {
            for c in FrameClass::ALL {
                let _ = m.frames.get_or_create(&FrameLabels {
                    side: s.name(),
                    r#type: c.name(),
                });
            }
            let _ = m.bdp_pings.get_or_create(&side(s));
            let _ = m.writes.get_or_create(&side(s));
            let _ = m.bytes.get_or_create(&side(s));
            let _ = m.rtt.get_or_create(&side(s));
            let _ = m.calm.get_or_create(&side(s));
            for code in ERROR_CODES {
                let l = CodeLabels {
                    side: s.name(),
                    code,
                };
                let _ = m.goaways.get_or_create(&l);
                let _ = m.rst_streams.get_or_create(&l);
            }
            for w in WINDOWS {
                let _ = m.stalls.get_or_create(&StallLabels {
                    side: s.name(),
                    window: w,
                });
            }
        }
        for by in ["kernel", "interface"] {
            let _ = m.dropped.get_or_create(&DropLabel { by });
        }
        for (limit, _) in LIMITS {
            let _ = m.limits.get_or_create(&LimitLabel { limit });
        }
        for limit in [
            "metrics_paths",
            "metrics_statuses",
            "metrics_comms",
            "ping_rtt_samples",
        ] {
            let _ = m.limits.get_or_create(&LimitLabel { limit });
        }
        Metrics { registry: r, ..m }
    }

    /// Raises every counter fed from the run's figures to `f`'s value (see the module docs).
    pub fn set(&self, f: &Figures) {
        for s in Side::ALL {
            let t = f.sides.get(s);
            for c in FrameClass::ALL {
                let l = FrameLabels {
                    side: s.name(),
                    r#type: c.name(),
                };
                raise(&self.frames.get_or_create(&l), t.frames.get(c));
            }
            raise(&self.bdp_pings.get_or_create(&side(s)), t.bdp_pings);
            raise(&self.writes.get_or_create(&side(s)), t.writes);
            raise(&self.bytes.get_or_create(&side(s)), t.bytes);
            raise(&self.calm.get_or_create(&side(s)), f.calm_goaways[s]);
            for (i, code) in ERROR_CODES.iter().enumerate() {
                let l = CodeLabels {
                    side: s.name(),
                    code,
                };
                raise(&self.goaways.get_or_create(&l), f.error_codes.goaway[s][i]);
                raise(
                    &self.rst_streams.get_or_create(&l),
                    f.error_codes.rst_stream[s][i],
                );
            }
            for (w, n) in WINDOWS.iter().zip(f.stalls.get(s)) {
                let l = StallLabels {
                    side: s.name(),
                    window: w,
                };
                raise(&self.stalls.get_or_create(&l), *n);
            }
        }
        self.open.set(i64::try_from(f.open).unwrap_or(i64::MAX));
        raise(&self.connections, f.connections);
        raise(&self.packets, f.packets);
        if let Some(d) = f.drops {
            raise(
                &self.dropped.get_or_create(&DropLabel { by: "kernel" }),
                d.kernel,
            );
            raise(
                &self.dropped.get_or_create(&DropLabel { by: "interface" }),
                d.interface,
            );
        }
        for (limit, v) in &f.limits {
            raise(&self.limits.get_or_create(&LimitLabel { limit }), *v);
        }
    }

    /// One call, as the analysis folds it: `h2ledger_calls_total{path, status}` and, when it
    /// ended (END_STREAM, not reset), `h2ledger_call_duration_seconds{path}`. A run counts its
    /// calls in a [`Batch`] and hands them over with [`Metrics::flush`]; this is a batch of one.
    pub fn call(&self, c: &CallView<'_>) {
        let mut b = Batch::default();
        b.call(c);
        self.flush(&mut b);
    }

    /// A call of the analysis' method `idx` (named `method`) with status `key`, and its
    /// duration when it ended.
    #[cfg(test)]
    fn record(&self, idx: usize, method: &str, key: StatusKey, duration: Option<i64>) {
        let mut b = Batch::default();
        b.add(idx as u32, method, key, duration);
        self.flush(&mut b);
    }

    /// Adds the calls and round trips counted in `b` (in the order of their first call, so
    /// the path and status labels are handed out as call by call), and empties it.
    pub fn flush(&self, b: &mut Batch) {
        self.flush_from(None, b);
    }

    /// [`Metrics::flush`] of one of several sessions counted together (`sniff --workers`:
    /// `part` is the worker): each session numbers its methods its own way, so its calls
    /// are labelled by their path's name, the first `max_paths` distinct paths of all the
    /// parts keeping theirs.
    pub fn flush_part(&self, part: usize, b: &mut Batch) {
        self.flush_from(Some(part), b);
    }

    fn flush_from(&self, part: Option<usize>, b: &mut Batch) {
        if b.calls > 0 {
            let mut l = self.labels.lock().unwrap_or_else(|e| e.into_inner());
            let l = &mut *l;
            for e in &b.entries {
                self.add_entry(l, part, e);
            }
        }
        for s in Side::ALL {
            if b.rtt[s].count > 0 {
                self.rtt.get_or_create(&side(s)).merge(&b.rtt[s]);
            }
        }
        b.clear();
    }

    fn add_entry(&self, l: &mut Labels, part: Option<usize>, e: &batch::Entry) {
        let key = e.status;
        let status = if l.statuses.contains(&key) {
            Some(key)
        } else if l.statuses.len() < MAX_STATUSES {
            l.statuses.push(key);
            Some(key)
        } else {
            self.limit_add("metrics_statuses", e.calls);
            None
        };
        let idx = e.method as usize;
        let named = match part {
            None => (idx < l.max_paths).then(|| {
                if l.paths.len() <= idx {
                    l.paths.resize(idx + 1, None);
                }
                l.paths[idx].get_or_insert_with(|| self.slot(path_label(&e.name)))
            }),
            Some(p) => {
                if l.parts.len() <= p {
                    l.parts.resize_with(p + 1, Default::default);
                }
                let at = *l.parts[p].entry(e.method).or_insert_with(|| {
                    if let Some(&i) = l.by_name.get(&e.name) {
                        return Some(i);
                    }
                    (l.named.len() < l.max_paths).then(|| {
                        l.named.push(self.slot(path_label(&e.name)));
                        l.by_name.insert(e.name.clone(), l.named.len() - 1);
                        l.named.len() - 1
                    })
                });
                at.map(|i| &mut l.named[i])
            }
        };
        let slot = match named {
            Some(s) => s,
            None => {
                self.limit_add("metrics_paths", e.calls);
                l.other.get_or_insert_with(|| self.slot(OTHER.to_string()))
            }
        };
        let counter = match slot.statuses.iter().find(|(k, _)| Some(*k) == status) {
            Some((_, c)) => c.clone(),
            None => {
                let labels = CallLabels {
                    path: slot.label.clone(),
                    status: status.map_or_else(|| OTHER.to_string(), StatusKey::label),
                };
                let counter = self.calls.get_or_create_owned(&labels);
                if let Some(k) = status {
                    slot.statuses.push((k, counter.clone()));
                }
                counter
            }
        };
        counter.inc_by(e.calls);
        slot.duration.merge(&e.durations);
    }

    fn slot(&self, label: String) -> PathSlot {
        PathSlot {
            duration: self.durations.get_or_create_owned(&PathLabel {
                path: label.clone(),
            }),
            statuses: Vec::new(),
            label,
        }
    }

    fn limit_add(&self, limit: &'static str, n: u64) {
        self.limits.get_or_create(&LimitLabel { limit }).inc_by(n);
    }

    /// One PING round trip (nanoseconds), by the side that sent the PING (a batch of one:
    /// see [`Metrics::flush`]).
    pub fn ping_rtt(&self, s: Side, rtt_ns: i64) {
        let mut b = Batch::default();
        b.ping_rtt(s, rtt_ns);
        self.flush(&mut b);
    }

    /// The connections whose end on `side` a local process owns, by its command: raises
    /// `h2ledger_process_connections_total{side, comm}` to each count (the counts so far of
    /// the run, [`h2ledger_run::procs::Owners::by_comm`]). The first [`MAX_COMMS`] commands
    /// keep their name; the connections of later ones are `comm="other"` and counted in
    /// `h2ledger_limits_hit_total{limit="metrics_comms"}`.
    pub fn processes<'a>(&self, counts: impl IntoIterator<Item = (Side, &'a str, u64)>) {
        let mut comms = self.comms.lock().unwrap_or_else(|e| e.into_inner());
        let mut other = [0u64; 2];
        for (s, comm, n) in counts {
            let comm = path_label(comm);
            if !comms.contains(&comm) {
                if comms.len() >= MAX_COMMS {
                    other[usize::from(s == Side::Server)] += n;
                    continue;
                }
                comms.push(comm.clone());
            }
            let l = ProcessLabels {
                side: s.name(),
                comm,
            };
            raise(&self.processes.get_or_create(&l), n);
        }
        for (s, n) in Side::ALL.into_iter().zip(other) {
            if n > 0 {
                let l = ProcessLabels {
                    side: s.name(),
                    comm: OTHER.to_string(),
                };
                raise(&self.processes.get_or_create(&l), n);
            }
        }
        raise(
            &self.limits.get_or_create(&LimitLabel {
                limit: "metrics_comms",
            }),
            other[0] + other[1],
        );
    }

    /// Issue 21's findings: raises `h2ledger_findings_total{id, severity}` to `count`. `id`
    /// is a finding's name from the findings table (a fixed set: never text from the wire).
    pub fn finding(&self, id: &'static str, severity: Severity, count: u64) {
        raise(
            &self.findings.get_or_create(&FindingLabels { id, severity }),
            count,
        );
    }

    /// Every finding filed so far, counted by id ([`h2ledger_run::Session::findings_filed`]):
    /// each raises `h2ledger_findings_total` with its id's name and severity as `severities`
    /// gives it (decision 199; `--severity`). Every id has its series, at 0 until one is filed
    /// (decision 302): `rate()` and `absent()` work from the first scrape.
    pub fn findings(
        &self,
        filed: impl IntoIterator<Item = (FindingId, u64)>,
        severities: &h2ledger_core::findings::Severities,
    ) {
        let filed: std::collections::BTreeMap<FindingId, u64> = filed.into_iter().collect();
        for id in FindingId::ALL {
            let severity = match severities.of(*id) {
                h2ledger_core::findings::Severity::Info => Severity::info,
                h2ledger_core::findings::Severity::Warn => Severity::warning,
                h2ledger_core::findings::Severity::Critical => Severity::critical,
            };
            self.finding(id.name(), severity, filed.get(id).copied().unwrap_or(0));
        }
    }

    /// The exposition in format `e`.
    pub fn encode(&self, e: Exposition) -> String {
        let mut out = String::new();
        let r = match e {
            Exposition::Prometheus => {
                prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry)
            }
            Exposition::OpenMetrics => {
                prometheus_client::encoding::text::encode(&mut out, &self.registry)
            }
        };
        // Writing into a String cannot fail.
        debug_assert!(r.is_ok());
        in_series_order(&out)
    }
}

/// The page with each family's series in the order of their labels (the registry keeps them
/// in a hash map): the same figures always give the same text. A histogram's lines of one
/// series stay together and in their order (`le` ascending, then `_sum` and `_count`).
fn in_series_order(page: &str) -> String {
    fn key(line: &str) -> &str {
        let Some(open) = line.find('{') else {
            return "";
        };
        let close = line.rfind('}').unwrap_or(line.len());
        let labels = &line[open + 1..close.max(open + 1)];
        match labels.rfind("le=\"") {
            Some(i) if labels.ends_with('"') => labels[..i].trim_end_matches(','),
            _ => labels,
        }
    }
    let mut out = String::with_capacity(page.len());
    let mut samples: Vec<&str> = Vec::new();
    let flush = |samples: &mut Vec<&str>, out: &mut String| {
        samples.sort_by_key(|l| key(l));
        for l in samples.drain(..) {
            out.push_str(l);
            out.push('\n');
        }
    };
    for line in page.lines() {
        if line.starts_with('#') {
            flush(&mut samples, &mut out);
            out.push_str(line);
            out.push('\n');
        } else {
            samples.push(line);
        }
    }
    flush(&mut samples, &mut out);
    out
}

fn side(s: Side) -> SideLabel {
    SideLabel { side: s.name() }
}

/// A path as a label value: the analysis' text (invalid UTF-8 already `\xNN`, `\` doubled)
/// with control characters written `\xNN` too, as the tables write them; the crate's encoder
/// then escapes `\`, `"` and newlines.
fn path_label(p: &str) -> String {
    let mut s = String::with_capacity(p.len());
    for ch in p.chars() {
        if ch.is_control() {
            let mut b = [0; 4];
            for x in ch.encode_utf8(&mut b).bytes() {
                let _ = write!(s, "\\x{x:02x}");
            }
        } else {
            s.push(ch);
        }
    }
    s
}

#[cfg(test)]
mod tests;
