//! Record framing of one direction (RFC 8446 §5.1, RFC 5246 §6.2): TCP bytes in, whole
//! records out. A record that a segment completes whole is handed out where it lies; one that
//! spans segments is assembled in a buffer of its own.

use crate::wire::{RecordHeader, RECORD_HEADER_LEN};

/// Capacity of a direction's record buffer kept after a record that spanned segments: an
/// idle direction keeps a small buffer only (with thousands of open connections, a kept
/// 16 KiB record buffer each would add up).
const KEEP_RECORD_BUF: usize = 2048;

/// The record a direction is assembling: its header and as much of its payload as arrived.
#[derive(Default)]
pub(crate) struct Framer {
    buf: Vec<u8>,
}

/// What [`Framer::next`] found.
pub(crate) enum Next<'b> {
    /// A whole record, straight from the bytes given (nothing was buffered).
    Whole(&'b [u8]),
    /// The buffered record is complete: [`Framer::take`] it.
    Buffered,
    /// Every byte given went into the buffer; the record needs more.
    More,
    /// The buffered 5 bytes are not a plausible record header ([`Framer::head`]).
    NotAHeader,
}

impl Framer {
    /// The next record of `bytes`, which it advances past what it used.
    #[inline]
    pub(crate) fn next<'b>(&mut self, bytes: &mut &'b [u8]) -> Next<'b> {
        if self.buf.is_empty() {
            if let Some(h) = RecordHeader::parse(bytes) {
                let n = RECORD_HEADER_LEN + h.length as usize;
                if h.plausible() && bytes.len() >= n {
                    let (rec, rest) = bytes.split_at(n);
                    *bytes = rest;
                    return Next::Whole(rec);
                }
            }
        }
        if self.buf.len() < RECORD_HEADER_LEN {
            let n = (RECORD_HEADER_LEN - self.buf.len()).min(bytes.len());
            self.buf.extend_from_slice(&bytes[..n]);
            *bytes = &bytes[n..];
            if self.buf.len() < RECORD_HEADER_LEN {
                return Next::More;
            }
        }
        let h = RecordHeader::parse(&self.buf).expect("5 bytes");
        if !h.plausible() {
            return Next::NotAHeader;
        }
        let want = RECORD_HEADER_LEN + h.length as usize - self.buf.len();
        let n = want.min(bytes.len());
        self.buf.extend_from_slice(&bytes[..n]);
        *bytes = &bytes[n..];
        if n == want {
            Next::Buffered
        } else {
            Next::More
        }
    }

    /// The buffered record, after [`Next::Buffered`]; hand the buffer back with
    /// [`Framer::give_back`].
    pub(crate) fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.buf)
    }

    /// Keeps a taken buffer for the next record when it is small.
    pub(crate) fn give_back(&mut self, mut rec: Vec<u8>) {
        rec.clear();
        if self.buf.is_empty() && rec.capacity() <= KEEP_RECORD_BUF {
            self.buf = rec;
        }
    }

    /// The buffered bytes (after [`Next::NotAHeader`]: the 5 that are not a header).
    pub(crate) fn head(&self) -> &[u8] {
        &self.buf
    }

    /// Drops the partial record (framing is lost); how many bytes it had.
    pub(crate) fn discard(&mut self) -> usize {
        let n = self.buf.len();
        self.buf.clear();
        n
    }
}
