//! The observers a run attaches (ledger tally, per-phase tallies, analysis, timeline) and the
//! reports built from them, for the whole capture and per phase.

use h2ledger_core::analysis::{Cut, Splitter};
use h2ledger_core::{
    Analysis, AnalysisReport, FrameEvent, LedgerReport, Observer, Tally, Timeline,
};
use h2ledger_tcp::{ConnId, ConnMeta, Dir, Nanos, Write};

use crate::pipeline::Pipeline;

/// What a run computes beyond the plain ledger.
#[derive(Clone, Debug, Default)]
pub struct Wanted {
    pub analysis: bool,
    pub splitter: Option<Splitter>,
    /// Timeline bucket for `--plot`.
    pub timeline: Option<Nanos>,
}

/// Every observer of a run. Only the tally is always there: the analysis and the timeline cost
/// memory per call and per time bucket, so they are attached only when their output is asked for.
#[derive(Debug)]
pub struct Obs {
    pub tally: Tally,
    pub splitter: Option<Splitter>,
    /// Phase `i`'s ledger: frames and writes whose time falls in phase `i`.
    pub phases: Vec<Tally>,
    pub analysis: Option<Analysis>,
    pub timeline: Option<Timeline>,
    origin_set: bool,
}

impl Obs {
    pub fn new(w: &Wanted) -> Obs {
        Obs {
            tally: Tally::new(),
            splitter: w.splitter.clone(),
            phases: Vec::new(),
            analysis: w.analysis.then(|| {
                let mut a = Analysis::new(w.splitter.clone());
                if let Some(b) = w.timeline {
                    a.flow.record_series(b, None);
                }
                a
            }),
            timeline: w.timeline.map(Timeline::new),
            origin_set: false,
        }
    }

    /// The first packet's time: phase offsets, `--every` and the plot count from it.
    pub fn set_origin(&mut self, t: Nanos) {
        if self.origin_set {
            return;
        }
        self.origin_set = true;
        if let Some(s) = &mut self.splitter {
            s.set_origin(t);
        }
        if let Some(a) = &mut self.analysis {
            a.set_origin(t);
            if let Some(s) = &mut a.flow.series {
                s.origin.get_or_insert(t);
            }
        }
        if let Some(tl) = &mut self.timeline {
            tl.set_origin(t);
        }
    }

    pub fn frames(&self) -> u64 {
        self.tally.frames()
    }

    fn phase_tally(&mut self, t: Nanos) -> Option<&mut Tally> {
        let s = self.splitter.as_mut()?;
        if s.origin().is_none() {
            s.set_origin(t);
        }
        let i = s.phase_of(t);
        if self.phases.len() <= i {
            self.phases.resize_with(i + 1, Tally::new);
        }
        Some(&mut self.phases[i])
    }
}

impl Observer for Obs {
    fn wants_headers(&self) -> bool {
        self.analysis.is_some()
    }

    fn wants_data(&self, conn: ConnId, stream: u32) -> bool {
        self.analysis
            .as_ref()
            .is_some_and(|a| a.wants_data(conn, stream))
    }

    fn gap(&mut self, conn: ConnId, dir: Dir, ts: Nanos, framing_lost: bool) {
        if let Some(a) = &mut self.analysis {
            a.gap(conn, dir, ts, framing_lost);
        }
    }

    fn close(&mut self, conn: ConnId, ts: Nanos) {
        if let Some(a) = &mut self.analysis {
            a.close(conn, ts);
        }
    }

    fn open(&mut self, meta: &ConnMeta) {
        self.tally.open(meta);
        if let Some(a) = &mut self.analysis {
            a.open(meta);
        }
    }

    fn write(&mut self, conn: ConnId, dir: Dir, w: &Write) {
        self.tally.write(conn, dir, w);
        if let Some(t) = self.phase_tally(w.ts) {
            t.write(conn, dir, w);
        }
        if let Some(a) = &mut self.analysis {
            a.write(conn, dir, w);
        }
    }

    fn frame(&mut self, ev: &FrameEvent<'_>) {
        self.tally.frame(ev);
        if let Some(t) = self.phase_tally(ev.ts) {
            t.frame(ev);
        }
        if let Some(a) = &mut self.analysis {
            a.frame(ev);
        }
        if let Some(tl) = &mut self.timeline {
            tl.frame(ev);
        }
    }
}

/// A ledger with its analysis, for the whole capture or one phase.
#[derive(Clone, Debug)]
pub struct Full {
    pub name: String,
    pub ledger: LedgerReport,
    pub analysis: Option<AnalysisReport>,
    /// Phase bounds, seconds since the epoch.
    pub start: Option<f64>,
    pub end: Option<f64>,
}

/// The whole capture's report and one per phase. Call after `Pipeline::finish`.
pub fn build(p: &mut Pipeline<Obs>, whole: LedgerReport) -> (Full, Vec<Full>) {
    if let Some(a) = &mut p.ledger.observer.analysis {
        a.flush();
    }
    let conns = p.ledger.connections();
    let o = &p.ledger.observer;
    let full = Full {
        name: String::new(),
        analysis: o.analysis.as_ref().map(|a| a.report(&conns, None)),
        ledger: whole,
        start: p.stats.first,
        end: p.stats.last,
    };
    let mut phases = Vec::new();
    if let (Some(s), Some(first), Some(last)) = (o.splitter.clone(), p.stats.first, p.stats.last) {
        let mut s = s;
        let bounds = s.bounds(nanos(first), nanos(last));
        let empty = Tally::new();
        for (i, (a, b)) in bounds.into_iter().enumerate() {
            let t = o.phases.get(i).unwrap_or(&empty);
            phases.push(Full {
                name: format!("phase {}", i + 1),
                ledger: LedgerReport::build(&conns, t),
                analysis: o.analysis.as_ref().map(|an| an.report(&conns, Some(i))),
                start: Some(a as f64 / 1e9),
                end: Some(b as f64 / 1e9),
            });
        }
    }
    (full, phases)
}

fn nanos(s: f64) -> Nanos {
    (s * 1e9).round() as Nanos
}

/// `--split-at`: RFC 3339 times (`2026-11-30T12:10:24.664Z`, `...+01:00`), `@EPOCH` seconds,
/// or offsets from the first packet (`30s`, `1.5`, `500ms`), comma separated.
pub fn parse_cuts(s: &str) -> Result<Vec<Cut>, String> {
    s.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(parse_cut)
        .collect()
}

fn parse_cut(s: &str) -> Result<Cut, String> {
    if let Some(e) = s.strip_prefix('@') {
        let v: f64 = e
            .parse()
            .map_err(|_| format!("\"{s}\": @ needs epoch seconds, e.g. @1796035824.6646"))?;
        return Ok(Cut::At(epoch_nanos(e).unwrap_or((v * 1e9) as Nanos)));
    }
    if s.len() >= 19 && s.as_bytes()[4] == b'-' {
        return rfc3339(s).map(Cut::At);
    }
    crate::sniff::parse_duration(s).map(|d| Cut::Offset(d.as_nanos() as Nanos))
}

/// Exact decimal seconds to nanoseconds ("1796035824.6646295").
fn epoch_nanos(s: &str) -> Option<Nanos> {
    let (i, f) = s.split_once('.').unwrap_or((s, ""));
    let secs: i64 = i.parse().ok()?;
    if f.len() > 9 || !f.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let frac: i64 = format!("{f:0<9}").parse().ok()?;
    Some(secs * 1_000_000_000 + frac)
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
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
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
pub fn fmt_rfc3339(t: f64) -> String {
    let total_us = (t * 1e6).round() as i64;
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
        assert_eq!(fmt_rfc3339(951_865_201.5), "2000-02-29T23:00:01.500000Z");
        assert_eq!(
            parse_cut("@1796035824.6646295"),
            Ok(Cut::At(1_796_035_824_664_629_500))
        );
        assert_eq!(parse_cut("30s"), Ok(Cut::Offset(30_000_000_000)));
        let t = rfc3339(&fmt_rfc3339(1_796_035_824.664_63)).unwrap();
        assert_eq!(t, 1_796_035_824_664_630_000);
        assert!(rfc3339("2026-13-01T00:00:00Z").is_err());
    }
}
