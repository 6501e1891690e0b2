//! RST_STREAM (RFC 9113 §6.4).

use nom::number::complete::be_u32;

use super::{require_stream, too_short, ErrorCode, FrameError, Head, Inner, StreamId};

/// An RST_STREAM frame: the immediate end of a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RstStream {
    /// The stream (never 0).
    pub stream_id: StreamId,
    /// Why it was reset.
    pub code: ErrorCode,
}

impl RstStream {
    pub(crate) fn load(head: Head, payload: &[u8]) -> Result<Self, FrameError> {
        // "RST_STREAM frames MUST be associated with a stream. If a RST_STREAM frame is
        // received with a stream identifier of 0x00, the recipient MUST treat this as a
        // connection error (Section 5.4.1) of type PROTOCOL_ERROR."
        require_stream(&head)?;
        // "A RST_STREAM frame with a length other than 4 octets MUST be treated as a
        // connection error (Section 5.4.1) of type FRAME_SIZE_ERROR."
        if payload.len() != 4 {
            return Err(too_short(&head, payload));
        }
        let (_, code) = be_u32::<_, Inner<'_>>(payload).map_err(|_| too_short(&head, payload))?;
        Ok(RstStream {
            stream_id: head.stream_id,
            code: ErrorCode(code),
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::frame::{frame_bytes, load_one, ErrorCode, Frame, FrameError, Kind};

    #[test]
    fn load() {
        let bytes = frame_bytes!(Kind::RstStream, flags 0, stream 3; [0, 0, 0, 8]);
        let Frame::RstStream(r) = load_one(&bytes).unwrap() else {
            panic!()
        };
        assert_eq!((r.stream_id.0, r.code), (3, ErrorCode::CANCEL));
    }

    #[test]
    fn errors() {
        let bytes = frame_bytes!(Kind::RstStream, flags 0, stream 3; [0, 0, 8]);
        assert_eq!(
            load_one(&bytes),
            Err(FrameError::BadFrameSize {
                kind: Kind::RstStream,
                length: 3
            })
        );
        let bytes = frame_bytes!(Kind::RstStream, flags 0, stream 0; [0, 0, 0, 8]);
        assert!(matches!(
            load_one(&bytes),
            Err(FrameError::InvalidStreamId { .. })
        ));
    }
}
