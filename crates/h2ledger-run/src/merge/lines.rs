//! The `finding` lines of several sessions (`-T jsonl` with `replay -j N`, `replay A B ...`,
//! `sniff --workers N`) as one session reading every packet writes them (decision 443).
//!
//! One session writes a finding's line when it fires: after the packet that made it fire,
//! or at its end (the connections still open closed in the order of their numbers, then the
//! capture-wide facts). Each part keeps its findings with when they fired
//! ([`crate::Session::keep_fired`], [`crate::FireAt`]); here they are put in that order: the
//! packet's place in the whole (the dealer's packet number for `-j`; for files and devices
//! the packet's time, then the part as given, then its own packet number, as mergecap orders
//! packets), and the end's lines by the connection's merged number, capture-wide ones last.
//! A finding of the whole capture (`conn: null`) is one line in one session: the earliest of
//! the parts' is kept; when it fired at the end (the facts a session notes as it finishes),
//! it is the merged report's, whose evidence sums the parts' as one session's would.
//! Bounded by what each part keeps: at most `h2ledger_core::findings::MAX_FINDINGS`
//! findings a part, and a part that hits it says so in its report (`findings_omitted`).

use h2ledger_core::findings::Finding;

use super::{renumber_finding, Numbering};
use crate::report::Report;
use crate::session::Fired;

/// Where a line goes: at the end or not, the packet's time (or number), the part as given,
/// the part's own packet number, the line's place among its part's.
type Key = (bool, i64, usize, u64, usize);

/// `fired` (per part: its index as given, its index in `num`, its fired findings in order)
/// in the order one session would write them, numbered by `num`; `report` is the merged
/// report (the capture-wide findings the end fires).
pub(super) fn order(
    fired: Vec<(usize, usize, Vec<Fired>)>,
    num: &Numbering,
    report: &Report,
) -> Vec<Finding> {
    let mut all: Vec<(Key, Finding)> = Vec::new();
    for (given, p, v) in fired {
        for (seq, (at, mut f)) in v.into_iter().enumerate() {
            renumber_finding(&mut f, p, num);
            let key = if at.end {
                // The end closes connections in the order of their numbers; the capture's
                // facts come after.
                let conn = f.conn.map_or(i64::MAX, i64::from);
                (true, conn, given, 0, seq)
            } else {
                (false, at.ts, given, at.n, seq)
            };
            all.push((key, f));
        }
    }
    all.sort_by_key(|(k, _)| *k);
    let mut seen = Vec::new();
    let mut out = Vec::with_capacity(all.len());
    for ((end, ..), f) in all {
        if f.conn.is_none() {
            let which = (f.id, f.side);
            if seen.contains(&which) {
                continue;
            }
            seen.push(which);
            let whole = report
                .findings
                .iter()
                .flatten()
                .find(|g| g.conn.is_none() && g.id == f.id && g.side == f.side);
            if let (true, Some(g)) = (end, whole) {
                out.push(g.clone());
                continue;
            }
        }
        out.push(f);
    }
    out
}
