//! The run's findings that only the run knows: `capture-drops` from a live capture's counters.

use h2ledger_run::{Drops, End, Obs, Options, Session, Wanted};

fn finish(drops: Option<Drops>) -> Vec<&'static str> {
    let mut s = Session::new(Obs::new(&Wanted::default()), Options::default());
    let done = s.finish(&End::Complete, drops);
    done.report
        .findings
        .unwrap_or_default()
        .iter()
        .map(|f| f.id.name())
        .collect()
}

#[test]
fn capture_drops_fire_on_drops_only() {
    let dropped = Drops {
        kernel: 7,
        interface: 1,
        received: 100,
    };
    assert_eq!(finish(Some(dropped)), ["capture-drops"]);
    assert!(finish(Some(Drops::default())).is_empty());
    assert!(finish(None).is_empty());
}

#[test]
fn views_without_a_report_attach_no_findings() {
    let w = Wanted {
        findings: None,
        ..Wanted::default()
    };
    let mut s = Session::new(Obs::new(&w), Options::default());
    let done = s.finish(
        &End::Complete,
        Some(Drops {
            kernel: 1,
            ..Drops::default()
        }),
    );
    assert!(done.report.findings.is_none());
}
