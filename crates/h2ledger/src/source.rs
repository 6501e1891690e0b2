//! Where `calls` and `frames` get packets: a saved capture, or a live device (`-i DEV`).

use std::time::Duration;

use anyhow::{anyhow, Result};
use clap::Args;
use h2ledger_tcp::Nanos;

use crate::input::{self, SavedCapture};
use crate::live::{Live, LiveOptions, UserArg, DEFAULT_BUFFER_KIB, DEFAULT_SNAPLEN};
use crate::FilterArgs;

/// A saved capture FILE, or `-i DEV` to capture live.
#[derive(Args, Clone)]
pub struct SourceArgs {
    /// The capture file (.pcap or .pcapng); `-` reads standard input
    #[arg(value_name = "FILE", required_unless_present = "interface")]
    pub file: Option<String>,
    #[command(flatten)]
    pub live: LiveSourceArgs,
}

#[derive(Args, Clone)]
pub struct LiveSourceArgs {
    /// Capture live on DEV (e.g. lo) instead of reading a file; stops on Ctrl-C, SIGTERM or
    /// --duration
    #[arg(short = 'i', long = "interface", value_name = "DEV")]
    pub interface: Option<String>,
    /// With -i: stop after this long (30s, 500ms, 2m)
    #[arg(short, long, value_parser = crate::durations::parse_period, value_name = "D", requires = "interface")]
    pub duration: Option<Duration>,
    #[command(flatten)]
    pub user: UserArg,
}

/// TLS keys for [`feed`]'s input: `--keylog` (re-read while live) and a pcapng FILE's own.
pub fn keys(
    source: &SourceArgs,
    filter: &FilterArgs,
) -> Result<(h2ledger_tls::Tls, Option<crate::keys::KeyLogFile>)> {
    let live = source.live.interface.is_some();
    let file = source.file.as_deref().filter(|_| !live);
    crate::keys::load(filter.keylog.as_deref(), file, live)
}

/// What was read: for a damaged file, the error that stopped it early.
pub struct Read {
    pub error: Option<anyhow::Error>,
}

/// Calls `f(linktype, ts, data)` for every packet of FILE, or of the live device. With `-i`, a
/// FILE word, if any, is the first word of the filter expression.
pub fn feed(
    source: &SourceArgs,
    filter: &FilterArgs,
    mut f: impl FnMut(i32, Nanos, &[u8]),
) -> Result<Read> {
    let (file, live) = (source.file.as_deref(), &source.live);
    let Some(dev) = &live.interface else {
        let file =
            file.ok_or_else(|| anyhow!("give a capture FILE (or -i DEV to capture live)"))?;
        let bpf = input::bpf(&filter.ports, &filter.words());
        let mut cap = SavedCapture::open(file, bpf.as_deref())?;
        let linktype = cap.linktype;
        let error = cap.for_each(|ts, data| f(linktype, ts, data)).err();
        return Ok(Read { error });
    };
    let mut with_file = filter.clone();
    if let Some(f) = file {
        with_file.expression.insert(0, f.to_string());
    }
    let bpf = input::bpf(&filter.ports, &with_file.words());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| anyhow!("cannot start the runtime: {e}"))?;
    rt.block_on(async {
        let mut cap = Live::open(&LiveOptions {
            device: dev.clone(),
            filter: bpf.clone(),
            snaplen: DEFAULT_SNAPLEN,
            buffer_kib: DEFAULT_BUFFER_KIB,
            write: None,
            user: Some(live.user.user.clone()),
        })?;
        eprintln!(
            "h2ledger: listening on {dev}{}; Ctrl-C to stop",
            bpf.as_deref()
                .map(|b| format!(", filter \"{b}\""))
                .unwrap_or_default()
        );
        let linktype = cap.linktype;
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                .map_err(|e| anyhow!("cannot watch SIGTERM: {e}"))?;
        let deadline = live.duration.map(|d| tokio::time::Instant::now() + d);
        loop {
            tokio::select! {
                pkt = cap.next() => match pkt {
                    Some(Ok(p)) => f(linktype, p.ts, &p.data),
                    Some(Err(e)) => return Err(e),
                    None => break,
                },
                _ = tokio::signal::ctrl_c() => break,
                _ = term.recv() => break,
                _ = async { tokio::time::sleep_until(deadline.expect("guarded")).await }, if deadline.is_some() => break,
            }
        }
        let quiet = Duration::from_millis(4 * crate::live::DELIVERY_TIMEOUT_MS as u64);
        cap.drain(quiet, |p| f(linktype, p.ts, &p.data)).await;
        let drops = cap.drops();
        if drops.kernel + drops.interface > 0 {
            eprintln!(
                "warning: {} packets dropped by the kernel and {} by the interface (raise -B with sniff)",
                drops.kernel, drops.interface
            );
        }
        Ok(Read { error: None })
    })
}
