//! Snapshots (insta) of what a user sees for every golden capture in captures/: the table and
//! the JSON of `replay`, `replay --analyze`, `replay --split-at` (captures whose workload has
//! phases), `calls` (table and jsonl) and the head of `frames --format jsonl`. An output change
//! is then a reviewed diff in tests/it/snapshots/.
//!
//! After an intended output change, rewrite every snapshot in one command and review the diff:
//!
//! ```text
//! INSTA_UPDATE=always cargo test -p h2ledger --test it snap
//! git diff crates/h2ledger/tests/it/snapshots/
//! ```
//!
//! (or `cargo insta test -p h2ledger --test it --accept`, or run the tests and then
//! `cargo insta accept` on the `.snap.new` files they leave). Without INSTA_UPDATE a mismatch
//! fails the test with a diff and leaves `NAME.snap.new` next to the snapshot; with `CI` set,
//! nothing is written.
//!
//! Commands run with the repository root as the working directory and the capture path relative
//! to it (`captures/NAME`), so no output depends on where the checkout is.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::util::{read_json, repo};

/// Lines of stdout kept in a `frames` snapshot, and in a `calls` one; the rest is counted.
const FRAMES_HEAD: usize = 200;
const CALLS_HEAD: usize = 60;

/// The binary the snapshot and doc tests run: `H2LEDGER_TEST_BIN` when set, else the release
/// build when it is at least as new as the debug build cargo just made for this test binary
/// (so a stale release binary is never used), else the debug build.
pub fn fast_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("H2LEDGER_TEST_BIN") {
        return PathBuf::from(bin);
    }
    let debug = PathBuf::from(crate::util::bin());
    let release = debug
        .parent()
        .and_then(Path::parent)
        .map(|target| target.join("release").join("h2ledger"));
    let mtime = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    match (release, mtime(&debug)) {
        (Some(release), Some(debug_time))
            if mtime(&release).is_some_and(|release_time| release_time >= debug_time) =>
        {
            release
        }
        _ => debug,
    }
}

/// Runs `h2ledger ARGS` from the repository root; stdout (its first `cap` lines), then stderr
/// and the exit status when there is anything to say about them.
fn output(args: &[&str], cap: usize) -> String {
    let out = Command::new(fast_bin())
        .args(args)
        .current_dir(repo())
        .output()
        .expect("the h2ledger binary runs");
    let mut text = head(&String::from_utf8_lossy(&out.stdout), cap);
    if !out.status.success() || !out.stderr.is_empty() {
        text.push_str(&format!(
            "--- exit {}, stderr:\n{}",
            out.status
                .code()
                .map_or_else(|| "by signal".to_string(), |c| c.to_string()),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    text
}

/// The first `n` lines, and how many were left out.
fn head(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= n {
        return text.to_string();
    }
    let mut kept = lines[..n].join("\n");
    kept.push_str(&format!("\n... {} more lines\n", lines.len() - n));
    kept
}

/// `--split-at` at the start of every phase after the first, from `NAME.workload.json`
/// (`@epoch` seconds as the workload printed them); None when the workload had one phase.
fn phase_cuts(file: &str) -> Option<String> {
    let stem = file.rsplit_once('.').map_or(file, |(stem, _)| stem);
    let workload = repo()
        .join("captures")
        .join(format!("{stem}.workload.json"));
    if !workload.exists() {
        return None;
    }
    let phases = read_json(&workload)["phases"].as_array()?.clone();
    let cuts: Vec<String> = phases
        .iter()
        .skip(1)
        .map(|p| match &p["start"] {
            Value::Number(start) => format!("@{start}"),
            other => panic!("{stem}.workload.json: phase start {other}"),
        })
        .collect();
    (!cuts.is_empty()).then(|| cuts.join(","))
}

/// Asserts one snapshot, named `CAPTURE__VIEW`, with the command in its header.
fn check(file: &str, view: &str, args: &[&str], text: &str) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("snapshots");
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.set_description(format!("h2ledger {}", args.join(" ")));
    settings.bind(|| insta::assert_snapshot!(format!("{file}__{view}"), text));
}

/// The views, each a test of its own so that one run reports (and, with INSTA_UPDATE=always,
/// rewrites) every snapshot that changed.
fn view(file: &str, view: &str) {
    let path = format!("captures/{file}");
    let cuts = phase_cuts(file);
    let mut args: Vec<&str> = match view {
        "replay" | "replay.json" => vec!["replay", &path],
        "analyze" | "analyze.json" => vec!["replay", &path, "--analyze"],
        "split" | "split.json" => match &cuts {
            Some(cuts) => vec!["replay", &path, "--split-at", cuts],
            None => panic!("{file}: its workload has one phase; its snap! line takes no `phases`"),
        },
        "calls" => vec!["calls", &path],
        "calls.jsonl" => vec!["calls", &path, "--format", "jsonl"],
        "frames.jsonl" => vec!["frames", &path, "--format", "jsonl"],
        _ => unreachable!("{view}"),
    };
    if view.ends_with(".json") {
        args.extend(["--format", "json"]);
    }
    let cap = match view {
        "frames.jsonl" => FRAMES_HEAD,
        "calls" | "calls.jsonl" => CALLS_HEAD,
        _ => usize::MAX,
    };
    check(file, view, &args, &output(&args, cap));
}

/// `snap!(module, "capture file")`: one test per view of the capture; `snap!(module, "capture
/// file", phases)` also the `--split-at` views, for a capture whose workload had phases (a
/// split test of a capture without phases would check nothing: `every_capture_has_snapshots`
/// holds the marker to the workload).
macro_rules! snap {
    (@views $file:literal) => {
        #[test]
        fn replay() {
            super::view($file, "replay");
        }
        #[test]
        fn replay_json() {
            super::view($file, "replay.json");
        }
        #[test]
        fn analyze() {
            super::view($file, "analyze");
        }
        #[test]
        fn analyze_json() {
            super::view($file, "analyze.json");
        }
        #[test]
        fn calls() {
            super::view($file, "calls");
        }
        #[test]
        fn calls_jsonl() {
            super::view($file, "calls.jsonl");
        }
        #[test]
        fn frames_jsonl_head() {
            super::view($file, "frames.jsonl");
        }
    };
    ($name:ident, $file:literal) => {
        mod $name {
            snap!(@views $file);
        }
    };
    ($name:ident, $file:literal, phases) => {
        mod $name {
            snap!(@views $file);
            #[test]
            fn split() {
                super::view($file, "split");
            }
            #[test]
            fn split_json() {
                super::view($file, "split.json");
            }
        }
    };
}

// One line per entry of captures/manifest.json (checked by `every_capture_has_snapshots`).
snap!(grpcgo_article, "grpcgo-article.pcap", phases);
snap!(grpcgo_article_any, "grpcgo-article-any.pcapng", phases);
snap!(grpcgo_article_sll, "grpcgo-article-sll.pcap", phases);
snap!(tonic_adaptive, "tonic-adaptive.pcap", phases);
snap!(tonic_fixed, "tonic-fixed.pcap", phases);
snap!(nghttp_nghttpd, "nghttp-nghttpd.pcap");
snap!(python_grpcio_ipv6, "python-grpcio-ipv6.pcap");
snap!(spanning_mtu1500, "spanning-mtu1500.pcap");
snap!(midconn, "midconn.pcap");
snap!(midconn_trailers_ipv6, "midconn-trailers-ipv6.pcap");
snap!(midframe, "midframe.pcap");
snap!(snaplen_cut, "snaplen-cut.pcap");
snap!(snaplen_cut_full, "snaplen-cut.full.pcap");
snap!(node_http2, "node-http2.pcap");
snap!(go_h2c_curl, "go-h2c-curl.pcap");
snap!(curl_upgrade, "curl-upgrade.pcap");
snap!(curl_upgrade_trailers, "curl-upgrade-trailers.pcap");
snap!(hyper_h2, "hyper-h2.pcap");
snap!(python_grpcio_streaming, "python-grpcio-streaming.pcap");

/// A capture added to captures/manifest.json needs its `snap!` line above, and a snapshot
/// file nobody writes any more is a leftover.
#[test]
fn every_capture_has_snapshots() {
    let manifest = read_json(&repo().join("captures/manifest.json"));
    let source = include_str!("snap.rs");
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/snapshots");
    let mut files = Vec::new();
    for entry in manifest
        .as_object()
        .expect("manifest is an object")
        .values()
    {
        let file = entry["file"].as_str().expect("manifest entry has a file");
        let phased = source.contains(&format!("\"{file}\", phases);"));
        assert!(
            phased || source.contains(&format!("\"{file}\");")),
            "captures/{file} is in captures/manifest.json but has no snap! line in tests/it/snap.rs"
        );
        assert_eq!(
            phased,
            phase_cuts(file).is_some(),
            "captures/{file}: its snap! line takes `phases` exactly when its workload had phases"
        );
        files.push(file.to_string());
    }
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(capture) = name
                .strip_suffix(".snap")
                .and_then(|n| n.split("__").next())
            {
                assert!(
                    files.iter().any(|f| f == capture),
                    "{}: no capture of that name in captures/manifest.json (remove it)",
                    dir.join(&name).display()
                );
            }
        }
    }
}
