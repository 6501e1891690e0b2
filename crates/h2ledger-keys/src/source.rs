//! [`KeySource`]: a uprobe on a running program's `writeKeyLog` and the key lines it yields.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::probe::{find_go_probe, GoAbi, ProbeError, ProbePoint, GO_WRITE_KEY_LOG};
use crate::record::{Decoder, KeyLine, Origin, Stats};
use crate::ssl::{find_ssl_probe, unsupported_library, SslError, SslProbe};

/// What was attached to, and how the probe point was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttachInfo {
    /// The process the probe is limited to (`None`: every process running the executable).
    pub pid: Option<u32>,
    /// The executable (the target of /proc/PID/exe when attached by PID).
    pub exe: PathBuf,
    /// The probe point in a Go executable (`None` when the secrets come from OpenSSL or
    /// BoringSSL, [`AttachInfo::ssl`]).
    pub probe: Option<ProbePoint>,
    /// The OpenSSL or BoringSSL copies probed (issue 37): a shared libssl, or an executable
    /// or shared object with one linked in.
    pub ssl: Vec<SslAttach>,
}

/// One file holding OpenSSL or BoringSSL, and where its probe went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SslAttach {
    /// The file as the process names it (/proc/PID/maps), or as given.
    pub file: PathBuf,
    /// The path the probe was placed by (through /proc/PID/root for a process in another
    /// mount namespace).
    pub opened: PathBuf,
    /// The probe point.
    pub probe: SslProbe,
}

impl fmt::Display for AttachInfo {
    /// One line: `pid 1234 (/usr/bin/server, go1.19.8, register ABI): uprobe on
    /// crypto/tls.(*Config).writeKeyLog at 0x5a8b60, file offset 0x1a8b60, found in the ELF
    /// symbol table`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(probe) = &self.probe else {
            match self.pid {
                Some(p) => write!(f, "pid {p} ({}): ", self.exe.display())?,
                None => f.write_str("every process mapping it: ")?,
            }
            for (n, a) in self.ssl.iter().enumerate() {
                if n > 0 {
                    f.write_str("; and ")?;
                }
                write!(
                    f,
                    "uprobe on {} in {}",
                    a.probe.describe(),
                    a.file.display()
                )?;
            }
            return Ok(());
        };
        match self.pid {
            Some(p) => write!(f, "pid {p} (")?,
            None => f.write_str("every process of (")?,
        }
        let abi = match probe.abi {
            GoAbi::Register => "register ABI",
            GoAbi::Stack => "stack ABI",
        };
        write!(
            f,
            "{}, {}, {abi}): uprobe on {GO_WRITE_KEY_LOG} at {:#x}, file offset {:#x}, found in the {}",
            self.exe.display(),
            probe.go_version.as_deref().unwrap_or("Go of unknown version"),
            probe.address,
            probe.file_offset,
            probe.found_by,
        )
    }
}

/// Why [`KeySource::attach`] failed. Each prints as one line that says what to do.
#[derive(Debug)]
pub enum AttachError {
    /// This build has no BPF support (not Linux on x86-64).
    Unsupported(&'static str),
    /// The process's executable could not be read.
    Process {
        /// The process asked for (`None`: attached by executable).
        pid: Option<u32>,
        /// The executable.
        exe: PathBuf,
        /// What reading it failed with.
        source: io::Error,
    },
    /// The executable has no usable probe point.
    Probe {
        /// The executable.
        exe: PathBuf,
        /// Why it has no probe point.
        source: ProbeError,
    },
    /// A file holding OpenSSL or BoringSSL has no usable probe point (call sites that
    /// disagree, no readable client random, ...).
    Ssl {
        /// The file.
        file: PathBuf,
        /// Why.
        source: SslError,
    },
    /// Not a Go program, and no OpenSSL or BoringSSL mapped (`why` says what was seen).
    NoTls {
        /// The process asked for (`None`: a file given).
        pid: Option<u32>,
        /// Its executable, or the file.
        exe: PathBuf,
        /// What was mapped instead (GnuTLS, NSS, nothing), in words.
        why: String,
    },
    /// The kernel refused a step (`step` names it: ring buffer, program, uprobe, ...).
    Kernel {
        /// The step refused.
        step: &'static str,
        /// The kernel's error.
        source: io::Error,
    },
}

impl fmt::Display for AttachError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttachError::Unsupported(why) => write!(f, "--keys-from: {why}"),
            AttachError::Process {
                pid: Some(p),
                exe,
                source,
            } => {
                write!(
                    f,
                    "--keys-from {p}: cannot read {}: {source}",
                    exe.display()
                )?;
                match source.raw_os_error() {
                    Some(2 | 3) => write!(f, " (no process {p})"),
                    Some(1 | 13) => f.write_str(
                        " (another user's process needs root, or CAP_SYS_PTRACE besides \
                         CAP_SYS_ADMIN; docs/decisions.md #144)",
                    ),
                    _ => Ok(()),
                }
            }
            AttachError::Process {
                pid: None,
                exe,
                source,
            } => {
                write!(f, "--keys-from: cannot read {}: {source}", exe.display())
            }
            AttachError::Probe { exe, source } => {
                write!(f, "--keys-from: {}: {source}", exe.display())
            }
            AttachError::Ssl { file, source } => {
                write!(f, "--keys-from: {}: {source}", file.display())
            }
            AttachError::NoTls {
                pid: Some(p),
                exe,
                why,
            } => write!(f, "--keys-from: pid {p} ({}): {why}", exe.display()),
            AttachError::NoTls {
                pid: None,
                exe,
                why,
            } => {
                write!(f, "--keys-from-lib: {}: {why}", exe.display())
            }
            AttachError::Kernel { step, source } => {
                write!(f, "--keys-from: {step}: {source}")?;
                if matches!(source.raw_os_error(), Some(1 | 13)) {
                    f.write_str(" (uprobes need root or CAP_SYS_ADMIN; docs/decisions.md #144)")?;
                }
                if source.raw_os_error() == Some(38) {
                    f.write_str(" (this kernel has no BPF)")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for AttachError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            AttachError::Unsupported(_) | AttachError::NoTls { .. } => None,
            AttachError::Ssl { source, .. } => Some(source),
            AttachError::Process { source, .. } | AttachError::Kernel { source, .. } => {
                Some(source)
            }
            AttachError::Probe { source, .. } => Some(source),
        }
    }
}

/// Reads the executable and finds the probe point (the pure part of attaching).
pub fn inspect(exe: &Path, pid: Option<u32>) -> Result<ProbePoint, AttachError> {
    inspect_image(exe, pid).map(|(p, _)| p)
}

/// [`inspect`], and the executable's image for the label fallback ([`ExeImage`]).
fn inspect_image(
    exe: &Path,
    pid: Option<u32>,
) -> Result<(ProbePoint, Option<ExeImage>), AttachError> {
    let bytes = std::fs::read(exe).map_err(|source| AttachError::Process {
        pid,
        exe: exe.to_owned(),
        source,
    })?;
    let probe = find_go_probe(&bytes).map_err(|source| AttachError::Probe {
        exe: exe.to_owned(),
        source,
    })?;
    Ok((probe, ExeImage::open(exe, &bytes, pid)))
}

/// The executable's file and its loadable segments, to read a label constant from the file
/// when the process's memory cannot be read: it has exited before its records were read (a
/// short-lived client), or a probe on every process of an executable has no process to read.
/// Go's labels are constants in read-only data, so the file holds the bytes the process saw.
struct ExeImage {
    file: std::fs::File,
    /// `(p_vaddr, p_offset, p_filesz)` of each loadable segment.
    segments: Vec<(u64, u64, u64)>,
    /// What the process's addresses are shifted by: 0 for a fixed-address executable
    /// (`ET_EXEC`, Go's default); a position-independent one's load address, from
    /// /proc/PID/maps (without a process, none: no fallback).
    bias: u64,
}

impl ExeImage {
    fn open(exe: &Path, bytes: &[u8], pid: Option<u32>) -> Option<ExeImage> {
        let elf = crate::elf::Elf::parse(bytes).ok()?;
        let segments: Vec<(u64, u64, u64)> = elf
            .segments()
            .iter()
            .map(|s| (s.vaddr, s.offset, s.filesz))
            .collect();
        // e_type: ET_EXEC 2, ET_DYN 3.
        let bias = match bytes.get(16..18)? {
            [2, 0] => 0,
            [3, 0] => {
                let first = segments.iter().map(|s| s.0).min()?;
                load_address(pid?)?.checked_sub(first & !0xfff)?
            }
            _ => return None,
        };
        Some(ExeImage {
            file: std::fs::File::open(exe).ok()?,
            segments,
            bias,
        })
    }

    /// `len` bytes at the process's address `ptr`, if one segment's file image holds them.
    fn read(&self, ptr: u64, len: usize) -> Option<Vec<u8>> {
        let va = ptr.checked_sub(self.bias)?;
        let end = va.checked_add(len as u64)?;
        let &(v, off, _) = self
            .segments
            .iter()
            .find(|&&(v, _, size)| va >= v && end <= v.saturating_add(size))?;
        let mut buf = vec![0u8; len];
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileExt;
            self.file.read_exact_at(&mut buf, off + (va - v)).ok()?;
        }
        #[cfg(not(unix))]
        {
            let _ = off;
            return None;
        }
        Some(buf)
    }
}

/// Where process `pid` mapped the start of its executable: the first line of
/// /proc/PID/maps with file offset 0 whose path is the target of /proc/PID/exe.
fn load_address(pid: u32) -> Option<u64> {
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    maps.lines().find_map(|l| {
        // start-end perms offset dev inode path
        let mut w = l.split_whitespace();
        let range = w.next()?;
        let offset = w.nth(1)?;
        let path = w.nth(2)?;
        (u64::from_str_radix(offset, 16).ok()? == 0 && Path::new(path) == exe)
            .then(|| u64::from_str_radix(range.split('-').next()?, 16).ok())
            .flatten()
    })
}

/// A file a process maps with execute permission.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Mapped {
    /// Its path as /proc/PID/maps gives it (in the process's mount namespace).
    pub(crate) path: PathBuf,
    /// For a file deleted since it was mapped (a library upgraded under a running server):
    /// the `start-end` of one mapping, whose /proc/PID/map_files entry still reaches it.
    pub(crate) deleted: Option<String>,
}

/// The files a process maps with execute permission (/proc/PID/maps), each once, in the
/// order first mapped; pseudo-files (`[vdso]`) left out.
pub(crate) fn mapped_code(maps: &str) -> Vec<Mapped> {
    let mut out: Vec<Mapped> = Vec::new();
    for l in maps.lines() {
        // start-end perms offset dev inode path
        let mut w = l.splitn(6, ' ');
        let (Some(range), Some(perms), Some(_), Some(_), Some(_), Some(path)) =
            (w.next(), w.next(), w.next(), w.next(), w.next(), w.next())
        else {
            continue;
        };
        let path = path.trim_start();
        if !perms.contains('x') || !path.starts_with('/') {
            continue;
        }
        let (path, deleted) = match path.strip_suffix(" (deleted)") {
            Some(p) => (p, Some(range.to_string())),
            None => (path, None),
        };
        let p = PathBuf::from(path);
        if !out.iter().any(|m| m.path == p) {
            out.push(Mapped { path: p, deleted });
        }
    }
    out
}

/// Counts of a [`KeySource`]: the decoder's, and records the BPF program could not write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SourceStats {
    /// The decoder's counts.
    pub decoded: Stats,
    /// Calls whose record was lost because the ring buffer was full (a secret missed).
    pub ring_full: u64,
}

/// The largest number of label addresses remembered for the fallback read (Go has six label
/// constants).
const MAX_LABELS: usize = 64;

/// Size of the ring buffer: 1 MiB holds about 4,300 records (232 bytes + an 8-byte header),
/// 1,000 TLS 1.3 handshakes seen from both ends between two polls.
pub const RING_SIZE: u32 = 1 << 20;

/// A uprobe on `crypto/tls.(*Config).writeKeyLog` of a running Go program, and the secrets it
/// yields as key log lines.
///
/// Attach while privileged: root, or CAP_SYS_ADMIN (uprobes need it since Linux's 2025
/// revert "perf: Revert to requiring CAP_SYS_ADMIN for uprobes", also in 6.1 stable; CAP_BPF
/// and CAP_PERFMON are no longer enough), plus CAP_SYS_PTRACE for another user's process
/// (its /proc/PID/exe). The kernel checks privileges when the maps, the program and the
/// uprobe are made and /proc/PID/mem is opened, never after, so privileges may be dropped as
/// soon as [`KeySource::attach`] returns (tested: `examples/keys-from.rs` with
/// `H2LEDGER_KEYS_DROP_TO`). The probe is removed when the value is dropped.
pub struct KeySource {
    info: AttachInfo,
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    kernel: linux::Kernel,
    /// /proc/PID/mem, opened at attach, for the label fallback.
    mem: Option<std::fs::File>,
    /// The executable, for the label fallback when the memory cannot be read.
    image: Option<ExeImage>,
    labels: HashMap<u64, Vec<u8>>,
    /// OpenSSL/BoringSSL labels by their place relative to the probed function's entry (a
    /// record whose label could not be read asks by `label_ptr - ip`).
    ssl_labels: HashMap<u64, String>,
    decoder: Decoder,
}

impl fmt::Debug for KeySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeySource")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl KeySource {
    /// Attaches to the process `pid`. A Go program: its executable is /proc/PID/exe (which
    /// also reaches a binary inside a container's mount namespace, or one deleted since it
    /// started). Any other: every file it maps executable (/proc/PID/maps, opened through
    /// /proc/PID/root) that holds OpenSSL or BoringSSL (a shared libssl, or a static copy in
    /// an executable or shared object) gets a probe on its `ssl_log_secret`. The probes fire
    /// for that process's threads only.
    pub fn attach(pid: u32) -> Result<Self, AttachError> {
        let link = PathBuf::from(format!("/proc/{pid}/exe"));
        let shown = std::fs::read_link(&link).unwrap_or_else(|_| link.clone());
        match inspect_image(&link, Some(pid)) {
            Err(AttachError::Probe {
                source: ProbeError::NotGo,
                ..
            }) => Self::attach_ssl(pid, shown),
            Err(AttachError::Probe { source, .. }) => Err(AttachError::Probe {
                exe: shown.clone(),
                source,
            }),
            Err(e) => Err(e),
            Ok((probe, exe)) => {
                let mem = std::fs::File::open(format!("/proc/{pid}/mem")).ok();
                Self::start(
                    AttachInfo {
                        pid: Some(pid),
                        exe: shown,
                        probe: Some(probe),
                        ssl: Vec::new(),
                    },
                    &link,
                    mem,
                    exe,
                )
            }
        }
    }

    /// The OpenSSL and BoringSSL copies process `pid` maps, each probed.
    fn attach_ssl(pid: u32, exe: PathBuf) -> Result<Self, AttachError> {
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).map_err(|source| {
            AttachError::Process {
                pid: Some(pid),
                exe: PathBuf::from(format!("/proc/{pid}/maps")),
                source,
            }
        })?;
        let mut ssl = Vec::new();
        let mut refused = Vec::new();
        let mut unsupported = Vec::new();
        for Mapped {
            path: file,
            deleted,
        } in mapped_code(&maps)
        {
            let name = file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if let Some(why) = unsupported_library(&name) {
                unsupported.push(format!("{name}: {why}"));
                continue;
            }
            // Through the process's root (its mount namespace), or for a deleted file through
            // its mapping.
            let (opened, file) = match deleted {
                None => (
                    PathBuf::from(format!("/proc/{pid}/root{}", file.display())),
                    file,
                ),
                Some(range) => (
                    PathBuf::from(format!("/proc/{pid}/map_files/{range}")),
                    PathBuf::from(format!("{} (deleted)", file.display())),
                ),
            };
            let Ok(bytes) = std::fs::read(&opened) else {
                continue;
            };
            match find_ssl_probe(&bytes) {
                Ok(probe) => ssl.push(SslAttach {
                    file,
                    opened,
                    probe,
                }),
                Err(SslError::NoLabels | SslError::Elf(_)) => {}
                Err(e) => refused.push(AttachError::Ssl { file, source: e }),
            }
        }
        if ssl.is_empty() {
            if let Some(e) = refused.into_iter().next() {
                return Err(e);
            }
            let why = if unsupported.is_empty() {
                "not a Go program, and it maps no OpenSSL or BoringSSL (no file it maps holds the \
                 key log labels); supported: Go's crypto/tls, OpenSSL 1.1.1/3.x, BoringSSL"
                    .to_string()
            } else {
                format!(
                    "not supported: {}; supported: Go's crypto/tls, OpenSSL 1.1.1/3.x, BoringSSL",
                    unsupported.join("; ")
                )
            };
            return Err(AttachError::NoTls {
                pid: Some(pid),
                exe,
                why,
            });
        }
        let mem = std::fs::File::open(format!("/proc/{pid}/mem")).ok();
        Self::start(
            AttachInfo {
                pid: Some(pid),
                exe,
                probe: None,
                ssl,
            },
            Path::new(""),
            mem,
            None,
        )
    }

    /// Attaches to a file for every process that maps it, now or later (`--keys-from-lib`):
    /// a shared libssl, or an executable or shared object with OpenSSL or BoringSSL inside;
    /// or a Go executable.
    pub fn attach_file(file: &Path) -> Result<Self, AttachError> {
        let bytes = std::fs::read(file).map_err(|source| AttachError::Process {
            pid: None,
            exe: file.to_owned(),
            source,
        })?;
        match find_ssl_probe(&bytes) {
            Ok(probe) => Self::start(
                AttachInfo {
                    pid: None,
                    exe: file.to_owned(),
                    probe: None,
                    ssl: vec![SslAttach {
                        file: file.to_owned(),
                        opened: file.to_owned(),
                        probe,
                    }],
                },
                Path::new(""),
                None,
                None,
            ),
            Err(SslError::NoLabels) => match find_go_probe(&bytes) {
                Ok(_) => Self::attach_exe(file, None),
                Err(ProbeError::NotGo) => Err(AttachError::NoTls {
                    pid: None,
                    exe: file.to_owned(),
                    why: "neither OpenSSL, BoringSSL nor a Go program with crypto/tls inside"
                        .into(),
                }),
                Err(source) => Err(AttachError::Probe {
                    exe: file.to_owned(),
                    source,
                }),
            },
            Err(source) => Err(AttachError::Ssl {
                file: file.to_owned(),
                source,
            }),
        }
    }

    /// Attaches to the Go executable at `exe`, for the process `pid` only or, with `None`,
    /// for every process that runs it (now or later).
    pub fn attach_exe(exe: &Path, pid: Option<u32>) -> Result<Self, AttachError> {
        let (probe, image) = inspect_image(exe, pid)?;
        let mem = pid.and_then(|p| std::fs::File::open(format!("/proc/{p}/mem")).ok());
        Self::start(
            AttachInfo {
                pid,
                exe: exe.to_owned(),
                probe: Some(probe),
                ssl: Vec::new(),
            },
            exe,
            mem,
            image,
        )
    }

    /// The probes of `info` placed: Go's at `go_path`, or each OpenSSL/BoringSSL one.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    fn start(
        info: AttachInfo,
        go_path: &Path,
        mem: Option<std::fs::File>,
        image: Option<ExeImage>,
    ) -> Result<Self, AttachError> {
        use std::os::fd::AsRawFd;
        let mut kernel = linux::Kernel::new()?;
        let (ring, drops) = (kernel.ring.fd(), kernel.drops.as_raw_fd());
        if let Some(p) = &info.probe {
            kernel.add(
                go_path,
                p.file_offset,
                info.pid,
                &crate::bpf::program_bytes(ring, drops),
                "h2l_write_key_log",
            )?;
        }
        let mut ssl_labels = HashMap::new();
        for a in &info.ssl {
            kernel.add(
                &a.opened,
                a.probe.file_offset,
                info.pid,
                &crate::bpf::ssl_program_bytes(ring, drops, a.probe.random),
                "h2l_ssl_log_sec",
            )?;
            for (va, l) in &a.probe.labels {
                ssl_labels.insert(va.wrapping_sub(a.probe.address), l.clone());
            }
        }
        Ok(KeySource {
            info,
            kernel,
            mem,
            image,
            labels: HashMap::new(),
            ssl_labels,
            decoder: Decoder::new(),
        })
    }

    #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
    fn start(
        _info: AttachInfo,
        _path: &Path,
        _mem: Option<std::fs::File>,
        _image: Option<ExeImage>,
    ) -> Result<Self, AttachError> {
        Err(AttachError::Unsupported(
            "this build of h2ledger has no BPF support (Linux on x86-64 only)",
        ))
    }

    /// What was attached to.
    pub fn attached(&self) -> &AttachInfo {
        &self.info
    }

    /// The key lines that arrived since the last call, each once, oldest first. Never blocks.
    pub fn poll(&mut self) -> Vec<KeyLine> {
        self.poll_with_origin()
            .into_iter()
            .map(|(l, _)| l)
            .collect()
    }

    /// As [`KeySource::poll`], with the process, thread and time of each.
    pub(crate) fn poll_with_origin(&mut self) -> Vec<(KeyLine, Origin)> {
        let mut out = Vec::new();
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        {
            let KeySource {
                kernel,
                mem,
                image,
                labels,
                ssl_labels,
                decoder,
                info,
            } = self;
            kernel.ring.drain(crate::record::RECORD_LEN, |bytes| {
                let fallback = |ptr: u64, len: usize| {
                    if len == 0 {
                        // An ssl_log_secret record: the label relative to the probe.
                        return ssl_labels.get(&ptr).map(|l| l.as_bytes().to_vec());
                    }
                    read_label(mem.as_ref(), image.as_ref(), labels, ptr, len)
                };
                if let Some((line, origin)) = decoder.push(bytes, fallback) {
                    // A probe limited to a process only fires for it; check anyway.
                    if info.pid.is_none_or(|p| p == origin.pid) {
                        out.push((line, origin));
                    }
                }
            });
        }
        out
    }

    /// Blocks until records wait or `timeout` passes (`None`: no limit); `true` when they wait.
    /// For an event loop, [`KeySource::fd`] is readable at the same moment.
    pub fn wait(&self, timeout: Option<Duration>) -> io::Result<bool> {
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        return crate::sys::wait_readable(self.kernel.ring.fd(), timeout);
        #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
        {
            let _ = timeout;
            Ok(false)
        }
    }

    /// A file descriptor that polls readable while records wait (tokio's `AsyncFd`, epoll).
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    pub fn fd(&self) -> std::os::fd::RawFd {
        self.kernel.ring.fd()
    }

    /// What was decoded and lost so far.
    pub fn stats(&self) -> SourceStats {
        SourceStats {
            decoded: self.decoder.stats(),
            #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
            ring_full: crate::sys::counter_read(&self.kernel.drops).unwrap_or(0),
            #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
            ring_full: 0,
        }
    }
}

/// The label at `ptr` in the process: from the cache, /proc/PID/mem or, when the process is
/// gone (or none was named), the executable's file ([`ExeImage`]). Only a key log label is
/// remembered.
fn read_label(
    mem: Option<&std::fs::File>,
    image: Option<&ExeImage>,
    cache: &mut HashMap<u64, Vec<u8>>,
    ptr: u64,
    len: usize,
) -> Option<Vec<u8>> {
    if let Some(l) = cache.get(&ptr).filter(|l| l.len() == len) {
        return Some(l.clone());
    }
    let from_mem = || {
        let mut buf = vec![0u8; len];
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileExt;
            mem?.read_exact_at(&mut buf, ptr).ok()?;
        }
        #[cfg(not(unix))]
        {
            let _ = (mem?, ptr);
            return None;
        }
        Some(buf)
    };
    let buf = from_mem()
        .filter(|b| crate::record::is_label(b))
        .or_else(|| image?.read(ptr, len))?;
    if cache.len() < MAX_LABELS && crate::record::is_label(&buf) {
        cache.insert(ptr, buf.clone());
    }
    Some(buf)
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod linux {
    use std::os::fd::OwnedFd;
    use std::path::Path;

    use super::{AttachError, RING_SIZE};
    use crate::bpf::LICENSE;
    use crate::sys;

    /// The kernel objects of one attachment: a ring buffer and a drop counter shared by one
    /// or more programs, each on its uprobe; dropping them removes the probes.
    pub(super) struct Kernel {
        /// Declared first: dropped first, the uprobes go before the programs and maps.
        events: Vec<OwnedFd>,
        progs: Vec<OwnedFd>,
        pub(super) drops: OwnedFd,
        pub(super) ring: sys::RingBuf,
    }

    impl Kernel {
        /// The ring buffer and the drop counter, mapped.
        pub(super) fn new() -> Result<Self, AttachError> {
            let k = |step| move |source| AttachError::Kernel { step, source };
            let ring_fd =
                sys::ringbuf_create(RING_SIZE).map_err(k("creating the BPF ring buffer"))?;
            let drops = sys::counter_create().map_err(k("creating the BPF drop counter"))?;
            let ring =
                sys::RingBuf::new(ring_fd, RING_SIZE).map_err(k("mapping the BPF ring buffer"))?;
            Ok(Kernel {
                events: Vec::new(),
                progs: Vec::new(),
                drops,
                ring,
            })
        }

        /// Loads `insns` and places it on a uprobe at `offset` of `path`.
        pub(super) fn add(
            &mut self,
            path: &Path,
            offset: u64,
            pid: Option<u32>,
            insns: &[u8],
            name: &str,
        ) -> Result<(), AttachError> {
            let k = |step| move |source| AttachError::Kernel { step, source };
            let pmu = sys::uprobe_pmu_type().map_err(|e| AttachError::Kernel {
                step: "no uprobe support in this kernel (/sys/bus/event_source/devices/uprobe)",
                source: e,
            })?;
            let prog =
                sys::prog_load(insns, LICENSE, name).map_err(k("loading the BPF program"))?;
            let path = path.to_str().ok_or(AttachError::Kernel {
                step: "attaching the uprobe",
                source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "path is not UTF-8"),
            })?;
            let event = sys::uprobe_attach(pmu, path, offset, pid, &prog)
                .map_err(k("attaching the uprobe"))?;
            self.events.push(event);
            self.progs.push(prog);
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapped_code_files_once() {
        let maps = "55d0-55d1 r--p 00000000 fe:01 12 /usr/bin/curl\n\
                    55d1-55d2 r-xp 00001000 fe:01 12 /usr/bin/curl\n\
                    7f00-7f01 r-xp 0001f000 fe:01 34 /usr/lib/x86_64-linux-gnu/libssl.so.3\n\
                    7f01-7f02 r-xp 0001f000 fe:01 34 /usr/lib/x86_64-linux-gnu/libssl.so.3\n\
                    7f02-7f03 r-xp 00000000 00:00 0 \n\
                    7f03-7f04 r-xp 00000000 fe:01 56 /tmp/gone.so (deleted)\n\
                    7ffc-7ffd r-xp 00000000 00:00 0                          [vdso]\n\
                    7f05-7f06 r-xp 00000000 fe:01 78 /opt/my dir/lib x.so\n";
        let m = |p: &str, d: Option<&str>| Mapped {
            path: PathBuf::from(p),
            deleted: d.map(str::to_string),
        };
        assert_eq!(
            mapped_code(maps),
            [
                m("/usr/bin/curl", None),
                m("/usr/lib/x86_64-linux-gnu/libssl.so.3", None),
                m("/tmp/gone.so", Some("7f03-7f04")),
                m("/opt/my dir/lib x.so", None),
            ]
        );
    }

    /// A constant of this (position-independent) test binary, read back from its file at the
    /// address the process sees, as a label of a process that has exited would be.
    #[test]
    fn a_label_is_read_from_the_executable_file() {
        static LABEL: &[u8] = b"CLIENT_HANDSHAKE_TRAFFIC_SECRET";
        let exe = std::env::current_exe().unwrap();
        let bytes = std::fs::read(&exe).unwrap();
        let image = ExeImage::open(&exe, &bytes, Some(std::process::id())).expect("an image");
        let ptr = LABEL.as_ptr() as u64;
        assert_eq!(image.read(ptr, LABEL.len()).as_deref(), Some(LABEL));
        // Through the fallback, without the process's memory: read once, then remembered.
        let mut cache = HashMap::new();
        let got = read_label(None, Some(&image), &mut cache, ptr, LABEL.len());
        assert_eq!(got.as_deref(), Some(LABEL));
        assert_eq!(cache.get(&ptr).map(Vec::as_slice), Some(LABEL));
        // Outside every segment, or past the end of one: nothing.
        assert_eq!(image.read(u64::MAX - 4, 8), None);
        assert_eq!(image.read(ptr, usize::MAX / 2), None);
        // Without a process, a position-independent executable's addresses are unknown.
        assert!(ExeImage::open(&exe, &bytes, None).is_none());
    }
}
