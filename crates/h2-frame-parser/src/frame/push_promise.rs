//! PUSH_PROMISE (RFC 9113 §6.6).

use nom::number::complete::be_u32;

use super::{require_stream, strip_padding, too_short, Flags, FrameError, Head, Inner, StreamId};

/// A PUSH_PROMISE frame: the server reserves a stream for a response it will push.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PushPromise<'a> {
    /// The stream of the request it is associated with (never 0).
    pub stream_id: StreamId,
    /// Its flags (END_HEADERS, PADDED).
    pub flags: Flags,
    /// Promised Stream ID (31 bits, reserved bit masked).
    pub promised_id: u32,
    /// The field block fragment (HPACK) of the promised request, without padding.
    pub fragment: &'a [u8],
    /// Pad Length when PADDED is set.
    pub pad_len: Option<u8>,
}

impl<'a> PushPromise<'a> {
    pub(crate) fn load(head: Head, payload: &'a [u8]) -> Result<Self, FrameError> {
        // "If the Stream Identifier field specifies the value 0x00, a recipient MUST respond
        // with a connection error (Section 5.4.1) of type PROTOCOL_ERROR."
        require_stream(&head)?;
        let (rest, pad_len) = strip_padding(&head, payload)?;
        let (fragment, promised) =
            be_u32::<_, Inner<'a>>(rest).map_err(|_| too_short(&head, rest))?;
        Ok(PushPromise {
            stream_id: head.stream_id,
            flags: head.flags,
            promised_id: promised & 0x7fff_ffff,
            fragment,
            pad_len,
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
        let bytes = frame_bytes!(Kind::PushPromise, flags 0xc, stream 1;
            [1], [0x80, 0, 0, 2], [0x82, 0x84], [0]);
        let Frame::PushPromise(p) = load_one(&bytes).unwrap() else {
            panic!()
        };
        assert_eq!((p.stream_id.0, p.promised_id, p.pad_len), (1, 2, Some(1)));
        assert_eq!(p.fragment, &[0x82, 0x84]);
        assert!(p.is_end_headers());
    }

    #[test]
    fn errors() {
        let bytes = frame_bytes!(Kind::PushPromise, flags 0x4, stream 1; [0, 0, 2]);
        assert!(matches!(
            load_one(&bytes),
            Err(FrameError::BadFrameSize { .. })
        ));
        let bytes = frame_bytes!(Kind::PushPromise, flags 0x4, stream 0; [0, 0, 0, 2]);
        assert!(matches!(
            load_one(&bytes),
            Err(FrameError::InvalidStreamId { .. })
        ));
        let bytes = frame_bytes!(Kind::PushPromise, flags 0xc, stream 1; [5, 0, 0, 0, 2]);
        assert!(matches!(
            load_one(&bytes),
            Err(FrameError::TooMuchPadding { .. })
        ));
    }
}
