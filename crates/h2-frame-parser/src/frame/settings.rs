//! SETTINGS (RFC 9113 §6.5).

use core::fmt;

use super::{require_connection, Flags, FrameError, Head};

/// A setting identifier. Unknown identifiers are kept: "An endpoint that receives a SETTINGS
/// frame with any unknown or unsupported identifier MUST ignore that setting."
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SettingId(pub u16);

impl SettingId {
    /// 0x1: the largest HPACK table the sender's decoder allows.
    pub const HEADER_TABLE_SIZE: SettingId = SettingId(0x1);
    /// 0x2: whether server push is permitted (0 or 1).
    pub const ENABLE_PUSH: SettingId = SettingId(0x2);
    /// 0x3: the most streams the sender allows its peer to open.
    pub const MAX_CONCURRENT_STREAMS: SettingId = SettingId(0x3);
    /// 0x4: the sender's initial stream flow-control window.
    pub const INITIAL_WINDOW_SIZE: SettingId = SettingId(0x4);
    /// 0x5: the largest frame payload the sender accepts.
    pub const MAX_FRAME_SIZE: SettingId = SettingId(0x5);
    /// 0x6: the largest field section the sender accepts (advisory).
    pub const MAX_HEADER_LIST_SIZE: SettingId = SettingId(0x6);
    /// RFC 8441.
    pub const ENABLE_CONNECT_PROTOCOL: SettingId = SettingId(0x8);
    /// RFC 9218.
    pub const NO_RFC7540_PRIORITIES: SettingId = SettingId(0x9);

    /// The parameter's name without the `SETTINGS_` prefix, `None` for an identifier not
    /// defined here.
    pub fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            0x1 => "HEADER_TABLE_SIZE",
            0x2 => "ENABLE_PUSH",
            0x3 => "MAX_CONCURRENT_STREAMS",
            0x4 => "INITIAL_WINDOW_SIZE",
            0x5 => "MAX_FRAME_SIZE",
            0x6 => "MAX_HEADER_LIST_SIZE",
            0x8 => "ENABLE_CONNECT_PROTOCOL",
            0x9 => "NO_RFC7540_PRIORITIES",
            _ => return None,
        })
    }
}

/// The name where one exists, otherwise the identifier in hex.
impl fmt::Display for SettingId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "{:#x}", self.0),
        }
    }
}

/// A SETTINGS frame; `iter()` yields the parameters in wire order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings<'a> {
    /// Its flags (ACK).
    pub flags: Flags,
    /// A whole number of 6-octet parameters (checked by `load`).
    pub(super) params: &'a [u8],
}

impl<'a> Settings<'a> {
    pub(crate) fn load(head: Head, payload: &'a [u8]) -> Result<Self, FrameError> {
        // "If an endpoint receives a SETTINGS frame whose Stream Identifier field is anything
        // other than 0x00, the endpoint MUST respond with a connection error (Section 5.4.1)
        // of type PROTOCOL_ERROR."
        require_connection(&head)?;
        // "Receipt of a SETTINGS frame with the ACK flag set and a length field value other
        // than 0 MUST be treated as a connection error (Section 5.4.1) of type
        // FRAME_SIZE_ERROR."
        // "A SETTINGS frame with a length other than a multiple of 6 octets MUST be treated as
        // a connection error (Section 5.4.1) of type FRAME_SIZE_ERROR."
        if (head.flags.is_ack() && !payload.is_empty()) || !payload.len().is_multiple_of(6) {
            return Err(FrameError::BadFrameSize {
                kind: head.kind,
                length: payload.len(),
            });
        }
        let settings = Settings {
            flags: head.flags,
            params: payload,
        };
        for (id, value) in settings.iter() {
            let valid = match id {
                // "Any value other than 0 or 1 MUST be treated as a connection error
                // (Section 5.4.1) of type PROTOCOL_ERROR."
                SettingId::ENABLE_PUSH => value <= 1,
                // "Values above the maximum flow-control window size of 2^31-1 MUST be treated
                // as a connection error (Section 5.4.1) of type FLOW_CONTROL_ERROR."
                SettingId::INITIAL_WINDOW_SIZE => value <= 0x7fff_ffff,
                // "The initial value is 2^14 (16,384) octets. The value advertised by an
                // endpoint MUST be between this initial value and the maximum allowed frame
                // size (2^24-1 or 16,777,215 octets), inclusive. Values outside this range
                // MUST be treated as a connection error (Section 5.4.1) of type
                // PROTOCOL_ERROR."
                SettingId::MAX_FRAME_SIZE => (16_384..=16_777_215).contains(&value),
                _ => true,
            };
            if !valid {
                return Err(FrameError::InvalidSettingValue { id, value });
            }
        }
        Ok(settings)
    }

    /// An acknowledgement (it carries no parameter).
    pub fn is_ack(&self) -> bool {
        self.flags.is_ack()
    }

    /// Number of parameters.
    pub fn len(&self) -> usize {
        self.params.len() / 6
    }

    /// Whether it carries no parameter.
    pub fn is_empty(&self) -> bool {
        self.params.is_empty()
    }

    /// The parameters as `(SettingId, value)`, in wire order.
    pub fn iter(&self) -> SettingsIter<'a> {
        SettingsIter {
            chunks: self.params.chunks_exact(6),
        }
    }

    /// The last value of `id` in this frame ("processed in the order in which they appear").
    pub fn get(&self, id: SettingId) -> Option<u32> {
        self.iter().filter(|(i, _)| *i == id).map(|(_, v)| v).last()
    }
}

/// Iterator over `(SettingId, value)` pairs.
#[derive(Debug, Clone)]
pub struct SettingsIter<'a> {
    chunks: core::slice::ChunksExact<'a, u8>,
}

impl Iterator for SettingsIter<'_> {
    type Item = (SettingId, u32);

    fn next(&mut self) -> Option<Self::Item> {
        let c = self.chunks.next()?;
        match *c {
            [a, b, v0, v1, v2, v3] => Some((
                SettingId(u16::from_be_bytes([a, b])),
                u32::from_be_bytes([v0, v1, v2, v3]),
            )),
            _ => None,
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.chunks.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use crate::frame::{frame_bytes, load_one, Frame, FrameError, Kind, SettingId};

    #[test]
    fn load() {
        let bytes = frame_bytes!(Kind::Settings, flags 0, stream 0;
            [0, 1, 0, 0, 0x10, 0], [0, 4, 0, 1, 0, 0], [0xab, 0xcd, 0, 0, 0, 7]);
        let Frame::Settings(s) = load_one(&bytes).unwrap() else {
            panic!()
        };
        assert!(!s.is_ack());
        assert_eq!(s.len(), 3);
        let all: Vec<_> = s.iter().collect();
        assert_eq!(
            all,
            [
                (SettingId::HEADER_TABLE_SIZE, 4096),
                (SettingId::INITIAL_WINDOW_SIZE, 65536),
                (SettingId(0xabcd), 7)
            ]
        );
        assert_eq!(s.get(SettingId::INITIAL_WINDOW_SIZE), Some(65536));
        assert_eq!(SettingId(0xabcd).to_string(), "0xabcd");
        assert_eq!(SettingId::MAX_FRAME_SIZE.to_string(), "MAX_FRAME_SIZE");
    }

    #[test]
    fn ack() {
        let bytes = frame_bytes!(Kind::Settings, flags 1, stream 0; []);
        let Frame::Settings(s) = load_one(&bytes).unwrap() else {
            panic!()
        };
        assert!(s.is_ack() && s.is_empty());
        let bytes = frame_bytes!(Kind::Settings, flags 1, stream 0; [0, 1, 0, 0, 0, 0]);
        assert_eq!(
            load_one(&bytes),
            Err(FrameError::BadFrameSize {
                kind: Kind::Settings,
                length: 6
            })
        );
    }

    #[test]
    fn errors() {
        let bytes = frame_bytes!(Kind::Settings, flags 0, stream 0; [0, 1, 0, 0, 0]);
        assert!(matches!(
            load_one(&bytes),
            Err(FrameError::BadFrameSize { .. })
        ));
        let bytes = frame_bytes!(Kind::Settings, flags 0, stream 1; []);
        assert!(matches!(
            load_one(&bytes),
            Err(FrameError::InvalidStreamId { .. })
        ));
        let bytes = frame_bytes!(Kind::Settings, flags 0, stream 0; [0, 2, 0, 0, 0, 2]);
        assert_eq!(
            load_one(&bytes),
            Err(FrameError::InvalidSettingValue {
                id: SettingId::ENABLE_PUSH,
                value: 2
            })
        );
        let bytes = frame_bytes!(Kind::Settings, flags 0, stream 0; [0, 4, 0x80, 0, 0, 0]);
        assert!(matches!(
            load_one(&bytes),
            Err(FrameError::InvalidSettingValue { .. })
        ));
        let bytes = frame_bytes!(Kind::Settings, flags 0, stream 0; [0, 5, 0, 0, 0x3f, 0xff]);
        assert!(matches!(
            load_one(&bytes),
            Err(FrameError::InvalidSettingValue { .. })
        ));
        let bytes = frame_bytes!(Kind::Settings, flags 0, stream 0; [0, 5, 1, 0, 0, 0]);
        assert!(matches!(
            load_one(&bytes),
            Err(FrameError::InvalidSettingValue { .. })
        ));
    }
}
