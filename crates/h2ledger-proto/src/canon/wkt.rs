//! The well-known types in their JSON forms (protojson's `well_known_types.go`): Timestamp,
//! Duration, FieldMask, Struct, ListValue, Value, Any, the wrappers, Empty.

use std::fmt::Write as _;

use super::*;

impl Canon<'_> {
    pub(super) fn wkt(&mut self, w: Wkt, segs: &[&[u8]], depth: u32, out: &mut String) -> R {
        match w {
            Wkt::Timestamp => {
                let (s, n) = self.seconds_nanos(segs, depth)?;
                timestamp(s, n, out)
            }
            Wkt::Duration => {
                let (s, n) = self.seconds_nanos(segs, depth)?;
                duration(s, n, out)
            }
            Wkt::Wrapper(k) => {
                let v = self.last_field(segs, depth, 1, scalar_wire(k))?;
                match v {
                    Some(v) => self.scalar(k, v, out),
                    None => {
                        self.zero(k, out);
                        Ok(())
                    }
                }
            }
            Wkt::FieldMask => self.field_mask(segs, depth, out),
            Wkt::Struct => self.struct_(segs, depth, out),
            Wkt::ListValue => self.list_value(segs, depth, out),
            Wkt::Value => self.value(segs, depth, out),
            Wkt::Any => self.any(segs, depth, out),
            Wkt::Empty => {
                self.count_unknown(segs, depth, &[])?;
                out.push_str("{}");
                Ok(())
            }
        }
    }

    /// Every occurrence of field `number` with wire type `w`, in order; other fields are
    /// unknown unless listed in `known`.
    fn fields_of<'a>(
        &mut self,
        segs: &[&'a [u8]],
        depth: u32,
        want: &[(u32, Wire)],
        mut f: impl FnMut(usize, Value<'a>) -> R,
    ) -> R {
        for seg in segs {
            let mut pos = 0;
            while pos < seg.len() {
                let (n, w) = wire::tag(seg, &mut pos)?;
                if w == Wire::EGroup {
                    return Err(WireError::Group.into());
                }
                let v = wire::value(seg, &mut pos, n, w, depth, self.max_depth)?;
                match want.iter().position(|&(wn, ww)| wn == n && ww == w) {
                    Some(i) => f(i, v)?,
                    None => self.unknown += 1,
                }
            }
        }
        Ok(())
    }

    fn count_unknown(&mut self, segs: &[&[u8]], depth: u32, want: &[(u32, Wire)]) -> R {
        self.fields_of(segs, depth, want, |_, _| Ok(()))
    }

    fn last_field<'a>(
        &mut self,
        segs: &[&'a [u8]],
        depth: u32,
        n: u32,
        w: Wire,
    ) -> R<Option<Value<'a>>> {
        let mut last = None;
        self.fields_of(segs, depth, &[(n, w)], |_, v| {
            last = Some(v);
            Ok(())
        })?;
        Ok(last)
    }

    fn seconds_nanos(&mut self, segs: &[&[u8]], depth: u32) -> R<(i64, i32)> {
        let (mut s, mut n) = (0i64, 0i32);
        self.fields_of(
            segs,
            depth,
            &[(1, Wire::Varint), (2, Wire::Varint)],
            |i, v| {
                if let Value::Varint(x) = v {
                    if i == 0 {
                        s = x as i64;
                    } else {
                        n = x as i32;
                    }
                }
                Ok(())
            },
        )?;
        Ok((s, n))
    }

    fn field_mask(&mut self, segs: &[&[u8]], depth: u32, out: &mut String) -> R {
        let mut paths = String::new();
        let mut first = true;
        let mut bad = None;
        self.fields_of(segs, depth, &[(1, Wire::Len)], |_, v| {
            if let Value::Len(b) = v {
                let s = std::str::from_utf8(b).map_err(|_| CanonError::Utf8)?;
                if !first {
                    paths.push(',');
                }
                first = false;
                if !camel(s, &mut paths) && bad.is_none() {
                    bad = Some(s.to_owned());
                }
            }
            Ok(())
        })?;
        if let Some(p) = bad {
            return Err(CanonError::Unprintable(format!(
                "google.protobuf.FieldMask path {p:?} has no lowerCamelCase form"
            )));
        }
        json::string(out, &paths);
        Ok(())
    }

    fn struct_(&mut self, segs: &[&[u8]], depth: u32, out: &mut String) -> R {
        let value = self.tables_index("google.protobuf.Value");
        let mut occ = Vec::new();
        self.fields_of(segs, depth, &[(1, Wire::Len)], |_, v| {
            occ.push(Occ { field: 0, value: v });
            Ok(())
        })?;
        match value {
            Some(v) => {
                self.map(Kind::String, Kind::Message(v), &occ, depth, out)?;
            }
            None => out.push_str("{}"),
        }
        Ok(())
    }

    fn list_value(&mut self, segs: &[&[u8]], depth: u32, out: &mut String) -> R {
        let value = self.tables_index("google.protobuf.Value");
        let mut occ = Vec::new();
        self.fields_of(segs, depth, &[(1, Wire::Len)], |_, v| {
            occ.push(Occ { field: 0, value: v });
            Ok(())
        })?;
        match value {
            Some(v) if !occ.is_empty() => {
                self.repeated(Kind::Message(v), &occ, depth, out)?;
            }
            _ => out.push_str("[]"),
        }
        Ok(())
    }

    /// `google.protobuf.Value`: the oneof `kind`. Unset is `null` and a non-finite number is
    /// `"NaN"`/`"Infinity"` as `MessageToDict` prints them (protojson refuses both).
    fn value(&mut self, segs: &[&[u8]], depth: u32, out: &mut String) -> R {
        const WANT: [(u32, Wire); 6] = [
            (1, Wire::Varint),
            (2, Wire::I64),
            (3, Wire::Len),
            (4, Wire::Varint),
            (5, Wire::Len),
            (6, Wire::Len),
        ];
        // The member seen last; for struct_value and list_value, the run of it to merge.
        let mut member: Option<usize> = None;
        let mut run: Vec<Value<'_>> = Vec::new();
        self.fields_of(segs, depth, &WANT, |i, v| {
            if member != Some(i) || !matches!(i, 4 | 5) {
                run.clear();
            }
            member = Some(i);
            run.push(v);
            Ok(())
        })?;
        let last = run.last().copied();
        match (member, last) {
            (None, _) | (Some(0), _) | (_, None) => out.push_str("null"),
            (Some(1), Some(Value::I64(x))) => json::double(out, f64::from_bits(x)),
            (Some(2), Some(Value::Len(b))) => {
                json::string(out, std::str::from_utf8(b).map_err(|_| CanonError::Utf8)?)
            }
            (Some(3), Some(Value::Varint(x))) => {
                out.push_str(if x != 0 { "true" } else { "false" })
            }
            (Some(4), _) => {
                let segs: Vec<&[u8]> = run
                    .iter()
                    .filter_map(|v| {
                        if let Value::Len(b) = v {
                            Some(*b)
                        } else {
                            None
                        }
                    })
                    .collect();
                match self.tables_index("google.protobuf.Struct") {
                    Some(m) => self.message(m, &segs, depth + 1, None, out)?,
                    None => out.push_str("{}"),
                }
            }
            (Some(5), _) => {
                let segs: Vec<&[u8]> = run
                    .iter()
                    .filter_map(|v| {
                        if let Value::Len(b) = v {
                            Some(*b)
                        } else {
                            None
                        }
                    })
                    .collect();
                match self.tables_index("google.protobuf.ListValue") {
                    Some(m) => self.message(m, &segs, depth + 1, None, out)?,
                    None => out.push_str("[]"),
                }
            }
            _ => out.push_str("null"),
        }
        Ok(())
    }

    /// `google.protobuf.Any`: `{"@type": url, ...the message's fields}`, or for a well-known
    /// type `{"@type": url, "value": <its JSON>}`; `{}` when both fields are unset.
    fn any(&mut self, segs: &[&[u8]], depth: u32, out: &mut String) -> R {
        let mut url: &[u8] = &[];
        let mut value: &[u8] = &[];
        self.fields_of(segs, depth, &[(1, Wire::Len), (2, Wire::Len)], |i, v| {
            if let Value::Len(b) = v {
                if i == 0 {
                    url = b;
                } else {
                    value = b;
                }
            }
            Ok(())
        })?;
        if url.is_empty() {
            if value.is_empty() {
                out.push_str("{}");
                return Ok(());
            }
            return Err(CanonError::Unprintable(
                "google.protobuf.Any has a value but no type_url".into(),
            ));
        }
        let url = std::str::from_utf8(url).map_err(|_| CanonError::Utf8)?;
        let name = url.rsplit('/').next().unwrap_or(url);
        let Some(m) = self.tables_index(name) else {
            return Err(CanonError::Unprintable(format!(
                "google.protobuf.Any type {url:?} is in no schema"
            )));
        };
        let mut prefix = String::from("\"@type\":");
        json::string(&mut prefix, url);
        self.message(m, &[value], depth + 1, Some(&prefix), out)
    }

    fn tables_index(&self, name: &str) -> Option<u32> {
        self.tables.by_name.get(name).copied()
    }
}

/// RFC 3339 in UTC with 0, 3, 6 or 9 fractional digits and `Z`. Nanos outside [0, 1e9) are
/// carried into the seconds first, as `Timestamp.ToJsonString` does (protojson refuses them).
pub(crate) fn timestamp(seconds: i64, nanos: i32, out: &mut String) -> R {
    let n = i64::from(nanos);
    let s = seconds.checked_add(n.div_euclid(1_000_000_000));
    let n = n.rem_euclid(1_000_000_000);
    let Some(s) = s.filter(|s| (MIN_TIMESTAMP_SECONDS..=MAX_TIMESTAMP_SECONDS).contains(s)) else {
        return Err(CanonError::Unprintable(format!(
            "google.protobuf.Timestamp seconds {seconds} outside 0001-01-01..9999-12-31"
        )));
    };
    let days = s.div_euclid(86_400);
    let secs = s.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    // "{y:04}-{m:02}-{d:02}T{h:02}:{min:02}:{s:02}", without the formatter (year 1 to 9999).
    out.push('"');
    for (v, w, sep) in [
        (y as u32, 4, '-'),
        (m, 2, '-'),
        (d, 2, 'T'),
        ((secs / 3600) as u32, 2, ':'),
        ((secs / 60 % 60) as u32, 2, ':'),
    ] {
        json::padded(out, v, w);
        out.push(sep);
    }
    json::padded(out, (secs % 60) as u32, 2);
    fraction(n as u32, out);
    out.push_str("Z\"");
    Ok(())
}

/// `[-]S[.fff|.ffffff|.fffffffff]s`.
pub(crate) fn duration(seconds: i64, nanos: i32, out: &mut String) -> R {
    if !(-MAX_DURATION_SECONDS..=MAX_DURATION_SECONDS).contains(&seconds) {
        return Err(CanonError::Unprintable(format!(
            "google.protobuf.Duration seconds {seconds} out of range"
        )));
    }
    if nanos <= -1_000_000_000 || nanos >= 1_000_000_000 {
        return Err(CanonError::Unprintable(format!(
            "google.protobuf.Duration nanos {nanos} out of range"
        )));
    }
    if (seconds > 0 && nanos < 0) || (seconds < 0 && nanos > 0) {
        return Err(CanonError::Unprintable(
            "google.protobuf.Duration seconds and nanos of different signs".into(),
        ));
    }
    out.push('"');
    if seconds < 0 || nanos < 0 {
        out.push('-');
    }
    let _ = write!(out, "{}", seconds.unsigned_abs());
    fraction(nanos.unsigned_abs(), out);
    out.push_str("s\"");
    Ok(())
}

fn fraction(n: u32, out: &mut String) {
    if n == 0 {
        return;
    }
    out.push('.');
    if n.is_multiple_of(1_000_000) {
        json::padded(out, n / 1_000_000, 3);
    } else if n.is_multiple_of(1_000) {
        json::padded(out, n / 1_000, 6);
    } else {
        json::padded(out, n, 9);
    }
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// snake_case to lowerCamelCase for a FieldMask path; false when the path has no such form
/// (`_SnakeCaseToCamelCase` in protobuf's `well_known_types.py`: no uppercase letter, and
/// every `_` followed by a lowercase letter; protojson's reversibility check agrees).
pub(super) fn camel(path: &str, out: &mut String) -> bool {
    let mut after = false;
    for c in path.chars() {
        if c.is_uppercase() {
            return false;
        }
        if after {
            if !c.is_lowercase() {
                return false;
            }
            out.extend(c.to_uppercase());
            after = false;
        } else if c == '_' {
            after = true;
        } else {
            out.push(c);
        }
    }
    !after || path.is_empty()
}
