//! The Go version a binary was built with, from its build information blob (section
//! `.go.buildinfo`), read as Go's `debug/buildinfo` reads it (go/src/debug/buildinfo/
//! buildinfo.go, `readRawBuildInfo`): a 32-byte header aligned to 16 bytes that starts with
//! `buildInfoMagic` = `"\xff Go buildinf:"`, then the pointer size and a flags byte. With flag
//! bit 2 set (Go >= 1.18) the version string follows the header, prefixed by its length as a
//! uvarint; otherwise the header holds the address of the `runtime.buildVersion` string
//! header (pointer, length).
//!
//! Contract: never panics; anything unexpected is `None`.
#![forbid(unsafe_code)]

use crate::elf::Elf;

const MAGIC: &[u8; 14] = b"\xff Go buildinf:";
/// `buildInfoAlign` and `buildInfoSize` in buildinfo.go.
const ALIGN: usize = 16;
const HEADER: usize = 32;
/// A version string longer than this is not one (`go1.19.8`, `devel go1.22-abcdef Tue ...`).
const MAX_VERSION: u64 = 128;

/// The version string (`go1.19.8`) of the Go binary `elf`, if it has build information.
pub(crate) fn go_version(elf: &Elf<'_>) -> Option<String> {
    // The section; without section headers, the first 64 KiB of the first writable data
    // segment as buildinfo.go's DataStart does is not tried: Go binaries keep their sections.
    let sec = elf.section(".go.buildinfo")?;
    let data = elf.section_data(&sec)?;
    let mut i = 0;
    let blob = loop {
        let rest = data.get(i..)?;
        let at = rest.windows(MAGIC.len()).position(|w| w == MAGIC)?;
        let abs = i + at;
        if abs % ALIGN == 0 && data.len() - abs >= HEADER {
            break &data[abs..];
        }
        i = abs + 1;
    };
    let ptr_size = usize::from(blob[14]);
    let flags = blob[15];
    let version = if flags & 2 != 0 {
        uvarint_string(blob.get(HEADER..)?)?
    } else {
        if flags != 0 || ptr_size != 8 {
            // Big-endian or 32-bit: not a binary this crate attaches to.
            return None;
        }
        let addr = u64::from_le_bytes(blob.get(16..24)?.try_into().ok()?);
        let hdr = elf.read_va(addr, 16)?;
        let ptr = u64::from_le_bytes(hdr[..8].try_into().ok()?);
        let len = u64::from_le_bytes(hdr[8..16].try_into().ok()?);
        if len > MAX_VERSION {
            return None;
        }
        elf.read_va(ptr, len)?
    };
    let s = std::str::from_utf8(version).ok()?;
    (!s.is_empty() && s.len() as u64 <= MAX_VERSION && s.chars().all(|c| !c.is_control()))
        .then(|| s.to_owned())
}

/// A string prefixed by its length as an unsigned LEB128 varint (Go's `binary.Uvarint`).
fn uvarint_string(b: &[u8]) -> Option<&[u8]> {
    let mut len: u64 = 0;
    for (i, &byte) in b.iter().enumerate().take(10) {
        len |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            if len > MAX_VERSION {
                return None;
            }
            let start = i + 1;
            return b.get(start..start + len as usize);
        }
    }
    None
}

/// `(major, minor)` of a Go version string: `go1.19.8` -> (1, 19); also finds the version
/// inside `devel go1.22-abcdef ...`.
pub(crate) fn parse_go_version(v: &str) -> Option<(u32, u32)> {
    let at = v.find("go1.")?;
    let rest = &v[at + 2..];
    let mut parts = rest.split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert_eq!(parse_go_version("go1.19.8"), Some((1, 19)));
        assert_eq!(parse_go_version("go1.17"), Some((1, 17)));
        assert_eq!(parse_go_version("devel go1.22-1a2b3c Tue"), Some((1, 22)));
        assert_eq!(parse_go_version("go2"), None);
        assert_eq!(parse_go_version(""), None);
    }

    #[test]
    fn varint_strings() {
        assert_eq!(uvarint_string(b"\x08go1.19.8rest"), Some(&b"go1.19.8"[..]));
        assert_eq!(uvarint_string(b"\x09go1.19.8"), None);
        assert_eq!(
            uvarint_string(b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"),
            None
        );
        assert_eq!(uvarint_string(b""), None);
    }
}
