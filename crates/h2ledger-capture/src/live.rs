//! Live capture through libpcap: open the device, give up root, stream packets through tokio.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{anyhow, bail, Context, Result};
use futures::StreamExt;
use h2ledger_tcp::Nanos;
use pcap::{Active, Capture, Device, Packet, PacketCodec, PacketStream, Precision, Savefile};

/// A snap length that holds a whole 64 KiB loopback segment with its headers.
pub const DEFAULT_SNAPLEN: i32 = 262_144;
/// Kernel buffer, in KiB (tcpdump -B): 32 MiB, which libpcap maps into the process, so it
/// counts in the RSS of a long sniff (decision 95). A full-speed loopback burst while the load
/// generator keeps every core busy needs `-B 131072` (docs/performance.md).
pub const DEFAULT_BUFFER_KIB: i32 = 32 * 1024;

#[derive(Clone, Debug)]
pub struct LiveOptions {
    pub device: String,
    pub filter: Option<String>,
    pub snaplen: i32,
    pub buffer_kib: i32,
    /// Save every packet to this file, like tcpdump -w: pcap with nanosecond timestamps, or
    /// pcapng (with the secrets of `keys`) when the name ends in `.pcapng` or `keys` is set.
    pub write: Option<PathBuf>,
    /// When started as root: the user to switch to once the capture is open (tcpdump -Z).
    pub user: Option<String>,
    /// The `--keys-from` processes, attached already: drained after each packet is captured
    /// and before it is saved.
    pub keys: Option<crate::SharedFeed>,
    /// `--netns PID|NAME|PATH`: the network namespace to capture in, entered before the
    /// device is opened.
    pub netns: Option<String>,
}

/// The file of `--netns`: a process id's /proc/PID/ns/net, a path, or a name under
/// /var/run/netns (what `ip netns add NAME` makes).
pub fn netns_path(arg: &str) -> PathBuf {
    if !arg.is_empty() && arg.bytes().all(|b| b.is_ascii_digit()) {
        PathBuf::from(format!("/proc/{arg}/ns/net"))
    } else if arg.contains('/') {
        PathBuf::from(arg)
    } else {
        Path::new("/var/run/netns").join(arg)
    }
}

/// Moves the calling thread into the network namespace of `arg` (setns(2), CLONE_NEWNET):
/// the capture socket opened after it belongs to that namespace for good, whichever thread
/// reads it later. Needs CAP_SYS_ADMIN (root), checked by the kernel here only.
pub fn enter_netns(arg: &str) -> Result<()> {
    use std::os::fd::AsRawFd;
    let path = netns_path(arg);
    let f = std::fs::File::open(&path).map_err(|e| {
        anyhow!(
            "--netns {arg}: cannot open {}: {e} (give a running process's id, a name from `ip netns list`, or a path)",
            path.display()
        )
    })?;
    // SAFETY: setns on a file descriptor we own, for the calling thread.
    let r = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    if r != 0 {
        let e = std::io::Error::last_os_error();
        let hint = if matches!(e.raw_os_error(), Some(libc::EPERM)) {
            " (entering a network namespace needs root or CAP_SYS_ADMIN)"
        } else if matches!(e.raw_os_error(), Some(libc::EINVAL)) {
            " (not a network namespace)"
        } else {
            ""
        };
        bail!("--netns {arg}: cannot enter {}: {e}{hint}", path.display());
    }
    Ok(())
}

/// Whether `-w FILE` is written as pcapng: its name says so, or secrets are to be saved in it
/// (pcap has no place for them).
pub fn writes_pcapng(path: &Path, keys: bool) -> bool {
    keys || path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("pcapng"))
}

/// The longest a captured packet waits in the kernel before we see it.
pub const DELIVERY_TIMEOUT_MS: i32 = 50;
/// The longest a stopped capture goes on reading what was captured before the stop
/// ([`Live::drain`]). The drain ends at the first packet stamped after the stop, so this only
/// bounds a clock that never says so (a device's own timestamps): 10 s, as a backlog of a
/// loaded host takes seconds to read (1,000 TLS handshakes behind on a 2-core machine shared
/// with a test suite: more than 1 s, which lost 73 of 1,000 calls).
pub const MAX_DRAIN: std::time::Duration = std::time::Duration::from_secs(10);

/// One captured packet, owned.
pub struct Pkt {
    pub ts: Nanos,
    pub data: Vec<u8>,
    /// False when the [`Gate`] turned it away (past `-c` over all `--workers`), or it came
    /// before the fanout group was whole: not saved, not to be read.
    pub kept: bool,
}

/// `sniff --workers N -c COUNT`: asked for each packet before it is saved; false once the
/// workers together have read COUNT.
pub type Gate = Arc<dyn Fn() -> bool + Send + Sync>;

/// The `-w` file, shared by the codec (which writes every packet) and [`Live`] (which flushes
/// it at the end and reports a failed write).
struct Save {
    file: SaveFile,
    /// With `--keys-from` into pcapng: packets held for [`HOLD_NS`] before they are written,
    /// so that a secret the probed process logs only after it *received* a packet (an
    /// OpenSSL server derives the client's traffic secret when the client's Finished arrives,
    /// which often shares a packet with the first request) still goes into the file before
    /// that packet (decision 296). `(capture time, bytes, original length)`.
    held: Option<std::collections::VecDeque<(Nanos, Vec<u8>, u32)>>,
    held_bytes: usize,
    packets: u64,
    /// The first failed flush: libpcap's writes are buffered and report nothing, so the file is
    /// flushed every [`FLUSH_EVERY`] packets to notice a full disk early.
    error: Option<String>,
}

const FLUSH_EVERY: u64 = 256;

/// How long a packet is held before it is written when secrets come from probes (decision
/// 296): longer than a receiver takes from a packet's arrival to the secret it derives from
/// it (a TLS 1.3 server's client traffic secret; 2 s was too short for nghttpd with 1,000
/// handshakes queued); memory is bounded by [`HOLD_MAX_BYTES`] as well.
const HOLD_NS: u64 = 5_000_000_000;
/// At most this many bytes are held; past it the oldest packets are written at once.
const HOLD_MAX_BYTES: usize = 64 << 20;

/// The format of the `-w` file.
enum SaveFile {
    /// libpcap's own writer.
    Pcap(Savefile),
    /// Ours, which can hold the secrets (`h2ledger_keys::pcapng`).
    Pcapng(h2ledger_keys::pcapng::Writer<std::io::BufWriter<Box<dyn Write + Send>>>),
}

impl Save {
    fn packet(&mut self, p: &Packet<'_>) {
        if self.error.is_some() {
            return;
        }
        if let Some(q) = &mut self.held {
            let ts = super::file::ts_nanos(&p.header.ts);
            self.held_bytes += p.data.len();
            q.push_back((ts, p.data.to_vec(), p.header.len));
            self.release(false);
            return;
        }
        match &mut self.file {
            SaveFile::Pcap(f) => f.write(p),
            SaveFile::Pcapng(w) => {
                let ts = super::file::ts_nanos(&p.header.ts);
                if let Err(e) = w.packet(ts, p.data, p.header.len) {
                    self.error = Some(e.to_string());
                    return;
                }
            }
        }
        self.packets += 1;
        if self.packets.is_multiple_of(FLUSH_EVERY) {
            self.flush();
        }
    }

    /// Writes the held packets older than [`HOLD_NS`] (by their capture time against the
    /// clock now), or over [`HOLD_MAX_BYTES`]; with `all`, every one.
    fn release(&mut self, all: bool) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(u64::MAX);
        loop {
            let Some(q) = &mut self.held else { return };
            let due = match q.front() {
                Some((ts, ..)) => {
                    all || self.held_bytes > HOLD_MAX_BYTES
                        || now.saturating_sub((*ts).max(0) as u64) >= HOLD_NS
                }
                None => false,
            };
            if !due || self.error.is_some() {
                return;
            }
            let Some((ts, data, len)) = q.pop_front() else {
                return;
            };
            self.held_bytes -= data.len();
            if let SaveFile::Pcapng(w) = &mut self.file {
                if let Err(e) = w.packet(ts, &data, len) {
                    self.error = Some(e.to_string());
                    return;
                }
            }
            self.packets += 1;
            if self.packets.is_multiple_of(FLUSH_EVERY) {
                self.flush();
            }
        }
    }

    /// Key log lines as a Decryption Secrets Block (pcapng only), before the next packet.
    fn secrets(&mut self, text: &str) {
        if let (None, SaveFile::Pcapng(w)) = (&self.error, &mut self.file) {
            if let Err(e) = w.secrets(text) {
                self.error = Some(e.to_string());
            }
        }
    }

    fn flush(&mut self) {
        if self.error.is_some() {
            return;
        }
        let r = match &mut self.file {
            SaveFile::Pcap(f) => f.flush().map_err(|e| super::file::pcap_reason(&e)),
            SaveFile::Pcapng(w) => w.flush().map_err(|e| e.to_string()),
        };
        if let Err(e) = r {
            self.error = Some(e);
        }
    }
}

/// Takes what the `--keys-from` probes delivered and, when saving, writes it into the file.
fn drain_keys(keys: Option<&crate::SharedFeed>, save: Option<&Arc<Mutex<Save>>>) {
    let Some(k) = keys else { return };
    let mut k = k.borrow_mut();
    k.drain();
    let text = k.take_for_save();
    if let (false, Some(s)) = (text.is_empty(), save) {
        s.lock().unwrap_or_else(|e| e.into_inner()).secrets(&text);
    }
}

struct Codec {
    save: Option<Arc<Mutex<Save>>>,
    keys: Option<crate::SharedFeed>,
    gate: Option<Gate>,
    /// `sniff --workers`: packets stamped before this (the wall clock once every handle had
    /// joined the fanout group) are turned away, as Suricata's AF_PACKET workers do
    /// (src/source-af-packet.c, `AFPSynchronizeStart` and `AFPReadAndDiscardFromRing`:
    /// packets before the sync time are discarded). A handle is bound to the device when
    /// libpcap activates it, before it can join the group, and until it joins it gets a copy
    /// of every packet, which the handles already in the group get too.
    since: Option<Nanos>,
}

impl PacketCodec for Codec {
    type Item = Pkt;
    fn decode(&mut self, p: Packet<'_>) -> Pkt {
        // Secrets first: this packet was sent after any secret that protects it was logged,
        // so that secret waits in the probe's ring now, and goes into the file before it.
        drain_keys(self.keys.as_ref(), self.save.as_ref());
        let ts = super::file::ts_nanos(&p.header.ts);
        if self.since.is_some_and(|t| ts < t) {
            return Pkt {
                ts,
                data: Vec::new(),
                kept: false,
            };
        }
        let kept = self.gate.as_ref().is_none_or(|g| g());
        if let (true, Some(s)) = (kept, self.save.as_ref()) {
            s.lock().unwrap_or_else(|e| e.into_inner()).packet(&p);
        }
        Pkt {
            ts,
            data: p.data.to_vec(),
            kept,
        }
    }
}

/// Drop counts from libpcap (`pcap_stats`).
pub use h2ledger_run::Drops;

pub struct Live {
    stream: PacketStream<Active, Codec>,
    save: Option<(PathBuf, Arc<Mutex<Save>>)>,
    keys: Option<crate::SharedFeed>,
    pub linktype: i32,
    pub device: String,
    /// Who we run as after opening, when we gave root up.
    pub dropped_to: Option<String>,
}

/// The one-line error for a capture that is not permitted.
pub fn permission_error(device: &str) -> anyhow::Error {
    anyhow!(
        "cannot capture on {device}: permission denied. Run as root, or: sudo setcap cap_net_raw,cap_net_admin=eip {}",
        super::exe()
    )
}

/// A device opened and its `-w` file created, not read yet: `sniff --workers N` opens N of
/// them (and joins them in one fanout group) before root is given up.
pub struct Opened {
    cap: Capture<Active>,
    save: Option<(PathBuf, Arc<Mutex<Save>>)>,
    linktype: i32,
    device: String,
}

impl Live {
    /// Opens the device (must be called in a tokio runtime).
    pub fn open(o: &LiveOptions) -> Result<Live> {
        if let Some(ns) = &o.netns {
            enter_netns(ns)?;
        }
        let opened = Opened::open(o)?;
        // The device and the output file are open: nothing below needs root.
        let dropped_to = drop_privileges(o.user.as_deref())?;
        opened.start(o.keys.clone(), dropped_to, None, None)
    }
}

impl Opened {
    /// The capture's socket (an AF_PACKET socket on Linux), for `PACKET_FANOUT`.
    pub fn fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        self.cap.as_raw_fd()
    }

    /// Opens the device and creates the `-w` file; `--netns` is entered by the caller.
    pub fn open(o: &LiveOptions) -> Result<Opened> {
        let devices = Device::list().map_err(|e| {
            anyhow!(
                "cannot list capture devices: {}",
                super::file::pcap_reason(&e)
            )
        })?;
        let Some(dev) = devices.iter().find(|d| d.name == o.device).cloned() else {
            let names: Vec<&str> = devices.iter().map(|d| d.name.as_str()).collect();
            bail!(
                "no capture device \"{}\"; devices here: {}",
                o.device,
                if names.is_empty() {
                    "none visible (are you allowed to capture? run as root)".to_string()
                } else {
                    names.join(", ")
                }
            );
        };
        let cap = Capture::from_device(dev)
            .map_err(|e| anyhow!("{}: {}", o.device, super::file::pcap_reason(&e)))?
            // Not immediate mode: on Linux it makes libpcap use TPACKET_V2, a ring of fixed
            // snaplen-sized slots (a few hundred packets even in 128 MiB), which dropped a third of a
            // full-speed h2load run on a busy machine. TPACKET_V3 packs packets into blocks (the
            // same memory holds hundreds of thousands) and hands a block over within the
            // timeout below.
            .immediate_mode(false)
            .snaplen(o.snaplen)
            .buffer_size(o.buffer_kib.saturating_mul(1024))
            .precision(Precision::Nano)
            .promisc(false)
            .timeout(DELIVERY_TIMEOUT_MS);
        let mut cap = match cap.open() {
            Ok(c) => c,
            Err(e) => {
                let msg = super::file::pcap_reason(&e);
                if msg.contains("ermission") || msg.contains("not permitted") {
                    return Err(permission_error(&o.device));
                }
                bail!("cannot capture on {}: {msg}", o.device);
            }
        };
        if let Some(f) = &o.filter {
            cap.filter(f, true).map_err(|e| {
                anyhow!(
                    "bad filter expression \"{f}\": {}",
                    super::file::pcap_reason(&e)
                )
            })?;
        }
        let save = match &o.write {
            Some(p) => {
                let file = if writes_pcapng(p, o.keys.is_some()) {
                    if !writes_pcapng(p, false) && p.as_os_str() != "-" {
                        eprintln!(
                            "h2ledger: writing {} as pcapng: it holds the TLS secrets, which pcap has no place for",
                            p.display()
                        );
                    }
                    let cant = |e: std::io::Error| {
                        anyhow!("{}: cannot write the capture: {e}", p.display())
                    };
                    let out: Box<dyn Write + Send> = if p.as_os_str() == "-" {
                        Box::new(std::io::stdout())
                    } else {
                        Box::new(std::fs::File::create(p).map_err(cant)?)
                    };
                    let linktype = u16::try_from(cap.get_datalink().0).unwrap_or(0);
                    let w = h2ledger_keys::pcapng::Writer::new(
                        std::io::BufWriter::with_capacity(1 << 16, out),
                        linktype,
                        o.snaplen.max(0) as u32,
                        &o.device,
                    )
                    .map_err(cant)?;
                    SaveFile::Pcapng(w)
                } else {
                    SaveFile::Pcap(cap.savefile(p).map_err(|e| {
                        anyhow!(
                            "{}: cannot write the capture: {}",
                            p.display(),
                            super::file::pcap_reason(&e)
                        )
                    })?)
                };
                Some((
                    p.clone(),
                    Arc::new(Mutex::new(Save {
                        held: (o.keys.is_some() && matches!(file, SaveFile::Pcapng(_)))
                            .then(std::collections::VecDeque::new),
                        held_bytes: 0,
                        file,
                        packets: 0,
                        error: None,
                    })),
                ))
            }
            None => None,
        };
        let linktype = cap.get_datalink().0;
        Ok(Opened {
            cap,
            save,
            linktype,
            device: o.device.clone(),
        })
    }

    /// Starts reading (must be called in the tokio runtime that reads it); `since`: packets
    /// stamped before it are turned away ([`Pkt::kept`] false, not saved).
    pub fn start(
        self,
        keys: Option<crate::SharedFeed>,
        dropped_to: Option<String>,
        gate: Option<Gate>,
        since: Option<Nanos>,
    ) -> Result<Live> {
        let device = self.device;
        let cap = self
            .cap
            .setnonblock()
            .map_err(|e| anyhow!("{device}: {}", super::file::pcap_reason(&e)))?;
        let stream = cap
            .stream(Codec {
                save: self.save.as_ref().map(|(_, s)| s.clone()),
                keys: keys.clone(),
                gate,
                since,
            })
            .map_err(|e| anyhow!("{device}: {}", super::file::pcap_reason(&e)))?;
        Ok(Live {
            stream,
            save: self.save,
            keys,
            linktype: self.linktype,
            device,
            dropped_to,
        })
    }
}

impl Live {
    /// The next packet; `None` when the capture ended.
    pub async fn next(&mut self) -> Option<Result<Pkt>> {
        self.stream
            .next()
            .await
            .map(|r| r.map_err(|e| anyhow!("{}: {}", self.device, super::file::pcap_reason(&e))))
    }

    /// Packets that were already captured when we decided to stop (at `stopped`, the wall
    /// clock): read them for up to `quiet` without a new one arriving. Traffic that goes on
    /// does not hold the stop: the first packet stamped after `stopped` is the last one taken
    /// (it is handed over too, since the codec saved it with -w already), and the whole drain
    /// lasts at most [`MAX_DRAIN`].
    pub async fn drain(
        &mut self,
        quiet: std::time::Duration,
        stopped: Nanos,
        mut f: impl FnMut(Pkt),
    ) {
        let give_up = tokio::time::Instant::now() + MAX_DRAIN;
        while let Ok(Some(Ok(p))) = tokio::time::timeout(quiet, self.next()).await {
            let after = p.ts > stopped;
            f(p);
            if after || tokio::time::Instant::now() >= give_up {
                break;
            }
        }
    }

    /// No packet waits: the secrets delivered meanwhile go into `--keys-out` and the `-w`
    /// file now (so the probes' ring buffer never fills while the network is quiet), and the
    /// held packets whose time has come after them.
    pub fn idle(&mut self) {
        drain_keys(self.keys.as_ref(), self.save.as_ref().map(|(_, s)| s));
        if let Some((_, s)) = &self.save {
            s.lock().unwrap_or_else(|e| e.into_inner()).release(false);
        }
    }

    /// Flushes the `-w` file (the last secrets first): an error when any write to it failed
    /// (a full disk, a closed pipe).
    pub fn finish_write(&mut self) -> Result<()> {
        drain_keys(self.keys.as_ref(), self.save.as_ref().map(|(_, s)| s));
        let Some((path, s)) = &self.save else {
            return Ok(());
        };
        let mut s = s.lock().unwrap_or_else(|e| e.into_inner());
        s.release(true);
        s.flush();
        match &s.error {
            Some(e) => bail!(
                "{}: cannot write the capture: {e}; the packets saved there are incomplete",
                path.display()
            ),
            None => Ok(()),
        }
    }

    pub fn drops(&mut self) -> Drops {
        match self.stream.capture_mut().stats() {
            Ok(s) => Drops {
                received: s.received.into(),
                kernel: s.dropped.into(),
                interface: s.if_dropped.into(),
            },
            Err(_) => Drops::default(),
        }
    }
}

/// Switches from root to `user` (default `nobody`) after the capture is open, as tcpdump -Z
/// does, so that no packet is parsed with privileges. Returns who we run as now, or `None`
/// when nothing changed. Not root, the capabilities granted with setcap (capture, and
/// `--keys-from`'s CAP_SYS_ADMIN) are all given up the same way: the device, the probes and
/// the files are open, and the kernel checks none of them again.
pub fn drop_privileges(user: Option<&str>) -> Result<Option<String>> {
    // SAFETY: plain libc calls with valid, NUL-terminated arguments; getpwnam's result is read
    // before any other call could overwrite it.
    unsafe {
        if libc::geteuid() != 0 {
            return Ok(drop_capabilities()?.then(|| "this user, capabilities dropped".to_string()));
        }
        let name = user.unwrap_or("nobody");
        if name == "root" {
            return Ok(None);
        }
        let cname = std::ffi::CString::new(name).context("user name")?;
        let pw = libc::getpwnam(cname.as_ptr());
        if pw.is_null() {
            bail!("cannot drop root: no user \"{name}\" (choose one with --user)");
        }
        let (uid, gid) = ((*pw).pw_uid, (*pw).pw_gid);
        if libc::setgroups(0, std::ptr::null()) != 0
            || libc::setgid(gid) != 0
            || libc::setuid(uid) != 0
        {
            bail!(
                "cannot drop root to \"{name}\": {}",
                std::io::Error::last_os_error()
            );
        }
        Ok(Some(name.to_string()))
    }
}

/// Clears every capability of the process (effective, permitted, inheritable; ambient ones
/// go with the permitted set). Returns whether it held any.
fn drop_capabilities() -> Result<bool> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    /// _LINUX_CAPABILITY_VERSION_3: two `Data`, for capabilities 0-31 and 32-63.
    const VERSION_3: u32 = 0x2008_0522;
    let mut held = [Data::default(); 2];
    let mut h = Header {
        version: VERSION_3,
        pid: 0,
    };
    // SAFETY: capget(2) with a version 3 header and room for the two data structs it writes.
    let r = unsafe { libc::syscall(libc::SYS_capget, &mut h as *mut Header, held.as_mut_ptr()) };
    if r != 0 || held.iter().all(|d| d.permitted == 0 && d.effective == 0) {
        return Ok(false);
    }
    let none = [Data::default(); 2];
    let mut h = Header {
        version: VERSION_3,
        pid: 0,
    };
    // SAFETY: capset(2) with a version 3 header and two data structs, read only.
    let r = unsafe { libc::syscall(libc::SYS_capset, &mut h as *mut Header, none.as_ptr()) };
    if r != 0 {
        bail!(
            "cannot give up the capabilities after opening the capture: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(true)
}
