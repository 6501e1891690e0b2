//! Findings (issue 21) on real captures: every id where it must fire and where it must not
//! (captures/findings/ from scripts/make-findings-captures.sh: real servers' reactions to
//! attack patterns, real grpc-go keepalive and stream-slot runs; and the ordinary captures);
//! no abuse id on any ordinary capture of captures/ or ../shared/real-captures; each attack
//! capture raises its own ids and no other abuse id; the JSON line, the table and --fail-on.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util::{read_json, repo, run};

/// The findings of `h2ledger replay FILE -T json ARGS...` (the command must succeed).
fn findings(file: &Path, extra: &[&str]) -> Vec<Value> {
    let f = file.to_string_lossy();
    let mut args = vec!["replay", &f, "-T", "json"];
    args.extend_from_slice(extra);
    let out = run(&args);
    assert!(
        out.status.success(),
        "h2ledger {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["findings"]
        .as_array()
        .unwrap_or_else(|| panic!("{f}: no findings array"))
        .clone()
}

fn ids(fs: &[Value]) -> Vec<String> {
    let mut v: Vec<String> = fs
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect();
    v.sort();
    v.dedup();
    v
}

fn finding<'a>(fs: &'a [Value], id: &str) -> Option<&'a Value> {
    fs.iter().find(|f| f["id"] == id)
}

/// Ids of failed calls that ordinary captures (captures/*.pcap, ../shared/real-captures) must
/// not raise: their calls succeed (`call-errors` does fire on a few, by design:
/// docs/findings.md).
const QUIET_ON_ORDINARY: [&str; 6] = [
    "method-errors",
    "method-errors-rise",
    "deadline-exceeded",
    "cancel-storm",
    "slow-calls",
    "goaway-retries",
];

/// The abuse ids (none may fire on ordinary traffic).
const ABUSE: [&str; 12] = [
    "rapid-reset",
    "made-you-reset",
    "continuation-flood",
    "ping-flood",
    "settings-flood",
    "reset-flood",
    "empty-frames-flood",
    "priority-flood",
    "window-update-flood",
    "zero-window",
    "hpack-bomb",
    "too-many-pings",
];

fn found(name: &str) -> PathBuf {
    repo()
        .join("captures/findings")
        .join(format!("{name}.pcap"))
}

fn ordinary(name: &str) -> PathBuf {
    repo().join("captures").join(name)
}

fn shared(name: &str) -> Option<PathBuf> {
    let p = repo().join("../shared/real-captures").join(name);
    p.exists().then_some(p)
}

/// `id` fires on `yes` and not on `no` (each with its extra flags).
fn fires(id: &str, yes: &[(PathBuf, &[&str])], no: &[(PathBuf, &[&str])]) {
    for (f, extra) in yes {
        let fs = findings(f, extra);
        let x = finding(&fs, id)
            .unwrap_or_else(|| panic!("{id} must fire on {}: {:?}", f.display(), ids(&fs)));
        assert!(x["count"].as_u64().unwrap() > 0, "{x:#}");
        for key in ["title", "rule", "advice"] {
            assert!(!x[key].as_str().unwrap().is_empty(), "{key}: {x:#}");
        }
        assert!(x["first"].as_f64().unwrap() <= x["last"].as_f64().unwrap());
    }
    for (f, extra) in no {
        let fs = findings(f, extra);
        assert!(
            finding(&fs, id).is_none(),
            "{id} must not fire on {}: {:#?}",
            f.display(),
            finding(&fs, id)
        );
    }
}

const NONE: &[&str] = &[];

#[test]
fn bdp_ping_per_call() {
    fires(
        "bdp-ping-per-call",
        &[(ordinary("grpcgo-article.pcap"), NONE)],
        &[
            (ordinary("grpcgo-flow-static.pcap"), NONE),
            (ordinary("tonic-adaptive.pcap"), NONE),
        ],
    );
    let fs = findings(&ordinary("grpcgo-article.pcap"), &[]);
    let f = finding(&fs, "bdp-ping-per-call").unwrap();
    assert_eq!(f["evidence"]["calls"], 144);
    assert!(f["advice"]
        .as_str()
        .unwrap()
        .contains("WithInitialWindowSize"));
}

#[test]
fn keepalive_strikes() {
    fires(
        "keepalive-strikes",
        &[(found("grpcgo-keepalive"), NONE)],
        &[
            (ordinary("grpcgo-article.pcap"), NONE),
            (found("grpcgo-slots"), NONE),
            // The server's policy is not on the wire: one that permits 10 s PINGs.
            (
                found("grpcgo-keepalive"),
                &["--keepalive-min-time", "5s", "--permit-without-stream"],
            ),
        ],
    );
    let fs = findings(&found("grpcgo-keepalive"), &[]);
    let k = finding(&fs, "keepalive-strikes").unwrap();
    assert!(
        k["evidence"]["strikes_total"].as_u64().unwrap() >= 3,
        "{k:#}"
    );
    assert!(k["evidence"]["predicted_goaway"].is_number(), "{k:#}");
}

#[test]
fn too_many_pings() {
    fires(
        "too-many-pings",
        &[(found("grpcgo-keepalive"), NONE)],
        &[
            (found("grpcgo-slots"), NONE),
            (ordinary("grpcgo-article.pcap"), NONE),
        ],
    );
    let fs = findings(&found("grpcgo-keepalive"), &[]);
    let t = finding(&fs, "too-many-pings").unwrap();
    // The emulation predicted the GOAWAY the server sent, at the PING before it.
    let k = finding(&fs, "keepalive-strikes").unwrap();
    let predicted = k["evidence"]["predicted_goaway"].as_f64().unwrap();
    let goaway = t["evidence"]["goaway"].as_f64().unwrap();
    assert!(predicted <= goaway && goaway - predicted < 0.1, "{t:#}");
    assert!(t["evidence"]["pings"].as_array().unwrap().len() >= 4);
}

/// An attack capture's findings, against both servers.
fn both(attack: &str) -> Vec<(PathBuf, &'static [&'static str])> {
    vec![
        (found(&format!("{attack}-nghttpd")), NONE),
        (found(&format!("{attack}-goh2c")), NONE),
    ]
}

#[test]
fn rapid_reset() {
    let mut no = both("made-you-reset");
    no.push((ordinary("hyper-h2.pcap"), NONE));
    fires("rapid-reset", &both("rapid-reset"), &no);
}

#[test]
fn made_you_reset() {
    let mut no = both("reset-flood");
    no.extend(both("rapid-reset"));
    fires("made-you-reset", &both("made-you-reset"), &no);
}

#[test]
fn reset_flood() {
    let mut no = both("made-you-reset");
    no.extend(both("empty-frames-flood"));
    fires("reset-flood", &both("reset-flood"), &no);
}

#[test]
fn continuation_flood() {
    let mut no = vec![(ordinary("node-http2.pcap"), NONE)];
    no.extend(shared("sv-http2-continuation.pcap").map(|p| (p, NONE)));
    fires("continuation-flood", &both("continuation-flood"), &no);
}

#[test]
fn ping_flood() {
    fires(
        "ping-flood",
        &both("ping-flood"),
        &[
            (ordinary("grpcgo-article.pcap"), NONE),
            (ordinary("node-http2.pcap"), NONE),
        ],
    );
}

#[test]
fn settings_flood() {
    fires(
        "settings-flood",
        &both("settings-flood"),
        &[
            (ordinary("node-http2.pcap"), NONE),
            (ordinary("hyper-h2.pcap"), NONE),
        ],
    );
}

#[test]
fn empty_frames_flood() {
    fires(
        "empty-frames-flood",
        &both("empty-frames-flood"),
        &[(ordinary("tonic-adaptive.pcap"), NONE)],
    );
}

#[test]
fn priority_flood() {
    let mut no = vec![(ordinary("nghttp-nghttpd.pcap"), NONE)];
    no.extend(shared("sv-doh2-post.pcap").map(|p| (p, NONE)));
    fires("priority-flood", &both("priority-flood"), &no);
}

#[test]
fn window_update_flood() {
    fires(
        "window-update-flood",
        &both("window-update-flood"),
        &[
            (ordinary("goh2c-post.pcap"), NONE),
            (ordinary("snaplen-cut.pcap"), NONE),
        ],
    );
}

#[test]
fn zero_window() {
    fires(
        "zero-window",
        &both("zero-window"),
        &[
            (ordinary("tonic-small-window.pcap"), NONE),
            (ordinary("nghttp-window.pcap"), NONE),
        ],
    );
    let fs = findings(&found("zero-window-nghttpd"), &[]);
    let z = finding(&fs, "zero-window").unwrap();
    assert_eq!(z["side"], "client", "the client holds the window");
    assert!(z["evidence"]["held_us_max"].as_u64().unwrap() >= 2_000_000);
}

/// nghttpd, and grpc-go (a Download of 4 x 1 MiB, BDP estimator on), with default windows send
/// 65,535 bytes and wait, both of their windows at 0; the client never sends a WINDOW_UPDATE
/// and closes 5 s later: one stall of about 5 s, never resolved, ended by the close, and
/// `zero-window` on the client (decision 285; before, the stall ended at the last frame: "0 us
/// in all", and no `zero-window`). grpc-go's own WINDOW_UPDATE and BDP PING do not end it.
#[test]
fn a_window_held_until_the_close() {
    for name in ["window-held-nghttpd", "window-held-grpcgo"] {
        let fs = findings(&found(name), &[]);
        let s = finding(&fs, "flow-stall").expect("flow-stall");
        assert_eq!(s["side"], "server", "{name}: {s:#}");
        assert_eq!(s["evidence"]["stalls"], 1, "{name}: {s:#}");
        assert_eq!(s["evidence"]["unresolved"], 1, "{name}: {s:#}");
        let waited = s["evidence"]["waited_us_total"].as_u64().unwrap();
        assert!((4_900_000..5_200_000).contains(&waited), "{name}: {s:#}");
        assert!(
            s["title"].as_str().unwrap().contains("1 never got one"),
            "{name}: {s:#}"
        );
        let z = finding(&fs, "zero-window").expect("zero-window");
        assert_eq!(
            z["side"], "client",
            "{name}: the client holds the window: {z:#}"
        );
        assert_eq!(z["severity"], "warn");
        let held = z["evidence"]["held_us_max"].as_u64().unwrap();
        assert!((4_900_000..5_200_000).contains(&held), "{name}: {z:#}");
    }
}

#[test]
fn hpack_bomb() {
    fires(
        "hpack-bomb",
        &both("hpack-bomb"),
        &[(ordinary("node-http2.pcap"), NONE)],
    );
    let fs = findings(&found("hpack-bomb-goh2c"), &[]);
    let b = finding(&fs, "hpack-bomb").unwrap();
    assert!(
        b["evidence"]["amplification"].as_f64().unwrap() > 1000.0,
        "{b:#}"
    );
}

#[test]
fn stream_slots_full() {
    fires(
        "stream-slots-full",
        &[
            (found("grpcgo-slots"), NONE),
            (found("refused-stream-nghttpd"), NONE),
        ],
        &[
            (ordinary("nghttp-nghttpd.pcap"), NONE),
            (found("grpcgo-keepalive"), NONE),
        ],
    );
    let fs = findings(&found("grpcgo-slots"), &[]);
    let s = finding(&fs, "stream-slots-full").unwrap();
    assert_eq!(s["evidence"]["max_concurrent_streams"], 2);
    assert!(s["evidence"]["waited"].as_u64().unwrap() >= 10, "{s:#}");
    assert_eq!(s["evidence"]["over_limit"], 0, "grpc-go waits for a slot");
}

#[test]
fn refused_stream() {
    fires(
        "refused-stream",
        &[(found("refused-stream-nghttpd"), NONE)],
        &[(found("grpcgo-slots"), NONE)],
    );
    let fs = findings(&found("refused-stream-nghttpd"), &[]);
    assert_eq!(
        finding(&fs, "refused-stream").unwrap()["evidence"]["refused"],
        12
    );
}

#[test]
fn flow_stall() {
    fires(
        "flow-stall",
        &[(ordinary("nghttp-window.pcap"), NONE)],
        &[(ordinary("tonic-fixed.pcap"), NONE)],
    );
    // The same with the analysis' own tracker.
    let fs = findings(&ordinary("nghttp-window.pcap"), &["--analyze"]);
    let f = finding(&fs, "flow-stall").unwrap();
    assert_eq!(f["severity"], "info");
    assert!(f["evidence"]["needed_window"].as_u64().unwrap() > 16_383);
}

#[test]
fn mid_stream() {
    fires(
        "mid-stream",
        &[(ordinary("midconn.pcap"), NONE)],
        &[(ordinary("grpcgo-article.pcap"), NONE)],
    );
}

#[test]
fn tls_no_keys() {
    let cap = ordinary("curl-nghttpd-tls13.pcap");
    let keylog = ordinary("curl-nghttpd-tls13.keylog");
    let k = keylog.to_string_lossy().into_owned();
    fires(
        "tls-no-keys",
        &[(cap.clone(), NONE)],
        &[(cap, &["--keylog", &k][..])],
    );
}

#[test]
fn reassembly_gaps() {
    fires(
        "reassembly-gaps",
        &[(ordinary("snaplen-cut.pcap"), NONE)],
        &[(ordinary("snaplen-cut.full.pcap"), NONE)],
    );
}

/// Every ordinary capture (captures/*.pcap* and ../shared/real-captures, TLS ones with their
/// key logs) raises no abuse id: h2load bursts, CONTINUATION-split headers, Node's custom
/// PINGs, grpc-go's BDP PINGs, browsers' PRIORITY trees, snaplen-cut and mid-stream captures.
#[test]
fn no_abuse_on_ordinary_captures() {
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in [
        repo().join("captures"),
        repo().join("../shared/real-captures"),
        repo().join("../shared/real-captures/tls"),
    ] {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            eprintln!("skipped: {} is absent", dir.display());
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with(".pcap") || name.ends_with(".pcapng") {
                files.push(p);
            }
        }
    }
    files.sort();
    assert!(files.len() >= 35, "{}", files.len());
    for f in &files {
        let keylog = f.with_extension("keylog");
        let k = keylog.to_string_lossy().into_owned();
        let extra: Vec<&str> = if keylog.exists() {
            vec!["--keylog", &k]
        } else {
            vec![]
        };
        for analyze in [false, true] {
            let mut extra = extra.clone();
            if analyze {
                extra.push("--analyze");
            }
            let fs = findings(f, &extra);
            let abuse: Vec<String> = ids(&fs)
                .into_iter()
                .filter(|i| ABUSE.contains(&i.as_str()))
                .collect();
            assert!(abuse.is_empty(), "{} {extra:?}: {abuse:?}", f.display());
            // The failure and latency ids of issue 38 (decision 360): none on ordinary
            // traffic either.
            let failure: Vec<String> = ids(&fs)
                .into_iter()
                .filter(|i| QUIET_ON_ORDINARY.contains(&i.as_str()))
                .collect();
            assert!(failure.is_empty(), "{} {extra:?}: {failure:?}", f.display());
        }
    }
}

/// Each capture of captures/findings/manifest.json raises the ids it was made for, and no
/// other abuse id (the patterns do not bleed into each other).
#[test]
fn each_attack_capture_raises_its_own_ids_only() {
    let m = read_json(&repo().join("captures/findings/manifest.json"));
    let m = m.as_object().unwrap();
    assert!(m.len() >= 25, "{}", m.len());
    for (name, e) in m {
        let fs = findings(&found(name), &[]);
        let got = ids(&fs);
        let want: Vec<String> = e["fires"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap().to_string())
            .collect();
        for w in &want {
            assert!(got.contains(w), "{name}: {w} must fire: {got:?}");
        }
        for g in &got {
            if ABUSE.contains(&g.as_str()) {
                assert!(want.contains(g), "{name}: {g} must not fire: {got:?}");
            }
        }
    }
}

/// `-T jsonl`: a `finding` record as it fires, before the summary (which lists it too).
#[test]
fn a_finding_line_comes_before_the_summary() {
    let f = found("rapid-reset-nghttpd");
    let out = run(&["replay", &f.to_string_lossy(), "-T", "jsonl"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // (call-errors fires first, at the first cancel; rapid-reset once the budget is spent.)
    let first = lines
        .iter()
        .position(|l| l["type"] == "finding" && l["id"] == "rapid-reset")
        .expect("a rapid-reset finding line");
    assert_eq!(lines[first]["record"], "finding");
    assert!(first < lines.len() - 1);
    let last = lines.last().unwrap();
    assert_eq!(last["type"], "summary");
    assert!(finding(last["findings"].as_array().unwrap(), "rapid-reset").is_some());
}

/// The table lists the findings first, most severe first, within 100 columns: each on as many
/// lines as it needs (its title, evidence, rule and advice indented), one line each with `-q`,
/// and with `-v` every one with when it was seen (issue 38).
#[test]
fn the_table_lists_findings_first() {
    let f = found("grpcgo-slots");
    let out = run(&["replay", &f.to_string_lossy()]);
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("findings: "))
        .expect("a findings block");
    let table = lines.iter().position(|l| l.starts_with('┌')).unwrap();
    assert!(at < table, "{text}");
    assert!(lines[at].starts_with("findings: 3 warn ("), "{text}");
    assert!(
        lines[at + 1].contains("warn") && lines[at + 1].contains("conn 0"),
        "{text}"
    );
    let block = &lines[at + 1..table];
    // Each finding: its head line, then indented lines with its evidence, rule and advice.
    let heads: Vec<&&str> = block.iter().filter(|l| l.starts_with("  warn")).collect();
    assert_eq!(heads.len(), 3, "{text}");
    assert!(
        heads.iter().any(|h| h.contains("stream-slots-full")),
        "{text}"
    );
    for key in ["evidence: ", "rule: ", "advice: "] {
        assert_eq!(
            block
                .iter()
                .filter(|l| l.starts_with(&format!("    {key}")))
                .count(),
            3,
            "{key}: {text}"
        );
    }
    // Nothing cut: the advice of the JSON is all there, word for word.
    let json = findings(&f, &[]);
    let words = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    let all = words(&block.join(" "));
    for x in &json {
        let advice = words(x["advice"].as_str().unwrap());
        assert!(
            all.windows(advice.len()).any(|w| w == advice.as_slice()),
            "{advice:?} not in {text}"
        );
    }
    assert_eq!(crate::util::too_wide(&text), None, "{text}");

    let quiet = String::from_utf8(run(&["replay", &f.to_string_lossy(), "-q"]).stdout).unwrap();
    let q: Vec<&str> = quiet.lines().collect();
    let at = q.iter().position(|l| l.starts_with("findings: ")).unwrap();
    assert!(
        q[at + 1..at + 4].iter().all(|l| l.starts_with("  warn")),
        "{quiet}"
    );
    assert!(q[at + 4].starts_with('┌'), "{quiet}");
    assert_eq!(crate::util::too_wide(&quiet), None, "{quiet}");

    let loud = String::from_utf8(run(&["replay", &f.to_string_lossy(), "-v"]).stdout).unwrap();
    assert_eq!(
        loud.lines()
            .filter(|l| l.starts_with("    seen: ") && l.contains("after the first packet"))
            .count(),
        3,
        "{loud}"
    );
    assert_eq!(crate::util::too_wide(&loud), None, "{loud}");
}

/// `h2ledger explain ID`: every id has its rule, source and advice, within 100 columns, and a
/// section in docs/findings.md; an unknown id is a one-line error (exit 2).
#[test]
fn explain_every_id() {
    let list = run(&["explain"]);
    assert!(list.status.success());
    let list = String::from_utf8(list.stdout).unwrap();
    let docs = std::fs::read_to_string(repo().join("docs/findings.md")).unwrap();
    let ids: Vec<&str> = list
        .lines()
        .filter(|l| !l.starts_with(' '))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert!(ids.len() >= 21, "{list}");
    for id in &ids {
        let out = run(&["explain", id]);
        assert!(out.status.success(), "{id}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.starts_with(&format!("{id} (")), "{text}");
        for key in [
            "  side: ",
            "  count: ",
            "  rule: ",
            "  source: ",
            "  advice: ",
        ] {
            assert!(
                text.lines().any(|l| l.starts_with(key)),
                "{id}: no {key:?} in {text}"
            );
        }
        assert_eq!(crate::util::too_wide(&text), None, "{text}");
        assert!(
            docs.lines()
                .any(|l| l.starts_with("### ") && l.contains(&format!("{id} ("))),
            "docs/findings.md has no section for {id}"
        );
    }
    assert_eq!(crate::util::too_wide(&list), None, "{list}");
    let bad = run(&["explain", "no-such-id"]);
    assert_eq!(bad.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&bad.stderr).lines().count(), 1);
}

/// `--severity ID=LEVEL` changes a finding's severity in the table, the JSON, the metrics and
/// for `--fail-on`; `--fail-on info` fails on any finding; a bad id or level is one line, exit 2.
#[test]
fn severities_can_be_set() {
    let f = ordinary("nghttp-window.pcap");
    let f = f.to_string_lossy();
    let code = |args: &[&str]| {
        let mut a = vec!["replay", &f];
        a.extend_from_slice(args);
        run(&a).status.code()
    };
    assert_eq!(code(&["--fail-on", "warn"]), Some(0));
    assert_eq!(code(&["--fail-on", "info"]), Some(3));
    assert_eq!(
        code(&["--severity", "flow-stall=warn", "--fail-on", "warn"]),
        Some(3)
    );
    assert_eq!(
        code(&["--severity", "flow-stall=critical", "--fail-on", "critical"]),
        Some(3)
    );
    let json = findings(
        &ordinary("nghttp-window.pcap"),
        &["--severity", "flow-stall=warn"],
    );
    let stall = finding(&json, "flow-stall").expect("a flow-stall");
    assert_eq!(stall["severity"], "warn");
    let page = run(&[
        "replay",
        &f,
        "-T",
        "prometheus",
        "--severity",
        "flow-stall=critical",
    ]);
    let page = String::from_utf8(page.stdout).unwrap();
    assert!(
        page.lines()
            .any(|l| l
                .starts_with("h2ledger_findings_total{id=\"flow-stall\",severity=\"critical\"} ")),
        "{page}"
    );
    for bad in ["flow-stal=warn", "flow-stall=high", "flow-stall"] {
        let out = run(&["replay", &f, "--severity", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("--severity"), "{err}");
    }
}

/// `--fail-on`: exit status 3 when a finding of that severity or worse is present.
#[test]
fn fail_on_exits_3() {
    let status = |f: &Path, sev: &str| {
        run(&["replay", &f.to_string_lossy(), "--fail-on", sev])
            .status
            .code()
    };
    assert_eq!(status(&found("ping-flood-nghttpd"), "critical"), Some(3));
    assert_eq!(status(&ordinary("grpcgo-article.pcap"), "warn"), Some(3));
    assert_eq!(
        status(&ordinary("grpcgo-article.pcap"), "critical"),
        Some(0)
    );
    assert_eq!(status(&ordinary("tonic-fixed.pcap"), "warn"), Some(0));
}

/// A phase lists the findings that held during it.
#[test]
fn phases_list_their_findings() {
    let f = found("grpcgo-keepalive");
    let out = run(&[
        "replay",
        &f.to_string_lossy(),
        "-T",
        "json",
        "--every",
        "10s",
    ]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let phases = v["phases"].as_array().unwrap();
    let with: Vec<bool> = phases
        .iter()
        .map(|p| finding(p["findings"].as_array().unwrap(), "too-many-pings").is_some())
        .collect();
    assert!(
        with.iter().any(|x| *x) && with.iter().any(|x| !*x),
        "{with:?}"
    );
}

/// The frames the findings rest on are the frames Wireshark sees: each findings capture's
/// ledger equals `NAME.tshark.json` (scripts/tshark-ledger.py, made with the capture).
#[test]
fn findings_captures_ledgers_equal_tsharks() {
    let m = read_json(&repo().join("captures/findings/manifest.json"));
    for name in m.as_object().unwrap().keys() {
        let f = found(name);
        let want = read_json(&repo().join(format!("captures/findings/{name}.tshark.json")));
        let got = crate::util::replay_json(&f.to_string_lossy(), &[]);
        crate::util::assert_ledger_eq(name, &want, &got);
    }
}

/// A response header block or trailers that CONTINUATION frames end is one block to every
/// reader (decision 454). grpcgo-bigstatus: grpc-go answers 10 of 11 Checks UNAVAILABLE with a
/// 20,000-byte grpc-message, 5 as Trailers-Only and 5 as trailers after response headers, each
/// status block a HEADERS (16,384 bytes) and a CONTINUATION; big503-goh2c: Go's net/http
/// answers 4 of 5 GETs 503 with a 20,000-byte header, a HEADERS with END_STREAM and its
/// CONTINUATION in the next segment. tshark (port from the manifest): `-Y "http2.type == 9"`
/// 10 and 4 CONTINUATIONs, all the server's. Before, the failure rules read HEADERS and
/// TRAILERS only: no `call-errors`, no `method-errors`; and a 503's call ended at its HEADERS.
#[test]
fn a_status_block_ended_by_continuation_counts() {
    let ev = |name: &str, id: &str| {
        let fs = findings(&found(name), NONE);
        finding(&fs, id).unwrap_or_else(|| panic!("{name}: no {id} in {:?}", ids(&fs)))["evidence"]
            .clone()
    };
    let n = |e: &Value, k: &str| e[k].as_u64().unwrap_or_else(|| panic!("{k}: {e}"));
    let e = ev("grpcgo-bigstatus", "call-errors");
    assert_eq!(
        (n(&e, "grpc_unavailable"), n(&e, "failed"), n(&e, "calls")),
        (10, 10, 11),
        "{e}"
    );
    let e = ev("grpcgo-bigstatus", "method-errors");
    assert_eq!(e["method"], "/grpc.health.v1.Health/Check");
    assert_eq!(
        (
            n(&e, "method_failed"),
            n(&e, "grpc_unavailable"),
            n(&e, "method_calls")
        ),
        (10, 10, 11),
        "{e}"
    );
    let e = ev("big503-goh2c", "call-errors");
    assert_eq!(
        (n(&e, "http_5xx"), n(&e, "failed"), n(&e, "calls")),
        (4, 4, 5),
        "{e}"
    );
    // The analysis reads the same blocks: the statuses per method, and each 503's call ends
    // where its block ends (the CONTINUATION), after its first byte (the HEADERS).
    let v = crate::util::replay_json(&found("grpcgo-bigstatus").to_string_lossy(), &["--analyze"]);
    assert_eq!(
        v["methods"][0]["status"]["grpc-status 14"], 10,
        "{}",
        v["methods"]
    );
    let f = found("big503-goh2c");
    let out = run(&["calls", &f.to_string_lossy(), "-T", "jsonl"]);
    assert!(out.status.success());
    let calls: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|c: &Value| c["http_status"] == 503)
        .collect();
    assert_eq!(calls.len(), 4);
    for c in &calls {
        let (first, whole) = (c["first_byte_us"].as_f64(), c["duration_us"].as_f64());
        assert!(first.unwrap() < whole.unwrap(), "{c}");
    }
}

/// `-T prometheus`: `h2ledger_findings_total{id, severity}` counts the JSON's findings by id
/// (one per id, connection and side; `warn` is labelled `warning`, decision 199).
#[test]
fn findings_total_counts_the_json_findings() {
    for (f, want) in [
        (found("grpcgo-keepalive"), 2),
        (found("refused-stream-nghttpd"), 2),
        (ordinary("grpcgo-article.pcap"), 1),
    ] {
        let fs = findings(&f, &[]);
        let mut by_id = std::collections::BTreeMap::<String, (String, u64)>::new();
        for x in &fs {
            let sev = match x["severity"].as_str().unwrap() {
                "warn" => "warning",
                s => s,
            };
            let e = by_id
                .entry(x["id"].as_str().unwrap().to_string())
                .or_insert((sev.to_string(), 0));
            e.1 += 1;
        }
        assert_eq!(by_id.len(), want, "{}: {by_id:?}", f.display());
        let out = run(&["replay", &f.to_string_lossy(), "-T", "prometheus"]);
        assert!(out.status.success());
        let page = String::from_utf8(out.stdout).unwrap();
        let got: Vec<&str> = page
            .lines()
            .filter(|l| l.starts_with("h2ledger_findings_total{"))
            .collect();
        // Every id has its series (decision 302), at 0 but those filed.
        let explained = run(&["explain"]);
        let every = String::from_utf8(explained.stdout).unwrap();
        let every = every.lines().filter(|l| !l.starts_with(' ')).count();
        assert_eq!(got.len(), every, "{}:\n{}", f.display(), got.join("\n"));
        assert_eq!(
            got.iter().filter(|l| !l.ends_with(" 0")).count(),
            by_id.len(),
            "{}:\n{}",
            f.display(),
            got.join("\n")
        );
        for (id, (sev, n)) in &by_id {
            let line = format!("h2ledger_findings_total{{id=\"{id}\",severity=\"{sev}\"}} {n}");
            assert!(
                got.contains(&line.as_str()),
                "{}: no {line} in\n{}",
                f.display(),
                got.join("\n")
            );
        }
    }
}

/// The failed-call captures of issue 38 (captures/failures/, scripts/make-failure-captures.sh:
/// real grpc-go, nginx and nghttpd): each raises the ids its manifest names, with the counts tshark
/// gives, and their ledgers equal tshark's.
///
/// tshark (port from the manifest): `grpcgo-not-found`: `-Y 'http2.header.name ==
/// "grpc-status" && http2.header.value == "5"'` 10 frames (and 1 with "0");
/// `grpcgo-deadline`: `-Y "http2.type == 3" -e http2.rst_stream.error` 10 x 8 (CANCEL), and the
/// requests carry grpc-timeout (`9999975u`); `nginx-keepalive-requests`: `-Y "http2.type == 7"
/// -e http2.goaway.last_stream_id -e http2.goaway.error` 199 and 0, and 5 client HEADERS on
/// streams above 199; `nghttpd-slots`: 200 client HEADERS (`-Y "http2.type == 1"` on the
/// client's port), the server's SETTINGS MAX_CONCURRENT_STREAMS 2.
#[test]
fn failure_captures_raise_their_ids() {
    let dir = repo().join("captures/failures");
    let m = read_json(&dir.join("manifest.json"));
    let mut seen = 0;
    for (name, entry) in m.as_object().unwrap() {
        let f = dir.join(format!("{name}.pcap"));
        let fs = findings(&f, &[]);
        for id in entry["must_raise"].as_array().unwrap() {
            assert!(
                finding(&fs, id.as_str().unwrap()).is_some(),
                "{name}: no {id} in {:?}",
                ids(&fs)
            );
        }
        for id in ids(&fs) {
            assert!(!ABUSE.contains(&id.as_str()), "{name}: {id}");
        }
        let want = read_json(&dir.join(format!("{name}.tshark.json")));
        let got = crate::util::replay_json(&f.to_string_lossy(), &[]);
        crate::util::assert_ledger_eq(name, &want, &got);
        seen += 1;
    }
    assert_eq!(seen, 9);
    // Each new id fires on its own capture only.
    for (name, id) in [
        ("grpcgo-not-found", "method-errors"),
        ("grpcgo-deadline", "deadline-exceeded"),
        ("grpcgo-cancel", "cancel-storm"),
        ("grpcgo-slow", "slow-calls"),
        ("grpcgo-nginx-retries", "goaway-retries"),
        ("grpcgo-rising", "method-errors-rise"),
    ] {
        for other in m.as_object().unwrap().keys() {
            let fs = findings(&dir.join(format!("{other}.pcap")), &[]);
            assert_eq!(
                finding(&fs, id).is_some(),
                other == name,
                "{other}: {id} in {:?}",
                ids(&fs)
            );
        }
    }
    let ev = |name: &str, id: &str| {
        let fs = findings(&dir.join(format!("{name}.pcap")), &[]);
        finding(&fs, id).unwrap()["evidence"].clone()
    };
    let e = ev("grpcgo-not-found", "call-errors");
    assert_eq!(
        (e["grpc_not_found"].as_u64(), e["calls"].as_u64()),
        (Some(10), Some(11))
    );
    let e = ev("grpcgo-deadline", "call-errors");
    assert_eq!(e["client_cancels"].as_u64(), Some(10));
    assert_eq!(e["client_deadline_cancels"].as_u64(), Some(10));
    // method-errors: grpc-go's health server, 10 of 11 Checks NOT_FOUND.
    let e = ev("grpcgo-not-found", "method-errors");
    assert_eq!(e["method"], "/grpc.health.v1.Health/Check");
    assert_eq!(
        (
            e["method_calls"].as_u64(),
            e["method_failed"].as_u64(),
            e["grpc_not_found"].as_u64()
        ),
        (Some(11), Some(10), Some(10))
    );
    // method-errors-rise: 41 Checks one after another, the first 21 SERVING, then three of
    // four UNAVAILABLE; the windows split by time, so a call or two of either side of the
    // change falls in the other window.
    let e = ev("grpcgo-rising", "method-errors-rise");
    assert_eq!(e["method"], "/grpc.health.v1.Health/Check");
    let share = |k: &str| e[k].as_f64().unwrap();
    assert!(
        share("earlier_failed_share") < 0.1 && share("later_failed_share") > 0.6,
        "{e}"
    );
    assert_eq!(
        (
            e["method_calls"].as_u64(),
            e["earlier_calls"].as_u64().unwrap() + e["later_calls"].as_u64().unwrap()
        ),
        (Some(41), 41)
    );
    let fs = findings(&dir.join("grpcgo-rising.pcap"), &[]);
    assert!(finding(&fs, "method-errors").is_none(), "{:?}", ids(&fs));
    // deadline-exceeded: 10 calls cancelled at their 10 ms grpc-timeout (the first call, with
    // a 10 s deadline, succeeded).
    let e = ev("grpcgo-deadline", "deadline-exceeded");
    assert_eq!(
        (
            e["deadline_calls"].as_u64(),
            e["client_deadline_cancels"].as_u64(),
            e["grpc_timeout_us_min"].as_u64().map(|t| t <= 10_000)
        ),
        (Some(10), Some(10), Some(true))
    );
    // cancel-storm: 20 calls cancelled by the client after 5 ms, no deadline.
    let e = ev("grpcgo-cancel", "cancel-storm");
    assert_eq!(
        (e["cancels_not_at_deadline"].as_u64(), e["calls"].as_u64()),
        (Some(20), Some(21))
    );
    // slow-calls: 4 Checks of 1.1 s behind 2 stream slots; the slowest as its caller waited
    // is the one that first waited for a slot, about as long again.
    let e = ev("grpcgo-slow", "slow-calls");
    assert_eq!(
        (e["slow_calls"].as_u64(), e["calls"].as_u64()),
        (Some(4), Some(4))
    );
    let d = e["duration_us"].as_u64().unwrap();
    let fb = e["first_byte_us"].as_u64().unwrap();
    assert!((1_100_000..1_500_000).contains(&d), "{e}");
    // The handler's 1.1 s is the server's time to first byte; the rest is short.
    assert!(fb >= 1_100_000 && d - fb < 100_000, "{e}");
    assert!(e["slot_wait_us_max"].as_u64().unwrap() >= 1_000_000, "{e}");
    assert_eq!(e["window_wait_us"].as_u64(), Some(0));
    assert!(e["ping_rtts"].as_u64().unwrap() > 0, "{e}");
    // goaway-retries: nginx (keepalive_requests 25) cuts grpc-go's streams above last stream
    // 49 on each connection; grpc-go sends each cut call again on the next connection. Every
    // connection's cut calls are matched, as many retries as cuts.
    let fs = findings(&dir.join("grpcgo-nginx-retries.pcap"), &[]);
    let (mut cut, mut retried, mut n) = (0, 0, 0);
    for f in fs.iter().filter(|f| f["id"] == "goaway-retries") {
        let e = &f["evidence"];
        cut += e["calls_cut"].as_u64().unwrap();
        retried += e["retried"].as_u64().unwrap();
        assert_eq!(
            e["retry_conn"].as_u64(),
            f["conn"].as_u64().map(|c| c + 1),
            "{f}"
        );
        n += 1;
    }
    let streams_cut: u64 = fs
        .iter()
        .filter(|f| f["id"] == "goaway-cut-calls")
        .map(|f| f["evidence"]["streams_cut"].as_u64().unwrap())
        .sum();
    assert!(n >= 2, "{fs:?}");
    assert_eq!((cut, retried), (streams_cut, streams_cut));
    let e = ev("nginx-keepalive-requests", "goaway-cut-calls");
    assert_eq!(e["streams_cut"].as_u64(), Some(5));
    assert_eq!(e["last_stream_id"].as_u64(), Some(199));
    assert_eq!(e["goaway_code"].as_u64(), Some(0));
    // nghttpd -m 2 and h2load -m 50: 200 calls, 2 at a time; every call after the first two
    // waited for a slot (h2load opens two when both of the previous end, in one read).
    let e = ev("nghttpd-slots", "stream-slots-full");
    assert_eq!(e["max_concurrent_streams"].as_u64(), Some(2));
    assert_eq!(e["waited"].as_u64(), Some(198));
    assert_eq!(e["over_limit"].as_u64(), Some(0));
    // The calls table names the status and shows the grpc-message.
    let out = run(&[
        "calls",
        &dir.join("grpcgo-not-found.pcap").to_string_lossy(),
    ]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.matches("NOT_FOUND: unknown s").count(), 10, "{text}");
}
