//! The kernel side: maps, the program, the uprobe and the ring buffer, through bpf(2),
//! perf_event_open(2), ioctl(2), mmap(2) and poll(2). The one module of the crate with unsafe
//! code; every block says what it relies on. Linux on x86-64 only.
//!
//! What libbpf does for the same steps, read to learn the kernel's contract (libbpf
//! src/libbpf.c `perf_event_open_probe`, `bpf_program__attach_perf_event_opts`; src/ringbuf.c
//! `ringbuf_process_ring`): a uprobe is a perf event of the dynamic `uprobe` PMU whose
//! `config1` points to the file's path and `config2` holds the file offset; the program is
//! attached with PERF_EVENT_IOC_SET_BPF, then the event is enabled. A ring buffer map is
//! mapped as one read-write consumer page, then read-only the producer page and the data
//! pages twice in a row, so that a record wrapping the end reads contiguously.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

// bpf(2) commands and types (include/uapi/linux/bpf.h).
const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_MAP_LOOKUP_ELEM: libc::c_long = 1;
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_MAP_TYPE_ARRAY: u32 = 2;
const BPF_MAP_TYPE_RINGBUF: u32 = 27;
const BPF_PROG_TYPE_KPROBE: u32 = 2;
// perf_event_open(2) (include/uapi/linux/perf_event.h).
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
const PERF_ATTR_SIZE_VER5: u32 = 112;
/// `_IO('$', 0)` and `_IOW('$', 8, __u32)`.
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
const PERF_EVENT_IOC_SET_BPF: libc::c_ulong = 0x4004_2408;
// Ring buffer record header bits (include/uapi/linux/bpf.h).
const BPF_RINGBUF_BUSY_BIT: u32 = 1 << 31;
const BPF_RINGBUF_DISCARD_BIT: u32 = 1 << 30;
const BPF_RINGBUF_HDR_SZ: u64 = 8;

/// The prefix of `union bpf_attr` that BPF_MAP_CREATE reads.
#[repr(C)]
#[derive(Default)]
struct MapCreateAttr {
    map_type: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    map_flags: u32,
    inner_map_fd: u32,
    numa_node: u32,
    map_name: [u8; 16],
}

/// The prefix of `union bpf_attr` that BPF_MAP_LOOKUP_ELEM reads.
#[repr(C)]
#[derive(Default)]
struct MapElemAttr {
    map_fd: u32,
    _pad: u32,
    key: u64,
    value: u64,
    flags: u64,
}

/// The prefix of `union bpf_attr` that BPF_PROG_LOAD reads.
#[repr(C)]
#[derive(Default)]
struct ProgLoadAttr {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
}

/// `struct perf_event_attr` up to PERF_ATTR_SIZE_VER5.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    /// `uprobe_path` for the uprobe PMU.
    config1: u64,
    /// `probe_offset` for the uprobe PMU.
    config2: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_stack_user: u32,
    clockid: i32,
    sample_regs_intr: u64,
    aux_watermark: u32,
    sample_max_stack: u16,
    _reserved: u16,
}

const _: () = assert!(std::mem::size_of::<PerfEventAttr>() == PERF_ATTR_SIZE_VER5 as usize);

fn bpf<T>(cmd: libc::c_long, attr: &mut T) -> io::Result<libc::c_long> {
    // SAFETY: `attr` is a live, initialised `#[repr(C)]` prefix of `union bpf_attr` and its
    // size is passed, so the kernel reads (and for lookups writes through the pointers in it)
    // no more than that; fields past the prefix count as zero.
    let r = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            attr as *mut T as *mut libc::c_void,
            std::mem::size_of::<T>() as libc::c_uint,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn owned(fd: libc::c_long) -> OwnedFd {
    // SAFETY: `fd` was just returned by a successful syscall that creates a file descriptor,
    // and nothing else owns it.
    unsafe { OwnedFd::from_raw_fd(fd as RawFd) }
}

fn name16(name: &str) -> [u8; 16] {
    let mut b = [0u8; 16];
    let n = name.len().min(15);
    b[..n].copy_from_slice(&name.as_bytes()[..n]);
    b
}

/// Creates a map.
pub(crate) fn map_create(
    map_type: u32,
    key: u32,
    value: u32,
    entries: u32,
    name: &str,
) -> io::Result<OwnedFd> {
    let mut attr = MapCreateAttr {
        map_type,
        key_size: key,
        value_size: value,
        max_entries: entries,
        map_name: name16(name),
        ..Default::default()
    };
    bpf(BPF_MAP_CREATE, &mut attr).map(owned)
}

/// A ring buffer map of `size` bytes (a power of two, a multiple of the page size).
pub(crate) fn ringbuf_create(size: u32) -> io::Result<OwnedFd> {
    map_create(BPF_MAP_TYPE_RINGBUF, 0, 0, size, "h2l_keys")
}

/// An array map of one u64 (the drop counter).
pub(crate) fn counter_create() -> io::Result<OwnedFd> {
    map_create(BPF_MAP_TYPE_ARRAY, 4, 8, 1, "h2l_drops")
}

/// Reads the u64 at index 0 of an array map.
pub(crate) fn counter_read(map: &OwnedFd) -> io::Result<u64> {
    let key: u32 = 0;
    let mut value: u64 = 0;
    let mut attr = MapElemAttr {
        map_fd: map.as_raw_fd() as u32,
        key: &key as *const u32 as u64,
        value: &mut value as *mut u64 as u64,
        ..Default::default()
    };
    bpf(BPF_MAP_LOOKUP_ELEM, &mut attr)?;
    Ok(value)
}

/// Loads a kprobe-type program (uprobes run kprobe programs). On failure the error carries
/// the verifier's last line.
pub(crate) fn prog_load(insns: &[u8], license: &str, name: &str) -> io::Result<OwnedFd> {
    let license =
        CString::new(license).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let load = |log: &mut Vec<u8>, level: u32| {
        let mut attr = ProgLoadAttr {
            prog_type: BPF_PROG_TYPE_KPROBE,
            insn_cnt: (insns.len() / 8) as u32,
            insns: insns.as_ptr() as u64,
            license: license.as_ptr() as u64,
            log_level: level,
            log_size: log.len() as u32,
            log_buf: if log.is_empty() {
                0
            } else {
                log.as_mut_ptr() as u64
            },
            prog_name: name16(name),
            ..Default::default()
        };
        bpf(BPF_PROG_LOAD, &mut attr).map(owned)
    };
    match load(&mut Vec::new(), 0) {
        Ok(fd) => Ok(fd),
        Err(e)
            if e.raw_os_error() == Some(libc::EACCES) || e.raw_os_error() == Some(libc::EINVAL) =>
        {
            // Again with the verifier's log, to say why.
            let mut log = vec![0u8; 64 * 1024];
            let again = load(&mut log, 1);
            let text =
                String::from_utf8_lossy(&log[..log.iter().position(|&c| c == 0).unwrap_or(0)])
                    .into_owned();
            let last = text
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .to_owned();
            match again {
                Ok(fd) => Ok(fd),
                Err(e2) => Err(io::Error::new(e2.kind(), format!("{e2}; verifier: {last}"))),
            }
        }
        Err(e) => Err(e),
    }
}

/// The dynamic PMU type of uprobes, from sysfs.
pub(crate) fn uprobe_pmu_type() -> io::Result<u32> {
    let t = std::fs::read_to_string("/sys/bus/event_source/devices/uprobe/type")?;
    t.trim()
        .parse()
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "unreadable uprobe PMU type"))
}

/// Opens an entry uprobe on `path` at file `offset`, for the threads of process `pid` (all
/// processes with `None`), attaches `prog` and enables it.
pub(crate) fn uprobe_attach(
    pmu: u32,
    path: &str,
    offset: u64,
    pid: Option<u32>,
    prog: &OwnedFd,
) -> io::Result<OwnedFd> {
    let path = CString::new(path).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let mut attr = PerfEventAttr {
        kind: pmu,
        size: PERF_ATTR_SIZE_VER5,
        config1: path.as_ptr() as u64,
        config2: offset,
        // sample_period 1 as libbpf sets it; the BPF program runs on every hit anyway.
        sample_period: 1,
        ..Default::default()
    };
    // A per-process event (cpu -1) fires for every thread sharing the process's memory (the
    // kernel's uprobe filter compares mm, kernel/trace/trace_uprobe.c
    // `trace_uprobe_filter_event`); a system-wide one needs a cpu, and its program still runs
    // on all of them (libbpf: `pid < 0 ? -1 : pid`, `pid == -1 ? 0 : -1`).
    let (pid, cpu) = match pid {
        Some(p) => (p as libc::pid_t, -1),
        None => (-1, 0),
    };
    // SAFETY: `attr` is a valid perf_event_attr of the size it declares; `path` outlives the
    // call (the kernel resolves it during perf_event_open).
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &mut attr as *mut PerfEventAttr,
            pid,
            cpu as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = owned(fd);
    for (req, arg) in [
        (PERF_EVENT_IOC_SET_BPF, prog.as_raw_fd()),
        (PERF_EVENT_IOC_ENABLE, 0),
    ] {
        // SAFETY: both requests take an int argument by value on a perf event fd we own.
        if unsafe { libc::ioctl(fd.as_raw_fd(), req as _, arg) } < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(fd)
}

/// The consumer side of a ring buffer map.
pub(crate) struct RingBuf {
    map: OwnedFd,
    page: usize,
    mask: u64,
    /// The consumer page (read-write).
    consumer: *mut libc::c_void,
    /// The producer page followed by the data pages mapped twice (read-only).
    producer: *mut libc::c_void,
    producer_len: usize,
}

// SAFETY: the mappings belong to this value alone and are only touched through `&mut self`
// (reads) or in `drop`; moving them to another thread is as safe as moving the fd.
unsafe impl Send for RingBuf {}

impl RingBuf {
    /// Maps the ring buffer map `map` of `size` bytes.
    pub(crate) fn new(map: OwnedFd, size: u32) -> io::Result<Self> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let fd = map.as_raw_fd();
        // SAFETY: a fresh shared mapping of the map's consumer page, as the kernel's ring
        // buffer mmap handler (kernel/bpf/ringbuf.c `ringbuf_map_mmap_kern`) allows: page 0
        // writable, the rest read-only.
        let consumer = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                page,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if consumer == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let producer_len = page + 2 * size as usize;
        // SAFETY: as above, from offset one page: the producer page and the data twice.
        let producer = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                producer_len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd,
                page as libc::off_t,
            )
        };
        if producer == libc::MAP_FAILED {
            let e = io::Error::last_os_error();
            // SAFETY: unmapping the mapping made just above.
            unsafe { libc::munmap(consumer, page) };
            return Err(e);
        }
        Ok(RingBuf {
            map,
            page,
            mask: u64::from(size) - 1,
            consumer,
            producer,
            producer_len,
        })
    }

    /// The map's fd: readable (poll/epoll) when records wait.
    pub(crate) fn fd(&self) -> RawFd {
        self.map.as_raw_fd()
    }

    fn consumer_pos(&self) -> &AtomicU64 {
        // SAFETY: the consumer page is mapped, page-aligned and lives as long as `self`; the
        // kernel reads this u64 concurrently, hence the atomic.
        unsafe { &*(self.consumer as *const AtomicU64) }
    }

    fn producer_pos(&self) -> &AtomicU64 {
        // SAFETY: as for `consumer_pos`; the kernel writes this u64 concurrently.
        unsafe { &*(self.producer as *const AtomicU64) }
    }

    /// Hands each committed record (a copy, at most `max` bytes) to `f`, oldest first, and
    /// frees its space. Returns the number of records.
    pub(crate) fn drain(&mut self, max: usize, mut f: impl FnMut(&[u8])) -> usize {
        let mut buf = vec![0u8; max];
        let mut n = 0;
        let mut cons = self.consumer_pos().load(Ordering::Acquire);
        loop {
            let prod = self.producer_pos().load(Ordering::Acquire);
            if cons >= prod {
                return n;
            }
            while cons < prod {
                let at = (cons & self.mask) as usize;
                // SAFETY: `at` < size, and a header is 8-byte aligned inside the first copy
                // of the data pages, which start one page into the producer mapping.
                let hdr = unsafe {
                    &*((self.producer as *const u8).add(self.page + at) as *const AtomicU32)
                };
                let raw = hdr.load(Ordering::Acquire);
                if raw & BPF_RINGBUF_BUSY_BIT != 0 {
                    return n;
                }
                let len = raw & !(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT);
                if u64::from(len) > self.mask {
                    // Not something the kernel writes: stop reading rather than run off.
                    return n;
                }
                if raw & BPF_RINGBUF_DISCARD_BIT == 0 {
                    let take = (len as usize).min(max);
                    // SAFETY: the record's bytes are committed (busy bit clear, read with
                    // acquire) and lie within the double mapping (at + 8 + len < 2 * size);
                    // the kernel does not touch them until the consumer position passes.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            (self.producer as *const u8)
                                .add(self.page + at + BPF_RINGBUF_HDR_SZ as usize),
                            buf.as_mut_ptr(),
                            take,
                        );
                    }
                    f(&buf[..take]);
                    n += 1;
                }
                cons += (u64::from(len) + BPF_RINGBUF_HDR_SZ + 7) & !7;
                self.consumer_pos().store(cons, Ordering::Release);
            }
        }
    }
}

impl Drop for RingBuf {
    fn drop(&mut self) {
        // SAFETY: the two mappings made in `new`, with their lengths; nothing refers to them
        // once `self` goes.
        unsafe {
            libc::munmap(self.consumer, self.page);
            libc::munmap(self.producer, self.producer_len);
        }
    }
}

/// Waits until `fd` is readable or `timeout` passes; `true` when readable.
pub(crate) fn wait_readable(fd: RawFd, timeout: Option<Duration>) -> io::Result<bool> {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = timeout.map_or(-1, |t| t.as_millis().min(i32::MAX as u128) as libc::c_int);
    loop {
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut p, 1, ms) };
        if r >= 0 {
            return Ok(r > 0);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}
