//! GOAWAY (RFC 9113 §6.8).

use nom::number::complete::be_u32;

use super::{require_connection, too_short, ErrorCode, FrameError, Head, Inner};

/// A GOAWAY frame: the sender stops accepting new streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GoAway<'a> {
    /// Last-Stream-ID (31 bits, reserved bit masked).
    pub last_stream_id: u32,
    /// Why the connection is being closed.
    pub code: ErrorCode,
    /// Additional Debug Data (opaque; often ASCII such as `too_many_pings`).
    pub debug: &'a [u8],
}

impl<'a> GoAway<'a> {
    pub(crate) fn load(head: Head, payload: &'a [u8]) -> Result<Self, FrameError> {
        // "An endpoint MUST treat a GOAWAY frame with a stream identifier other than 0x00 as
        // a connection error (Section 5.4.1) of type PROTOCOL_ERROR."
        require_connection(&head)?;
        // The payload is Last-Stream-ID (4 octets), Error Code (4 octets) and optional debug
        // data (RFC 9113 Figure 12), so fewer than 8 octets cannot be a GOAWAY.
        let (rest, last) =
            be_u32::<_, Inner<'a>>(payload).map_err(|_| too_short(&head, payload))?;
        let (debug, code) = be_u32::<_, Inner<'a>>(rest).map_err(|_| too_short(&head, payload))?;
        Ok(GoAway {
            last_stream_id: last & 0x7fff_ffff,
            code: ErrorCode(code),
            debug,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::frame::{frame_bytes, load_one, ErrorCode, Frame, FrameError, Kind};

    #[test]
    fn load() {
        let bytes = frame_bytes!(Kind::GoAway, flags 0, stream 0;
            [0x80, 0, 0, 5], [0, 0, 0, 0xb], *b"too_many_pings");
        let Frame::GoAway(g) = load_one(&bytes).unwrap() else {
            panic!()
        };
        assert_eq!(
            (g.last_stream_id, g.code),
            (5, ErrorCode::ENHANCE_YOUR_CALM)
        );
        assert_eq!(g.debug, b"too_many_pings");
    }

    #[test]
    fn errors() {
        let bytes = frame_bytes!(Kind::GoAway, flags 0, stream 0; [0, 0, 0, 5, 0, 0, 0]);
        assert_eq!(
            load_one(&bytes),
            Err(FrameError::BadFrameSize {
                kind: Kind::GoAway,
                length: 7
            })
        );
        let bytes = frame_bytes!(Kind::GoAway, flags 0, stream 1; [0; 8]);
        assert!(matches!(
            load_one(&bytes),
            Err(FrameError::InvalidStreamId { .. })
        ));
    }
}
