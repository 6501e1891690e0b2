//! Where packets come from, for every command: a saved capture (`FILE`, `-r FILE`, `-` for
//! standard input; plain, gzip or zstd) or a live device (`-i DEV`). The capture flags are the
//! same on `sniff`, `calls` and `frames` (tcpdump's `-i -B -s -w -c -Z`, plus `--duration`), and
//! one loop drives every command, live or not.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use clap::Args;
use futures::FutureExt as _;
use h2ledger_tcp::Nanos;

use crate::input::{self, SavedCapture};
use crate::live::{Drops, Live, LiveOptions, UserArg, DEFAULT_BUFFER_KIB, DEFAULT_SNAPLEN};
use crate::FilterArgs;

/// The capture flags every capturing command takes.
#[derive(Args, Clone, Debug)]
pub struct CaptureArgs {
    /// Read this saved capture (like tcpdump -r); the same as giving FILE
    #[arg(
        short = 'r',
        long = "read",
        value_name = "FILE",
        conflicts_with = "interface"
    )]
    pub read: Option<String>,
    /// Capture live on DEV (`lo` for loopback, `any` for all; `h2ledger -D` lists them)
    #[arg(short = 'i', long = "interface", value_name = "DEV")]
    pub interface: Option<String>,
    /// Stop after N packets (read or captured, after the filter), like tcpdump -c
    #[arg(short = 'c', long = "count", value_name = "N", value_parser = count)]
    pub count: Option<u64>,
    /// Stop after this long (30s, 1m30s, 250ms): wall-clock time live, capture time from the
    /// first packet when reading a file
    #[arg(short = 'd', long, value_parser = crate::durations::parse_period, value_name = "D")]
    pub duration: Option<Duration>,
    /// Live: also save the packets to FILE (pcap, nanosecond timestamps), like tcpdump -w;
    /// `-w -` writes them to standard output and the report to standard error
    #[arg(short = 'w', long, value_name = "FILE")]
    pub write: Option<PathBuf>,
    /// Live: kernel capture buffer in KiB, like tcpdump -B [default: 32768; 131072 for
    /// full-speed loopback bursts]
    #[arg(short = 'B', long = "buffer-size", value_name = "KiB", value_parser = clap::value_parser!(i32).range(1..=4_194_304))]
    pub buffer_kib: Option<i32>,
    /// Live: snap length, bytes kept of each packet, like tcpdump -s [default: 262144]
    #[arg(short = 's', long = "snapshot-length", visible_alias = "snaplen", value_name = "BYTES", value_parser = clap::value_parser!(i32).range(64..=262_144))]
    pub snaplen: Option<i32>,
    #[command(flatten)]
    pub user: UserArg,
}

pub fn count(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("\"{s}\": give a number of packets, 1 or more")),
    }
}

/// A saved capture or a live device, resolved from FILE / `-r` / `-i`.
#[derive(Clone, Debug)]
pub enum Input {
    File(String),
    Device(String),
}

impl CaptureArgs {
    /// The input: `-i DEV`, else `-r FILE` or the FILE word, else `default_device` (sniff).
    /// With `-i`, a FILE word is the first word of the filter expression.
    pub fn input(
        &self,
        file: Option<&str>,
        filter: &mut FilterArgs,
        default_device: Option<&str>,
    ) -> Result<Input> {
        if self.write.as_deref() == Some(std::path::Path::new("-")) {
            // The packets take stdout: reports go to stderr, from before anything is printed.
            crate::report_to_stderr();
        }
        if let Some(dev) = &self.interface {
            if let Some(f) = file {
                filter.expression.insert(0, f.to_string());
            }
            return Ok(Input::Device(dev.clone()));
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
        ] {
            if set {
                bail!("{flag} applies to a live capture (-i DEV), not to reading {file}");
            }
        }
        Ok(Input::File(file))
    }
}

/// What a command does with the packets; every method but `packet` has an empty default.
pub trait Hooks {
    /// One packet. Return `false` to stop (`--max-frames` reached, the reader went away).
    fn packet(&mut self, linktype: i32, ts: Nanos, data: &[u8]) -> bool;
    /// Live: no packet is waiting right now (flush what was printed); called again every
    /// [`IDLE_WAKE`] while none comes.
    fn idle(&mut self) {}
    /// Every `--every` period: live on the wall clock (with libpcap's drop counters), on a file
    /// by capture time (`at`: the period's end).
    fn tick(&mut self, _at: Nanos, _drops: Option<&mut Drops>) {}
}

/// How the input ended.
pub struct Outcome {
    /// Why it stopped: "the capture ended", "--count reached", "interrupted", ...
    pub stop: &'static str,
    /// A damaged file stopped the read early (the packets before it were delivered).
    pub error: Option<anyhow::Error>,
    /// Live: libpcap's counters at the end.
    pub drops: Option<Drops>,
    /// What was read: the file's name, or "DEV (live)".
    pub source: String,
    /// Live `-w`: a write to the file failed (the report is printed, then this is the error).
    pub write_error: Option<anyhow::Error>,
}

impl Outcome {
    /// After the report: a failed `-w` is an error (exit status 2).
    pub fn saved(self) -> Result<()> {
        match self.write_error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Drives `hooks` with every packet of `input` until it ends or a stop condition is met.
/// `--every` ticks (`every`) and the `-c`/`--duration` limits apply to files and devices alike.
pub fn run(
    input: &Input,
    cap: &CaptureArgs,
    bpf: Option<&str>,
    every: Option<Duration>,
    hooks: &mut impl Hooks,
) -> Result<Outcome> {
    match input {
        Input::File(f) => run_file(f, cap, bpf, every, hooks),
        Input::Device(d) => {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| anyhow!("cannot start the runtime: {e}"))?;
            rt.block_on(run_live(d, cap, bpf, every, hooks))
        }
    }
}

/// `-c N` and `--duration D` on a saved capture: N packets (after the filter), and capture
/// time from the first packet (a packet more than D after it is not read).
pub struct FileLimits {
    count: Option<u64>,
    limit: Option<Nanos>,
    first: Option<Nanos>,
    packets: u64,
}

impl FileLimits {
    pub fn new(count: Option<u64>, duration: Option<Duration>) -> Self {
        FileLimits {
            count,
            limit: duration.map(|d| d.as_nanos().min(i64::MAX as u128) as i64),
            first: None,
            packets: 0,
        }
    }

    /// The first packet's time (the packet at `ts` when it is the first).
    pub fn start(&mut self, ts: Nanos) -> Nanos {
        *self.first.get_or_insert(ts)
    }

    /// Whether the packet at `ts` is beyond `--duration` (it is not read; the reading stops).
    pub fn past_duration(&mut self, ts: Nanos) -> bool {
        let t0 = self.start(ts);
        self.limit.is_some_and(|l| ts.saturating_sub(t0) > l)
    }

    /// Counts a packet that is read; whether it is the last one `-c` allows.
    pub fn counted(&mut self) -> bool {
        self.packets += 1;
        self.count.is_some_and(|n| self.packets >= n)
    }
}

fn run_file(
    file: &str,
    cap: &CaptureArgs,
    bpf: Option<&str>,
    every: Option<Duration>,
    hooks: &mut impl Hooks,
) -> Result<Outcome> {
    let mut saved = SavedCapture::open(file, bpf)?;
    let linktype = saved.linktype;
    let mut limits = FileLimits::new(cap.count, cap.duration);
    let period = every.map(|d| d.as_nanos().clamp(1, i64::MAX as u128) as i64);
    let mut next_tick = None::<Nanos>;
    let mut stop = "the capture ended";
    let error = saved
        .for_each(|ts, data| {
            let t0 = limits.start(ts);
            if limits.past_duration(ts) {
                stop = "--duration reached";
                return false;
            }
            if let Some(p) = period {
                let due = next_tick.get_or_insert(t0.saturating_add(p));
                // Periods without packets are skipped: a clock jump costs one tick, not millions.
                if ts >= *due {
                    hooks.tick(*due, None);
                    let behind = (ts - *due) / p;
                    *due = due.saturating_add(p.saturating_mul(behind + 1));
                }
            }
            let last = limits.counted();
            if !hooks.packet(linktype, ts, data) {
                stop = "the output ended";
                return false;
            }
            if last {
                stop = "--count reached";
                return false;
            }
            true
        })
        .err();
    Ok(Outcome {
        stop,
        error,
        drops: None,
        source: saved.name.clone(),
        write_error: None,
    })
}

async fn run_live(
    dev: &str,
    cap: &CaptureArgs,
    bpf: Option<&str>,
    every: Option<Duration>,
    hooks: &mut impl Hooks,
) -> Result<Outcome> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut live = Live::open(&LiveOptions {
        device: dev.to_string(),
        filter: bpf.map(str::to_string),
        snaplen: cap.snaplen.unwrap_or(DEFAULT_SNAPLEN),
        buffer_kib: cap.buffer_kib.unwrap_or(DEFAULT_BUFFER_KIB),
        write: cap.write.clone(),
        user: Some(cap.user.user.clone()),
    })?;
    // Always said (like tcpdump's "listening on"): scripts wait for this line.
    eprintln!(
        "h2ledger: listening on {}{}{}; Ctrl-C to stop",
        live.device,
        bpf.map(|f| format!(", filter \"{f}\"")).unwrap_or_default(),
        live.dropped_to
            .as_deref()
            .map(|u| format!(", running as {u}"))
            .unwrap_or_default()
    );
    let linktype = live.linktype;
    let mut int =
        signal(SignalKind::interrupt()).map_err(|e| anyhow!("cannot watch SIGINT: {e}"))?;
    let mut term =
        signal(SignalKind::terminate()).map_err(|e| anyhow!("cannot watch SIGTERM: {e}"))?;
    let deadline = cap.duration.map(|d| tokio::time::Instant::now() + d);
    let mut ticks = every.map(|d| {
        let mut i = tokio::time::interval_at(tokio::time::Instant::now() + d, d);
        i.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        i
    });
    let mut packets = 0u64;
    let stop = loop {
        // While packets wait, take them without sleeping; when none does, say so (flush) and
        // wait for whichever comes first.
        let pkt = match live.next().now_or_never() {
            Some(p) => {
                if int.recv().now_or_never().is_some() {
                    break "interrupted";
                }
                if term.recv().now_or_never().is_some() {
                    break "SIGTERM";
                }
                if deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
                    break "--duration reached";
                }
                if let Some(t) = ticks.as_mut() {
                    if t.tick().now_or_never().is_some() {
                        hooks.tick(now_nanos(), Some(&mut live.drops()));
                    }
                }
                p
            }
            None => {
                hooks.idle();
                tokio::select! {
                    p = live.next() => p,
                    _ = int.recv() => break "interrupted",
                    _ = term.recv() => break "SIGTERM",
                    _ = async { tokio::time::sleep_until(deadline.expect("guarded")).await }, if deadline.is_some() => {
                        break "--duration reached";
                    }
                    _ = async { ticks.as_mut().expect("guarded").tick().await }, if ticks.is_some() => {
                        hooks.tick(now_nanos(), Some(&mut live.drops()));
                        continue;
                    }
                    // Quiet input: idle again now and then, so that what became due with
                    // time alone (a call that ended a second ago) is printed.
                    _ = tokio::time::sleep(IDLE_WAKE) => continue,
                }
            }
        };
        match pkt {
            Some(Ok(p)) => {
                packets += 1;
                if !hooks.packet(linktype, p.ts, &p.data) {
                    break "the output ended";
                }
                if cap.count.is_some_and(|n| packets >= n) {
                    break "--count reached";
                }
            }
            Some(Err(e)) => return Err(e),
            None => break "the capture ended",
        }
    };
    // Packets captured before the stop may wait DELIVERY_TIMEOUT_MS in the kernel (not when
    // the count is reached: tcpdump -c stops at exactly N).
    if stop != "--count reached" && stop != "the output ended" {
        let quiet = Duration::from_millis(4 * crate::live::DELIVERY_TIMEOUT_MS as u64);
        let mut more = true;
        live.drain(quiet, |p| {
            if more {
                more = hooks.packet(linktype, p.ts, &p.data);
            }
        })
        .await;
    }
    let drops = live.drops();
    let write_error = live.finish_write().err();
    Ok(Outcome {
        stop,
        error: None,
        drops: Some(drops),
        source: format!("{} (live)", live.device),
        write_error,
    })
}

/// While no packet comes, the live loop calls [`Hooks::idle`] again this often.
const IDLE_WAKE: std::time::Duration = std::time::Duration::from_millis(500);

/// The wall clock in nanoseconds since the epoch.
pub fn now_nanos() -> Nanos {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// TLS keys for the input: `--keylog` (re-read while live) and a pcapng FILE's own.
pub fn keys(
    input: &Input,
    filter: &FilterArgs,
) -> Result<(h2ledger_tls::Tls, Option<crate::keys::KeyLogFile>)> {
    match input {
        Input::File(f) => crate::keys::load(filter.keylog.as_deref(), Some(f), false),
        Input::Device(_) => crate::keys::load(filter.keylog.as_deref(), None, true),
    }
}

/// The BPF program of `--port`, `-f` and the expression words.
pub fn bpf(filter: &FilterArgs) -> Option<String> {
    input::bpf(&filter.ports, &filter.words())
}
