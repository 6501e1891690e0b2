//! `frames -t FORMAT`: how a frame's time is printed, with tshark's `-t` letters (tshark(1),
//! "-t a|ad|d|dd|e|r|u|ud"): relative to the first packet (the default, as tshark's), absolute
//! local or UTC time of day, with or without the date, epoch seconds, or the time since the
//! previous frame seen (`d`) or printed (`dd`). The `--every` ticks of `frames` print their time
//! the same way.

use std::fmt::Write as _;

use h2ledger_tcp::Nanos;

/// tshark's `-t` formats, by its letters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TimeFormat {
    /// `r`: seconds since the first packet.
    #[default]
    Relative,
    /// `a`: local time of day, `HH:MM:SS.ffffff`.
    Absolute,
    /// `ad`: local date and time, `YYYY-MM-DD HH:MM:SS.ffffff`.
    AbsoluteDate,
    /// `u`: UTC time of day.
    Utc,
    /// `ud`: UTC date and time.
    UtcDate,
    /// `e`: seconds since the epoch.
    Epoch,
    /// `d`: seconds since the previous frame, printed or not.
    Delta,
    /// `dd`: seconds since the previous frame printed.
    DeltaDisplayed,
}

impl TimeFormat {
    /// Every format with its tshark letters and what it prints (for `--help`).
    pub const ALL: [(TimeFormat, &'static str, &'static str); 8] = [
        (TimeFormat::Relative, "r", "seconds since the first packet"),
        (TimeFormat::Absolute, "a", "local time of day"),
        (TimeFormat::AbsoluteDate, "ad", "local date and time"),
        (TimeFormat::Utc, "u", "UTC time of day"),
        (TimeFormat::UtcDate, "ud", "UTC date and time"),
        (TimeFormat::Epoch, "e", "seconds since the epoch"),
        (TimeFormat::Delta, "d", "seconds since the previous frame"),
        (
            TimeFormat::DeltaDisplayed,
            "dd",
            "seconds since the previous frame printed",
        ),
    ];
}

/// Prints frames' times in a [`TimeFormat`], keeping what the relative and delta formats count
/// from.
#[derive(Clone, Debug)]
pub struct Clock {
    format: TimeFormat,
    /// The local time zone (`a`, `ad`), chosen by the caller (the system's).
    tz: jiff::tz::TimeZone,
    origin: Option<Nanos>,
    prev: Option<Nanos>,
    prev_shown: Option<Nanos>,
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new(TimeFormat::Relative, jiff::tz::TimeZone::UTC)
    }
}

impl Clock {
    /// A clock printing in `format`; `tz` is the local zone of `a` and `ad`.
    pub fn new(format: TimeFormat, tz: jiff::tz::TimeZone) -> Clock {
        Clock {
            format,
            tz,
            origin: None,
            prev: None,
            prev_shown: None,
        }
    }

    /// The first packet's time (relative times count from it; the first frame's otherwise).
    pub fn set_origin(&mut self, t: Nanos) {
        self.origin.get_or_insert(t);
    }

    /// A frame at `t` was seen (printed or not).
    pub fn seen(&mut self, t: Nanos) {
        self.origin.get_or_insert(t);
        if self.format == TimeFormat::Delta {
            self.prev = Some(t);
        }
    }

    /// Writes the time of a frame at `t` printed now (after [`Clock::seen`] of the frame
    /// before it), bracketed, into `out`.
    pub fn stamp(&mut self, out: &mut String, t: Nanos) {
        let origin = *self.origin.get_or_insert(t);
        let since = |p: Option<Nanos>| p.map_or(0, |p| t.saturating_sub(p));
        match self.format {
            TimeFormat::Relative => secs(out, t.saturating_sub(origin)),
            TimeFormat::Delta => secs(out, since(self.prev)),
            TimeFormat::DeltaDisplayed => secs(out, since(self.prev_shown)),
            TimeFormat::Epoch => {
                let _ = write!(
                    out,
                    "[{}.{:06}]",
                    t.div_euclid(1_000_000_000),
                    t.rem_euclid(1_000_000_000) / 1000
                );
            }
            TimeFormat::Absolute => self.civil(out, t, "%H:%M:%S%.6f", false),
            TimeFormat::AbsoluteDate => self.civil(out, t, "%Y-%m-%d %H:%M:%S%.6f", false),
            TimeFormat::Utc => self.civil(out, t, "%H:%M:%S%.6f", true),
            TimeFormat::UtcDate => self.civil(out, t, "%Y-%m-%d %H:%M:%S%.6f", true),
        }
        self.prev_shown = Some(t);
    }

    /// The time of a tick at `t` (the end of its period), in the frames' format; the delta
    /// formats, which mean nothing for a period's end, print it relative to the first packet.
    pub fn tick_stamp(&self, t: Nanos) -> String {
        let mut c = self.clone();
        if matches!(c.format, TimeFormat::Delta | TimeFormat::DeltaDisplayed) {
            c.format = TimeFormat::Relative;
        }
        let mut s = String::new();
        c.stamp(&mut s, t);
        s
    }

    fn civil(&self, out: &mut String, t: Nanos, fmt: &str, utc: bool) {
        let ts = jiff::Timestamp::from_nanosecond(i128::from(t))
            .and_then(|ts| ts.round(jiff::Unit::Microsecond))
            .unwrap_or(jiff::Timestamp::MAX);
        let tz = if utc {
            jiff::tz::TimeZone::UTC
        } else {
            self.tz.clone()
        };
        let _ = write!(out, "[{}]", ts.to_zoned(tz).strftime(fmt));
    }
}

/// `[  0.045774]`: seconds with microseconds, right-aligned in ten.
fn secs(out: &mut String, ns: Nanos) {
    let _ = write!(out, "[{:>10.6}]", ns as f64 / 1e9);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamps(f: TimeFormat, times: &[(Nanos, bool)]) -> Vec<String> {
        let mut c = Clock::new(f, jiff::tz::TimeZone::fixed(jiff::tz::offset(2)));
        c.set_origin(1_764_585_032_000_000_000);
        let mut v = Vec::new();
        for &(t, shown) in times {
            if shown {
                let mut s = String::new();
                c.stamp(&mut s, t);
                v.push(s);
            }
            c.seen(t);
        }
        v
    }

    const T: [(Nanos, bool); 3] = [
        (1_764_585_032_045_774_000, true),
        (1_764_585_032_050_000_000, false),
        (1_764_585_033_000_001_000, true),
    ];

    #[test]
    fn tshark_formats() {
        assert_eq!(
            stamps(TimeFormat::Relative, &T),
            ["[  0.045774]", "[  1.000001]"]
        );
        assert_eq!(
            stamps(TimeFormat::Delta, &T),
            ["[  0.000000]", "[  0.950001]"]
        );
        assert_eq!(
            stamps(TimeFormat::DeltaDisplayed, &T),
            ["[  0.000000]", "[  0.954227]"]
        );
        assert_eq!(
            stamps(TimeFormat::Epoch, &T),
            ["[1764585032.045774]", "[1764585033.000001]"]
        );
        assert_eq!(
            stamps(TimeFormat::UtcDate, &T),
            [
                "[2025-12-01 10:30:32.045774]",
                "[2025-12-01 10:30:33.000001]"
            ]
        );
        assert_eq!(stamps(TimeFormat::Utc, &T)[0], "[10:30:32.045774]");
        // The local zone of the test is UTC+2.
        assert_eq!(stamps(TimeFormat::Absolute, &T)[0], "[12:30:32.045774]");
        assert_eq!(
            stamps(TimeFormat::AbsoluteDate, &T)[1],
            "[2025-12-01 12:30:33.000001]"
        );
    }

    #[test]
    fn ticks_of_delta_formats_are_relative() {
        let mut c = Clock::new(TimeFormat::Delta, jiff::tz::TimeZone::UTC);
        c.set_origin(0);
        c.seen(500_000_000);
        assert_eq!(c.tick_stamp(1_000_000_000), "[  1.000000]");
    }
}
