//! TLS keys for the pipeline: `--keylog FILE` (re-read while live when a connection waits
//! for its key) and the key log a pcapng capture embeds in Decryption Secrets Blocks.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};
use h2ledger_tls::{scan_pcapng, Config, KeyLog, Tls};

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

/// The TLS layer's state for a run: keys from `keylog` (if given) and from the Decryption
/// Secrets Blocks of `capture` (a pcapng file; not stdin). `live`: hold records while the key
/// log catches up; a key log that does not exist yet is opened once the application creates
/// it). Open the key log before giving up privileges: it stays open.
pub fn load(
    keylog: Option<&Path>,
    capture: Option<&str>,
    live: bool,
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
    if let Some(cap) = capture.filter(|c| *c != "-") {
        if let Ok(mut f) = File::open(cap) {
            let mut head = Vec::with_capacity(4);
            let _ = (&mut f).take(4).read_to_end(&mut head);
            let found = match super::file::compression_of(&head) {
                None => f
                    .seek(SeekFrom::Start(0))
                    .and_then(|_| scan_pcapng(&mut BufReader::with_capacity(1 << 20, f))),
                Some(kind) => super::file::decoder(head, f, Some(kind))
                    .and_then(|r| scan_pcapng(&mut super::file::Forward::new(r))),
            };
            if let Ok(Some(e)) = found {
                keys.add_text(&e.text);
                keys.finish_text();
            }
        }
    }
    let cfg = Config {
        wait_for_keys: live && file.is_some(),
        ..Config::default()
    };
    Ok((Tls::new(cfg, keys), file))
}

/// The session options of a command's input: its TLS keys (`--keylog`, re-read while live,
/// and a pcapng file's own), its filter (named when nothing matched it), the connections it
/// tracks and `--max-frames`.
pub fn options(
    input: &super::Input,
    filter: &crate::cli::FilterArgs,
    max_frames: Option<u64>,
) -> Result<h2ledger_run::Options> {
    let (tls, file) = match input {
        super::Input::File(f) => load(filter.keylog.as_deref(), Some(f), false)?,
        super::Input::Device(_) => load(filter.keylog.as_deref(), None, true)?,
    };
    Ok(h2ledger_run::Options {
        max_connections: filter.max_connections,
        max_frames,
        filter: filter.bpf(),
        tls,
        key_poll: file.map(|mut f| Box::new(move || f.poll()) as h2ledger_run::KeyPoll),
    })
}
