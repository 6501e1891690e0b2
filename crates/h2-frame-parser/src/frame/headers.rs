//! HEADERS (RFC 9113 §6.2).

use super::{require_stream, strip_padding, Flags, FrameError, Head, PrioritySpec, StreamId};

/// A HEADERS frame: opens a stream or carries trailers, with the first fragment of a header
/// block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Headers<'a> {
    /// The stream (never 0).
    pub stream_id: StreamId,
    /// Its flags (END_STREAM, END_HEADERS, PADDED, PRIORITY).
    pub flags: Flags,
    /// Present when the PRIORITY flag is set.
    pub priority: Option<PrioritySpec>,
    /// Field block fragment (HPACK), without padding and priority fields.
    pub fragment: &'a [u8],
    /// Pad Length when PADDED is set.
    pub pad_len: Option<u8>,
}

impl<'a> Headers<'a> {
    #[inline]
    pub(crate) fn load(head: Head, payload: &'a [u8]) -> Result<Self, FrameError> {
        // "HEADERS frames MUST be associated with a stream. If a HEADERS frame is received
        // whose Stream Identifier field is 0x00, the recipient MUST respond with a connection
        // error (Section 5.4.1) of type PROTOCOL_ERROR."
        require_stream(&head)?;
        let (rest, pad_len) = strip_padding(&head, payload)?;
        // "PRIORITY (0x20): When set, the PRIORITY flag indicates that the Exclusive, Stream
        // Dependency, and Weight fields are present."
        let (fragment, priority) = if head.flags.is_priority() {
            let (fragment, spec) = PrioritySpec::parse(&head, rest)?;
            (fragment, Some(spec))
        } else {
            (rest, None)
        };
        Ok(Headers {
            stream_id: head.stream_id,
            flags: head.flags,
            priority,
            fragment,
            pad_len,
        })
    }

    /// The sender's last frame on this stream (trailers, or a request or response without body).
    pub fn is_end_stream(&self) -> bool {
        self.flags.is_end_stream()
    }
    /// The header block ends with this frame (no CONTINUATION follows).
    pub fn is_end_headers(&self) -> bool {
        self.flags.is_end_headers()
    }
}

#[cfg(test)]
mod tests {
    use crate::frame::{frame_bytes, load_one, Frame, FrameError, Kind, PrioritySpec, StreamId};

    #[test]
    fn plain() {
        let bytes = frame_bytes!(Kind::Headers, flags 0x5, stream 1; [0x82, 0x86]);
        let Frame::Headers(h) = load_one(&bytes).unwrap() else {
            panic!()
        };
        assert_eq!(
            (h.fragment, h.priority, h.pad_len),
            (&[0x82, 0x86][..], None, None)
        );
        assert!(h.is_end_stream() && h.is_end_headers());
    }

    #[test]
    fn padded_with_priority() {
        let bytes = frame_bytes!(Kind::Headers, flags 0x2c, stream 7;
            [2], [0, 0, 0, 3, 255], [0x82], [0, 0]);
        let Frame::Headers(h) = load_one(&bytes).unwrap() else {
            panic!()
        };
        assert_eq!(h.pad_len, Some(2));
        assert_eq!(
            h.priority,
            Some(PrioritySpec {
                exclusive: false,
                dependency: 3,
                weight: 255
            })
        );
        assert_eq!(h.fragment, &[0x82]);
        assert!(!h.is_end_stream() && h.is_end_headers());
    }

    #[test]
    fn priority_without_padding() {
        let bytes = frame_bytes!(Kind::Headers, flags 0x24, stream 3; [0x80, 0, 0, 1, 9], [0x83]);
        let Frame::Headers(h) = load_one(&bytes).unwrap() else {
            panic!()
        };
        assert_eq!(
            h.priority,
            Some(PrioritySpec {
                exclusive: true,
                dependency: 1,
                weight: 9
            })
        );
        assert_eq!(h.fragment, &[0x83]);
    }

    #[test]
    fn errors() {
        // Pad Length equal to the payload length.
        let bytes = frame_bytes!(Kind::Headers, flags 0x8, stream 1; [2, 0x82]);
        assert_eq!(
            load_one(&bytes),
            Err(FrameError::TooMuchPadding {
                kind: Kind::Headers,
                pad_len: 2,
                length: 2
            })
        );
        // PRIORITY flag but only 4 octets after padding removal.
        let bytes = frame_bytes!(Kind::Headers, flags 0x28, stream 1; [1], [0, 0, 0, 3], [0]);
        assert_eq!(
            load_one(&bytes),
            Err(FrameError::BadFrameSize {
                kind: Kind::Headers,
                length: 4
            })
        );
        let bytes = frame_bytes!(Kind::Headers, flags 0x20, stream 3; [0, 0, 0, 3, 0]);
        assert_eq!(
            load_one(&bytes),
            Err(FrameError::SelfDependency {
                stream_id: StreamId(3)
            })
        );
        let bytes = frame_bytes!(Kind::Headers, flags 0x4, stream 0; [0x82]);
        assert!(matches!(
            load_one(&bytes),
            Err(FrameError::InvalidStreamId { .. })
        ));
    }
}
