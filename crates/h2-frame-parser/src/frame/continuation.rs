//! CONTINUATION (RFC 9113 §6.10).

use super::{require_stream, Flags, FrameError, Head, StreamId};

/// A CONTINUATION frame: the next fragment of a header block begun by HEADERS or PUSH_PROMISE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Continuation<'a> {
    /// The stream of the header block (never 0).
    pub stream_id: StreamId,
    /// Its flags (END_HEADERS).
    pub flags: Flags,
    /// The field block fragment (HPACK).
    pub fragment: &'a [u8],
}

impl<'a> Continuation<'a> {
    pub(crate) fn load(head: Head, payload: &'a [u8]) -> Result<Self, FrameError> {
        // "If a CONTINUATION frame is received with a Stream Identifier field of 0x00, the
        // recipient MUST respond with a connection error (Section 5.4.1) of type
        // PROTOCOL_ERROR."
        require_stream(&head)?;
        Ok(Continuation {
            stream_id: head.stream_id,
            flags: head.flags,
            fragment: payload,
        })
    }

    /// The header block ends with this frame.
    pub fn is_end_headers(&self) -> bool {
        self.flags.is_end_headers()
    }
}

#[cfg(test)]
mod tests {
    use crate::frame::{frame_bytes, load_one, Frame, FrameError, Kind};

    #[test]
    fn load() {
        let bytes = frame_bytes!(Kind::Continuation, flags 4, stream 1; [0x84]);
        let Frame::Continuation(c) = load_one(&bytes).unwrap() else {
            panic!()
        };
        assert_eq!((c.stream_id.0, c.fragment), (1, &[0x84][..]));
        assert!(c.is_end_headers());
        let bytes = frame_bytes!(Kind::Continuation, flags 0, stream 0; [0x84]);
        assert!(matches!(
            load_one(&bytes),
            Err(FrameError::InvalidStreamId { .. })
        ));
    }
}
