//! TLS keys for the pipeline: `--keylog FILE` (re-read while live when a connection waits
//! for its key; a pcapng capture's Decryption Secrets Blocks come with its packets), and live,
//! the secrets of `--keys-from PID` processes ([`KeyFeed`], h2ledger-keys' uprobes).

use std::cell::RefCell;
use std::rc::Rc;

use anyhow::{anyhow, bail, Result};
use h2ledger_run::keylog::load;

use crate::cli::CaptureArgs;

pub use h2ledger_capture::{Broadcast, KeyFeed, SharedFeed, Tap};

/// [`KeyFeed::attach_all`], each attachment said on stderr in one line.
pub fn attach_all(
    pids: &[u32],
    libs: &[std::path::PathBuf],
    keys_out: Option<&std::path::Path>,
) -> Result<KeyFeed> {
    let denied = format!(
        "Run as root, or: sudo setcap cap_net_raw,cap_net_admin,cap_sys_admin,cap_sys_ptrace=eip {}",
        super::exe()
    );
    KeyFeed::attach_all(pids, libs, keys_out, &denied, |what, ms| {
        eprintln!("h2ledger: TLS secrets from {what} (attached in {ms} ms)")
    })
    .map_err(|e| anyhow!(e))
}

/// `--keys-from`/`--keys-out` of a live capture: the processes attached (before the device
/// opens and privileges are dropped), or `None` when not asked.
pub fn attach(cap: &CaptureArgs, input: &super::Input) -> Result<Option<SharedFeed>> {
    Ok(attach_for(cap, input, 1)?.map(|b| Rc::new(RefCell::new(b.tap(0)))))
}

/// [`attach`] for `readers` captures (`sniff --workers N`): every one gets every secret
/// ([`Broadcast::tap`], decision 417).
pub fn attach_for(
    cap: &CaptureArgs,
    input: &super::Input,
    readers: usize,
) -> Result<Option<std::sync::Arc<Broadcast>>> {
    if cap.keys_from.is_empty() && cap.keys_from_lib.is_empty() {
        if cap.keys_out.is_some() {
            bail!("--keys-out FILE needs --keys-from PID or --keys-from-lib FILE");
        }
        return Ok(None);
    }
    if let super::Input::File(f) = input {
        bail!("--keys-from applies to a live capture (-i DEV), not to reading {f}");
    }
    let feed = attach_all(&cap.keys_from, &cap.keys_from_lib, cap.keys_out.as_deref())?;
    Ok(Some(Broadcast::new(feed, readers)))
}

/// The session options of a command's input: its TLS keys (`--keylog`, re-read while live,
/// and live the secrets of `feed`, the `--keys-from` processes), its
/// filter (named when nothing matched it), the connections it tracks and `--max-frames`.
pub fn options(
    input: &super::Input,
    filter: &crate::cli::FilterArgs,
    max_frames: Option<u64>,
    feed: Option<&SharedFeed>,
) -> Result<h2ledger_run::Options> {
    let from = feed.map(|f| f.borrow().describe());
    let (tls, file) = match input {
        super::Input::File(_) => {
            load(filter.keylog.as_deref(), false, None).map_err(|e| anyhow!(e))?
        }
        super::Input::Device(_) => {
            load(filter.keylog.as_deref(), true, from).map_err(|e| anyhow!(e))?
        }
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
