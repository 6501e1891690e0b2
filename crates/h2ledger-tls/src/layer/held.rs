//! Held records: protected records whose key is not known yet (a client's records before the
//! ServerHello of a reordered capture; live, records waiting for the key log to catch up)
//! are kept whole, in order, bounded per direction and over all connections
//! ([`Config::max_held_bytes_per_dir`], [`Config::max_held_bytes_total`]); a direction that
//! would pass a bound is given up, said in a warning and counted.
//!
//! [`Config::max_held_bytes_per_dir`]: crate::Config::max_held_bytes_per_dir
//! [`Config::max_held_bytes_total`]: crate::Config::max_held_bytes_total

use std::collections::VecDeque;

use h2ledger_tcp::{Dir, Write};

use super::state::{Event, KeyEvent};
use super::tls::Tls;
use crate::wire::RECORD_HEADER_LEN;

impl Tls {
    /// Keeps record `rec` of `dir` (completed by write `w`) until its keys are known.
    /// `replay`: a held record released and still not decryptable, kept again in order (the
    /// bounds counted it already).
    pub(crate) fn hold(&mut self, id: u32, dir: Dir, w: &Write, rec: &[u8], replay: bool) {
        let max = self.cfg.max_held_bytes_per_dir;
        let room = self
            .cfg
            .max_held_bytes_total
            .saturating_sub(self.held_total);
        let Some(t) = self.conns.tls_mut(id) else {
            return;
        };
        if let Some(since) = t.keys.waiting_since() {
            if w.ts.saturating_sub(since) > self.cfg.key_wait {
                self.give_up_waiting(id);
                let t = self.conns.tls_mut(id).expect("exists");
                t.dirs.get_mut(dir).encrypted += (rec.len() - RECORD_HEADER_LEN) as u64;
                return;
            }
        }
        let d = t.dirs.get_mut(dir);
        if replay || (d.held.bytes() + rec.len() <= max && rec.len() <= room) {
            d.held.push(*w, rec);
            self.held_total += rec.len();
            return;
        }
        d.state.on(Event::Stop);
        let (dropped, held) = d.held.drop_all();
        d.encrypted += (dropped + rec.len() - RECORD_HEADER_LEN) as u64;
        self.held_total -= held;
        self.report.held_limit_hits += 1;
        let what = if rec.len() > room {
            format!(
                "{} bytes of TLS records held in all connections together",
                self.cfg.max_held_bytes_total
            )
        } else {
            format!("{max} bytes of TLS records held")
        };
        let msg = format!(
            "{}: {what} while waiting for their key; this direction's are dropped \
             undecrypted and it is given up",
            self.conns.label(id)
        );
        self.warnings.push("tls-held-limit", msg);
    }

    /// Takes `dir`'s held records out, to process them again (keys or the ServerHello
    /// arrived).
    pub(crate) fn take_held(&mut self, id: u32, dir: Dir) -> VecDeque<(Write, Vec<u8>)> {
        let Some(t) = self.conns.tls_mut(id) else {
            return VecDeque::new();
        };
        let (held, bytes) = t.dirs.get_mut(dir).held.take();
        self.held_total -= bytes;
        held
    }

    /// Stops waiting for connection `id`'s keys: its held records are dropped, counted as
    /// not decrypted.
    pub(crate) fn give_up_waiting(&mut self, id: u32) {
        let Some(t) = self.conns.tls_mut(id) else {
            return;
        };
        t.key_event(KeyEvent::GiveUp, &mut self.waiting);
        for d in t.dirs.iter_mut() {
            let (dropped, held) = d.held.drop_all();
            d.encrypted += dropped as u64;
            self.held_total -= held;
        }
    }
}
