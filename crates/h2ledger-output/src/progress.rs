//! A progress display while a saved capture is read: bytes read out of the file's size (so an
//! ETA) or, without a size, a spinner; packets and frames so far. Redrawn at most every
//! [`PERIOD`] (the clock read every [`CHECK_EVERY`] packets, so a packet costs an increment
//! and a compare) and cleared at the end. Drawn on the target the caller gives (the binary:
//! stderr, when a person watches it; see its `source::progress`).
#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Packets between two looks at the clock.
pub const CHECK_EVERY: u64 = 256;
/// The shortest time between two redraws.
pub const PERIOD: Duration = Duration::from_millis(100);

/// The bytes read so far, asked at each redraw (`None`: unknown now, the last figure stays).
pub type BytesRead = Box<dyn FnMut() -> Option<u64>>;

/// The progress of one read; [`Progress::hidden`] draws nothing.
pub struct Progress {
    bar: Option<Bar>,
}

struct Bar {
    bar: ProgressBar,
    bytes: BytesRead,
    /// Packets and frames as of the last draw, read by the bar's `counts` key.
    shown: Arc<[AtomicU64; 2]>,
    frames: u64,
    packets: u64,
    next_check: u64,
    next_draw: Instant,
    last_bytes: u64,
}

impl Progress {
    /// Nothing drawn.
    pub fn hidden() -> Progress {
        Progress { bar: None }
    }

    /// A progress of `total` bytes (`None`: unknown, standard input) on `target`, drawn at once.
    pub fn start(target: ProgressDrawTarget, total: Option<u64>, bytes: BytesRead) -> Progress {
        let shown: Arc<[AtomicU64; 2]> = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
        let counts = shown.clone();
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
            bytes,
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
        if let Some(n) = (self.bytes)() {
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
