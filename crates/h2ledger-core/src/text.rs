//! Bytes from the wire as text.

/// Header bytes as text: valid UTF-8 is kept; every byte of an invalid sequence is written
/// `\xNN` (two lowercase hex digits) and a backslash is written `\\`, so the bytes can be
/// recovered exactly.
pub fn escape_bytes(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len());
    for chunk in b.utf8_chunks() {
        for ch in chunk.valid().chars() {
            if ch == '\\' {
                out.push_str("\\\\");
            } else {
                out.push(ch);
            }
        }
        for x in chunk.invalid() {
            out.push_str(&format!("\\x{x:02x}"));
        }
    }
    out
}
