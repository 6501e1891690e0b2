//! Finding HTTP/2 frame boundaries in a byte stream whose beginning we may not have.
//!
//! Detection and resynchronisation use the same proof: several consecutive frame headers that
//! are each [`Head::plausible`] and chain (each starts where the previous frame ends).

use h2_frame_parser::{Head, HEAD_LEN, PREFACE};

/// Frame headers in a row that prove a frame boundary.
pub const CHAIN_PROOF: usize = 3;

/// The largest frame length accepted while looking for a boundary when no SETTINGS told us
/// more (RFC 9113 §4.2: 2^24-1 is the protocol's limit).
pub const MAX_FRAME_LEN: u32 = (1 << 24) - 1;

/// The outcome of following frame headers from one offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chain {
    /// `n` plausible headers in a row, the last frame ending exactly at the end of the input.
    Exact(usize),
    /// `n` plausible headers, then the input ran out inside a header or a payload.
    Short(usize),
    /// `n` plausible headers, then an implausible one: this offset is not a boundary.
    Broken(usize),
}

impl Chain {
    pub fn heads(self) -> usize {
        match self {
            Chain::Exact(n) | Chain::Short(n) | Chain::Broken(n) => n,
        }
    }
}

fn head_at(buf: &[u8], at: usize) -> Option<Head> {
    let bytes = buf.get(at..at.checked_add(HEAD_LEN)?)?;
    Head::parse(bytes).ok().map(|(_, h)| h)
}

/// Follows the chain of frame headers starting at `at`, stopping after `limit` headers.
pub fn chain(buf: &[u8], mut at: usize, limit: usize, max_frame: u32) -> Chain {
    let mut n = 0;
    while n < limit {
        if at == buf.len() {
            return Chain::Exact(n);
        }
        let Some(head) = head_at(buf, at) else {
            return Chain::Short(n);
        };
        if !head.plausible(max_frame) {
            return Chain::Broken(n);
        }
        n += 1;
        at += HEAD_LEN + head.length as usize;
        if at > buf.len() {
            return Chain::Short(n);
        }
    }
    if at == buf.len() {
        Chain::Exact(n)
    } else {
        Chain::Short(n)
    }
}

/// What [`Scanner::scan`] decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// The client connection preface ends at this offset (frames follow it).
    Preface(usize),
    /// A proven frame boundary at this offset.
    Frames(usize),
    /// Not yet: more bytes may decide.
    Wait,
}

/// Most undecided offsets remembered while scanning; beyond that, new ones are not followed.
const MAX_CANDIDATES: usize = 4096;

/// Incremental search for the first frame boundary in a growing buffer. Each offset is looked
/// at once when its bytes arrive; offsets whose chain of headers runs past the end of the
/// buffer stay candidates and are looked at again as bytes come in. Offsets proven not to be
/// boundaries are never looked at again, so the work stays linear in the bytes scanned.
#[derive(Debug, Default)]
pub struct Scanner {
    /// Offsets below this one have been looked at.
    next: usize,
    /// Offsets looked at that were neither proven nor broken, ascending.
    candidates: Vec<usize>,
}

impl Scanner {
    /// `at_start`: the buffer holds the stream from its first byte (the TCP handshake was seen),
    /// so a boundary at offset 0 needs less proof: RFC 9113 §3.4 makes the first frame of
    /// either side a SETTINGS frame.
    /// `closing`: no more bytes will come; accept a shorter proof that ends exactly at the end.
    pub fn scan(&mut self, buf: &[u8], at_start: bool, closing: bool, max_frame: u32) -> Found {
        if let Some(found) = self.preface(buf, at_start) {
            return found;
        }
        if at_start && self.next == 0 {
            if let Some(h) = head_at(buf, 0) {
                if h.plausible(max_frame)
                    && h.kind == h2_frame_parser::Kind::Settings
                    && !h.flags.is_ack()
                {
                    return Found::Frames(0);
                }
            }
        }
        // Old candidates first (they are the earlier offsets), then the new bytes.
        let mut best = None;
        let mut exact_at_close = None;
        self.candidates
            .retain(|&at| match chain(buf, at, CHAIN_PROOF, max_frame) {
                Chain::Broken(_) => false,
                c => {
                    if c.heads() >= CHAIN_PROOF {
                        best = best.or(Some(at));
                    } else if matches!(c, Chain::Exact(n) if n >= 1) {
                        exact_at_close = exact_at_close.or(Some(at));
                    }
                    true
                }
            });
        if let Some(at) = best {
            return Found::Frames(at);
        }
        let last = buf.len().saturating_sub(HEAD_LEN);
        while self.next <= last && buf.len() >= HEAD_LEN {
            let at = self.next;
            self.next += 1;
            match chain(buf, at, CHAIN_PROOF, max_frame) {
                Chain::Broken(_) => {}
                c if c.heads() >= CHAIN_PROOF => return Found::Frames(at),
                c => {
                    if matches!(c, Chain::Exact(n) if n >= 1) {
                        exact_at_close = exact_at_close.or(Some(at));
                    }
                    if self.candidates.len() < MAX_CANDIDATES {
                        self.candidates.push(at);
                    }
                }
            }
        }
        match exact_at_close {
            Some(at) if closing => Found::Frames(at),
            _ => Found::Wait,
        }
    }

    /// An h2c upgrade or prior-knowledge client: the preface, at the start or after an
    /// HTTP/1.1 Upgrade request.
    fn preface(&self, buf: &[u8], at_start: bool) -> Option<Found> {
        if at_start && buf.len() < PREFACE.len() && PREFACE.starts_with(buf) {
            return Some(Found::Wait);
        }
        find(buf, PREFACE).map(|i| Found::Preface(i + PREFACE.len()))
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if hay.len() < needle.len() {
        return None;
    }
    let first = needle[0];
    let mut i = 0;
    while i + needle.len() <= hay.len() {
        match hay[i..hay.len() - needle.len() + 1]
            .iter()
            .position(|&b| b == first)
        {
            None => return None,
            Some(p) => {
                i += p;
                if &hay[i..i + needle.len()] == needle {
                    return Some(i);
                }
                i += 1;
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let len = payload.len() as u32;
        let mut v = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
        v.extend_from_slice(&stream.to_be_bytes());
        v.extend_from_slice(payload);
        v
    }

    #[test]
    fn preface_found_after_upgrade_request() {
        let mut buf = b"GET / HTTP/1.1\r\nUpgrade: h2c\r\n\r\n".to_vec();
        buf.extend_from_slice(PREFACE);
        let n = buf.len();
        assert_eq!(
            Scanner::default().scan(&buf, true, false, 16384),
            Found::Preface(n)
        );
    }

    #[test]
    fn mid_frame_start_needs_three_chained_heads() {
        let mut buf = vec![0xAB; 5]; // tail of a frame we never saw the start of
        buf.extend(frame(0, 0, 1, &[1; 20]));
        buf.extend(frame(8, 0, 0, &[0, 0, 1, 0]));
        let mut s = Scanner::default();
        assert_eq!(s.scan(&buf, false, false, 16384), Found::Wait);
        buf.extend(frame(6, 0, 0, &[7; 8]));
        assert_eq!(s.scan(&buf, false, false, 16384), Found::Frames(5));
    }

    #[test]
    fn garbage_is_never_a_boundary() {
        let buf: Vec<u8> = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello".repeat(50);
        assert_eq!(
            Scanner::default().scan(&buf, true, true, 16384),
            Found::Wait
        );
    }

    #[test]
    fn server_first_settings_is_enough_at_start() {
        let buf = frame(4, 0, 0, &[0, 3, 0, 0, 0, 100]);
        assert_eq!(
            Scanner::default().scan(&buf, true, false, 16384),
            Found::Frames(0)
        );
    }

    #[test]
    fn closing_accepts_a_short_exact_chain() {
        let mut buf = vec![1, 2, 3];
        buf.extend(frame(6, 1, 0, &[7; 8]));
        assert_eq!(
            Scanner::default().scan(&buf, false, false, 16384),
            Found::Wait
        );
        assert_eq!(
            Scanner::default().scan(&buf, false, true, 16384),
            Found::Frames(3)
        );
    }
}
