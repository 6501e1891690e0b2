//! PRIORITY (RFC 9113 §6.3) and the priority fields shared with HEADERS.

use nom::number::complete::{be_u32, be_u8};

use super::{require_stream, too_short, FrameError, Head, Inner, StreamId};

/// Stream dependency and weight, as carried by PRIORITY and by HEADERS with the PRIORITY flag.
/// RFC 9113 deprecates the scheme, but peers still send it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PrioritySpec {
    /// The dependency is exclusive (the E bit).
    pub exclusive: bool,
    /// Stream Dependency (31 bits).
    pub dependency: u32,
    /// Weight as on the wire; the effective weight is `weight + 1` (1..=256).
    pub weight: u8,
}

impl PrioritySpec {
    /// Octets of the priority fields on the wire.
    pub const LEN: usize = 5;

    /// Parses the 5 priority octets at the start of `bytes`; returns the rest.
    pub(crate) fn parse<'a>(head: &Head, bytes: &'a [u8]) -> Result<(&'a [u8], Self), FrameError> {
        let (rest, dep) = be_u32::<_, Inner<'a>>(bytes).map_err(|_| too_short(head, bytes))?;
        let (rest, weight) = be_u8::<_, Inner<'a>>(rest).map_err(|_| too_short(head, bytes))?;
        let spec = PrioritySpec {
            exclusive: dep & 0x8000_0000 != 0,
            dependency: dep & 0x7fff_ffff,
            weight,
        };
        // "A stream cannot depend on itself. An endpoint MUST treat this as a stream error
        // (Section 5.4.2) of type PROTOCOL_ERROR." (RFC 9113 §5.3.1)
        if spec.dependency == head.stream_id.0 {
            return Err(FrameError::SelfDependency {
                stream_id: head.stream_id,
            });
        }
        Ok((rest, spec))
    }
}

/// A PRIORITY frame (deprecated by RFC 9113, still sent by some peers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Priority {
    /// The stream whose priority is given (never 0).
    pub stream_id: StreamId,
    /// Its dependency and weight.
    pub spec: PrioritySpec,
}

impl Priority {
    pub(crate) fn load(head: Head, payload: &[u8]) -> Result<Self, FrameError> {
        // "If a PRIORITY frame is received with a stream identifier of 0x00, the recipient
        // MUST respond with a connection error (Section 5.4.1) of type PROTOCOL_ERROR."
        require_stream(&head)?;
        // "A PRIORITY frame with a length other than 5 octets MUST be treated as a stream
        // error (Section 5.4.2) of type FRAME_SIZE_ERROR."
        if payload.len() != PrioritySpec::LEN {
            return Err(too_short(&head, payload));
        }
        let (_, spec) = PrioritySpec::parse(&head, payload)?;
        Ok(Priority {
            stream_id: head.stream_id,
            spec,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::frame::{frame_bytes, load_one, Frame, FrameError, Kind, PrioritySpec, StreamId};

    #[test]
    fn load() {
        let bytes = frame_bytes!(Kind::Priority, flags 0, stream 5; [0x80, 0, 0, 3, 15]);
        let Frame::Priority(p) = load_one(&bytes).unwrap() else {
            panic!()
        };
        assert_eq!(p.stream_id, StreamId(5));
        assert_eq!(
            p.spec,
            PrioritySpec {
                exclusive: true,
                dependency: 3,
                weight: 15
            }
        );
    }

    #[test]
    fn errors() {
        let bytes = frame_bytes!(Kind::Priority, flags 0, stream 5; [0, 0, 0, 3]);
        assert_eq!(
            load_one(&bytes),
            Err(FrameError::BadFrameSize {
                kind: Kind::Priority,
                length: 4
            })
        );
        let bytes = frame_bytes!(Kind::Priority, flags 0, stream 0; [0, 0, 0, 3, 0]);
        assert!(matches!(
            load_one(&bytes),
            Err(FrameError::InvalidStreamId { .. })
        ));
        let bytes = frame_bytes!(Kind::Priority, flags 0, stream 5; [0, 0, 0, 5, 0]);
        assert_eq!(
            load_one(&bytes),
            Err(FrameError::SelfDependency {
                stream_id: StreamId(5)
            })
        );
    }
}
