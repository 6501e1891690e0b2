//! Durations on the command line: `30s`, `500ms`, `250us`, `1m30s`, `1.5` (seconds).
//!
//! Parsed exactly (integer nanoseconds, no floating point), so no value can overflow, round to
//! zero unnoticed or panic: every bad value is one line that says what is wrong.

use std::time::Duration;

/// The longest duration accepted anywhere: 100 years. Longer values are typing mistakes, and
/// every time computed from one stays far inside `i64` nanoseconds.
pub const MAX: Duration = Duration::from_secs(100 * 365 * 86_400);

const UNITS: &[(&str, u128)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("min", 60_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
    ("d", 86_400_000_000_000),
];

const HINT: &str = "e.g. 30s, 500ms, 250us, 1m30s, 1.5";

/// A duration of zero or more (`--split-at` offsets).
pub fn parse(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if t.is_empty() {
        return Err(format!("empty duration ({HINT})"));
    }
    let mut rest = t;
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_len == 0 {
            return Err(not_a_duration(t));
        }
        let (num, after) = rest.split_at(num_len);
        let unit_len = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, next) = after.split_at(unit_len);
        let scale = if unit.is_empty() {
            if num_len != t.len() {
                return Err(format!(
                    "\"{t}\": a number without unit must stand alone ({HINT})"
                ));
            }
            1_000_000_000
        } else {
            UNITS
                .iter()
                .find(|(u, _)| *u == unit)
                .map(|(_, n)| *n)
                .ok_or_else(|| {
                    format!("\"{t}\": unknown unit \"{unit}\" (use ns, us, ms, s, m, h or d)")
                })?
        };
        total = total
            .checked_add(scaled(num, scale).ok_or_else(|| not_a_duration(t))?)
            .ok_or_else(|| too_long(t))?;
        if total > MAX.as_nanos() {
            return Err(too_long(t));
        }
        rest = next;
    }
    Ok(Duration::from_nanos(total as u64))
}

/// A duration above zero (`--every`, `--duration`).
pub fn parse_period(s: &str) -> Result<Duration, String> {
    let d = parse(s)?;
    if d.is_zero() {
        return Err(format!(
            "\"{}\" is zero: give a duration above zero ({HINT})",
            s.trim()
        ));
    }
    Ok(d)
}

/// `num` (digits with at most one `.`) times `scale` nanoseconds, truncated to whole
/// nanoseconds; `None` when it is not a number or too large.
fn scaled(num: &str, scale: u128) -> Option<u128> {
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Leading digits beyond what 100 years in nanoseconds needs are an overflow, not a number
    // to multiply out.
    let int = int.trim_start_matches('0');
    if int.len() > 20 {
        return Some(u128::MAX);
    }
    let mut v: u128 = if int.is_empty() { 0 } else { int.parse().ok()? };
    v = v.saturating_mul(scale);
    let mut unit = scale;
    for d in frac.bytes().take(30) {
        unit /= 10;
        if unit == 0 {
            break;
        }
        v = v.saturating_add(u128::from(d - b'0') * unit);
    }
    Some(v)
}

fn not_a_duration(t: &str) -> String {
    format!("\"{t}\" is not a duration ({HINT})")
}

fn too_long(t: &str) -> String {
    format!("\"{t}\" is too long: durations are at most 100 years")
}

/// A duration as the shortest exact unit: `1s`, `90s`, `250ms`, `1500us`, `7ns`.
pub fn show(d: Duration) -> String {
    let ns = d.as_nanos();
    match ns {
        _ if ns.is_multiple_of(1_000_000_000) => format!("{}s", ns / 1_000_000_000),
        _ if ns.is_multiple_of(1_000_000) => format!("{}ms", ns / 1_000_000),
        _ if ns.is_multiple_of(1_000) => format!("{}us", ns / 1_000),
        _ => format!("{ns}ns"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted() {
        assert_eq!(parse("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse("250µs"), Ok(Duration::from_micros(250)));
        assert_eq!(parse("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse("2min"), Ok(Duration::from_secs(120)));
        assert_eq!(parse("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse("0.000000001s"), Ok(Duration::from_nanos(1)));
        assert_eq!(parse(".5s"), Ok(Duration::from_millis(500)));
        assert_eq!(parse("0s"), Ok(Duration::ZERO));
        assert_eq!(parse("36500d"), Ok(MAX));
    }

    #[test]
    fn refused() {
        for bad in [
            "",
            "s",
            "nan",
            "inf",
            "-1s",
            "1x",
            "1.2.3s",
            ".",
            "99999999999999999999s",
            "36501d",
            "1e9s",
            "30 s",
            "1s5",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} accepted");
        }
        assert!(parse_period("0s").unwrap_err().contains("zero"));
        // Below a nanosecond truncates to zero: refused as a period, not a busy loop.
        assert!(parse_period("0.0000000001s").is_err());
        assert!(parse("99999999999999999999s")
            .unwrap_err()
            .contains("too long"));
    }
}
