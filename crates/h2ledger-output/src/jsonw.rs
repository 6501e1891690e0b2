//! A JSON object writer for the records printed a million times (`calls --format jsonl`):
//! keys are written as they are (they are ours and need no escaping), numbers by itoa and
//! zmij, the same crates serde_json uses, so the bytes equal `serde_json::to_writer`'s (a test
//! compares them on every call of the golden captures).

/// A key as the writer takes it: `k!("conn")` is `"conn":`, quoted at compile time, so a key
/// costs one copy.
macro_rules! k {
    ($name:literal) => {
        concat!("\"", $name, "\":")
    };
}
pub(crate) use k;

/// One JSON object being written into `buf`; `end` closes it. Keys come from `k!`.
pub struct Obj<'a> {
    buf: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> Obj<'a> {
    /// Starts an object at the end of `buf`.
    pub fn new(buf: &'a mut Vec<u8>) -> Obj<'a> {
        buf.push(b'{');
        Obj { buf, first: true }
    }

    #[inline(always)]
    fn key(&mut self, k: &str) -> &mut Vec<u8> {
        if !self.first {
            self.buf.push(b',');
        }
        self.first = false;
        self.buf.extend_from_slice(k.as_bytes());
        self.buf
    }

    #[inline(always)]
    /// An unsigned integer.
    pub fn u64(&mut self, k: &str, v: u64) {
        let b = self.key(k);
        if v < 10 {
            // Most counts of a record are one digit.
            b.push(b'0' + v as u8);
        } else {
            b.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
        }
    }

    #[inline(always)]
    /// A float, as serde_json writes it (`null` when not finite).
    pub fn f64(&mut self, k: &str, v: f64) {
        let b = self.key(k);
        float(b, v);
    }

    #[inline(always)]
    /// A boolean.
    pub fn bool(&mut self, k: &str, v: bool) {
        let b = self.key(k);
        b.extend_from_slice(if v { b"true" } else { b"false" });
    }

    #[inline(always)]
    /// A string, escaped as JSON needs.
    pub fn str(&mut self, k: &str, v: &str) {
        let b = self.key(k);
        string(b, v);
    }

    /// A string known to need no escape: one of our names, or an address.
    #[inline(always)]
    pub fn plain(&mut self, k: &str, v: &str) {
        debug_assert!(!needs_escape(v.as_bytes(), false), "{v:?}");
        let b = self.key(k);
        b.push(b'"');
        b.extend_from_slice(v.as_bytes());
        b.push(b'"');
    }

    /// A string made of `text` (nothing to escape in it) and the number `n`: `"grpc-status 0"`.
    #[inline(always)]
    pub fn str_num(&mut self, k: &str, text: &'static str, n: u16) {
        debug_assert!(!needs_escape(text.as_bytes(), false), "{text:?}");
        let b = self.key(k);
        b.push(b'"');
        b.extend_from_slice(text.as_bytes());
        b.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
        b.push(b'"');
    }

    #[inline(always)]
    /// `null`.
    pub fn null(&mut self, k: &str) {
        self.key(k).extend_from_slice(b"null");
    }

    #[inline(always)]
    /// An integer or `null`.
    pub fn opt_u64(&mut self, k: &str, v: Option<u64>) {
        match v {
            Some(v) => self.u64(k, v),
            None => self.null(k),
        }
    }

    #[inline(always)]
    /// A float or `null`.
    pub fn opt_f64(&mut self, k: &str, v: Option<f64>) {
        match v {
            Some(v) => self.f64(k, v),
            None => self.null(k),
        }
    }

    #[inline(always)]
    /// A string or `null`.
    pub fn opt_str(&mut self, k: &str, v: Option<&str>) {
        match v {
            Some(v) => self.str(k, v),
            None => self.null(k),
        }
    }

    /// An array of strings that need no escape (names of ours).
    #[inline(always)]
    pub fn plain_strs(&mut self, k: &str, v: &[&'static str]) {
        let b = self.key(k);
        b.push(b'[');
        for (i, s) in v.iter().enumerate() {
            debug_assert!(!needs_escape(s.as_bytes(), false), "{s:?}");
            if i > 0 {
                b.push(b',');
            }
            b.push(b'"');
            b.extend_from_slice(s.as_bytes());
            b.push(b'"');
        }
        b.push(b']');
    }

    /// A value under `k` that `f` writes as JSON.
    #[inline(always)]
    pub fn raw(&mut self, k: &str, f: impl FnOnce(&mut Vec<u8>)) {
        f(self.key(k));
    }

    /// A nested object under `k`, written by `f`.
    #[inline(always)]
    pub fn obj(&mut self, k: &str, f: impl FnOnce(&mut Obj<'_>)) {
        let b = self.key(k);
        let mut o = Obj::new(b);
        f(&mut o);
        o.end();
    }

    /// Closes the object.
    pub fn end(self) {
        self.buf.push(b'}');
    }
}

/// serde_json's float: `null` when not finite, else zmij's shortest form, which for a whole
/// number below 10^15 is its digits and `.0` (written here without zmij: most durations in
/// microseconds are whole).
pub(crate) fn float(b: &mut Vec<u8>, v: f64) {
    // Whole below 10^15 (< 2^53, so the round trip through i64 is exact; false for NaN and
    // the infinities): `v as i64` is one instruction, where `fract` is a libm call on x86-64.
    if v.abs() < 1e15 && (v as i64) as f64 == v && !(v == 0.0 && v.is_sign_negative()) {
        b.extend_from_slice(itoa::Buffer::new().format(v as i64).as_bytes());
        b.extend_from_slice(b".0");
    } else if v.is_finite() {
        b.extend_from_slice(zmij::Buffer::new().format_finite(v).as_bytes());
    } else {
        b.extend_from_slice(b"null");
    }
}

/// Whether any byte of `v` is a control character (below 0x20), `"` or `\\`, or, with
/// `ascii`, 0x7f or above: eight bytes at a time (the classic "has a byte below n / equal to
/// b" bit tricks, exact for any n <= 128), since the strings of a frame line are most of its
/// cost.
#[inline]
pub fn needs_escape(v: &[u8], ascii: bool) -> bool {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let chunks = v.chunks_exact(8);
    let tail = chunks.remainder();
    let word = |a: [u8; 8]| {
        let x = u64::from_ne_bytes(a);
        let mut hit = x.wrapping_sub(ONES * 0x20) & !x & HIGH
            | zero(x ^ (ONES * u64::from(b'"')))
            | zero(x ^ (ONES * u64::from(b'\\')));
        if ascii {
            hit |= x & HIGH | zero(x ^ (ONES * 0x7f));
        }
        hit != 0
    };
    for c in chunks {
        let mut a = [0; 8];
        a.copy_from_slice(c);
        if word(a) {
            return true;
        }
    }
    // The tail as one more word, padded with a byte that needs nothing.
    let mut a = [b'a'; 8];
    a[..tail.len()].copy_from_slice(tail);
    word(a)
}

/// A JSON string: copied when nothing in it needs an escape, else serde_json's escaping.
pub(crate) fn string(b: &mut Vec<u8>, v: &str) {
    if !needs_escape(v.as_bytes(), false) {
        b.push(b'"');
        b.extend_from_slice(v.as_bytes());
        b.push(b'"');
    } else {
        serde_json::to_writer(b, v).expect("a string always serializes into a Vec");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The eight-at-a-time test agrees with the byte-at-a-time rule on every byte value in
    /// every position of a word and of the tail.
    #[test]
    fn needs_escape_is_exact() {
        let slow = |v: &[u8], ascii: bool| {
            v.iter()
                .any(|&c| c < 0x20 || c == b'"' || c == b'\\' || (ascii && c >= 0x7f))
        };
        for len in [1, 7, 8, 9, 16, 17] {
            for at in 0..len {
                for byte in 0..=255u8 {
                    let mut v = vec![b'a'; len];
                    v[at] = byte;
                    for ascii in [false, true] {
                        assert_eq!(needs_escape(&v, ascii), slow(&v, ascii), "{v:?} {ascii}");
                    }
                }
            }
        }
        assert!(!needs_escape(b"", true));
        assert!(!needs_escape(b"/grpc.health.v1.Health/Check", true));
    }

    #[test]
    fn strings_and_floats_equal_serde_json() {
        for v in [
            "",
            "plain /grpc.health.v1.Health/Check",
            "quote \" and backslash \\",
            "controls \u{0} \u{1f} \n \t \r",
            "DEL \u{7f}, non-ASCII é 漢 \u{2028} \u{fffd}",
        ] {
            let mut b = Vec::new();
            string(&mut b, v);
            assert_eq!(b, serde_json::to_vec(v).unwrap(), "{v:?}");
        }
        for v in [
            0.0,
            -0.0,
            0.1,
            464.0,
            -464.0,
            999_999_999_999_999.0,
            1e15,
            1e16,
            123_456_789_012.0,
            1796119299.326338,
            1e300,
            5e-324,
            f64::MAX,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            let mut b = Vec::new();
            float(&mut b, v);
            assert_eq!(b, serde_json::to_vec(&v).unwrap(), "{v}");
        }
    }

    #[test]
    fn an_object_is_compact_json() {
        let mut b = Vec::new();
        let mut o = Obj::new(&mut b);
        o.u64(k!("a"), u64::MAX);
        o.opt_f64(k!("b"), None);
        o.obj(k!("c"), |o| {
            o.bool(k!("d"), true);
            o.str_num(k!("e"), "grpc-status ", 14);
        });
        o.opt_str(k!("f"), Some("x\"y"));
        o.end();
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"a": u64::MAX, "b": null, "c": {"d": true, "e": "grpc-status 14"}, "f": "x\"y"})
        );
        let text = String::from_utf8_lossy(&b);
        assert!(!text.contains(", ") && !text.contains("\": "), "{text}");
    }
}
