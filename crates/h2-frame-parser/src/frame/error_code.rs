//! Error codes (RFC 9113 §7), used by RST_STREAM and GOAWAY.

use core::fmt;

/// An error code. Unknown codes are kept: "Unknown or unsupported error codes MUST NOT trigger
/// any special behavior."
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ErrorCode(pub u32);

impl ErrorCode {
    /// 0x0: graceful shutdown, no error.
    pub const NO_ERROR: ErrorCode = ErrorCode(0x0);
    /// 0x1: an unspecific protocol error.
    pub const PROTOCOL_ERROR: ErrorCode = ErrorCode(0x1);
    /// 0x2: an unexpected internal error.
    pub const INTERNAL_ERROR: ErrorCode = ErrorCode(0x2);
    /// 0x3: the peer violated the flow-control protocol.
    pub const FLOW_CONTROL_ERROR: ErrorCode = ErrorCode(0x3);
    /// 0x4: SETTINGS were not acknowledged in time.
    pub const SETTINGS_TIMEOUT: ErrorCode = ErrorCode(0x4);
    /// 0x5: a frame arrived after the stream was half-closed.
    pub const STREAM_CLOSED: ErrorCode = ErrorCode(0x5);
    /// 0x6: a frame had an invalid size.
    pub const FRAME_SIZE_ERROR: ErrorCode = ErrorCode(0x6);
    /// 0x7: the stream was refused before any application processing.
    pub const REFUSED_STREAM: ErrorCode = ErrorCode(0x7);
    /// 0x8: the stream is no longer needed.
    pub const CANCEL: ErrorCode = ErrorCode(0x8);
    /// 0x9: the field compression context cannot be maintained.
    pub const COMPRESSION_ERROR: ErrorCode = ErrorCode(0x9);
    /// 0xa: the connection of a CONNECT request was reset or closed.
    pub const CONNECT_ERROR: ErrorCode = ErrorCode(0xa);
    /// 0xb: the peer is generating excessive load (grpc-go: too many PINGs).
    pub const ENHANCE_YOUR_CALM: ErrorCode = ErrorCode(0xb);
    /// 0xc: the transport does not meet minimum security requirements.
    pub const INADEQUATE_SECURITY: ErrorCode = ErrorCode(0xc);
    /// 0xd: the request must be retried over HTTP/1.1.
    pub const HTTP_1_1_REQUIRED: ErrorCode = ErrorCode(0xd);

    /// The RFC 9113 §7 name (`"CANCEL"`), `None` for a code RFC 9113 does not define.
    pub fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            0x0 => "NO_ERROR",
            0x1 => "PROTOCOL_ERROR",
            0x2 => "INTERNAL_ERROR",
            0x3 => "FLOW_CONTROL_ERROR",
            0x4 => "SETTINGS_TIMEOUT",
            0x5 => "STREAM_CLOSED",
            0x6 => "FRAME_SIZE_ERROR",
            0x7 => "REFUSED_STREAM",
            0x8 => "CANCEL",
            0x9 => "COMPRESSION_ERROR",
            0xa => "CONNECT_ERROR",
            0xb => "ENHANCE_YOUR_CALM",
            0xc => "INADEQUATE_SECURITY",
            0xd => "HTTP_1_1_REQUIRED",
            _ => return None,
        })
    }
}

/// The name where one exists, otherwise the code in hex (`0x1f`).
impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "{:#x}", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ErrorCode;

    #[test]
    fn display() {
        assert_eq!(ErrorCode::CANCEL.to_string(), "CANCEL");
        assert_eq!(ErrorCode(0xd).to_string(), "HTTP_1_1_REQUIRED");
        assert_eq!(ErrorCode(0x1f).to_string(), "0x1f");
        assert_eq!(ErrorCode(0x1f).name(), None);
    }
}
