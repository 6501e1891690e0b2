//! The canonical JSON of a message decoded with its schema, written as Go's protojson
//! (`encoding/protojson/encode.go`, `well_known_types.go`) and Python's
//! `json_format.MessageToDict` print it with default options.
//!
//! The decoder reads the wire format straight into JSON text, with protobuf's parsing rules
//! (the C++ and Go parsers agree on all of them):
//!
//! * a singular scalar seen twice keeps the last value; a singular message seen twice is the
//!   merge of both, which is the parse of their concatenation, so a message is decoded from a
//!   list of byte segments;
//! * a oneof keeps its last member (merged with earlier occurrences of that same member that
//!   came after any other member);
//! * repeated scalars accept packed and unpacked encodings, mixed;
//! * a map entry keeps its last key and value; a key seen in two entries keeps the last entry;
//! * a known field number with the wrong wire type is an unknown field, as protobuf does;
//! * unknown fields are counted (the caller then shows the schema-less form as well).
//!
//! Output order: fields in declaration order, extensions after them by full name
//! (protojson's `order.IndexNameFieldOrder`), map entries by key (`order.GenericKeyOrder`).
//! Unset fields are omitted: implicit-presence (proto3) scalars when zero (a float when its
//! bits are zero, so -0 is shown), empty repeated fields and maps.

use crate::json;
use crate::schema::{Card, FieldInfo, Kind, Tables, Wkt};
use crate::wire::{self, Value, Wire, WireError};

/// Why a message has no canonical JSON.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum CanonError {
    /// The bytes do not parse (at `depth` levels of nesting, including the depth limit).
    Wire(WireError),
    /// A `string` field is not UTF-8 (protobuf's parsers reject it in proto3).
    Utf8,
    /// A well-known type whose value has no JSON form (both protojson and `MessageToDict`
    /// refuse it): the text says which and why.
    Unprintable(String),
    /// The JSON grew past the limit.
    Output,
}

impl From<WireError> for CanonError {
    fn from(e: WireError) -> Self {
        CanonError::Wire(e)
    }
}

type R<T = ()> = Result<T, CanonError>;

/// One field occurrence on the wire.
#[derive(Clone, Copy)]
struct Occ<'a> {
    field: u16,
    value: Value<'a>,
}

pub(crate) struct Canon<'t> {
    pub(crate) tables: &'t Tables,
    pub(crate) max_depth: u32,
    pub(crate) max_out: usize,
    /// Unknown fields seen, at any depth.
    pub(crate) unknown: u32,
}

/// Well-known type bounds, from protojson's `well_known_types.go` (`maxSecondsInDuration`,
/// `minTimestampSeconds`, `maxTimestampSeconds`), which are the proto files' own comments.
const MAX_DURATION_SECONDS: i64 = 315_576_000_000;
const MIN_TIMESTAMP_SECONDS: i64 = -62_135_596_800;
const MAX_TIMESTAMP_SECONDS: i64 = 253_402_300_799;

impl<'t> Canon<'t> {
    /// Writes message `msg` decoded from the concatenation of `segs`. `prefix`, when given, is
    /// written first inside the object (an Any's `"@type":...`).
    pub(crate) fn message(
        &mut self,
        msg: u32,
        segs: &[&[u8]],
        depth: u32,
        prefix: Option<&str>,
        out: &mut String,
    ) -> R {
        if depth > self.max_depth {
            return Err(WireError::Depth.into());
        }
        if out.len() > self.max_out {
            return Err(CanonError::Output);
        }
        let tables = self.tables;
        let info = &tables.msgs[msg as usize];
        if let Some(w) = info.wkt {
            if let Some(p) = prefix {
                // An Any holding a well-known type: {"@type": ..., "value": <its JSON>}
                // (protojson's marshalAny; Empty included, which MessageToDict leaves out).
                out.push('{');
                out.push_str(p);
                out.push_str(",\"value\":");
                self.wkt(w, segs, depth, out)?;
                out.push('}');
                return Ok(());
            }
            return self.wkt(w, segs, depth, out);
        }
        let mut occ: Vec<Occ<'_>> = Vec::new();
        // Per oneof: the member seen last, and where its run began (earlier occurrences of the
        // oneof are overwritten).
        let mut oneof_cut: Vec<(u16, u32)> = vec![(u16::MAX, 0); usize::from(info.oneofs)];
        let mut has_oneof = false;
        for seg in segs {
            let mut pos = 0;
            while pos < seg.len() {
                let (n, w) = wire::tag(seg, &mut pos)?;
                if w == Wire::EGroup {
                    return Err(WireError::Group.into());
                }
                let v = wire::value(seg, &mut pos, n, w, depth, self.max_depth)?;
                let Some(fi) = info.field(n) else {
                    self.unknown += 1;
                    continue;
                };
                let f = &info.fields[usize::from(fi)];
                if !wire_fits(f, w) || self.closed_rejects(f.kind, v) {
                    self.unknown += 1;
                    continue;
                }
                if let Some(o) = f.oneof {
                    has_oneof = true;
                    if let Some(slot) = oneof_cut.get_mut(usize::from(o)) {
                        if slot.0 != fi {
                            *slot = (fi, occ.len() as u32);
                        }
                    }
                }
                occ.push(Occ {
                    field: fi,
                    value: v,
                });
            }
        }
        if has_oneof {
            let mut i = 0u32;
            occ.retain(|o| {
                let keep = match info.fields[usize::from(o.field)].oneof {
                    Some(k) => oneof_cut
                        .get(usize::from(k))
                        .is_none_or(|&(_, cut)| i >= cut),
                    None => true,
                };
                i += 1;
                keep
            });
        }
        if !occ.is_sorted_by_key(|o| o.field) {
            occ.sort_by_key(|o| o.field);
        }
        out.push('{');
        let mut first = true;
        if let Some(p) = prefix {
            out.push_str(p);
            first = false;
        }
        let mut i = 0;
        while i < occ.len() {
            let fi = occ[i].field;
            let mut j = i + 1;
            while j < occ.len() && occ[j].field == fi {
                j += 1;
            }
            let f = &info.fields[usize::from(fi)];
            let mark = out.len();
            if !first {
                out.push(',');
            }
            out.push_str(&f.key);
            let written = match f.card {
                Card::Repeated => self.repeated(f.kind, &occ[i..j], depth, out)?,
                Card::Map { key, value } => self.map(key, value, &occ[i..j], depth, out)?,
                Card::Single { presence } => {
                    self.single(f.kind, presence, &occ[i..j], depth, out)?
                }
            };
            if written {
                first = false;
            } else {
                out.truncate(mark);
            }
            i = j;
        }
        out.push('}');
        Ok(())
    }

    /// A singular field: the last scalar, or the merge of every occurrence of a message.
    /// Returns false when nothing is to be shown (an implicit-presence zero).
    fn single(
        &mut self,
        kind: Kind,
        presence: bool,
        occ: &[Occ<'_>],
        depth: u32,
        out: &mut String,
    ) -> R<bool> {
        match kind {
            Kind::Message(m) | Kind::Group(m) => {
                self.message_of(m, occ.iter().map(|o| o.value), depth, out)?;
                Ok(true)
            }
            _ => {
                let Some(last) = occ.last() else {
                    return Ok(false);
                };
                if !presence && is_zero(kind, last.value) {
                    return Ok(false);
                }
                self.scalar(kind, last.value, out)?;
                Ok(true)
            }
        }
    }

    /// A message from its occurrences (`len` values or group contents), merged.
    fn message_of<'a>(
        &mut self,
        m: u32,
        values: impl Iterator<Item = Value<'a>>,
        depth: u32,
        out: &mut String,
    ) -> R {
        let mut segs: Vec<&[u8]> = Vec::new();
        for v in values {
            if let Value::Len(b) | Value::Group(b) = v {
                segs.push(b);
            }
        }
        self.message(m, &segs, depth + 1, None, out)
    }

    fn repeated(&mut self, kind: Kind, occ: &[Occ<'_>], depth: u32, out: &mut String) -> R<bool> {
        out.push('[');
        let mut n = 0usize;
        for o in occ {
            match (kind, o.value) {
                (Kind::Message(m) | Kind::Group(m), v @ (Value::Len(_) | Value::Group(_))) => {
                    if n > 0 {
                        out.push(',');
                    }
                    self.message_of(m, std::iter::once(v), depth, out)?;
                    n += 1;
                }
                (k, Value::Len(b)) if k.packable() => {
                    let mut pos = 0;
                    let w = scalar_wire(k);
                    while pos < b.len() {
                        let v = wire::value(b, &mut pos, 1, w, depth, self.max_depth)?;
                        if self.closed_rejects(k, v) {
                            self.unknown += 1;
                            continue;
                        }
                        if n > 0 {
                            out.push(',');
                        }
                        self.scalar(k, v, out)?;
                        n += 1;
                        if out.len() > self.max_out {
                            return Err(CanonError::Output);
                        }
                    }
                }
                (k, v) => {
                    if n > 0 {
                        out.push(',');
                    }
                    self.scalar(k, v, out)?;
                    n += 1;
                }
            }
            if out.len() > self.max_out {
                return Err(CanonError::Output);
            }
        }
        out.push(']');
        Ok(n > 0)
    }

    fn map(
        &mut self,
        kk: Kind,
        vk: Kind,
        occ: &[Occ<'_>],
        depth: u32,
        out: &mut String,
    ) -> R<bool> {
        if depth + 1 > self.max_depth {
            return Err(WireError::Depth.into());
        }
        let mut entries: Vec<(MapKey<'_>, Vec<Value<'_>>)> = Vec::with_capacity(occ.len());
        for o in occ {
            let Value::Len(b) = o.value else { continue };
            let mut key: Option<Value<'_>> = None;
            let mut vals: Vec<Value<'_>> = Vec::new();
            let mut pos = 0;
            while pos < b.len() {
                let (n, w) = wire::tag(b, &mut pos)?;
                if w == Wire::EGroup {
                    return Err(WireError::Group.into());
                }
                let v = wire::value(b, &mut pos, n, w, depth + 1, self.max_depth)?;
                match n {
                    1 if w == scalar_wire(kk) => key = Some(v),
                    2 if w == scalar_wire(vk) => {
                        if !matches!(vk, Kind::Message(_) | Kind::Group(_)) {
                            vals.clear();
                        }
                        vals.push(v);
                    }
                    _ => self.unknown += 1,
                }
            }
            if vals.last().is_some_and(|v| self.closed_rejects(vk, *v)) {
                // protobuf-go and C++ keep such an entry whole as an unknown field.
                self.unknown += 1;
                continue;
            }
            let key = map_key(kk, key)?;
            entries.push((key, vals));
        }
        // Stable: of equal keys the last entry is last in its run, and wins.
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        out.push('{');
        let mut first = true;
        for i in 0..entries.len() {
            if entries.get(i + 1).is_some_and(|n| n.0 == entries[i].0) {
                continue;
            }
            if !first {
                out.push(',');
            }
            first = false;
            entries[i].0.write(out);
            out.push(':');
            let vals = std::mem::take(&mut entries[i].1);
            match vk {
                Kind::Message(m) | Kind::Group(m) => {
                    self.message_of(m, vals.into_iter(), depth + 1, out)?;
                }
                k => match vals.last() {
                    Some(v) => self.scalar(k, *v, out)?,
                    None => self.zero(k, out),
                },
            }
            if out.len() > self.max_out {
                return Err(CanonError::Output);
            }
        }
        out.push('}');
        Ok(!entries.is_empty())
    }

    /// A scalar's JSON (not a message).
    fn scalar(&mut self, kind: Kind, v: Value<'_>, out: &mut String) -> R {
        match (kind, v) {
            (Kind::Int32, Value::Varint(x)) => json::int(out, x as i32),
            (Kind::Int64, Value::Varint(x)) => json::quoted(out, x as i64),
            (Kind::Uint32, Value::Varint(x)) => json::int(out, x as u32),
            (Kind::Uint64, Value::Varint(x)) => json::quoted(out, x),
            (Kind::Sint32, Value::Varint(x)) => json::int(out, wire::zigzag32(x)),
            (Kind::Sint64, Value::Varint(x)) => json::quoted(out, wire::zigzag64(x)),
            (Kind::Bool, Value::Varint(x)) => out.push_str(if x != 0 { "true" } else { "false" }),
            (Kind::Enum(e), Value::Varint(x)) => self.enum_value(e, x as i32, out),
            (Kind::Fixed32, Value::I32(x)) => json::int(out, x),
            (Kind::Sfixed32, Value::I32(x)) => json::int(out, x as i32),
            (Kind::Float, Value::I32(x)) => json::float(out, f32::from_bits(x)),
            (Kind::Fixed64, Value::I64(x)) => json::quoted(out, x),
            (Kind::Sfixed64, Value::I64(x)) => json::quoted(out, x as i64),
            (Kind::Double, Value::I64(x)) => json::double(out, f64::from_bits(x)),
            (Kind::String, Value::Len(b)) => {
                json::string(out, std::str::from_utf8(b).map_err(|_| CanonError::Utf8)?)
            }
            (Kind::Bytes, Value::Len(b)) => json::base64(out, b),
            // wire_fits() let nothing else through; a mismatch shows as the zero value.
            (k, _) => self.zero(k, out),
        }
        Ok(())
    }

    /// A value a closed (proto2) enum does not define: an unknown field.
    fn closed_rejects(&self, kind: Kind, v: Value<'_>) -> bool {
        match (kind, v) {
            (Kind::Enum(e), Value::Varint(x)) => self
                .tables
                .enums
                .get(e as usize)
                .is_some_and(|i| i.rejects(x as i32)),
            _ => false,
        }
    }

    fn enum_value(&self, e: u32, n: i32, out: &mut String) {
        match self.tables.enums.get(e as usize) {
            Some(info) if info.null => out.push_str("null"),
            Some(info) => match info.name(n) {
                Some(name) => out.push_str(name),
                // An open enum keeps unknown numbers; protojson and MessageToDict (proto3)
                // print the number.
                None => json::int(out, n),
            },
            None => json::int(out, n),
        }
    }

    /// The JSON of a kind's zero value (a map entry without its value).
    fn zero(&mut self, kind: Kind, out: &mut String) {
        match kind {
            Kind::Int32
            | Kind::Uint32
            | Kind::Sint32
            | Kind::Fixed32
            | Kind::Sfixed32
            | Kind::Float
            | Kind::Double => out.push('0'),
            Kind::Int64 | Kind::Uint64 | Kind::Sint64 | Kind::Fixed64 | Kind::Sfixed64 => {
                out.push_str("\"0\"")
            }
            Kind::Bool => out.push_str("false"),
            Kind::String | Kind::Bytes => out.push_str("\"\""),
            Kind::Enum(e) => self.enum_value(e, 0, out),
            Kind::Message(m) | Kind::Group(m) => {
                // An empty message cannot fail but for depth, which the caller checked.
                let _ = self.message(m, &[], 1, None, out);
            }
        }
    }
}

/// Whether wire type `w` is a valid encoding of field `f`.
fn wire_fits(f: &FieldInfo, w: Wire) -> bool {
    match f.card {
        Card::Map { .. } => w == Wire::Len,
        Card::Repeated if f.kind.packable() => w == Wire::Len || w == scalar_wire(f.kind),
        _ => w == scalar_wire(f.kind),
    }
}

/// The wire type of a kind's unpacked encoding.
fn scalar_wire(k: Kind) -> Wire {
    match k {
        Kind::Double | Kind::Fixed64 | Kind::Sfixed64 => Wire::I64,
        Kind::Float | Kind::Fixed32 | Kind::Sfixed32 => Wire::I32,
        Kind::String | Kind::Bytes | Kind::Message(_) => Wire::Len,
        Kind::Group(_) => Wire::SGroup,
        _ => Wire::Varint,
    }
}

/// An implicit-presence field holding its zero value is not shown (protoreflect's `Has`).
fn is_zero(kind: Kind, v: Value<'_>) -> bool {
    match (kind, v) {
        (Kind::Int32 | Kind::Uint32 | Kind::Sint32 | Kind::Enum(_), Value::Varint(x)) => {
            x as u32 == 0
        }
        (_, Value::Varint(x)) => x == 0,
        (_, Value::I32(x)) => x == 0,
        (_, Value::I64(x)) => x == 0,
        (_, Value::Len(b)) => b.is_empty(),
        (_, Value::Group(_)) => false,
    }
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum MapKey<'a> {
    Bool(bool),
    I(i64),
    U(u64),
    S(&'a str),
}

impl MapKey<'_> {
    fn write(&self, out: &mut String) {
        match self {
            MapKey::Bool(b) => out.push_str(if *b { "\"true\"" } else { "\"false\"" }),
            MapKey::I(v) => json::quoted(out, *v),
            MapKey::U(v) => json::quoted(out, *v),
            MapKey::S(s) => json::string(out, s),
        }
    }
}

fn map_key(kind: Kind, v: Option<Value<'_>>) -> R<MapKey<'_>> {
    Ok(match (kind, v) {
        (Kind::Bool, Some(Value::Varint(x))) => MapKey::Bool(x != 0),
        (Kind::Bool, _) => MapKey::Bool(false),
        (Kind::String, Some(Value::Len(b))) => {
            MapKey::S(std::str::from_utf8(b).map_err(|_| CanonError::Utf8)?)
        }
        (Kind::String, _) => MapKey::S(""),
        (Kind::Int32, Some(Value::Varint(x))) => MapKey::I(i64::from(x as i32)),
        (Kind::Int64, Some(Value::Varint(x))) => MapKey::I(x as i64),
        (Kind::Sint32, Some(Value::Varint(x))) => MapKey::I(i64::from(wire::zigzag32(x))),
        (Kind::Sint64, Some(Value::Varint(x))) => MapKey::I(wire::zigzag64(x)),
        (Kind::Sfixed32, Some(Value::I32(x))) => MapKey::I(i64::from(x as i32)),
        (Kind::Sfixed64, Some(Value::I64(x))) => MapKey::I(x as i64),
        (Kind::Uint32, Some(Value::Varint(x))) => MapKey::U(u64::from(x as u32)),
        (Kind::Uint64, Some(Value::Varint(x))) => MapKey::U(x),
        (Kind::Fixed32, Some(Value::I32(x))) => MapKey::U(u64::from(x)),
        (Kind::Fixed64, Some(Value::I64(x))) => MapKey::U(x),
        (Kind::Uint32 | Kind::Uint64 | Kind::Fixed32 | Kind::Fixed64, _) => MapKey::U(0),
        _ => MapKey::I(0),
    })
}

mod wkt;

#[cfg(test)]
mod tests;
