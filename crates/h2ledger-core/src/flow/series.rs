//! The window series behind `--plot`'s flow-control rows.

use h2ledger_tcp::{Dir, Nanos};

use super::state::ConnFlow;

/// Windows over time for `--plot`, per side of one connection (the first whose windows are
/// known to carry a stream frame), in fixed time buckets from `origin`: the connection window
/// and the available window on the busiest stream (the one that carried the most DATA of that
/// side so far, while it is open; otherwise the stream of the bucket's last DATA or stream
/// WINDOW_UPDATE), both
/// as left by the bucket's last frame that changed them (`None`: unchanged, carry the previous
/// value), and the stalls that began in the bucket. 40 bytes per side and bucket. Each stall's
/// own time is kept too (`stalls`, at most [`MAX_STALL_MARKS`] per side; beyond, counted in
/// `stalls_unmarked`), so that the plot draws every stall where it began, not at its bucket's
/// middle.
#[derive(Clone, Debug, Default)]
pub struct WindowSeries {
    /// Bucket width, nanoseconds.
    pub bucket: Nanos,
    /// Start of bucket 0: the first packet when known, else the first sample.
    pub origin: Option<Nanos>,
    /// The connection drawn: the first known one with a stream frame.
    pub conn: Option<u32>,
    /// `points[b][side]`.
    pub points: Vec<[WindowPoint; 2]>,
    /// Samples beyond the last bucket kept.
    pub(crate) refused: u64,
    /// The times stalls began, per side (index), in order: at most [`MAX_STALL_MARKS`].
    pub stalls: [Vec<Nanos>; 2],
    /// Stalls begun beyond [`MAX_STALL_MARKS`] per side (in `points`, not in `stalls`).
    pub stalls_unmarked: [u64; 2],
    /// Every sample per side while there are at most [`MAX_WINDOW_SAMPLES`]: (time, connection
    /// window, stream window); the plot draws them rather than the buckets while none was
    /// dropped (`samples_dropped`).
    pub samples: [Vec<(Nanos, i64, Option<i64>)>; 2],
    /// Samples beyond [`MAX_WINDOW_SAMPLES`] per side.
    pub samples_dropped: [u64; 2],
}

/// Window samples kept per side (24 bytes each) before the plot falls back to the 100 ms
/// buckets: a short capture's windows are drawn frame by frame.
pub const MAX_WINDOW_SAMPLES: usize = 20_000;

/// Stall times kept per side for the plot (8 bytes each): a plot is 1,200 pixels wide, and
/// the flow-stall captures have at most a few hundred stalls.
pub const MAX_STALL_MARKS: usize = 10_000;

/// (connection window, stream window, stalls begun) of one side in one bucket.
pub type WindowPoint = (Option<i64>, Option<i64>, u32);

impl WindowSeries {
    /// The bucket of `ts`; `None` beyond [`crate::phase::MAX_BUCKETS`] buckets from
    /// the origin (a clock jump costs nothing: those points are not drawn, `refused` counts them).
    fn at(&mut self, ts: Nanos) -> Option<&mut [WindowPoint; 2]> {
        let o = *self.origin.get_or_insert(ts);
        let b = crate::phase::bucket(ts, o, self.bucket) as usize;
        if b >= crate::phase::MAX_BUCKETS {
            self.refused += 1;
            return None;
        }
        if self.points.len() <= b {
            self.points.resize(b + 1, [(None, None, 0); 2]);
        }
        Some(&mut self.points[b])
    }
}

/// Records the windows of sending direction `d` of connection `conn` (`c`) after a frame at
/// `ts`, when a series is kept.
pub(super) fn sample_in(
    series: &mut Option<WindowSeries>,
    conn: u32,
    c: &ConnFlow,
    d: Dir,
    sid: Option<u32>,
    ts: Nanos,
    stall: bool,
) {
    let Some(series) = series.as_mut() else {
        return;
    };
    if series.conn.is_none() && sid.is_some() {
        series.conn = Some(conn);
    }
    if series.conn != Some(conn) {
        return;
    }
    let side = c.side[d];
    let sf = &c.sides[d];
    // The busiest stream's window while it is open, else the frame's stream.
    let sid = c.busiest[d]
        .map(|b| b.0)
        .filter(|&s| c.streams.contains_key(s))
        .or(sid);
    let stream = sid
        .and_then(|s| c.streams.get(s))
        .map(|st| (sf.initial + st.adj[d]).min(sf.conn_window));
    let i = side.index();
    if series.samples[i].len() < MAX_WINDOW_SAMPLES {
        series.samples[i].push((ts, sf.conn_window, stream));
    } else {
        series.samples_dropped[i] += 1;
    }
    if stall {
        if series.stalls[i].len() < MAX_STALL_MARKS {
            series.stalls[i].push(ts);
        } else {
            series.stalls_unmarked[i] += 1;
        }
    }
    let Some(p) = series.at(ts).map(|p| &mut p[side.index()]) else {
        return;
    };
    p.0 = Some(sf.conn_window);
    if stream.is_some() {
        p.1 = stream;
    }
    p.2 += u32::from(stall);
}
