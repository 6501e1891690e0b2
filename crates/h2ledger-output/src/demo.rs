//! `demo`: the finding line, both phases side by side per stack, and the demo's JSON.

use std::io::Write;

use h2ledger_core::{AnalysisReport, FrameClass, Side};
use h2ledger_run::{CaptureStats, Drops, Report, TcpReport};
use serde::Serialize;
use tabled::builder::Builder;
use tabled::settings::object::{Cell, Columns};
use tabled::settings::{Alignment, Span};

use crate::Style;

/// The finding stays on one line up to this width (the issue's own example is 106 columns;
/// the tables below it fit 100), else it takes one line per phase.
const FINDING_WIDTH: usize = 110;

/// What a workload program reported of one phase (its results line's `phases[]`, read as it is).
#[derive(Clone, Debug, serde::Deserialize)]
pub struct PhaseResult {
    /// The phase's name (`1 caller x 24/s`).
    pub name: String,
    /// Concurrent callers.
    pub callers: u64,
    /// Calls per second per caller.
    pub rate_per_caller: f64,
    /// Calls the program made.
    pub calls_made: u64,
    /// Of them, calls that succeeded.
    pub calls_ok: u64,
    /// When the phase began and ended, nanoseconds since the epoch.
    pub start_ns: i64,
    /// See `start_ns`.
    pub end_ns: i64,
}

/// One gRPC stack's run of the demo, tallied.
pub struct Stack<'a> {
    /// `grpc-go`, `grpcio`, `tonic`.
    pub name: &'a str,
    /// The stack's version, as the program said.
    pub version: &'a str,
    /// The program's path.
    pub program: &'a str,
    /// The server's port on 127.0.0.1.
    pub port: u16,
    /// Whether the stack's BDP probes carry a payload the PING table knows (grpc-go, hyper);
    /// C-core's PINGs carry a counter, so for grpcio the finding counts every PING.
    pub bdp_known: bool,
    /// What the program reported, per phase.
    pub results: &'a [PhaseResult],
    /// One report per workload phase.
    pub phases: &'a [Report],
    /// The whole run's report (its warnings).
    pub whole: &'a Report,
    /// The stack's packet counts.
    pub capture: &'a CaptureStats,
    /// The stack's reassembly counts.
    pub tcp: TcpReport,
}

/// The demo's JSON document (`-T json`; `-T jsonl`: one `summary` record), keys in the
/// published order.
#[derive(Serialize)]
struct Doc<'a> {
    adaptive_window: bool,
    capture: Option<&'a CaptureStats>,
    drops: Drops,
    limits: Limits,
    phases: Vec<PhaseJson<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    record: Option<&'static str>,
    server: Option<String>,
    static_window: bool,
    tcp: Option<TcpReport>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
    workloads: Vec<WorkloadJson<'a>>,
}

/// The demo's caps that were hit.
#[derive(Serialize)]
struct Limits {
    /// Packets past [`write_demo`]'s `max_packets`, not tallied.
    #[serde(skip_serializing_if = "Option::is_none")]
    demo_packets: Option<u64>,
}

/// One workload phase: what the program reported, and the ledger of that phase.
#[derive(Serialize)]
struct PhaseJson<'a> {
    bdp_pings_per_call_per_side: Option<f64>,
    callers: u64,
    calls_made: u64,
    calls_ok: u64,
    end: f64,
    ledger: &'a Report,
    name: &'a str,
    pings_per_call_per_side: Option<f64>,
    rate_per_caller: f64,
    start: f64,
}

/// One stack's run.
#[derive(Serialize)]
struct WorkloadJson<'a> {
    capture: &'a CaptureStats,
    finding: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    findings: Option<&'a [h2ledger_core::findings::Finding]>,
    #[serde(rename = "impl")]
    name: &'a str,
    phases: Vec<PhaseJson<'a>>,
    program: &'a str,
    server: String,
    static_window: bool,
    tcp: TcpReport,
    version: &'a str,
}

/// Writes the demo's result: per stack the finding, the table and the capture facts, then the
/// capture's drops (table; warnings on `err`), or one JSON document or line.
#[allow(clippy::too_many_arguments)]
pub fn write_demo(
    out: &mut dyn Write,
    err: &mut dyn Write,
    format: crate::Format,
    stacks: &[Stack<'_>],
    static_window: bool,
    drops: Drops,
    capped: u64,
    max_packets: usize,
    st: Style,
) -> std::io::Result<()> {
    match format {
        crate::Format::Json | crate::Format::Jsonl => {
            let tag = (format == crate::Format::Jsonl).then_some("summary");
            let first = stacks.first();
            let doc = Doc {
                adaptive_window: !static_window,
                capture: first.map(|d| d.capture),
                drops,
                limits: Limits {
                    demo_packets: (capped > 0).then_some(capped),
                },
                phases: first.map(|d| d.phases_json()).unwrap_or_default(),
                record: tag,
                server: first.map(|d| format!("127.0.0.1:{}", d.port)),
                static_window,
                tcp: first.map(|d| d.tcp),
                kind: tag,
                workloads: stacks.iter().map(|d| d.json(static_window)).collect(),
            };
            if tag.is_some() {
                crate::json::write_line(out, &doc)?;
            } else {
                crate::json::write_pretty(out, &doc)?;
            }
        }
        crate::Format::Table => {
            for (i, d) in stacks.iter().enumerate() {
                if i > 0 {
                    writeln!(out)?;
                }
                writeln!(out, "{}", d.finding())?;
                if d.phases.len() > 1 {
                    // Per phase, as the line above: each phase's own BDP numbers.
                    for (p, res) in d.phases.iter().zip(d.results) {
                        let fs = phase_findings(p);
                        match crate::table::findings::findings_block(&fs, p.start, st) {
                            Some(b) => {
                                writeln!(out, "{}:", res.name)?;
                                write!(out, "{b}")?;
                            }
                            None => writeln!(out, "{}: no findings", res.name)?,
                        }
                    }
                } else if let Some(b) = d
                    .whole
                    .findings
                    .as_deref()
                    .and_then(|f| crate::table::findings::findings_block(f, d.whole.start, st))
                {
                    write!(out, "{b}")?;
                }
                writeln!(out, "{}", d.table(static_window, st))?;
                let f = crate::table::footer(d.capture, &d.tcp, None);
                writeln!(out, "{}", crate::table::wrap(&f, crate::TABLE_WIDTH))?;
            }
            writeln!(
                out,
                "capture on lo: dropped by the kernel: {}, by the interface: {}",
                drops.kernel, drops.interface
            )?;
            out.flush()?;
            for d in stacks {
                for w in &d.whole.ledger.warnings {
                    writeln!(err, "warning: {}: {w}", d.name)?;
                }
            }
            if capped > 0 {
                writeln!(
                    err,
                    "warning: {capped} packets past the demo's cap of {max_packets} were not tallied (shorten --seconds)"
                )?;
            }
        }
    }
    Ok(())
}

/// A phase's findings (those that held during it, [`Report::findings`]), with
/// `bdp-ping-per-call` measured on the phase's own frames, as the demo's line measures it: it is
/// kept only when the phase alone reaches the rule ([`BDP_PER_CALL`] over at least
/// [`BDP_MIN_CALLS`] calls).
///
/// [`BDP_PER_CALL`]: h2ledger_core::findings::BDP_PER_CALL
/// [`BDP_MIN_CALLS`]: h2ledger_core::findings::BDP_MIN_CALLS
pub fn phase_findings(p: &Report) -> Vec<h2ledger_core::findings::Finding> {
    use h2ledger_core::findings::{Evidence, FindingId, Num, BDP_MIN_CALLS, BDP_PER_CALL};
    let l = &p.ledger;
    let calls = l.calls;
    let per = |n: u64| {
        if calls == 0 {
            0.0
        } else {
            n as f64 / calls as f64
        }
    };
    let mut out = Vec::new();
    for f in p.findings.as_deref().unwrap_or_default() {
        match (f.id, f.side) {
            (FindingId::BdpPingPerCall, Some(side)) => {
                let t = l.sides.get(side);
                let other = match side {
                    h2ledger_core::Side::Client => h2ledger_core::Side::Server,
                    h2ledger_core::Side::Server => h2ledger_core::Side::Client,
                };
                let peer = l.sides.get(other);
                if calls < BDP_MIN_CALLS || per(t.bdp_pings) < BDP_PER_CALL {
                    continue;
                }
                let mut e = Evidence::default();
                e.u("calls", calls);
                e.u("bdp_pings", t.bdp_pings);
                e.set("bdp_pings_per_call", Num::F(per(t.bdp_pings)));
                e.set("control_frames_per_call", Num::F(per(t.frames.control())));
                e.set("writes_per_call", Num::F(per(t.writes)));
                e.u("peer_bdp_pings", peer.bdp_pings);
                out.push(f.with_evidence(e, t.bdp_pings));
            }
            _ => out.push(f.clone()),
        }
    }
    out
}

/// Per-phase numbers the finding line and the test read.
struct Finding {
    /// BDP PINGs (a payload the PING table marks as a BDP probe) per call, mean of both sides.
    bdp_per_call: Option<f64>,
    /// All PINGs (not ACKs) per call, mean of both sides.
    pings_per_call: Option<f64>,
    /// Labels of the PINGs seen.
    labels: Vec<&'static str>,
}

fn finding_of(f: &Report) -> Finding {
    let l = &f.ledger;
    let calls = l.calls as f64;
    let bdp = f.analysis.as_ref().map_or(0, |a| {
        a.sides.client.rounds.rounds + a.sides.server.rounds.rounds
    });
    let pings =
        l.sides.client.frames.get(FrameClass::Ping) + l.sides.server.frames.get(FrameClass::Ping);
    let mut labels: Vec<&'static str> = [&l.sides.client, &l.sides.server]
        .iter()
        .flat_map(|s| s.ping_labels.keys().copied())
        .collect();
    labels.sort_unstable();
    labels.dedup();
    let per = |n: u64| (l.calls > 0).then(|| n as f64 / 2.0 / calls);
    Finding {
        bdp_per_call: per(bdp),
        pings_per_call: per(pings),
        labels,
    }
}

fn f2(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{x:.2}"))
}

impl Stack<'_> {
    /// `grpc-go, 1 caller x 24/s: 1.00 BDP ping per call per side; 8 callers x 3/s: 0.13 (...)`
    /// `grpc-go, 1 caller x 24/s: 1.00 BDP ping per call per side; 8 callers x 3/s: 0.13 (...)`
    pub fn finding(&self) -> String {
        let mut parts = Vec::new();
        for (i, (f, res)) in self.phases.iter().zip(self.results).enumerate() {
            let x = finding_of(f);
            // grpc-go and hyper probe with a fixed payload the PING table knows; C-core's
            // PINGs carry a counter, so for grpcio the line counts every PING, by label.
            let bdp_known = self.bdp_known;
            let mut s = format!("{}: ", res.name);
            if bdp_known {
                s.push_str(&f2(x.bdp_per_call));
                if i == 0 {
                    s.push_str(" BDP ping per call per side");
                }
            } else {
                s.push_str(&format!(
                    "{} PING per call per side (payload {}: not a known BDP probe)",
                    f2(x.pings_per_call),
                    x.labels.join("/")
                ));
            }
            if res.callers > 1 && bdp_known && f.ledger.calls > 0 {
                // Rounds per side per wave of `callers` calls.
                let per_wave = x.bdp_per_call.unwrap_or(0.0) * res.callers as f64;
                let what = if (per_wave - 1.0).abs() < 0.25 {
                    "one round".to_string()
                } else {
                    format!("{per_wave:.1} rounds")
                };
                s.push_str(&format!(" ({what} per wave of {})", res.callers));
            }
            parts.push(s);
        }
        let line = format!("{}, {}", self.name, parts.join("; "));
        if line.chars().count() <= FINDING_WIDTH {
            return line;
        }
        // One line per phase when the phases do not fit one line.
        format!("{}:\n  {}", self.name, parts.join("\n  "))
    }

    fn phases_json(&self) -> Vec<PhaseJson<'_>> {
        self.phases
            .iter()
            .zip(self.results)
            .map(|(f, res)| {
                let x = finding_of(f);
                PhaseJson {
                    bdp_pings_per_call_per_side: x.bdp_per_call,
                    callers: res.callers,
                    calls_made: res.calls_made,
                    calls_ok: res.calls_ok,
                    end: res.end_ns as f64 / 1e9,
                    ledger: f,
                    name: &res.name,
                    pings_per_call_per_side: x.pings_per_call,
                    rate_per_caller: res.rate_per_caller,
                    start: res.start_ns as f64 / 1e9,
                }
            })
            .collect()
    }

    fn json(&self, static_window: bool) -> WorkloadJson<'_> {
        WorkloadJson {
            capture: self.capture,
            finding: self.finding(),
            findings: self.whole.findings.as_deref(),
            name: self.name,
            phases: self.phases_json(),
            program: self.program,
            server: format!("127.0.0.1:{}", self.port),
            static_window,
            tcp: self.tcp,
            version: self.version,
        }
    }

    /// Both phases side by side, client and server columns; fits 100 columns.
    fn table(&self, static_window: bool, st: Style) -> String {
        let mut b = Builder::default();
        let title = format!(
            "{} {}{}",
            self.name,
            self.version,
            if static_window { ", static window" } else { "" }
        );
        let mut h1 = vec![title];
        let mut h2 = vec![String::new()];
        for f in self.phases {
            h1.push(f.name.clone());
            h1.push(String::new());
            h2.push("client".into());
            h2.push("server".into());
        }
        b.push_record(h1);
        b.push_record(h2);
        type SideCell<'a> = &'a dyn Fn(&Report, Option<&AnalysisReport>, Side) -> String;
        let side_row = |b: &mut Builder, label: &str, f: SideCell<'_>| {
            let mut r = vec![label.to_string()];
            for p in self.phases {
                for s in Side::ALL {
                    r.push(f(p, p.analysis.as_ref(), s));
                }
            }
            b.push_record(r);
        };
        // A value for the whole phase, in the client column (the server's is spanned over).
        let phase_row = |b: &mut Builder, label: &str, f: &dyn Fn(usize, &Report) -> String| {
            let mut r = vec![label.to_string()];
            for (i, p) in self.phases.iter().enumerate() {
                r.push(f(i, p));
                r.push(String::new());
            }
            b.push_record(r);
        };
        phase_row(&mut b, "calls made (workload)", &|i, _| {
            self.results[i].calls_made.to_string()
        });
        phase_row(&mut b, "calls on the wire", &|_, p| {
            p.ledger.calls.to_string()
        });
        for c in [
            FrameClass::Headers,
            FrameClass::Trailers,
            FrameClass::Data,
            FrameClass::WindowUpdate,
            FrameClass::Ping,
        ] {
            side_row(&mut b, c.name(), &|p, _, s| {
                p.ledger.sides.get(s).frames.get(c).to_string()
            });
        }
        let mut labels: Vec<&'static str> = self
            .phases
            .iter()
            .flat_map(|p| [&p.ledger.sides.client, &p.ledger.sides.server])
            .flat_map(|t| t.ping_labels.keys().copied())
            .collect();
        labels.sort_unstable();
        labels.dedup();
        for l in labels {
            side_row(&mut b, &format!("  of which {l}"), &|p, _, s| {
                let n = p.ledger.sides.get(s).ping_labels.get(l).copied();
                n.unwrap_or(0).to_string()
            });
        }
        side_row(&mut b, "PING_ACK", &|p, _, s| {
            p.ledger
                .sides
                .get(s)
                .frames
                .get(FrameClass::PingAck)
                .to_string()
        });
        side_row(&mut b, "writes", &|p, _, s| {
            p.ledger.sides.get(s).writes.to_string()
        });
        side_row(&mut b, "writes per call", &|p, _, s| {
            per(p.ledger.sides.get(s).writes, p.ledger.calls)
        });
        side_row(&mut b, "calls per write (max)", &|_, a, s| {
            a.map_or("-".into(), |a| {
                calls_per_write(&a.sides.get(s).writes_by_calls.0)
            })
        });
        side_row(&mut b, "BDP rounds", &|_, a, s| {
            a.map_or("-".into(), |a| a.sides.get(s).rounds.rounds.to_string())
        });
        side_row(&mut b, "calls per round", &|_, a, s| {
            a.map_or("-".into(), |a| f2(a.sides.get(s).rounds.calls_per_round))
        });
        let us = |v: Option<f64>| v.map_or("-".into(), |x| format!("{x:.0}"));
        phase_row(&mut b, "PING rtt p50 / p99 (us)", &|_, p| {
            p.analysis.as_ref().map_or("-".into(), |a| {
                let r = &a.latency_us.ping_rtt;
                format!("{} / {}", us(r.p50), us(r.p99))
            })
        });
        phase_row(&mut b, "call p50 / p99 (us)", &|_, p| {
            p.analysis.as_ref().map_or("-".into(), |a| {
                let r = &a.latency_us.call;
                format!("{} / {}", us(r.p50), us(r.p99))
            })
        });
        let rows = b.count_records();
        let spanned = [0usize, 2, 3, rows - 2, rows - 1];
        let mut t = b.build();
        crate::table::styled(&mut t, st);
        t.modify(Columns::new(1..), Alignment::right());
        for i in 0..self.phases.len() {
            let col = 1 + 2 * i;
            for &row in &spanned {
                t.modify(Cell::new(row, col), Span::column(2));
            }
        }
        t.modify(Cell::new(0, 1), Alignment::center());
        if self.phases.len() > 1 {
            t.modify(Cell::new(0, 3), Alignment::center());
        }
        t.to_string()
    }
}

fn per(n: u64, calls: u64) -> String {
    if calls == 0 {
        "-".to_string()
    } else {
        format!("{:.2}", n as f64 / calls as f64)
    }
}

/// Mean calls per write over the writes that carried at least one call, and the most calls
/// one write carried: `4.60 (8)`.
fn calls_per_write(hist: &[u64]) -> String {
    let (mut writes, mut calls, mut max) = (0u64, 0u64, 0usize);
    for (k, &n) in hist.iter().enumerate().skip(1) {
        writes += n;
        calls += k as u64 * n;
        if n > 0 {
            max = k;
        }
    }
    if writes == 0 {
        return "-".into();
    }
    format!("{:.2} ({max})", calls as f64 / writes as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_per_write_skips_control_only_writes() {
        assert_eq!(calls_per_write(&[10, 6, 0, 3, 16]), "3.16 (4)");
        assert_eq!(calls_per_write(&[5]), "-");
    }
}
