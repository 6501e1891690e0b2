//! Phases on the command line (`--split-at` times); the observers and the per-phase reports
//! live in the library (crates/h2ledger-run).

use h2ledger_core::analysis::{Cut, MAX_PHASES};
use h2ledger_tcp::Nanos;

pub use h2ledger_run::run::*;

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
    crate::durations::parse(s).map(|d| Cut::Offset(d.as_nanos() as Nanos))
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

/// RFC 3339 date-time to nanoseconds since the epoch.
pub fn rfc3339(s: &str) -> Result<Nanos, String> {
    let bad = || format!("\"{s}\" is not an RFC 3339 time (e.g. 2026-11-30T12:10:24.664Z)");
    let b = s.as_bytes();
    let num = |a: usize, z: usize| -> Result<i64, String> {
        s.get(a..z)
            .filter(|x| x.bytes().all(|c| c.is_ascii_digit()))
            .and_then(|x| x.parse().ok())
            .ok_or_else(bad)
    };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return Err(bad());
    }
    let (y, mo, d) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (h, mi, se) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    let mut i = 19;
    let mut frac = 0i64;
    if b.get(i) == Some(&b'.') {
        let j = i + 1 + b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        let digits = &s[i + 1..j];
        if digits.is_empty() {
            return Err(bad());
        }
        let d9: String = digits
            .chars()
            .chain(std::iter::repeat('0'))
            .take(9)
            .collect();
        frac = d9.parse().map_err(|_| bad())?;
        i = j;
    }
    let off = match b.get(i) {
        Some(b'Z') | Some(b'z') if i + 1 == b.len() => 0,
        Some(&c @ (b'+' | b'-')) if i + 6 == b.len() && b[i + 3] == b':' => {
            let m = num(i + 1, i + 3)? * 3600 + num(i + 4, i + 6)? * 60;
            if c == b'+' {
                m
            } else {
                -m
            }
        }
        _ => return Err(bad()),
    };
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let month_days = match mo {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    if !(1..=12).contains(&mo) || !(1..=month_days).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return Err(bad());
    }
    // Howard Hinnant's days_from_civil.
    let y2 = if mo <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + mi * 60 + se - off;
    Ok(secs * 1_000_000_000 + frac)
}

/// Nanoseconds since the epoch as RFC 3339 UTC with microseconds.
pub fn fmt_rfc3339(t: Nanos) -> String {
    let total_us = (i128::from(t) + 500).div_euclid(1000) as i64;
    let secs = total_us.div_euclid(1_000_000);
    let us = total_us.rem_euclid(1_000_000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{us:06}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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
