//! `sniff --workers N`: N capture handles on one device joined in one Linux AF_PACKET fanout
//! group with `PACKET_FANOUT_HASH`, so that the kernel hands each packet to one handle by its
//! flow hash (both directions of a TCP connection to the same one, as Zeek's and Suricata's
//! AF_PACKET workers rely on), and each handle read by its own worker thread.
//!
//! libpcap has no API for fanout: the socket option is set on each handle's file descriptor
//! after activation (the socket is bound to the device then, which the kernel requires) and
//! before the first packet is read (decision 372). Until it joins, a bound handle gets a copy
//! of every packet: what is stamped before the whole group joined is turned away
//! ([`Group::since`], decision 398).

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use h2ledger_run::{Drops, End, Stop};
use h2ledger_tcp::Nanos;
use tokio::sync::watch;

use super::live::{self, LiveOptions, Opened};

/// `PACKET_FANOUT` (the socket option) and `PACKET_FANOUT_HASH` (the mode: by the packet's
/// flow hash), from the kernel's include/uapi/linux/if_packet.h (`#define PACKET_FANOUT 18`,
/// `#define PACKET_FANOUT_HASH 0`), as the libc crate spells them.
pub const PACKET_FANOUT: libc::c_int = libc::PACKET_FANOUT;
/// See [`PACKET_FANOUT`].
pub const PACKET_FANOUT_HASH: u32 = libc::PACKET_FANOUT_HASH;
/// include/uapi/linux/if_packet.h `#define PACKET_FANOUT_FLAG_UNIQUEID 0x2000` (Linux 4.17):
/// the kernel picks a group id no other socket uses, so that we never join (and take packets
/// from) another program's group. Not in the libc crate.
pub const PACKET_FANOUT_FLAG_UNIQUEID: u32 = 0x2000;

/// include/uapi/linux/if_packet.h `#define PACKET_FANOUT_FLAG_DEFRAG 0x8000`: the kernel
/// reassembles IPv4 fragments before it hashes them (af_packet.c `packet_rcv_fanout`,
/// `ip_check_defrag`), so a fragmented segment reaches its connection's worker whole and not
/// in pieces spread by a hash without ports (Suricata's AF_PACKET `defrag: yes` sets the same
/// flag). Every socket of a group passes the same flags (the kernel stores them at the first
/// join, without `UNIQUEID`).
pub const PACKET_FANOUT_FLAG_DEFRAG: u32 = libc::PACKET_FANOUT_FLAG_DEFRAG;

/// The `-w FILE` of worker `k`: `out.pcap` gives `out.0.pcap`, `out.1.pcap`, ... (decision 373).
pub fn worker_path(p: &Path, k: usize) -> PathBuf {
    let stem = p.file_stem().map(|s| s.to_string_lossy().into_owned());
    let name = match (stem, p.extension()) {
        (Some(s), Some(e)) => format!("{s}.{k}.{}", e.to_string_lossy()),
        (Some(s), None) => format!("{s}.{k}"),
        (None, _) => format!("{k}"),
    };
    p.with_file_name(name)
}

/// Joins the socket `fd` to fanout group `id` in hash mode; `None` asks the kernel for a new
/// group and returns its id.
fn join(fd: std::os::fd::RawFd, id: Option<u16>) -> std::io::Result<u16> {
    let arg: u32 = match id {
        Some(id) => ((PACKET_FANOUT_HASH | PACKET_FANOUT_FLAG_DEFRAG) << 16) | u32::from(id),
        None => {
            (PACKET_FANOUT_HASH | PACKET_FANOUT_FLAG_DEFRAG | PACKET_FANOUT_FLAG_UNIQUEID) << 16
        }
    };
    let len = std::mem::size_of::<u32>() as libc::socklen_t;
    // SAFETY: setsockopt on a socket this process owns, reading a u32 we pass by pointer.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_PACKET,
            PACKET_FANOUT,
            (&arg as *const u32).cast(),
            len,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if let Some(id) = id {
        return Ok(id);
    }
    let (mut got, mut len): (u32, libc::socklen_t) = (0, len);
    // SAFETY: getsockopt into a u32 with its length, on our socket.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_PACKET,
            PACKET_FANOUT,
            (&mut got as *mut u32).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((got & 0xffff) as u16)
}

/// The handles of one fanout group, opened and joined; root given up.
pub struct Group {
    /// One handle a worker.
    pub handles: Vec<Opened>,
    /// Who we run as now, when root was given up.
    pub dropped_to: Option<String>,
    /// The wall clock once every handle had joined: each worker turns away the packets
    /// stamped before it (a handle not yet in the group got a copy of every packet).
    pub since: Nanos,
}

/// Opens `n` handles on the device of `o` (each with its own `-w` file, [`worker_path`]),
/// joins them in one new fanout group, then gives root up.
pub fn open_group(o: &LiveOptions, n: usize) -> Result<Group> {
    if let Some(ns) = &o.netns {
        live::enter_netns(ns)?;
    }
    let mut group = None;
    let mut opened = Vec::with_capacity(n);
    for k in 0..n {
        let mut ok = o.clone();
        ok.write = o.write.as_deref().map(|p| worker_path(p, k));
        let h = Opened::open(&ok)?;
        let id = join(h.fd(), group).map_err(|e| {
            anyhow!(
                "--workers: cannot join capture handle {k} on {} to a PACKET_FANOUT group: {e} (Linux AF_PACKET only)",
                o.device
            )
        })?;
        group = Some(id);
        opened.push(h);
    }
    // Every handle is in the group: a packet stamped from now on went to one of them only.
    let since = super::now_nanos();
    let dropped_to = live::drop_privileges(o.user.as_deref())?;
    Ok(Group {
        handles: opened,
        dropped_to,
        since,
    })
}

/// What the workers share: the stop (set by the controller or by the worker that reached
/// `-c`) and the packets counted against `-c`.
pub struct Control {
    pub stop: watch::Sender<Option<Stop>>,
    pub count: Option<u64>,
    pub packets: AtomicU64,
}

impl Control {
    pub fn new(count: Option<u64>) -> Control {
        Control {
            stop: watch::channel(None).0,
            count,
            packets: AtomicU64::new(0),
        }
    }

    pub fn stop(&self, s: Stop) {
        self.stop.send_if_modified(|v| {
            let first = v.is_none();
            v.get_or_insert(s);
            first
        });
    }

    /// Counts a packet against `-c`: `Break` when it is past the count (not to be read).
    fn admit(&self) -> ControlFlow<()> {
        let Some(n) = self.count else {
            return ControlFlow::Continue(());
        };
        let k = self.packets.fetch_add(1, Ordering::Relaxed) + 1;
        if k >= n {
            self.stop(Stop::Count);
        }
        if k > n {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }

    /// Waits (on its own runtime) for SIGINT, SIGTERM, `--duration` or a worker's stop, and
    /// sets the stop. `ready` is told once the signals are watched.
    pub fn control(&self, duration: Option<Duration>, ready: std::sync::mpsc::Sender<()>) {
        use tokio::signal::unix::{signal, SignalKind};
        let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            self.stop(Stop::Interrupted);
            return;
        };
        rt.block_on(async {
            let (Ok(mut int), Ok(mut term)) = (
                signal(SignalKind::interrupt()),
                signal(SignalKind::terminate()),
            ) else {
                self.stop(Stop::Interrupted);
                let _ = ready.send(());
                return;
            };
            let _ = ready.send(());
            let mut rx = self.stop.subscribe();
            let deadline = duration.map(|d| tokio::time::Instant::now() + d);
            let s = tokio::select! {
                _ = int.recv() => Stop::Interrupted,
                _ = term.recv() => Stop::Terminated,
                _ = async { tokio::time::sleep_until(deadline.expect("guarded")).await }, if deadline.is_some() => Stop::Duration,
                _ = rx.wait_for(Option::is_some) => return,
            };
            self.stop(s);
        });
    }
}

/// One worker's end: a failed `-w` (its drop counters are in its report).
pub struct WorkerEnd {
    pub write_error: Option<anyhow::Error>,
}

/// Reads one handle of the group into `hooks` until the stop (on a runtime of its own
/// thread), by the one live loop ([`crate::live_loop`]) with the group's stop; `since` is
/// [`Group::since`], `every` the `--every` period, `keys` this worker's tap of the
/// `--keys-from` secrets (its `-w` file gets every one, decision 417). Returns how it ended and
/// the drop counters, for `Session::finish`.
pub fn work(
    h: Opened,
    since: Nanos,
    ctl: &Arc<Control>,
    every: Option<Duration>,
    keys: Option<crate::Tap>,
    hooks: &mut impl crate::Hooks,
) -> (Result<WorkerEnd>, End, Option<Drops>) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let e = anyhow!("cannot start a worker's runtime: {e}");
            ctl.stop(Stop::Interrupted);
            return (Err(e), End::Damaged("no runtime".into()), None);
        }
    };
    rt.block_on(async {
        // With -c, the count is taken as each packet is decoded, before it is saved: the -w
        // files hold exactly the packets read.
        let gate: Option<live::Gate> = ctl.count.map(|_| {
            let c = Arc::clone(ctl);
            Arc::new(move || c.admit().is_continue()) as live::Gate
        });
        let keys = keys.map(|t| std::rc::Rc::new(std::cell::RefCell::new(t)));
        let mut live = match h.start(keys, None, gate, Some(since)) {
            Ok(l) => l,
            Err(e) => {
                // The others stop too: the run fails with this error.
                ctl.stop(Stop::Interrupted);
                return (Err(e), End::Damaged(String::new()), None);
            }
        };
        let mut stop = crate::StopWatch::Shared(ctl.stop.subscribe());
        let end = match crate::live_loop(&mut live, &mut stop, every, None, hooks).await {
            Ok(end) => end,
            Err(e) => {
                ctl.stop(Stop::Interrupted);
                let drops = live.drops();
                return (Err(e), End::Damaged(String::new()), Some(drops));
            }
        };
        // A worker's own stop (its hooks said so) stops the others too.
        if let End::Stopped(s) = &end {
            ctl.stop(*s);
        }
        let drops = live.drops();
        let write_error = live.finish_write().err();
        (Ok(WorkerEnd { write_error }), end, Some(drops))
    })
}

/// Refuses what `--workers N > 1` cannot do with one line.
pub fn check(o: &LiveOptions) -> Result<()> {
    if o.write.as_deref().is_some_and(|p| p.as_os_str() == "-") {
        bail!("--workers N > 1 writes one file per worker: give -w FILE, not -w - (decision 373)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_worker_writes_its_own_file() {
        assert_eq!(
            worker_path(Path::new("/tmp/out.pcap"), 1),
            Path::new("/tmp/out.1.pcap")
        );
        assert_eq!(
            worker_path(Path::new("cap.pcapng"), 0),
            Path::new("cap.0.pcapng")
        );
        assert_eq!(worker_path(Path::new("dump"), 3), Path::new("dump.3"));
    }

    #[test]
    fn count_admits_exactly_n_packets_over_threads() {
        let ctl = Control::new(Some(1000));
        let admitted = AtomicU64::new(0);
        std::thread::scope(|sc| {
            for _ in 0..4 {
                sc.spawn(|| {
                    for _ in 0..400 {
                        if ctl.admit().is_continue() {
                            admitted.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        assert_eq!(admitted.into_inner(), 1000);
        assert_eq!(*ctl.stop.borrow(), Some(Stop::Count));
        let free = Control::new(None);
        assert!(free.admit().is_continue());
        assert_eq!(*free.stop.borrow(), None);
    }
}
