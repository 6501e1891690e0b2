//! Which local process owns a TCP connection, from /proc (issue 38 point 7).
//!
//! A socket's 4-tuple is in `/proc/<pid>/net/tcp` and `tcp6` (the tables of that process's
//! network namespace) with its inode; the process holding the socket has a file descriptor
//! whose link reads `socket:[INODE]` under `/proc/<pid>/fd/`; its command is
//! `/proc/<pid>/comm` and its control group `/proc/<pid>/cgroup`. A [`Scan`] reads all of it
//! once: the TCP tables of every network namespace /proc shows (one process's tables per
//! namespace, so a process in a container's namespace is found too), and every process's
//! socket descriptors. [`Scan::owner`] then answers for one end of a connection.
//!
//! The root is a parameter so that tests read a fake /proc. Reading another user's
//! `/proc/<pid>/fd` needs root (or CAP_SYS_PTRACE): a scan as another user finds only that
//! user's processes. Every structure is bounded: at most [`MAX_PROCS`] processes and
//! [`MAX_SOCKETS`] sockets per scan (the rest counted in [`Scan::cut`]).

use std::collections::HashMap;
use std::fs;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};

/// Processes read per scan; the others are counted in [`Scan::cut`].
pub const MAX_PROCS: usize = 65_536;
/// Sockets (table lines and descriptors) kept per scan; the others are counted.
pub const MAX_SOCKETS: usize = 1 << 20;
/// Bytes of a cgroup path kept.
pub const MAX_CGROUP: usize = 256;

/// The process that owns one end of a connection.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Owner {
    /// Its control group's path (cgroup v2's, else v1's `name=systemd` or first hierarchy's),
    /// `None` when it is the root group `/`. A container runtime's group names the container
    /// (`/system.slice/docker-<id>.scope`, `/kubepods/...`).
    pub cgroup: Option<String>,
    /// `/proc/<pid>/comm`: the command, at most 15 bytes as the kernel keeps it.
    pub comm: String,
    /// The process id (as /proc shows it: in the reader's pid namespace).
    pub pid: u32,
}

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

/// The path of a process's control group from `/proc/<pid>/cgroup`: the cgroup v2 line
/// (`0::PATH`), else v1's `name=systemd` line, else the first; `None` for the root `/`.
fn cgroup_path(text: &str) -> Option<String> {
    let lines: Vec<(&str, &str)> = text
        .lines()
        .filter_map(|l| {
            let mut p = l.splitn(3, ':');
            let (_, ctl, path) = (p.next()?, p.next()?, p.next()?);
            Some((ctl, path))
        })
        .collect();
    let path = lines
        .iter()
        .find(|(ctl, _)| ctl.is_empty())
        .or_else(|| lines.iter().find(|(ctl, _)| *ctl == "name=systemd"))
        .or(lines.first())?
        .1;
    if path == "/" || path.is_empty() {
        return None;
    }
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
        assert_eq!(cgroup_path("garbage"), None);
        let long = format!("0::/{}", "é".repeat(300));
        assert!(cgroup_path(&long).unwrap().len() <= MAX_CGROUP);
        assert_eq!(socket_inode(Path::new("socket:[x]")), None);
        assert_eq!(socket_inode(Path::new("anon_inode:[eventfd]")), None);
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
