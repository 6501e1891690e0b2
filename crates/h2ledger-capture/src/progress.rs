//! Progress while a saved capture is read (`replay`, `calls FILE`, `frames FILE`, `sniff -r
//! FILE`): bytes of the file read out of its size (so an ETA), packets and frames, on stderr,
//! redrawn at most 10 times a second and cleared at the end.
//!
//! Only for a person watching: nothing when stderr is not a terminal, with `-q`, with
//! `TERM=dumb`, or when the view prints its records to the same terminal while it reads
//! (`calls`, `frames` and `sniff --every` with stdout on a terminal). Standard input has no size:
//! it gets a spinner with the bytes, packets and frames so far (decision 90).
//!
//! The display itself is h2ledger-output's [`Progress`]; here: when it is wanted, and where
//! the bytes-read figure comes from.

use std::io::IsTerminal as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use h2ledger_output::progress::Progress;
use indicatif::ProgressDrawTarget;

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

/// The progress of one read of `total` bytes, on stderr when `enabled` ([`wanted`]).
pub fn start(enabled: bool, total: Option<u64>, bytes: Bytes) -> Progress {
    if !enabled {
        return Progress::hidden();
    }
    let bytes = bytes.resolve();
    Progress::start(
        ProgressDrawTarget::stderr_with_hz(10),
        total,
        Box::new(move || bytes.read()),
    )
}
