//! PING (RFC 9113 §6.7). Known payloads are named in [`crate::ping`].

use super::{require_connection, Flags, FrameError, Head};

/// A PING frame, or its acknowledgement (same payload, ACK set).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ping {
    /// Its flags (ACK).
    pub flags: Flags,
    /// Opaque Data, 8 octets.
    pub payload: [u8; 8],
}

impl Ping {
    pub(crate) fn load(head: Head, payload: &[u8]) -> Result<Self, FrameError> {
        // "If a PING frame is received with a Stream Identifier field value other than 0x00,
        // the recipient MUST respond with a connection error (Section 5.4.1) of type
        // PROTOCOL_ERROR."
        require_connection(&head)?;
        // "Receipt of a PING frame with a length field value other than 8 MUST be treated as a
        // connection error (Section 5.4.1) of type FRAME_SIZE_ERROR."
        let payload: [u8; 8] = payload.try_into().map_err(|_| FrameError::BadFrameSize {
            kind: head.kind,
            length: payload.len(),
        })?;
        Ok(Ping {
            flags: head.flags,
            payload,
        })
    }

    /// An acknowledgement of the peer's PING.
    pub fn is_ack(&self) -> bool {
        self.flags.is_ack()
    }

    /// The entry of [`crate::ping::KNOWN_PINGS`] this payload matches, if any.
    pub fn known(&self) -> Option<&'static crate::ping::KnownPing> {
        crate::ping::classify(&self.payload)
    }
}

#[cfg(test)]
mod tests {
    use crate::frame::{frame_bytes, load_one, Frame, FrameError, Kind};

    #[test]
    fn load() {
        let bytes = frame_bytes!(Kind::Ping, flags 1, stream 0; [2, 4, 16, 16, 9, 14, 7, 7]);
        let Frame::Ping(p) = load_one(&bytes).unwrap() else {
            panic!()
        };
        assert!(p.is_ack());
        assert_eq!(p.known().map(|k| k.label), Some("grpc-go-bdp"));
    }

    #[test]
    fn errors() {
        let bytes = frame_bytes!(Kind::Ping, flags 0, stream 0; [0; 7]);
        assert_eq!(
            load_one(&bytes),
            Err(FrameError::BadFrameSize {
                kind: Kind::Ping,
                length: 7
            })
        );
        let bytes = frame_bytes!(Kind::Ping, flags 0, stream 1; [0; 8]);
        assert!(matches!(
            load_one(&bytes),
            Err(FrameError::InvalidStreamId { .. })
        ));
    }
}
