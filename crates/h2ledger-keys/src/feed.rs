//! The secrets of several attached processes as one feed ([`Feed`]): the lines each probe
//! delivered, a repeat from another process dropped (two `--keys-from` processes at both ends
//! of one connection each give its secrets), split three ways: for the session that decrypts
//! ([`Feed::take_for_session`]), for a pcapng file's next Decryption Secrets Block
//! ([`Feed::take_for_save`]) and, appended as they come, for a key log writer (`--keys-out`).
//!
//! Bounded: the repeat filter remembers the last [`RECENT_LINES`] lines; the two pending texts
//! hold what arrived since their reader last took them (the capture and the session take them
//! at every packet).
#![forbid(unsafe_code)]

use std::collections::{HashSet, VecDeque};
use std::io::{self, Write};

use crate::{KeySource, RING_SIZE};

/// Lines remembered to drop a repeat from another process.
pub const RECENT_LINES: usize = 4096;

/// The secrets of the attached processes. See the module docs.
pub struct Feed {
    sources: Vec<KeySource>,
    /// Lines the session has not taken yet.
    for_session: String,
    /// Lines not yet written into the `-w` file (as a Decryption Secrets Block).
    for_save: String,
    /// Where every new line is appended, and the first error writing there.
    out: Option<Box<dyn Write>>,
    out_error: Option<io::Error>,
    recent: HashSet<String>,
    recent_order: VecDeque<String>,
    /// Distinct key lines delivered.
    pub lines: u64,
}

impl std::fmt::Debug for Feed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Feed")
            .field("sources", &self.sources)
            .field("lines", &self.lines)
            .finish_non_exhaustive()
    }
}

impl Feed {
    /// A feed of `sources` (attached by the caller, while it may still be root); every new
    /// line is also appended to `out`.
    pub fn new(sources: Vec<KeySource>, out: Option<Box<dyn Write>>) -> Feed {
        Feed {
            sources,
            for_session: String::new(),
            for_save: String::new(),
            out,
            out_error: None,
            recent: HashSet::new(),
            recent_order: VecDeque::new(),
            lines: 0,
        }
    }

    /// The processes, for warnings: `pid 1234 (server)`, joined with `and`.
    pub fn describe(&self) -> String {
        let names: Vec<String> = self
            .sources
            .iter()
            .map(|k| {
                let a = k.attached();
                let exe = a.exe.file_name().map(|f| f.to_string_lossy().into_owned());
                match (a.pid, exe) {
                    (Some(p), Some(e)) => format!("pid {p} ({e})"),
                    (Some(p), None) => format!("pid {p}"),
                    (None, _) => a.exe.display().to_string(),
                }
            })
            .collect();
        names.join(" and ")
    }

    /// Takes what the probes delivered since the last call: into the session's and the save's
    /// text, and the key log writer. Never blocks.
    pub fn drain(&mut self) {
        let mut new = String::new();
        for k in &mut self.sources {
            for line in k.poll() {
                let line = line.to_string();
                if self.recent.contains(&line) {
                    continue;
                }
                if self.recent_order.len() == RECENT_LINES {
                    if let Some(old) = self.recent_order.pop_front() {
                        self.recent.remove(&old);
                    }
                }
                self.recent.insert(line.clone());
                new.push_str(&line);
                new.push('\n');
                self.recent_order.push_back(line);
                self.lines += 1;
            }
        }
        if new.is_empty() {
            return;
        }
        if let (Some(o), None) = (self.out.as_mut(), &self.out_error) {
            if let Err(e) = o.write_all(new.as_bytes()) {
                self.out_error = Some(e);
            }
        }
        self.for_save.push_str(&new);
        self.for_session.push_str(&new);
    }

    /// The lines the session has not taken yet (`None`: none).
    pub fn take_for_session(&mut self) -> Option<String> {
        (!self.for_session.is_empty()).then(|| std::mem::take(&mut self.for_session))
    }

    /// The lines not yet written into the `-w` file.
    pub fn take_for_save(&mut self) -> String {
        std::mem::take(&mut self.for_save)
    }

    /// After the capture: secrets the kernel could not hand over (a full ring buffer) and
    /// records that did not decode, as warnings (each naming its `--keys-from` process); and
    /// the first error writing the key log writer, or flushing it.
    pub fn finish(&mut self) -> (Vec<String>, Option<io::Error>) {
        self.drain();
        let mut warnings = Vec::new();
        for k in &self.sources {
            let s = k.stats();
            let who = match k.attached().pid {
                Some(p) => format!("--keys-from {p}"),
                None => "--keys-from".to_string(),
            };
            if s.ring_full > 0 {
                warnings.push(format!(
                    "{who}: {} secrets lost: the ring buffer ({} KiB) was full; connections \
                     they belong to are not decrypted",
                    s.ring_full,
                    RING_SIZE / 1024
                ));
            }
            let bad = s.decoded.bad_random + s.decoded.bad_secret + s.decoded.bad_label;
            if bad > 0 {
                warnings.push(format!(
                    "{who}: {bad} probe records did not hold a secret (client random, secret or \
                     label unreadable); docs/decisions.md #143"
                ));
            }
        }
        let error = self
            .out_error
            .take()
            .or_else(|| self.out.as_mut().and_then(|o| o.flush().err()));
        (warnings, error)
    }
}
