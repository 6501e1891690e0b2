//! The hostile corpus (scripts/hostile.py, decision 470): about a hundred small captures of
//! what real stacks and broken middleboxes send (link types, file formats, IP options,
//! fragments and tunnels, TCP overlaps, reordering, reuse, keep-alives, RST with data, HTTP/2
//! padding, unknown types and flags, odd SETTINGS, 1-byte segments), each replayed with and
//! without `--port`. Every case: exit status 0 or 1 (or the one-line error its case names), no
//! panic, peak RSS within 64 MiB plus the file; the `--quick` cases' ledgers equal tshark's
//! (or the true value the case proves from its bytes where tshark is wrong).

use std::process::Command;

use crate::util::*;

/// scripts/hostile.py with `args`, its captures in a directory of the test's own (`name`).
fn hostile(name: &str, args: &[&str]) -> std::process::Output {
    let dir = scratch(name);
    Command::new("python3")
        .arg(repo().join("scripts/hostile.py"))
        .args(["--bin", bin(), "--dir", dir.to_str().unwrap()])
        .args(args)
        .output()
        .expect("python3 runs")
}

#[track_caller]
fn assert_all_hold(o: &std::process::Output) {
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && out.contains(" 0 of "),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Every case, the process checks only (no tshark needed): no panic, no hang, bounded memory,
/// the exit status and one-line errors of broken files.
#[test]
fn every_hostile_case_is_survived() {
    assert_all_hold(&hostile("hostile-all", &["--no-tshark"]));
}

/// The quick cases against tshark 4.0's ledger, with and without `--port`.
#[test]
fn quick_hostile_cases_equal_tshark() {
    if !have("tshark") {
        crate::util::skipped(
            "SKIPPED: tshark is not installed (apt-get install tshark); CI installs it",
        );
        return;
    }
    assert_all_hold(&hostile("hostile-quick", &["--quick"]));
}
