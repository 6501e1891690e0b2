//! A run's TLS keys from files: `--keylog FILE` (re-read while live, as the application
//! appends to it: [`KeyLogFile`]) and the key log a pcapng capture embeds in Decryption
//! Secrets Blocks ([`load`]).

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use h2ledger_tls::{scan_pcapng, Config, KeyLog, Tls};

use crate::input::{compression_of, decoder, Forward};

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
/// log catches up (a key log that does not exist yet is opened once the application creates
/// it); `keys_from` names the `--keys-from` processes, which make the run live-waiting too.
/// Open the key log before giving up privileges: it stays open. The error is one line.
pub fn load(
    keylog: Option<&Path>,
    capture: Option<&str>,
    live: bool,
    keys_from: Option<String>,
) -> Result<(Tls, Option<KeyLogFile>), String> {
    let mut keys = KeyLog::new();
    let mut file = None;
    if let Some(path) = keylog {
        let f = match File::open(path) {
            Ok(f) => Some(f),
            Err(e) if live && e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(format!("{}: cannot read the key log: {e}", path.display())),
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
