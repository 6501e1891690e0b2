//! Differential test against Wireshark's dissector, computed now: for every capture tshark
//! decodes completely, scripts/tshark-ledger.py (tshark + a few lines of aggregation) and
//! h2ledger must give the same ledger. Skipped, saying so, when tshark is not installed.

use std::process::Command;

use serde_json::Value;

use crate::util::*;

/// Captures tshark decodes completely (midframe, midconn-trailers-ipv6 and snaplen-cut it
/// cannot: they have their own tests in golden.rs), with the port from captures/manifest.json.
/// The flag says "an h2c upgrade capture" (`"upgrade": true`: tshark-ledger.py --upgrade).
fn captures() -> Vec<(String, u16, bool)> {
    let manifest = read_json(&capture("manifest.json"));
    let skip = ["midframe", "midconn-trailers-ipv6", "snaplen-cut"];
    manifest
        .as_object()
        .unwrap()
        .iter()
        .filter(|(name, _)| !skip.contains(&name.as_str()))
        .map(|(_, m)| {
            (
                m["file"].as_str().unwrap().to_string(),
                n(&m["port"]) as u16,
                m["upgrade"] == true,
            )
        })
        .collect()
}

fn tshark_ledger(file: &str, port: u16, upgrade: bool) -> Value {
    let out = Command::new("python3")
        .arg(repo().join("scripts/tshark-ledger.py"))
        .arg(file)
        .args(["--port", &port.to_string()])
        .args(upgrade.then_some("--upgrade"))
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "tshark-ledger.py {file}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("tshark-ledger.py prints JSON")
}

#[test]
fn every_capture_equals_wireshark() {
    if !have("tshark") {
        crate::util::skipped(
            "SKIPPED: tshark is not installed (apt-get install tshark); CI installs it",
        );
        return;
    }
    for (name, port, upgrade) in captures() {
        let file = capture(&name);
        let file = file.to_str().unwrap();
        let reference = tshark_ledger(file, port, upgrade);
        let ours = replay_json(file, &[]);
        assert_ledger_eq(&format!("{name} vs tshark"), &reference, &ours);
    }
}

/// The golden files still are what tshark says (so a regenerated capture without a
/// regenerated reference is caught).
#[test]
fn golden_files_are_current() {
    if !have("tshark") {
        crate::util::skipped("SKIPPED: tshark is not installed");
        return;
    }
    for (name, port, upgrade) in captures() {
        let file = capture(&name);
        let reference = tshark_ledger(file.to_str().unwrap(), port, upgrade);
        let stem = name.trim_end_matches(".pcapng").trim_end_matches(".pcap");
        let golden = read_json(&capture(&format!("{stem}.tshark.json")));
        assert_ledger_eq(
            &format!("{name}: golden file vs tshark now"),
            &golden,
            &reference,
        );
    }
}
