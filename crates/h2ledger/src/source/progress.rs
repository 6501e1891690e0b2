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
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Packets between two looks at the clock.
const CHECK_EVERY: u64 = 256;
/// The shortest time between two redraws.
const PERIOD: Duration = Duration::from_millis(100);

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

/// Whether a progress display may be drawn (see the module doc): `streams`, the command
/// prints records while it reads; `report_on_terminal`, its report goes to a terminal (stderr
/// with `-w -`).
pub fn wanted(streams: bool, report_on_terminal: bool, quiet: bool) -> bool {
    let stderr = std::io::stderr().is_terminal();
    let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
    let shared = streams && (std::io::stdout().is_terminal() || report_on_terminal);
    stderr && !dumb && !shared && !quiet
}

/// The progress of one read; hidden unless [`wanted`].
pub struct Progress {
    bar: Option<Bar>,
}

struct Bar {
    bar: ProgressBar,
    bytes: Bytes,
    /// Packets and frames as of the last draw, read by the bar's `counts` key.
    shown: Arc<[AtomicU64; 2]>,
    frames: u64,
    packets: u64,
    next_check: u64,
    next_draw: Instant,
    last_bytes: u64,
}

impl Progress {
    /// A progress of `total` bytes (`None`: unknown, standard input), drawn at once when
    /// `enabled` ([`wanted`]).
    pub fn start(enabled: bool, total: Option<u64>, bytes: Bytes) -> Progress {
        if !enabled {
            return Progress { bar: None };
        }
        let shown: Arc<[AtomicU64; 2]> = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
        let counts = shown.clone();
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
            move |_: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(
                    w,
                    "{} packets, {} frames",
                    short(counts[0].load(Relaxed)),
                    short(counts[1].load(Relaxed))
                );
            },
        );
        let bar = ProgressBar::with_draw_target(total, target).with_style(style);
        let mut b = Bar {
            bar,
            bytes: bytes.resolve(),
            shown,
            frames: 0,
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

    /// Frames seen so far (by the view that counts them).
    #[inline]
    pub fn frames(&mut self, n: u64) {
        if let Some(b) = &mut self.bar {
            b.frames = n;
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
        self.shown[0].store(self.packets, Relaxed);
        self.shown[1].store(self.frames, Relaxed);
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
