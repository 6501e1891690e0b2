//! Which local process owns a TCP connection, from /proc (issue 38 point 7).
//!
//! A socket's 4-tuple is in `/proc/<pid>/net/tcp` and `tcp6` (the tables of that process's
//! network namespace) with its inode; the process holding the socket has a file descriptor
//! whose link reads `socket:[INODE]` under `/proc/<pid>/fd/`; its command is
//! `/proc/<pid>/comm` and its control group `/proc/<pid>/cgroup`. A [`Scan`] reads all of it
//! once: the TCP tables of every network namespace /proc shows (one process's tables per
//! namespace, so a process in a container's namespace is found too), and every process's
//! socket descriptors. [`Scan::pid`] then answers for one end of a connection.
//!
//! The root is a parameter so that tests read a fake /proc. Reading another user's
//! `/proc/<pid>/fd` needs root (or CAP_SYS_PTRACE): a scan as another user finds only that
//! user's processes. Every structure is bounded: at most [`MAX_PROCS`] processes and
//! [`MAX_SOCKETS`] sockets per scan (the rest counted in [`Scan::cut`]).

use std::collections::HashMap;
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Processes read per scan; the others are counted in [`Scan::cut`].
pub const MAX_PROCS: usize = 65_536;
/// Sockets (table lines and descriptors) kept per scan; the others are counted.
pub const MAX_SOCKETS: usize = 1 << 20;
/// Bytes of a cgroup path kept.
pub const MAX_CGROUP: usize = 256;

pub use h2ledger_core::tally::{ConnOwners, Owner};

/// One read of /proc: TCP sockets by their two ends, and socket inodes by process.
#[derive(Debug, Default)]
pub struct Scan {
    /// (local, remote) -> socket inode, over every network namespace seen.
    by_ends: HashMap<(SocketAddr, SocketAddr), u64>,
    /// socket inode -> pid (the lowest pid holding it).
    by_inode: HashMap<u64, u32>,
    /// Processes, sockets or table lines left out at a bound.
    pub cut: u64,
    /// Network namespaces whose tables were read.
    pub namespaces: usize,
    /// Processes whose descriptors were read.
    pub processes: usize,
}

/// A /proc tree: the real one at `/proc`, or a fake one in tests.
#[derive(Debug, Clone)]
pub struct Proc {
    root: PathBuf,
}

impl Default for Proc {
    fn default() -> Self {
        Proc::new("/proc")
    }
}

impl Proc {
    /// The /proc tree at `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Proc { root: root.into() }
    }

    fn pids(&self) -> Vec<u32> {
        let Ok(rd) = fs::read_dir(&self.root) else {
            return Vec::new();
        };
        let mut pids: Vec<u32> = rd
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .collect();
        pids.sort_unstable();
        pids
    }

    /// Reads every process's sockets and every namespace's TCP tables.
    pub fn scan(&self) -> Scan {
        let mut s = Scan::default();
        let mut namespaces: HashMap<String, u32> = HashMap::new();
        let pids = self.pids();
        if pids.len() > MAX_PROCS {
            s.cut += (pids.len() - MAX_PROCS) as u64;
        }
        for &pid in pids.iter().take(MAX_PROCS) {
            let dir = self.root.join(pid.to_string());
            // One process's tables per network namespace (the link names it: `net:[N]`).
            if let Ok(ns) = fs::read_link(dir.join("ns/net")) {
                namespaces
                    .entry(ns.to_string_lossy().into_owned())
                    .or_insert(pid);
            }
            let Ok(fds) = fs::read_dir(dir.join("fd")) else {
                continue;
            };
            s.processes += 1;
            for fd in fds.flatten() {
                let Ok(link) = fs::read_link(fd.path()) else {
                    continue;
                };
                let Some(inode) = socket_inode(&link) else {
                    continue;
                };
                if s.by_inode.len() >= MAX_SOCKETS {
                    s.cut += 1;
                    continue;
                }
                s.by_inode.entry(inode).or_insert(pid);
            }
        }
        // Without ns links (a fake root, an old kernel): the reader's own tables.
        let mut tables: Vec<PathBuf> = namespaces
            .values()
            .map(|pid| self.root.join(pid.to_string()).join("net"))
            .collect();
        if tables.is_empty() {
            tables.push(self.root.join("net"));
        }
        tables.sort();
        s.namespaces = tables.len();
        for net in tables {
            for (name, v6) in [("tcp", false), ("tcp6", true)] {
                let Ok(text) = fs::read_to_string(net.join(name)) else {
                    continue;
                };
                for (local, remote, inode) in text.lines().skip(1).filter_map(|l| tcp_line(l, v6)) {
                    if inode == 0 {
                        continue; // TIME_WAIT and other orphans: no process holds them
                    }
                    if s.by_ends.len() >= MAX_SOCKETS {
                        s.cut += 1;
                        continue;
                    }
                    s.by_ends.insert((local, remote), inode);
                }
            }
        }
        s
    }

    /// The command and control group of `pid`; `None` when the process is gone.
    pub fn process(&self, pid: u32) -> Option<Owner> {
        let dir = self.root.join(pid.to_string());
        let comm = fs::read_to_string(dir.join("comm")).ok()?;
        let cgroup = fs::read_to_string(dir.join("cgroup"))
            .ok()
            .and_then(|t| cgroup_path(&t));
        Some(Owner {
            cgroup,
            comm: comm.trim_end_matches('\n').to_owned(),
            pid,
        })
    }
}

impl Scan {
    /// The pid holding the socket whose local end is `local` and remote end `remote`.
    pub fn pid(&self, local: SocketAddr, remote: SocketAddr) -> Option<u32> {
        let inode = self
            .by_ends
            .get(&(local, remote))
            .or_else(|| self.by_ends.get(&(mapped(local), mapped(remote))))?;
        self.by_inode.get(inode).copied()
    }

    /// Sockets in the tables.
    pub fn sockets(&self) -> usize {
        self.by_ends.len()
    }
}

/// A connection's two ends: (client, server).
pub type Ends = (SocketAddr, SocketAddr);

impl Proc {
    /// Both ends of `ends` in `scan`.
    pub fn owners(&self, scan: &Scan, (client, server): Ends) -> ConnOwners {
        ConnOwners {
            client: scan.pid(client, server).and_then(|p| self.process(p)),
            server: scan.pid(server, client).and_then(|p| self.process(p)),
        }
    }
}

/// Connections whose owners are kept ([`Owners`]); later ones are counted, not looked up.
pub const MAX_OWNERS: usize = 16_384;
/// A lookup that missed an end is tried once more after this long: at SYN time the
/// server's socket is not accepted yet, and the client's may not be in the tables.
pub const RETRY_AFTER: Duration = Duration::from_millis(100);

/// What the lookups cost and found (`sniff`'s report says it in a warning).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct OwnerStats {
    /// Connections asked about.
    pub asked: u64,
    /// Scans of /proc made.
    pub scans: u64,
    /// Their total time, nanoseconds.
    pub scan_ns: u64,
    /// Connections with neither end found after the retry.
    pub unknown: u64,
    /// Connections not looked up: [`MAX_OWNERS`] were kept.
    pub cut: u64,
}

#[derive(Default)]
struct Known {
    map: HashMap<Ends, Option<ConnOwners>>,
    stats: OwnerStats,
}

/// Looks up the owners of connections on a thread of its own, asked when a connection is
/// first seen and read when the report is made. The lookups run in this process
/// ([`Owners::in_process`]) or in a helper process that kept root ([`Owners::helper`]:
/// `sniff` gives root up before it parses a packet, and another user's `/proc/PID/fd` needs
/// it); the helper reads only /proc, never a packet.
pub struct Owners {
    tx: Option<std::sync::mpsc::Sender<Ends>>,
    known: Arc<Mutex<Known>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Where the lookups run.
enum Backend {
    Local(Proc),
    Helper {
        child: std::process::Child,
        /// Closed first when the backend goes: the helper ends at the end of its input (it
        /// may run as root while we do not, so it cannot be killed).
        to: Option<std::process::ChildStdin>,
        from: BufReader<std::process::ChildStdout>,
    },
}

impl Backend {
    fn lookup(&mut self, asked: &[Ends], stats: &mut OwnerStats) -> Vec<ConnOwners> {
        match self {
            Backend::Local(p) => {
                let t = Instant::now();
                let scan = p.scan();
                stats.scans += 1;
                stats.scan_ns += t.elapsed().as_nanos() as u64;
                asked.iter().map(|e| p.owners(&scan, *e)).collect()
            }
            Backend::Helper { to, from, .. } => {
                let mut line = String::new();
                for (c, s) in asked {
                    line.push_str(&format!("{c} {s} "));
                }
                line.push('\n');
                let Some(to) = to.as_mut() else {
                    return vec![ConnOwners::default(); asked.len()];
                };
                if to
                    .write_all(line.as_bytes())
                    .and_then(|_| to.flush())
                    .is_err()
                {
                    return vec![ConnOwners::default(); asked.len()];
                }
                let mut out = Vec::with_capacity(asked.len());
                let mut ns = String::new();
                if from.read_line(&mut ns).is_ok() {
                    stats.scans += 1;
                    stats.scan_ns += ns.trim().parse::<u64>().unwrap_or(0);
                }
                for _ in asked {
                    let mut l = String::new();
                    if from.read_line(&mut l).unwrap_or(0) == 0 {
                        out.push(ConnOwners::default());
                        continue;
                    }
                    out.push(decode_answer(&l));
                }
                out
            }
        }
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        if let Backend::Helper { child, to, .. } = self {
            drop(to.take());
            let _ = child.wait();
        }
    }
}

impl Owners {
    /// Lookups in this process.
    pub fn in_process(proc: Proc) -> Owners {
        Owners::start(Backend::Local(proc))
    }

    /// Lookups in the helper `cmd` starts (its stdin and stdout are piped to [`serve`]);
    /// in this process when it cannot start.
    pub fn helper(mut cmd: std::process::Command) -> Owners {
        use std::process::Stdio;
        let spawned = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn();
        match spawned {
            Ok(mut child) => {
                let (Some(to), Some(from)) = (child.stdin.take(), child.stdout.take()) else {
                    return Owners::in_process(Proc::default());
                };
                Owners::start(Backend::Helper {
                    child,
                    to: Some(to),
                    from: BufReader::new(from),
                })
            }
            Err(_) => Owners::in_process(Proc::default()),
        }
    }

    fn start(mut backend: Backend) -> Owners {
        let (tx, rx) = std::sync::mpsc::channel::<Ends>();
        let known = Arc::new(Mutex::new(Known::default()));
        let k = known.clone();
        let thread = std::thread::Builder::new()
            .name("owners".into())
            .spawn(move || {
                let mut retry: Vec<(Instant, Ends)> = Vec::new();
                loop {
                    let wait = retry
                        .first()
                        .map(|(at, _)| at.saturating_duration_since(Instant::now()));
                    let first = match wait {
                        Some(w) => match rx.recv_timeout(w) {
                            Ok(e) => Some(e),
                            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => None,
                            Err(_) => return,
                        },
                        None => match rx.recv() {
                            Ok(e) => Some(e),
                            Err(_) => return,
                        },
                    };
                    let mut asked: Vec<Ends> = first.into_iter().chain(rx.try_iter()).collect();
                    let now = Instant::now();
                    let due = retry.iter().take_while(|(at, _)| *at <= now).count();
                    let retried: Vec<Ends> = retry.drain(..due).map(|(_, e)| e).collect();
                    let n_new = asked.len();
                    asked.extend(&retried);
                    if asked.is_empty() {
                        continue;
                    }
                    let mut stats = OwnerStats::default();
                    let found = backend.lookup(&asked, &mut stats);
                    let mut g = k.lock().unwrap_or_else(|e| e.into_inner());
                    g.stats.scans += stats.scans;
                    g.stats.scan_ns += stats.scan_ns;
                    for (i, (e, o)) in asked.into_iter().zip(found).enumerate() {
                        // A miss (either end): at SYN time the server's socket is not
                        // accepted yet; on another host's connection one end never shows.
                        if (o.client.is_none() || o.server.is_none()) && i < n_new {
                            retry.push((now + RETRY_AFTER, e));
                            continue;
                        }
                        if o.is_empty() {
                            g.stats.unknown += 1;
                        }
                        g.map.insert(e, Some(o));
                    }
                }
            })
            .ok();
        Owners {
            tx: Some(tx),
            known,
            thread,
        }
    }

    /// A connection first seen: its owners are looked up (once; at most [`MAX_OWNERS`]).
    pub fn ask(&self, ends: Ends) {
        let mut g = self.known.lock().unwrap_or_else(|e| e.into_inner());
        if g.map.contains_key(&ends) {
            return;
        }
        if g.map.len() >= MAX_OWNERS {
            g.stats.cut += 1;
            return;
        }
        g.map.insert(ends, None);
        g.stats.asked += 1;
        drop(g);
        if let Some(tx) = &self.tx {
            let _ = tx.send(ends);
        }
    }

    /// The owners found for `ends` (`None`: not asked, or not answered yet).
    pub fn get(&self, ends: Ends) -> Option<ConnOwners> {
        let g = self.known.lock().unwrap_or_else(|e| e.into_inner());
        g.map.get(&ends).cloned().flatten()
    }

    /// Waits until every lookup asked so far is answered (retries included), at most `max`.
    pub fn settle(&self, max: Duration) {
        let end = Instant::now() + max;
        while Instant::now() < end {
            let pending = {
                let g = self.known.lock().unwrap_or_else(|e| e.into_inner());
                g.map.values().any(Option::is_none)
            };
            if !pending {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// One captured packet: a SYN (or SYN-ACK) asks for its connection's owners.
    pub fn packet(&self, linktype: h2ledger_tcp::LinkType, data: &[u8]) {
        if let Ok(Some(seg)) = h2ledger_tcp::link::decode(linktype, data) {
            if seg.flags.syn {
                self.ask(if seg.flags.ack {
                    (seg.dst, seg.src)
                } else {
                    (seg.src, seg.dst)
                });
            }
        }
    }

    /// Sets each connection's `process`: the connections not asked about yet (open before
    /// the capture, no SYN seen) are asked now; waits at most `max` for the answers.
    pub fn fill(&self, conns: &mut [h2ledger_core::tally::ConnLedger], max: Duration) {
        let ends = |c: &h2ledger_core::tally::ConnLedger| -> Option<Ends> {
            Some((c.client.parse().ok()?, c.server.parse().ok()?))
        };
        for c in conns.iter() {
            if let Some(e) = ends(c) {
                self.ask(e);
            }
        }
        self.settle(max);
        for c in conns.iter_mut() {
            c.process = ends(c).and_then(|e| self.get(e)).filter(|o| !o.is_empty());
        }
    }

    /// The connections answered so far whose end on each side a local process owns, counted
    /// by that process's command (`comm`), in the order of the commands' names: the
    /// metrics' `h2ledger_process_connections_total` (decision 381). At most [`MAX_OWNERS`]
    /// connections are kept, so this counts at most that many.
    pub fn by_comm(&self) -> Vec<(h2ledger_core::Side, String, u64)> {
        use h2ledger_core::Side;
        let mut n: std::collections::BTreeMap<(String, Side), u64> = Default::default();
        let g = self.known.lock().unwrap_or_else(|e| e.into_inner());
        for o in g.map.values().flatten() {
            for (s, p) in [(Side::Client, &o.client), (Side::Server, &o.server)] {
                if let Some(p) = p {
                    *n.entry((p.comm.clone(), s)).or_default() += 1;
                }
            }
        }
        n.into_iter().map(|((c, s), k)| (s, c, k)).collect()
    }

    /// What the lookups cost and found so far.
    pub fn stats(&self) -> OwnerStats {
        self.known.lock().unwrap_or_else(|e| e.into_inner()).stats
    }
}

impl Drop for Owners {
    fn drop(&mut self) {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The helper's loop: each line of `r` lists connections as `CLIENT SERVER` pairs; for each
/// line, one scan, then a line with the scan's time in nanoseconds and one line per pair,
/// `OWNER OWNER` (client, server), each `-` or `PID:COMM:CGROUP` with COMM and CGROUP in hex
/// (any byte may be in a command name).
pub fn serve(proc: &Proc, r: impl BufRead, mut w: impl Write) -> std::io::Result<()> {
    for line in r.lines() {
        let line = line?;
        let addrs: Vec<SocketAddr> = line
            .split_ascii_whitespace()
            .filter_map(|a| a.parse().ok())
            .collect();
        let t = Instant::now();
        let scan = proc.scan();
        let mut out = format!("{}\n", t.elapsed().as_nanos());
        for pair in addrs.chunks_exact(2) {
            let o = proc.owners(&scan, (pair[0], pair[1]));
            out.push_str(&encode_owner(o.client.as_ref()));
            out.push(' ');
            out.push_str(&encode_owner(o.server.as_ref()));
            out.push('\n');
        }
        w.write_all(out.as_bytes())?;
        w.flush()?;
    }
    Ok(())
}

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<String> {
    let b: Option<Vec<u8>> = (0..s.len() / 2)
        .map(|i| u8::from_str_radix(s.get(i * 2..i * 2 + 2)?, 16).ok())
        .collect();
    Some(String::from_utf8_lossy(&b?).into_owned())
}

fn encode_owner(o: Option<&Owner>) -> String {
    match o {
        None => "-".into(),
        Some(o) => format!(
            "{}:{}:{}",
            o.pid,
            hex(&o.comm),
            hex(o.cgroup.as_deref().unwrap_or(""))
        ),
    }
}

fn decode_owner(s: &str) -> Option<Owner> {
    let mut p = s.splitn(3, ':');
    let pid = p.next()?.parse().ok()?;
    let comm = unhex(p.next()?)?;
    let cgroup = unhex(p.next()?)?;
    Some(Owner {
        cgroup: (!cgroup.is_empty()).then_some(cgroup),
        comm,
        pid,
    })
}

fn decode_answer(l: &str) -> ConnOwners {
    let mut f = l.split_ascii_whitespace();
    ConnOwners {
        client: f.next().and_then(decode_owner),
        server: f.next().and_then(decode_owner),
    }
}

/// An IPv4 address as the IPv4-mapped IPv6 one a dual-stack socket shows in tcp6.
fn mapped(a: SocketAddr) -> SocketAddr {
    match a.ip() {
        IpAddr::V4(v4) => SocketAddr::new(IpAddr::V6(v4.to_ipv6_mapped()), a.port()),
        IpAddr::V6(_) => a,
    }
}

/// `socket:[12345]` -> 12345.
fn socket_inode(link: &Path) -> Option<u64> {
    link.to_str()?
        .strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// One line of /proc/net/tcp or tcp6: `sl local rem st tx:rx tr:when retr uid timeout inode`.
/// The kernel prints each 32-bit word of an address in host order (`%08X` of the `__be32`),
/// the port in network order as a number (`%04X` of `ntohs`).
fn tcp_line(line: &str, v6: bool) -> Option<(SocketAddr, SocketAddr, u64)> {
    let mut f = line.split_ascii_whitespace();
    let _sl = f.next()?;
    let local = addr(f.next()?, v6)?;
    let remote = addr(f.next()?, v6)?;
    // st, tx:rx, tr:when, retrnsmt, uid, timeout, then the inode.
    let inode = f.nth(6)?.parse().ok()?;
    Some((local, remote, inode))
}

fn addr(s: &str, v6: bool) -> Option<SocketAddr> {
    let (ip, port) = s.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let word = |i: usize| -> Option<[u8; 4]> {
        let w = u32::from_str_radix(ip.get(i * 8..i * 8 + 8)?, 16).ok()?;
        Some(w.to_ne_bytes())
    };
    let ip = if v6 {
        if ip.len() != 32 {
            return None;
        }
        let mut b = [0u8; 16];
        for i in 0..4 {
            b[i * 4..i * 4 + 4].copy_from_slice(&word(i)?);
        }
        IpAddr::V6(Ipv6Addr::from(b))
    } else {
        if ip.len() != 8 {
            return None;
        }
        IpAddr::V4(Ipv4Addr::from(word(0)?))
    };
    Some(SocketAddr::new(ip, port))
}

/// The path of a process's control group from `/proc/<pid>/cgroup`: the first that is not
/// the root `/` of the cgroup v2 line (`0::PATH`), v1's `name=systemd` line, then the other
/// lines in order (a hybrid host keeps v2 at `/` and a container's group in v1's
/// controllers); `None` when all are `/`.
fn cgroup_path(text: &str) -> Option<String> {
    let lines: Vec<(&str, &str)> = text
        .lines()
        .filter_map(|l| {
            let mut p = l.splitn(3, ':');
            let (_, ctl, path) = (p.next()?, p.next()?, p.next()?);
            Some((ctl, path))
        })
        .collect();
    let rank = |ctl: &str| match ctl {
        "" => 0,
        "name=systemd" => 1,
        _ => 2,
    };
    let mut order: Vec<&(&str, &str)> = lines.iter().collect();
    order.sort_by_key(|(ctl, _)| rank(ctl));
    let path = order
        .into_iter()
        .map(|(_, p)| *p)
        .find(|p| *p != "/" && !p.is_empty())?;
    let mut end = path.len().min(MAX_CGROUP);
    while !path.is_char_boundary(end) {
        end -= 1;
    }
    Some(path[..end].to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake /proc: two processes in one namespace (a client and a server on 127.0.0.1),
    /// one in another namespace over IPv6, a TIME_WAIT line, a process that is gone.
    fn fake() -> (PathBuf, Proc) {
        let root = std::env::temp_dir().join(format!(
            "h2ledger-procs-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = fs::remove_dir_all(&root);
        let mk = |pid: u32, comm: &str, cgroup: &str, ns: &str, fds: &[(u32, &str)]| {
            let d = root.join(pid.to_string());
            fs::create_dir_all(d.join("fd")).unwrap();
            fs::create_dir_all(d.join("ns")).unwrap();
            fs::create_dir_all(d.join("net")).unwrap();
            fs::write(d.join("comm"), format!("{comm}\n")).unwrap();
            fs::write(d.join("cgroup"), cgroup).unwrap();
            std::os::unix::fs::symlink(ns, d.join("ns/net")).unwrap();
            for (fd, target) in fds {
                std::os::unix::fs::symlink(target, d.join("fd").join(fd.to_string())).unwrap();
            }
        };
        mk(
            100,
            "nghttpd",
            "0::/system.slice/docker-abc123.scope\n",
            "net:[4026531840]",
            &[(0, "/dev/null"), (3, "socket:[1001]"), (4, "socket:[1003]")],
        );
        mk(
            200,
            "h2load",
            "0::/\n",
            "net:[4026531840]",
            &[(5, "socket:[1002]"), (6, "pipe:[77]")],
        );
        mk(
            300,
            "server",
            "12:cpu:/a\n1:name=systemd:/kubepods/pod1/c1\n",
            "net:[4026532000]",
            &[(7, "socket:[2001]")],
        );
        // Namespace 4026531840's tables (as process 100 sees them): the listener, the server's
        // accepted socket 127.0.0.1:8080 <- 127.0.0.1:40000, the client's, a TIME_WAIT.
        let tcp = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1003 1 0 100 0 0 10 0\n\
   1: 0100007F:1F90 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 1001 1 0 20 4 30 10 -1\n\
   2: 0100007F:9C40 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 1002 1 0 20 4 30 10 -1\n\
   3: 0100007F:9C41 0100007F:1F90 06 00000000:00000000 03:00000CDB 00000000     0        0 0 3 0 0 0 0 0 0\n";
        fs::write(root.join("100/net/tcp"), tcp).unwrap();
        fs::write(root.join("100/net/tcp6"), "  sl  local_address ...\n").unwrap();
        // Namespace 4026532000 (process 300): [::1]:50051 <- [::1]:41000, and an IPv4-mapped
        // dual-stack socket ::ffff:10.0.0.2:50051 <- ::ffff:10.0.0.1:41001.
        let tcp6 = "  sl  local_address                         remote_address                        st ...\n\
   0: 00000000000000000000000001000000:C383 00000000000000000000000001000000:A028 01 00000000:00000000 00:00000000 00000000     0        0 2001 1 0 20 4 30 10 -1\n\
   1: 0000000000000000FFFF00000200000A:C383 0000000000000000FFFF00000100000A:A029 01 00000000:00000000 00:00000000 00000000     0        0 2001 1 0 20 4 30 10 -1\n";
        fs::write(root.join("300/net/tcp6"), tcp6).unwrap();
        fs::write(root.join("300/net/tcp"), "header\ngarbage line\n").unwrap();
        // A process that went away between the listing and the read: no fd dir, no comm.
        fs::create_dir_all(root.join("400")).unwrap();
        (root.clone(), Proc::new(root))
    }

    #[test]
    fn finds_each_side_in_each_namespace() {
        let (root, p) = fake();
        let s = p.scan();
        assert_eq!(s.namespaces, 2);
        assert_eq!(s.processes, 3);
        let a = |s: &str| s.parse::<SocketAddr>().unwrap();
        assert_eq!(s.pid(a("127.0.0.1:8080"), a("127.0.0.1:40000")), Some(100));
        assert_eq!(s.pid(a("127.0.0.1:40000"), a("127.0.0.1:8080")), Some(200));
        // TIME_WAIT has inode 0: nobody.
        assert_eq!(s.pid(a("127.0.0.1:40001"), a("127.0.0.1:8080")), None);
        assert_eq!(s.pid(a("[::1]:50051"), a("[::1]:41000")), Some(300));
        // IPv4 on a dual-stack socket: found by its mapped form.
        assert_eq!(s.pid(a("10.0.0.2:50051"), a("10.0.0.1:41001")), Some(300));
        assert_eq!(s.pid(a("10.0.0.2:50051"), a("10.0.0.9:1")), None);
        assert_eq!(
            p.process(100),
            Some(Owner {
                cgroup: Some("/system.slice/docker-abc123.scope".into()),
                comm: "nghttpd".into(),
                pid: 100
            })
        );
        assert_eq!(p.process(200).unwrap().cgroup, None);
        assert_eq!(
            p.process(300).unwrap().cgroup.as_deref(),
            Some("/kubepods/pod1/c1")
        );
        assert_eq!(p.process(400), None);
        assert_eq!(p.process(999), None);
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn hostile_lines_are_skipped() {
        for l in [
            "",
            "0:",
            "0: 0100007F:1F90",
            "0: 0100007F:ZZZZ 0100007F:1F90 01 a b c d e 5",
            "0: 0100007:1F90 0100007F:1F90 01 a b c d e 5",
            "0: 0100007F:1F90 0100007F:1F90 01 a b c d e x",
            "0: ééééééééé:1F90 0100007F:1F90 01 a b c d e 5",
        ] {
            assert_eq!(tcp_line(l, false), None, "{l:?}");
            assert_eq!(tcp_line(l, true), None, "{l:?}");
        }
        assert_eq!(cgroup_path(""), None);
        assert_eq!(
            cgroup_path("0::/\n1:name=systemd:/\n4:memory:/x\n"),
            Some("/x".into())
        );
        assert_eq!(cgroup_path("0::/\n4:memory:/\n"), None);
        assert_eq!(cgroup_path("garbage"), None);
        let long = format!("0::/{}", "é".repeat(300));
        assert!(cgroup_path(&long).unwrap().len() <= MAX_CGROUP);
        assert_eq!(socket_inode(Path::new("socket:[x]")), None);
        assert_eq!(socket_inode(Path::new("anon_inode:[eventfd]")), None);
    }

    #[test]
    fn the_helper_protocol_round_trips() {
        let (root, p) = fake();
        let input = "127.0.0.1:40000 127.0.0.1:8080 10.0.0.1:41001 10.0.0.2:50051 junk\n";
        let mut out = Vec::new();
        serve(&p, input.as_bytes(), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[0].parse::<u64>().is_ok());
        let a = decode_answer(lines[1]);
        assert_eq!(
            a.client.as_ref().map(|o| (o.pid, o.comm.as_str())),
            Some((200, "h2load"))
        );
        assert_eq!(a.server, p.process(100));
        let b = decode_answer(lines[2]);
        assert_eq!(b.client, None);
        assert_eq!(b.server.map(|o| o.pid), Some(300));
        assert_eq!(decode_owner("1:zz:"), None);
        assert_eq!(decode_answer(""), ConnOwners::default());
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn owners_ask_once_and_retry_once() {
        let (root, p) = fake();
        let o = Owners::in_process(p.clone());
        let a = |s: &str| s.parse::<SocketAddr>().unwrap();
        let known = (a("127.0.0.1:40000"), a("127.0.0.1:8080"));
        let unknown = (a("192.0.2.1:1"), a("192.0.2.2:2"));
        o.ask(known);
        o.ask(known);
        o.ask(unknown);
        o.settle(Duration::from_secs(10));
        assert_eq!(o.get(known).unwrap().server.unwrap().comm, "nghttpd");
        assert_eq!(o.get(unknown), Some(ConnOwners::default()));
        let st = o.stats();
        assert_eq!((st.asked, st.unknown, st.cut), (2, 1, 0));
        // The unknown one was scanned for twice (asked, then retried).
        assert!(st.scans >= 2, "{st:?}");
        drop(o);
        fs::remove_dir_all(root).unwrap();
    }

    /// The real /proc: this test's own listening socket and its connection are ours.
    #[test]
    fn real_proc_finds_this_process() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (srv, peer) = l.accept().unwrap();
        let p = Proc::default();
        let s = p.scan();
        let me = std::process::id();
        assert_eq!(
            s.pid(c.local_addr().unwrap(), c.peer_addr().unwrap()),
            Some(me)
        );
        assert_eq!(s.pid(srv.local_addr().unwrap(), peer), Some(me));
        let o = p.process(me).unwrap();
        assert_eq!(o.pid, me);
        assert!(!o.comm.is_empty());
    }
}
