//! The observers a run attaches (ledger tally, per-phase tallies, analysis, timeline) and the
//! reports built from them, for the whole capture and per phase.

use std::collections::HashMap;

use h2ledger_core::analysis::{Phased, Splitter, MAX_PHASES};
use h2ledger_core::findings::{CaptureFacts, Findings, FindingsConfig, FindingsReport};
use h2ledger_core::ledger::HeaderNeed;
use h2ledger_core::{
    Analysis, ConnSummary, FrameEvent, LedgerReport, Observer, StreamId, Tally, Timeline,
};

use h2ledger_tcp::{ConnId, ConnMeta, Dir, Nanos, Write};

use crate::far::{Ev, Relay};
use crate::pipeline::Pipeline;
use crate::report::{Report, TcpReport};

/// What a run computes beyond the plain ledger.
#[derive(Clone, Debug)]
pub struct Wanted {
    /// The analysis (`--analyze`; phases attach it too).
    pub analysis: bool,
    /// Phases: `--split-at` cuts or `--every` periods.
    pub splitter: Option<Splitter>,
    /// `--plot`: the timeline's first bucket width (`--bin`, else
    /// [`h2ledger_core::analysis::timeline::FINEST`]; it grows tenfold as the capture does). The
    /// flow-control window series of `--plot --analyze` keeps 100 ms buckets.
    pub timeline: Option<Nanos>,
    /// Only what the `calls` view prints of the analysis (no per-scope totals).
    pub calls_only: bool,
    /// Copy out every header field, not only those the analysis reads (a test compares the
    /// two runs).
    pub all_headers: bool,
    /// Metrics (`--metrics`, `-T prometheus`): the analysis keeps each folded call and each
    /// PING round trip until drained ([`crate::Session::drain_calls`],
    /// [`crate::Session::drain_rtts`]), which the caller does after every packet.
    pub metrics: bool,
    /// Keep each gRPC message's bytes in its call's record (`calls --messages`), within these
    /// limits; needs the analysis.
    pub messages: Option<h2ledger_core::grpc::KeepLimits>,
    /// The findings engine and the server policy it assumes (on by default; `None` for the
    /// views that print no report: `calls`).
    pub findings: Option<FindingsConfig>,
    /// Run the analysis on a thread of its own, beside the ledger's, when nothing reads it
    /// before the input ends (a saved capture's report; not with phases, metrics, `calls` or
    /// kept messages, which read it as they go); the findings stay on the ledger's thread.
    /// Off by default; the output is the same either way (decision 261).
    pub threads: bool,
}

impl Default for Wanted {
    fn default() -> Self {
        Wanted {
            analysis: false,
            splitter: None,
            timeline: None,
            calls_only: false,
            all_headers: false,
            metrics: false,
            messages: None,
            findings: Some(FindingsConfig::default()),
            threads: false,
        }
    }
}

/// The bucket of the flow-control window series drawn by `--plot --analyze`: 100 ms (the last
/// value of each is drawn).
const WINDOW_BUCKET: Nanos = 100_000_000;

/// Every observer of a run. Only the tally is always there: the analysis and the timeline cost
/// memory per call and per time bucket, so they are attached only when their output is asked for.
#[derive(Debug)]
pub struct Obs {
    pub(crate) tally: Tally,
    /// Phase `i`'s ledger: frames and writes whose time falls in phase `i` (only the phases
    /// that saw something, at most `MAX_PHASES`).
    pub(crate) phases: Phased<Tally>,
    /// The phases each open connection has counts in (folded there when it closes).
    touched: HashMap<u32, Vec<u64>>,
    pub(crate) analysis: Option<Analysis>,
    pub(crate) timeline: Option<Timeline>,
    /// The findings engine: it reads the analysis' flow tracker, or keeps its own without one.
    pub(crate) findings: Option<Findings>,
    origin_set: bool,
    /// The header fields the analysis and the findings read (see [`Wanted::all_headers`]).
    need: HeaderNeed,
    /// The analysis on a thread of its own ([`Wanted::threads`]): then `analysis` is `None`
    /// until [`Obs::gather`], and the findings here keep the run's one flow tracker
    /// (decision 406).
    pub(crate) far: Option<Relay>,
    /// With the analysis far: a header block so far had a gRPC `content-type`. Until one does,
    /// no stream is gRPC to the analysis' gRPC tracker (its only reader of DATA payloads), so
    /// no payload is kept and sent (decision 408).
    grpc_seen: bool,
    /// The latest write or frame time handed to the analysis (here or on its thread): the
    /// analysis' clock, which the connections still open at the end close at. A part of a run
    /// of several sessions tells the others ([`Obs::reach`]; decision 451).
    last_event: Option<Nanos>,
}

impl Obs {
    /// The observers `w` asks for.
    pub fn new(w: &Wanted) -> Obs {
        // Phases are routed by the analysis' splitter: asking for phases attaches it.
        let mut analysis = (w.analysis || w.splitter.is_some() || w.metrics).then(|| {
            let mut a = Analysis::new(w.splitter.clone());
            if w.timeline.is_some() {
                a.flow.record_series(WINDOW_BUCKET, None);
            }
            if w.calls_only {
                a = a.calls_only();
            }
            if w.metrics {
                a = a.keep_finished().keep_rtts();
            } else if !w.calls_only {
                // Only the `calls` view and the metrics read a call's own record: the report
                // counts gRPC calls only (decision 464).
                a.grpc.no_plain_records();
            }
            if let Some(l) = w.messages {
                a.grpc.keep_messages(l);
            }
            a
        });
        // The analysis reads these fields, wherever it runs.
        let analysis_need = match &analysis {
            Some(_) if w.all_headers => HeaderNeed::All,
            Some(a) => a.header_need(),
            None => HeaderNeed::None,
        };
        // On its own thread when asked, and when nothing reads it before the end: no phases
        // (the tallies route by the analysis), no metrics or `calls` (drained after every
        // packet), no message bytes kept (decision 261). If the thread cannot start, here.
        let alone = w.threads
            && w.splitter.is_none()
            && !w.metrics
            && !w.calls_only
            && w.messages.is_none();
        let mut far = None;
        // With the findings here and the analysis there, the findings' flow tracker is the
        // run's one tracker, and the analysis' stays off until it takes it (decision 406).
        let mut shared_flow = false;
        if alone {
            if let Some(mut a) = analysis.take() {
                a.flow.elsewhere(w.findings.is_some());
                match Relay::start(a, w.findings.is_none()) {
                    Ok(r) => {
                        far = Some(r);
                        shared_flow = w.findings.is_some();
                    }
                    Err(mut a) => {
                        a.flow.elsewhere(false);
                        analysis = Some(a);
                    }
                }
            }
        }
        // Beside the analysis here, the findings read its flow tracker; alone they keep their
        // own, and with the analysis on its own thread they keep the one it takes at the end.
        let findings = w.findings.map(|cfg| match analysis.as_mut() {
            Some(a) => {
                a.flow.watch();
                Findings::new(cfg)
            }
            None => {
                let f = Findings::new(cfg);
                let mut f = if shared_flow {
                    f.with_shared_flow()
                } else {
                    f.with_own_flow()
                };
                // The plot's window panel without the analysis (decision 365).
                if w.timeline.is_some() {
                    f.record_series(WINDOW_BUCKET, None);
                }
                f
            }
        });
        // The analysis and the findings read the same few fields.
        let need = analysis_need.and(
            findings
                .as_ref()
                .map_or(HeaderNeed::None, |f| f.header_need()),
        );
        Obs {
            tally: Tally::new(),
            phases: Phased::default(),
            touched: HashMap::new(),
            analysis,
            findings,
            need,
            timeline: w.timeline.map(Timeline::new),
            origin_set: false,
            far,
            grpc_seen: false,
            last_event: None,
        }
    }

    /// The first packet's time: phase offsets, `--every` and the plot count from it.
    pub(crate) fn set_origin(&mut self, t: Nanos) {
        if self.origin_set {
            return;
        }
        self.origin_set = true;
        match &mut self.far {
            Some(far) => {
                far.push(Ev::Origin(t));
                if let Some(f) = &mut self.findings {
                    f.set_origin(t);
                }
            }
            None => {
                if let Some(a) = &mut self.analysis {
                    a.set_origin(t);
                }
            }
        }
        if let Some(tl) = &mut self.timeline {
            tl.set_origin(t);
        }
    }

    /// Frames counted so far.
    pub fn frames(&self) -> u64 {
        self.tally.frames()
    }

    /// The run's phases (see [`Analysis::splitter`]); `None` without phases.
    pub(crate) fn splitter(&self) -> Option<&Splitter> {
        self.analysis.as_ref().and_then(|a| a.splitter())
    }

    /// The phase of time `t`: each write and frame is routed here, once, and its phase given
    /// to every per-phase count (the phase tallies, the analysis, its flow and gRPC trackers).
    fn route(&mut self, t: Nanos) -> Option<u64> {
        self.analysis.as_mut()?.route(t)
    }

    /// Phase `i`'s tally, made when needed; `conn` is remembered to fold there when it closes.
    fn phase_tally(&mut self, conn: ConnId, phase: Option<u64>) -> Option<&mut Tally> {
        let i = phase?;
        let touched = self.touched.entry(conn.0).or_default();
        if !touched.contains(&i) {
            touched.push(i);
        }
        self.phases.get_or_make(i, Tally::for_phase)
    }
}

impl Observer for Obs {
    fn header_need(&self) -> HeaderNeed {
        // Asked at every frame: decided once, in `Obs::new`.
        self.need
    }

    fn wants_data(&self, conn: ConnId, stream: StreamId) -> bool {
        if self.far.is_some() {
            // Answered on the far thread, at the frame (decision 261), once a stream may be
            // gRPC there: before, its answer is no (decision 408).
            return self.grpc_seen;
        }
        self.analysis
            .as_ref()
            .is_some_and(|a| a.wants_data(conn, stream))
    }

    fn data_head(&self, conn: ConnId, dir: Dir, stream: StreamId) -> bool {
        match &self.far {
            Some(far) if self.grpc_seen => far.data_head(conn, dir, stream),
            // No stream is gRPC over there: its answer at the head is no (decision 408).
            Some(_) => false,
            None => self.wants_data(conn, stream),
        }
    }

    fn gap(&mut self, conn: ConnId, dir: Dir, ts: Nanos, framing_lost: bool) {
        if let Some(far) = &mut self.far {
            far.push(Ev::Gap(conn, dir, ts, framing_lost));
        }
        if let Some(a) = &mut self.analysis {
            a.gap(conn, dir, ts, framing_lost);
        }
        if let Some(f) = &mut self.findings {
            // Its own flow tracker, if any, is told as an observer; the analysis' was above.
            if self.analysis.is_some() {
                f.gap_at(conn, ts, framing_lost);
            } else {
                f.gap(conn, dir, ts, framing_lost);
            }
        }
    }

    fn open(&mut self, meta: &ConnMeta) {
        self.tally.open(meta);
        if let Some(far) = &mut self.far {
            far.push(Ev::Open(Box::new(meta.clone())));
        }
        if let Some(a) = &mut self.analysis {
            a.open(meta);
        }
        if let Some(f) = &mut self.findings {
            f.open(meta);
        }
    }

    fn write(&mut self, conn: ConnId, dir: Dir, w: &Write) {
        self.tally.write(conn, dir, w);
        self.last_event = Some(self.last_event.map_or(w.ts, |t| t.max(w.ts)));
        let phase = self.route(w.ts);
        if let Some(t) = self.phase_tally(conn, phase) {
            t.write(conn, dir, w);
        }
        if let Some(far) = &mut self.far {
            far.push(Ev::Write(conn, dir, *w));
        }
        if let Some(f) = &mut self.findings {
            f.write(conn, dir, w);
        }
        if let Some(a) = &mut self.analysis {
            a.write_in(conn, dir, w);
        }
    }

    fn tls_record(&mut self, conn: ConnId, dir: Dir, w: &Write) {
        self.tally.tls_record(conn, dir, w);
        let phase = self.route(w.ts);
        if let Some(t) = self.phase_tally(conn, phase) {
            t.tls_record(conn, dir, w);
        }
    }

    fn frame(&mut self, ev: &FrameEvent<'_>) {
        self.tally.frame(ev);
        self.last_event = Some(self.last_event.map_or(ev.ts, |t| t.max(ev.ts)));
        let phase = self.route(ev.ts);
        // Without phases (`route` says none), no call (decision 465).
        if phase.is_some() {
            if let Some(t) = self.phase_tally(ev.conn, phase) {
                t.frame(ev);
            }
        }
        if let Some(far) = &mut self.far {
            // The gRPC tracker makes a stream gRPC by its request's content-type
            // (`grpc::Grpc::wants_data`): any block with one, and DATA is sent from then on.
            if !self.grpc_seen {
                self.grpc_seen = ev.headers.is_some_and(|h| {
                    h.known(h2ledger_core::Known::ContentType)
                        .is_some_and(|v| v.starts_with(b"application/grpc"))
                });
            }
            far.frame(ev);
        }
        if let Some(a) = &mut self.analysis {
            a.frame_in(ev, phase);
        }
        if let Some(f) = &mut self.findings {
            match &mut self.analysis {
                Some(a) => f.frame_with(ev, Some(&mut a.flow)),
                None => f.frame(ev),
            }
        }
        if let Some(tl) = &mut self.timeline {
            tl.frame(ev);
        }
    }

    fn upgraded_request(&mut self, conn: ConnId, dir: Dir, w: &Write, m: &[u8], t: &[u8]) {
        if let Some(far) = &mut self.far {
            return far.upgraded_request(conn, dir, w, m, t);
        }
        if let Some(a) = &mut self.analysis {
            a.upgraded_request(conn, dir, w, m, t);
        }
    }

    fn close(&mut self, summary: &ConnSummary) {
        self.tally.close(summary);
        for i in self.touched.remove(&summary.id.0).unwrap_or_default() {
            if let Some(t) = self.phases.existing_mut(i) {
                t.close(summary);
            }
        }
        if let Some(far) = &mut self.far {
            far.push(Ev::Close(Box::new(summary.clone())));
        }
        if let Some(a) = &mut self.analysis {
            a.close(summary);
        }
        if let Some(f) = &mut self.findings {
            match &mut self.analysis {
                Some(a) => f.close_with(summary, Some(&mut a.flow)),
                None => f.close(summary),
            }
        }
    }
}

impl Obs {
    /// The findings fired since the last call (live: a `finding` JSON line each).
    pub(crate) fn drain_findings(&mut self, f: impl FnMut(h2ledger_core::findings::Finding)) {
        if let Some(x) = &mut self.findings {
            x.drain_new(f);
        }
    }

    /// Capture-wide facts for the findings (gaps' bytes, TLS without keys, live drops).
    pub(crate) fn note_capture(&mut self, facts: &CaptureFacts, now: Nanos) {
        if let Some(x) = &mut self.findings {
            x.note_capture(facts, now);
        }
    }

    /// No packet until `now` (the wall clock): calls that ended long enough ago are due.
    pub(crate) fn advance(&mut self, now: Nanos) {
        if let Some(far) = &mut self.far {
            return far.push(Ev::Advance(now));
        }
        if let Some(a) = self.analysis.as_mut() {
            a.advance(now);
        }
    }

    /// The latest write or frame time seen, the analysis' clock (`None` before any).
    pub(crate) fn last_event(&self) -> Option<Nanos> {
        self.last_event
    }

    /// The run's clock reached `t` (the latest write or frame over every part of a run of
    /// several sessions): before the end of the input closes what is open, so that this part's
    /// connections close as they would in one session (their phase, their calls' ends;
    /// decision 451). Earlier times do nothing.
    pub(crate) fn reach(&mut self, t: Nanos) {
        if let Some(far) = &mut self.far {
            far.push(Ev::Reach(t));
        }
        if let Some(a) = &mut self.analysis {
            a.reach(t);
        }
    }

    /// The analysis back from its thread, once every event reached it (the end of the
    /// input); nothing without one.
    pub(crate) fn gather(&mut self) {
        if let Some(far) = self.far.take() {
            let mut a = far.finish();
            if let Some(flow) = self.findings.as_mut().and_then(|f| f.take_shared_flow()) {
                a.flow = flow;
            }
            self.analysis = Some(a);
        }
    }

    fn findings_report(&mut self) -> Option<FindingsReport> {
        self.findings.as_mut().map(|f| f.report())
    }
}

/// The whole capture's report, and the run's phases to build one at a time with
/// [`Phases::report`]. Call after `Pipeline::finish`. With `--split-at` every phase the cuts
/// make is reported; with `--every` every period from the first packet to the last, those in
/// which nothing happened as zero phases, so that a time series has no holes, as long as they
/// are at most [`MAX_PHASES`]; beyond (a capture whose clock jumps a day has two phases with
/// something, not 86,400) only those in which something happened, and the empty ones left
/// out are counted (`phases-not-filled`). A phase's report is built when it is asked
/// for, so a run of 1,000 phases never holds 1,000 reports (issue 7).
pub(crate) fn build(p: &mut Pipeline<Obs>, mut whole: LedgerReport) -> (Report, Phases) {
    if let Some(a) = &mut p.ledger.observer.analysis {
        a.flush();
    }
    let conns = p.ledger.connections();
    let findings = p.ledger.observer.findings_report();
    if let Some(f) = &findings {
        if !f.omitted.is_empty() {
            let n: u64 = f.omitted.values().sum();
            whole.warnings.push(format!(
                "more than {} findings: {n} more were counted, not listed ({})",
                h2ledger_core::findings::MAX_FINDINGS,
                f.omitted
                    .iter()
                    .map(|(id, n)| format!("{} {n}", id.name()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            whole.anomalies.insert("findings-cap".to_string(), n);
        }
        if f.streams_untracked > 0 {
            whole.warnings.push(format!(
                "more than {} client streams in flight at once: {} were counted but not followed by the findings (rapid-reset's premature share, made-you-reset and stream slots skip them)",
                h2ledger_core::findings::MAX_FINDING_STREAMS,
                f.streams_untracked
            ));
            whole
                .anomalies
                .insert("findings-streams-cap".to_string(), f.streams_untracked);
        }
    }
    let o = &p.ledger.observer;
    let refused = o.phases.refused;
    if refused > 0 {
        whole.warnings.push(format!(
            "more than {MAX_PHASES} phases: {refused} writes and frames of later phases are in the totals only"
        ));
        whole.anomalies.insert("phases-capped".to_string(), refused);
    }
    let mut full = Report {
        start: p.stats.first,
        end: p.stats.last,
        ledger: whole,
        analysis: o.analysis.as_ref().map(|a| a.report(&conns, None)),
        capture: Some(p.stats.clone()),
        tcp: Some(TcpReport::from(&p.reasm.stats())),
        tls: Some(p.tls.report()),
        findings: findings.map(|f| f.findings),
        ..Report::default()
    };
    let mut phases = Phases {
        splitter: Splitter::default(),
        indexes: Vec::new(),
        conns: Vec::new(),
        first: 0,
        last: 0,
        findings: None,
    };
    if let (Some(mut s), Some(first), Some(last)) =
        (o.splitter().cloned(), p.stats.first, p.stats.last)
    {
        s.set_origin(first);
        phases.indexes = match s.cut_phases() {
            Some(n) => (0..n).collect(),
            None => {
                let mut v: Vec<u64> = o.phases.indexes().collect();
                if let Some(a) = &o.analysis {
                    v.extend(a.phase_indexes());
                }
                v.sort_unstable();
                v.dedup();
                v.truncate(MAX_PHASES);
                let span = s.phase_of(last).saturating_add(1);
                if span <= MAX_PHASES as u64 {
                    v = (0..span).collect();
                } else {
                    let left = span - v.len() as u64;
                    full.ledger.warnings.push(format!(
                        "{span} periods of --every from the first packet to the last, above {MAX_PHASES}: the {left} in which nothing happened are not listed as zero phases"
                    ));
                    full.ledger
                        .anomalies
                        .insert("phases-not-filled".to_string(), left);
                }
                v
            }
        };
        phases.splitter = s;
        phases.conns = conns;
        phases.first = first;
        phases.last = last;
    }
    phases.findings = full.findings.clone();
    (full, phases)
}

/// A finished run's phases, in time order. Each phase's report is built by [`Phases::report`]
/// from the run's observers when it is printed, and can be dropped right after.
#[derive(Debug)]
pub(crate) struct Phases {
    splitter: Splitter,
    /// The phase index (from the splitter) of each phase reported.
    indexes: Vec<u64>,
    /// The connections still open at the end, whose counts are not folded yet.
    conns: Vec<ConnSummary>,
    first: Nanos,
    last: Nanos,
    /// The whole run's findings: each phase lists those that held during it.
    findings: Option<Vec<h2ledger_core::findings::Finding>>,
}

impl Phases {
    pub fn len(&self) -> usize {
        self.indexes.len()
    }

    /// Phase `k`'s `[start, end)`, nanoseconds since the epoch.
    pub fn bounds(&self, k: usize) -> (Nanos, Nanos) {
        self.splitter
            .bounds_of(self.indexes[k], self.first, self.last)
    }

    /// Whether the phases are `--split-at`'s (else `--every`'s).
    pub fn by_cuts(&self) -> bool {
        self.splitter.cut_phases().is_some()
    }

    /// The splitter's index of each phase reported, in time order.
    pub fn indexes(&self) -> &[u64] {
        &self.indexes
    }

    /// The `[start, end)` of the phase of splitter index `i`, reported or not (a part of a
    /// run merged with others: decision 413).
    pub fn bounds_at(&self, i: u64) -> (Nanos, Nanos) {
        self.splitter.bounds_of(i, self.first, self.last)
    }

    /// Phase `k`'s report (`k < len()`), from the observers `o` of the run.
    pub fn report(&self, o: &Obs, k: usize) -> Report {
        self.report_at(o, self.indexes[k])
    }

    /// The report of the phase of splitter index `i`, reported or not (empty then, but for
    /// what a phase says of the whole run: the analysis' limits), from the observers `o`.
    pub fn report_at(&self, o: &Obs, i: u64) -> Report {
        let (a, b) = self.bounds_at(i);
        let empty = Tally::new();
        Report {
            name: format!("phase {}", i + 1),
            ledger: LedgerReport::build(&self.conns, o.phases.get(i).unwrap_or(&empty)),
            analysis: o
                .analysis
                .as_ref()
                .map(|an| an.report(&self.conns, Some(i))),
            start: Some(a),
            end: Some(b),
            findings: self
                .findings
                .as_ref()
                .map(|f| f.iter().filter(|x| x.overlaps(a, b)).cloned().collect()),
            ..Report::default()
        }
    }

    /// Every phase's report, one at a time.
    pub fn reports<'a>(&'a self, o: &'a Obs) -> impl Iterator<Item = Report> + 'a {
        (0..self.len()).map(move |k| self.report(o, k))
    }
}
