//! Huffman decoding of HPACK string literals (RFC 7541 §5.2, Appendix B).
//!
//! The code table is httlib-huffman's `ENCODE_TABLE` (RFC 7541 Appendix B). Decoding walks
//! the canonical code bit by bit instead of calling `httlib_huffman::decode`, because that
//! function allocates on every call and accepts some padding the RFC forbids (a trailing
//! partial code of zeros); here padding is checked exactly and nothing is allocated beyond
//! the caller's reused output buffer.
//!
//! # Contract
//!
//! [`decode`] never panics, runs in time linear in the input, and appends at most
//! `8 * src.len() / 5` octets (the shortest code is 5 bits).

use httlib_huffman::encoder::table::ENCODE_TABLE;

use super::HpackError;

const MAX_LEN: usize = 30;
const EOS: u16 = 256;

/// Canonical-code tables: for each code length, the first code, how many symbols have that
/// length, and where they start in `syms` (symbols in code order).
struct Canon {
    first: [u32; MAX_LEN + 1],
    count: [u32; MAX_LEN + 1],
    offset: [u16; MAX_LEN + 1],
    syms: [u16; 257],
}

const fn build() -> Canon {
    let mut c = Canon {
        first: [0; MAX_LEN + 1],
        count: [0; MAX_LEN + 1],
        offset: [0; MAX_LEN + 1],
        syms: [0; 257],
    };
    let mut n = 0;
    let mut len = 1;
    while len <= MAX_LEN {
        c.offset[len] = n as u16;
        let mut sym = 0;
        while sym < 257 {
            let (l, code) = ENCODE_TABLE[sym];
            if l as usize == len {
                if c.count[len] == 0 {
                    c.first[len] = code;
                }
                c.syms[n] = sym as u16;
                c.count[len] += 1;
                n += 1;
            }
            sym += 1;
        }
        len += 1;
    }
    c
}

static CANON: Canon = build();

/// Appends the decoded octets of `src` to `dst`.
pub(crate) fn decode(src: &[u8], dst: &mut Vec<u8>) -> Result<(), HpackError> {
    let mut code: u32 = 0;
    let mut len: usize = 0;
    for &byte in src {
        for shift in (0..8).rev() {
            code = (code << 1) | u32::from((byte >> shift) & 1);
            len += 1;
            let (Some(&first), Some(&count), Some(&offset)) = (
                CANON.first.get(len),
                CANON.count.get(len),
                CANON.offset.get(len),
            ) else {
                return Err(HpackError::HuffmanInvalid);
            };
            let d = code.wrapping_sub(first);
            if d < count {
                let sym = CANON
                    .syms
                    .get(usize::from(offset) + d as usize)
                    .copied()
                    .ok_or(HpackError::HuffmanInvalid)?;
                // "A Huffman-encoded string literal containing the EOS symbol MUST be treated
                // as a decoding error." (RFC 7541 §5.2)
                if sym == EOS {
                    return Err(HpackError::HuffmanEos);
                }
                dst.push(sym as u8);
                code = 0;
                len = 0;
            } else if len >= MAX_LEN {
                return Err(HpackError::HuffmanInvalid);
            }
        }
    }
    // "A padding strictly longer than 7 bits MUST be treated as a decoding error. A padding
    // not corresponding to the most significant bits of the code for the EOS symbol MUST be
    // treated as a decoding error." (RFC 7541 §5.2)
    if len > 7 || code != (1u32 << len) - 1 {
        return Err(HpackError::HuffmanPadding);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(src: &[u8]) -> Result<Vec<u8>, HpackError> {
        let mut out = Vec::new();
        decode(src, &mut out).map(|()| out)
    }

    #[test]
    fn table_is_canonical() {
        // Within one length, codes are consecutive in symbol order: what `build` relies on.
        for (sym, &(len, code)) in ENCODE_TABLE.iter().enumerate() {
            let len = usize::from(len);
            let rank = CANON.syms[usize::from(CANON.offset[len])..]
                .iter()
                .position(|&s| usize::from(s) == sym)
                .unwrap();
            assert_eq!(code, CANON.first[len] + rank as u32, "symbol {sym}");
        }
        assert_eq!(CANON.count.iter().sum::<u32>(), 257);
    }

    #[test]
    fn rfc_examples() {
        // RFC 7541 C.4.1.
        let www = [
            0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff,
        ];
        assert_eq!(dec(&www).unwrap(), b"www.example.com");
        assert_eq!(dec(&[]).unwrap(), b"");
    }

    #[test]
    fn round_trip_all_octets() {
        let input: Vec<u8> = (0..=255u8).chain(b"hello, world".iter().copied()).collect();
        let mut enc = Vec::new();
        httlib_huffman::encode(&input, &mut enc).unwrap();
        assert_eq!(dec(&enc).unwrap(), input);
    }

    #[test]
    fn padding_rules() {
        // 'a' is 00011 (5 bits); padding 111 is the EOS prefix.
        assert_eq!(dec(&[0b0001_1111]).unwrap(), b"a");
        // Padding of zeros is not an EOS prefix.
        assert_eq!(dec(&[0b0001_1000]), Err(HpackError::HuffmanPadding));
        // 8 bits of ones: padding longer than 7 bits.
        assert_eq!(dec(&[0b0001_1111, 0xff]), Err(HpackError::HuffmanPadding));
        // The full EOS code (30 ones) is an error, not padding.
        assert_eq!(dec(&[0xff, 0xff, 0xff, 0xff]), Err(HpackError::HuffmanEos));
    }
}
