//! What each TCP write carried: frames ended in it and calls they belong to, folded when the
//! write can get no more frames.

use super::*;

impl Analysis {
    pub(super) fn close_write(&mut self, conn: u32, dir: Dir, w: OpenWrite) {
        let calls = w.streams.len();
        let frames = w.frames as usize;
        self.acc(conn, dir, w.ts, |a| {
            a.writes += 1;
            a.bytes += u64::from(w.len);
            a.max_bytes = a.max_bytes.max(u64::from(w.len));
            if frames == 0 {
                a.without_frame_end += 1;
            } else {
                a.frames_in_writes += frames as u64;
                bump(&mut a.frames_per_write, frames);
                bump(&mut a.writes_by_calls, calls);
            }
        });
        let mut s = w.streams;
        s.clear();
        if self.pool.len() < 64 {
            self.pool.push(s);
        }
    }

    /// Closes a connection's open writes and rounds (rounds as unacknowledged).
    pub(super) fn close_pending(&mut self, conn: u32) {
        for dir in Dir::ALL {
            while let Some(w) = self
                .conns
                .get_mut(&conn)
                .and_then(|c| c.dirs[dir].open_writes.pop_front())
            {
                self.close_write(conn, dir, w);
            }
            if let Some(r) = self
                .conns
                .get_mut(&conn)
                .and_then(|c| c.dirs[dir].round.take())
            {
                self.close_round(conn, dir, r, false);
            }
        }
    }
}
