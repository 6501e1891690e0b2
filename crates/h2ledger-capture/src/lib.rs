//! Where packets come from, for every command: a saved capture (`FILE`, `-r FILE`, `-` for
//! standard input; plain, gzip or zstd) or a live device (`-i DEV`). The capture flags are the
//! same on `sniff`, `calls` and `frames` (tcpdump's `-i -B -s -w -c -Z`, plus `--duration`), and
//! one loop drives every command, live or not: [`run`] hands each packet to the command's
//! [`Hooks`], with one ticker ([`Ticker`]) for `--every`.
//!
//! The binary's capture sources as a library: libpcap (crate `pcap`) for files and devices,
//! tokio for the live loop, AF_PACKET fanout for `sniff --workers`. Not pure (libpcap, tokio,
//! the terminal's progress display, and `fanout`'s one `setsockopt`); the packets go to the
//! pure pipeline of h2ledger-run.

pub mod devices;
pub mod fanout;
pub mod file;
pub mod live;
pub mod progress;

use std::ops::ControlFlow;
use std::time::Duration;

use anyhow::{anyhow, Result};
use futures::FutureExt as _;
use h2ledger_run::{Drops, End, Stop, Ticker};
use h2ledger_tcp::{LinkType, Nanos};

use file::{Item, SavedCapture};
use h2ledger_run::input::TLS_KEY_LOG;
use live::{Live, LiveOptions, DEFAULT_BUFFER_KIB, DEFAULT_SNAPLEN};
use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;

/// A saved capture or a live device, resolved from FILE / `-r` / `-i`.
#[derive(Clone, Debug)]
pub enum Input {
    /// A saved capture's path (`-` for standard input).
    File(String),
    /// A live device's name.
    Device(String),
}

/// The capture flags a source reads: tcpdump's `-c -w -B -s -Z`, `--duration` and `--netns`.
#[derive(Clone, Debug, Default)]
pub struct CaptureOpts {
    /// `-c N`: stop after N packets.
    pub count: Option<u64>,
    /// `--duration D`: stop after D (live: wall clock; a file: capture time).
    pub duration: Option<Duration>,
    /// `-w FILE`: save what is captured live.
    pub write: Option<PathBuf>,
    /// `-B KiB`: the kernel buffer.
    pub buffer_kib: Option<i32>,
    /// `-s BYTES`: the snapshot length.
    pub snaplen: Option<i32>,
    /// `-Z USER`: the user to become once the capture is open (when root).
    pub user: String,
    /// `--netns`: the network namespace to capture in.
    pub netns: Option<String>,
}

/// The `--keys-from` processes' secrets (h2ledger-keys' [`KeyFeed`]), shared by the live
/// capture and the session's key poll: the capture drains the probes after libpcap hands a
/// packet over and before it saves the packet (so a `-w` pcapng holds each secret before the
/// packets it decrypts, see `h2ledger_keys::pcapng`), and whenever no packet comes; the session
/// takes the lines when a connection waits for its key. Each line is also appended to
/// `--keys-out FILE`. One capture's [`Tap`] of the feed: `sniff --workers N`'s workers each
/// have theirs, every one getting every secret ([`Broadcast`], decision 417).
pub type SharedFeed = Rc<RefCell<Tap>>;

pub use h2ledger_keys::feed::{Broadcast, KeyFeed, Tap};

impl Input {
    /// What is read, for the report's headline: the file's name or the device's.
    pub fn name(&self) -> &str {
        match self {
            Input::File(f) | Input::Device(f) => f,
        }
    }
}

/// What a command does with the packets; every method but `packet` and `frames` has an empty
/// default.
pub trait Hooks {
    /// One packet. `Break` to stop (`--max-frames` reached, the reader went away).
    fn packet(&mut self, linktype: LinkType, ts: Nanos, data: &[u8]) -> ControlFlow<Stop>;
    /// Frames seen so far (the progress display).
    fn frames(&self) -> u64;
    /// TLS key log text from the input itself (a pcapng's Decryption Secrets Block), for the
    /// packets after it ([`h2ledger_run::Session::add_keys`]).
    fn secrets(&mut self, text: &str);
    /// Live: no packet is waiting right now (`now`: the wall clock); called again every
    /// `IDLE_WAKE` (500 ms) while none comes.
    fn idle(&mut self, _now: Nanos) {}
    /// Every `--every` period: live on the wall clock (with libpcap's drop counters), on a file
    /// by capture time (`at`: the period's end).
    fn tick(&mut self, _at: Nanos, _drops: Option<Drops>) {}
    /// Live, `--metrics`: what wakes the loop when a scrape wants fresh figures.
    fn metrics_wake(&self) -> Option<std::sync::Arc<tokio::sync::Notify>> {
        None
    }
    /// Live, `--metrics`: a scrape waits for fresh figures (asked after each packet).
    fn wants_sync(&self) -> bool {
        false
    }
    /// Live, `--metrics`: make the figures a scrape reads, with libpcap's drop counters.
    fn sync(&mut self, _drops: Drops) {}
}

/// A bare session reads every packet, and nothing else (`compare`, `-j` workers).
impl Hooks for h2ledger_run::Session {
    fn packet(&mut self, linktype: LinkType, ts: Nanos, data: &[u8]) -> ControlFlow<Stop> {
        self.feed(linktype, ts, data)
    }

    fn frames(&self) -> u64 {
        h2ledger_run::Session::frames(self)
    }

    fn secrets(&mut self, text: &str) {
        self.add_keys(text);
    }
}

/// How the input ended.
pub struct Ended {
    /// Why the reading stopped.
    pub end: End,
    /// Live: libpcap's counters at the end.
    pub drops: Option<Drops>,
    /// What was read: the file's name, or "DEV (live)".
    pub source: String,
    /// Live `-w`: a write to the file failed (the report is printed, then this is the error).
    pub write_error: Option<anyhow::Error>,
}

impl Ended {
    /// After the report: a failed `-w` is an error (exit status 2).
    pub fn saved(self) -> Result<()> {
        match self.write_error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// How a command reads: the input, its capture flags and filter, `--every`, and whether a
/// progress display may be drawn.
pub struct Reading<'a> {
    pub input: &'a Input,
    pub cap: &'a CaptureOpts,
    pub bpf: Option<&'a str>,
    pub every: Option<Duration>,
    pub progress: bool,
    /// Live: the `--keys-from` processes' secrets (attached already), drained as packets are
    /// captured and saved with `-w` ([`KeyFeed`]).
    pub keys: Option<SharedFeed>,
}

/// Drives `hooks` with every packet of the input until it ends or a stop condition is met.
/// `--every` ticks and the `-c`/`--duration` limits apply to files and devices alike.
pub fn run(r: &Reading<'_>, hooks: &mut impl Hooks) -> Result<Ended> {
    match r.input {
        Input::File(f) => run_file(f, r, hooks),
        Input::Device(d) => {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| anyhow!("cannot start the runtime: {e}"))?;
            rt.block_on(run_live(d, r, hooks))
        }
    }
}

fn ticker(every: Option<Duration>) -> Option<Ticker> {
    every.map(|d| Ticker::new(d.as_nanos().clamp(1, i64::MAX as u128) as i64))
}

fn run_file(file: &str, r: &Reading<'_>, hooks: &mut impl Hooks) -> Result<Ended> {
    let mut saved = SavedCapture::open(file, r.bpf)?;
    let limit = r
        .cap
        .duration
        .map(|d| d.as_nanos().min(i64::MAX as u128) as i64);
    let mut ticker = ticker(r.every);
    let (mut first, mut packets) = (None::<Nanos>, 0u64);
    let mut stop = None;
    let error = saved
        .for_each(r.progress, |item, shown| {
            let (linktype, ts, data) = match item {
                Item::Packet { linktype, ts, data } => (LinkType(linktype), ts, data),
                Item::Secrets { kind, data } => {
                    if kind == TLS_KEY_LOG {
                        hooks.secrets(&String::from_utf8_lossy(data));
                    }
                    return true;
                }
            };
            let t0 = *first.get_or_insert(ts);
            // A packet more than D after the first is not read.
            if limit.is_some_and(|l| ts.saturating_sub(t0) > l) {
                stop = Some(Stop::Duration);
                return false;
            }
            if let Some(t) = ticker.as_mut() {
                t.start(t0);
                if let Some(at) = t.due(ts) {
                    hooks.tick(at, None);
                }
            }
            packets += 1;
            let flow = hooks.packet(linktype, ts, data);
            shown.frames(hooks.frames());
            if let ControlFlow::Break(s) = flow {
                stop = Some(s);
                return false;
            }
            if r.cap.count.is_some_and(|n| packets >= n) {
                stop = Some(Stop::Count);
                return false;
            }
            true
        })
        .err();
    let end = match (error, stop) {
        (Some(e), _) => End::Damaged(format!("{e:#}")),
        (None, Some(s)) => End::Stopped(s),
        (None, None) => End::Complete,
    };
    Ok(Ended {
        end,
        drops: None,
        source: saved.name.clone(),
        write_error: None,
    })
}

async fn run_live(dev: &str, r: &Reading<'_>, hooks: &mut impl Hooks) -> Result<Ended> {
    let cap = r.cap;
    let mut live = Live::open(&LiveOptions {
        device: dev.to_string(),
        filter: r.bpf.map(str::to_string),
        snaplen: cap.snaplen.unwrap_or(DEFAULT_SNAPLEN),
        buffer_kib: cap.buffer_kib.unwrap_or(DEFAULT_BUFFER_KIB),
        write: cap.write.clone(),
        user: Some(cap.user.clone()),
        keys: r.keys.clone(),
        netns: cap.netns.clone(),
    })?;
    // Watched before the line below: a script that waits for it may send SIGTERM at once.
    let mut stop = StopWatch::own(cap.duration)?;
    // Always said (like tcpdump's "listening on"): scripts wait for this line.
    eprintln!(
        "h2ledger: listening on {}{}{}{}; Ctrl-C to stop",
        live.device,
        r.bpf
            .map(|f| format!(", filter \"{f}\""))
            .unwrap_or_default(),
        r.keys
            .as_ref()
            .map(|k| format!(", TLS secrets from {}", k.borrow().describe()))
            .unwrap_or_default(),
        live.dropped_to
            .as_deref()
            .map(|u| format!(", running as {u}"))
            .unwrap_or_default()
    );
    let end = live_loop(&mut live, &mut stop, r.every, cap.count, hooks).await?;
    finish_live(live, end, r.keys.as_ref())
}

/// What stops a live loop besides its input: this process's SIGINT, SIGTERM and
/// `--duration` (one capture), or the stop the workers of `sniff --workers` share (set by
/// their controller, or by the worker that reached `-c`).
pub enum StopWatch {
    /// Signals and the deadline, watched by this loop.
    Own {
        int: tokio::signal::unix::Signal,
        term: tokio::signal::unix::Signal,
        deadline: Option<tokio::time::Instant>,
    },
    /// The group's stop.
    Shared(tokio::sync::watch::Receiver<Option<Stop>>),
}

impl StopWatch {
    /// SIGINT, SIGTERM and `duration` from now (must be called in a tokio runtime).
    pub fn own(duration: Option<Duration>) -> Result<StopWatch> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(StopWatch::Own {
            int: signal(SignalKind::interrupt())
                .map_err(|e| anyhow!("cannot watch SIGINT: {e}"))?,
            term: signal(SignalKind::terminate())
                .map_err(|e| anyhow!("cannot watch SIGTERM: {e}"))?,
            deadline: duration.map(|d| tokio::time::Instant::now() + d),
        })
    }

    /// The stop, if one came (without waiting).
    fn now(&mut self) -> Option<Stop> {
        match self {
            StopWatch::Own {
                int,
                term,
                deadline,
            } => {
                if int.recv().now_or_never().is_some() {
                    Some(Stop::Interrupted)
                } else if term.recv().now_or_never().is_some() {
                    Some(Stop::Terminated)
                } else if deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
                    Some(Stop::Duration)
                } else {
                    None
                }
            }
            StopWatch::Shared(rx) => *rx.borrow_and_update(),
        }
    }

    /// Waits for the stop.
    async fn wait(&mut self) -> Stop {
        match self {
            StopWatch::Own {
                int,
                term,
                deadline,
            } => {
                tokio::select! {
                    _ = int.recv() => Stop::Interrupted,
                    _ = term.recv() => Stop::Terminated,
                    _ = async { tokio::time::sleep_until(deadline.expect("guarded")).await }, if deadline.is_some() => Stop::Duration,
                }
            }
            StopWatch::Shared(rx) => loop {
                if let Some(s) = *rx.borrow_and_update() {
                    break s;
                }
                if rx.changed().await.is_err() {
                    // The controller is gone without a stop: nothing will come.
                    std::future::pending::<()>().await;
                }
            },
        }
    }
}

/// The one live loop (a device read by `sniff`, `calls -i`, `frames -i`, and each worker of
/// `sniff --workers`): every packet to `hooks`, `--every` ticks by the wall clock, the
/// metrics' scrapes, the idle wake, `-c` (`count`, this loop's own packets), the stop, then
/// the drain (decision 387). Returns how the input ended; the caller finishes `live`.
pub async fn live_loop(
    live: &mut Live,
    stop: &mut StopWatch,
    every: Option<Duration>,
    count: Option<u64>,
    hooks: &mut impl Hooks,
) -> Result<End> {
    let linktype = LinkType(live.linktype);
    // Ticks by the wall clock: the deadline of the next one, as a tokio instant.
    let mut ticker = ticker(every);
    if let Some(t) = ticker.as_mut() {
        t.start(now_nanos());
    }
    let next_tick = |t: &Option<Ticker>| {
        t.and_then(|t| t.next()).map(|at| {
            let wait = at.saturating_sub(now_nanos()).max(0) as u64;
            tokio::time::Instant::now() + Duration::from_nanos(wait)
        })
    };
    let mut packets = 0u64;
    let wake = hooks.metrics_wake();
    let stopped = loop {
        // A stop seen while a packet was in hand: that packet is taken first (the codec has
        // already saved it with -w, so the report and the file hold the same packets).
        let mut then_stop = None;
        // While packets wait, take them without sleeping; when none does, say so (flush) and
        // wait for whichever comes first.
        let pkt = match live.next().now_or_never() {
            Some(p) => {
                then_stop = stop.now();
                if let Some(at) = ticker.as_mut().and_then(|t| t.due(now_nanos())) {
                    hooks.tick(at, Some(live.drops()));
                }
                p
            }
            None => {
                live.idle();
                hooks.idle(now_nanos());
                if hooks.wants_sync() {
                    hooks.sync(live.drops());
                }
                let tick_at = next_tick(&ticker);
                tokio::select! {
                    p = live.next() => p,
                    s = stop.wait() => break s,
                    _ = async { tokio::time::sleep_until(tick_at.expect("guarded")).await }, if tick_at.is_some() => {
                        if let Some(at) = ticker.as_mut().and_then(|t| t.due(now_nanos())) {
                            hooks.tick(at, Some(live.drops()));
                        }
                        continue;
                    }
                    _ = async { wake.as_ref().expect("guarded").notified().await }, if wake.is_some() => {
                        hooks.sync(live.drops());
                        continue;
                    }
                    // Quiet input: idle again now and then, so that what became due with
                    // time alone (a call that ended a second ago) is printed.
                    _ = tokio::time::sleep(IDLE_WAKE) => continue,
                }
            }
        };
        match pkt {
            // Turned away by the codec (before the group was whole, or past `-c` over all
            // workers): neither saved nor read.
            Some(Ok(p)) if !p.kept => {}
            Some(Ok(p)) => {
                packets += 1;
                if let ControlFlow::Break(s) = hooks.packet(linktype, p.ts, &p.data) {
                    break s;
                }
                if hooks.wants_sync() {
                    hooks.sync(live.drops());
                }
                if count.is_some_and(|n| packets >= n) {
                    break Stop::Count;
                }
            }
            Some(Err(e)) => return Err(e),
            None => return Ok(End::Complete),
        }
        if let Some(s) = then_stop {
            break s;
        }
    };
    // Packets captured before the stop may wait DELIVERY_TIMEOUT_MS in the kernel.
    if stopped.drains() {
        let quiet = Duration::from_millis(4 * live::DELIVERY_TIMEOUT_MS as u64);
        let mut more = true;
        live.drain(quiet, now_nanos(), |p| {
            if more && p.kept {
                more = hooks.packet(linktype, p.ts, &p.data).is_continue();
            }
        })
        .await;
    }
    Ok(End::Stopped(stopped))
}

fn finish_live(mut live: Live, end: End, keys: Option<&SharedFeed>) -> Result<Ended> {
    let drops = live.drops();
    let mut write_error = live.finish_write().err();
    if let Some(k) = keys {
        let (warnings, saved) = k.borrow_mut().finish();
        for w in warnings {
            eprintln!("h2ledger: warning: {w}");
        }
        write_error = write_error.or(saved.err().map(anyhow::Error::msg));
    }
    Ok(Ended {
        end,
        drops: Some(drops),
        source: format!("{} (live)", live.device),
        write_error,
    })
}

/// This binary's path, for the setcap advice.
pub fn exe() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.canonicalize().ok())
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "h2ledger".to_string())
}

/// While no packet comes, the live loop calls [`Hooks::idle`] again this often.
pub(crate) const IDLE_WAKE: Duration = Duration::from_millis(500);

/// The wall clock in nanoseconds since the epoch.
pub fn now_nanos() -> Nanos {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}
