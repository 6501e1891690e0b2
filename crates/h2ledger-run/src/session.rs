//! A [`Session`]: what every command drives. Built from an observer and [`Options`], fed
//! packets ([`Session::feed`], which says when a limit stops the run), told about idle time
//! ([`Session::idle`]) and ended with how the input ended ([`Session::finish`]). The finish
//! sequence lives here once: the pipeline's end, the ledger report with its warnings, the
//! damaged-input and empty-capture notes, the drop warning, the phases and the cut warnings.

use std::ops::ControlFlow;

use h2ledger_core::analysis::{Cut, Splitter};
use h2ledger_core::findings::{CaptureFacts, Finding, FindingId};
use h2ledger_core::{LedgerReport, Observer};
use h2ledger_tcp::{LinkType, Nanos};
use h2ledger_tls::Tls;

use crate::obs::{build, Obs, Phases, Wanted};
use crate::pipeline::{KeyPoll, Pipeline};
use crate::report::{secs, CaptureStats, Drops, Report, TcpReport};
use crate::time::fmt_rfc3339;

/// Why a run stopped before its input ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// `-c N` packets were read.
    Count,
    /// `--duration D` passed.
    Duration,
    /// `--max-frames N` frames were counted (or printed).
    MaxFrames,
    /// Ctrl-C.
    Interrupted,
    /// SIGTERM.
    Terminated,
    /// The reader of the output went away (`| head`).
    OutputClosed,
}

impl Stop {
    /// How a person is told (`h2ledger: stopped (--count reached)`).
    pub fn describe(self) -> &'static str {
        match self {
            Stop::Count => "--count reached",
            Stop::Duration => "--duration reached",
            Stop::MaxFrames => "--max-frames reached",
            Stop::Interrupted => "interrupted",
            Stop::Terminated => "SIGTERM",
            Stop::OutputClosed => "the output ended",
        }
    }

    /// Whether packets the kernel already holds are still read after this stop (not when
    /// the count is reached, as tcpdump -c stops at exactly N, nor when nobody reads).
    pub fn drains(self) -> bool {
        !matches!(self, Stop::Count | Stop::OutputClosed | Stop::MaxFrames)
    }
}

/// How the input ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum End {
    /// The capture ended (end of file, or the device closed).
    Complete,
    /// A limit or a signal stopped the run.
    Stopped(Stop),
    /// The input is damaged from here on (a truncated or corrupt file): what failed.
    Damaged(String),
}

impl End {
    /// How a person is told.
    pub fn describe(&self) -> &str {
        match self {
            End::Complete => "the capture ended",
            End::Stopped(s) => s.describe(),
            End::Damaged(e) => e,
        }
    }
}

/// What a session is built with, besides its observer.
pub struct Options {
    /// Connections tracked at once ([`DEFAULT_MAX_CONNECTIONS`]).
    pub max_connections: usize,
    /// Stop once the observer counted this many frames (`--max-frames`; `-c` and
    /// `--duration` are the input's: the capture source stops reading).
    pub max_frames: Option<u64>,
    /// The capture filter, named when nothing matched it.
    pub filter: Option<String>,
    /// TLS keys, and live, where new key-log lines come from.
    pub tls: Tls,
    /// See [`KeyPoll`].
    pub key_poll: Option<KeyPoll>,
}

/// Connections tracked at once by default (`--max-connections`): each costs a few KiB (its
/// reassembly, framing and HPACK state, its counters), so 4,096 keep a run with the analysis
/// within about 64 MiB. Beyond, the least recently active connection is closed as evicted and
/// counted.
pub const DEFAULT_MAX_CONNECTIONS: usize = crate::pipeline::DEFAULT_MAX_CONNECTIONS;

impl Default for Options {
    fn default() -> Self {
        Options {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_frames: None,
            filter: None,
            tls: Tls::new(Default::default(), Default::default()),
            key_poll: None,
        }
    }
}

/// What a session's observer tells the session: the frames it counted (the progress display,
/// `--max-frames`) and whether it wants the run to stop.
pub trait View: Observer {
    /// Frames counted (or printed) so far.
    fn frames(&self) -> u64;
    /// The observer cannot go on (its output closed, its own limit reached).
    fn stop(&self) -> Option<Stop> {
        None
    }
    /// The first packet's time (phase offsets, `--every` and plots count from it).
    fn origin(&mut self, _t: Nanos) {}
    /// The input ended and every connection is closed: fold what is still pending.
    fn end(&mut self) {}
    /// No packet for a while; `now` is the wall clock (live packets carry it).
    fn idle(&mut self, _now: Nanos) {}
    /// Capture-wide facts for the findings (TLS without keys, live drops, gap bytes).
    fn capture_facts(&mut self, _facts: &CaptureFacts, _now: Nanos) {}
    /// The latest write or frame time the observer's clock saw (`None`: none, or no clock).
    fn last_event(&self) -> Option<Nanos> {
        None
    }
    /// The run's clock reached `t` (a part of several sessions, before its end).
    fn reach(&mut self, _t: Nanos) {}
}

impl View for Obs {
    fn frames(&self) -> u64 {
        self.tally.frames()
    }
    fn origin(&mut self, t: Nanos) {
        self.set_origin(t);
    }
    fn end(&mut self) {
        self.gather();
        if let Some(a) = &mut self.analysis {
            a.flush();
        }
    }
    fn idle(&mut self, now: Nanos) {
        // Calls that ended long enough ago are due now.
        self.advance(now);
    }
    fn capture_facts(&mut self, facts: &CaptureFacts, now: Nanos) {
        self.note_capture(facts, now);
    }
    fn last_event(&self) -> Option<Nanos> {
        Obs::last_event(self)
    }
    fn reach(&mut self, t: Nanos) {
        Obs::reach(self, t);
    }
}

/// Where the input of a session ended: its last packet, and the latest write or frame its
/// analysis saw (the analysis' clock). The parts of a run of several sessions each end at
/// the latest of every part's (decision 451).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunEnd {
    /// The last packet's time (`None`: no packet).
    pub packet: Option<Nanos>,
    /// The latest write or frame time (`None`: none).
    pub event: Option<Nanos>,
}

impl RunEnd {
    /// The later of each.
    pub fn max(self, o: RunEnd) -> RunEnd {
        RunEnd {
            packet: self.packet.max(o.packet),
            event: self.event.max(o.event),
        }
    }
}

/// One run: packets in, a report out. See the module docs.
pub struct Session<O = Obs> {
    pipe: Pipeline<O>,
    max_frames: Option<u64>,
    filter: Option<String>,
    /// The running ledger at the previous [`Session::tick`].
    ticked: LedgerReport,
    /// The ledger's warning total when last looked at, and its `tls-no-key` count then.
    warned: (u64, u64),
    /// `-T jsonl` with several sessions ([`Session::keep_fired`]): the findings this one
    /// fired, each with when, to be merged into one stream of lines ([`crate::merge::lines`]).
    fired: Option<Vec<Fired>>,
}

/// When a finding fired in a session that is one part of several (`-T jsonl` with `replay -j
/// N`, `replay A B`, `sniff --workers N`): after which packet, or at the end. The parts'
/// lines are merged in the order of `(end, ts, part, n)` (decision 443): for `-j`, `ts` is
/// the dealer's packet number (the order of the file); for files and devices, the packet's
/// time (as mergecap orders packets: by time, then by file), then `n` the part's own packet
/// number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct FireAt {
    /// At the session's end (after every packet of every part).
    pub end: bool,
    /// The packet's time (for `-j`, the dealer's packet number).
    pub ts: Nanos,
    /// The packet's number.
    pub n: u64,
}

impl FireAt {
    /// At the end of the session.
    pub const END: FireAt = FireAt {
        end: true,
        ts: 0,
        n: 0,
    };

    /// After the packet of time `ts` and number `n`.
    pub fn packet(ts: Nanos, n: u64) -> FireAt {
        FireAt { end: false, ts, n }
    }
}

/// A finding fired, with when ([`FireAt`]), in the order of firing within its session.
pub type Fired = (FireAt, Finding);

impl<O: View> Session<O> {
    /// No packet for a while (live; `now`: the wall clock, which live packets carry):
    /// connections reset more than a second ago close, and calls that ended long enough ago
    /// are due.
    pub fn idle(&mut self, now: Nanos) {
        self.pipe.idle(now);
        self.pipe.ledger.observer.idle(now);
    }

    /// A session of `observer` with `opts`.
    pub fn new(observer: O, opts: Options) -> Self {
        Session {
            pipe: Pipeline::with_max_connections(observer, opts.max_connections)
                .with_tls(opts.tls, opts.key_poll),
            max_frames: opts.max_frames,
            filter: opts.filter,
            ticked: LedgerReport::default(),
            warned: (0, 0),
            fired: None,
        }
    }

    /// The next packet fed is packet `n` of the whole input (a part of `replay -j N`): its
    /// warnings name it by that number.
    pub fn number_next(&mut self, n: u64) {
        self.pipe.number_next(n);
    }

    /// One captured packet (`linktype`, time, bytes as captured). `Break` when the run must
    /// stop: `--max-frames` was reached, or the observer cannot go on.
    pub fn feed(&mut self, linktype: LinkType, ts: Nanos, data: &[u8]) -> ControlFlow<Stop> {
        self.pipe.ledger.observer.origin(ts);
        self.pipe.packet(linktype, ts, data);
        let w = &self.pipe.ledger.warnings;
        if w.total != self.warned.0 {
            // Live: a TLS connection without a key is said as soon as it is known.
            let n = w.counts.get("tls-no-key").copied().unwrap_or(0);
            self.warned = (w.total, self.warned.1);
            if n > self.warned.1 {
                self.warned.1 = n;
                let facts = CaptureFacts {
                    tls_without_key: n,
                    ..CaptureFacts::default()
                };
                self.pipe.ledger.observer.capture_facts(&facts, ts);
            }
        }
        let o = &self.pipe.ledger.observer;
        if let Some(s) = o.stop() {
            return ControlFlow::Break(s);
        }
        if self.max_frames.is_some_and(|n| o.frames() >= n) {
            return ControlFlow::Break(Stop::MaxFrames);
        }
        ControlFlow::Continue(())
    }

    /// Where this session's input ended so far: what a part of a run of several sessions
    /// tells the others before it ends ([`Session::reach`]).
    pub fn run_end(&self) -> RunEnd {
        RunEnd {
            packet: self.pipe.last_packet(),
            event: self.pipe.ledger.observer.last_event(),
        }
    }

    /// The whole run ended at `end`, the latest of every part's [`Session::run_end`]
    /// ([`RunEnd::max`]): call after the last packet, before [`Session::finish`], so that the
    /// connections still open close as in one session over every part's packets (at the
    /// run's last packet, in the phase of the run's last write or frame, their calls ending
    /// then; decision 451). Earlier times do nothing.
    pub fn reach(&mut self, end: RunEnd) {
        if let Some(t) = end.packet {
            self.pipe.end_at(t);
        }
        if let Some(t) = end.event {
            self.pipe.ledger.observer.reach(t);
        }
    }

    /// TLS key log text from the input itself (a pcapng's Decryption Secrets Block), for
    /// the packets after it, as tshark reads them (decision 402). A last line without its
    /// newline is read as a whole line. Returns the key lines added.
    pub fn add_keys(&mut self, text: &str) -> u64 {
        self.pipe.add_keys(text)
    }

    /// Frames the observer counted so far (the progress display).
    pub fn frames(&self) -> u64 {
        self.pipe.ledger.observer.frames()
    }

    /// The session's observer (a view's printer, which the command made).
    pub fn view(&self) -> &O {
        &self.pipe.ledger.observer
    }

    /// See [`Session::view`].
    pub fn view_mut(&mut self) -> &mut O {
        &mut self.pipe.ledger.observer
    }

    /// Packet counts so far.
    pub fn capture(&self) -> &CaptureStats {
        &self.pipe.stats
    }

    /// Reassembly counts so far.
    pub fn tcp(&self) -> TcpReport {
        TcpReport::from(&self.pipe.reasm.stats())
    }

    /// The run's warnings so far.
    pub fn warnings(&self) -> &[String] {
        &self.pipe.ledger.warnings.messages
    }

    /// The end of the input when no report is wanted (`frames`, `calls`): every connection
    /// is closed and folded; the counts and warnings stay readable (and `calls` still drains
    /// the calls this folds).
    pub fn end(&mut self) {
        self.pipe.finish();
        self.pipe.ledger.observer.end();
    }

    /// The ledger of `tally` with the run's warnings.
    fn ledger(&self, tally: &h2ledger_core::Tally) -> LedgerReport {
        self.pipe.ledger_report(tally)
    }
}

/// What a tick of a live view shows: the running ledger, the period since the previous tick,
/// and the capture's counters.
pub struct Tick {
    /// The running ledger (the whole capture so far).
    pub total: LedgerReport,
    /// What came since the previous tick.
    pub last: LedgerReport,
    /// Packet counts so far.
    pub capture: CaptureStats,
    /// Reassembly counts so far.
    pub tcp: TcpReport,
    /// Frames so far.
    pub frames: u64,
}

impl Session<Obs> {
    /// Hands each finding fired since the last call to `f` (a `finding` JSON line, live), with
    /// its evidence as it is now.
    pub fn drain_findings(&mut self, f: impl FnMut(Finding)) {
        self.pipe.ledger.observer.drain_findings(f);
    }

    /// This session is one part of several whose `finding` lines are merged (`-T jsonl`):
    /// from now on [`Session::fire_at`] keeps the findings fired, for
    /// [`crate::merge::phased::Part::of`] to hand to the merge. What is kept is bounded by
    /// the findings the session keeps (`h2ledger_core::findings::MAX_FINDINGS`).
    pub fn keep_fired(&mut self) {
        self.fired.get_or_insert_with(Vec::new);
    }

    /// The findings fired since the last call, kept as fired `at` (nothing unless
    /// [`Session::keep_fired`]).
    pub fn fire_at(&mut self, at: FireAt) {
        if let Some(v) = &mut self.fired {
            self.pipe
                .ledger
                .observer
                .drain_findings(|f| v.push((at, f)));
        }
    }

    /// The findings kept ([`Session::keep_fired`]), those the end fired last.
    pub(crate) fn take_fired(&mut self) -> Option<Vec<Fired>> {
        self.fire_at(FireAt::END);
        self.fired.take()
    }

    /// How many findings of each id were filed so far (the metrics' `findings_total`); empty
    /// without the findings engine.
    pub fn findings_filed(&self) -> std::collections::BTreeMap<FindingId, u64> {
        self.pipe
            .ledger
            .observer
            .findings
            .as_ref()
            .map(|f| f.filed())
            .unwrap_or_default()
    }

    /// Hands each call that is over and folded to `f` (`calls`), then frees it.
    pub fn drain_calls(&mut self, f: impl FnMut(h2ledger_core::analysis::CallView<'_>)) {
        if let Some(a) = self.pipe.ledger.observer.analysis.as_mut() {
            a.drain_finished(f);
        }
    }

    /// Hands each PING round trip measured since the last drain to `f` (the side that sent
    /// the PING, nanoseconds); needs [`crate::Wanted::metrics`].
    pub fn drain_rtts(&mut self, f: impl FnMut(h2ledger_core::Side, Nanos)) {
        if let Some(a) = self.pipe.ledger.observer.analysis.as_mut() {
            a.drain_rtts(f);
        }
    }

    /// What a metrics scrape reads of the run in progress. The ledger holds the closed
    /// connections and those open ones whose client is known for good (by SYN, preface or
    /// pseudo-header fields: `client_by` never changes then); an open connection whose sides
    /// are still a guess (odd streams, the higher port) comes in once that is settled or it
    /// closes. So every count only grows, and at the end equals the report's.
    pub fn running(&self) -> Running {
        use h2ledger_core::ClientBy;
        let conns = self.pipe.ledger.connections();
        let tally = &self.pipe.ledger.observer.tally;
        let open = conns.iter().filter(|c| c.http2).count() as u64;
        let settled: Vec<_> = conns
            .into_iter()
            .filter(|c| {
                matches!(
                    c.client_by,
                    ClientBy::Syn | ClientBy::Preface | ClientBy::PseudoHeaders
                )
            })
            .collect();
        let mut ledger = LedgerReport::build(&settled, tally);
        ledger.anomalies = self
            .pipe
            .ledger
            .warnings
            .counts
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect();
        let a = self.pipe.ledger.observer.analysis.as_ref();
        Running {
            ledger,
            open,
            capture: self.pipe.stats.clone(),
            tcp: self.tcp(),
            flow: a.map(|a| a.flow_totals()),
            limits: a.map(|a| a.limits().clone()),
            grpc_untracked_calls: a.map_or(0, |a| a.grpc_untracked_calls()),
            rtts_dropped: a.map_or(0, |a| a.rtts_dropped()),
            calm_goaways: a.map(|a| a.enhance_your_calm()).unwrap_or_default(),
            error_codes: a.map(|a| a.error_codes()).unwrap_or_default(),
        }
    }

    /// The running ledger now, and what came since the previous tick.
    pub fn tick(&mut self) -> Tick {
        let total = self.ledger(&self.pipe.ledger.observer.tally);
        let last = total.since(&self.ticked);
        self.ticked = total.clone();
        Tick {
            last,
            capture: self.pipe.stats.clone(),
            tcp: self.tcp(),
            frames: self.frames(),
            total,
        }
    }

    /// Ends the run: `end` says how the input ended, `drops` are a live capture's counters.
    /// Calls still unfolded are folded ([`Session::drain_calls`] hands them over after this).
    pub fn finish(&mut self, end: &End, drops: Option<Drops>) -> Finished {
        self.pipe.finish();
        // Every connection is closed: the analysis and the findings come back from their
        // thread, if they ran on one.
        self.pipe.ledger.observer.gather();
        let mut whole = self.ledger(&self.pipe.ledger.observer.tally);
        if let End::Damaged(e) = end {
            whole.warnings.push(format!(
                "{e}; the ledger covers the packets before that point"
            ));
        }
        self.pipe.note_empty(&mut whole, self.filter.as_deref());
        if let Some(d) = drops.filter(|d| d.kernel + d.interface > 0) {
            whole.warnings.push(format!(
                "{} packets dropped by the kernel and {} by the interface: counts are low (raise --buffer-size)",
                d.kernel, d.interface
            ));
        }
        let tls = self.pipe.tls.report();
        let facts = CaptureFacts {
            gap_bytes: self.pipe.reasm.stats().gap_bytes,
            // Only those a key would show as HTTP/2 (ALPN h2 chosen, or offered when the
            // ServerHello was not seen), as the live count above: a TLS connection without ALPN
            // h2 is another protocol's.
            tls_without_key: tls.without_key_h2,
            tls_connections: tls
                .per_connection
                .iter()
                .filter(|c| {
                    c.status == h2ledger_tls::Status::NoKey
                        && match c.alpn.as_deref() {
                            Some(a) => a == "h2",
                            None => c.alpn_offered.iter().any(|a| a == "h2"),
                        }
                })
                .map(|c| c.id)
                .take(16)
                .collect(),
            drops: drops.map(|d| (d.kernel, d.interface, d.received)),
        };
        // The input's end: a part of several sessions ends at the whole run's last packet.
        let now = self.pipe.end_time();
        self.pipe.ledger.observer.note_capture(&facts, now);
        let forgotten = self.pipe.reasm.stats().evicted_forgotten;
        if forgotten > 0 {
            whole.warnings.push(format!(
                "{forgotten} evicted connections were forgotten (at most {} are remembered): any of them that came back was counted again, as a new connection",
                h2ledger_tcp::DEFAULT_MAX_EVICTED
            ));
        }
        let (mut report, phases) = build(&mut self.pipe, whole);
        let cuts = self
            .pipe
            .ledger
            .observer
            .splitter()
            .is_some_and(|s| s.cut_phases().is_some());
        if cuts {
            warn_cuts_outside(&mut report, &phases);
        }
        report.drops = drops;
        Finished { report, phases }
    }

    /// Packets held in memory (the demo's) through one session cut at `starts`: phase `i`
    /// runs from `starts[i]` (the first from the capture's start) to the next start. The whole
    /// capture's report and one report per start (an empty one for a phase no packet reached).
    /// Every packet is fed: a limit that would stop a capture does not stop this.
    pub fn cut_at<'p>(
        wanted: Wanted,
        opts: Options,
        starts: &[Nanos],
        linktype: LinkType,
        packets: impl IntoIterator<Item = (Nanos, &'p [u8])>,
    ) -> (Report, Vec<Report>) {
        let cuts = starts.iter().skip(1).map(|&t| Cut::At(t)).collect();
        let wanted = Wanted {
            splitter: Some(Splitter::at(cuts)),
            ..wanted
        };
        let mut s = Session::new(Obs::new(&wanted), opts);
        for (ts, data) in packets {
            let _ = s.feed(linktype, ts, data);
        }
        let done = s.finish(&End::Complete, None);
        let mut phases: Vec<Report> = s.phases(&done).collect();
        phases.resize_with(starts.len(), Report::default);
        (done.report, phases)
    }

    /// The time phase offsets and `--every` count from, when it is not this session's first
    /// packet: the run's, shared by its parts (`replay -j N`, `replay A B`, `sniff
    /// --workers N`: decision 413). Call before the first packet; later calls do nothing.
    pub fn set_origin(&mut self, t: Nanos) {
        self.pipe.ledger.observer.origin(t);
    }

    /// The observers of a finished session, what its phases are built from (they go to
    /// another thread: the session, with its key log poll, cannot).
    pub(crate) fn take_observers(&mut self) -> Obs {
        let none = Wanted {
            findings: None,
            ..Wanted::default()
        };
        std::mem::replace(&mut self.pipe.ledger.observer, Obs::new(&none))
    }

    /// The phases of a finished run, built one at a time.
    pub fn phases<'a>(&'a self, f: &'a Finished) -> impl Iterator<Item = Report> + 'a {
        f.phases.reports(&self.pipe.ledger.observer)
    }

    /// Whether the run draws a `--plot` (it keeps a timeline).
    pub fn plots(&self) -> bool {
        self.pipe.ledger.observer.timeline.is_some()
    }

    /// What the merged `--plot` of a run of several sessions takes from this finished one
    /// (its timeline moved out, its window series copied); `None` without `--plot`.
    pub(crate) fn take_plot(&mut self) -> Option<PlotPart> {
        let o = &mut self.pipe.ledger.observer;
        let timeline = o.timeline.take()?;
        let windows = o
            .analysis
            .as_ref()
            .and_then(|a| a.flow.series.as_ref())
            .or_else(|| o.findings.as_ref().and_then(|f| f.series()))
            .cloned();
        Some(PlotPart {
            timeline,
            windows,
            last: self.pipe.stats.last,
        })
    }

    /// What `--plot` draws: the frames timeline, the phase boundaries and the last packet
    /// (nanoseconds from the timeline's origin, the first packet) and the flow-control windows
    /// of the busiest connection.
    pub fn plot<'a>(&'a self, f: &Finished) -> Option<PlotInput<'a>> {
        let o = &self.pipe.ledger.observer;
        let t = o.timeline.as_ref()?;
        let origin = t.origin.unwrap_or(0);
        let cuts = (1..f.phases.len())
            .map(|k| f.phases.bounds(k).0.saturating_sub(origin))
            .collect();
        Some(PlotInput {
            timeline: t,
            cuts,
            end: self.pipe.stats.last.map(|l| l.saturating_sub(origin)),
            windows: o
                .analysis
                .as_ref()
                .and_then(|a| a.flow.series.as_ref())
                .or_else(|| o.findings.as_ref().and_then(|f| f.series())),
        })
    }
}

/// What a finished part of a run (`replay -j N`, `replay A B`, `sniff --workers N`) gives
/// the merged `--plot` ([`crate::merge::phased::Merged::plot`]): see [`Session::take_plot`].
#[derive(Debug)]
pub struct PlotPart {
    /// Its frames timeline, counted from the run's origin.
    pub(crate) timeline: h2ledger_core::Timeline,
    /// Its flow-control window series, when it keeps one.
    pub(crate) windows: Option<h2ledger_core::flow::WindowSeries>,
    /// Its last packet.
    pub(crate) last: Option<Nanos>,
}

/// A run in progress as a metrics scrape reads it: [`Session::running`].
#[derive(Clone, Debug, Default)]
pub struct Running {
    /// The running ledger of the closed connections and the open ones whose sides are
    /// settled (see [`Session::running`]); its `anomalies` are the run's, `warnings` empty.
    pub ledger: LedgerReport,
    /// HTTP/2 connections open now (settled or not).
    pub open: u64,
    /// Packet counts so far.
    pub capture: CaptureStats,
    /// Reassembly counts so far.
    pub tcp: TcpReport,
    /// Flow control of the whole run so far (with the analysis).
    pub flow: Option<h2ledger_core::flow::FlowReport>,
    /// The analysis' limits so far.
    pub limits: Option<h2ledger_core::analysis::AnalysisLimits>,
    /// gRPC calls not followed (`grpc.untracked_calls`).
    pub grpc_untracked_calls: u64,
    /// PING round trips not handed to [`Session::drain_rtts`] (more than
    /// `h2ledger_core::analysis::MAX_KEPT_RTTS` waited).
    pub rtts_dropped: u64,
    /// GOAWAY frames with ENHANCE_YOUR_CALM by sending side (the JSON's `too_many_pings`
    /// counts the first 1,000 GOAWAYs' share).
    pub calm_goaways: h2ledger_core::Sides<u64>,
    /// GOAWAY and RST_STREAM frames by sending side and error code (with the analysis).
    pub error_codes: h2ledger_core::analysis::ErrorCodes,
}

/// A finished run: the whole capture's report, and its phases (built from the session on
/// demand: [`Session::phases`]).
pub struct Finished {
    /// The whole capture's report.
    pub report: Report,
    phases: Phases,
}

impl Finished {
    /// How many phases the run has.
    pub fn phase_count(&self) -> usize {
        self.phases.len()
    }

    /// The run's phases (a merge of parts builds them phase by phase).
    pub(crate) fn phase_list(&self) -> &Phases {
        &self.phases
    }
}

/// The first warning `warn_cuts_outside_of` writes starts so.
pub(crate) const CUT_OUTSIDE: &str = "the cut at ";

/// See [`Session::plot`].
pub struct PlotInput<'a> {
    /// Frames per time bucket, per kind and side.
    pub timeline: &'a h2ledger_core::Timeline,
    /// Phase boundaries, nanoseconds from the timeline's origin (negative: before it).
    pub cuts: Vec<Nanos>,
    /// The last packet, nanoseconds from the origin.
    pub end: Option<Nanos>,
    /// Flow-control windows over time: the analysis' flow tracker's, or the findings' own
    /// (without `--analyze`).
    pub windows: Option<&'a h2ledger_core::flow::WindowSeries>,
}

/// `--split-at` cuts before the first packet or after the last one make empty phases: say so.
fn warn_cuts_outside(whole: &mut Report, phases: &Phases) {
    let cuts: Vec<Nanos> = (1..phases.len()).map(|k| phases.bounds(k).0).collect();
    warn_cuts_outside_of(whole, &cuts);
}

/// The start of each phase after the first (`cuts`, in time order) that lies outside the
/// capture `whole` covers, warned of (a merged run's too: decision 413).
pub(crate) fn warn_cuts_outside_of(whole: &mut Report, cuts: &[Nanos]) {
    let (Some(first), Some(last)) = (whole.start, whole.end) else {
        return;
    };
    for (i, &cut) in cuts.iter().enumerate() {
        let k = i + 1;
        let empty = if cut < first {
            format!("phase {k} is empty")
        } else if cut > last {
            format!("phase {} and those after it are empty", k + 1)
        } else {
            continue;
        };
        whole.ledger.warnings.push(format!(
            "the cut at {} ({:+.3} s) is outside the capture ({} to {}): {empty}",
            fmt_rfc3339(cut),
            secs(cut - first),
            fmt_rfc3339(first),
            fmt_rfc3339(last),
        ));
        if cut > last {
            break;
        }
    }
}
