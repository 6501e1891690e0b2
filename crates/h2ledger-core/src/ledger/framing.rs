//! Framing: a direction's bytes cut into frames, each checked, classified and handed to the
//! observer.

use super::*;

impl<O: Observer> Ledger<O> {
    /// Framing: split `bytes` into frames, completing the one in progress first.
    pub(super) fn frames(&mut self, id: ConnId, dir: Dir, w: &Write, bytes: &[u8]) {
        let Ledger {
            conns,
            observer,
            warnings,
            ..
        } = self;
        // One lookup for the whole segment: the connection stays open while it is framed.
        let Some(c) = conns.get_mut(id.0 as usize) else {
            return;
        };
        if let Some(rest) = frames_in(c, observer, warnings, id, dir, w, bytes) {
            // A malformed head sent us back to resync: the rest goes to detection.
            self.detect(id, dir, w, rest, false);
        }
    }

    /// One frame of connection `id` outside the framing loop (the sink's gap and end paths):
    /// [`frame`] on the connection, if it is still open.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn frame(
        &mut self,
        id: ConnId,
        dir: Dir,
        w: &Write,
        head: Head,
        payload: &[u8],
        complete: bool,
        spanned: bool,
    ) {
        if let Some(c) = self.conns.get_mut(id.0 as usize) {
            frame(
                c,
                &mut self.observer,
                &mut self.warnings,
                id,
                dir,
                w,
                head,
                payload,
                complete,
                spanned,
            );
        }
    }
}

/// [`Ledger::frames`] on the connection `c`: `Some(rest)` when framing was lost and `rest`
/// goes back to detection.
fn frames_in<'b, O: Observer>(
    c: &mut Conn,
    observer: &mut O,
    warnings: &mut Warnings,
    id: ConnId,
    dir: Dir,
    w: &Write,
    mut bytes: &'b [u8],
) -> Option<&'b [u8]> {
    while !bytes.is_empty() {
        let ds = &mut c.dirs[dir];
        if !ds.phase.framed() {
            return Some(bytes);
        }
        if let Some(p) = ds.cur.as_mut() {
            let n = (p.remaining as usize).min(bytes.len());
            let consumed_before = p.head.length - p.remaining;
            if consumed_before < p.keep {
                let want = (p.keep - consumed_before) as usize;
                ds.carry.extend_from_slice(&bytes[..n.min(want)]);
            }
            p.remaining -= n as u32;
            bytes = &bytes[n..];
            if p.remaining == 0 {
                let p = ds.cur.take().expect("checked above");
                let mut carry = std::mem::take(&mut ds.carry);
                let complete = !p.lossy && carry.len() as u32 == p.head.length;
                frame(
                    c, observer, warnings, id, dir, w, p.head, &carry, complete, p.spanned,
                );
                carry.clear();
                // A large DATA payload kept for an observer: do not hold its size.
                carry.shrink_to(MAX_HEADER_BLOCK);
                c.dirs[dir].carry = carry;
            }
            continue;
        }
        // A frame head: straight from the input when we have all of it.
        let head = if ds.head_have == 0 && bytes.len() >= HEAD_LEN {
            match raw_frame(bytes) {
                Ok((rest, raw)) => {
                    // The whole frame is here: no copy at all.
                    let consumed = bytes.len() - rest.len();
                    let head = raw.head;
                    if !sane(c, warnings, id, dir, &head) {
                        continue;
                    }
                    frame(
                        c,
                        observer,
                        warnings,
                        id,
                        dir,
                        w,
                        head,
                        raw.payload,
                        true,
                        false,
                    );
                    bytes = &bytes[consumed..];
                    continue;
                }
                Err(_) => match Head::parse(bytes) {
                    Ok((_, h)) => {
                        bytes = &bytes[HEAD_LEN..];
                        h
                    }
                    Err(_) => return None,
                },
            }
        } else {
            let n = (HEAD_LEN - ds.head_have).min(bytes.len());
            ds.head_buf[ds.head_have..ds.head_have + n].copy_from_slice(&bytes[..n]);
            ds.head_have += n;
            bytes = &bytes[n..];
            if ds.head_have < HEAD_LEN {
                return None;
            }
            ds.head_have = 0;
            match Head::parse(&ds.head_buf) {
                Ok((_, h)) => h,
                Err(_) => return None,
            }
        };
        if !sane(c, warnings, id, dir, &head) {
            continue;
        }
        if head.length == 0 {
            frame(c, observer, warnings, id, dir, w, head, &[], true, false);
            continue;
        }
        // DATA is kept whole when PADDED (its padding is checked, decision 260) or when the
        // observer wants its payload; only then is the observer asked.
        let spanned = head.kind == Kind::Data && !head.flags.is_padded();
        let keep = if head.kind == Kind::Data
            && (!spanned || observer.data_head(id, dir, head.stream_id))
        {
            head.length
        } else {
            keep_len(&head)
        };
        let ds = &mut c.dirs[dir];
        ds.carry.clear();
        ds.cur = Some(Payload {
            head,
            remaining: head.length,
            keep,
            lossy: false,
            spanned,
        });
    }
    None
}

/// A head that no implementation would send (reserved bit, a length beyond anything
/// allowed) means we lost framing: count it and look for a boundary again.
#[inline(always)]
fn sane(c: &mut Conn, warnings: &mut Warnings, id: ConnId, dir: Dir, head: &Head) -> bool {
    let ds = &c.dirs[dir];
    let limit = if ds.phase.mid_stream() {
        crate::detect::MAX_FRAME_LEN
    } else {
        ds.max_frame
    };
    head.length <= limit || too_long(c, warnings, id, dir, head, limit)
}

/// [`sane`] for a head longer than `limit`.
#[cold]
#[inline(never)]
fn too_long(
    c: &mut Conn,
    warnings: &mut Warnings,
    id: ConnId,
    dir: Dir,
    head: &Head,
    limit: u32,
) -> bool {
    let ds = &mut c.dirs[dir];
    if head.plausible(crate::detect::MAX_FRAME_LEN) {
        // Framing is intact (the boundary was proven and every length followed): a frame
        // above the peer's SETTINGS_MAX_FRAME_SIZE is on the wire; count it and say so.
        let (src, dst) = c.addrs(dir);
        let (len, kind, stream) = (head.length, head.kind.name(), head.stream_id);
        warnings.add("malformed-frame", || {
                format!(
                    "connection {} {src} -> {dst}: {kind} frame on stream {stream} of {len} bytes, above the allowed maximum {limit} (RFC 9113 §4.2): counted, framing kept",
                    id.0
                )
            });
        return true;
    }
    ds.lose_framing();
    let (src, dst) = c.addrs(dir);
    let len = head.length;
    warnings.add("bad-frame-head", || {
            format!(
                "connection {} {src} -> {dst}: frame header with length {len} above the allowed maximum {limit}: framing lost, resynchronising",
                id.0
            )
        });
    false
}

/// One whole frame (or one cut by a gap, `complete` false): loaded, its SETTINGS tracked, its
/// header block decoded, classified, and handed to the observer.
#[allow(clippy::too_many_arguments)]
fn frame<O: Observer>(
    c: &mut Conn,
    observer: &mut O,
    warnings: &mut Warnings,
    id: ConnId,
    dir: Dir,
    w: &Write,
    head: Head,
    payload: &[u8],
    complete: bool,
    spanned: bool,
) {
    let which = observer.header_need();
    let (src, dst) = c.addrs(dir);
    let load = head.kind != Kind::Data || observer.wants_data(id, head.stream_id);
    // A frame that breaks a rule of RFC 9113: counted, said, and handed over unloaded.
    let malformed = |warnings: &mut Warnings, e: FrameError| {
        warnings.add("malformed-frame", || {
            format!(
                "connection {} {src} -> {dst}: malformed {} frame on stream {}: {e}",
                id.0,
                head.kind.name(),
                head.stream_id
            )
        });
        None
    };
    let mut padding = 0;
    let loaded = if head.kind == Kind::Data {
        // Every DATA frame is checked, its payload wanted or not (decision 260): its stream,
        // and its padding when the whole payload is here (PADDED frames are always kept).
        match check_data(&head, complete.then_some(payload)) {
            Err(e) => malformed(warnings, e),
            Ok(p) => {
                padding = p;
                if complete && load {
                    Frame::load(RawFrame { head, payload }).ok()
                } else {
                    None
                }
            }
        }
    } else if complete {
        match Frame::load(RawFrame { head, payload }) {
            Ok(f) => Some(f),
            Err(e) => malformed(warnings, e),
        }
    } else if head.kind == Kind::GoAway && payload.len() >= 8 {
        // GOAWAY whose debug data was cut at MAX_GOAWAY_DEBUG: load what we kept.
        let mut h = head;
        h.length = payload.len() as u32;
        Frame::load(RawFrame { head: h, payload }).ok()
    } else {
        None
    };
    // Settings: remember ours until the peer ACKs; apply the peer's on our ACK.
    match &loaded {
        Some(Frame::Settings(s)) if !s.is_ack() => {
            let mut table = None;
            let mut frame_size = None;
            for (id, v) in s.iter() {
                if id == SettingId::HEADER_TABLE_SIZE {
                    table = Some(v);
                } else if id == SettingId::MAX_FRAME_SIZE {
                    frame_size = Some(v);
                }
            }
            let ds = &mut c.dirs[dir];
            let q = &mut ds.settings_sent;
            if q.len() < MAX_PENDING_SETTINGS {
                q.push_back((table, frame_size));
            } else if let Some(last) = q.back_mut() {
                let max = |a: Option<u32>, b: Option<u32>| match (a, b) {
                    (Some(x), Some(y)) => Some(x.max(y)),
                    (x, y) => x.or(y),
                };
                *last = (max(last.0, table), max(last.1, frame_size));
                if ds.said.first(Cap::Settings) {
                    warnings.add("settings-cap", || {
                            format!(
                                "connection {} {src} -> {dst}: more than {MAX_PENDING_SETTINGS} SETTINGS frames awaiting ACK; later ones are merged into the last (largest values applied at its ACK)",
                                id.0
                            )
                        });
                }
            }
        }
        Some(Frame::Settings(_)) => {
            if let Some((table, frame_size)) = c.dirs[dir.other()].settings_sent.pop_front() {
                let ds = &mut c.dirs[dir];
                if let Some(t) = table {
                    if !ds.phase.mid_stream() {
                        ds.hpack.set_max_size_limit(t);
                    }
                }
                if let Some(f) = frame_size {
                    ds.max_frame = f.clamp(DEFAULT_MAX_FRAME, crate::detect::MAX_FRAME_LEN);
                }
            }
        }
        _ => {}
    }
    // Header blocks.
    let ds = &mut c.dirs[dir];
    let mut decoded = false;
    // The block decoded (if `decoded`) was begun by a PUSH_PROMISE.
    let mut push = false;
    // This frame ends a header block: `Some(None)` when the block is this frame's own (its
    // opener is filled in once classified), `Some(Some(o))` a block opened by `o`.
    let mut ends_block: Option<Option<BlockOpen>> = None;
    // The opener a block in progress is made with, filled in once its frame is classified.
    let unset = BlockOpen {
        class: if head.kind == Kind::PushPromise {
            FrameClass::PushPromise
        } else {
            FrameClass::Headers
        },
        stream: StreamStep::None,
        ends_half: false,
    };
    let fragment = match &loaded {
        Some(Frame::Headers(h)) => Some((h.fragment, true)),
        Some(Frame::PushPromise(p)) => Some((p.fragment, true)),
        Some(Frame::Continuation(k)) => Some((k.fragment, false)),
        _ => None,
    };
    let header_kind = matches!(
        head.kind,
        Kind::Headers | Kind::PushPromise | Kind::Continuation
    );
    if header_kind {
        let end = head.flags.is_end_headers();
        match fragment {
            Some((frag, true)) => {
                if let Some(open) = ds.open.take() {
                    warnings.add("header-block", || {
                            format!(
                                "connection {} {src} -> {dst}: {} on stream {} while a header block on stream {} awaits CONTINUATION",
                                id.0, head.kind.name(), head.stream_id, open.stream
                            )
                        });
                }
                push = head.kind == Kind::PushPromise;
                if end {
                    ends_block = Some(None);
                    decoded = decode_block(ds, frag, which, warnings, id, src, dst);
                } else {
                    ds.block.clear();
                    ds.block.extend_from_slice(frag);
                    ds.open = Some(OpenBlock {
                        stream: head.stream_id,
                        overflow: false,
                        lost: false,
                        opener: unset,
                    });
                }
            }
            Some((frag, false)) => {
                if let Some(open) = ds.open.as_mut().filter(|b| b.stream == head.stream_id) {
                    if ds.block.len() + frag.len() > MAX_HEADER_BLOCK {
                        open.overflow = true;
                    } else {
                        ds.block.extend_from_slice(frag);
                    }
                    if end {
                        let open = *open;
                        ds.open = None;
                        push = open.opener.class == FrameClass::PushPromise;
                        ends_block = Some(Some(open.opener));
                        if open.lost {
                            // Its opening fragment was lost (said then): not decoded.
                        } else if open.overflow {
                            ds.lose_hpack_sync();
                            warnings.add("header-block", || {
                                    format!("connection {} {src} -> {dst}: header block on stream {} larger than {MAX_HEADER_BLOCK} bytes: not decoded, HPACK state lost", id.0, head.stream_id)
                                });
                        } else {
                            let block = std::mem::take(&mut ds.block);
                            decoded = decode_block(ds, &block, which, warnings, id, src, dst);
                            ds.block = block;
                        }
                    }
                } else {
                    warnings.add("header-block", || {
                            format!("connection {} {src} -> {dst}: CONTINUATION on stream {} without a header block in progress", id.0, head.stream_id)
                        });
                }
            }
            None => {
                // The frame did not load (or was cut by a gap): its fragment is lost.
                ds.lose_hpack_sync();
                warnings.add("hpack-sync", || {
                        format!("connection {} {src} -> {dst}: {} frame on stream {} could not be read; HPACK state reset (later references may show placeholders)", id.0, head.kind.name(), head.stream_id)
                    });
                // A HEADERS or PUSH_PROMISE still opens or ends its block: its CONTINUATIONs
                // are its own, and the block's end is where its step takes effect.
                if head.kind != Kind::Continuation {
                    if end {
                        ends_block = Some(None);
                    } else {
                        ds.open = Some(OpenBlock {
                            stream: head.stream_id,
                            overflow: false,
                            lost: true,
                            opener: unset,
                        });
                    }
                }
            }
        }
    }
    let pseudo = if decoded && head.kind == Kind::Headers {
        let sum = c.dirs[dir].summary;
        if sum.pseudo {
            BlockKind::Pseudo
        } else if sum.unseen {
            BlockKind::Unknown
        } else {
            BlockKind::NoPseudo
        }
    } else {
        BlockKind::Unknown
    };
    let (class, stream) = classify(c, dir, &head, loaded.as_ref(), pseudo);
    // Stream 0 is the connection's: a HEADERS, DATA or RST_STREAM on it (malformed) is
    // classified as on any stream, but makes no step of a stream's life.
    let stream = if head.stream_id.0 == 0 {
        StreamStep::None
    } else {
        stream
    };
    // The facts of a block's opening frame, for the frame that ends the block (decision 454):
    // its row, its step, whether it ends its sender's half (by the frame's own rule: its
    // step, or its END_STREAM on a stream not followed).
    let opener = |class: FrameClass| BlockOpen {
        class,
        stream,
        ends_half: super::observer::ends_half(stream, &head),
    };
    let opened = match ends_block {
        Some(Some(o)) => Some(o),
        Some(None) => Some(opener(class)),
        None => {
            if matches!(head.kind, Kind::Headers | Kind::PushPromise) {
                if let Some(o) = c.dirs[dir]
                    .open
                    .as_mut()
                    .filter(|o| o.stream == head.stream_id)
                {
                    o.opener = opener(class);
                }
            }
            None
        }
    };
    if c.streams_full && !c.streams_reported {
        c.streams_reported = true;
        warnings.add("streams-cap", || {
                format!(
                    "connection {} {src} -> {dst}: more than {MAX_STREAMS} open streams tracked; HEADERS vs TRAILERS on further streams is read from the header block (pseudo-header fields), or END_STREAM when unreadable",
                    id.0
                )
            });
    }
    if c.client.is_none() && header_kind {
        // Who asks and who answers: requests carry :method, responses :status (RFC 9113
        // §8.3); PUSH_PROMISE carries a request from the server, so it is left out.
        let ds = &c.dirs[dir];
        if decoded && !push {
            if ds.summary.request {
                c.set_client(dir, ClientBy::PseudoHeaders);
            } else if ds.summary.response {
                c.set_client(dir.other(), ClientBy::PseudoHeaders);
            }
        }
    }
    if c.client.is_none() && class == FrameClass::Headers && head.stream_id.is_client_initiated() {
        // No readable pseudo-header: the client opens odd-numbered streams (RFC 9113
        // §5.1.1). Weaker, as a response on an odd stream looks the same.
        c.odd_streams[dir] += 1;
    }
    let side = c.side(dir);
    let ping_payload = match loaded.as_ref() {
        Some(Frame::Ping(p)) => Some(p.payload),
        _ => None,
    };
    let ping = match class {
        FrameClass::Ping => c.dirs[dir].pings.sent(ping_payload, w.ts),
        FrameClass::PingAck => c.dirs[dir.other()].pings.acked(ping_payload),
        _ => PingFact::None,
    };
    let late_start = c.dirs.iter().any(|(_, x)| x.phase.began_late());
    // A direction that began mid-stream began late too: only then look.
    let mid_stream = late_start && c.dirs.iter().any(|(_, x)| x.phase.began_mid_stream());
    let ds = &c.dirs[dir];
    let ev = FrameEvent {
        conn: id,
        dir,
        side,
        ts: w.ts,
        write: w.index,
        head,
        class,
        frame: loaded.as_ref(),
        headers: (decoded && !matches!(which, HeaderNeed::None)).then_some(&ds.headers),
        block: decoded.then_some(ds.summary.size),
        src,
        dst,
        late_start,
        mid_stream,
        spanned,
        padding,
        ping,
        stream,
        opened,
    };
    observer.frame(&ev);
}
