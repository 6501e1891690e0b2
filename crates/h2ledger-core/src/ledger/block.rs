//! Header blocks: decoding (HPACK), and what a block says about its stream (request,
//! response or trailers).

use super::*;

/// `METHOD SP target SP HTTP/1.x` at the start of `buf`, when its line is complete.
pub(super) fn request_line(buf: &[u8]) -> Option<(&[u8], &[u8])> {
    let end = buf.windows(2).take(8192).position(|w| w == b"\r\n")?;
    let mut parts = buf[..end].split(|&b| b == b' ');
    let (m, t, v) = (parts.next()?, parts.next()?, parts.next()?);
    (parts.next().is_none() && v.starts_with(b"HTTP/1.") && !m.is_empty()).then_some((m, t))
}

/// What the ledger itself needs of a header block, gathered while decoding it.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct BlockSummary {
    /// The first field is `:method` (a request) or `:status` (a response).
    pub(super) request: bool,
    pub(super) response: bool,
    /// Some field we can read is a pseudo-header; some field is a placeholder.
    pub(super) pseudo: bool,
    pub(super) unseen: bool,
    /// The block's size: its encoded bytes, and its header list size as RFC 9113 §6.5.2
    /// defines it (each field's name and value lengths plus 32), over its fields.
    pub(super) size: BlockSize,
}

/// Blocks up to this size are remembered by [`BlockMemo`] (decision 220).
const MEMO_MAX: usize = 512;

/// The last header block a direction decoded, kept when decoding it again would give the same
/// fields and leave the decoder as it was: no entry inserted, no size update, no error, no
/// field cut. Clients and servers send the same block again and again (every request of a
/// load generator, every unary gRPC call to a method, a response within the same second once
/// its fields are in the table); a block equal to the one remembered, on a decoder that has
/// not changed since ([`Decoder::changes`]), for the same [`HeaderNeed`], leaves `headers`
/// and `summary` as they are instead of being decoded (decision 220).
#[derive(Debug, Default)]
pub(super) struct BlockMemo {
    bytes: Vec<u8>,
    /// The decoder's change count after the block, and the need its fields were kept for.
    key: Option<(u64, HeaderNeed)>,
}

impl BlockMemo {
    pub(super) fn forget(&mut self) {
        self.key = None;
    }

    fn hit(&self, block: &[u8], need: HeaderNeed, changes: u64) -> bool {
        match self.key {
            Some((c, n)) => c == changes && same_need(n, need) && self.bytes == block,
            None => false,
        }
    }

    fn remember(&mut self, block: &[u8], need: HeaderNeed, changes: u64) {
        self.bytes.clear();
        self.bytes.extend_from_slice(block);
        self.key = Some((changes, need));
    }
}

fn same_need(a: HeaderNeed, b: HeaderNeed) -> bool {
    match (a, b) {
        (HeaderNeed::None, HeaderNeed::None) | (HeaderNeed::All, HeaderNeed::All) => true,
        (HeaderNeed::Some(f), HeaderNeed::Some(g)) => std::ptr::fn_addr_eq(f, g),
        _ => false,
    }
}

/// Decodes a header block, keeping the fields the observers need in `ds.headers`.
pub(super) fn decode_block(
    ds: &mut DirState,
    block: &[u8],
    keep: HeaderNeed,
    warnings: &mut Warnings,
    id: ConnId,
    src: SocketAddr,
    dst: SocketAddr,
) -> bool {
    let changes = ds.hpack.changes();
    if ds.memo.hit(block, keep, changes) {
        return true;
    }
    ds.memo.forget();
    ds.headers.clear();
    ds.headers.set_kept(match keep {
        HeaderNeed::Some(f) => Some(f),
        _ => None,
    });
    let headers = &mut ds.headers;
    let mut sum = BlockSummary::default();
    let mut first = true;
    let result = ds.hpack.decode(block, |h| {
        let unseen = h.name_unseen || h.value_unseen;
        let was_first = first;
        if first {
            first = false;
            sum.request = !h.name_unseen && h.name == b":method";
            sum.response = !h.name_unseen && h.name == b":status";
        }
        sum.pseudo |= !unseen && h.name.starts_with(b":");
        sum.unseen |= unseen;
        let wanted = match keep {
            HeaderNeed::None => false,
            HeaderNeed::All => true,
            HeaderNeed::Some(reads) => was_first || reads(h.name),
        };
        if wanted {
            headers.push(&h);
        }
    });
    sum.size = BlockSize {
        encoded: block.len() as u32,
        list: ds.hpack.last_list_size(),
    };
    ds.summary = sum;
    if ds.headers.cut() > 0 {
        let (cut, list) = (ds.headers.cut(), sum.size.list);
        warnings.add("header-list-cap", || {
            format!("connection {} {src} -> {dst}: a header block decodes to a {list}-byte header list; {cut} fields beyond the first {} bytes were not kept (counted, not read)", id.0, crate::headers::MAX_HEADER_LIST_KEPT)
        });
    }
    if ds.hpack.capped() && ds.said.first(Cap::Hpack) {
        let size = ds.hpack.max_size_limit();
        warnings.add("hpack-cap", || {
            format!("connection {} {src} -> {dst}: HPACK table size update above the {MAX_HPACK_TABLE}-byte cap (limit {size}); the table is kept at the cap, references to entries beyond it decode as placeholders", id.0)
        });
    }
    match result {
        Ok(()) => {
            if ds.hpack.changes() == changes && ds.headers.cut() == 0 && block.len() <= MEMO_MAX {
                ds.memo.remember(block, keep, changes);
            }
            true
        }
        Err(e) => {
            ds.lose_hpack_sync();
            warnings.add("hpack-error", || {
                format!("connection {} {src} -> {dst}: HPACK error: {e}; decoder reset (later references may show placeholders)", id.0)
            });
            false
        }
    }
}

/// Payload bytes worth keeping: all of a control frame or header block, none of DATA.
pub(super) fn keep_len(head: &Head) -> u32 {
    match head.kind {
        Kind::Data | Kind::Unknown(_) => 0,
        Kind::GoAway => head.length.min(8 + MAX_GOAWAY_DEBUG),
        Kind::Headers | Kind::PushPromise | Kind::Continuation => {
            head.length.min(MAX_HEADER_BLOCK as u32)
        }
        _ => head.length.min(64 * 1024),
    }
}

/// What a decoded header block says about its place on the stream (RFC 9113 §8.1: request and
/// response header blocks start with pseudo-header fields, trailers have none).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum BlockKind {
    Pseudo,
    NoPseudo,
    Unknown,
}

/// The frame's ledger row, and the step it made in its stream's life ([`StreamLife`]).
pub(super) fn classify(
    c: &mut Conn,
    dir: Dir,
    head: &Head,
    frame: Option<&Frame<'_>>,
    block: BlockKind,
) -> (FrameClass, StreamStep) {
    // A continuation of a folded connection knows none of the streams opened before the fold.
    let mid_stream = c.continues.is_some() || c.dirs.iter().any(|(_, x)| x.phase.mid_stream());
    let class = match head.kind {
        Kind::Data => {
            let step = if head.flags.is_end_stream() {
                end_stream(c, head.stream_id.0, dir)
            } else {
                StreamStep::None
            };
            return (FrameClass::Data, step);
        }
        Kind::Headers => {
            let s = head.stream_id.0;
            let end = head.flags.is_end_stream();
            // One lookup: the stream's life updated in place, END_STREAM included (a stream
            // both sides ended leaves the table, as in `end_stream`).
            let tracked = c.streams.len();
            let (seen, step) = match c.streams.find(s) {
                Some(i) => {
                    let Some(life) = c.streams.slot_mut(i) else {
                        unreachable!("a found slot holds its value")
                    };
                    let (seen, next, step) = life.block(dir, end);
                    match next {
                        Some(l) => *life = l,
                        None => c.streams.discard_at(i),
                    }
                    (seen, step)
                }
                None => {
                    // A stream reset a moment ago (the peer's trailers may cross the RST): its
                    // blocks, where it stays (it is closed).
                    if let Some(r) = c.recent_resets.iter_mut().find(|r| r.0 == s) {
                        let seen = r.1.has(dir);
                        r.1 = r.1.with(dir);
                        (seen, StreamStep::Untracked)
                    } else {
                        let full = tracked >= MAX_STREAMS;
                        // Stream ids of a parity open in order (RFC 9113 §5.1.1): one below
                        // the highest opened, unknown here, was closed and forgotten.
                        let top = &mut c.top_opened[(s & 1) as usize];
                        let step = if !full && s <= *top && !mid_stream {
                            c.streams.insert(s, StreamLife::forgotten(dir, end));
                            StreamStep::Untracked
                        } else if !full {
                            *top = s;
                            let (life, step) = StreamLife::opened(dir, end);
                            c.streams.insert(s, life);
                            step
                        } else {
                            c.streams_full = true;
                            c.streams_untracked += 1;
                            StreamStep::Untracked
                        };
                        // A stream we never saw open, on a connection captured mid-way, may
                        // have begun before the capture: its first block here may be
                        // trailers. Read the block itself; without readable fields, trailers
                        // are the block that ends the stream. Streams beyond the cap are read
                        // the same way.
                        let trailers = (mid_stream || full)
                            && match block {
                                BlockKind::Pseudo => false,
                                BlockKind::NoPseudo => true,
                                BlockKind::Unknown => end,
                            };
                        (trailers, step)
                    }
                }
            };
            let class = if seen {
                FrameClass::Trailers
            } else {
                FrameClass::Headers
            };
            return (class, step);
        }
        Kind::Ping => {
            let ack = match frame {
                Some(Frame::Ping(p)) => p.is_ack(),
                _ => head.flags.is_ack(),
            };
            if ack {
                FrameClass::PingAck
            } else {
                FrameClass::Ping
            }
        }
        Kind::Settings => {
            if head.flags.is_ack() {
                FrameClass::SettingsAck
            } else {
                FrameClass::Settings
            }
        }
        Kind::RstStream => {
            // Frames the peer sent before it saw the RST still follow it (HEADERS after this
            // are the stream's trailers, as RFC 9113 §5.1 allows in flight): keep the last few
            // reset streams' header blocks.
            let s = head.stream_id.0;
            let code = match frame {
                Some(Frame::RstStream(r)) => Some(r.code),
                _ => None,
            };
            let blocks = match c.streams.remove(s) {
                Some(life) => {
                    if c.recent_resets.len() >= MAX_RECENT_RESETS {
                        c.recent_resets.pop_front();
                    }
                    c.recent_resets.push_back((s, life.blocks()));
                    life.blocks()
                }
                None => c
                    .recent_resets
                    .iter()
                    .find(|r| r.0 == s)
                    .map_or(Blocks::default(), |r| r.1),
            };
            return (FrameClass::RstStream, life::reset(dir, code, blocks));
        }
        Kind::WindowUpdate => FrameClass::WindowUpdate,
        Kind::GoAway => FrameClass::GoAway,
        Kind::Priority => FrameClass::Priority,
        Kind::PushPromise => FrameClass::PushPromise,
        Kind::Continuation => FrameClass::Continuation,
        Kind::Unknown(_) => FrameClass::Unknown,
    };
    (class, StreamStep::None)
}

/// END_STREAM from `dir` on stream `s`, outside a header block: the step it makes.
pub(super) fn end_stream(c: &mut Conn, s: u32, dir: Dir) -> StreamStep {
    let Some(i) = c.streams.find(s) else {
        return StreamStep::Untracked;
    };
    let Some(life) = c.streams.slot_mut(i) else {
        return StreamStep::Untracked;
    };
    let (next, step) = life.end(dir);
    match next {
        Some(l) => *life = l,
        None => c.streams.discard_at(i),
    }
    step
}
