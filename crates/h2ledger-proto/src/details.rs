//! The built-in schemas as a run uses them: [`builtin`] (what a run without `--proto` decodes
//! with) and `grpc-status-details-bin` decoded as `google.rpc.Status`
//! ([`Schemas::decode_status_details`]). The files themselves are `crate::builtin`'s.

use std::sync::OnceLock;

use crate::message::{Anomaly, Limits, Message};
use crate::schema::Schemas;
use crate::Envelope;

/// The built-in schemas alone (what a run without `--proto` decodes with), compiled once.
pub fn builtin() -> &'static Schemas {
    static S: OnceLock<Schemas> = OnceLock::new();
    S.get_or_init(Schemas::default)
}

/// The type of a `grpc-status-details-bin` value.
pub const STATUS_TYPE: &str = "google.rpc.Status";

/// Decodes base64 (standard alphabet, `=` padding optional): gRPC's rule for `-bin` header
/// values ("Implementations MUST accept padded and un-padded values", PROTOCOL-HTTP2.md).
/// `Err(offset)` at the first byte that is not base64.
pub fn base64_decode(text: &[u8]) -> Result<Vec<u8>, usize> {
    let end = text.iter().rposition(|&b| b != b'=').map_or(0, |i| i + 1);
    if text.len() - end > 2 {
        return Err(end);
    }
    let mut out = Vec::with_capacity(end / 4 * 3 + 2);
    let (mut acc, mut bits) = (0u32, 0u32);
    for (i, &b) in text[..end].iter().enumerate() {
        let v = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return Err(i),
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // One lone character after whole groups carries no byte.
    if end % 4 == 1 {
        return Err(end - 1);
    }
    Ok(out)
}

impl Schemas {
    /// A `grpc-status-details-bin` value (base64, as sent) decoded as `google.rpc.Status`,
    /// its `details` `Any`s as the schemas know them (the standard error details are built
    /// in). Not base64: anomaly `message-parse`, and nothing decoded.
    pub fn decode_status_details(&self, value: &[u8], limits: &Limits) -> Message {
        match base64_decode(value) {
            Ok(bytes) => {
                self.decode_as(Some(STATUS_TYPE), &Envelope::whole(0, &bytes), None, limits)
            }
            Err(at) => Message {
                type_name: None,
                bytes: 0,
                compressed: false,
                message: None,
                raw: None,
                unknown_fields: 0,
                anomaly: Some(Anomaly::NotParsed(
                    format!("grpc-status-details-bin is not base64 (byte {at})").into(),
                )),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_compiles_and_names_its_services() {
        let s = builtin();
        for path in [
            "/grpc.health.v1.Health/Check",
            "/grpc.health.v1.Health/Watch",
            "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
            "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
        ] {
            assert!(s.method(path).is_some(), "{path}");
        }
        for t in [
            "google.rpc.Status",
            "google.rpc.ErrorInfo",
            "google.rpc.RetryInfo",
            "google.rpc.DebugInfo",
            "google.rpc.QuotaFailure",
            "google.rpc.PreconditionFailure",
            "google.rpc.BadRequest",
            "google.rpc.RequestInfo",
            "google.rpc.ResourceInfo",
            "google.rpc.Help",
            "google.rpc.LocalizedMessage",
        ] {
            assert!(s.pool().get_message_by_name(t).is_some(), "{t}");
        }
    }

    #[test]
    fn base64_padded_unpadded_and_bad() {
        assert_eq!(base64_decode(b"").unwrap(), b"");
        assert_eq!(base64_decode(b"CAU=").unwrap(), [8, 5]);
        assert_eq!(base64_decode(b"CAU").unwrap(), [8, 5]);
        assert_eq!(base64_decode(b"aGVsbG8").unwrap(), b"hello");
        assert_eq!(base64_decode(b"aGVsbG8=").unwrap(), b"hello");
        assert_eq!(base64_decode(b"aGVs").unwrap(), b"hel");
        assert_eq!(base64_decode(b"aG!s"), Err(2));
        assert_eq!(base64_decode(b"aGVsb"), Err(4));
        assert_eq!(base64_decode(b"a==="), Err(1));
    }

    #[test]
    fn status_with_error_info_and_retry_info() {
        // google.rpc.Status{code: 5, message: "nope", details: [ErrorInfo{reason: "R"},
        // RetryInfo{retry_delay: 1.5s}]}, written field by field.
        let any = |url: &str, body: &[u8]| {
            let mut a = vec![0x0a, url.len() as u8];
            a.extend_from_slice(url.as_bytes());
            a.push(0x12);
            a.push(body.len() as u8);
            a.extend_from_slice(body);
            a
        };
        let info = any("type.googleapis.com/google.rpc.ErrorInfo", &[0x0a, 1, b'R']);
        let retry = any(
            "type.googleapis.com/google.rpc.RetryInfo",
            &[0x0a, 8, 0x08, 1, 0x10, 0x80, 0xca, 0xb5, 0xee, 0x01],
        );
        let mut st = vec![0x08, 5, 0x12, 4];
        st.extend_from_slice(b"nope");
        for d in [&info, &retry] {
            st.push(0x1a);
            st.push(d.len() as u8);
            st.extend_from_slice(d);
        }
        let mut b64 = String::new();
        crate::json::base64(&mut b64, &st);
        let b64 = b64.trim_matches('"').trim_end_matches('=');
        let m = builtin().decode_status_details(b64.as_bytes(), &Limits::default());
        assert_eq!(m.anomaly, None, "{m:?}");
        assert_eq!(m.type_name.as_deref(), Some("google.rpc.Status"));
        assert_eq!(
            m.message.as_deref(),
            Some(concat!(
                r#"{"code":5,"message":"nope","details":["#,
                r#"{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"R"},"#,
                r#"{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"1.500s"}]}"#
            ))
        );
        let bad = builtin().decode_status_details(b"CA*", &Limits::default());
        assert_eq!(
            bad.anomaly.as_ref().map(Anomaly::kind),
            Some("message-parse")
        );
    }
}
