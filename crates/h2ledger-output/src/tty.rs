//! Text for a terminal. A capture is hostile input: a header value, a `:path` or GOAWAY debug
//! data may hold ESC, BEL or a C1 control, which a terminal obeys (clear the screen, retitle the
//! window, move the cursor). The tables and warnings write every control character but the
//! newline as `\xNN`, byte by byte, as `escape_bytes` writes bytes that are not UTF-8 (a C1
//! control, two bytes in UTF-8, is `\xc2\xNN`). JSON needs none of this: its strings escape
//! control characters themselves, and keep the value exact.

use std::borrow::Cow;
use std::io::{self, Write};

/// The length of the control character a terminal would act on that starts at `b[i]` (C0
/// but the newline, DEL, or a C1 control: `C2 80`..`C2 9F` in UTF-8), 0 when none does.
fn control_at(b: &[u8], i: usize) -> usize {
    match b[i] {
        b'\n' => 0,
        0..=0x1f | 0x7f => 1,
        0xc2 if b.get(i + 1).is_some_and(|n| (0x80..=0x9f).contains(n)) => 2,
        _ => 0,
    }
}

fn push_escaped(out: &mut Vec<u8>, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for &x in bytes {
        out.extend_from_slice(&[
            b'\\',
            b'x',
            HEX[usize::from(x >> 4)],
            HEX[usize::from(x & 15)],
        ]);
    }
}

/// `bytes` with their control characters written `\xNN`, appended to `out`.
fn escape_into(out: &mut Vec<u8>, bytes: &[u8]) {
    let mut i = 0;
    while i < bytes.len() {
        match control_at(bytes, i) {
            0 => {
                out.push(bytes[i]);
                i += 1;
            }
            n => {
                push_escaped(out, &bytes[i..i + n]);
                i += n;
            }
        }
    }
}

/// `s` with its control characters written `\xNN` (unchanged, and not copied, when it has none).
pub fn escape(s: &str) -> Cow<'_, str> {
    let b = s.as_bytes();
    if !(0..b.len()).any(|i| control_at(b, i) > 0) {
        return Cow::Borrowed(s);
    }
    let mut out = Vec::with_capacity(b.len() + 16);
    escape_into(&mut out, b);
    // Only whole characters were replaced by ASCII: still UTF-8.
    Cow::Owned(String::from_utf8(out).expect("escaping keeps UTF-8"))
}

/// A writer that escapes control characters on their way to `W` (the tables' output). Text is
/// written in whole characters (`write!` of strings); a `C2` at the end of one write waits for
/// the next, so a C1 control split between two writes is still found.
pub struct Safe<W: Write> {
    inner: W,
    carry: Option<u8>,
}

impl<W: Write> Safe<W> {
    /// A writer that escapes on its way to `inner`.
    pub fn new(inner: W) -> Self {
        Safe { inner, carry: None }
    }
}

impl<W: Write> Write for Safe<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut bytes = Vec::with_capacity(buf.len() + 1);
        bytes.extend(self.carry.take());
        bytes.extend_from_slice(buf);
        if bytes.last() == Some(&0xc2) {
            self.carry = bytes.pop();
        }
        let mut out = Vec::with_capacity(bytes.len());
        escape_into(&mut out, &bytes);
        self.inner.write_all(&out)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if let Some(c) = self.carry.take() {
            self.inner.write_all(&[c])?;
        }
        self.inner.flush()
    }
}

impl<W: Write> Drop for Safe<W> {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_escaped_and_the_rest_kept() {
        assert!(matches!(escape("plain é │ text\nnext"), Cow::Borrowed(_)));
        assert_eq!(
            escape("a\u{1b}[2Jb\u{7}c\u{7f}d\u{9b}e\tf\r"),
            "a\\x1b[2Jb\\x07c\\x7fd\\xc2\\x9be\\x09f\\x0d"
        );
        // U+00A0 (C2 A0) is not a control.
        assert_eq!(escape("x\u{a0}y"), "x\u{a0}y");
        for c in (0u32..0x250).filter_map(char::from_u32) {
            let s = c.to_string();
            let e = escape(&s);
            let dangerous = c != '\n' && c.is_control();
            assert_eq!(e != s, dangerous, "{c:?} -> {e:?}");
            assert!(!e.chars().any(|x| x != '\n' && x.is_control()), "{c:?}");
        }
    }

    #[test]
    fn the_writer_escapes_across_writes() {
        let mut out = Vec::new();
        {
            let mut w = Safe::new(&mut out);
            w.write_all(b"one \xc2").unwrap();
            w.write_all(b"\x9b two \x1b[0m\n").unwrap();
            w.write_all(b"caf\xc3\xa9 \xc2").unwrap();
            w.write_all(b"\xa0!").unwrap();
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "one \\xc2\\x9b two \\x1b[0m\ncaf\u{e9} \u{a0}!"
        );
    }
}
