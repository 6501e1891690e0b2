//! WINDOW_UPDATE (RFC 9113 §6.9).

use nom::number::complete::be_u32;

use super::{too_short, FrameError, Head, Inner, StreamId};

/// A WINDOW_UPDATE frame: flow-control credit for a stream or the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WindowUpdate {
    /// 0 for the connection window.
    pub stream_id: StreamId,
    /// Window Size Increment (31 bits, reserved bit masked), never 0.
    pub increment: u32,
}

impl WindowUpdate {
    pub(crate) fn load(head: Head, payload: &[u8]) -> Result<Self, FrameError> {
        // "A WINDOW_UPDATE frame with a length other than 4 octets MUST be treated as a
        // connection error (Section 5.4.1) of type FRAME_SIZE_ERROR."
        if payload.len() != 4 {
            return Err(too_short(&head, payload));
        }
        let (_, raw) = be_u32::<_, Inner<'_>>(payload).map_err(|_| too_short(&head, payload))?;
        let increment = raw & 0x7fff_ffff;
        // "A receiver MUST treat the receipt of a WINDOW_UPDATE frame with a flow-control
        // window increment of 0 as a stream error (Section 5.4.2) of type PROTOCOL_ERROR;
        // errors on the connection flow-control window MUST be treated as a connection error"
        if increment == 0 {
            return Err(FrameError::ZeroWindowIncrement {
                stream_id: head.stream_id,
            });
        }
        Ok(WindowUpdate {
            stream_id: head.stream_id,
            increment,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::frame::{frame_bytes, load_one, Frame, FrameError, Kind, StreamId};

    #[test]
    fn load() {
        let bytes = frame_bytes!(Kind::WindowUpdate, flags 0, stream 0; [0x80, 0, 0x10, 0]);
        let Frame::WindowUpdate(w) = load_one(&bytes).unwrap() else {
            panic!()
        };
        assert_eq!((w.stream_id.0, w.increment), (0, 4096));
    }

    #[test]
    fn errors() {
        let bytes = frame_bytes!(Kind::WindowUpdate, flags 0, stream 1; [0x80, 0, 0, 0]);
        assert_eq!(
            load_one(&bytes),
            Err(FrameError::ZeroWindowIncrement {
                stream_id: StreamId(1)
            })
        );
        let bytes = frame_bytes!(Kind::WindowUpdate, flags 0, stream 1; [0, 0, 1]);
        assert!(matches!(
            load_one(&bytes),
            Err(FrameError::BadFrameSize { .. })
        ));
    }
}
