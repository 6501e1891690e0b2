//! Stream identifiers (RFC 9113 §5.1.1): 31 bits, the reserved high bit cleared on read.

/// A stream identifier. Stream 0 is the connection itself; clients open odd streams,
/// servers (push) even ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StreamId(pub u32);

impl StreamId {
    /// The connection (stream 0): SETTINGS, PING, GOAWAY, connection WINDOW_UPDATE.
    pub const ZERO: StreamId = StreamId(0);

    /// Whether this is stream 0 (the connection).
    #[inline]
    pub(crate) fn is_zero(self) -> bool {
        self.0 == 0
    }

    /// Whether a client opens streams of this id (RFC 9113 §5.1.1: odd).
    #[inline]
    pub fn is_client_initiated(self) -> bool {
        self.0 & 1 == 1
    }
}

impl std::fmt::Display for StreamId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl From<StreamId> for u32 {
    fn from(s: StreamId) -> u32 {
        s.0
    }
}
