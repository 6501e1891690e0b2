//! A pcapng read by h2ledger-run's reader of records alone (decisions 402 to 404): its
//! packets and Decryption Secrets Blocks in file order, libpcap only to compile and run the
//! filter.

use std::io::{Read, Write as _};

use anyhow::{anyhow, Result};
use pcap::Capture;

use h2ledger_run::input::{BlockReader, Filled, Found};

use super::{io_reason, pcap_reason, progress, Batch, SavedCapture, BATCH_BYTES};

/// A capture's source after its first bytes were looked at.
pub(super) enum Source {
    /// The file or standard input as it is, and its first bytes (read already).
    Raw(Box<dyn Read + Send>, Vec<u8>),
    /// A decompressing reader (its first bytes taken out).
    Decoded(Box<dyn Read + Send>),
}

/// What [`Ng::open`] takes from [`SavedCapture::open`].
pub(super) struct Opened<'a> {
    pub(super) name: String,
    pub(super) source: Source,
    /// A plain regular file's path: read through a `File` of its own.
    pub(super) plain: Option<&'a str>,
    pub(super) filter: Option<&'a str>,
    pub(super) compression: Option<&'static str>,
    pub(super) size: Option<u64>,
    pub(super) counted: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

/// A pcapng read by h2ledger-run's walker (decision 402): no libpcap but its filter.
pub(super) struct Ng {
    reader: BlockReader<Box<dyn Read + Send>>,
    /// The batches read at the open, up to the first interface, and how the last one ended.
    first: Vec<(Batch, Filled)>,
    filter: Option<String>,
    compression: Option<&'static str>,
    /// A plain file: the bytes read, for the progress display.
    count: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
}

impl Ng {
    pub(super) fn open(o: Opened<'_>) -> Result<SavedCapture> {
        let name = o.name;
        let (r, count): (Box<dyn Read + Send>, _) = match (o.plain, o.source) {
            // A `File` itself reads into the block's spare room (a wrapper would have it
            // zeroed first by `read_to_end`).
            (Some(path), _) => (
                Box::new(
                    std::fs::File::open(path)
                        .map_err(|e| anyhow!("{name}: cannot open: {}", io_reason(&e)))?,
                ),
                Some(std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0))),
            ),
            (None, Source::Raw(r, head)) => {
                let n = o.counted.clone();
                let r = progress::Counting { r, n };
                (Box::new(std::io::Cursor::new(head).chain(r)), None)
            }
            (None, Source::Decoded(r)) => (
                Box::new(std::io::Cursor::new(SHB_MAGIC.to_vec()).chain(r)),
                None,
            ),
        };
        let mut reader = BlockReader::new(r, BATCH_BYTES);
        // Read up to the first interface (its link type and byte order are the filter's), at
        // most READ_AHEAD bytes and a block: a filter without an interface by then is checked
        // on Ethernet (each link type's own program is compiled when its first packet comes).
        let mut first = Vec::new();
        loop {
            let mut b = Batch {
                pcapng: true,
                ..Batch::default()
            };
            let end = reader.fill(&mut b.data, &mut b.found);
            let known = reader.blocks().linktype().is_some();
            if !known && !matches!(end, Filled::Block | Filled::End) {
                // Damaged before its first interface (libpcap refuses such a file at the
                // open too): not a capture h2ledger reads.
                let why = end
                    .reason(reader.take_error().as_ref())
                    .unwrap_or_else(|| "no section header".into());
                return Err(match (end, o.compression) {
                    (Filled::Failed, Some(c)) => anyhow!("{name}: {c}: {why}"),
                    (_, c) => {
                        let what = c.map_or(String::new(), |c| format!(" inside the {c} stream"));
                        anyhow!("{name}: not a pcap or pcapng capture{what} ({why})")
                    }
                });
            }
            if !b.found.is_empty() || end != Filled::Block {
                first.push((b, end));
            }
            if known || end != Filled::Block || reader.bytes_read() >= READ_AHEAD {
                break;
            }
        }
        let linktype = reader.blocks().linktype().map_or(1, i32::from);
        if let Some(f) = o.filter {
            compile(linktype, reader.blocks().big_endian(), f)
                .map_err(|e| anyhow!("bad filter expression \"{f}\": {}", pcap_reason(&e)))?;
        }
        let read = match &count {
            Some(n) => progress::Bytes::Counted(n.clone()),
            None => progress::Bytes::Counted(o.counted),
        };
        Ok(SavedCapture {
            cap: None,
            ng: Some(Ng {
                reader,
                first,
                filter: o.filter.map(str::to_string),
                compression: o.compression,
                count,
            }),
            name,
            linktype,
            feeder: None,
            compression: o.compression,
            size: o.size,
            read,
            blocks: None,
            ports: None,
        })
    }

    /// The reading thread: every block into batches sent on `full` (taking emptied ones back
    /// from `empty`), the filter applied, until the file ends (`Ok`), is damaged or cut (its
    /// reason, after what came before was sent), or nobody receives.
    pub(super) fn read(
        mut self,
        full: &std::sync::mpsc::SyncSender<Batch>,
        empty: &std::sync::mpsc::Receiver<Batch>,
    ) -> std::result::Result<(), String> {
        // Each link type's filter, compiled when its first packet comes (a program is not
        // `Send`: made here). One that does not compile for a later interface's link type
        // matches none of its packets.
        let mut programs: std::collections::HashMap<(u16, bool), Option<pcap::BpfProgram>> =
            Default::default();
        let mut keep = |b: &mut Batch| {
            let Some(f) = self.filter.as_deref() else {
                return;
            };
            let data = &b.data;
            b.found.retain(|x| match *x {
                Found::Packet {
                    linktype,
                    start,
                    len,
                    big,
                    ..
                } => programs
                    .entry((linktype, big))
                    .or_insert_with(|| compile(i32::from(linktype), big, f).ok())
                    .as_ref()
                    .is_some_and(|p| p.filter(&data[start..start + len])),
                Found::Secrets { .. } => true,
            });
        };
        let mut first = std::mem::take(&mut self.first).into_iter();
        loop {
            let (mut batch, end) = match first.next() {
                Some(x) => x,
                None => {
                    let mut b = empty.try_recv().unwrap_or_default();
                    // A batch that held a large block gives its memory back.
                    b.data.clear();
                    b.data.shrink_to(2 * BATCH_BYTES);
                    b.pcapng = true;
                    let end = self.reader.fill(&mut b.data, &mut b.found);
                    (b, end)
                }
            };
            if let Some(n) = &self.count {
                n.store(
                    self.reader.bytes_read(),
                    std::sync::atomic::Ordering::Relaxed,
                );
            }
            keep(&mut batch);
            if !batch.found.is_empty() && full.send(batch).is_err() {
                return Ok(());
            }
            match end {
                Filled::Block => {}
                Filled::End | Filled::Odd => return Ok(()),
                Filled::Failed => {
                    let e = self.reader.take_error();
                    let why = end.reason(e.as_ref()).unwrap_or_default();
                    return Err(match self.compression {
                        Some(c) => format!("{c}: {why}"),
                        None => why,
                    });
                }
                Filled::Damaged(..) | Filled::Cut { .. } => {
                    return Err(end.reason(None).unwrap_or_default())
                }
            }
        }
    }
}

/// What [`Ng::open`] reads at most (and a block) looking for the first interface.
const READ_AHEAD: u64 = 1 << 20;

/// A pcapng's first four bytes (a Section Header Block's type).
pub(super) const SHB_MAGIC: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];

/// `filter` compiled as libpcap compiles it for a saved file of `linktype` (a LINKTYPE_
/// value, as pcap and pcapng files hold it) written big-endian (`big`) or not: on the handle
/// of an empty classic pcap of that link type and byte order (through a pipe), as libpcap
/// compiled it when it opened the file itself. A dead handle's code is a live capture's: it
/// takes a DLT_ value, and for a BSD loopback header it matches only this host's IPv6 family
/// (10), in this host's byte order, where a saved file's matches the families of the BSDs
/// and macOS (24, 28, 30) too, in the file's byte order (libpcap's gencode.c, DLT_NULL).
fn compile(
    linktype: i32,
    big: bool,
    filter: &str,
) -> std::result::Result<pcap::BpfProgram, pcap::Error> {
    use std::os::fd::AsRawFd;
    let w32 = |v: u32| {
        if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let w16 = |v: u16| {
        if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let mut header = Vec::with_capacity(24);
    header.extend(w32(0xa1b2_c3d4));
    header.extend(w16(2));
    header.extend(w16(4));
    header.extend(w32(0));
    header.extend(w32(0));
    header.extend(w32(262_144));
    header.extend(w32(linktype as u32));
    let io = |e: std::io::Error| pcap::Error::IoError(e.kind());
    let (reader, mut writer) = std::io::pipe().map_err(io)?;
    // 24 bytes: the pipe holds them, and the end of the file follows.
    writer.write_all(&header).map_err(io)?;
    drop(writer);
    let cap = Capture::from_file(format!("/dev/fd/{}", reader.as_raw_fd()))?;
    drop(reader);
    cap.compile(filter, true)
}
