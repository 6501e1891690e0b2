//! The command line itself: values checked when parsed (one clear error, exit 2, never a panic),
//! options anywhere, the filter through `-f` or trailing words.

use std::process::Output;

use crate::util::*;

const F: &str = "captures/grpcgo-article.pcap";

fn at_repo(args: &[&str]) -> Output {
    std::process::Command::new(bin())
        .args(args)
        .current_dir(repo())
        .output()
        .expect("the h2ledger binary runs")
}

/// Exit status 2, a message naming `flag` and saying `reason`, no panic.
fn refused(args: &[&str], flag: &str, reason: &str) {
    let o = at_repo(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(flag), "{args:?} names {flag}: {err}");
    assert!(err.contains(reason), "{args:?} says {reason}: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert!(o.stdout.is_empty(), "{args:?} printed a report");
}

#[test]
fn durations_are_checked_when_parsed() {
    for cmd in ["replay", "sniff"] {
        let file: &[&str] = if cmd == "replay" { &[F] } else { &[] };
        for (v, reason) in [
            ("0s", "zero"),
            ("0.0000000001s", "9 decimals"),
            ("99999999999999999999s", "too long"),
            ("nan", "not a duration"),
            ("1parsec", "unknown unit"),
        ] {
            let mut args = vec![cmd];
            args.extend_from_slice(file);
            args.extend_from_slice(&["--every", v]);
            refused(&args, "--every", reason);
        }
    }
    refused(
        &["sniff", "--duration", "99999999999999999999s"],
        "--duration",
        "too long",
    );
    refused(&["sniff", "--duration", "0"], "--duration", "zero");
    refused(&["replay", F, "--every=-1s"], "--every", "no sign");
    refused(
        &["replay", F, "--every", "1y"],
        "--every",
        "months or years",
    );
    refused(
        &["replay", F, "--split-at", "99999999999999999999s"],
        "--split-at",
        "too long",
    );
    refused(
        &["replay", F, "--split-at", "2026-02-31T10:00:00Z"],
        "--split-at",
        "RFC 3339",
    );
    refused(&["replay", F, "--split-at", "@1e30"], "--split-at", "epoch");
}

#[test]
fn compound_and_small_durations_work() {
    let v = replay_json(&abs(), &["--every", "1m30s"]);
    assert_eq!(v["phases"].as_array().map(Vec::len), Some(1));
    let v = replay_json(&abs(), &["--split-at", "2500ms,3s"]);
    assert_eq!(v["phases"].as_array().map(Vec::len), Some(3));
}

#[test]
fn options_after_the_filter_expression() {
    // Trailing filter words, then an option: the option is an option.
    let o = at_repo(&["replay", F, "tcp", "port", "1", "--format", "json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(n(&v["connections"]), 0);
    // The same filter through -f, like tshark.
    let o = at_repo(&["replay", F, "-f", "tcp port 1", "--format", "json"]);
    let w: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["sides"], w["sides"]);
    // And a filter that matches: the whole ledger.
    let all = replay_json(&abs(), &[]);
    let o = at_repo(&["replay", F, "-f", "tcp", "--format", "json"]);
    let w: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(all["sides"], w["sides"]);
    // Words after `--` are filter words.
    let o = at_repo(&["replay", F, "--format", "json", "--", "tcp"]);
    let w: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(all["sides"], w["sides"]);
}

#[test]
fn an_unknown_option_is_an_unknown_option() {
    refused(&["replay", F, "--bogus"], "--bogus", "unexpected argument");
    refused(
        &["replay", F, "tcp", "--bogus"],
        "--bogus",
        "unexpected argument",
    );
}

#[test]
fn frame_type_names_are_checked() {
    refused(
        &["frames", F, "--type", "HEADRES"],
        "HEADRES",
        "unknown frame type",
    );
    let o = at_repo(&["frames", F, "--type", "ping_ack", "--format", "jsonl"]);
    assert!(o.status.success());
    assert_eq!(
        records(&o.stdout, "frame").len(),
        83 + 87,
        "PING ACKs of both sides"
    );
}

fn abs() -> String {
    capture("grpcgo-article.pcap").display().to_string()
}
