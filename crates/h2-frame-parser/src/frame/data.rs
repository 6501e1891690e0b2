//! DATA (RFC 9113 §6.1).

use super::{require_stream, strip_padding, Flags, FrameError, Head, StreamId};

/// A DATA frame: application data of a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Data<'a> {
    /// The stream (never 0).
    pub stream_id: StreamId,
    /// Its flags (END_STREAM, PADDED).
    pub flags: Flags,
    /// Application data, without Pad Length and padding.
    pub data: &'a [u8],
    /// Pad Length when PADDED is set.
    pub pad_len: Option<u8>,
}

impl<'a> Data<'a> {
    pub(crate) fn load(head: Head, payload: &'a [u8]) -> Result<Self, FrameError> {
        // "DATA frames MUST be associated with a stream. If a DATA frame is received whose
        // Stream Identifier field is 0x00, the recipient MUST respond with a connection error
        // (Section 5.4.1) of type PROTOCOL_ERROR."
        require_stream(&head)?;
        let (data, pad_len) = strip_padding(&head, payload)?;
        Ok(Data {
            stream_id: head.stream_id,
            flags: head.flags,
            data,
            pad_len,
        })
    }

    /// The sender's last frame on this stream.
    pub fn is_end_stream(&self) -> bool {
        self.flags.is_end_stream()
    }

    /// Octets counted against flow control: the whole payload, padding included
    /// ("The entire DATA frame payload is included in flow control, including the Pad Length
    /// and Padding fields if present").
    pub fn flow_controlled_len(&self) -> usize {
        self.data.len() + self.pad_len.map_or(0, |p| 1 + usize::from(p))
    }
}

#[cfg(test)]
mod tests {
    use crate::frame::{frame_bytes, load_one, Frame, FrameError, Kind, StreamId};

    #[test]
    fn plain() {
        let bytes = frame_bytes!(Kind::Data, flags 0x1, stream 1; *b"hello");
        let Frame::Data(d) = load_one(&bytes).unwrap() else {
            panic!()
        };
        assert_eq!((d.stream_id.0, d.data, d.pad_len), (1, &b"hello"[..], None));
        assert!(d.is_end_stream());
        assert_eq!(d.flow_controlled_len(), 5);
    }

    #[test]
    fn padded() {
        let bytes = frame_bytes!(Kind::Data, flags 0x8, stream 3; [3], *b"hi", [0, 0, 0]);
        let Frame::Data(d) = load_one(&bytes).unwrap() else {
            panic!()
        };
        assert_eq!((d.data, d.pad_len), (&b"hi"[..], Some(3)));
        assert!(!d.is_end_stream());
        assert_eq!(d.flow_controlled_len(), 6);
        // Padding only, no data: Pad Length = payload length - 1 is the largest legal value.
        let bytes = frame_bytes!(Kind::Data, flags 0x8, stream 3; [2, 0, 0]);
        let Frame::Data(d) = load_one(&bytes).unwrap() else {
            panic!()
        };
        assert_eq!((d.data, d.pad_len), (&b""[..], Some(2)));
    }

    #[test]
    fn bad_pad_length() {
        let bytes = frame_bytes!(Kind::Data, flags 0x8, stream 1; [3, 1, 2]);
        assert_eq!(
            load_one(&bytes),
            Err(FrameError::TooMuchPadding {
                kind: Kind::Data,
                pad_len: 3,
                length: 3
            })
        );
        let bytes = frame_bytes!(Kind::Data, flags 0x8, stream 1; []);
        assert_eq!(
            load_one(&bytes),
            Err(FrameError::BadFrameSize {
                kind: Kind::Data,
                length: 0
            })
        );
    }

    #[test]
    fn stream_zero() {
        let bytes = frame_bytes!(Kind::Data, flags 0, stream 0; *b"x");
        assert_eq!(
            load_one(&bytes),
            Err(FrameError::InvalidStreamId {
                kind: Kind::Data,
                stream_id: StreamId(0)
            })
        );
    }
}
