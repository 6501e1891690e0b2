//! The secrets of several attached processes as one feed ([`Feed`]): the lines each probe
//! delivered, a repeat from another process dropped (two `--keys-from` processes at both ends
//! of one connection each give its secrets), split three ways: for the session that decrypts
//! ([`Feed::take_for_session`]), for a pcapng file's next Decryption Secrets Block
//! ([`Feed::take_for_save`]) and, appended as they come, for a key log writer (`--keys-out`).
//!
//! Bounded: the repeat filter remembers the last [`RECENT_LINES`] lines; the two pending texts
//! hold what arrived since their reader last took them (the capture and the session take them
//! at every packet).
//!
//! Read by one capture or by several at once ([`Broadcast`], [`Tap`]): `sniff --workers N`'s
//! workers each get every line, for their session and their `-w` file, since which worker a
//! connection's packets go to is the kernel's flow hash and a secret does not say its
//! connection (decision 417). The lines not yet taken by every reader are kept, at most
//! [`BROADCAST_LINES`]; a reader that fell further behind misses the oldest, counted and said
//! at the end.
#![forbid(unsafe_code)]

use std::collections::{HashSet, VecDeque};
use std::io::{self, Write};
use std::sync::{Arc, Mutex};

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
    out: Option<Box<dyn Write + Send>>,
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
    pub fn new(sources: Vec<KeySource>, out: Option<Box<dyn Write + Send>>) -> Feed {
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

/// A [`Feed`] of attached processes and the `--keys-out` file its lines are appended to (a
/// failed write there is an error at the end, naming the file).
#[derive(Debug)]
pub struct KeyFeed {
    feed: Feed,
    /// `--keys-out FILE`, opened (append, created 0600) before privileges are dropped.
    out: Option<std::path::PathBuf>,
}

impl std::ops::Deref for KeyFeed {
    type Target = Feed;
    fn deref(&self) -> &Feed {
        &self.feed
    }
}

impl std::ops::DerefMut for KeyFeed {
    fn deref_mut(&mut self) -> &mut Feed {
        &mut self.feed
    }
}

impl KeyFeed {
    /// Attaches to every process of `pids`, once each, and puts a probe on each of `libs` for
    /// every process that maps it (`--keys-from-lib`): root or CAP_SYS_ADMIN, plus
    /// CAP_SYS_PTRACE for another user's process, so before privileges are dropped. Opens
    /// `keys_out`. `attached` hears each attachment (what, and the milliseconds it took);
    /// `denied` is added to an error the kernel gave for want of privileges (how to get them).
    /// The error is one line.
    pub fn attach_all(
        pids: &[u32],
        libs: &[std::path::PathBuf],
        keys_out: Option<&std::path::Path>,
        denied: &str,
        mut attached: impl FnMut(&crate::AttachInfo, u128),
    ) -> Result<KeyFeed, String> {
        let mut sources = Vec::new();
        let mut done = Vec::new();
        let targets = pids
            .iter()
            .map(|&p| (Some(p), None))
            .chain(libs.iter().map(|l| (None, Some(l))));
        for (pid, lib) in targets {
            if let Some(pid) = pid {
                if done.contains(&pid) {
                    continue;
                }
                done.push(pid);
            }
            let t = std::time::Instant::now();
            let k = match (pid, lib) {
                (Some(pid), _) => KeySource::attach(pid),
                (None, Some(lib)) => KeySource::attach_file(lib),
                (None, None) => continue,
            }
            .map_err(|e| {
                let refused = match &e {
                    crate::AttachError::Kernel { source, .. } => {
                        matches!(source.raw_os_error(), Some(1 | 13))
                    }
                    _ => false,
                };
                if refused {
                    format!("{e}. {denied}")
                } else {
                    e.to_string()
                }
            })?;
            attached(k.attached(), t.elapsed().as_millis());
            sources.push(k);
        }
        let file: Option<Box<dyn Write + Send>> = match keys_out {
            Some(path) => {
                use std::os::unix::fs::OpenOptionsExt as _;
                let file = std::fs::OpenOptions::new()
                    .append(true)
                    .create(true)
                    .mode(0o600)
                    .open(path)
                    .map_err(|e| {
                        format!(
                            "{}: cannot write the keys (--keys-out): {e}",
                            path.display()
                        )
                    })?;
                Some(Box::new(file))
            }
            None => None,
        };
        Ok(KeyFeed {
            feed: Feed::new(sources, file),
            out: keys_out.map(std::path::Path::to_path_buf),
        })
    }

    /// After the capture: the feed's warnings, and a failed `--keys-out` write as an error
    /// naming the file.
    pub fn finish(&mut self) -> (Vec<String>, Result<(), String>) {
        let (warnings, error) = self.feed.finish();
        let result = match (error, &self.out) {
            (Some(e), Some(path)) => Err(format!(
                "{}: cannot write the keys (--keys-out): {e}; the file misses some",
                path.display()
            )),
            _ => Ok(()),
        };
        (warnings, result)
    }
}

/// Lines a [`Broadcast`] keeps for the readers that have not taken them yet (about 180 bytes
/// each: 12 MiB at most; 13,000 TLS 1.3 handshakes of 5 lines). A reader falls this far behind
/// only when that many secrets came while none of its connections waited for a key (its
/// session takes the lines when one does, its capture at every packet).
pub const BROADCAST_LINES: usize = 65_536;

/// A [`KeyFeed`] read by several captures at once, each through its [`Tap`]: each reader gets
/// every line, once for its session and once for its `-w` file. See the module docs.
#[derive(Debug)]
pub struct Broadcast {
    hub: Mutex<Hub>,
}

#[derive(Debug)]
struct Hub {
    feed: KeyFeed,
    /// The lines drained and not yet taken by every reader: line `first + i` is `lines[i]`.
    lines: VecDeque<String>,
    first: u64,
    /// Per reader: the next line its session takes, and its `-w` file.
    next: Vec<[u64; 2]>,
    /// Per reader: lines dropped (past [`BROADCAST_LINES`]) before its session took them.
    missed: Vec<u64>,
}

/// Which of a reader's two cursors.
const SESSION: usize = 0;
const SAVE: usize = 1;

impl Hub {
    fn drain(&mut self) {
        self.feed.drain();
        // The hub's own lines serve the session and the save: the feed's texts are emptied.
        let _ = self.feed.take_for_save();
        if let Some(text) = self.feed.take_for_session() {
            self.lines.extend(text.lines().map(str::to_owned));
        }
        while self.lines.len() > BROADCAST_LINES {
            self.lines.pop_front();
            self.first += 1;
        }
    }

    /// The lines reader `k` has not taken for `which`, taken.
    fn take(&mut self, k: usize, which: usize) -> String {
        let Some(next) = self.next.get_mut(k) else {
            return String::new();
        };
        let at = &mut next[which];
        if *at < self.first {
            if which == SESSION {
                self.missed[k] += self.first - *at;
            }
            *at = self.first;
        }
        let from = (*at - self.first) as usize;
        let mut text = String::new();
        for l in self.lines.range(from..) {
            text.push_str(l);
            text.push('\n');
        }
        *at = self.first + self.lines.len() as u64;
        // What every reader took is let go.
        let least = self.next.iter().flatten().copied().min().unwrap_or(0);
        while self.first < least && self.lines.pop_front().is_some() {
            self.first += 1;
        }
        text
    }
}

impl Broadcast {
    /// `feed` for `readers` captures ([`Broadcast::tap`] each).
    pub fn new(feed: KeyFeed, readers: usize) -> Arc<Broadcast> {
        let n = readers.max(1);
        Arc::new(Broadcast {
            hub: Mutex::new(Hub {
                feed,
                lines: VecDeque::new(),
                first: 0,
                next: vec![[0, 0]; n],
                missed: vec![0; n],
            }),
        })
    }

    fn hub(&self) -> std::sync::MutexGuard<'_, Hub> {
        self.hub.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reader `k`'s tap (`k` below the readers given to [`Broadcast::new`]).
    pub fn tap(self: &Arc<Self>, k: usize) -> Tap {
        Tap {
            hub: Arc::clone(self),
            k,
        }
    }

    /// The processes, for warnings ([`Feed::describe`]).
    pub fn describe(&self) -> String {
        self.hub().feed.describe()
    }

    /// Distinct key lines delivered.
    pub fn lines(&self) -> u64 {
        self.hub().feed.lines
    }

    /// After every capture ended: [`KeyFeed::finish`]'s warnings and error, with a warning per
    /// reader that missed lines.
    pub fn finish(&self) -> (Vec<String>, Result<(), String>) {
        let mut hub = self.hub();
        let (mut warnings, result) = hub.feed.finish();
        let n = hub.missed.len();
        for (k, &m) in hub.missed.iter().enumerate() {
            if m > 0 {
                let who = if n > 1 {
                    format!("worker {k}")
                } else {
                    "the session".to_string()
                };
                warnings.push(format!(
                    "--keys-from: {m} secret lines were let go before {who} read them (at most \
                     {BROADCAST_LINES} wait; decision 417): a connection of its that needed \
                     one is counted as without its key"
                ));
            }
        }
        (warnings, result)
    }
}

/// One reader of a [`Broadcast`]: the calls of a [`Feed`] that one capture makes.
#[derive(Debug)]
pub struct Tap {
    hub: Arc<Broadcast>,
    k: usize,
}

impl Tap {
    /// A feed read by one capture alone.
    pub fn single(feed: KeyFeed) -> Tap {
        Broadcast::new(feed, 1).tap(0)
    }

    /// [`Feed::drain`]: what the probes delivered, into every reader's lines.
    pub fn drain(&mut self) {
        self.hub.hub().drain();
    }

    /// The lines this reader's session has not taken yet (`None`: none).
    pub fn take_for_session(&mut self) -> Option<String> {
        let t = self.hub.hub().take(self.k, SESSION);
        (!t.is_empty()).then_some(t)
    }

    /// The lines not yet written into this reader's `-w` file.
    pub fn take_for_save(&mut self) -> String {
        self.hub.hub().take(self.k, SAVE)
    }

    /// See [`Broadcast::describe`].
    pub fn describe(&self) -> String {
        self.hub.describe()
    }

    /// See [`Broadcast::finish`]: called once, by one reader.
    pub fn finish(&mut self) -> (Vec<String>, Result<(), String>) {
        self.hub.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn empty() -> KeyFeed {
        KeyFeed {
            feed: Feed::new(Vec::new(), None),
            out: None,
        }
    }

    /// Lines as the probes would deliver them (the feed's session text).
    fn deliver(b: &Broadcast, lines: &[String]) {
        let mut hub = b.hub();
        for l in lines {
            hub.feed.for_session.push_str(l);
            hub.feed.for_session.push('\n');
        }
        hub.drain();
    }

    fn line(i: usize) -> String {
        format!("CLIENT_RANDOM {i:064x} {:096x}", 0)
    }

    #[test]
    fn every_reader_gets_every_line_once() {
        let b = Broadcast::new(empty(), 2);
        let (mut t0, mut t1) = (b.tap(0), b.tap(1));
        deliver(&b, &[line(1), line(2)]);
        assert_eq!(
            t0.take_for_session(),
            Some(format!("{}\n{}\n", line(1), line(2)))
        );
        deliver(&b, &[line(3)]);
        assert_eq!(t0.take_for_session(), Some(format!("{}\n", line(3))));
        assert_eq!(t0.take_for_session(), None);
        assert_eq!(
            t1.take_for_session(),
            Some(format!("{}\n{}\n{}\n", line(1), line(2), line(3)))
        );
        // Each -w file gets every line too.
        assert_eq!(t1.take_for_save().lines().count(), 3);
        assert_eq!(t0.take_for_save().lines().count(), 3);
        // Taken by every reader for both: let go.
        assert!(b.hub().lines.is_empty());
        assert_eq!(b.finish().0, Vec::<String>::new());
    }

    #[test]
    fn a_reader_far_behind_misses_the_oldest_counted() {
        let b = Broadcast::new(empty(), 2);
        let (mut t0, mut t1) = (b.tap(0), b.tap(1));
        let n = BROADCAST_LINES + 10;
        for i in 0..n {
            deliver(&b, &[line(i)]);
            // Reader 0 keeps up; reader 1 never takes its lines.
            assert!(t0.take_for_session().is_some());
            t0.take_for_save();
        }
        assert_eq!(b.hub().lines.len(), BROADCAST_LINES);
        let got = t1.take_for_session().unwrap();
        assert_eq!(got.lines().count(), BROADCAST_LINES);
        assert_eq!(got.lines().next(), Some(line(10).as_str()));
        let (warnings, _) = b.finish();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("10 secret lines were let go before worker 1"),
            "{warnings:?}"
        );
    }
}
