//! Where packets come from: h2ledger-capture's sources (re-exported), the TLS keys of a
//! command's input ([`keys`]), and the capture flags turned into the sources' options.

pub mod keys;

pub use h2ledger_capture::*;

use std::time::Duration;

use anyhow::{bail, Result};

use crate::cli::{CaptureArgs, FilterArgs};

/// A command's input decided once from its flags (ripgrep's `HiArgs` in
/// crates/core/flags/hiargs.rs is the model): where packets come from, with the `--keys-from`
/// processes attached and the key log open, the session's options, and how the source reads.
/// [`Plan::split`] gives the options to the session and the rest to drive it.
pub struct Plan {
    opts: h2ledger_run::Options,
    /// Drives the session.
    pub drive: Drive,
}

/// The part of a [`Plan`] that reads the input: [`Drive::run`].
pub struct Drive {
    /// The file or device.
    pub input: Input,
    cap: CaptureOpts,
    bpf: Option<String>,
    every: Option<Duration>,
    progress: bool,
    keys: Option<SharedFeed>,
}

impl Plan {
    /// The plan of reading `input` as `cap` and `filter` say, with `--max-frames`, `--every`
    /// and the progress display. The `--keys-from` processes are attached here, before the
    /// capture opens and gives up privileges.
    pub fn new(
        cap: &CaptureArgs,
        input: Input,
        filter: &FilterArgs,
        max_frames: Option<u64>,
        every: Option<Duration>,
        progress: bool,
    ) -> Result<Plan> {
        let keys = keys::attach(cap, &input)?;
        let opts = keys::options(&input, filter, max_frames, keys.as_ref())?;
        Ok(Plan {
            drive: Drive {
                input,
                cap: cap.opts(),
                // The expression the session's options name (`--port`, tcpdump's words).
                bpf: opts.filter.clone(),
                every,
                progress,
                keys,
            },
            opts,
        })
    }

    /// The session's options, and what drives it.
    pub fn split(self) -> (h2ledger_run::Options, Drive) {
        (self.opts, self.drive)
    }
}

impl Drive {
    /// Feeds `hooks` every packet of the input until it ends or a stop condition is met.
    pub fn run(self, hooks: &mut impl Hooks) -> Result<Ended> {
        let reading = Reading {
            input: &self.input,
            cap: &self.cap,
            bpf: self.bpf.as_deref(),
            every: self.every,
            progress: self.progress,
            keys: self.keys,
        };
        run(&reading, hooks)
    }
}

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
