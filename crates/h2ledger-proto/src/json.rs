//! JSON text, written by hand into a `String`.
//!
//! Strings are escaped as Go's protojson escapes them (`internal/encoding/json/encode.go`,
//! `appendString`): `"` and `\`, the short forms `\b \f \n \r \t`, other characters below U+0020
//! as `\u00xx` (lowercase hex); everything else, non-ASCII included, is written as it is.
//! Floating-point numbers follow the same file's `appendFloat`.

use std::fmt::Write as _;

/// Writes `s` as a JSON string, quotes included.
pub(crate) fn string(out: &mut String, s: &str) {
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &str = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            0x0c => "\\f",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if esc.is_empty() {
            let _ = write!(out, "\\u{:04x}", b);
        } else {
            out.push_str(esc);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Writes `b` as a JSON string in standard base64 with padding (RFC 4648 section 4), as protojson
/// (`base64.StdEncoding`) and `MessageToDict` (`base64.b64encode`) write `bytes` fields.
pub(crate) fn base64(out: &mut String, b: &[u8]) {
    out.reserve(b.len().div_ceil(3) * 4 + 2);
    out.push('"');
    let mut chunks = b.chunks_exact(3);
    for c in &mut chunks {
        let n = (u32::from(c[0]) << 16) | (u32::from(c[1]) << 8) | u32::from(c[2]);
        for shift in [18, 12, 6, 0] {
            out.push(char::from(B64[((n >> shift) & 63) as usize]));
        }
    }
    match *chunks.remainder() {
        [a] => {
            let n = u32::from(a) << 16;
            out.push(char::from(B64[((n >> 18) & 63) as usize]));
            out.push(char::from(B64[((n >> 12) & 63) as usize]));
            out.push_str("==");
        }
        [a, b] => {
            let n = (u32::from(a) << 16) | (u32::from(b) << 8);
            out.push(char::from(B64[((n >> 18) & 63) as usize]));
            out.push(char::from(B64[((n >> 12) & 63) as usize]));
            out.push(char::from(B64[((n >> 6) & 63) as usize]));
            out.push('=');
        }
        _ => {}
    }
    out.push('"');
}

/// Writes a `double` as protojson does: `"NaN"`, `"Infinity"`, `"-Infinity"` as strings; other
/// values in the shortest form that reads back as the same `f64`, in fixed notation unless the
/// magnitude is below 1e-6 or at least 1e21, where Go's `strconv` exponent form is used
/// (`1e+21`, `1e-7`).
pub(crate) fn double(out: &mut String, v: f64) {
    if let Some(s) = non_finite(v.is_nan(), v.is_infinite(), v < 0.0) {
        out.push_str(s);
        return;
    }
    let a = v.abs();
    if a != 0.0 && !(1e-6..1e21).contains(&a) {
        exp_form(out, format_args!("{v:e}"));
    } else {
        let _ = write!(out, "{v}");
    }
}

/// Writes a `float` as protojson does: like [`double`], but the shortest form that reads back
/// as the same `f32` (0.1, not 0.10000000149011612), and the thresholds compared as `f32`.
pub(crate) fn float(out: &mut String, v: f32) {
    if let Some(s) = non_finite(v.is_nan(), v.is_infinite(), v < 0.0) {
        out.push_str(s);
        return;
    }
    let a = v.abs();
    if a != 0.0 && !(1e-6..1e21).contains(&a) {
        exp_form(out, format_args!("{v:e}"));
    } else {
        let _ = write!(out, "{v}");
    }
}

fn non_finite(nan: bool, inf: bool, neg: bool) -> Option<&'static str> {
    if nan {
        Some("\"NaN\"")
    } else if inf {
        Some(if neg { "\"-Infinity\"" } else { "\"Infinity\"" })
    } else {
        None
    }
}

/// Rust's `{:e}` gives the shortest digits (`1e21`, `1.5e-7`); Go writes a positive exponent
/// with its sign (`1e+21`). Negative exponents are alike once Go's `e-07` is cut to `e-7`.
fn exp_form(out: &mut String, args: std::fmt::Arguments<'_>) {
    let start = out.len();
    let _ = out.write_fmt(args);
    if let Some(e) = out[start..].find('e') {
        let at = start + e + 1;
        if out.as_bytes().get(at) != Some(&b'-') {
            out.insert(at, '+');
        }
    }
}

/// Writes an integer as a JSON number (itoa: the same digits as `Display`, without the
/// formatter).
pub(crate) fn int(out: &mut String, v: impl itoa::Integer) {
    out.push_str(itoa::Buffer::new().format(v));
}

/// Writes a 64-bit integer as a JSON string, as protojson does for int64, uint64 and their kin.
pub(crate) fn quoted(out: &mut String, v: impl itoa::Integer) {
    out.push('"');
    out.push_str(itoa::Buffer::new().format(v));
    out.push('"');
}

/// Writes `v` (below 10^width) with leading zeros to `width` digits.
pub(crate) fn padded(out: &mut String, v: u32, width: usize) {
    let mut b = itoa::Buffer::new();
    let digits = b.format(v);
    for _ in digits.len()..width {
        out.push('0');
    }
    out.push_str(digits);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(v: f64) -> String {
        let mut s = String::new();
        double(&mut s, v);
        s
    }
    fn f(v: f32) -> String {
        let mut s = String::new();
        float(&mut s, v);
        s
    }

    #[test]
    fn floats_as_protojson() {
        // Expected strings are what Go 1.19's strconv + protojson's appendFloat print.
        assert_eq!(f(0.1), "0.1");
        assert_eq!(f(1.0), "1");
        assert_eq!(f(-0.0), "-0");
        assert_eq!(f(3.4028235e38), "3.4028235e+38");
        assert_eq!(f(1e-7), "1e-7");
        assert_eq!(f(1.5e-7), "1.5e-7");
        assert_eq!(f(1e-6), "0.000001");
        assert_eq!(f(1e20), "100000000000000000000");
        assert_eq!(f(1e21), "1e+21");
        assert_eq!(f(f32::NAN), "\"NaN\"");
        assert_eq!(f(f32::NEG_INFINITY), "\"-Infinity\"");
        assert_eq!(d(0.1), "0.1");
        assert_eq!(d(1e21), "1e+21");
        assert_eq!(d(123456789.125), "123456789.125");
        assert_eq!(d(5e-324), "5e-324");
        assert_eq!(d(1.7976931348623157e308), "1.7976931348623157e+308");
        assert_eq!(d(f64::INFINITY), "\"Infinity\"");
        assert_eq!(d(-1e-10), "-1e-10");
    }

    #[test]
    fn strings_as_protojson() {
        let mut s = String::new();
        string(&mut s, "a\"b\\c\n\u{1}\u{7f}é\u{2028}");
        assert_eq!(s, "\"a\\\"b\\\\c\\n\\u0001\u{7f}é\u{2028}\"");
    }

    #[test]
    fn base64_padding() {
        for (i, o) in [
            ("", "\"\""),
            ("f", "\"Zg==\""),
            ("fo", "\"Zm8=\""),
            ("foo", "\"Zm9v\""),
            ("foob", "\"Zm9vYg==\""),
        ] {
            let mut s = String::new();
            base64(&mut s, i.as_bytes());
            assert_eq!(s, o);
        }
    }
}
