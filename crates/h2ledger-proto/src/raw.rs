//! The schema-less decode: what `protoc --decode_raw` shows, as JSON.
//!
//! A message is an array of its fields in wire order, each an object with its keys in
//! alphabetical order (as every object h2ledger prints):
//!
//! ```text
//! {"field": 1, "value": "150", "wire": "varint"}            unsigned, decimal, as a string
//! {"field": 2, "value": "0x3ff0000000000000", "wire": "fixed64"}
//! {"field": 3, "value": "0x3f800000", "wire": "fixed32"}
//! {"field": 4, "message": [...], "wire": "len"}             non-empty and parses whole as a message
//! {"field": 4, "string": "abc", "wire": "len"}              else valid UTF-8 (the empty value too)
//! {"bytes": "gAE=", "field": 4, "wire": "len"}              else base64
//! {"field": 5, "message": [...], "wire": "group"}
//! {"error": "truncated value", "offset": 7, "string": "..."}  bytes from `offset` on that are no field
//! {"bytes": "...", "error": "bad varint", "offset": 7}         (base64 when they are not UTF-8)
//! ```
//!
//! The `len` rule is protoc's (`TextFormat::Printer::PrintUnknownFields`: a non-empty value
//! that parses as an `UnknownFieldSet` is printed as a message, else as a string). An error
//! element ends the top-level array: it says where (`offset`, from the start of the message)
//! the first field that does not parse begins, and keeps the bytes from there, as `string`
//! when they are UTF-8 and `bytes` otherwise. Nested `len` values are only shown as messages
//! when they parse whole, and a group only when it closes, so errors never appear nested.
//!
//! Work is linear in the input: a `len` value or top-level group is checked once (its fields,
//! and the groups inside it), then written once without checking again.

use crate::json;
use crate::wire::{self, Wire, WireError};
use std::fmt::Write as _;

/// The JSON text grew past the limit.
#[derive(Debug)]
pub(crate) struct OutputCap;

/// What a schema-less decode saw.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RawStats {
    /// The bytes are not a whole protobuf message (an error element was written).
    pub(crate) invalid: bool,
}

/// Writes the schema-less decode of `buf` into `out`.
pub(crate) fn write(
    buf: &[u8],
    max_depth: u32,
    max_out: usize,
    out: &mut String,
) -> Result<RawStats, OutputCap> {
    let mut w = Raw {
        buf,
        max_depth,
        max_out,
        stats: RawStats::default(),
    };
    let mut pos = 0;
    w.fields(&mut pos, buf.len(), 0, None, false, out)?;
    Ok(w.stats)
}

struct Raw<'a> {
    /// The whole top-level message: offsets are relative to it.
    buf: &'a [u8],
    max_depth: u32,
    max_out: usize,
    stats: RawStats,
}

/// Whether `b` is a whole message: every field well-formed, every group closed.
pub(crate) fn parses(b: &[u8], depth: u32, max_depth: u32) -> bool {
    let mut pos = 0;
    while pos < b.len() {
        let Ok((n, w)) = wire::tag(b, &mut pos) else {
            return false;
        };
        if wire::value(b, &mut pos, n, w, depth, max_depth).is_err() {
            return false;
        }
    }
    true
}

impl Raw<'_> {
    /// Writes the fields in `buf[*pos..end]` as an array; inside a group, up to its end tag
    /// (`group` = the group's field number), leaving `*pos` after that tag.
    fn fields(
        &mut self,
        pos: &mut usize,
        end: usize,
        depth: u32,
        group: Option<u32>,
        trusted: bool,
        out: &mut String,
    ) -> Result<(), OutputCap> {
        let buf = &self.buf[..end];
        out.push('[');
        let mut first = true;
        loop {
            if out.len() > self.max_out {
                return Err(OutputCap);
            }
            let here = *pos;
            if here >= buf.len() {
                if group.is_some() {
                    self.error(out, first, WireError::Group, here, end);
                }
                break;
            }
            let (n, w) = match wire::tag(buf, pos) {
                Ok(t) => t,
                Err(e) => {
                    self.error(out, first, e, here, end);
                    break;
                }
            };
            if w == Wire::EGroup {
                if group == Some(n) {
                    break;
                }
                self.error(out, first, WireError::Group, here, end);
                break;
            }
            if !first {
                out.push(',');
            }
            if w == Wire::SGroup {
                // Outside a checked value, a group is checked whole before it is written, so
                // that bytes which only start like a group (text beginning with 's') are shown
                // from this field on, not as a broken group. Inside, nothing is checked twice.
                let check = if trusted {
                    Ok(())
                } else {
                    let mut p = *pos;
                    wire::value(buf, &mut p, n, w, depth, self.max_depth).map(|_| ())
                };
                if let Err(e) = check {
                    // Undo the separator: the error element takes this place.
                    if !first {
                        out.pop();
                    }
                    self.error(out, first, e, here, end);
                    break;
                }
                let _ = write!(out, "{{\"field\":{n},\"message\":");
                self.fields(pos, end, depth + 1, Some(n), true, out)?;
                out.push_str(",\"wire\":\"group\"}");
                first = false;
                continue;
            }
            let v = match wire::value(buf, pos, n, w, depth, self.max_depth) {
                Ok(v) => v,
                Err(e) => {
                    if !first {
                        out.pop();
                    }
                    self.error(out, first, e, here, end);
                    break;
                }
            };
            // Keys in alphabetical order, as in every object h2ledger prints.
            let name = w.name();
            match v {
                wire::Value::Varint(x) => {
                    let _ = write!(
                        out,
                        "{{\"field\":{n},\"value\":\"{x}\",\"wire\":\"{name}\"}}"
                    );
                }
                wire::Value::I64(x) => {
                    let _ = write!(
                        out,
                        "{{\"field\":{n},\"value\":\"0x{x:016x}\",\"wire\":\"{name}\"}}"
                    );
                }
                wire::Value::I32(x) => {
                    let _ = write!(
                        out,
                        "{{\"field\":{n},\"value\":\"0x{x:08x}\",\"wire\":\"{name}\"}}"
                    );
                }
                wire::Value::Len(b) => {
                    self.len_value(n, b, depth, out)?;
                }
                wire::Value::Group(_) => unreachable_group(n, out),
            }
            first = false;
        }
        out.push(']');
        Ok(())
    }

    /// Field `n`'s `len` value, the whole element: a message when it parses whole, else a
    /// string or bytes.
    fn len_value(
        &mut self,
        n: u32,
        b: &[u8],
        depth: u32,
        out: &mut String,
    ) -> Result<(), OutputCap> {
        if !b.is_empty() && depth < self.max_depth && parses(b, depth + 1, self.max_depth) {
            let _ = write!(out, "{{\"field\":{n},\"message\":");
            let mut inner = Raw {
                buf: b,
                max_depth: self.max_depth,
                max_out: self.max_out,
                stats: RawStats::default(),
            };
            let mut pos = 0;
            inner.fields(&mut pos, b.len(), depth + 1, None, true, out)?;
            out.push_str(",\"wire\":\"len\"}");
            return Ok(());
        }
        match std::str::from_utf8(b) {
            Ok(t) => {
                let _ = write!(out, "{{\"field\":{n},\"string\":");
                json::string(out, t);
            }
            Err(_) => {
                out.push_str("{\"bytes\":");
                json::base64(out, b);
                let _ = write!(out, ",\"field\":{n}");
            }
        }
        out.push_str(",\"wire\":\"len\"}");
        Ok(())
    }

    /// The element that ends an array: what went wrong, where, and the bytes from there.
    fn error(&mut self, out: &mut String, first: bool, e: WireError, at: usize, end: usize) {
        self.stats.invalid = true;
        if !first {
            out.push(',');
        }
        let rest = self.buf.get(at..end).unwrap_or_default();
        match std::str::from_utf8(rest) {
            Ok(t) => {
                out.push_str("{\"error\":");
                json::string(out, e.text());
                let _ = write!(out, ",\"offset\":{at},\"string\":");
                json::string(out, t);
            }
            Err(_) => {
                out.push_str("{\"bytes\":");
                json::base64(out, rest);
                out.push_str(",\"error\":");
                json::string(out, e.text());
                let _ = write!(out, ",\"offset\":{at}");
            }
        }
        out.push('}');
    }
}

/// Groups are written by [`Raw::fields`] before their value is read; this arm cannot be
/// reached, and writes a harmless element if it ever were.
fn unreachable_group(n: u32, out: &mut String) {
    let _ = write!(out, "{{\"field\":{n},\"message\":[],\"wire\":\"group\"}}");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(b: &[u8]) -> String {
        let mut s = String::new();
        write(b, 100, usize::MAX, &mut s).unwrap();
        s
    }

    #[test]
    fn decode_raw_shapes() {
        // 1: 150, 2: "testing", 3 { 1: 150 }, 4: 0x3f800000 (fixed32), 5: 1.0 (fixed64)
        let b = [
            0x08, 0x96, 0x01, 0x12, 0x07, b't', b'e', b's', b't', b'i', b'n', b'g', 0x1a, 0x03,
            0x08, 0x96, 0x01, 0x25, 0x00, 0x00, 0x80, 0x3f, 0x29, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f,
        ];
        assert_eq!(
            raw(&b),
            concat!(
                r#"[{"field":1,"value":"150","wire":"varint"},"#,
                r#"{"field":2,"string":"testing","wire":"len"},"#,
                r#"{"field":3,"message":[{"field":1,"value":"150","wire":"varint"}],"wire":"len"},"#,
                r#"{"field":4,"value":"0x3f800000","wire":"fixed32"},"#,
                r#"{"field":5,"value":"0x3ff0000000000000","wire":"fixed64"}]"#
            )
        );
    }

    #[test]
    fn empty_and_bytes_and_errors() {
        assert_eq!(raw(&[]), "[]");
        assert_eq!(
            raw(&[0x0a, 0x00]),
            r#"[{"field":1,"string":"","wire":"len"}]"#
        );
        assert_eq!(
            raw(&[0x0a, 0x01, 0xff]),
            r#"[{"bytes":"/w==","field":1,"wire":"len"}]"#
        );
        // plain text is no message
        assert_eq!(
            raw(b"s0-0"),
            r#"[{"error":"bad varint","offset":0,"string":"s0-0"}]"#
        );
        // a length past the end, after a good field
        assert_eq!(
            raw(&[0x08, 0x01, 0x12, 0x05, 0x61]),
            r#"[{"field":1,"value":"1","wire":"varint"},{"error":"truncated value","offset":2,"string":"\u0012\u0005a"}]"#
        );
    }

    #[test]
    fn groups() {
        // 1 { 2: 5 } as a group, then 3: 1
        assert_eq!(
            raw(&[0x0b, 0x10, 0x05, 0x0c, 0x18, 0x01]),
            r#"[{"field":1,"message":[{"field":2,"value":"5","wire":"varint"}],"wire":"group"},{"field":3,"value":"1","wire":"varint"}]"#
        );
        // an open group: the error is at the group's tag, with every byte from there
        assert_eq!(
            raw(&[0x08, 0x01, 0x0b, 0x10, 0x85]),
            r#"[{"field":1,"value":"1","wire":"varint"},{"bytes":"CxCF","error":"bad varint","offset":2}]"#
        );
    }

    #[test]
    fn depth_is_bounded() {
        // 200 nested len values: shown as messages down to the limit, then as bytes
        let mut b: Vec<u8> = vec![0x08, 0x01];
        for _ in 0..200 {
            let mut o = vec![0x0a];
            let mut n = b.len();
            while n >= 0x80 {
                o.push((n as u8) | 0x80);
                n >>= 7;
            }
            o.push(n as u8);
            o.extend_from_slice(&b);
            b = o;
        }
        let s = raw(&b);
        assert_eq!(s.matches("\"message\"").count(), 100);
        let mut s = String::new();
        assert!(
            write(&[0x0b; 300], 100, usize::MAX, &mut s)
                .unwrap()
                .invalid
        );
    }
}
