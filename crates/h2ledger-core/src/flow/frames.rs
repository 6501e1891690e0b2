//! What each frame does to the windows: DATA, WINDOW_UPDATE, SETTINGS and its ACK, resets
//! and ends of streams; stalls begin and end here.

use super::*;

impl Flow {
    /// One frame; `phase` is the phase of `ev.ts`, `call` the call index of the frame's stream.
    /// One lookup of the connection, and for a frame on a stream one of the stream.
    #[inline]
    pub(crate) fn frame(&mut self, ev: &FrameEvent<'_>, phase: Option<u64>, call: Option<u64>) {
        if self.off {
            return;
        }
        let Some(c) = self.conns.get_mut(ev.conn.0) else {
            return;
        };
        let d = ev.dir;
        c.side[d] = ev.side;
        c.side[d.other()] = ev.side.other();
        if ev.late_start && c.known {
            self.make_unknown(ev.conn.0, phase);
            return;
        }
        if !c.known {
            if !c.counted {
                c.counted = true;
                for s in scope_mut(&mut self.whole, &mut self.phases, phase)
                    .into_iter()
                    .flatten()
                {
                    s.unknown += 1;
                }
            }
            return;
        }
        if let Some(p) = phase {
            // The connection's first frame in this phase: its windows as they are count in
            // this phase's largest and in those since its last frame (unchanged there).
            if c.folded != Some(p) {
                carry(c, &mut self.phases, p);
            }
        }
        if !c.seen_frame {
            c.seen_frame = true;
            for s in scope_mut(&mut self.whole, &mut self.phases, phase)
                .into_iter()
                .flatten()
            {
                for a in s.sides.iter_mut() {
                    a.max_conn = a.max_conn.max(DEFAULT_WINDOW);
                }
            }
        }
        let sid = ev.head.stream_id.0;
        match ev.class {
            FrameClass::Data | FrameClass::Headers | FrameClass::Trailers => stream_frame(
                c,
                Parts {
                    series: &mut self.series,
                    streams: &mut self.streams,
                    whole: &mut self.whole,
                    phases: &mut self.phases,
                    calls: &mut self.calls,
                    no_max_window: self.no_max_window,
                    events: &mut self.events,
                },
                ev,
                phase,
                call,
            ),
            // The stream is closed at its RST_STREAM as the ledger's step says (a reset of an
            // idle or closed stream, or of stream 0, frees nothing: not held).
            FrameClass::RstStream
                if matches!(ev.stream, StreamStep::Reset { .. } | StreamStep::Refused) =>
            {
                self.free_stream(ev.conn.0, sid)
            }
            FrameClass::WindowUpdate => {
                if let Some(Frame::WindowUpdate(w)) = ev.frame {
                    self.on_window_update(ev, d.other(), w.increment, phase);
                }
                // A WINDOW_UPDATE that did not load (increment 0, bad length) changes nothing:
                // the peer treats it as an error.
            }
            FrameClass::Settings => match ev.frame {
                Some(Frame::Settings(s)) => {
                    let v = s.get(SettingId::INITIAL_WINDOW_SIZE);
                    let Some(c) = self.conns.get_mut(ev.conn.0) else {
                        return;
                    };
                    let q = &mut c.sides[d.other()].pending;
                    if q.len() >= MAX_PENDING_SETTINGS {
                        self.make_unknown(ev.conn.0, phase);
                    } else {
                        q.push_back(v);
                    }
                }
                _ => self.make_unknown(ev.conn.0, phase),
            },
            FrameClass::SettingsAck => self.on_settings_ack(ev, d, phase),
            _ => {}
        }
    }

    fn on_window_update(&mut self, ev: &FrameEvent<'_>, s: Dir, inc: u32, phase: Option<u64>) {
        let conn = ev.conn.0;
        let sid = ev.head.stream_id.0;
        let Some(c) = self.conns.get_mut(conn) else {
            return;
        };
        let side = c.side[s];
        let sf = &mut c.sides[s];
        let inc = i64::from(inc);
        if sid == 0 {
            sf.conn_window += inc;
            let w = sf.conn_window;
            self.acc(phase, |x| {
                let a = &mut x.sides[side];
                a.max_conn = a.max_conn.max(w);
            });
            self.resolve(conn, s, ev.ts);
            self.sample(conn, s, None, ev.ts, false);
            return;
        }
        let Some(st) = c.streams.get_mut(sid) else {
            return;
        };
        let new = shift(sf, st, s, sid, inc, self.no_max_window);
        let w = sf.initial + new;
        compact(sf, &c.streams, s);
        self.acc(phase, |x| {
            let a = &mut x.sides[side];
            a.max_stream = a.max_stream.max(w);
        });
        self.resolve(conn, s, ev.ts);
        self.sample(conn, s, Some(sid), ev.ts, false);
    }

    fn on_settings_ack(&mut self, ev: &FrameEvent<'_>, d: Dir, phase: Option<u64>) {
        let conn = ev.conn.0;
        let Some(c) = self.conns.get_mut(conn) else {
            return;
        };
        let side = c.side[d];
        let sf = &mut c.sides[d];
        let Some(Some(v)) = sf.pending.pop_front() else {
            return;
        };
        let v = i64::from(v);
        let delta = v - sf.initial;
        sf.initial = v;
        if delta <= 0 {
            return;
        }
        if let Some(adj) = max_adj(sf, &c.streams, d) {
            let w = v + adj;
            self.acc(phase, |x| {
                let a = &mut x.sides[side];
                a.max_stream = a.max_stream.max(w);
            });
        }
        self.resolve(conn, d, ev.ts);
    }

    /// Ends the stalls of sending direction `s` whose available window is > 0 again.
    fn resolve(&mut self, conn: u32, s: Dir, ts: Nanos) {
        let Some(c) = self.conns.get_mut(conn) else {
            return;
        };
        let side = c.side[s];
        let sf = &mut c.sides[s];
        if sf.conn_window <= 0 {
            return;
        }
        // window = initial + adj > 0  <=>  adj > -initial
        let from = (-sf.initial).saturating_add(1);
        let done: Vec<((i64, u32), Stall)> = sf
            .stalled
            .range((from, 0)..)
            .map(|(&k, &v)| (k, v))
            .collect();
        for (key, stall) in done {
            sf.stalled.remove(&key);
            let Some(st) = c.streams.get_mut(key.1) else {
                continue;
            };
            if !std::mem::take(&mut st.stall[s]) {
                continue;
            }
            let dur = (ts - stall.start).max(0);
            if let Some(ev) = self.events.as_mut() {
                ev.push(FlowEvent::Resolved {
                    conn,
                    side,
                    stream: key.1,
                    start: stall.start,
                    end: ts,
                });
            }
            if let Some(c) = st.call.and_then(|i| self.calls.get_mut(&i)) {
                c.stalled_ns[side.index()] += dur;
            }
            for x in scope_mut(&mut self.whole, &mut self.phases, stall.phase)
                .into_iter()
                .flatten()
            {
                x.sides[side].stalled.add(dur as u64);
            }
        }
    }

    /// Drops a stream; its open stalls are unresolved.
    fn free_stream(&mut self, conn: u32, sid: u32) {
        let Some(c) = self.conns.get_mut(conn) else {
            return;
        };
        free_in(
            c,
            conn,
            sid,
            &mut self.streams,
            &mut self.whole,
            &mut self.phases,
            &mut self.events,
        );
    }

    pub(super) fn drop_streams(&mut self, conn: u32) {
        let mut ids: Vec<u32> = match self.conns.get(conn) {
            Some(c) => c.streams.keys().collect(),
            None => return,
        };
        // In id order: the table's own order depends on the process (decision 246).
        ids.sort_unstable();
        for sid in ids {
            self.free_stream(conn, sid);
        }
    }

    /// The windows of `conn` can no longer be followed (lost frames, unreadable SETTINGS).
    pub(super) fn make_unknown(&mut self, conn: u32, phase: Option<u64>) {
        self.drop_streams(conn);
        let Some(c) = self.conns.get_mut(conn) else {
            return;
        };
        if !c.known {
            return;
        }
        c.known = false;
        c.sides = Dirs::from_fn(|_| SideFlow::new());
        if !c.counted {
            c.counted = true;
            self.acc(phase, |s| s.unknown += 1);
        }
    }
}

/// The tracker's state beside its connections, borrowed with one connection's.
struct Parts<'a> {
    series: &'a mut Option<WindowSeries>,
    streams: &'a mut usize,
    whole: &'a mut Scope,
    phases: &'a mut Phased<Scope>,
    calls: &'a mut FastMap<u64, CallFlow>,
    no_max_window: bool,
    events: &'a mut Option<Vec<FlowEvent>>,
}

/// HEADERS, TRAILERS and DATA: the stream opened and given its call, DATA charged to the
/// windows (a stall begins when one is exhausted while the sender's half stays open), and the
/// stream dropped when it is over. When a stream opens, a half closes and the stream ends is the
/// ledger's word ([`FrameEvent::stream`], decision 433), not the frame's flags read again.
#[inline]
fn stream_frame(
    c: &mut ConnFlow,
    t: Parts<'_>,
    ev: &FrameEvent<'_>,
    phase: Option<u64>,
    call: Option<u64>,
) {
    let conn = ev.conn.0;
    let d = ev.dir;
    let sid = ev.head.stream_id.0;
    let data = ev.class == FrameClass::Data;
    let Parts {
        series,
        streams,
        whole,
        phases,
        calls,
        no_max_window,
        events,
    } = t;
    let len = i64::from(ev.head.length);
    if data {
        // DATA on any stream, closed or not followed, counts against the connection window
        // (RFC 9113 §6.9).
        c.sides[d].conn_window -= len;
    }
    let step = ev.stream;
    // The sender's first header block on a stream of an id not met yet: the stream opens here,
    // or is counted untracked when the ledger does not follow it (its table full).
    let new = ev.class == FrameClass::Headers && sid > c.max_id[(sid & 1) as usize];
    // A header block that opens nothing, brings no call and closes no half changes nothing
    // here (the response headers of most calls bring theirs): no lookup. The step is read
    // last, only for such blocks.
    if !data
        && !new
        && call.is_none()
        && !matches!(step, StreamStep::HalfClosed | StreamStep::Ended)
    {
        return;
    }
    let slot = match c.streams.find(sid) {
        Some(i) => i,
        // DATA never opens a stream: on an idle stream it is a connection error (RFC 9113
        // §5.1), and the ledger's step for it is no opening either.
        None if new => {
            let followed = matches!(step, StreamStep::Opened | StreamStep::HalfClosed);
            match open_in(
                c,
                streams,
                whole,
                phases,
                no_max_window,
                sid,
                phase,
                followed,
            ) {
                Some(i) => i,
                None => return,
            }
        }
        None => return,
    };
    let Some(st) = c.streams.slot_mut(slot) else {
        return;
    };
    if call.is_some() {
        st.call = call;
    }
    // The sender's half closed (on this frame or before) or the stream over: its DATA waits
    // for nothing, no stall begins.
    let done = step == StreamStep::Ended;
    if step == StreamStep::HalfClosed {
        st.ended[d] = true;
    }
    let mut started = false;
    if data {
        let side = c.side[d];
        let sf = &mut c.sides[d];
        st.sent[d] += len as u64;
        if c.busiest[d].is_none_or(|(b, n)| b == sid || st.sent[d] > n) {
            c.busiest[d] = Some((sid, st.sent[d]));
        }
        let new = shift(sf, st, d, sid, -len, no_max_window);
        let stream_w = sf.initial + new;
        let conn_w = sf.conn_window;
        if !done && !st.ended[d] && !st.stall[d] && stream_w.min(conn_w) <= 0 {
            let limit = match (stream_w <= 0, conn_w <= 0) {
                (true, true) => Limit::Both,
                (true, false) => Limit::Stream,
                _ => Limit::Connection,
            };
            st.stall[d] = true;
            sf.stalled.insert(
                (new, sid),
                Stall {
                    start: ev.ts,
                    phase,
                },
            );
            st.stalled_once[d] = true;
            started = true;
            if let Some(log) = events.as_mut() {
                log.push(FlowEvent::Stall {
                    conn,
                    side,
                    stream: sid,
                    ts: ev.ts,
                    limit,
                    initial: sf.initial,
                });
            }
            if let Some(i) = st.call {
                let cf = calls.entry(i).or_default();
                cf.stalls[side.index()] = cf.stalls[side.index()].saturating_add(1);
            }
            for s in scope_mut(whole, phases, phase).into_iter().flatten() {
                let a = &mut s.sides[side];
                a.stalls += 1;
                a.by_limit[limit as usize] += 1;
            }
        }
    }
    if data && series.is_some() {
        // The sample reads the stream, still open here.
        sample_in(series, conn, c, d, Some(sid), ev.ts, started);
        if done {
            free_in(c, conn, sid, streams, whole, phases, events);
        }
    } else if done {
        if st.stalled_once.fwd || st.stalled_once.rev {
            if let Some(st) = c.streams.remove_at(slot) {
                freed(c, conn, sid, &st, streams, whole, phases, events);
            }
        } else {
            // Never stalled (the common case): nothing to tell, nothing to move out.
            c.streams.discard_at(slot);
            *streams -= 1;
            if !no_max_window {
                for d in Dir::ALL {
                    compact(&mut c.sides[d], &c.streams, d);
                }
            }
        }
    }
}
