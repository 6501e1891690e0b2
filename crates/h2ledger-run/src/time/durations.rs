//! Durations on the command line: `30s`, `500ms`, `250us`, `1m30s`, `1h 5m`, `PT90S`, `1.5`
//! (a bare number is seconds).
//!
//! Read by jiff's duration grammar (its "friendly" format and ISO 8601, decision 94), which
//! keeps every value in integer nanoseconds: nothing can overflow, round to zero unnoticed or
//! panic, and every bad value is one line that says what is wrong.

use std::time::Duration;

use jiff::{Span, SpanRelativeTo};

/// The longest duration accepted anywhere: 100 years. Longer values are typing mistakes, and
/// every time computed from one stays far inside `i64` nanoseconds.
pub const MAX: Duration = Duration::from_secs(100 * 365 * 86_400);

const HINT: &str = "e.g. 30s, 500ms, 250us, 1m30s, 1.5";

/// A duration of zero or more (`--split-at` offsets).
pub fn parse(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if t.is_empty() {
        return Err(format!("empty duration ({HINT})"));
    }
    if t.starts_with(['-', '+']) || t.ends_with("ago") {
        return Err(format!("\"{t}\": a duration has no sign ({HINT})"));
    }
    // A bare number is seconds, like tshark's `-a duration:N`; ".5s" reads as "0.5s".
    let bare = t.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    let text = match (bare, t.starts_with('.')) {
        (true, _) => format!("{}{t}s", if t.starts_with('.') { "0" } else { "" }),
        (false, true) => format!("0{t}"),
        (false, false) => t.to_string(),
    };
    let too_long = || format!("\"{t}\" is too long: durations are at most 100 years");
    // Digits beyond what 100 years in nanoseconds needs are an overflow, not a typo to explain.
    let int_digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if int_digits > 20 && text.bytes().take(int_digits).any(|b| b != b'0') {
        return Err(too_long());
    }
    if text
        .split('.')
        .skip(1)
        .any(|f| f.bytes().take_while(u8::is_ascii_digit).count() > 9)
    {
        return Err(format!(
            "\"{t}\": at most 9 decimals (durations are whole nanoseconds)"
        ));
    }
    let span: Span = text.parse().map_err(|e: jiff::Error| {
        let why = e.to_string();
        if why.contains("overflow") || why.contains("out of range") || why.contains("too big") {
            return too_long();
        }
        if why.contains("unit designator") {
            if let Some(unit) = unknown_unit(t) {
                return format!(
                    "\"{t}\": unknown unit \"{unit}\" (use ns, us, ms, s, m, h, d or w; {HINT})"
                );
            }
        }
        let why = why
            .strip_prefix("failed to parse input in the \"friendly\" duration format: ")
            .unwrap_or(&why);
        format!("\"{t}\" is not a duration ({HINT}): {why}")
    })?;
    // Days are 24 hours and weeks 7 days; months and years have no fixed length: refused.
    let d = span
        .to_duration(SpanRelativeTo::days_are_24_hours())
        .map_err(|e| {
            let why = e.to_string();
            if why.contains("overflow") || why.contains("out of range") {
                too_long()
            } else {
                format!("\"{t}\": use units up to weeks (w), not months or years")
            }
        })?;
    let d =
        Duration::try_from(d).map_err(|_| format!("\"{t}\": a duration has no sign ({HINT})"))?;
    if d > MAX {
        return Err(too_long());
    }
    Ok(d)
}

/// The first word of letters in `t` that is not one of the units jiff knows, if any.
fn unknown_unit(t: &str) -> Option<&str> {
    t.split(|c: char| !c.is_alphabetic())
        .filter(|w| !w.is_empty())
        .find(|w| {
            let probe = format!("1{w}");
            probe.parse::<Span>().is_err()
        })
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
        assert_eq!(parse("30 s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse("1h 5m"), Ok(Duration::from_secs(3900)));
        assert_eq!(parse("2w"), Ok(Duration::from_secs(14 * 86_400)));
        assert_eq!(parse("PT90S"), Ok(Duration::from_secs(90)));
        assert_eq!(parse("1.5"), Ok(Duration::from_millis(1500)));
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
            "1y",
            "1 day ago",
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
        assert!(parse("1parsec")
            .unwrap_err()
            .contains("unknown unit \"parsec\""));
        assert!(parse("0.0000000001s").unwrap_err().contains("9 decimals"));
        assert!(parse("-1s").unwrap_err().contains("no sign"));
    }
}
