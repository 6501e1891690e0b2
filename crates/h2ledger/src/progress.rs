//! Progress while a saved capture is read (`replay`, `calls FILE`, `frames FILE`, `sniff -r
//! FILE`): bytes of the file read out of its size (so an ETA), packets and frames, on stderr,
//! redrawn at most 10 times a second and cleared at the end.
//!
//! Only for a person watching: nothing when stderr is not a terminal, with `-q`, with
//! `TERM=dumb`, or when the view prints its records to the same terminal while it reads
//! (`calls`, `frames` and `sniff --every` with stdout on a terminal). Standard input has no size:
//! it gets a spinner with the bytes, packets and frames so far (decision 90).
//!
//! The cost per packet is an increment and a compare; the clock is read every
//! [`CHECK_EVERY`] packets, the bar drawn at most every [`PERIOD`].

use std::io::IsTerminal as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Frames seen so far, set by the view that counts them ([`frames`]).
static FRAMES: AtomicU64 = AtomicU64::new(0);
/// Packets read so far, as of the last look at the clock (read when the bar is drawn).
static PACKETS: AtomicU64 = AtomicU64::new(0);
/// The view prints records on stdout while it reads ([`set_streaming`]).
static STREAMING: AtomicBool = AtomicBool::new(false);

/// Packets between two looks at the clock.
const CHECK_EVERY: u64 = 256;
/// The shortest time between two redraws.
const PERIOD: Duration = Duration::from_millis(100);

/// Tells the progress how many frames the view has seen (a relaxed store: call it per packet).
#[inline]
pub fn frames(n: u64) {
    FRAMES.store(n, Relaxed);
}

/// The view prints its records on stdout as it reads: no progress when stdout is a terminal
/// too, the two would be drawn over each other.
pub fn set_streaming(on: bool) {
    STREAMING.store(on, Relaxed);
}

/// Where the bytes-read figure comes from.
pub enum Bytes {
    /// A file libpcap reads itself: found among the open descriptors when the progress starts.
    File(std::path::PathBuf),
    /// libpcap's own descriptor of the file: its offset, read from `/proc/self/fdinfo`.
    Fd(Option<u32>),
    /// Counted by the thread that feeds libpcap through a pipe (a compressed file: its
    /// compressed bytes; standard input).
    Counted(Arc<AtomicU64>),
}

impl Bytes {
    fn read(&self) -> Option<u64> {
        match self {
            Bytes::Fd(fd) => offset((*fd)?),
            Bytes::Counted(n) => Some(n.load(Relaxed)),
            Bytes::File(_) => None,
        }
    }

    /// `File` becomes the descriptor that has read furthest into that file: libpcap's, the
    /// only one left open once the capture is open (the pcap crate does not show its
    /// descriptor).
    fn resolve(self) -> Bytes {
        let Bytes::File(path) = self else {
            return self;
        };
        let want = std::fs::canonicalize(&path).ok();
        let fd = std::fs::read_dir("/proc/self/fd")
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| want.is_some() && std::fs::read_link(e.path()).ok() == want)
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .max_by_key(|&fd| offset(fd).unwrap_or(0));
        Bytes::Fd(fd)
    }
}

/// The offset of descriptor `fd` (`pos:` in `/proc/self/fdinfo/FD`).
fn offset(fd: u32) -> Option<u64> {
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).ok()?;
    info.lines()
        .find_map(|l| l.strip_prefix("pos:"))
        .and_then(|v| v.trim().parse().ok())
}

/// A reader that counts the bytes read through it into a shared counter.
pub struct Counting<R> {
    pub r: R,
    pub n: Arc<AtomicU64>,
}

impl<R: std::io::Read> std::io::Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.r.read(buf)?;
        self.n.fetch_add(n as u64, Relaxed);
        Ok(n)
    }
}

/// Whether a progress display is wanted now (see the module doc).
pub fn wanted() -> bool {
    let stderr = std::io::stderr().is_terminal();
    let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
    // `report_is_terminal`: `-w -` sends the running reports to stderr.
    let shared =
        STREAMING.load(Relaxed) && (std::io::stdout().is_terminal() || crate::report_is_terminal());
    stderr && !dumb && !shared && !crate::quiet()
}

/// The progress of one read; hidden unless [`wanted`].
pub struct Progress {
    bar: Option<Bar>,
}

struct Bar {
    bar: ProgressBar,
    bytes: Bytes,
    packets: u64,
    next_check: u64,
    next_draw: Instant,
    last_bytes: u64,
}

impl Progress {
    /// A progress of `total` bytes (`None`: unknown, standard input), drawn at once.
    pub fn start(total: Option<u64>, bytes: Bytes) -> Progress {
        if !wanted() {
            return Progress { bar: None };
        }
        FRAMES.store(0, Relaxed);
        PACKETS.store(0, Relaxed);
        let target = ProgressDrawTarget::stderr_with_hz(10);
        // Under 80 columns at 1M packets; the counts are read when a line is drawn, so one
        // `set_position` is one draw.
        let style = match total {
            Some(_) => ProgressStyle::with_template(
                "{bar:20} {binary_bytes}/{binary_total_bytes} ETA {eta} {counts}",
            )
            .expect("template")
            .progress_chars("=> "),
            None => ProgressStyle::with_template("{spinner} {binary_bytes} read {counts}")
                .expect("template")
                .tick_chars("|/-\\ "),
        }
        .with_key(
            "counts",
            |_: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(
                    w,
                    "{} packets, {} frames",
                    short(PACKETS.load(Relaxed)),
                    short(FRAMES.load(Relaxed))
                );
            },
        );
        let bar = ProgressBar::with_draw_target(total, target).with_style(style);
        let mut b = Bar {
            bar,
            bytes: bytes.resolve(),
            packets: 0,
            next_check: CHECK_EVERY,
            next_draw: Instant::now(),
            last_bytes: 0,
        };
        b.draw(Instant::now());
        Progress { bar: Some(b) }
    }

    /// One packet read.
    #[inline]
    pub fn packet(&mut self) {
        if let Some(b) = &mut self.bar {
            b.packets += 1;
            if b.packets >= b.next_check {
                b.next_check += CHECK_EVERY;
                let now = Instant::now();
                if now >= b.next_draw {
                    b.draw(now);
                }
            }
        }
    }

    /// Clears the display (also on drop).
    pub fn finish(&mut self) {
        if let Some(b) = self.bar.take() {
            b.bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

impl Bar {
    fn draw(&mut self, now: Instant) {
        self.next_draw = now + PERIOD;
        if let Some(n) = self.bytes.read() {
            self.last_bytes = n;
        }
        PACKETS.store(self.packets, Relaxed);
        self.bar.set_position(self.last_bytes);
        if self.bar.length().is_none() {
            self.bar.tick();
        }
    }
}

/// A count in at most 5 characters: exact below 10,000, then 12.3k, 1.23M.
fn short(n: u64) -> String {
    match n {
        0..10_000 => n.to_string(),
        10_000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.2}M", n as f64 / 1e6),
        _ => format!("{:.2}G", n as f64 / 1e9),
    }
}
