//! Times on the command line: `--split-at` cuts (RFC 3339, @EPOCH, offsets from the first
//! packet).

use h2ledger_core::analysis::{Cut, MAX_PHASES};
use h2ledger_tcp::Nanos;

/// `--split-at`: RFC 3339 times (`2026-11-30T12:10:24.664Z`, `...+01:00`), `@EPOCH` seconds,
/// or offsets from the first packet (`30s`, `1.5`, `500ms`), comma separated.
pub fn parse_cuts(s: &str) -> Result<Vec<Cut>, String> {
    let cuts: Vec<Cut> = s
        .split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(parse_cut)
        .collect::<Result<_, _>>()?;
    if cuts.len() >= MAX_PHASES {
        return Err(format!(
            "{} cuts: at most {} (phases are capped at {MAX_PHASES})",
            cuts.len(),
            MAX_PHASES - 1
        ));
    }
    Ok(cuts)
}

fn parse_cut(s: &str) -> Result<Cut, String> {
    if let Some(e) = s.strip_prefix('@') {
        return epoch_nanos(e).map(Cut::At).ok_or_else(|| {
            format!("\"{s}\": @ needs epoch seconds (at most 9 decimals), e.g. @1796035824.6646")
        });
    }
    if s.len() >= 19 && s.as_bytes()[4] == b'-' {
        return rfc3339(s).map(Cut::At);
    }
    super::durations::parse(s)
        .map(|d| Cut::Offset(d.as_nanos() as Nanos))
        .map_err(|why| {
            // A number first: it was meant as an offset, and the duration's error says why not.
            if s.starts_with(|c: char| c.is_ascii_digit()) {
                return format!("{why} (or an RFC 3339 time, or @EPOCH seconds)");
            }
            format!(
                "\"{s}\" is not a time: give an offset from the first packet (30s, 1m30s, 1.5), \
                 an RFC 3339 time (2026-11-30T12:10:24.664Z) or @EPOCH seconds (@1796035824.66)"
            )
        })
}

/// Exact decimal seconds to nanoseconds ("1796035824.6646295").
fn epoch_nanos(s: &str) -> Option<Nanos> {
    let (i, f) = s.split_once('.').unwrap_or((s, ""));
    if i.is_empty() || !i.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let secs: i64 = i.parse().ok()?;
    if f.len() > 9 || !f.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let frac: i64 = format!("{f:0<9}").parse().ok()?;
    secs.checked_mul(1_000_000_000)?.checked_add(frac)
}

/// RFC 3339 date-time to nanoseconds since the epoch, by jiff (real calendar: no February 31,
/// no February 29 outside leap years; an offset or `Z` is required).
pub fn rfc3339(s: &str) -> Result<Nanos, String> {
    let ts: jiff::Timestamp = s.parse().map_err(|e: jiff::Error| {
        format!("\"{s}\" is not an RFC 3339 time (e.g. 2026-11-30T12:10:24.664Z): {e}")
    })?;
    Nanos::try_from(ts.as_nanosecond())
        .map_err(|_| format!("\"{s}\" is outside the years 1678 to 2262 that captures can hold"))
}

#[cfg(test)]
mod tests {
    /// A word that is none of the three forms names all three (issue 20, item 13).
    #[test]
    fn a_bad_cut_lists_every_form() {
        let e = super::parse_cuts("banana").unwrap_err();
        for form in ["30s", "RFC 3339", "@EPOCH"] {
            assert!(e.contains(form), "{e}");
        }
    }

    use super::*;
    use crate::time::fmt_rfc3339;

    #[test]
    fn times() {
        assert_eq!(rfc3339("1970-01-01T00:00:00Z"), Ok(0));
        assert_eq!(
            rfc3339("2000-03-01T00:00:01.5+01:00"),
            Ok(951_865_201_500_000_000)
        );
        assert_eq!(
            fmt_rfc3339(951_865_201_500_000_000),
            "2000-02-29T23:00:01.500000Z"
        );
        assert_eq!(
            parse_cut("@1796035824.6646295"),
            Ok(Cut::At(1_796_035_824_664_629_500))
        );
        assert_eq!(parse_cut("30s"), Ok(Cut::Offset(30_000_000_000)));
        let t = rfc3339(&fmt_rfc3339(1_796_035_824_664_630_000)).unwrap();
        assert_eq!(t, 1_796_035_824_664_630_000);
        assert!(rfc3339("2026-13-01T00:00:00Z").is_err());
        assert!(rfc3339("2026-02-31T00:00:00Z").is_err());
        assert!(rfc3339("2026-02-29T00:00:00Z").is_err());
        assert!(rfc3339("2024-02-29T00:00:00Z").is_ok());
        assert!(rfc3339("2026-04-31T00:00:00Z").is_err());
        assert!(parse_cut("@99999999999999999999").is_err());
        assert!(parse_cut("@1e30").is_err());
        assert!(parse_cut("@-5").is_err());
        assert!(parse_cut("99999999999999999999s").is_err());
    }
}
