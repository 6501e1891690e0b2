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
        let file: Option<Box<dyn Write>> = match keys_out {
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
