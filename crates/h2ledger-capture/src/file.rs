//! Reading packets from saved captures, plain or compressed (gzip, zstd: known by their magic
//! bytes, not by the file name; also on standard input). A pcapng is read whole by
//! h2ledger-run's walker ([`BlockReader`]), its Decryption Secrets Blocks handed over in file
//! order among the packets, and libpcap only compiles and runs the filter (decision 402); a
//! classic pcap goes through libpcap's offline reader, its plain records read in large blocks
//! by the same walker (decision 264).

use std::io::{Read, Write as _};
use std::path::Path;
use std::thread::JoinHandle;

use anyhow::{anyhow, Result};
use h2ledger_tcp::Nanos;
use pcap::{Capture, Offline, Precision};

use h2ledger_run::input::{compression_of, decoder, BlockReader, Filled, Found};

use super::progress;
use h2ledger_output::progress::Progress;

mod ng;
use ng::{Ng, Opened, Source, SHB_MAGIC};

/// An open saved capture (pcap or pcapng; `-` is standard input).
pub struct SavedCapture {
    /// `None` once the capture is closed (so that the decompressing thread can be joined), and
    /// for a pcapng, which libpcap does not read.
    cap: Option<Capture<Offline>>,
    /// A pcapng: its walker and the blocks read at the open (up to its first interface).
    ng: Option<Ng>,
    pub name: String,
    /// The capture's link type (a pcapng: its first interface's; each packet has its own).
    pub linktype: i32,
    /// The thread that feeds libpcap through a pipe: decompressing, or copying standard input.
    feeder: Option<JoinHandle<std::io::Result<()>>>,
    /// What the feeder decodes ("gzip", "zstd"), for its errors.
    pub compression: Option<&'static str>,
    /// For the progress display: the file's size (`None` on standard input) and where the
    /// bytes read so far are found.
    size: Option<u64>,
    read: progress::Bytes,
    /// A regular file without a filter, of a link type libpcap hands over untouched: read in
    /// large blocks by the reading thread, its packets handed over where they lie in the block
    /// (libpcap takes over at the first record it might read otherwise; decision 264).
    blocks: Option<progress::Counting<std::fs::File>>,
    /// A filter that is only `tcp port P or tcp port Q ...` (what `--port` makes): applied here
    /// to the TCP segment our decoder finds, not by libpcap (decision 470).
    ports: Option<Vec<u16>>,
}

/// The ports of a filter made only of `tcp port P` terms joined by `or` (`--port P`), which
/// libpcap's code cannot see through a VLAN tag, an MPLS label, a tunnel, IPv6 extension
/// headers, a BSD loopback header in the other byte order, or a raw link type it does not
/// know (12, 14); `None` for any other filter, which libpcap compiles.
fn ports_only(filter: &str) -> Option<Vec<u16>> {
    filter
        .split(" or ")
        .map(|t| t.trim().strip_prefix("tcp port ")?.parse::<u16>().ok())
        .collect()
}

/// Whether a packet is a TCP segment from or to one of `ports`, as [`h2ledger_tcp::link`]
/// decodes it.
/// An IP fragment passes when it is not the first (it has no ports; its datagram never
/// completes without the first) or when the first's TCP header names one of `ports`.
fn on_ports(linktype: i32, data: &[u8], ports: &[u16]) -> bool {
    use h2ledger_tcp::link::{decode_any, Decoded};
    let port = |b: &[u8]| u16::from_be_bytes([b[0], b[1]]);
    match decode_any(h2ledger_tcp::LinkType(linktype), data) {
        Ok(Some(Decoded::Tcp(seg))) => {
            ports.contains(&seg.src.port()) || ports.contains(&seg.dst.port())
        }
        Ok(Some(Decoded::Fragment(f))) => match f.payload.get(..4) {
            _ if f.offset > 0 => true,
            Some(b) if f.proto == 6 => ports.contains(&port(b)) || ports.contains(&port(&b[2..])),
            _ => false,
        },
        _ => false,
    }
}

/// A pipe that libpcap reads as a file (`/dev/fd/N`), fed by a thread from `r`.
fn piped(
    r: Box<dyn Read + Send>,
) -> std::io::Result<(String, std::io::PipeReader, JoinHandle<std::io::Result<()>>)> {
    use std::os::fd::AsRawFd;
    let (reader, mut writer) = std::io::pipe()?;
    let path = format!("/dev/fd/{}", reader.as_raw_fd());
    let feeder = std::thread::Builder::new()
        .name("decompress".into())
        .spawn(move || {
            let mut r = r;
            let mut buf = vec![0u8; 1 << 16];
            loop {
                let n = match r.read(&mut buf) {
                    Ok(0) => return Ok(()),
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                };
                if writer.write_all(&buf[..n]).is_err() {
                    // libpcap stopped reading (a damaged capture): not our error.
                    return Ok(());
                }
            }
        })?;
    Ok((path, reader, feeder))
}

impl SavedCapture {
    pub fn open(path: &str, filter: Option<&str>) -> Result<SavedCapture> {
        let ports = filter.and_then(ports_only);
        let filter = if ports.is_some() { None } else { filter };
        let mut saved = Self::open_filtered(path, filter)?;
        saved.ports = ports;
        Ok(saved)
    }

    fn open_filtered(path: &str, filter: Option<&str>) -> Result<SavedCapture> {
        let name = if path == "-" {
            "standard input".to_string()
        } else {
            path.to_string()
        };
        // The file's kind and size, looked up once (`None`: standard input).
        let meta = if path == "-" {
            None
        } else {
            match std::fs::metadata(Path::new(path)) {
                Err(e) => return Err(anyhow!("{name}: cannot open: {}", io_reason(&e))),
                Ok(m) if m.is_dir() => {
                    return Err(anyhow!("{name}: is a directory, not a capture file"))
                }
                Ok(m) if m.is_file() && m.len() == 0 => {
                    return Err(anyhow!(
                        "{name}: empty file, not a capture (make one with: tcpdump -i lo -w FILE)"
                    ))
                }
                Ok(m) => Some(m),
            }
        };
        // A named pipe (`<(zcat f.pcap.gz)`) is read as standard input is: through our pipe,
        // opened once (a writer gone after a first open leaves a second one waiting).
        let size = meta.filter(|m| m.is_file()).map(|m| m.len());
        let regular = size.is_some();
        // The first bytes tell a compressed capture; standard input always goes through a pipe
        // of ours (its first bytes are read here and cannot be given back to libpcap).
        let mut head = Vec::with_capacity(4);
        let source: Box<dyn Read + Send> = if path == "-" {
            Box::new(std::io::stdin())
        } else {
            Box::new(
                std::fs::File::open(path)
                    .map_err(|e| anyhow!("{name}: cannot open: {}", io_reason(&e)))?,
            )
        };
        let mut source = source;
        (&mut source)
            .take(4)
            .read_to_end(&mut head)
            .map_err(|e| anyhow!("{name}: cannot read: {}", io_reason(&e)))?;
        let compression = compression_of(&head);
        let counted = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(head.len() as u64));
        // The capture's own first bytes (decompressed): a pcapng is read by the walker.
        let libpcap_only = std::env::var_os("H2LEDGER_LIBPCAP_READ").is_some();
        let (source, first) = if compression.is_some() {
            let n = counted.clone();
            let source = progress::Counting { r: source, n };
            let mut r = decoder(head, source, compression)
                .map_err(|e| anyhow!("{name}: cannot read: {e}"))?;
            let mut first = Vec::with_capacity(4);
            (&mut r)
                .take(4)
                .read_to_end(&mut first)
                .map_err(|e| anyhow!("{name}: {}: {e}", compression.unwrap_or("read")))?;
            (Source::Decoded(r), first)
        } else {
            let first = head.clone();
            (Source::Raw(source, head), first)
        };
        if first == SHB_MAGIC && !libpcap_only {
            let plain = (compression.is_none() && regular).then_some(path);
            return Ng::open(Opened {
                name,
                source,
                plain,
                filter,
                compression,
                size,
                counted,
            });
        }
        let (source, head) = match source {
            Source::Raw(s, head) => (s, head),
            // Given back to libpcap through the pipe, with the bytes looked at.
            Source::Decoded(r) => (
                Box::new(std::io::Cursor::new(first).chain(r)) as Box<dyn Read + Send>,
                Vec::new(),
            ),
        };
        let (mut feeder, mut pipe) = (None, None);
        let open_path = if compression.is_none() && regular {
            path.to_string()
        } else {
            let r: Box<dyn Read + Send> = if compression.is_some() {
                source
            } else {
                let n = counted.clone();
                let source = progress::Counting { r: source, n };
                decoder(head, source, None).map_err(|e| anyhow!("{name}: cannot read: {e}"))?
            };
            let (p, reader, f) = piped(r).map_err(|e| anyhow!("{name}: cannot read: {e}"))?;
            feeder = Some(f);
            pipe = Some(reader);
            p
        };
        let opened = Capture::from_file_with_precision(&open_path, Precision::Nano);
        // libpcap opened its own descriptor of the pipe.
        drop(pipe);
        let mut cap = match opened {
            Ok(c) => c,
            Err(e) => {
                let what = compression.map_or(String::new(), |c| format!(" inside the {c} stream"));
                let mut msg = format!(
                    "{name}: not a pcap or pcapng capture{what} ({})",
                    pcap_reason(&e)
                );
                if let Some(Err(fe)) = feeder.take().map(|f| f.join().unwrap_or(Ok(()))) {
                    msg = format!("{name}: {}: {fe}", compression.unwrap_or("read"));
                }
                return Err(anyhow!(msg));
            }
        };
        if let Some(f) = filter {
            cap.filter(f, true)
                .map_err(|e| anyhow!("bad filter expression \"{f}\": {}", pcap_reason(&e)))?;
        }
        let linktype = cap.get_datalink().0;
        // `H2LEDGER_LIBPCAP_READ=1`: libpcap reads every file, for comparisons.
        let blocks = if compression.is_none()
            && regular
            && filter.is_none()
            && untouched(linktype)
            && std::env::var_os("H2LEDGER_LIBPCAP_READ").is_none()
        {
            // The progress counts what this reader reads: libpcap's own descriptor stays at
            // the file's first block (issue 38: the bar stood at 4 KiB for a whole pcap).
            std::fs::File::open(path).ok().map(|r| progress::Counting {
                r,
                n: Default::default(),
            })
        } else {
            None
        };
        let read = match (&feeder, &blocks) {
            (Some(_), _) => progress::Bytes::Counted(counted),
            (None, Some(b)) => progress::Bytes::Counted(b.n.clone()),
            (None, None) => progress::Bytes::File(path.into()),
        };
        Ok(SavedCapture {
            cap: Some(cap),
            ng: None,
            name,
            linktype,
            feeder,
            compression,
            size,
            read,
            blocks,
            ports: None,
        })
    }

    /// Closes the capture and returns the feeder's error, if any (a corrupt compressed stream).
    fn close(&mut self) -> Option<std::io::Error> {
        self.cap = None;
        self.feeder.take()?.join().ok()?.err()
    }

    /// Calls `f(item, progress)` for every packet and, in a pcapng, every Decryption Secrets
    /// Block in file order, until it returns `false` (`-c`, `--duration`, a closed output: the
    /// rest of the file is not read), with a progress display when `progress`. A damaged or
    /// truncated file stops the loop with an error after the packets before the damage were
    /// delivered.
    ///
    /// The file is read on a thread of its own ("read"), which hands over packets in batches
    /// (`Batch`, a bounded channel, in order) while `f` runs here: reading the file costs
    /// the ledger's thread nothing (decision 200).
    pub fn for_each(
        &mut self,
        progress: bool,
        mut f: impl FnMut(Item<'_>, &mut Progress) -> bool,
    ) -> Result<()> {
        let ng = self.ng.take();
        let cap = self.cap.take();
        if ng.is_none() && cap.is_none() {
            return Ok(());
        }
        let read = std::mem::replace(&mut self.read, progress::Bytes::Fd(None));
        let mut shown = progress::start(progress, self.size, read);
        let (full_tx, full_rx) = std::sync::mpsc::sync_channel::<Batch>(BATCHES_AHEAD);
        let (empty_tx, empty_rx) = std::sync::mpsc::channel::<Batch>();
        let blocks = self.blocks.take();
        let reader = std::thread::Builder::new()
            .name("read".into())
            .spawn(move || match (ng, cap, blocks) {
                (Some(ng), _, _) => ng.read(&full_tx, &empty_rx),
                (None, Some(cap), Some(file)) => read_blocks(file, cap, &full_tx, &empty_rx),
                (None, Some(cap), None) => read_batches(cap, &full_tx, &empty_rx),
                (None, None, _) => Ok(()),
            })
            .map_err(|e| anyhow!("cannot start the reading thread: {e}"))?;
        let mut stopped = false;
        let linktype = self.linktype;
        let ports = self.ports.take();
        'batches: for batch in full_rx.iter() {
            for &found in &batch.found {
                let more = match found {
                    Found::Packet {
                        ts,
                        linktype: own,
                        start,
                        len,
                        ..
                    } => {
                        // A classic pcap's packets have libpcap's link type for the file.
                        let linktype = if batch.pcapng {
                            i32::from(own)
                        } else {
                            linktype
                        };
                        let data = &batch.data[start..start + len];
                        if ports
                            .as_deref()
                            .is_some_and(|p| !on_ports(linktype, data, p))
                        {
                            continue;
                        }
                        let more = f(Item::Packet { linktype, ts, data }, &mut shown);
                        shown.packet();
                        more
                    }
                    Found::Secrets { kind, start, len } => {
                        let data = &batch.data[start..start + len];
                        f(Item::Secrets { kind, data }, &mut shown)
                    }
                };
                if !more {
                    stopped = true;
                    break 'batches;
                }
            }
            // The reader may have gone (it ended): the batch is dropped.
            let _ = empty_tx.send(batch);
        }
        // Stopped early: the reader's next send fails and it ends, closing the capture.
        drop(full_rx);
        drop(empty_tx);
        let ended = match reader.join() {
            Ok(Err(e)) if !stopped => Err(anyhow!("{}: {e}", self.name)),
            Ok(_) => Ok(()),
            Err(_) => Err(anyhow!("{}: the reading thread failed", self.name)),
        };
        shown.finish();
        // A corrupt compressed stream looks like a cut capture to libpcap: say what it was.
        match self.close() {
            Some(e) => Err(anyhow!(
                "{}: {}: {e}",
                self.name,
                self.compression.unwrap_or("read")
            )),
            None => ended,
        }
    }
}

/// Batches read ahead of the ledger (each up to [`BATCH_BYTES`] or [`BATCH_PACKETS`]).
const BATCHES_AHEAD: usize = 4;
const BATCH_BYTES: usize = 256 * 1024;
const BATCH_PACKETS: usize = 1024;

/// Packets (and a pcapng's secrets) in file order: their bytes in `data` (one after the other
/// as libpcap read them, or where they lie in a block of the file), and where each lies.
#[derive(Default)]
struct Batch {
    data: Vec<u8>,
    found: Vec<Found>,
    /// Read from a pcapng: each packet's link type is its own.
    pcapng: bool,
}

/// What [`SavedCapture::for_each`] hands over, in file order.
pub enum Item<'a> {
    /// A packet.
    Packet {
        /// Its interface's link type.
        linktype: i32,
        /// Nanoseconds since the epoch.
        ts: Nanos,
        /// Its bytes as captured.
        data: &'a [u8],
    },
    /// A pcapng's Decryption Secrets Block: for the packets after it.
    Secrets {
        /// The secrets type ([`h2ledger_run::input::TLS_KEY_LOG`] for a TLS key log).
        kind: u32,
        /// The secrets.
        data: &'a [u8],
    },
}

/// The reading thread: every packet of `cap` into batches sent on `full` (taking emptied ones
/// back from `empty`), until the file ends (`Ok`), libpcap fails (its reason, after the packets
/// before it were sent), or nobody receives.
fn read_batches(
    mut cap: Capture<Offline>,
    full: &std::sync::mpsc::SyncSender<Batch>,
    empty: &std::sync::mpsc::Receiver<Batch>,
) -> std::result::Result<(), String> {
    let mut batch = Batch::default();
    loop {
        let (end, error) = match cap.next_packet() {
            Ok(p) => {
                let start = batch.data.len();
                batch.data.extend_from_slice(p.data);
                batch.found.push(Found::Packet {
                    ts: ts_nanos(&p.header.ts),
                    // for_each gives the file's (a classic pcap's batch).
                    linktype: 0,
                    start,
                    len: p.data.len(),
                    big: false,
                });
                (false, None)
            }
            Err(pcap::Error::NoMorePackets) => (true, None),
            Err(e) => (true, Some(pcap_reason(&e))),
        };
        let send = end || batch.data.len() >= BATCH_BYTES || batch.found.len() >= BATCH_PACKETS;
        if send && !batch.found.is_empty() {
            let mut next = empty.try_recv().unwrap_or_default();
            next.data.clear();
            next.found.clear();
            if full.send(std::mem::replace(&mut batch, next)).is_err() {
                return Ok(());
            }
        }
        if end {
            return error.map_or(Ok(()), Err);
        }
    }
}

/// Link types whose packets libpcap hands over as they are in the file, in either byte order
/// (`pcapint_post_process` in libpcap's pcap-common.c changes only USB and NFLOG headers):
/// NULL, Ethernet, the raw IP ones, LOOP, Linux cooked v1 and v2, IPv4, IPv6.
fn untouched(linktype: i32) -> bool {
    matches!(
        linktype,
        0 | 1 | 12 | 14 | 101 | 108 | 113 | 228 | 229 | 276
    )
}

/// The reading thread for a regular file ([`untouched`] link type, no filter): the file read
/// in blocks of [`BATCH_BYTES`] by [`BlockReader`], each block a batch whose packets are where
/// they lie in it. At the first record it leaves to libpcap (an odd length or time stamp, a
/// file cut inside a record, a format it does not take) or a read error, `cap` skips the
/// packets already sent and reads the rest as [`read_batches`] does: whatever libpcap says of
/// the file from there is said as it would have been.
fn read_blocks(
    file: progress::Counting<std::fs::File>,
    cap: Capture<Offline>,
    full: &std::sync::mpsc::SyncSender<Batch>,
    empty: &std::sync::mpsc::Receiver<Batch>,
) -> std::result::Result<(), String> {
    // The file itself to the reader (a `File` reads into the block's spare room; a wrapper
    // would have it zeroed first by `read_to_end`), its count to the progress after each block.
    let progress::Counting { r: file, n: count } = file;
    let mut reader = BlockReader::new(file, BATCH_BYTES);
    let mut sent = 0u64;
    let mut batch = Batch::default();
    loop {
        let filled = reader.fill(&mut batch.data, &mut batch.found);
        count.store(reader.bytes_read(), std::sync::atomic::Ordering::Relaxed);
        let n = batch.found.len() as u64;
        if n > 0 {
            let next = empty.try_recv().unwrap_or_default();
            if full.send(std::mem::replace(&mut batch, next)).is_err() {
                return Ok(());
            }
            sent += n;
        }
        match filled {
            Filled::Block => {}
            Filled::End => return Ok(()),
            // The walker takes a classic pcap only: no other end comes here.
            _ => return handover(cap, sent, full, empty),
        }
    }
}

/// libpcap reads the rest of the file: the `sent` packets skipped, then [`read_batches`].
fn handover(
    mut cap: Capture<Offline>,
    sent: u64,
    full: &std::sync::mpsc::SyncSender<Batch>,
    empty: &std::sync::mpsc::Receiver<Batch>,
) -> std::result::Result<(), String> {
    for _ in 0..sent {
        match cap.next_packet() {
            Ok(_) => {}
            // Not expected (libpcap read the same packets): its word stands.
            Err(pcap::Error::NoMorePackets) => return Ok(()),
            Err(e) => return Err(pcap_reason(&e)),
        }
    }
    read_batches(cap, full, empty)
}

pub use h2ledger_run::input::io_reason;

pub fn pcap_reason(e: &pcap::Error) -> String {
    match e {
        pcap::Error::PcapError(s) => s.trim().to_string(),
        other => other.to_string(),
    }
}

/// A libpcap timestamp in nanoseconds. Captures are opened with nanosecond precision, so
/// `tv_usec` holds nanoseconds.
pub fn ts_nanos(ts: &libc::timeval) -> Nanos {
    ts.tv_sec
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_usec)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The progress' bytes-read figure of a plain capture file follows the reader that reads
    /// it, up to the file's size (issue 38: it followed libpcap's descriptor, which stays at
    /// the first 4 KiB once h2ledger's own reader takes the file, decision 264); a pcapng's
    /// too (decision 402: no libpcap at all).
    #[test]
    fn progress_counts_the_bytes_of_a_plain_file() {
        for name in ["grpcgo-article.pcap", "grpcgo-article-any.pcapng"] {
            let path = format!("{}/../../captures/{name}", env!("CARGO_MANIFEST_DIR"));
            let mut cap = SavedCapture::open(&path, None).unwrap();
            let progress::Bytes::Counted(n) = &cap.read else {
                panic!("a plain file is read by h2ledger's block reader, which counts its bytes");
            };
            let n = n.clone();
            let mut packets = 0u64;
            cap.for_each(false, |item, _| {
                packets += u64::from(matches!(item, Item::Packet { .. }));
                true
            })
            .unwrap();
            assert!(packets > 0, "{name}");
            let size = std::fs::metadata(&path).unwrap().len();
            assert_eq!(n.load(std::sync::atomic::Ordering::Relaxed), size, "{name}");
        }
    }
}
