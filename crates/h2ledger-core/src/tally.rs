//! Counting: the per-side frame ledger, writes and bytes, per connection, optionally within a
//! time window (one phase of a run).

use std::collections::BTreeMap;

use h2_frame_parser::{ping, Frame};
use h2ledger_tcp::{ConnId, ConnMeta, Dir, Nanos, Write};
use serde::Serialize;

use crate::ledger::{ConnSummary, FrameEvent, Observer};
use crate::model::{FrameClass, FrameCounts, Side};

/// One direction's counts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SideTally {
    pub frames: FrameCounts,
    /// PING frames (not ACKs) carrying grpc-go's BDP estimator payload.
    pub bdp_pings: u64,
    /// TCP segments carrying new payload (retransmissions excluded).
    pub writes: u64,
    /// Payload bytes of those writes.
    pub bytes: u64,
    /// PING frames (not ACKs) by the label of their payload (`other` when unknown).
    pub ping_labels: BTreeMap<&'static str, u64>,
    /// TLS records this side sent (0 on cleartext), counted in the write that completed them.
    pub tls_records: u64,
}

impl SideTally {
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
}

/// Counts per connection and direction, for events whose time falls in `[from, to)`.
#[derive(Debug, Default)]
pub struct Tally {
    conns: Vec<[SideTally; 2]>,
    window: Option<(Nanos, Nanos)>,
    frames: u64,
}

impl Tally {
    pub fn new() -> Self {
        Self::default()
    }

    /// Only events with `from <= time < to` are counted.
    pub fn window(from: Nanos, to: Nanos) -> Self {
        Tally {
            conns: Vec::new(),
            window: Some((from, to)),
            frames: 0,
        }
    }

    /// Frames counted so far, every connection and side.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    fn inside(&self, ts: Nanos) -> bool {
        match self.window {
            None => true,
            Some((a, b)) => ts >= a && ts < b,
        }
    }

    fn slot(&mut self, conn: ConnId, dir: Dir) -> &mut SideTally {
        let i = conn.0 as usize;
        if self.conns.len() <= i {
            self.conns.resize_with(i + 1, Default::default);
        }
        &mut self.conns[i][match dir {
            Dir::Fwd => 0,
            Dir::Rev => 1,
        }]
    }

    /// The counts of one connection's side.
    pub fn side(&self, c: &ConnSummary, side: Side) -> SideTally {
        let dir = match side {
            Side::Client => c.client_dir,
            Side::Server => match c.client_dir {
                Dir::Fwd => Dir::Rev,
                Dir::Rev => Dir::Fwd,
            },
        };
        self.conns
            .get(c.id.0 as usize)
            .map(|t| {
                t[match dir {
                    Dir::Fwd => 0,
                    Dir::Rev => 1,
                }]
                .clone()
            })
            .unwrap_or_default()
    }
}

impl Observer for Tally {
    fn wants_headers(&self) -> bool {
        false
    }

    fn open(&mut self, meta: &ConnMeta) {
        self.slot(meta.id, Dir::Fwd);
    }

    fn write(&mut self, conn: ConnId, dir: Dir, w: &Write) {
        if self.inside(w.ts) {
            let t = self.slot(conn, dir);
            t.writes += 1;
            t.bytes += u64::from(w.len);
        }
    }

    fn tls_record(&mut self, conn: ConnId, dir: Dir, w: &Write) {
        if self.inside(w.ts) {
            self.slot(conn, dir).tls_records += 1;
        }
    }

    fn frame(&mut self, ev: &FrameEvent<'_>) {
        if !self.inside(ev.ts) {
            return;
        }
        self.frames += 1;
        let t = self.slot(ev.conn, ev.dir);
        t.frames.add(ev.class, 1);
        if ev.class == FrameClass::Ping {
            if let Some(Frame::Ping(p)) = ev.frame {
                let known = ping::classify(&p.payload);
                if known.is_some_and(|k| k.payload == ping::GRPC_GO_BDP) {
                    t.bdp_pings += 1;
                }
                *t.ping_labels
                    .entry(known.map(|k| k.label).unwrap_or("other"))
                    .or_default() += 1;
            }
        }
    }
}

/// The two sides of a ledger.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Sides {
    pub client: SideTally,
    pub server: SideTally,
}

impl Sides {
    pub fn get(&self, s: Side) -> &SideTally {
        match s {
            Side::Client => &self.client,
            Side::Server => &self.server,
        }
    }
    fn get_mut(&mut self, s: Side) -> &mut SideTally {
        match s {
            Side::Client => &mut self.client,
            Side::Server => &mut self.server,
        }
    }
}

/// One connection's ledger.
#[derive(Clone, Debug, Serialize)]
pub struct ConnLedger {
    pub id: u32,
    pub client: String,
    pub server: String,
    /// How the client was told apart: syn, preface, odd-streams or ephemeral-port.
    pub client_by: &'static str,
    pub mid_stream: bool,
    pub calls: u64,
    pub sides: Sides,
}

/// The ledger over a whole capture (or one phase of it). The keys `connections`, `calls`,
/// `sides` (with `frames`, `bdp_pings`, `writes`, `bytes` per side) and `warnings` are a public
/// contract.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LedgerReport {
    pub connections: u64,
    pub calls: u64,
    pub sides: Sides,
    pub per_connection: Vec<ConnLedger>,
    pub warnings: Vec<String>,
    /// Warnings counted by kind (gaps, malformed frames, HPACK errors, ...).
    pub anomalies: BTreeMap<String, u64>,
}

impl LedgerReport {
    /// Builds the report of the HTTP/2 connections among `conns` from `tally`.
    pub fn build(conns: &[ConnSummary], tally: &Tally) -> LedgerReport {
        let mut r = LedgerReport::default();
        for c in conns.iter().filter(|c| c.http2) {
            let mut sides = Sides::default();
            for s in Side::ALL {
                *sides.get_mut(s) = tally.side(c, s);
            }
            let calls = sides.client.frames.get(FrameClass::Headers);
            r.connections += 1;
            r.calls += calls;
            r.sides.client.merge(&sides.client);
            r.sides.server.merge(&sides.server);
            r.per_connection.push(ConnLedger {
                id: c.id.0,
                client: fmt_addr(&c.client),
                server: fmt_addr(&c.server),
                client_by: c.client_by.name(),
                mid_stream: c.mid_stream,
                calls,
                sides,
            });
        }
        r
    }
}

/// "ip:port", "[ip6]:port".
pub fn fmt_addr(a: &std::net::SocketAddr) -> String {
    a.to_string()
}
