//! The protobuf wire format (<https://protobuf.dev/programming-guides/encoding/>): varints,
//! tags, and the span of each field's value.
//!
//! Contract: every function takes a whole, length-bounded buffer and a position into it; none
//! indexes past the buffer, none panics, and each consumes at least one byte per field, so a
//! scan of `n` bytes ends after at most `n` fields.

/// The six wire types (`WireType` in protobuf's `wire_format_lite.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wire {
    Varint,
    I64,
    Len,
    SGroup,
    EGroup,
    I32,
}

impl Wire {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Wire::Varint => "varint",
            Wire::I64 => "fixed64",
            Wire::Len => "len",
            Wire::SGroup => "group",
            Wire::EGroup => "end-group",
            Wire::I32 => "fixed32",
        }
    }
}

/// Why bytes are not a protobuf message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WireError {
    /// A varint runs past the end, or past 10 bytes, or its 10th byte is above 1 (Go's
    /// `protowire.ConsumeVarint`, errCodeOverflow; prost's `decode_varint` agrees).
    Varint,
    /// Field number 0 or above 2^29 - 1 (`protowire.MinValidNumber`, `MaxValidNumber`).
    FieldNumber,
    /// Wire type 6 or 7.
    WireType,
    /// A length or fixed-size value runs past the end.
    Truncated,
    /// An end-group tag without its start, or a start without its end.
    Group,
    /// Nesting deeper than the limit.
    Depth,
}

impl WireError {
    pub(crate) fn text(self) -> &'static str {
        match self {
            WireError::Varint => "bad varint",
            WireError::FieldNumber => "bad field number",
            WireError::WireType => "bad wire type",
            WireError::Truncated => "truncated value",
            WireError::Group => "unmatched group",
            WireError::Depth => "nesting too deep",
        }
    }
}

/// Field numbers are 29 bits (`protowire.MaxValidNumber`).
pub(crate) const MAX_FIELD: u64 = (1 << 29) - 1;

/// Reads a varint at `*pos`.
#[inline]
pub(crate) fn varint(buf: &[u8], pos: &mut usize) -> Result<u64, WireError> {
    let mut v: u64 = 0;
    for i in 0..10 {
        let b = *buf.get(*pos).ok_or(WireError::Varint)?;
        *pos += 1;
        if i == 9 && b > 1 {
            return Err(WireError::Varint);
        }
        v |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            return Ok(v);
        }
    }
    Err(WireError::Varint)
}

/// Reads a tag at `*pos`: the field number and wire type.
#[inline]
pub(crate) fn tag(buf: &[u8], pos: &mut usize) -> Result<(u32, Wire), WireError> {
    let t = varint(buf, pos)?;
    let wire = match t & 7 {
        0 => Wire::Varint,
        1 => Wire::I64,
        2 => Wire::Len,
        3 => Wire::SGroup,
        4 => Wire::EGroup,
        5 => Wire::I32,
        _ => return Err(WireError::WireType),
    };
    let n = t >> 3;
    if n == 0 || n > MAX_FIELD {
        return Err(WireError::FieldNumber);
    }
    Ok((n as u32, wire))
}

/// One field's value.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Value<'a> {
    Varint(u64),
    I64(u64),
    I32(u32),
    /// A length-delimited value.
    Len(&'a [u8]),
    /// The bytes between a start-group tag and its end-group tag.
    Group(&'a [u8]),
}

/// Takes `n` bytes at `*pos`.
#[inline]
pub(crate) fn take<'a>(buf: &'a [u8], pos: &mut usize, n: usize) -> Result<&'a [u8], WireError> {
    let end = pos.checked_add(n).ok_or(WireError::Truncated)?;
    let s = buf.get(*pos..end).ok_or(WireError::Truncated)?;
    *pos = end;
    Ok(s)
}

/// Reads the value of a field whose tag was just read. `depth` is the nesting of the
/// enclosing message; a group nests one level deeper and must close within `max_depth`.
pub(crate) fn value<'a>(
    buf: &'a [u8],
    pos: &mut usize,
    number: u32,
    wire: Wire,
    depth: u32,
    max_depth: u32,
) -> Result<Value<'a>, WireError> {
    Ok(match wire {
        Wire::Varint => Value::Varint(varint(buf, pos)?),
        Wire::I64 => {
            let s = take(buf, pos, 8)?;
            Value::I64(u64::from_le_bytes(
                s.try_into().map_err(|_| WireError::Truncated)?,
            ))
        }
        Wire::I32 => {
            let s = take(buf, pos, 4)?;
            Value::I32(u32::from_le_bytes(
                s.try_into().map_err(|_| WireError::Truncated)?,
            ))
        }
        Wire::Len => {
            let n = varint(buf, pos)?;
            let n = usize::try_from(n).map_err(|_| WireError::Truncated)?;
            Value::Len(take(buf, pos, n)?)
        }
        Wire::SGroup => {
            let start = *pos;
            let end = skip_group(buf, pos, number, depth + 1, max_depth)?;
            Value::Group(&buf[start..end])
        }
        Wire::EGroup => return Err(WireError::Group),
    })
}

/// Skips the fields of a group up to its end-group tag for `number`; returns where the group's
/// content ends (the end tag's first byte) and leaves `*pos` after the end tag.
fn skip_group(
    buf: &[u8],
    pos: &mut usize,
    number: u32,
    depth: u32,
    max_depth: u32,
) -> Result<usize, WireError> {
    if depth > max_depth {
        return Err(WireError::Depth);
    }
    loop {
        let here = *pos;
        if here >= buf.len() {
            return Err(WireError::Group);
        }
        let (n, w) = tag(buf, pos)?;
        if w == Wire::EGroup {
            return if n == number {
                Ok(here)
            } else {
                Err(WireError::Group)
            };
        }
        value(buf, pos, n, w, depth, max_depth)?;
    }
}

/// Zigzag decoding (`protowire.DecodeZigZag`).
#[inline]
pub(crate) fn zigzag64(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// 32-bit zigzag: protobuf decodes sint32 from the low 32 bits of the varint.
#[inline]
pub(crate) fn zigzag32(v: u64) -> i32 {
    let v = v as u32;
    ((v >> 1) as i32) ^ -((v & 1) as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints() {
        let mut p = 0;
        assert_eq!(varint(&[0x96, 0x01], &mut p), Ok(150));
        assert_eq!(p, 2);
        let max = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(varint(&max, &mut 0), Ok(u64::MAX));
        let over = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        assert_eq!(varint(&over, &mut 0), Err(WireError::Varint));
        assert_eq!(varint(&[0x80], &mut 0), Err(WireError::Varint));
        assert_eq!(zigzag32(1), -1);
        assert_eq!(zigzag32(4294967294), i32::MAX);
        assert_eq!(zigzag64(3), -2);
    }

    #[test]
    fn groups_nest_and_close() {
        // field 1 start group, field 2 varint 5, field 1 end group
        let b = [0x0b, 0x10, 0x05, 0x0c];
        let mut p = 0;
        let (n, w) = tag(&b, &mut p).unwrap();
        match value(&b, &mut p, n, w, 0, 100).unwrap() {
            Value::Group(g) => assert_eq!(g, &[0x10, 0x05]),
            v => panic!("{v:?}"),
        }
        assert_eq!(p, 4);
        // an end group for another number
        let b = [0x0b, 0x14];
        let mut p = 1;
        assert_eq!(
            value(&b, &mut p, 1, Wire::SGroup, 0, 100).err(),
            Some(WireError::Group)
        );
        // too deep
        let b = [0x0b; 200];
        let mut p = 1;
        assert_eq!(
            value(&b, &mut p, 1, Wire::SGroup, 0, 100).err(),
            Some(WireError::Depth)
        );
    }
}
