//! Counting: the per-side frame ledger, writes and bytes, per connection (for the whole run, or
//! one phase of it: the run routes each event to its phase's tally).

use std::collections::BTreeMap;

use crate::FastMap;

use h2_frame_parser::{ping, Frame};
use h2ledger_tcp::{ConnId, Dir, Dirs, Write};
use serde::Serialize;

use crate::ledger::{ConnSummary, FrameEvent, Observer};
use crate::model::{FrameClass, FrameCounts, Side, Sides};

/// One direction's counts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SideTally {
    /// PING frames (not ACKs) carrying grpc-go's BDP estimator payload.
    pub bdp_pings: u64,
    /// Payload bytes of those writes.
    pub bytes: u64,
    /// Frames this side sent, by ledger row.
    pub frames: FrameCounts,
    /// PING frames (not ACKs) by the label of their payload (`other` when unknown).
    pub ping_labels: BTreeMap<&'static str, u64>,
    /// TLS records this side sent (0 on cleartext), counted in the write that completed them.
    pub tls_records: u64,
    /// TCP segments carrying new payload (retransmissions excluded).
    pub writes: u64,
}

impl SideTally {
    /// Adds `o`'s counts to these (a merged report, or a connection's phases).
    pub fn merge(&mut self, o: &SideTally) {
        self.frames.merge(&o.frames);
        self.bdp_pings += o.bdp_pings;
        self.writes += o.writes;
        self.bytes += o.bytes;
        self.tls_records += o.tls_records;
        for (k, v) in &o.ping_labels {
            *self.ping_labels.entry(k).or_default() += v;
        }
    }

    /// The counts added since `earlier`, an earlier copy of the same running tally (the live
    /// view's last period). Every field is named: a new one must say how it subtracts.
    pub(crate) fn since(&self, earlier: &SideTally) -> SideTally {
        let SideTally {
            frames,
            bdp_pings,
            writes,
            bytes,
            ping_labels,
            tls_records,
        } = self;
        let mut f = *frames;
        for (a, b) in f.0.iter_mut().zip(earlier.frames.0.iter()) {
            *a = a.saturating_sub(*b);
        }
        SideTally {
            frames: f,
            bdp_pings: bdp_pings.saturating_sub(earlier.bdp_pings),
            writes: writes.saturating_sub(earlier.writes),
            bytes: bytes.saturating_sub(earlier.bytes),
            ping_labels: ping_labels
                .iter()
                .map(|(k, v)| {
                    (
                        *k,
                        v.saturating_sub(*earlier.ping_labels.get(k).unwrap_or(&0)),
                    )
                })
                .filter(|(_, v)| *v > 0)
                .collect(),
            tls_records: tls_records.saturating_sub(earlier.tls_records),
        }
    }
}

/// Connections listed one by one in [`LedgerReport::per_connection`]; the counts of later ones
/// are in the totals only (and `per_connection_omitted` says how many).
pub const MAX_CONN_DETAIL: usize = 1000;
/// The same for one phase's ledger: phases are many, and their connections are listed in full
/// in the whole capture's ledger. A phase lists its connections of the lowest numbers (the
/// earliest), so that the phases of parts merge into the whole's (decision 413).
pub const PHASE_CONN_DETAIL: usize = 16;

/// Counts per open connection and direction, of the events handed to it;
/// closed connections are folded into per-side totals (their side is final then) and freed.
#[derive(Debug, Default)]
pub struct Tally {
    /// Boxed: hash-map buckets are reserved ahead, and an entry is several hundred bytes.
    open: FastMap<u32, Box<Dirs<SideTally>>>,
    /// The open connection counted last, kept out of `open`: a packet's write and frames are
    /// one connection's, so most events find it here without hashing.
    hot: Option<(u32, Box<Dirs<SideTally>>)>,
    /// The closed HTTP/2 connections: totals, and the first [`MAX_CONN_DETAIL`] one by one.
    closed: Sides<SideTally>,
    closed_conns: u64,
    closed_calls: u64,
    closed_upgraded: u64,
    detail: Vec<ConnLedger>,
    detail_omitted: u64,
    /// How many connections `detail` may hold: [`MAX_CONN_DETAIL`] unless set.
    detail_cap: Option<usize>,
    frames: u64,
}

/// `l` in place of the connection of the highest number in the full list `v`, if `l`'s is
/// lower (a phase lists its lowest numbers).
fn keep_lowest(v: &mut [ConnLedger], l: ConnLedger) {
    if let Some(top) = v.iter_mut().max_by_key(|c| c.id) {
        if l.id < top.id {
            *top = l;
        }
    }
}

impl Tally {
    /// A tally listing up to [`MAX_CONN_DETAIL`] connections one by one.
    pub fn new() -> Self {
        Self::default()
    }

    /// A phase's tally: lists at most [`PHASE_CONN_DETAIL`] connections one by one.
    pub fn for_phase() -> Self {
        Tally {
            detail_cap: Some(PHASE_CONN_DETAIL),
            ..Tally::default()
        }
    }

    fn cap(&self) -> usize {
        self.detail_cap.unwrap_or(MAX_CONN_DETAIL)
    }

    /// Frames counted so far, every connection and side.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    #[inline(always)]
    fn slot(&mut self, conn: ConnId, dir: Dir) -> &mut SideTally {
        if !matches!(&self.hot, Some((h, _)) if *h == conn.0) {
            self.make_hot(conn.0);
        }
        match &mut self.hot {
            Some((_, t)) => &mut t[dir],
            None => unreachable!("made hot above"),
        }
    }

    /// Connection `id`'s counts out of `open` into `hot` (new ones if it has none yet), and
    /// those that were there back into `open`.
    #[inline(never)]
    fn make_hot(&mut self, id: u32) {
        let t = self.open.remove(&id).unwrap_or_default();
        if let Some((was, u)) = self.hot.replace((id, t)) {
            self.open.insert(was, u);
        }
    }

    /// The counts of open connection `id`, wherever they are kept.
    fn open_counts(&self, id: u32) -> Option<&Dirs<SideTally>> {
        match &self.hot {
            Some((h, t)) if *h == id => Some(t),
            _ => self.open.get(&id).map(|t| &**t),
        }
    }

    /// Whether this tally holds counts of the open connection `c`.
    pub(crate) fn has(&self, c: &ConnSummary) -> bool {
        self.open_counts(c.id.0).is_some()
    }

    /// The counts of one open connection's side.
    pub(crate) fn side(&self, c: &ConnSummary, side: Side) -> SideTally {
        let dir = match side {
            Side::Client => c.client_dir,
            Side::Server => c.client_dir.other(),
        };
        self.open_counts(c.id.0)
            .map(|t| t[dir].clone())
            .unwrap_or_default()
    }
}

/// The process that owns one end of a connection (`sniff`, from /proc: h2ledger-run's
/// `procs`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Owner {
    /// Its control group's path: the first that is not the root `/` of cgroup v2's, v1's
    /// `name=systemd` and v1's other hierarchies; `None` when all are `/`. A container
    /// runtime's group names the container (`/system.slice/docker-<id>.scope`,
    /// `/kubepods/...`).
    pub cgroup: Option<String>,
    /// `/proc/<pid>/comm`: the command, at most 15 bytes as the kernel keeps it.
    pub comm: String,
    /// The process id (as /proc shows it: in the reader's pid namespace).
    pub pid: u32,
}

/// The processes at both ends of a connection, each `None` when no local process holds it
/// (the other end is on another host) or /proc did not show it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ConnOwners {
    /// The client's process.
    pub client: Option<Owner>,
    /// The server's process.
    pub server: Option<Owner>,
}

impl ConnOwners {
    /// Neither end was found.
    pub fn is_empty(&self) -> bool {
        self.client.is_none() && self.server.is_none()
    }
}

/// One HTTP/2 connection's ledger from its tally.
fn conn_ledger(c: &ConnSummary, t: &Tally) -> ConnLedger {
    let mut sides = Sides::default();
    for s in Side::ALL {
        *sides.get_mut(s) = t.side(c, s);
    }
    ConnLedger {
        id: c.id.0,
        client: fmt_addr(&c.client),
        server: fmt_addr(&c.server),
        client_by: c.client_by.name(),
        first: c.start,
        mid_stream: c.mid_stream,
        prelude: c.prelude.map(|p| p.name()),
        calls: sides.client.frames.get(FrameClass::Headers),
        upgraded_calls: u64::from(c.upgraded_call),
        sides,
        process: None,
    }
}

impl Observer for Tally {
    fn header_need(&self) -> crate::ledger::HeaderNeed {
        crate::ledger::HeaderNeed::None
    }

    fn close(&mut self, c: &ConnSummary) {
        if c.http2 && self.has(c) {
            let l = conn_ledger(c, self);
            // A connection continued after its eviction was counted when it was folded, if it
            // was HTTP/2 by then.
            self.closed_conns += u64::from(!c.continued_counted);
            self.closed_calls += l.calls;
            self.closed_upgraded += l.upgraded_calls;
            self.closed.client.merge(&l.sides.client);
            self.closed.server.merge(&l.sides.server);
            if c.continued_counted {
                // Its counts are in the totals; its row is the original's.
            } else if self.detail.len() < self.cap() {
                self.detail.push(l);
            } else {
                self.detail_omitted += 1;
                if self.detail_cap.is_some() {
                    // A phase keeps its lowest numbers: this one in place of the highest.
                    keep_lowest(&mut self.detail, l);
                }
            }
        }
        if self.hot.as_ref().is_some_and(|h| h.0 == c.id.0) {
            self.hot = None;
        } else {
            self.open.remove(&c.id.0);
        }
        // A map keeps its largest size: give it back once mostly empty, so a phase whose
        // connections have ended holds no table sized for its busiest moment (1,000 phases).
        let cap = self.open.capacity();
        if cap > 32 && self.open.len() * 4 < cap {
            self.open.shrink_to(self.open.len() * 2);
        }
    }

    fn write(&mut self, conn: ConnId, dir: Dir, w: &Write) {
        let t = self.slot(conn, dir);
        t.writes += 1;
        t.bytes += u64::from(w.len);
    }

    fn tls_record(&mut self, conn: ConnId, dir: Dir, _: &Write) {
        self.slot(conn, dir).tls_records += 1;
    }

    #[inline]
    fn frame(&mut self, ev: &FrameEvent<'_>) {
        self.frames += 1;
        let t = self.slot(ev.conn, ev.dir);
        t.frames.add(ev.class, 1);
        if ev.class == FrameClass::Ping {
            if let Some(Frame::Ping(p)) = ev.frame {
                ping_seen(t, &p.payload);
            }
        }
    }
}

/// A PING's payload, told by its sender's label: out of [`Tally::frame`]'s line, so that the
/// common frame does not pay for the registers the label's map needs (decision 474).
#[cold]
#[inline(never)]
fn ping_seen(t: &mut SideTally, payload: &[u8; 8]) {
    let known = ping::classify(payload);
    if known.is_some_and(|k| k.payload == ping::GRPC_GO_BDP) {
        t.bdp_pings += 1;
    }
    *t.ping_labels
        .entry(known.map(|k| k.label).unwrap_or("other"))
        .or_default() += 1;
}

/// One connection's ledger.
#[derive(Clone, Debug, Serialize)]
pub struct ConnLedger {
    /// The client's HEADERS frames on this connection (one per request).
    pub calls: u64,
    /// The client's address, `ip:port` or `[ip6]:port`.
    pub client: String,
    /// How the client was told apart: syn, preface, odd-streams or ephemeral-port.
    pub client_by: &'static str,
    /// The connection's first packet (nanoseconds since the epoch; seconds in the JSON): a
    /// merged report numbers the connections of its parts in this order (docs/scale.md).
    #[serde(serialize_with = "first_secs")]
    pub first: h2ledger_tcp::Nanos,
    /// The connection's id (order of first appearance in the capture, from 0).
    pub id: u32,
    /// The capture lacks the start of at least one direction: HPACK references to entries never
    /// seen decode as placeholders.
    pub mid_stream: bool,
    /// HTTP/1.1 before HTTP/2: `h2c-upgrade` or `connect-tunnel` (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prelude: Option<&'static str>,
    /// `sniff`: the local processes at its two ends, from /proc (null when unknown, and in
    /// `replay`).
    pub process: Option<ConnOwners>,
    /// The server's address, `ip:port` or `[ip6]:port`.
    pub server: String,
    /// This connection's ledger per side.
    pub sides: Sides<SideTally>,
    /// 1 when the call on stream 1 was an upgraded HTTP/1.1 request (not in `calls`).
    pub upgraded_calls: u64,
}

fn first_secs<S: serde::Serializer>(t: &h2ledger_tcp::Nanos, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(*t as f64 / 1e9)
}

impl ConnLedger {
    /// Every call made on the connection: `calls` plus the upgraded request.
    pub fn all_calls(&self) -> u64 {
        self.calls + self.upgraded_calls
    }
}

/// The ledger over a whole capture (or one phase of it). The keys `connections`, `calls`,
/// `sides` (with `frames`, `bdp_pings`, `writes`, `bytes` per side) and `warnings` are a public
/// contract.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LedgerReport {
    /// Warnings counted by kind (gaps, malformed frames, HPACK errors, ...).
    pub anomalies: BTreeMap<String, u64>,
    /// Calls: the client's HEADERS frames (one request header block per stream).
    pub calls: u64,
    /// HTTP/2 connections (TCP connections without HTTP/2 are not counted).
    pub connections: u64,
    /// The first [`MAX_CONN_DETAIL`] connections (those that closed first, then open ones), by
    /// id; later ones are counted in the totals only.
    pub per_connection: Vec<ConnLedger>,
    /// HTTP/2 connections counted in the totals but not listed in `per_connection`.
    pub per_connection_omitted: u64,
    /// The ledger per side: frames, BDP pings, PING labels, writes, bytes, TLS records.
    pub sides: Sides<SideTally>,
    /// Requests sent as HTTP/1.1 and answered on stream 1 after an h2c upgrade: calls that
    /// `calls` (request HEADERS frames) does not count.
    pub upgraded_calls: u64,
    /// The first warnings as text ([`crate::ledger::MAX_WARNINGS`]); `anomalies` counts them all.
    pub warnings: Vec<String>,
    /// The first packets of the TCP connections not in `per_connection` (a whole capture's
    /// report; the JSON's `unlisted_first`): what a merge numbers connections by.
    #[serde(skip)]
    pub unlisted_first: Unlisted,
}

/// The first packets of a run's TCP connections that its report does not list (other
/// protocols' connections, HTTP/2 ones beyond [`MAX_CONN_DETAIL`]), in the order of their
/// numbers: with them a merge numbers every connection as one run of all the parts would
/// (decision 447).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Unlisted {
    /// Not said (a phase, a live view, a report of h2ledger before decision 447): taken as
    /// none.
    #[default]
    NotGiven,
    /// All of them (none: every connection is listed).
    Known(Vec<h2ledger_tcp::Nanos>),
    /// The run had more connections than [`crate::ledger::MAX_NUMBERED`]: a merge numbers
    /// by the listed connections only (a lower bound).
    Unknown,
}

impl Unlisted {
    /// The connections' first packets, when known (`NotGiven`: none).
    pub fn known(&self) -> Option<&[h2ledger_tcp::Nanos]> {
        match self {
            Unlisted::NotGiven => Some(&[]),
            Unlisted::Known(v) => Some(v),
            Unlisted::Unknown => None,
        }
    }
}

impl LedgerReport {
    /// Every call a user made: `calls` (request HEADERS frames, tshark's count) plus the
    /// requests upgraded from HTTP/1.1. The tables show this one.
    pub fn all_calls(&self) -> u64 {
        self.calls + self.upgraded_calls
    }

    /// The counts of this report beyond `before`, an earlier report of the same running
    /// capture (the live view's last period): connections as they are now, warnings none.
    pub fn since(&self, before: &LedgerReport) -> LedgerReport {
        LedgerReport {
            connections: self.connections,
            calls: self.calls.saturating_sub(before.calls),
            upgraded_calls: self.upgraded_calls.saturating_sub(before.upgraded_calls),
            sides: Sides {
                client: self.sides.client.since(&before.sides.client),
                server: self.sides.server.since(&before.sides.server),
            },
            ..LedgerReport::default()
        }
    }

    /// Builds the report from `tally`: its closed HTTP/2 connections, and those among the open
    /// connections `conns` (from [`crate::Ledger::connections`]) that it holds counts of.
    pub fn build(conns: &[ConnSummary], tally: &Tally) -> LedgerReport {
        let mut r = LedgerReport {
            connections: tally.closed_conns,
            calls: tally.closed_calls,
            upgraded_calls: tally.closed_upgraded,
            sides: tally.closed.clone(),
            per_connection: tally.detail.clone(),
            per_connection_omitted: tally.detail_omitted,
            ..LedgerReport::default()
        };
        for c in conns.iter().filter(|c| c.http2 && tally.has(c)) {
            let l = conn_ledger(c, tally);
            r.connections += u64::from(!c.continued_counted);
            r.calls += l.calls;
            r.upgraded_calls += l.upgraded_calls;
            r.sides.client.merge(&l.sides.client);
            r.sides.server.merge(&l.sides.server);
            if c.continued_counted {
                // Counted under the connection it continues.
            } else if r.per_connection.len() < tally.cap() {
                r.per_connection.push(l);
            } else {
                r.per_connection_omitted += 1;
                if tally.detail_cap.is_some() {
                    keep_lowest(&mut r.per_connection, l);
                }
            }
        }
        r.per_connection.sort_by_key(|c| c.id);
        r
    }
}

/// "ip:port", "[ip6]:port".
fn fmt_addr(a: &std::net::SocketAddr) -> String {
    a.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_period_is_what_came_since_the_previous_tick() {
        let mut before = LedgerReport {
            calls: 10,
            connections: 1,
            ..LedgerReport::default()
        };
        before.sides.client.frames.add(FrameClass::Headers, 10);
        before.sides.client.ping_labels.insert("grpc-go-bdp", 4);
        let mut now = before.clone();
        // Nothing happened: the last period is empty, not the last busy one.
        let l = now.since(&before);
        assert_eq!((l.calls, l.sides.client.frames.total()), (0, 0));
        assert!(l.sides.client.ping_labels.is_empty());
        now.calls = 13;
        now.sides.client.frames.add(FrameClass::Headers, 3);
        now.sides.client.writes = 3;
        let l = now.since(&before);
        assert_eq!(l.calls, 3);
        assert_eq!(l.sides.client.frames.total(), 3);
        assert_eq!(l.sides.client.writes, 3);
    }
}
