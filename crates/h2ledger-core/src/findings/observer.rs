//! The engine as an [`Observer`], and each finding's evidence written from the counters of its
//! connection ([`Findings::sync`]).

use h2ledger_tcp::{ConnId, ConnMeta, Dir, Nanos, Write};

use crate::flow::Flow;
use crate::ledger::{ConnSummary, FrameEvent, HeaderNeed, Observer};
use crate::model::{FrameClass, Side};
use crate::table::IdTable;
use crate::StreamId;

use super::conn::ConnF;
use super::rules::{self, Fire};
use super::{failures, flowrules, streams, FindingId, Findings, Num, Rec};

/// The state of connection `id` in `conns`, made when it is new: one lookup when it is not.
#[inline(always)]
fn conn_in(conns: &mut IdTable<Box<ConnF>>, id: u32) -> Option<&mut ConnF> {
    let i = match conns.find(id) {
        Some(i) => i,
        None => conns.insert(id, Box::new(ConnF::new())),
    };
    conns.slot_mut(i).map(|c| &mut **c)
}

/// The window rules of a frame of connection `id`, after the flow tracker's events (those of
/// `id` first, then the window rules, then other connections' events).
#[cold]
fn windows(
    conns: &mut IdTable<Box<ConnF>>,
    pending: &mut Vec<Fire>,
    id: u32,
    ev: &FrameEvent<'_>,
    mut flow: Option<&mut Flow>,
) {
    let Some(c) = conns.get_mut(id) else {
        return;
    };
    let mut others = Vec::new();
    if let Some(f) = flow.as_deref_mut() {
        f.drain_events(|e| {
            if event_conn(&e) == id {
                flowrules::flow_event(c, e, pending);
            } else {
                others.push(e);
            }
        });
    }
    if flowrules::window_rules_apply(c, ev) {
        flowrules::window_rules(c, ev, flow.as_deref(), pending);
    }
    for e in others {
        if let Some(x) = conns.get_mut(event_conn(&e)) {
            flowrules::flow_event(x, e, pending);
        }
    }
}

/// The connection a flow event is about.
fn event_conn(e: &crate::flow::FlowEvent) -> u32 {
    use crate::flow::FlowEvent::*;
    match *e {
        Stall { conn, .. }
        | Resolved { conn, .. }
        | Unresolved { conn, .. }
        | Done { conn, .. } => conn,
    }
}

/// Ids filed once for the whole capture, not per connection ([`FindingId::capture_wide`]).
fn capture_wide(id: FindingId) -> bool {
    id.capture_wide()
}

impl Findings {
    /// Keeps its own flow tracker (for `flow-stall` and `zero-window`): for a run without the
    /// analysis, whose tracker it otherwise reads ([`Findings::frame_with`]).
    pub fn with_own_flow(mut self) -> Self {
        let mut f = Flow::new();
        f.calls_only();
        f.watch();
        self.own_flow = Some(Box::new(f));
        self
    }

    /// Keeps a flow tracker of its own that is the run's one tracker: for a run whose analysis
    /// runs on another thread, with its own tracker off ([`Flow::elsewhere`]). It tracks all
    /// the analysis' tracker would (the largest stream window too; not the per-call records,
    /// which only `calls` and metrics read, and they keep the analysis beside the ledger), and
    /// the analysis takes it at the end ([`Findings::take_shared_flow`]; decision 406).
    pub fn with_shared_flow(mut self) -> Self {
        let mut f = Flow::new();
        f.watch();
        self.own_flow = Some(Box::new(f));
        self.flow_shared = true;
        self
    }

    /// The tracker of [`Findings::with_shared_flow`], taken (for the analysis, once the input
    /// ended); `None` for any other.
    pub fn take_shared_flow(&mut self) -> Option<Flow> {
        if !self.flow_shared {
            return None;
        }
        self.flow_shared = false;
        self.own_flow.take().map(|f| *f)
    }

    /// The first packet's time, as the analysis' tracker is told it: the window series counts
    /// from it (see [`crate::Analysis::set_origin`]). For the shared tracker only: a tracker of
    /// the findings alone counts from its first sample.
    pub fn set_origin(&mut self, t: Nanos) {
        if !self.flow_shared {
            return;
        }
        if let Some(s) = self.own_flow.as_mut().and_then(|f| f.series.as_mut()) {
            s.origin.get_or_insert(t);
        }
    }

    /// Keeps the window series of its own flow tracker (`--plot` without the analysis: see
    /// [`Flow::record_series`]); nothing without one ([`Findings::with_own_flow`]).
    pub fn record_series(&mut self, bucket: Nanos, origin: Option<Nanos>) {
        if let Some(f) = self.own_flow.as_mut() {
            f.record_series(bucket, origin);
        }
    }

    /// The window series of its own flow tracker, when it keeps one.
    pub fn series(&self) -> Option<&crate::flow::WindowSeries> {
        self.own_flow.as_ref().and_then(|f| f.series.as_ref())
    }

    /// The state of connection `id`, made when it is new (`None` only if the table failed to
    /// keep it, which it does not).
    fn conn(&mut self, id: u32) -> Option<&mut ConnF> {
        conn_in(&mut self.conns, id)
    }

    /// One frame, with the flow tracker that has just seen it (the analysis' own, which must
    /// [`Flow::watch`]), or none (then `flow-stall` and `zero-window` cannot fire).
    #[inline]
    pub fn frame_with(&mut self, ev: &FrameEvent<'_>, flow: Option<&mut Flow>) {
        self.now = self.now.max(ev.ts);
        let id = ev.conn.0;
        let Findings {
            conns,
            cfg,
            streams,
            streams_untracked,
            pending,
            capture,
            ..
        } = self;
        // One lookup of the connection for the whole frame.
        let Some(c) = conn_in(conns, id) else {
            return;
        };
        let mut retried = None;
        c.last_ts = c.last_ts.max(ev.ts);
        c.client = Some(if ev.side == Side::Client {
            ev.dir
        } else {
            ev.dir.other()
        });
        if ev.mid_stream && !c.mid {
            c.mid = true;
            capture.mid_connections += 1;
            pending.push((FindingId::MidStream, None, None));
        }
        rules::frame_rules(c, ev, cfg, pending);
        // A request's call (method, deadline, times), kept with the stream it opens.
        let mut call = super::conn::CallF::default();
        // The stream's slot, when the failure rules looked it up (decision 476).
        let mut found = None;
        // DATA, WINDOW_UPDATE, PING and SETTINGS, most frames, tell nothing of a failure.
        // A header block ended by a CONTINUATION is read there (decision 454).
        if matches!(
            ev.class,
            FrameClass::Headers | FrameClass::Trailers | FrameClass::RstStream | FrameClass::GoAway
        ) || ev.opened.is_some()
        {
            super::failures::frame(c, ev, &mut call, pending, &mut found);
            if !c.fail.new_cut.is_empty() {
                let paths = std::mem::take(&mut c.fail.new_cut);
                let server = c.addrs.map(|a| a[c.dir_of(Side::Server).index()]);
                capture.note_cut(id, server, ev.ts, paths);
            }
            if ev.class == FrameClass::Headers
                && ev.side == Side::Client
                && !capture.cuts.is_empty()
            {
                if let Some(p) = ev.headers.and_then(|h| h.known(crate::Known::Path)) {
                    let p = &p[..p.len().min(super::rules::METHOD_PATH_MAX)];
                    let server = c.addrs.map(|a| a[c.dir_of(Side::Server).index()]);
                    retried = capture.retry(id, server, p, ev.ts);
                }
            }
        } else if ev.class == FrameClass::Data && ev.ends_half() {
            super::failures::data_end(c, ev, pending, &mut found);
        }
        if ev.head.stream_id.0 != 0 {
            streams::stream_frame(c, ev, call, found, streams, streams_untracked, pending);
        }
        // The common frame: no stall event, no window held or opened at zero.
        if flow.as_deref().is_some_and(Flow::has_events) || flowrules::window_rules_apply(c, ev) {
            windows(conns, pending, id, ev, flow);
        }
        if !self.pending.is_empty() {
            self.file(id, ev.ts);
        }
        if let Some(a) = retried {
            // Filed on the connection whose calls were cut (perhaps closed by now: its
            // evidence is the run's, written by sync_capture).
            self.fire(
                FindingId::GoawayRetries,
                Some(a),
                Some(Side::Client),
                None,
                ev.ts,
            );
        }
    }

    /// Files what the rules fired on connection `id` at `ts`.
    fn file(&mut self, id: u32, ts: Nanos) {
        if self.pending.is_empty() {
            return;
        }
        let fires: Vec<Fire> = std::mem::take(&mut self.pending);
        for &(fid, side, stream) in &fires {
            if capture_wide(fid) {
                self.fire(fid, None, side, None, ts);
                if fid == FindingId::MidStream && self.capture.mid_first.is_none() {
                    self.capture.mid_first = Some(id);
                }
                continue;
            }
            let new = !self.has(fid, Some(id), side);
            self.fire(fid, Some(id), side, stream, ts);
            if let Some(c) = self.conns.get_mut(id) {
                if new && !c.fired.contains(&(fid, side)) {
                    c.fired.push((fid, side));
                }
            }
        }
        let mut fires = fires;
        fires.clear();
        self.pending = fires;
    }

    /// Writes the evidence and count of every finding of connection `id` from its counters.
    pub(super) fn sync(&mut self, id: u32) {
        let Some(c) = self.conns.remove(id) else {
            return;
        };
        for &(fid, side) in &c.fired {
            let min_time = self.cfg.keepalive_min_time;
            let permit = self.cfg.permit_without_stream;
            if let Some(r) = self.rec_mut(fid, Some(id), side) {
                write_evidence(r, &c, side, min_time, permit);
            }
        }
        self.conns.insert(id, c);
    }

    /// The capture-wide findings' evidence.
    pub(super) fn sync_capture(&mut self) {
        let cap = self.capture.clone();
        if let Some(r) = self.rec_mut(FindingId::MidStream, None, None) {
            r.count = cap.mid_connections;
            r.evidence.u("connections", cap.mid_connections);
            if let Some(c) = cap.mid_first {
                r.evidence.u("first_conn", u64::from(c));
            }
        }
        if let Some(r) = self.rec_mut(FindingId::ReassemblyGaps, None, None) {
            r.count = cap.gaps;
            r.evidence.u("gaps", cap.gaps);
            r.evidence.u("gaps_framing_lost", cap.gaps_framing_lost);
            r.evidence.u("connections", cap.gap_connections);
            r.evidence.u("gap_bytes", cap.gap_bytes);
            if let Some(c) = cap.gap_first {
                r.evidence.u("first_conn", u64::from(c));
            }
        }
        if let Some(r) = self.rec_mut(FindingId::TlsNoKeys, None, None) {
            r.count = cap.tls_without_key;
            r.evidence.u("connections", cap.tls_without_key);
            if let Some(c) = cap.tls_connections.first() {
                r.evidence.u("first_conn", u64::from(*c));
            }
        }
        for cut in &cap.cuts {
            if let Some(r) =
                self.rec_mut(FindingId::GoawayRetries, Some(cut.conn), Some(Side::Client))
            {
                let e = &mut r.evidence;
                r.count = cut.retried;
                e.u("calls_cut", cut.cut);
                e.u("retried", cut.retried);
                e.u("not_retried", cut.cut - cut.retried);
                e.u("cut_untracked", cut.untracked);
                if let Some(c) = cut.retry_conn {
                    e.u("retry_conn", u64::from(c));
                }
                e.u("first_retry_us", us(cut.first_retry - cut.at));
                e.u("last_retry_us", us(cut.last_retry - cut.at));
            }
        }
        if let Some(r) = self.rec_mut(FindingId::CaptureDrops, None, None) {
            r.count = cap.drops_kernel + cap.drops_interface;
            r.evidence.u("dropped_by_kernel", cap.drops_kernel);
            r.evidence.u("dropped_by_interface", cap.drops_interface);
            r.evidence.u("received", cap.drops_received);
        }
    }

    /// The connection is over, with the flow tracker that has closed it too.
    pub fn close_with(&mut self, summary: &ConnSummary, flow: Option<&mut Flow>) {
        let id = summary.id.0;
        // Windows still held were held until the connection ended (its FIN or RST, or the
        // end of the capture), also the stalls the flow tracker ends now as unresolved.
        if let (Some(end), Some(c)) = (summary.end, self.conns.get_mut(id)) {
            c.last_ts = c.last_ts.max(end);
        }
        if let Some(f) = flow {
            let Findings { conns, pending, .. } = self;
            f.drain_events(|e| {
                if let Some(x) = conns.get_mut(event_conn(&e)) {
                    flowrules::flow_event(x, e, pending);
                }
            });
        }
        let Some(c) = self.conns.get_mut(id) else {
            return;
        };
        let t = c.last_ts;
        flowrules::close_holds(c, &mut self.pending);
        self.file(id, t);
        self.sync(id);
        if let Some(c) = self.conns.remove(id) {
            self.streams -= c.streams.len();
        }
    }

    /// Bytes of `conn` were lost in the capture.
    pub fn gap_at(&mut self, conn: ConnId, ts: Nanos, framing_lost: bool) {
        self.capture.gaps += 1;
        self.capture.gaps_framing_lost += u64::from(framing_lost);
        if let Some(c) = self.conn(conn.0) {
            c.lossy |= framing_lost;
            if !c.gapped {
                c.gapped = true;
                self.capture.gap_connections += 1;
                self.capture.gap_first.get_or_insert(conn.0);
            }
        }
        self.now = self.now.max(ts);
        self.fire(FindingId::ReassemblyGaps, None, None, None, ts);
    }
}

fn us(ns: i64) -> u64 {
    (ns.max(0) / 1_000) as u64
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// `r`'s evidence and count from connection `c`'s counters (`side`: the finding's side).
fn write_evidence(r: &mut Rec, c: &ConnF, side: Option<Side>, min_time: Nanos, permit: bool) {
    let s = side.unwrap_or(Side::Client);
    let d = c.dir_of(s);
    let df = &c.dirs[d];
    let peer = &c.dirs[d.other()];
    let e = &mut r.evidence;
    match r.id {
        FindingId::BdpPingPerCall => {
            r.count = df.bdp_pings;
            e.u("calls", c.calls);
            e.u("bdp_pings", df.bdp_pings);
            e.set("bdp_pings_per_call", Num::F(ratio(df.bdp_pings, c.calls)));
            e.set(
                "control_frames_per_call",
                Num::F(ratio(df.control_frames, c.calls)),
            );
            e.set("writes_per_call", Num::F(ratio(df.writes, c.calls)));
            e.u("peer_bdp_pings", peer.bdp_pings);
        }
        FindingId::KeepaliveStrikes | FindingId::TooManyPings => {
            let ka = c.ka.as_deref().unwrap_or(&super::conn::NO_PINGS);
            r.count = if r.id == FindingId::KeepaliveStrikes {
                ka.total_strikes
            } else {
                ka.ring_len as u64
            };
            e.u("strikes", ka.strikes);
            e.u("strikes_total", ka.total_strikes);
            e.u("max_ping_strikes", rules::MAX_PING_STRIKES);
            e.u("min_time_us", us(min_time));
            e.u("permit_without_stream", u64::from(permit));
            e.u("last_gap_us", us(ka.last_gap));
            e.u("last_min_us", us(ka.last_min));
            e.set("pings", Num::Times(ka.pings()));
            if let Some(p) = ka.last_ping {
                e.set(
                    "next_fatal_before",
                    Num::At(p.saturating_add(ka.last_min.max(1))),
                );
            }
            if let Some(t) = ka.fatal_at {
                e.set("predicted_goaway", Num::At(t));
            }
            if let Some(t) = ka.goaway_at {
                e.set("goaway", Num::At(t));
            }
            if r.id == FindingId::KeepaliveStrikes {
                if let Some(t) = ka.first_strike {
                    r.first = r.first.min(t);
                }
            }
        }
        FindingId::RapidReset => {
            r.count = c.client_resets;
            e.u("client_resets", c.client_resets);
            e.u("premature_resets", c.premature);
            e.u("streams_closed", c.closed_streams);
            e.u("over_reset_budget", c.budget_exhausted);
            e.u("reset_burst", rules::RESET_BURST);
            e.u("reset_rate", rules::RESET_RATE);
        }
        FindingId::MadeYouReset => {
            r.count = c.myr;
            e.u("server_resets", c.myr);
            e.u("premature_resets", c.myr_premature);
            e.u("streams_closed", c.closed_streams);
            e.u("over_reset_budget", c.myr_exhausted);
        }
        FindingId::ResetFlood => {
            r.count = c.flood_resets;
            e.u("server_resets", c.flood_resets);
            e.u("over_reset_budget", c.flood_exhausted);
            e.u("streams_closed", c.closed_streams);
        }
        FindingId::ContinuationFlood => {
            r.count = df.blocks_over;
            e.u("blocks_over_limit", df.blocks_over);
            e.u("max_continuations", df.max_continuations);
            e.u("limit", rules::MAX_CONTINUATIONS);
            e.u("unfinished", u64::from(df.block_open));
        }
        FindingId::PingFlood => {
            r.count = df.pings;
            e.u("pings", df.pings);
            e.u("pipelined", df.pings_pipelined);
            e.u("max_unacked", df.max_pings_owed);
            e.u("over_rate", df.ping_rate_hits);
        }
        FindingId::SettingsFlood => {
            r.count = df.settings;
            e.u("settings", df.settings);
            e.u("max_unacked", df.max_settings_owed);
            e.u("over_rate", df.settings_rate_hits);
            e.u("max_entries", df.max_settings_entries);
        }
        FindingId::EmptyFramesFlood => {
            r.count = df.empty_frames;
            e.u("empty_frames", df.empty_frames);
            e.u("max_consecutive", df.max_empty_run);
        }
        FindingId::PriorityFlood => {
            r.count = df.priority;
            e.u("priority_frames", df.priority);
            e.u("header_blocks", df.header_blocks);
            e.u("limit", rules::PRIORITY_PER_STREAM * (1 + df.header_blocks));
        }
        FindingId::WindowUpdateFlood => {
            r.count = df.window_updates;
            e.u("window_updates", df.window_updates);
            e.u("header_blocks", df.header_blocks);
            e.u("peer_data_frames", peer.data_frames);
            e.u(
                "limit",
                1 + 2 * (df.header_blocks + rules::WINDOW_UPDATES_PER_DATA * peer.data_frames),
            );
        }
        FindingId::HpackBomb => {
            r.count = df.bombs;
            e.u("blocks", df.bombs);
            e.u("header_list_bytes", df.max_list);
            e.u("encoded_bytes", df.bomb_encoded);
            e.set(
                "amplification",
                Num::F(ratio(df.max_list, df.bomb_encoded.max(1))),
            );
        }
        FindingId::ZeroWindow => {
            // `side` holds the window: the sender that waited is the other.
            let w = s.other().index();
            r.count = c.holds_long[w];
            e.u("holds", c.holds_long[w]);
            e.u("held_us_total", us(c.held_ns[w]));
            e.u("held_us_max", us(c.max_held_ns[w]));
            e.u("initial_window", c.initial[s.index()].max(0) as u64);
        }
        FindingId::StreamSlotsFull => {
            let sl = &c.slots;
            r.count = sl.waited + sl.over;
            e.u(
                "max_concurrent_streams",
                u64::from(sl.limit.or(sl.pending).unwrap_or(0)),
            );
            e.u("waited", sl.waited);
            e.u("over_limit", sl.over);
            e.u("times_full", sl.times_full);
            let open = sl.full_since.map(|t| c.last_ts - t).unwrap_or(0);
            e.u("full_us_total", us(sl.full_ns + open));
            e.u("full_us_max", us(sl.max_full_ns.max(open)));
            e.u("max_in_flight", u64::from(sl.max_in_flight));
        }
        FindingId::RefusedStream => {
            r.count = c.refused;
            e.u("refused", c.refused);
            e.u("in_flight", u64::from(c.refused_in_flight));
            if let Some(l) = c.slots.limit.or(c.slots.pending) {
                e.u("max_concurrent_streams", u64::from(l));
            }
        }
        FindingId::FlowStall => {
            let i = s.index();
            r.count = c.stalls[i];
            e.u("stalls", c.stalls[i]);
            e.u("stream_limited", c.stall_limits[i][0]);
            e.u("connection_limited", c.stall_limits[i][1]);
            e.u("both_limited", c.stall_limits[i][2]);
            e.u("unresolved", c.unresolved[i]);
            e.u("waited_us_total", us(c.waited_ns[i]));
            e.u("waited_us_max", us(c.max_wait_ns[i]));
            e.u(
                "peer_initial_window",
                c.initial[s.other().index()].max(0) as u64,
            );
            e.u("needed_window", c.needed[i]);
        }
        FindingId::CallErrors => {
            let f = &c.fail;
            r.count = f.failed();
            e.u("calls", c.calls);
            e.u("failed", f.failed());
            e.set("failed_share", Num::F(ratio(f.failed(), c.calls)));
            for (key, n) in failures::GRPC_KEYS.iter().zip(f.grpc) {
                if n > 0 {
                    e.u(key, n);
                }
            }
            e.u("http_4xx", f.http_4xx);
            e.u("http_5xx", f.http_5xx);
            e.u("client_cancels", f.client_cancels);
            e.u("client_deadline_cancels", f.deadline_cancels);
        }
        FindingId::GoawayCutCalls => {
            let f = &c.fail;
            r.count = f.cut;
            e.u("streams_cut", f.cut);
            e.u("goaways", f.goaways);
            e.u("goaway_code", u64::from(f.goaway_code));
            if let Some(l) = f.last_stream_id {
                e.u("last_stream_id", u64::from(l));
            }
            e.u("calls", c.calls);
        }
        FindingId::MethodErrors => {
            let f = &c.fail;
            let (worst, over) = failures::worst_method(f);
            if let Some(m) = worst {
                r.count = m.failed;
                e.set("method", Num::Text(String::from_utf8_lossy(&m.path).into()));
                e.u("method_calls", m.calls);
                e.u("method_failed", m.failed);
                e.set("method_failed_share", Num::F(ratio(m.failed, m.calls)));
                for (key, n) in failures::GRPC_KEYS.iter().zip(m.grpc) {
                    if n > 0 {
                        e.u(key, n);
                    }
                }
                e.u("http_5xx", m.http_5xx);
                e.u("client_cancels", m.cancels);
            }
            e.u("methods_failing", over);
            e.u("methods", f.methods.len() as u64);
            e.u("methods_untracked", f.methods_untracked);
            e.u("calls", c.calls);
        }
        FindingId::MethodErrorsRise => {
            let f = &c.fail;
            if let Some((i, h)) = f.rising {
                r.count = h.later[1];
                if let Some(m) = f.methods.get(usize::from(i)) {
                    e.set("method", Num::Text(String::from_utf8_lossy(&m.path).into()));
                    e.u("method_calls", m.calls);
                }
                e.u("earlier_calls", h.earlier[0]);
                e.u("earlier_failed", h.earlier[1]);
                e.set(
                    "earlier_failed_share",
                    Num::F(ratio(h.earlier[1], h.earlier[0])),
                );
                e.u("later_calls", h.later[0]);
                e.u("later_failed", h.later[1]);
                e.set("later_failed_share", Num::F(ratio(h.later[1], h.later[0])));
                e.u("split_us", us(h.split));
                e.u("span_us", us(h.span));
            }
            e.u("methods_rising", f.methods_rising);
            e.u("methods", f.methods.len() as u64);
            e.u("methods_untracked", f.methods_untracked);
            e.u("calls", c.calls);
        }
        FindingId::DeadlineExceeded => {
            let f = &c.fail;
            r.count = f.deadline_calls();
            e.u("calls", c.calls);
            e.u("deadline_calls", f.deadline_calls());
            e.u("grpc_deadline_exceeded", f.grpc[4]);
            e.u("client_deadline_cancels", f.deadline_cancels);
            e.u("requests_with_timeout", f.timeouts);
            if f.timeouts > 0 {
                e.u("grpc_timeout_us_min", us(f.timeout_min));
                e.u("grpc_timeout_us_max", us(f.timeout_max));
            }
        }
        FindingId::CancelStorm => {
            let f = &c.fail;
            r.count = f.plain_cancels();
            e.u("calls", c.calls);
            e.u("client_cancels", f.client_cancels);
            e.u("cancels_not_at_deadline", f.plain_cancels());
            e.set("cancel_share", Num::F(ratio(f.plain_cancels(), c.calls)));
        }
        FindingId::SlowCalls => {
            let f = &c.fail;
            r.count = f.slow;
            e.u("slow_calls", f.slow);
            e.u("calls", c.calls);
            e.u("slow_call_us", us(rules::SLOW_CALL));
            if let Some(s) = f.slowest {
                e.u("stream", u64::from(s.stream));
                if let Some(m) = f.methods.get(usize::from(s.method)) {
                    e.set("method", Num::Text(String::from_utf8_lossy(&m.path).into()));
                }
                e.u("duration_us", us(s.duration_ns));
                e.u("slot_wait_us_max", us(s.slot_ns));
                e.u("request_us", us(s.request_ns));
                e.u("first_byte_us", us(s.first_byte_ns));
                e.u("response_us", us(s.response_ns));
                e.u("window_wait_us", us(s.window_ns));
            }
            e.u("streams_left_out", f.streamed_long);
            e.u("ping_rtt_us", us(c.rtt_min_ns));
            e.u("ping_rtts", c.rtts);
        }
        // Written from the run's record of the cut (sync_capture): the connection may be gone.
        FindingId::GoawayRetries => {}
        FindingId::MidStream
        | FindingId::ReassemblyGaps
        | FindingId::TlsNoKeys
        | FindingId::CaptureDrops => {}
    }
}

impl Observer for Findings {
    fn header_need(&self) -> HeaderNeed {
        // `content-type` (gRPC or not); the analysis' filter, so that the two together still
        // copy only what one of them reads.
        HeaderNeed::Some(crate::analysis::reads_header)
    }

    fn open(&mut self, meta: &ConnMeta) {
        if let Some(c) = self.conn(meta.id.0) {
            // The sender of each direction: Fwd is the first packet's.
            c.addrs = Some([meta.first_src, meta.first_dst]);
        }
        if let Some(f) = self.own_flow.as_mut() {
            f.open(meta);
        }
    }

    fn write(&mut self, conn: ConnId, dir: Dir, _w: &Write) {
        if let Some(c) = self.conns.get_mut(conn.0) {
            c.dirs[dir].writes += 1;
        }
    }

    #[inline]
    fn frame(&mut self, ev: &FrameEvent<'_>) {
        let mut own = self.own_flow.take();
        if let Some(f) = own.as_deref_mut() {
            f.frame(ev, None, None);
        }
        self.frame_with(ev, own.as_deref_mut());
        self.own_flow = own;
    }

    fn gap(&mut self, conn: ConnId, _dir: Dir, ts: Nanos, framing_lost: bool) {
        if let Some(f) = self.own_flow.as_mut() {
            f.gap(conn, framing_lost, None);
        }
        self.gap_at(conn, ts, framing_lost);
    }

    fn close(&mut self, summary: &ConnSummary) {
        let mut own = self.own_flow.take();
        if let Some(f) = own.as_deref_mut() {
            f.close(summary.id, None);
        }
        self.close_with(summary, own.as_deref_mut());
        self.own_flow = own;
    }

    fn wants_data(&self, _conn: ConnId, _stream: StreamId) -> bool {
        false
    }
}
