//! TLS keys for the pipeline: `--keylog FILE` (re-read while live when a connection waits
//! for its key), the key log a pcapng capture embeds in Decryption Secrets Blocks, and live,
//! the secrets of `--keys-from PID` processes ([`KeyFeed`], h2ledger-keys' uprobes).

use std::cell::RefCell;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use anyhow::{anyhow, bail, Result};
use h2ledger_keys::feed::Feed;
use h2ledger_keys::KeySource;
use h2ledger_tls::{scan_pcapng, Config, KeyLog, Tls};

use crate::cli::CaptureArgs;
use h2ledger_run::input::{compression_of, decoder, Forward};

/// A key log file that may grow (live): what was appended is read on [`KeyLogFile::poll`].
pub struct KeyLogFile {
    path: PathBuf,
    /// `None` until the application creates the file (live).
    file: Option<File>,
    read: u64,
}

impl KeyLogFile {
    /// The bytes appended since the last read, if any (a file that shrank is read again
    /// from the start).
    pub fn poll(&mut self) -> Option<String> {
        if self.file.is_none() {
            self.file = File::open(&self.path).ok();
        }
        let file = self.file.as_mut()?;
        let len = file.metadata().ok()?.len();
        if len == self.read {
            return None;
        }
        if len < self.read {
            self.read = 0;
        }
        file.seek(SeekFrom::Start(self.read)).ok()?;
        let mut buf = Vec::new();
        file.by_ref()
            .take(len - self.read)
            .read_to_end(&mut buf)
            .ok()?;
        self.read += buf.len() as u64;
        Some(String::from_utf8_lossy(&buf).into_owned())
    }
}

/// The secrets of the `--keys-from` processes (h2ledger-keys' [`Feed`]), shared by the live
/// capture and the session. The capture drains the probes after libpcap hands a packet over
/// and before it saves the packet (so a `-w` pcapng holds each secret before the packets it
/// decrypts, see `h2ledger_keys::pcapng`), and whenever no packet comes; the session takes the
/// lines when a connection waits for its key. Each line is also appended to `--keys-out FILE`.
#[derive(Debug)]
pub struct KeyFeed {
    feed: Feed,
    /// `--keys-out FILE`, opened (append, created 0600) before privileges are dropped.
    out: Option<PathBuf>,
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

/// The feed shared by the capture (`source::live`) and the session's key poll.
pub type SharedFeed = Rc<RefCell<KeyFeed>>;

impl KeyFeed {
    /// Attaches to every process of `pids` (root or CAP_SYS_ADMIN, plus CAP_SYS_PTRACE for
    /// another user's process: before privileges are dropped) and opens `keys_out`. Each
    /// attachment is said on stderr in one line.
    pub fn attach(pids: &[u32], keys_out: Option<&Path>) -> Result<KeyFeed> {
        Self::attach_all(pids, &[], keys_out)
    }

    /// [`KeyFeed::attach`], and a probe on each of `libs` for every process that maps it
    /// (`--keys-from-lib`).
    pub fn attach_all(pids: &[u32], libs: &[PathBuf], keys_out: Option<&Path>) -> Result<KeyFeed> {
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
                let denied = match &e {
                    h2ledger_keys::AttachError::Kernel { source, .. } => {
                        matches!(source.raw_os_error(), Some(1 | 13))
                    }
                    _ => false,
                };
                if denied {
                    anyhow!(
                        "{e}. Run as root, or: sudo setcap cap_net_raw,cap_net_admin,cap_sys_admin,cap_sys_ptrace=eip {}",
                        super::exe()
                    )
                } else {
                    anyhow!("{e}")
                }
            })?;
            eprintln!(
                "h2ledger: TLS secrets from {} (attached in {} ms)",
                k.attached(),
                t.elapsed().as_millis()
            );
            sources.push(k);
        }
        let file: Option<Box<dyn std::io::Write>> = match keys_out {
            Some(path) => {
                use std::os::unix::fs::OpenOptionsExt as _;
                let file = std::fs::OpenOptions::new()
                    .append(true)
                    .create(true)
                    .mode(0o600)
                    .open(path)
                    .map_err(|e| {
                        anyhow!(
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
            out: keys_out.map(Path::to_path_buf),
        })
    }

    /// After the capture: the feed's warnings, and a failed `--keys-out` write as an error.
    pub fn finish(&mut self) -> (Vec<String>, Result<()>) {
        let (warnings, error) = self.feed.finish();
        let result = match (error, &self.out) {
            (Some(e), Some(path)) => Err(anyhow!(
                "{}: cannot write the keys (--keys-out): {e}; the file misses some",
                path.display()
            )),
            _ => Ok(()),
        };
        (warnings, result)
    }
}

/// `--keys-from`/`--keys-out` of a live capture: the processes attached (before the device
/// opens and privileges are dropped), or `None` when not asked.
pub fn attach(cap: &CaptureArgs, input: &super::Input) -> Result<Option<SharedFeed>> {
    if cap.keys_from.is_empty() && cap.keys_from_lib.is_empty() {
        if cap.keys_out.is_some() {
            bail!("--keys-out FILE needs --keys-from PID or --keys-from-lib FILE");
        }
        return Ok(None);
    }
    if let super::Input::File(f) = input {
        bail!("--keys-from applies to a live capture (-i DEV), not to reading {f}");
    }
    let feed = KeyFeed::attach_all(&cap.keys_from, &cap.keys_from_lib, cap.keys_out.as_deref())?;
    Ok(Some(Rc::new(RefCell::new(feed))))
}

/// The TLS layer's state for a run: keys from `keylog` (if given) and from the Decryption
/// Secrets Blocks of `capture` (a pcapng file; not stdin). `live`: hold records while the key
/// log catches up (a key log that does not exist yet is opened once the application creates
/// it); `keys_from` names the `--keys-from` processes, which make the run live-waiting too.
/// Open the key log before giving up privileges: it stays open.
pub fn load(
    keylog: Option<&Path>,
    capture: Option<&str>,
    live: bool,
    keys_from: Option<String>,
) -> Result<(Tls, Option<KeyLogFile>)> {
    let mut keys = KeyLog::new();
    let mut file = None;
    if let Some(path) = keylog {
        let f = match File::open(path) {
            Ok(f) => Some(f),
            Err(e) if live && e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(anyhow!("{}: cannot read the key log: {e}", path.display())),
        };
        let mut kf = KeyLogFile {
            path: path.to_path_buf(),
            file: f,
            read: 0,
        };
        if let Some(text) = kf.poll() {
            keys.add_text(&text);
        }
        if !live {
            keys.finish_text();
        }
        file = live.then_some(kf);
    }
    // A regular file only: the packets of standard input or a named pipe can be read once, by
    // the capture (their secrets blocks are not read ahead, and the no-key warning says so).
    // A pipe is not even opened here: its writer would pair with this open.
    let regular = capture
        .filter(|c| *c != "-")
        .filter(|c| std::fs::metadata(c).is_ok_and(|m| m.is_file()));
    if let Some(cap) = regular {
        if let Ok(mut f) = File::open(cap) {
            let mut head = Vec::with_capacity(4);
            let _ = (&mut f).take(4).read_to_end(&mut head);
            let found = match compression_of(&head) {
                None => f.seek(SeekFrom::Start(0)).and_then(|_| {
                    scan_pcapng(&mut Forward::new(BufReader::with_capacity(1 << 20, f)))
                }),
                Some(kind) => decoder(head, f, Some(kind)).and_then(|r| {
                    scan_pcapng(&mut Forward::new(BufReader::with_capacity(1 << 20, r)))
                }),
            };
            if let Ok(Some(e)) = found {
                keys.add_text(&e.text);
                keys.finish_text();
            }
        }
    }
    let cfg = Config {
        wait_for_keys: live && (file.is_some() || keys_from.is_some()),
        keys_from,
        // (A live capture has no `capture` file.)
        piped: capture.is_some() && regular.is_none(),
        ..Config::default()
    };
    Ok((Tls::new(cfg, keys), file))
}

/// The session options of a command's input: its TLS keys (`--keylog`, re-read while live,
/// a pcapng file's own, and live the secrets of `feed`, the `--keys-from` processes), its
/// filter (named when nothing matched it), the connections it tracks and `--max-frames`.
pub fn options(
    input: &super::Input,
    filter: &crate::cli::FilterArgs,
    max_frames: Option<u64>,
    feed: Option<&SharedFeed>,
) -> Result<h2ledger_run::Options> {
    let from = feed.map(|f| f.borrow().describe());
    let (tls, file) = match input {
        super::Input::File(f) => load(filter.keylog.as_deref(), Some(f), false, None)?,
        super::Input::Device(_) => load(filter.keylog.as_deref(), None, true, from)?,
    };
    let feed = feed.cloned();
    let key_poll: Option<h2ledger_run::KeyPoll> = match (file, feed) {
        (None, None) => None,
        (Some(mut f), None) => Some(Box::new(move || f.poll())),
        (file, Some(feed)) => {
            let mut file = file;
            // The key log file's text ended inside a line: the feed's lines wait until the
            // application writes the rest of it.
            let mut mid_line = false;
            Some(Box::new(move || {
                let mut text = file.as_mut().and_then(|f| f.poll()).unwrap_or_default();
                if !text.is_empty() {
                    mid_line = !text.ends_with('\n');
                }
                let mut feed = feed.borrow_mut();
                feed.drain();
                if !mid_line {
                    if let Some(t) = feed.take_for_session() {
                        text.push_str(&t);
                    }
                }
                (!text.is_empty()).then_some(text)
            }))
        }
    };
    Ok(h2ledger_run::Options {
        max_connections: filter.max_connections,
        max_frames,
        filter: filter.bpf(),
        tls,
        key_poll,
    })
}
