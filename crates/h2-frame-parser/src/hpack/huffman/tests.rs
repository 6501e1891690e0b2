use std::collections::HashMap;
use std::sync::OnceLock;

use httlib_huffman::encoder::table::ENCODE_TABLE;

use super::*;

const EOS_SYM: usize = 256;

fn dec(src: &[u8]) -> Result<Vec<u8>, HpackError> {
    let mut out = Vec::new();
    decode(src, &mut out).map(|()| out)
}

fn enc(input: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    httlib_huffman::encode(input, &mut out).unwrap();
    out
}

/// Seeded SplitMix64: reproducible inputs without a `rand` dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// Random octets: uniform, or mostly header-like ASCII.
    fn string(&mut self, max_len: usize) -> Vec<u8> {
        let len = self.below(max_len + 1);
        let ascii = self.next() & 1 == 0;
        (0..len)
            .map(|_| {
                if ascii {
                    b' ' + self.below(95) as u8
                } else {
                    self.next() as u8
                }
            })
            .collect()
    }
}

/// MSB-first bit string builder.
#[derive(Default, Clone)]
struct Bits {
    bytes: Vec<u8>,
    len: usize,
}

impl Bits {
    fn push(&mut self, code: u32, len: u8) {
        for i in (0..len).rev() {
            if self.len.is_multiple_of(8) {
                self.bytes.push(0);
            }
            if (code >> i) & 1 == 1 {
                *self.bytes.last_mut().unwrap() |= 0x80 >> (self.len % 8);
            }
            self.len += 1;
        }
    }

    fn sym(&mut self, sym: usize) -> &mut Self {
        let (len, code) = ENCODE_TABLE[sym];
        self.push(code, len);
        self
    }

    fn syms(&mut self, s: &[u8]) -> &mut Self {
        for &b in s {
            self.sym(usize::from(b));
        }
        self
    }

    /// `n` bits of `bit`.
    fn fill(&mut self, bit: bool, n: usize) -> &mut Self {
        for _ in 0..n {
            self.push(u32::from(bit), 1);
        }
        self
    }

    /// Bits needed to reach the next octet boundary.
    fn gap(&self) -> usize {
        (8 - self.len % 8) % 8
    }
}

/// The previous decoder, kept as an independent oracle: walks the canonical code of
/// `ENCODE_TABLE` one bit at a time.
fn reference(src: &[u8]) -> Result<Vec<u8>, HpackError> {
    static CODES: OnceLock<HashMap<(u8, u32), usize>> = OnceLock::new();
    let codes = CODES.get_or_init(|| {
        let codes: HashMap<_, _> = ENCODE_TABLE.iter().zip(0..).map(|(&e, s)| (e, s)).collect();
        assert_eq!(codes.len(), 257);
        codes
    });
    let mut out = Vec::new();
    let (mut code, mut len) = (0u32, 0u8);
    for &byte in src {
        for shift in (0..8).rev() {
            code = (code << 1) | u32::from((byte >> shift) & 1);
            len += 1;
            if let Some(&sym) = codes.get(&(len, code)) {
                if sym == EOS_SYM {
                    return Err(HpackError::HuffmanEos);
                }
                out.push(sym as u8);
                (code, len) = (0, 0);
            } else if len >= 30 {
                return Err(HpackError::HuffmanInvalid);
            }
        }
    }
    if len > 7 || code != (1u32 << len) - 1 {
        return Err(HpackError::HuffmanPadding);
    }
    Ok(out)
}

#[test]
fn table_shape() {
    // Every reachable row index is one of httlib's rows; every entry consumes 1..=BITS bits.
    for &e in &TABLE {
        let used = e >> SHIFT_USED;
        assert!((1..=BITS).contains(&used));
        let next = (e & NEXT_MASK) as usize;
        assert!(next.is_multiple_of(WIDTH) && next / WIDTH < HTTLIB_TABLE.len());
        if e & (EMIT | EOS | INVALID) == 0 {
            assert_eq!(used, BITS);
            assert_ne!(next, 0);
        } else {
            assert_eq!(next, 0);
        }
    }
    // From the root: no error, and a symbol only if BITS reaches the shortest code (5 bits).
    for &e in &TABLE[..WIDTH] {
        assert_eq!(e & (EOS | INVALID), 0);
        assert!(BITS >= 5 || e & EMIT == 0);
    }
    // httlib's table has no holes (the HPACK code is complete).
    let invalid = TABLE[..HTTLIB_TABLE.len() * WIDTH]
        .iter()
        .filter(|&&e| e & INVALID != 0)
        .count();
    assert_eq!(invalid, 0);
}

#[test]
fn fast_table_matches_codes() {
    // Each entry's symbols are exactly the codes at the start of its lookahead, and when it
    // holds fewer than two, the next code does not end within the lookahead.
    for (idx, &f) in FAST.iter().enumerate() {
        let bits = |from: u32, len: u8| {
            (idx as u32 >> (FAST_BITS - from - u32::from(len))) & ((1 << len) - 1)
        };
        let count = (f & FAST_COUNT) >> FAST_SHIFT_COUNT;
        let mut at = 0;
        for i in 0..count {
            let sym = usize::from((f >> (8 * i)) as u8);
            let (len, code) = ENCODE_TABLE[sym];
            assert!(at + u32::from(len) <= FAST_BITS);
            assert_eq!(bits(at, len), code, "entry {idx:#x} symbol {i}");
            at += u32::from(len);
        }
        assert_eq!(f >> FAST_SHIFT_USED, at, "entry {idx:#x}");
        if count < 2 {
            for &(len, code) in &ENCODE_TABLE {
                assert!(
                    at + u32::from(len) > FAST_BITS || bits(at, len) != code,
                    "entry {idx:#x}"
                );
            }
        }
    }
}

#[test]
fn rfc_examples() {
    // RFC 7541 C.4.1.
    let www = [
        0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff,
    ];
    assert_eq!(dec(&www).unwrap(), b"www.example.com");
    // RFC 7541 C.4.2, C.4.3.
    assert_eq!(
        dec(&[0xa8, 0xeb, 0x10, 0x64, 0x9c, 0xbf]).unwrap(),
        b"no-cache"
    );
    assert_eq!(
        dec(&[0x25, 0xa8, 0x49, 0xe9, 0x5b, 0xb8, 0xe8, 0xb4, 0xbf]).unwrap(),
        b"custom-value"
    );
    assert_eq!(dec(&[]).unwrap(), b"");
}

#[test]
fn appends_to_dst() {
    let mut out = b"keep:".to_vec();
    decode(&enc(b"value"), &mut out).unwrap();
    assert_eq!(out, b"keep:value");
}

#[test]
fn every_symbol_alone() {
    for sym in 0..=255u8 {
        let e = enc(&[sym]);
        assert_eq!(dec(&e).unwrap(), [sym], "symbol {sym}");
        // Twice and three times: codes that straddle the 4-bit grid differently.
        assert_eq!(dec(&enc(&[sym; 2])).unwrap(), [sym; 2], "symbol {sym} x2");
        assert_eq!(dec(&enc(&[sym; 3])).unwrap(), [sym; 3], "symbol {sym} x3");
        // After every possible bit offset (prefix of 'a'-codes and a shorter ones).
        for prefix in [&b"0"[..], b"00", b"000", b"0a", b"A", b"AA", b"\xff", b"|"] {
            let input = [prefix, &[sym]].concat();
            assert_eq!(
                dec(&enc(&input)).unwrap(),
                input,
                "{prefix:?} + symbol {sym}"
            );
        }
    }
}

#[test]
fn random_strings_round_trip() {
    let mut rng = Rng(0x5eed_0001);
    for _ in 0..20_000 {
        let input = rng.string(64);
        let e = enc(&input);
        assert_eq!(dec(&e).unwrap(), input, "{input:?}");
    }
}

#[test]
fn padding_one_bits() {
    // Every padding length 0..=7 is reached at least once with each of many prefixes.
    let mut rng = Rng(0x5eed_0002);
    let mut seen = [0; 8];
    for _ in 0..4_000 {
        let input = rng.string(12);
        let mut bits = Bits::default();
        bits.syms(&input);
        let pad = bits.gap();
        seen[pad] += 1;
        // 1..=7 one-bits (the MSBs of EOS): accepted.
        let mut ok = bits.clone();
        ok.fill(true, pad);
        assert_eq!(dec(&ok.bytes), Ok(input.clone()), "{input:?} pad {pad}");
        // Eight or more one-bits: rejected (30 of them are EOS itself).
        for extra in [8, 16] {
            let mut long = bits.clone();
            long.fill(true, pad + extra);
            let want = if pad + extra >= 30 {
                HpackError::HuffmanEos
            } else {
                HpackError::HuffmanPadding
            };
            assert_eq!(dec(&long.bytes), Err(want), "{input:?} pad {}", pad + extra);
        }
    }
    assert!(seen.iter().all(|&n| n > 100), "{seen:?}");
    // Hand-checked: 'a' = 00011, then 1..=3 ones; 'w' = 1111000 then one 1; '0' = 00000.
    assert_eq!(dec(&[0b0001_1111]), Ok(b"a".to_vec()));
    assert_eq!(dec(&[0b1111_0001]), Ok(b"w".to_vec()));
    assert_eq!(dec(&[0b0000_0111]), Ok(b"0".to_vec()));
    assert_eq!(dec(&[0xff]), Err(HpackError::HuffmanPadding));
    assert_eq!(dec(&[0b0001_1111, 0xff]), Err(HpackError::HuffmanPadding));
}

#[test]
fn padding_not_ones_rejected() {
    let mut rng = Rng(0x5eed_0003);
    for _ in 0..2_000 {
        let input = rng.string(12);
        let mut bits = Bits::default();
        bits.syms(&input);
        let pad = bits.gap();
        if pad == 0 {
            continue;
        }
        // All zeros: an error, except that five zero bits are the code of '0'.
        let mut zeros = bits.clone();
        zeros.fill(false, pad);
        let got = dec(&zeros.bytes);
        if pad == 5 {
            assert_eq!(got, Ok([&input[..], b"0"].concat()));
        } else {
            assert_eq!(got, Err(HpackError::HuffmanPadding), "{input:?} pad {pad}");
        }
        // Every other pattern of `pad` bits: whatever the oracle says, and never `input`
        // itself unless the pattern is all ones.
        for pattern in 0..(1u32 << pad) - 1 {
            let mut b = bits.clone();
            b.push(pattern, pad as u8);
            let got = dec(&b.bytes);
            assert_eq!(got, reference(&b.bytes), "{input:?} pattern {pattern:b}");
            assert_ne!(got, Ok(input.clone()));
        }
    }
    // Hand-checked: 'a' followed by 000.
    assert_eq!(dec(&[0b0001_1000]), Err(HpackError::HuffmanPadding));
}

#[test]
fn eos_inside_rejected() {
    let mut rng = Rng(0x5eed_0004);
    for _ in 0..2_000 {
        let (before, after) = (rng.string(8), rng.string(8));
        let mut bits = Bits::default();
        bits.syms(&before).sym(EOS_SYM).syms(&after);
        let pad = bits.gap();
        bits.fill(true, pad);
        assert_eq!(dec(&bits.bytes), Err(HpackError::HuffmanEos));
    }
    assert_eq!(dec(&[0xff, 0xff, 0xff, 0xff]), Err(HpackError::HuffmanEos));
    // EOS ending exactly on the last bit.
    let mut bits = Bits::default();
    bits.syms(b"aa").sym(EOS_SYM);
    assert_eq!(bits.gap(), 0);
    assert_eq!(dec(&bits.bytes), Err(HpackError::HuffmanEos));
    // 27 ones to the end: a prefix of EOS, but far too much padding.
    let mut bits = Bits::default();
    bits.syms(b"a").fill(true, 27);
    assert_eq!(bits.gap(), 0);
    assert_eq!(dec(&bits.bytes), Err(HpackError::HuffmanPadding));
}

#[test]
fn truncated_code_rejected() {
    for sym in 0..=255u8 {
        let (len, _) = ENCODE_TABLE[usize::from(sym)];
        let e = enc(&[sym]);
        if len >= 9 {
            // The remaining bits are a proper prefix of the code, at least 8 bits long.
            let cut = &e[..e.len() - 1];
            assert_eq!(dec(cut), Err(HpackError::HuffmanPadding), "symbol {sym}");
        }
        // Any cut of a string ending in `sym`: never the full string; as the oracle says.
        let input = [b"ab", &[sym][..]].concat();
        let e = enc(&input);
        for keep in 0..e.len() {
            let got = dec(&e[..keep]);
            assert_ne!(got, Ok(input.clone()));
            assert_eq!(got, reference(&e[..keep]), "symbol {sym} keep {keep}");
        }
    }
    // Symbol 0 is 13 bits (0x1ff8): its first octet alone is 8 ones.
    assert_eq!(dec(&[0xff]), Err(HpackError::HuffmanPadding));
}

#[test]
fn same_as_oracle_exhaustive_short() {
    for a in 0..=255u8 {
        assert_eq!(dec(&[a]), reference(&[a]), "{a:02x}");
        for b in 0..=255u8 {
            assert_eq!(dec(&[a, b]), reference(&[a, b]), "{a:02x}{b:02x}");
        }
    }
}

#[test]
fn same_as_oracle_random() {
    let mut rng = Rng(0x5eed_0005);
    for _ in 0..20_000 {
        // Random octets, biased to runs of ones (long codes, EOS, padding).
        let len = rng.below(40);
        let bytes: Vec<u8> = (0..len)
            .map(|_| match rng.below(4) {
                0 => 0xff,
                1 => 0xff << rng.below(8),
                _ => rng.next() as u8,
            })
            .collect();
        assert_eq!(dec(&bytes), reference(&bytes), "{bytes:02x?}");
        // A valid encoding with one bit flipped.
        let mut e = enc(&rng.string(48));
        if !e.is_empty() {
            let i = rng.below(e.len());
            e[i] ^= 1 << rng.below(8);
            assert_eq!(dec(&e), reference(&e), "{e:02x?}");
        }
    }
}
