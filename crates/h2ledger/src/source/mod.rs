//! Where packets come from: h2ledger-capture's sources (re-exported), the TLS keys of a
//! command's input ([`keys`]), and the capture flags turned into the sources' options.

pub mod keys;

pub use h2ledger_capture::*;

use anyhow::{bail, Result};

use crate::cli::{CaptureArgs, FilterArgs};

impl CaptureArgs {
    /// The options the capture sources read.
    pub fn opts(&self) -> CaptureOpts {
        CaptureOpts {
            count: self.count,
            duration: self.duration,
            write: self.write.clone(),
            buffer_kib: self.buffer_kib,
            snaplen: self.snaplen,
            user: self.user.user.clone(),
            netns: self.netns.clone(),
        }
    }

    /// The input: `-i DEV`, else `-r FILE` or the FILE word, else `default_device` (sniff).
    /// With `-i`, a FILE word is the first word of the filter expression.
    pub fn input(
        &self,
        file: Option<&str>,
        filter: &mut FilterArgs,
        default_device: Option<&str>,
    ) -> Result<Input> {
        if let Some(dev) = &self.interface {
            if let Some(f) = file {
                filter.expression.insert(0, f.to_string());
            }
            return Ok(Input::Device(devices::resolve(dev)?));
        }
        let file = match (&self.read, file) {
            (Some(r), Some(f)) => {
                // `-r F` and more words: they are the filter.
                filter.expression.insert(0, f.to_string());
                r.clone()
            }
            (Some(r), None) => r.clone(),
            (None, Some(f)) => f.to_string(),
            (None, None) => match default_device {
                Some(d) => return Ok(Input::Device(d.to_string())),
                None => bail!("give a capture FILE (or -r FILE, or -i DEV to capture live)"),
            },
        };
        for (set, flag) in [
            (self.write.is_some(), "-w/--write"),
            (self.buffer_kib.is_some(), "-B/--buffer-size"),
            (self.snaplen.is_some(), "-s/--snapshot-length"),
            (!self.keys_from.is_empty(), "--keys-from"),
            (!self.keys_from_lib.is_empty(), "--keys-from-lib"),
            (self.netns.is_some(), "--netns"),
        ] {
            if set {
                bail!("{flag} applies to a live capture (-i DEV), not to reading {file}");
            }
        }
        Ok(Input::File(file))
    }
}
