//! PING round trips and BDP rounds: a PING matched to its ACK, and the calls whose DATA a BDP
//! round followed.

use super::*;
use crate::PingFact;

/// The BDP PINGs that the latest DATA received before them names, not the first since the last
/// round (`KnownPing::label`s): hyper's, through h2's user ping (decision 472).
const LATEST_DATA_PINGS: &[&str] = &["h2-user"];

impl Analysis {
    pub(super) fn close_round(&mut self, conn: u32, dir: Dir, r: Round, acked: bool) {
        let n = r.streams.len();
        self.acc(conn, dir, r.ts, |a| {
            a.rounds += 1;
            a.rounds_acked += u64::from(acked);
            a.round_calls += n as u64;
            bump(&mut a.calls_per_round, n);
        });
        let mut s = r.streams;
        s.clear();
        if self.round_pool.len() < 64 {
            self.round_pool.push(s);
        }
    }

    /// A PING or its ACK, matched by the connection model ([`FrameEvent::ping`]).
    pub(super) fn on_ping(&mut self, ev: &FrameEvent<'_>, payload: [u8; 8], ack: bool) {
        let conn = ev.conn.0;
        let d = ev.dir;
        let known = ping::classify(&payload);
        if !ack {
            self.acc(conn, d, ev.ts, |a| a.pings_sent += 1);
            if known.is_some_and(|k| k.bdp) {
                let ds = &mut self.conn(ev.conn).dirs[d];
                let prev = ds.round.take();
                let (first, latest) = (ds.candidate.take(), ds.latest.take());
                // hyper's BDP PING goes out on the first DATA after its ping delay (hyper
                // src/proto/h2/ping.rs, `Recorder::record_data`, `next_bdp_at`): the latest
                // DATA names it, and the DATA before it is not in the round. grpc-go's (and
                // grpc-java's) goes out on the first DATA while none is outstanding (grpc-go
                // internal/transport/bdp_estimator.go `add`): the first DATA names it, and the
                // streams whose DATA came since are in the round. Either only within
                // RECENT_NS of that DATA (decision 472).
                let on_latest = known.is_some_and(|k| LATEST_DATA_PINGS.contains(&k.label));
                // The latest DATA is followed from this direction's first such PING on, which
                // followed its first DATA (hyper's delay starts at the connection's start).
                ds.on_latest |= on_latest;
                let named =
                    if on_latest { latest.or(first) } else { first }.filter(|c| !c.stale(ev.ts));
                if on_latest || named.is_none() {
                    ds.waiting.clear();
                }
                for c in [first, latest].into_iter().flatten() {
                    if let Some(q) = c.call.filter(|&q| named.is_none_or(|n| n.call != Some(q))) {
                        self.unpin(q);
                    }
                }
                let cand = named.map(|c| (c.stream, c.call));
                let mut streams = self.round_pool.pop().unwrap_or_default();
                if let Some((s, seq)) = cand {
                    streams.insert(s);
                    streams.extend(self.conn(ev.conn).dirs[d].waiting.drain());
                    if let Some(call) = seq.and_then(|q| self.calls.get_id_mut(q)) {
                        let call = &mut call.rec;
                        call.flags |= if ev.dir == call.req_dir() {
                            F_OPENED_CLIENT_ROUND
                        } else {
                            F_OPENED_SERVER_ROUND
                        };
                    }
                    if let Some(q) = seq {
                        self.unpin(q);
                    }
                }
                self.conn(ev.conn).dirs[d].round = Some(Round {
                    ts: ev.ts,
                    payload,
                    streams,
                });
                if let Some(r) = prev {
                    self.close_round(conn, d, r, false);
                }
            }
            return;
        }
        // An ACK from `d` answers a PING sent by the other direction.
        let p = d.other();
        match ev.ping {
            PingFact::Acked { sent: ts } => {
                let label = known
                    .and_then(|k| ping::KNOWN_PINGS.iter().position(|x| x.label == k.label))
                    .map(|i| i as u8)
                    .unwrap_or(OTHER_LABEL);
                let ds = &mut self.conn(ev.conn).dirs[p];
                let round = match &ds.round {
                    Some(r) if r.payload == payload && r.ts <= ts => ds.round.take(),
                    _ => None,
                };
                let rtt = ev.ts - ts;
                self.scoped(ts, |s, _| {
                    s.rtt.record(rtt);
                    s.rtt_by_label.entry(label).or_default().record(rtt);
                });
                self.acc(conn, p, ts, |a| a.pings_acked += 1);
                if let Some(v) = &mut self.rtts {
                    if v.len() < MAX_KEPT_RTTS {
                        v.push((ev.side.other(), rtt));
                    } else {
                        self.rtts_dropped += 1;
                    }
                }
                if let Some(r) = round {
                    self.close_round(conn, p, r, true);
                }
            }
            _ => self.acc(conn, d, ev.ts, |a| a.acks_unmatched += 1),
        }
    }
}
