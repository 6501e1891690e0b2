//! Issue 38, point 3: `calls -Y` and `frames -Y` select exactly what jq's `select(...)` of the
//! same test selects from `-T jsonl`, on every capture in captures/; `-T csv` holds the same
//! records as the JSON lines, flattened; a bad filter is exit 2 with the column and a caret.
//!
//! jq runs once per capture and view, on every expression at once (`[(E1), (E2), ...]` per
//! record); h2ledger runs once per capture and expression. The captures are shared among a
//! few threads.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::util::*;

/// `calls` filters and jq's test of the same, on a call's JSON line.
const CALLS: &[(&str, &str)] = &[
    (
        "grpc.status != 0",
        ".grpc_status != null and .grpc_status != 0",
    ),
    ("grpc_status == 0", ".grpc_status == 0"),
    (
        "call.duration > 10ms",
        ".duration_us != null and .duration_us > 10000",
    ),
    (
        "call.duration <= 250us or not duration",
        "(.duration_us != null and .duration_us <= 250) or \
         ((.duration_us != null and .duration_us != 0) | not)",
    ),
    (
        "path contains \"Health\"",
        ".method != null and (.method | contains(\"Health\"))",
    ),
    ("conn == 1", ".conn == 1"),
    (
        "conn in {0, 2} && http2.streamid > 100",
        "(.conn == 0 or .conn == 2) and .stream > 100",
    ),
    (
        "http2.headers.status == 200 and http_method == \"GET\"",
        ".http_status == 200 and .http_method == \"GET\"",
    ),
    ("path == \"/big\"", ".method == \"/big\""),
    ("reset", ".reset == true"),
    (
        "reset_code == \"CANCEL\" || reset_by == \"client\"",
        ".reset_code == \"CANCEL\" or .reset_by == \"client\"",
    ),
    (
        "!(stream < 10) and first_byte > 1ms",
        "(.stream < 10 | not) and .first_byte_us != null and .first_byte_us > 1000",
    ),
    (
        "path matches \"^/grpc\\\\.HEALTH\"",
        ".method != null and (.method | test(\"^/grpc\\\\.HEALTH\"; \"i\"))",
    ),
    (
        "messages.server > 1 or stalls.client or stalls.server",
        "(.messages.server != null and .messages.server > 1) or .stalls.client != 0 or \
         .stalls.server != 0",
    ),
    (
        "grpc_message",
        ".grpc_message != null and .grpc_message != \"\"",
    ),
    (
        "in_flight_at_start >= 3 and opened_bdp_round.client == true",
        ".in_flight_at_start >= 3 and .opened_bdp_round.client == true",
    ),
    (
        "ping_rtt < 100us",
        ".ping_rtt_us != null and .ping_rtt_us < 100",
    ),
    (
        "frames.server.DATA > 1 && message_bytes.server >= 1000",
        ".frames.server.DATA > 1 and .message_bytes.server != null and \
         .message_bytes.server >= 1000",
    ),
];

/// `frames` filters and jq's test of the same, on a frame's JSON line.
const FRAMES: &[(&str, &str)] = &[
    ("http2.type == 3", ".type == \"RST_STREAM\""),
    (
        "http2.type == 6 && http2.flags.ack.ping",
        ".type == \"PING\" and (.flag_names | index(\"ACK\")) != null",
    ),
    (
        "http2.flags.end_stream",
        "(.flag_names | index(\"END_STREAM\")) != null",
    ),
    ("http2.flags & 0x4", "(.flags / 4 | floor) % 2 == 1"),
    (
        "stream == 1 and side == \"server\"",
        ".stream == 1 and .side == \"server\"",
    ),
    (
        "length > 1000 || type == \"WINDOW_UPDATE\" and increment >= 65535",
        ".length > 1000 or (.type == \"WINDOW_UPDATE\" and .increment != null and \
         .increment >= 65535)",
    ),
    (
        "http2.rst_stream.error == 8",
        ".type == \"RST_STREAM\" and .error == \"CANCEL\"",
    ),
    (
        "http2.goaway.error == 0 or http2.goaway.last_stream_id > 0",
        "(.type == \"GOAWAY\" and .error == \"NO_ERROR\") or \
         (.last_stream_id != null and .last_stream_id > 0)",
    ),
    ("class == \"TRAILERS\"", ".class == \"TRAILERS\""),
    (
        "ping_label contains \"bdp\"",
        ".ping_label != null and (.ping_label | contains(\"bdp\"))",
    ),
    ("not flag_names", ".flag_names | length == 0"),
    (
        "write > 10 and conn != 0",
        ".write != null and .write > 10 and .conn != 0",
    ),
    ("dst contains \"::1\"", ".dst | contains(\"::1\")"),
    (
        "flag_names contains \"PADDED\"",
        ".flag_names | map(contains(\"PADDED\")) | any",
    ),
    ("debug", ".debug != null and .debug != \"\""),
];

/// Every capture in captures/ (and its subdirectories), with `--keylog` when a key log of the
/// same name is beside it.
pub(crate) fn all_captures() -> Vec<(PathBuf, Vec<String>)> {
    let mut out = Vec::new();
    let mut dirs = vec![repo().join("captures")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
                continue;
            }
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with(".pcap") || name.ends_with(".pcapng") {
                let key = p.with_extension("keylog");
                let extra = if key.exists() {
                    vec!["--keylog".into(), key.to_string_lossy().into_owned()]
                } else {
                    Vec::new()
                };
                out.push((p, extra));
            }
        }
    }
    out.sort();
    out
}

/// `h2ledger VIEW FILE EXTRA ARGS`: the record lines of its stdout (the summary left out).
fn lines(view: &str, file: &PathBuf, extra: &[String], args: &[&str]) -> Vec<String> {
    let out = Command::new(bin())
        .arg(view)
        .arg(file)
        .args(extra)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "{view} {} {args:?}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.contains("\"record\":\"summary\""))
        .map(str::to_string)
        .collect()
}

/// jq's answers: for each line, whether each test selects it.
fn jq(lines: &[String], tests: &[(&str, &str)]) -> Vec<Vec<bool>> {
    let program = format!(
        "[{}]",
        tests
            .iter()
            .map(|(_, j)| format!("(({j}) == true)"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut child = Command::new("jq")
        .args(["-c", &program])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = lines.join("\n");
    input.push('\n');
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success(), "jq {program}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Vec<bool>>(l).unwrap())
        .collect()
}

/// For each capture and test: h2ledger's lines with `-Y` equal the lines jq selects.
/// Returns, per test, the records selected and the records in all.
fn equal_to_jq(view: &str, tests: &[(&str, &str)]) -> Vec<(usize, usize)> {
    let captures = all_captures();
    assert!(captures.len() > 50, "{} captures", captures.len());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let totals = std::sync::Mutex::new(vec![(0usize, 0usize); tests.len()]);
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((file, extra)) = captures.get(i) else {
                    break;
                };
                let all = lines(view, file, extra, &["-T", "jsonl"]);
                let answers = jq(&all, tests);
                assert_eq!(answers.len(), all.len(), "{}", file.display());
                for (t, (expr, _)) in tests.iter().enumerate() {
                    let want: Vec<&String> = all
                        .iter()
                        .zip(&answers)
                        .filter(|(_, a)| a[t])
                        .map(|(l, _)| l)
                        .collect();
                    let got = lines(view, file, extra, &["-T", "jsonl", "-Y", expr]);
                    assert_eq!(
                        got.len(),
                        want.len(),
                        "{view} {} -Y '{expr}': {} records, jq selects {}",
                        file.display(),
                        got.len(),
                        want.len()
                    );
                    for (g, w) in got.iter().zip(&want) {
                        assert_eq!(g, *w, "{view} {} -Y '{expr}'", file.display());
                    }
                    let mut tot = totals.lock().unwrap();
                    tot[t].0 += got.len();
                    tot[t].1 += all.len();
                }
            });
        }
    });
    totals.into_inner().unwrap()
}

fn jq_or_skip() -> bool {
    if have("jq") {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "jq is not installed: apt-get install jq (the justfile's test_pkgs has it)"
    );
    eprintln!("SKIPPED: jq is not installed (apt-get install jq); CI installs it");
    false
}

/// Each test selected something somewhere and not everything: it could have failed.
fn report(view: &str, tests: &[(&str, &str)], totals: &[(usize, usize)]) {
    for ((expr, _), (sel, all)) in tests.iter().zip(totals) {
        eprintln!("{view} -Y '{expr}': {sel} of {all} records, as jq");
        assert!(
            *sel > 0 && sel < all,
            "{view} -Y '{expr}' selects {sel} of {all}"
        );
    }
}

#[test]
fn calls_filter_equals_jq_on_every_capture() {
    if !jq_or_skip() {
        return;
    }
    let t = equal_to_jq("calls", CALLS);
    report("calls", CALLS, &t);
}

#[test]
fn frames_filter_equals_jq_on_every_capture() {
    if !jq_or_skip() {
        return;
    }
    let t = equal_to_jq("frames", FRAMES);
    report("frames", FRAMES, &t);
}

/// A bad filter: exit 2, one line naming the column, then the expression and a caret under it.
#[test]
fn a_bad_filter_names_its_column() {
    let file = capture("grpcgo-article.pcap");
    let f = file.to_str().unwrap();
    let out = run(&["calls", f, "-Y", "grpc.status != 0 and conn == and"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.trim_end(),
        "h2ledger: -Y: column 30: \"and\" was unexpected here: conn is compared with a number \
         (42, 1.5, 0x1f)\n    grpc.status != 0 and conn == and\n                                 ^~~"
    );
    assert!(out.stdout.is_empty());
    let out = run(&["frames", f, "--display-filter", "http2.tpye == 3"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("\"http2.tpye\" is not a field of frames; did you mean http2.type"),
        "{err}"
    );
    // replay's tables are totals (decision 310): its -Y says where the filter applies.
    let out = run(&["replay", f, "-Y", "conn == 0"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`h2ledger calls -Y` or `frames -Y`"), "{err}");
}

/// `-T csv`: the header is the JSON lines' keys, flattened; every line's cells are the JSON
/// values; `--format csv` is the same; -Y filters it as it filters the JSON.
#[test]
fn csv_holds_the_json_lines_flattened() {
    for (name, view, expr) in [
        ("grpcgo-article.pcap", "calls", "stream < 100"),
        ("nghttp-nghttpd.pcap", "calls", ""),
        ("findings/grpcgo-slots.pcap", "frames", "http2.type != 0"),
        ("node-padded.pcap", "frames", ""),
        ("curl-upgrade-trailers.pcap", "frames", ""),
    ] {
        let file = capture(name);
        let f = file.to_str().unwrap();
        let json = run(&[view, f, "-T", "jsonl", "-Y", expr]);
        let csv = run(&[view, f, "-T", "csv", "-Y", expr]);
        let long = run(&[view, f, "--format", "csv", "--display-filter", expr]);
        assert!(
            csv.status.success(),
            "{}",
            String::from_utf8_lossy(&csv.stderr)
        );
        assert_eq!(csv.stdout, long.stdout);
        let records = records(&json.stdout, view.trim_end_matches('s'));
        let text = String::from_utf8(csv.stdout).unwrap();
        let rows = parse_csv(&text);
        let header = &rows[0];
        assert_eq!(rows.len() - 1, records.len(), "{name}");
        assert!(records.len() > 3, "{name}");
        // Every key of every record is a column (an object that is null, `compressed` of a
        // call that is not gRPC, has its keys' columns, empty).
        for r in &records {
            let mut keys = Vec::new();
            flatten("", r, &mut keys);
            for k in keys {
                let nested = format!("{k}.");
                assert!(
                    header.contains(&k) || header.iter().any(|c| c.starts_with(&nested)),
                    "{name}: key {k} has no column"
                );
            }
        }
        for (row, r) in rows[1..].iter().zip(&records) {
            assert_eq!(row.len(), header.len());
            for (col, cell) in header.iter().zip(row) {
                let mut v = r;
                for part in col.split('.') {
                    v = &v[part];
                }
                let want = match v {
                    Value::Null => String::new(),
                    Value::String(s) => printable(s),
                    Value::Array(a) if a.iter().all(Value::is_string) => a
                        .iter()
                        .map(|s| printable(s.as_str().unwrap()))
                        .collect::<Vec<_>>()
                        .join("|"),
                    other => printable(&other.to_string()),
                };
                assert_eq!(cell, &want, "{name} {col}");
            }
        }
    }
}

/// Control characters as `\xNN`, as the CSV writes them.
fn printable(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() && (c as u32) < 0x100 {
                format!("\\x{:02x}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Leaf keys of a record as `a.b` (lists are leaves).
fn flatten(prefix: &str, v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) if !prefix.is_empty() || !m.is_empty() => {
            for (k, x) in m {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                match x {
                    Value::Object(_) => flatten(&p, x, out),
                    _ => out.push(p),
                }
            }
        }
        _ => out.push(prefix.to_string()),
    }
}

/// RFC 4180: rows of cells; a quoted cell may hold commas, doubled quotes and line breaks.
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut cell = String::new();
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                cell.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => cell.push(c),
            (false, '"') if cell.is_empty() => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut cell)),
            (false, '\n') => {
                row.push(std::mem::take(&mut cell));
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => cell.push(c),
        }
    }
    assert!(
        row.is_empty() && cell.is_empty(),
        "the CSV ends with a line break"
    );
    rows
}

/// jq's reading of a field alone: present and not zero, not empty, not false.
const TRUTHY: &str = "def truthy: if . == null then false elif type == \"boolean\" then . \
elif type == \"number\" then . != 0 elif type == \"string\" then . != \"\" \
elif type == \"array\" then length > 0 else true end;";

/// Every field the filter knows (`View::fields`, aliases included) reads the JSON key it
/// names: alone, and compared with == to a value a record has, it selects what jq selects,
/// on captures that give most keys a value (gRPC with compression, padding, trailers, resets,
/// IPv6, TLS).
#[test]
fn every_field_reads_its_json_key() {
    use h2ledger_filter::{Src, Ty, View};
    if !jq_or_skip() {
        return;
    }
    let picked = [
        "grpcgo-article.pcap",
        "proto-grpcio-gzip.pcap",
        "node-padded.pcap",
        "curl-upgrade-trailers.pcap",
        "findings/rapid-reset-nghttpd.pcap",
        "curl-nghttpd-tls13.pcap",
    ];
    for (view, v) in [("calls", View::Calls), ("frames", View::Frames)] {
        let tested = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|sc| {
            for name in picked {
                let tested = &tested;
                sc.spawn(move || {
                    let file = capture(name);
                    let key = file.with_extension("keylog");
                    let extra: Vec<String> = if key.exists() {
                        vec!["--keylog".into(), key.to_string_lossy().into_owned()]
                    } else {
                        Vec::new()
                    };
                    let all = lines(view, &file, &extra, &["-T", "jsonl"]);
                    let records: Vec<Value> = all
                        .iter()
                        .map(|l| serde_json::from_str(l).unwrap())
                        .collect();
                    // (filter, jq test) of each field: alone, then == a value some record has.
                    let mut tests: Vec<(String, String)> = Vec::new();
                    for f in v.fields() {
                        let Src::Key(k) = f.src else {
                            continue;
                        };
                        let path: String = k.split('.').map(|p| format!(".{p}")).collect();
                        tests.push((f.name.to_string(), format!("{TRUTHY} ({path} | truthy)")));
                        let value = records.iter().find_map(|r| {
                            let mut x = r;
                            for p in k.split('.') {
                                x = &x[p];
                            }
                            (!x.is_null()).then(|| x.clone())
                        });
                        let Some(value) = value else {
                            continue;
                        };
                        let lit = match (f.ty, &value) {
                            (Ty::Num, Value::Number(n)) => n.to_string(),
                            (Ty::Dur { bare }, Value::Number(n)) => {
                                format!("{n}{}", if bare { "" } else { "us" })
                            }
                            (Ty::Bool, Value::Bool(b)) => b.to_string(),
                            (Ty::Str, Value::String(s)) if !s.chars().any(char::is_control) => {
                                format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
                            }
                            _ => continue,
                        };
                        tests.push((format!("{} == {lit}", f.name), format!("{path} == {value}")));
                    }
                    let refs: Vec<(&str, &str)> = tests
                        .iter()
                        .map(|(a, b)| (a.as_str(), b.as_str()))
                        .collect();
                    let answers = jq(&all, &refs);
                    for (t, (expr, _)) in refs.iter().enumerate() {
                        let want: Vec<&String> = all
                            .iter()
                            .zip(&answers)
                            .filter(|(_, a)| a[t])
                            .map(|(l, _)| l)
                            .collect();
                        let got = lines(view, &file, &extra, &["-T", "jsonl", "-Y", expr]);
                        assert_eq!(got.len(), want.len(), "{view} {name} -Y '{expr}'");
                        assert!(
                            got.iter().zip(&want).all(|(g, w)| g == *w),
                            "{view} {name} -Y '{expr}'"
                        );
                        tested.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                });
            }
        });
        let tested = tested.into_inner();
        eprintln!("{view}: {tested} field tests equal to jq");
        assert!(tested > v.fields().len());
    }
}
