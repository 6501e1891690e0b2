//! Is this connection TLS? Decided once, by the first direction to show 3 bytes: a handshake
//! record of version 3.x starts TLS; a capture that did not see the connection begin may also
//! find it mid-stream, in a chain of records.

use crate::wire::{self, RecordHeader, RECORD_HEADER_LEN};

/// What the first bytes of a direction tell ([`detect`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Detected {
    /// Not TLS: the connection passes through.
    Plain,
    /// TLS; `mid_stream`: found in records after the handshake, not at a ClientHello.
    Tls { mid_stream: bool },
}

/// Whether a direction whose first bytes were `had` (fewer than 3) and then `bytes` is TLS;
/// `None` while the two make fewer than 3 bytes. `at_start`: the capture saw the connection
/// begin (a SYN, and no gap before the first byte).
pub(crate) fn detect(had: &[u8], bytes: &[u8], at_start: bool) -> Option<Detected> {
    let mut head = had.to_vec();
    head.extend_from_slice(&bytes[..bytes.len().min(3)]);
    if head.len() < 3 {
        return None;
    }
    let start = wire::looks_like_tls_start(&head);
    Some(if start || (!at_start && mid_stream_tls(&head, bytes)) {
        Detected::Tls { mid_stream: !start }
    } else {
        Detected::Plain
    })
}

/// A capture that began mid-connection: a chain of records, or one record header of
/// application data (TLS 1.2+ version) that the first bytes cannot complete.
fn mid_stream_tls(head: &[u8], bytes: &[u8]) -> bool {
    if head.len() > bytes.len() {
        return false; // the start came in pieces: too little to tell
    }
    if wire::record_chain(bytes) {
        return true;
    }
    RecordHeader::parse(bytes).is_some_and(|h| {
        h.plausible()
            && h.content_type == wire::APPLICATION_DATA
            && h.version == 0x0303
            && bytes.len() < RECORD_HEADER_LEN + h.length as usize
    })
}
