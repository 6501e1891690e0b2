//! Huffman decoding of HPACK string literals (RFC 7541 §5.2, Appendix B).
//!
//! Decoding is table-driven over httlib-huffman's flattened 5-bit decode table
//! (`httlib_huffman::decoder::table5::DECODE_TABLE`: row = node of the code tree at a depth
//! that is a multiple of 5, column = the next 5 input bits, entry = `(next_id, ascii,
//! leftover)`), repacked at compile time into [`TABLE`] (one `u32` per entry, 64 rows, so
//! every index is in range by construction). On top of it, [`FAST`] (also computed at
//! compile time, by walking [`TABLE`]) decodes up to two symbols per 12-bit lookahead at a
//! symbol boundary; codes that do not fit and the last bits of the input go through
//! [`TABLE`]. httlib's 5-bit table measured faster here than its 4-bit one, and both
//! measured no faster than a bit-at-a-time walk without [`FAST`] (one dependent load per 4
//! or 5 bits).
//!
//! We do not call `httlib_huffman::decode`: it allocates on every call and accepts padding
//! the RFC forbids (zero bits); here padding is checked exactly and nothing is allocated
//! beyond the caller's reused output buffer.
//!
//! # Contract
//!
//! [`decode`] never panics (every table index is below its table's length by construction;
//! no arithmetic can overflow), runs in time linear in the input, and appends at most
//! `8 * src.len() / 5` octets (the shortest code is 5 bits). On error, the octets decoded
//! before the error are left appended.

use httlib_huffman::decoder::table5::DECODE_TABLE as HTTLIB_TABLE;

use super::HpackError;

/// Input bits per [`TABLE`] lookup (httlib's `table5`: 61 rows of 32 entries).
const BITS: u32 = 5;
const WIDTH: usize = 1 << BITS;
/// Rows in [`TABLE`]: a power of two, so a masked index is always in range.
const ROWS: usize = 64;
const INDEX_MASK: usize = ROWS * WIDTH - 1;

// Packed entry: bits 0..12 index of the next row's first entry (0 after a symbol), 12..20
// symbol, 20..23 flags, 28..32 input bits consumed.
const NEXT_MASK: u32 = INDEX_MASK as u32;
const SHIFT_SYM: u32 = 12;
const EMIT: u32 = 1 << 20;
const EOS: u32 = 1 << 21;
const INVALID: u32 = 1 << 22;
const ERROR: u32 = EOS | INVALID;
const SHIFT_USED: u32 = 28;

/// httlib's table repacked, row-major; rows past httlib's are all `INVALID` (never reached).
static TABLE: [u32; ROWS * WIDTH] = pack(&HTTLIB_TABLE);

/// httlib's entry: `(next_id, ascii, leftover)`.
type HttlibEntry = (Option<u8>, Option<u16>, u8);

const fn pack<const R: usize>(src: &[[HttlibEntry; WIDTH]; R]) -> [u32; ROWS * WIDTH] {
    assert!(R <= ROWS && ROWS * WIDTH <= 1 << SHIFT_SYM);
    let mut out = [INVALID | (BITS << SHIFT_USED); ROWS * WIDTH];
    let mut row = 0;
    while row < R {
        let mut key = 0;
        while key < WIDTH {
            let (next, ascii, leftover) = src[row][key];
            assert!((leftover as u32) < BITS);
            let used = (BITS - leftover as u32) << SHIFT_USED;
            out[row * WIDTH + key] = match (next, ascii) {
                (None, Some(sym)) if sym < 256 => EMIT | used | ((sym as u32) << SHIFT_SYM),
                (None, Some(_)) => EOS | used,
                (Some(next), None) if (next as usize) < R && next != 0 && leftover == 0 => {
                    (next as u32 * WIDTH as u32) | used
                }
                _ => INVALID | used,
            };
            key += 1;
        }
        row += 1;
    }
    out
}

/// Where the row reached from the root by `BITS` one-bits starts: the only non-root row
/// where a string may end (padding is at most 7 one-bits, and `BITS + BITS > 7`); there
/// only `7 - BITS` more bits may follow.
const ONES_ROW: u32 = TABLE[WIDTH - 1] & NEXT_MASK;
const _: () = assert!(ONES_ROW != 0 && TABLE[WIDTH - 1] & (EMIT | EOS | INVALID) == 0);

/// Appends the decoded octets of `src` to `dst`.
pub(crate) fn decode(src: &[u8], dst: &mut Vec<u8>) -> Result<(), HpackError> {
    let start = dst.len();
    // Room for the worst case (all 5-bit codes) plus one: every step below stores up to two
    // symbols at `w` and advances `w` only past those it completed, so `w` stays in bounds.
    let room = src.len().saturating_mul(8) / 5 + 2;
    // `try_reserve` first so that no size can make `resize` panic (no real input is that
    // large; the error is only there to keep the no-panic contract unconditional).
    if dst.try_reserve(room).is_err() {
        return Err(HpackError::HuffmanInvalid);
    }
    dst.resize(start + room, 0);
    let res = decode_into(src, dst.get_mut(start..).unwrap_or_default());
    let w = match res {
        Ok(w) | Err((_, w)) => w,
    };
    dst.truncate(start + w);
    res.map(drop).map_err(|(e, _)| e)
}

fn decode_into(src: &[u8], out: &mut [u8]) -> Result<usize, (HpackError, usize)> {
    let mut w = 0;
    // Bit reader: the top `n` bits of `acc` are the next input bits, the rest are zero.
    let mut acc: u64 = 0;
    let mut n: u32 = 0;
    let mut pos: usize = 0;
    // Index of the current row's first entry in `TABLE`.
    let mut row: usize = 0;
    loop {
        // Refill to at least 57 bits while the input lasts: eight octets at a time if there
        // are that many left, else one by one.
        if let Some(word) = src.get(pos..).and_then(<[u8]>::first_chunk::<8>) {
            let take = (64 - n) / 8;
            let word = u64::from_be_bytes(*word) >> n;
            // Keep only the `take` octets that fit (`n + 8 * take` is 57..=64).
            acc |= word & !(u64::MAX.checked_shr(n + 8 * take).unwrap_or(0));
            n += 8 * take;
            pos += take as usize;
        } else {
            while n <= 56 {
                let Some(&byte) = src.get(pos) else { break };
                acc |= u64::from(byte) << (56 - n);
                n += 8;
                pos += 1;
            }
        }
        // Decode while a whole lookahead is buffered: at a symbol boundary up to two symbols
        // per `FAST` lookup; otherwise (long codes, or inside one) one `TABLE` step.
        while n >= FAST_BITS {
            if row == 0 {
                let f = FAST[(acc >> (64 - FAST_BITS)) as usize];
                if f & FAST_COUNT != 0 {
                    if let Some(slot) = out.get_mut(w) {
                        *slot = f as u8;
                    }
                    if let Some(slot) = out.get_mut(w + 1) {
                        *slot = (f >> 8) as u8;
                    }
                    w += ((f & FAST_COUNT) >> FAST_SHIFT_COUNT) as usize;
                    // `used <= FAST_BITS <= n`.
                    let used = f >> FAST_SHIFT_USED;
                    acc <<= used;
                    n -= used;
                    continue;
                }
            }
            step(&mut row, &mut acc, &mut n, out, &mut w).map_err(|e| (e, w))?;
        }
        if pos >= src.len() {
            break;
        }
    }
    while n >= BITS {
        step(&mut row, &mut acc, &mut n, out, &mut w).map_err(|e| (e, w))?;
    }
    // `n < BITS` bits remain. They may still complete a code: look them up padded with
    // one-bits and keep the symbol only if it ends within the real bits.
    if n > 0 {
        let key = (acc >> (64 - BITS)) as usize | ((1 << (BITS - n)) - 1);
        let e = TABLE[(row | key) & INDEX_MASK];
        let used = e >> SHIFT_USED;
        if used <= n && e & (EMIT | EOS | INVALID) != 0 {
            if e & ERROR != 0 {
                return Err((error(e), w));
            }
            if let Some(slot) = out.get_mut(w) {
                *slot = (e >> SHIFT_SYM) as u8;
            }
            w += 1;
            acc <<= used;
            n -= used;
            row = 0;
        }
    }
    // What is left since the last symbol is the padding: `depth(row) + n` bits, the last `n`
    // at the top of `acc`. "A padding strictly longer than 7 bits MUST be treated as a
    // decoding error. A padding not corresponding to the most significant bits of the code
    // for the EOS symbol MUST be treated as a decoding error." (RFC 7541 §5.2) EOS is 30
    // one-bits, and no other code is all ones, so the padding must be all ones; its path
    // from the root is all ones only at the root or at `ONES_ROW`.
    let depth = match row {
        0 => 0,
        r if r == ONES_ROW as usize => BITS,
        _ => return Err((HpackError::HuffmanPadding, w)),
    };
    if depth + n > 7 || (acc | (u64::MAX >> n)) != u64::MAX {
        return Err((HpackError::HuffmanPadding, w));
    }
    Ok(w)
}

/// One `TABLE` step on the next `BITS` bits (`n >= BITS`): stores a completed symbol at
/// `out[*w]` and advances `*w`. Returns the entry.
#[inline(always)]
fn step(
    row: &mut usize,
    acc: &mut u64,
    n: &mut u32,
    out: &mut [u8],
    w: &mut usize,
) -> Result<u32, HpackError> {
    // `row <= INDEX_MASK` with its low `BITS` bits clear: the index is in range.
    let e = TABLE[*row | (*acc >> (64 - BITS)) as usize];
    if e & ERROR != 0 {
        return Err(error(e));
    }
    // `used <= BITS <= n`.
    let used = e >> SHIFT_USED;
    *acc <<= used;
    *n -= used;
    *row = (e & NEXT_MASK) as usize;
    if let Some(slot) = out.get_mut(*w) {
        *slot = (e >> SHIFT_SYM) as u8;
    }
    *w += ((e / EMIT) & 1) as usize;
    Ok(e)
}

/// Lookahead bits of [`FAST`].
const FAST_BITS: u32 = 12;
// `FAST` entry: bits 0..8 first symbol, 8..16 second, 16..18 how many (0..=2) are complete
// within the `FAST_BITS` bits, 28..32 bits they use.
const FAST_SHIFT_COUNT: u32 = 16;
const FAST_COUNT: u32 = 3 << FAST_SHIFT_COUNT;
const FAST_SHIFT_USED: u32 = 28;

/// For every `FAST_BITS`-bit lookahead at a symbol boundary, the (at most two) symbols whose
/// codes end within it, derived from [`TABLE`] by walking it on the lookahead.
static FAST: [u32; 1 << FAST_BITS] = fast();

const fn fast() -> [u32; 1 << FAST_BITS] {
    let mut out = [0; 1 << FAST_BITS];
    let mut idx = 0;
    while idx < 1 << FAST_BITS {
        // The lookahead, left-aligned, zeros past it.
        let bits = (idx as u64) << (64 - FAST_BITS);
        let (mut pos, mut count, mut entry) = (0, 0, 0);
        'symbols: while count < 2 {
            let (mut row, mut q) = (0, pos);
            loop {
                if q >= FAST_BITS {
                    break 'symbols;
                }
                let e = TABLE[row | ((bits << q) >> (64 - BITS)) as usize];
                let end = q + (e >> SHIFT_USED);
                if e & EMIT != 0 && end <= FAST_BITS {
                    entry |= ((e >> SHIFT_SYM) & 0xff) << (8 * count);
                    count += 1;
                    pos = end;
                    break;
                } else if e & (EMIT | ERROR) != 0 {
                    break 'symbols;
                }
                row = (e & NEXT_MASK) as usize;
                q = end;
            }
        }
        out[idx] = entry | (count << FAST_SHIFT_COUNT) | (pos << FAST_SHIFT_USED);
        idx += 1;
    }
    out
}

#[cold]
fn error(e: u32) -> HpackError {
    if e & EOS != 0 {
        // "A Huffman-encoded string literal containing the EOS symbol MUST be treated as a
        // decoding error." (RFC 7541 §5.2)
        HpackError::HuffmanEos
    } else {
        HpackError::HuffmanInvalid
    }
}

#[cfg(test)]
mod tests;
