//! A run's TLS keys from files: `--keylog FILE` (re-read while live, as the application
//! appends to it: [`KeyLogFile`]). The key log a pcapng capture embeds in Decryption Secrets
//! Blocks is not read here: the capture's reader hands each block over where it lies among
//! the packets ([`crate::input::Found::Secrets`], [`crate::Session::add_keys`]; decision 402).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use h2ledger_tls::{Config, KeyLog, Tls};

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

/// The TLS layer's state for a run: keys from `keylog` (if given). `live`: hold records while
/// the key log catches up (a key log that does not exist yet is opened once the application
/// creates it); `keys_from` names the `--keys-from` processes, which make the run
/// live-waiting too. Open the key log before giving up privileges: it stays open. The error
/// is one line.
pub fn load(
    keylog: Option<&Path>,
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
    let cfg = Config {
        wait_for_keys: live && (file.is_some() || keys_from.is_some()),
        keys_from,
        ..Config::default()
    };
    Ok((Tls::new(cfg, keys), file))
}
