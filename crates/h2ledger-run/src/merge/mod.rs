//! Reports merged: the report of the union of captures whose TCP connections are disjoint
//! (`h2ledger merge`, the shards of `h2ledger split`, `replay -j N`'s workers).
//!
//! One [`merge`] of [`Report`]s, whole-capture reports with or without an analysis
//! (docs/scale.md says what merges exactly and why): counts add; histograms merge bucket by
//! bucket and their percentiles are computed again; the connections listed are numbered again
//! in the order of their first packet across the parts; findings of a connection follow its
//! number, findings of the whole capture of one id fold into one; the capture's first and
//! last packet are the earliest and the latest; every cap hit in a part stays counted.
//! [`read::from_json`] reads a published report back for it.
//!
//! ```
//! use h2ledger_run::merge::merge;
//! use h2ledger_run::Report;
//!
//! let mut a = Report::default();
//! a.ledger.calls = 3;
//! let mut b = Report::default();
//! b.ledger.calls = 4;
//! assert_eq!(merge(vec![a, b]).ledger.calls, 7);
//! ```

mod lines;
pub mod phased;
pub mod read;

use h2ledger_core::analysis::AnalysisReport;
use h2ledger_core::findings::{Finding, Num};
use h2ledger_core::ledger::{MAX_NUMBERED, MAX_WARNINGS};
use h2ledger_core::tally::MAX_CONN_DETAIL;
use h2ledger_core::{ConnLedger, LedgerReport, Side, Unlisted};

use h2ledger_tcp::Nanos;

use crate::pipeline::{empty_note, empty_note_filter};
use crate::report::{CaptureStats, Drops, Report, TcpReport};

/// Where a connection of one part falls among all the parts' connections: its number in the
/// merged report. A part numbers its TCP connections (HTTP/2 or not) from 0 in the order of
/// their first packet. A part whose report says when each connection it does not list began
/// (`unlisted_first`, decision 447) is known whole: a connection first seen at `t` has as
/// many of its connections before it as began before `t`. Of a part that does not say (more
/// than [`h2ledger_core::ledger::MAX_NUMBERED`] connections), at least as many as it lists
/// before `t` (the last one's number plus 1): a lower bound, still increasing with `t`
/// (docs/scale.md).
struct Numbering {
    /// Per part: (first packet, number) of its listed connections, by first packet.
    listed: Vec<Vec<(Nanos, u32)>>,
    /// Per part known whole: the first packet of each of its connections, by number.
    by_id: Vec<Option<Vec<Nanos>>>,
    /// `by_id`, sorted.
    sorted: Vec<Option<Vec<Nanos>>>,
    /// Per part: its first packet.
    starts: Vec<Nanos>,
}

/// (first packet, number) of each connection `p` lists.
fn listed_of(p: &Report) -> impl Iterator<Item = (Nanos, u32)> + '_ {
    p.ledger.per_connection.iter().map(|c| (c.first, c.id))
}

/// Every connection's first packet by number, from a report's listed and unlisted ones;
/// `None` when not known or not consistent (a listed number beyond the count).
fn all_firsts(p: &Report) -> Option<Vec<Nanos>> {
    let unlisted = p.ledger.unlisted_first.known()?;
    let mut listed: Vec<(u32, Nanos)> = listed_of(p).map(|(t, k)| (k, t)).collect();
    listed.sort_unstable();
    let n = listed.len() + unlisted.len();
    let mut v = Vec::with_capacity(n);
    let (mut l, mut u) = (listed.iter().peekable(), unlisted.iter());
    for id in 0..n {
        match l.next_if(|(k, _)| *k as usize == id) {
            Some(&(_, t)) => v.push(t),
            None => v.push(*u.next()?),
        }
    }
    (l.next().is_none() && u.next().is_none()).then_some(v)
}

impl Numbering {
    fn new(parts: &[Report]) -> Numbering {
        let by_id: Vec<Option<Vec<Nanos>>> = parts.iter().map(all_firsts).collect();
        Numbering {
            listed: parts
                .iter()
                .map(|p| {
                    let mut v: Vec<(Nanos, u32)> = listed_of(p).collect();
                    v.sort_unstable();
                    v
                })
                .collect(),
            sorted: by_id
                .iter()
                .map(|b| {
                    b.clone().map(|mut v| {
                        v.sort_unstable();
                        v
                    })
                })
                .collect(),
            by_id,
            starts: parts
                .iter()
                .map(|p| {
                    p.capture
                        .as_ref()
                        .and_then(|c| c.first)
                        .unwrap_or(Nanos::MIN)
                })
                .collect(),
        }
    }

    /// The numbering of the parts `at` only (indexes into this one's, in order): the same
    /// numbers as long as the parts left out have no connection.
    fn subset(&self, at: &[usize]) -> Numbering {
        Numbering {
            listed: at.iter().map(|&k| self.listed[k].clone()).collect(),
            by_id: at.iter().map(|&k| self.by_id[k].clone()).collect(),
            sorted: at.iter().map(|&k| self.sorted[k].clone()).collect(),
            starts: at.iter().map(|&k| self.starts[k]).collect(),
        }
    }

    /// The merged number of connection `id` of part `part`, first seen at `first`.
    fn number(&self, part: usize, id: u32, first: Nanos) -> u32 {
        let mut n = u64::from(id);
        for (q, l) in self.listed.iter().enumerate() {
            if q == part {
                continue;
            }
            // Connections of part q that come first: earlier, or as early and of an
            // earlier part.
            let earlier = |&t: &Nanos| t < first || (t == first && q < part);
            if let Some(all) = &self.sorted[q] {
                n += all.partition_point(earlier) as u64;
                continue;
            }
            let before = l.partition_point(|(t, _)| earlier(t));
            if before > 0 {
                n += u64::from(l[before - 1].1) + 1;
            }
        }
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    /// The merged number of a connection of `part` known by its number only (a finding or a
    /// TLS connection whose connection is not listed): exact when the part is known whole,
    /// else placed as late as its part's listed connections before it allow, and not before
    /// its part's first packet.
    fn number_of(&self, part: usize, id: u32) -> u32 {
        if let Some(&t) = self.by_id[part].as_ref().and_then(|b| b.get(id as usize)) {
            return self.number(part, id, t);
        }
        let l = &self.listed[part];
        match l.iter().find(|(_, k)| *k == id) {
            Some(&(t, _)) => self.number(part, id, t),
            None => {
                let t = l
                    .iter()
                    .filter(|(_, k)| *k < id)
                    .map(|(t, _)| *t)
                    .max()
                    .unwrap_or(Nanos::MIN)
                    .max(self.starts[part]);
                self.number(part, id, t)
            }
        }
    }

    /// The merged report's `unlisted_first`, its connections being `listed`: the first
    /// packets of every part's connections it does not list, in the order of their merged
    /// numbers. Known when every part is known whole and they are at most
    /// [`h2ledger_core::ledger::MAX_NUMBERED`] in all, as one run keeps them; not given when
    /// no part gave them.
    fn unlisted(&self, parts: &[Report], listed: &[ConnLedger]) -> Unlisted {
        if parts
            .iter()
            .all(|p| p.ledger.unlisted_first == Unlisted::NotGiven)
        {
            return Unlisted::NotGiven;
        }
        let total: usize = self.by_id.iter().flatten().map(Vec::len).sum();
        if self.by_id.iter().any(Option::is_none) || total > MAX_NUMBERED {
            return Unlisted::Unknown;
        }
        let shown: std::collections::HashSet<u32> = listed.iter().map(|c| c.id).collect();
        let mut v: Vec<(u32, Nanos)> = Vec::new();
        for (q, b) in self.by_id.iter().enumerate() {
            for (k, &t) in b.iter().flatten().enumerate() {
                let n = self.number(q, k as u32, t);
                if !shown.contains(&n) {
                    v.push((n, t));
                }
            }
        }
        v.sort_unstable();
        Unlisted::Known(v.into_iter().map(|(_, t)| t).collect())
    }
}

fn add_capture(a: &mut CaptureStats, b: &CaptureStats) {
    a.first = [a.first, b.first].into_iter().flatten().min();
    a.last = [a.last, b.last].into_iter().flatten().max();
    a.not_tcp += b.not_tcp;
    a.packets += b.packets;
    a.tcp_segments += b.tcp_segments;
    a.undecodable += b.undecodable;
}

fn add_tcp(a: &mut TcpReport, b: &TcpReport) {
    a.bound_hits += b.bound_hits;
    a.data_after_rst += b.data_after_rst;
    a.data_after_rst_ignored += b.data_after_rst_ignored;
    a.evicted += b.evicted;
    a.evicted_forgotten += b.evicted_forgotten;
    a.gap_bytes += b.gap_bytes;
    a.gaps += b.gaps;
    a.out_of_order += b.out_of_order;
    a.overlaps += b.overlaps;
    a.resumed += b.resumed;
    a.retransmissions += b.retransmissions;
    a.segments += b.segments;
    a.truncated += b.truncated;
}

fn add_drops(a: &mut Drops, b: &Drops) {
    a.interface += b.interface;
    a.kernel += b.kernel;
    a.received += b.received;
}

fn add_tls(a: &mut h2ledger_tls::TlsReport, b: &h2ledger_tls::TlsReport) {
    a.auth_failed += b.auth_failed;
    a.auth_failures += b.auth_failures;
    a.connections += b.connections;
    a.decrypted += b.decrypted;
    a.held_limit_hits += b.held_limit_hits;
    a.key_updates += b.key_updates;
    // Every part reads the whole key log (a split's shards each carry every Decryption
    // Secrets Block, -j's workers share one --keylog): its counts are the largest part's.
    a.keylog.key_lines = a.keylog.key_lines.max(b.keylog.key_lines);
    a.keylog.skipped_lines = a.keylog.skipped_lines.max(b.keylog.skipped_lines);
    a.keylog_randoms = a.keylog_randoms.max(b.keylog_randoms);
    a.no_handshake += b.no_handshake;
    a.not_h2 += b.not_h2;
    a.per_connection_dropped += b.per_connection_dropped;
    a.records += b.records;
    a.truncated_handshake += b.truncated_handshake;
    a.unsupported += b.unsupported;
    a.without_key += b.without_key;
    a.without_key_h2 += b.without_key_h2;
}

/// A capture-wide finding of the same id and side as `a`, folded in: occurrences add,
/// first and last widen, counts in the evidence add (a `first_conn` takes the earliest).
fn fold_finding(a: &mut Finding, b: &Finding) {
    a.count += b.count;
    a.first = a.first.min(b.first);
    a.last = a.last.max(b.last);
    let mut e = a.evidence.clone();
    for (k, v) in b.evidence.sorted() {
        let merged = match (a.evidence.get(k), v) {
            (Some(Num::U(x)), Num::U(y)) if k.starts_with("first_") => Num::U(*x.min(y)),
            (Some(Num::U(x)), Num::U(y)) => Num::U(x + y),
            (Some(old), _) => old.clone(),
            (None, v) => v.clone(),
        };
        e.set(k, merged);
    }
    let first_conn = |f: &Finding| match f.evidence.get("first_conn") {
        Some(Num::U(k)) => u32::try_from(*k).ok(),
        _ => None,
    };
    let tied = a.stream.is_some() && a.stream == first_conn(a);
    let count = a.count;
    *a = a.with_evidence(e, count);
    if tied {
        a.stream = first_conn(a);
    }
}

/// A warning about one connection (`connection K ...`, as the ledger and the TLS layer write
/// them) with the connection's merged number.
fn renumber_warning(w: &str, number: impl Fn(u32) -> u32) -> String {
    let Some(rest) = w.strip_prefix("connection ") else {
        return w.to_owned();
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    match rest[..digits].parse::<u32>() {
        Ok(k) if rest[digits..].starts_with(' ') => {
            format!("connection {}{}", number(k), &rest[digits..])
        }
        _ => w.to_owned(),
    }
}

/// A finding's title with every `connection K` in it given the connection's merged number
/// (`goaway-retries` names the connection a call was sent again on).
fn renumber_text(t: &str, number: impl Fn(u32) -> u32) -> String {
    const AT: &str = "connection ";
    let mut out = String::with_capacity(t.len());
    let mut rest = t;
    while let Some(i) = rest.find(AT) {
        out.push_str(&rest[..i + AT.len()]);
        rest = &rest[i + AT.len()..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if let Ok(k) = rest[..digits].parse::<u32>() {
            out.push_str(&number(k).to_string());
            rest = &rest[digits..];
        }
    }
    out.push_str(rest);
    out
}

/// Part `p`'s finding `f` with its connections numbered as the whole numbers them: its
/// `conn`, another connection named in its evidence (`retry_conn`, `first_conn`) and its
/// title (`connection K`).
fn renumber_finding(f: &mut Finding, p: usize, num: &Numbering) {
    match f.conn {
        Some(id) => {
            f.conn = Some(num.number_of(p, id));
            // Another connection named in the evidence and the title.
            if let Some(Num::U(k)) = f.evidence.get("retry_conn") {
                let k = u32::try_from(*k).unwrap_or(u32::MAX);
                let n = num.number_of(p, k);
                f.evidence.set("retry_conn", Num::U(u64::from(n)));
            }
            f.title = renumber_text(&f.title, |k| num.number_of(p, k));
        }
        None => {
            if let Some(Num::U(k)) = f.evidence.get("first_conn") {
                let k = u32::try_from(*k).unwrap_or(u32::MAX);
                let n = num.number_of(p, k);
                f.evidence.set("first_conn", Num::U(u64::from(n)));
                // tls-no-keys named its first connection in `stream` too, in reports made
                // before decision 393.
                if f.stream == Some(k) {
                    f.stream = Some(n);
                }
            }
        }
    }
}

/// The parts' analyses (`--analyze`) merged into `out`'s (h2ledger_core's
/// `analysis::merge::merge`), GOAWAY frames' connections numbered as the merge numbers them;
/// what cannot be exact, or a part without an analysis beside parts with one, is warned of.
fn merge_analysis(parts: &[Report], num: &Numbering, out: &mut Report) {
    let with = parts.iter().filter(|p| p.analysis.is_some()).count();
    if with == 0 {
        return;
    }
    let warn = |out: &mut Report, w: String| {
        if out.ledger.warnings.len() < MAX_WARNINGS {
            out.ledger.warnings.push(w);
        }
    };
    if with < parts.len() {
        warn(
            out,
            format!(
                "the analysis is left out: {} of the {} reports merged have none (give reports all made with --analyze or all without)",
                parts.len() - with,
                parts.len()
            ),
        );
        return;
    }
    let analyses: Vec<AnalysisReport> = parts
        .iter()
        .enumerate()
        .filter_map(|(p, part)| {
            let mut a = part.analysis.clone()?;
            for g in &mut a.goaways {
                g.conn = num.number_of(p, g.conn);
            }
            Some(a)
        })
        .collect();
    let refs: Vec<&AnalysisReport> = analyses.iter().collect();
    match h2ledger_core::analysis::merge::merge(&refs) {
        Ok((a, inexact)) => {
            out.analysis = Some(a);
            for w in inexact.warnings {
                warn(out, w);
            }
        }
        Err(e) => warn(out, format!("the analysis is left out: {e}")),
    }
}

/// A part's first packet, the order parts merge in (`Nanos::MAX` without one).
fn first_of(p: &Report) -> Nanos {
    p.capture
        .as_ref()
        .and_then(|c| c.first)
        .unwrap_or(Nanos::MAX)
}

/// The report of the union of `parts`: whole-capture reports (no phases) of captures whose
/// TCP connections are disjoint, in any order.
pub fn merge(mut parts: Vec<Report>) -> Report {
    // Parts in the order of their first packet: warnings, listed in each part's order, then
    // follow the time of the parts.
    parts.sort_by_key(first_of);
    let num = Numbering::new(&parts);
    let mut out = merge_numbered(&parts, &num, MAX_CONN_DETAIL);
    out.ledger.unlisted_first = num.unlisted(&parts, &out.ledger.per_connection);
    out
}

/// [`merge`] of `parts` in the order of their first packet, connections numbered by `num`
/// (made of the whole parts: a phase's parts are numbered as their wholes), listing at most
/// `detail` connections, those of the lowest numbers.
fn merge_numbered(parts: &[Report], num: &Numbering, detail: usize) -> Report {
    let mut out = Report::default();
    let l: &mut LedgerReport = &mut out.ledger;
    let mut conns: Vec<ConnLedger> = Vec::new();
    let mut findings: Vec<Finding> = Vec::new();
    let mut any_findings = false;
    let mut filter: Option<String> = None;
    for (p, part) in parts.iter().enumerate() {
        let pl = &part.ledger;
        for (k, v) in &pl.anomalies {
            *l.anomalies.entry(k.clone()).or_default() += v;
        }
        l.calls += pl.calls;
        l.connections += pl.connections;
        l.upgraded_calls += pl.upgraded_calls;
        l.per_connection_omitted += pl.per_connection_omitted;
        for s in Side::ALL {
            l.sides.get_mut(s).merge(pl.sides.get(s));
        }
        for c in &pl.per_connection {
            let mut c = c.clone();
            c.id = num.number(p, c.id, c.first);
            conns.push(c);
        }
        for w in &pl.warnings {
            // A part's word on why its ledger is empty is said again of the whole.
            if let Some(f) = empty_note_filter(w) {
                filter = filter.or(f);
                continue;
            }
            if l.warnings.len() < MAX_WARNINGS {
                l.warnings
                    .push(renumber_warning(w, |k| num.number_of(p, k)));
            }
        }
        if let Some(c) = &part.capture {
            add_capture(out.capture.get_or_insert_with(Default::default), c);
        }
        if let Some(t) = &part.tcp {
            add_tcp(out.tcp.get_or_insert_with(Default::default), t);
        }
        if let Some(d) = &part.drops {
            add_drops(out.drops.get_or_insert_with(Default::default), d);
        }
        if let Some(t) = &part.tls {
            let o = out.tls.get_or_insert_with(Default::default);
            add_tls(o, t);
            for c in &t.per_connection {
                let mut c = c.clone();
                c.id = num.number_of(p, c.id);
                o.per_connection.push(c);
            }
        }
        if let Some(fs) = &part.findings {
            any_findings = true;
            for f in fs {
                let mut f = f.clone();
                renumber_finding(&mut f, p, num);
                match f.conn {
                    Some(_) => findings.push(f),
                    None => {
                        match findings
                            .iter_mut()
                            .find(|g| g.conn.is_none() && g.id == f.id && g.side == f.side)
                        {
                            Some(g) => fold_finding(g, &f),
                            None => findings.push(f),
                        }
                    }
                }
            }
        }
    }
    merge_analysis(parts, num, &mut out);
    let capture = out.capture.clone().unwrap_or_default();
    // A whole capture's bounds are its first and last packet (the tables show times from it).
    out.start = capture.first;
    out.end = capture.last;
    let hidden = out.tls.as_ref().is_some_and(|t| t.without_key_h2 > 0);
    if out.capture.is_some() {
        if let Some(w) = empty_note(
            capture.packets,
            capture.tcp_segments,
            out.ledger.connections,
            hidden,
            filter.as_deref(),
        ) {
            out.ledger.warnings.push(w);
        }
    }
    conns.sort_by_key(|c| c.id);
    if conns.len() > detail {
        out.ledger.per_connection_omitted += (conns.len() - detail) as u64;
        conns.truncate(detail);
    }
    out.ledger.per_connection = conns;
    if let Some(t) = out.tls.as_mut() {
        t.per_connection.sort_by_key(|c| c.id);
    }
    if any_findings {
        findings.sort_by(Finding::order);
        out.findings = Some(findings);
    }
    out
}

/// The ticks of several sessions at one moment (`sniff --every` with `--workers`): one
/// tick of the whole, as one session reading every packet would make it. The running
/// ledgers merge as reports do ([`merge`]: counts add, connections numbered again by their
/// first packet), and so do the periods' ledgers; packets, reassembly counts and frames
/// add.
pub fn ticks(parts: Vec<crate::Tick>) -> crate::Tick {
    let mut capture = CaptureStats::default();
    let mut tcp = TcpReport::default();
    let mut frames = 0;
    let (mut totals, mut lasts) = (Vec::new(), Vec::new());
    for t in parts {
        add_capture(&mut capture, &t.capture);
        add_tcp(&mut tcp, &t.tcp);
        frames += t.frames;
        // No capture facts in the parts: the merge then adds no note on an empty ledger,
        // which a tick does not have.
        totals.push(Report {
            ledger: t.total,
            ..Report::default()
        });
        lasts.push(Report {
            ledger: t.last,
            ..Report::default()
        });
    }
    crate::Tick {
        total: merge(totals).ledger,
        last: merge(lasts).ledger,
        capture,
        tcp,
        frames,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn(id: u32, first: Nanos) -> ConnLedger {
        ConnLedger {
            calls: 1,
            client: format!("10.0.0.1:{}", 1000 + id),
            client_by: "syn",
            first,
            id,
            mid_stream: false,
            prelude: None,
            process: None,
            server: "10.0.0.2:80".into(),
            sides: Default::default(),
            upgraded_calls: 0,
        }
    }

    fn part(first: Nanos, conns: Vec<ConnLedger>) -> Report {
        let n = conns.len() as u64;
        Report {
            capture: Some(CaptureStats {
                first: Some(first),
                last: Some(first + 100),
                packets: 10,
                tcp_segments: 10,
                ..CaptureStats::default()
            }),
            ledger: LedgerReport {
                connections: n,
                calls: n,
                per_connection: conns,
                ..LedgerReport::default()
            },
            ..Report::default()
        }
    }

    /// Two workers' ticks: one tick of the whole, connections numbered by first packet,
    /// counts added, no note on an empty ledger.
    #[test]
    fn ticks_merge_as_reports_do() {
        let tick = |p: Report, frames| crate::Tick {
            last: p.ledger.clone(),
            total: p.ledger,
            capture: p.capture.unwrap_or_default(),
            tcp: TcpReport::default(),
            frames,
        };
        let a = tick(part(10, vec![conn(0, 10), conn(1, 30)]), 5);
        let b = tick(part(20, vec![conn(0, 20)]), 7);
        let m = ticks(vec![a, b]);
        let ids: Vec<(u32, Nanos)> = m
            .total
            .per_connection
            .iter()
            .map(|c| (c.id, c.first))
            .collect();
        assert_eq!(ids, [(0, 10), (1, 20), (2, 30)]);
        assert_eq!((m.total.calls, m.last.calls, m.frames), (3, 3, 12));
        assert_eq!(m.capture.packets, 20);
        let empty = ticks(vec![tick(part(1, vec![]), 0), tick(part(2, vec![]), 0)]);
        assert!(
            empty.total.warnings.is_empty(),
            "{:?}",
            empty.total.warnings
        );
    }

    /// Parts with connections of other protocols (`unlisted_first`): every connection is
    /// numbered as one run numbers them, the merged report says its own unlisted ones, and a
    /// part that does not know them (`null`) makes the numbers a lower bound and says so.
    #[test]
    fn unlisted_connections_take_their_numbers() {
        // Part a: 0 (HTTP/2) at 10, 1 (other) at 15, 2 (HTTP/2) at 50.
        let mut a = part(10, vec![conn(0, 10), conn(2, 50)]);
        a.ledger.unlisted_first = Unlisted::Known(vec![15]);
        // Part b: 0 (other) at 20, 1 (other) at 25, 2 (HTTP/2) at 30, 3 (other) at 40.
        let mut b = part(20, vec![conn(2, 30)]);
        b.ledger.unlisted_first = Unlisted::Known(vec![20, 25, 40]);
        let ids = |m: &Report| -> Vec<(u32, Nanos)> {
            m.ledger
                .per_connection
                .iter()
                .map(|c| (c.id, c.first))
                .collect()
        };
        // One run: 10 -> 0, 15 -> 1, 20 -> 2, 25 -> 3, 30 -> 4, 40 -> 5, 50 -> 6.
        let m = merge(vec![b.clone(), a.clone()]);
        assert_eq!(ids(&m), [(0, 10), (4, 30), (6, 50)]);
        assert_eq!(
            m.ledger.unlisted_first,
            Unlisted::Known(vec![15, 20, 25, 40])
        );
        // A merge of that with a third part numbers as one run of all three.
        let mut c = part(12, vec![conn(0, 12)]);
        c.ledger.unlisted_first = Unlisted::Known(vec![]);
        let again = merge(vec![m, c.clone()]);
        assert_eq!(ids(&again), [(0, 10), (1, 12), (5, 30), (7, 50)]);
        assert_eq!(
            again.ledger.unlisted_first,
            Unlisted::Known(vec![15, 20, 25, 40])
        );
        // Without b's unlisted connections: b's one after its last listed is not counted
        // before a's at 50 (a lower bound), and `null` is said again.
        b.ledger.unlisted_first = Unlisted::Unknown;
        let m = merge(vec![b, a]);
        assert_eq!(ids(&m), [(0, 10), (4, 30), (5, 50)]);
        assert_eq!(m.ledger.unlisted_first, Unlisted::Unknown);
    }

    /// Two parts whose connections interleave in time: numbered as one run numbers them.
    #[test]
    fn connections_are_numbered_in_order_of_first_packet() {
        let a = part(10, vec![conn(0, 10), conn(1, 30)]);
        let b = part(20, vec![conn(0, 20), conn(1, 40)]);
        let m = merge(vec![b, a]);
        let got: Vec<(u32, Nanos)> = m
            .ledger
            .per_connection
            .iter()
            .map(|c| (c.id, c.first))
            .collect();
        assert_eq!(got, [(0, 10), (1, 20), (2, 30), (3, 40)]);
        assert_eq!((m.ledger.calls, m.ledger.connections), (4, 4));
        assert_eq!(
            m.capture.as_ref().map(|c| (c.first, c.last)),
            Some((Some(10), Some(120)))
        );
        assert_eq!((m.start, m.end), (Some(10), Some(120)));
    }

    #[test]
    fn warnings_name_the_merged_connection() {
        assert_eq!(
            renumber_warning("connection 3 a -> b: gap", |k| k + 10),
            "connection 13 a -> b: gap"
        );
        assert_eq!(renumber_warning("connection x", |k| k + 10), "connection x");
        assert_eq!(
            renumber_warning("packet 3: late", |k| k + 10),
            "packet 3: late"
        );
        assert_eq!(
            renumber_text("sent again on connection 1, and connection 20 too", |k| k
                + 10),
            "sent again on connection 11, and connection 30 too"
        );
        assert_eq!(
            renumber_text("connection x, 4 connections", |k| k + 10),
            "connection x, 4 connections"
        );
    }

    /// A part's "why empty" warning is not repeated: the whole says it once, of the totals.
    #[test]
    fn the_empty_ledger_is_said_of_the_whole() {
        let mut a = part(10, vec![]);
        a.ledger
            .warnings
            .push("no HTTP/2 connection among 10 packets (10 TCP segments)".into());
        let mut b = part(20, vec![]);
        b.ledger
            .warnings
            .push("no HTTP/2 connection among 10 packets (10 TCP segments)".into());
        let m = merge(vec![a, b]);
        assert_eq!(
            m.ledger.warnings,
            ["no HTTP/2 connection among 20 packets (20 TCP segments)"]
        );
    }

    /// Analyses merge when every part has one; beside a part without, the merge leaves it out
    /// and says so.
    #[test]
    fn analyses_merge_only_all_together() {
        let analysed = |calls: u64| {
            let mut p = part(10, vec![conn(0, 10)]);
            let mut a = AnalysisReport::default();
            a.concurrency.calls = calls;
            a.merge = Some(Default::default());
            p.analysis = Some(a);
            p
        };
        let m = merge(vec![analysed(3), analysed(4)]);
        assert_eq!(m.analysis.as_ref().map(|a| a.concurrency.calls), Some(7));
        assert!(m.ledger.warnings.is_empty(), "{:?}", m.ledger.warnings);
        let m = merge(vec![analysed(3), part(20, vec![conn(0, 20)])]);
        assert!(m.analysis.is_none());
        assert!(m.ledger.warnings[0].contains("1 of the 2 reports merged have none"));
        // An analysis without its data is left out, with the reason.
        let mut old = analysed(3);
        old.analysis.as_mut().unwrap().merge = None;
        let m = merge(vec![old, analysed(4)]);
        assert!(m.analysis.is_none());
        assert!(m.ledger.warnings[0].contains("`merge` key"));
    }

    /// A report read back from its JSON writes the same JSON.
    #[test]
    fn a_report_reads_back_to_the_same_json() {
        let mut r = part(
            1_796_257_867_761_552_000,
            vec![conn(0, 1_796_257_867_761_552_123)],
        );
        r.tcp = Some(TcpReport::default());
        r.tls = Some(Default::default());
        r.findings = Some(Vec::new());
        let text = serde_json::to_string(&r).unwrap();
        let back = read::from_json(&serde_json::from_str(&text).unwrap()).unwrap();
        assert_eq!(serde_json::to_string(&back).unwrap(), text);
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["concurrency"] = serde_json::json!({});
        assert!(read::from_json(&v).unwrap_err().0.contains("`merge` key"));
    }
}
