//! Issue 20, "what users saw": each point a new user met on our captures and the shared ones,
//! as the user runs it (tables at 100 columns, the JSON next to them).

use std::path::PathBuf;

use serde_json::Value;

use crate::util::{n, records, repo, run};

/// Every capture a user could point h2ledger at: ours, and the shared ones when present.
fn all_captures() -> Vec<PathBuf> {
    let mut v = Vec::new();
    for dir in [
        repo().join("captures"),
        repo().join("../shared/real-captures"),
    ] {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with(".pcap") || name.ends_with(".pcapng") {
                v.push(p);
            }
        }
    }
    v.sort();
    v
}

fn stdout(args: &[&str]) -> String {
    let out = run(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The headline, its lines (wrapped at 100 columns) joined.
fn headline(table: &str) -> String {
    table
        .lines()
        .take_while(|l| !l.starts_with('┌') && !l.starts_with('+'))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The number before " call" in a headline (`..., 3 calls (2 by h2c upgrade)`).
fn headline_calls(table: &str) -> u64 {
    let head = headline(table);
    let before = head
        .split(" call")
        .next()
        .unwrap_or_else(|| panic!("no calls in {head:?}"));
    before.rsplit(' ').next().unwrap().parse().unwrap()
}

/// Item 1: the headline and the `calls` row count every call a user made, the HTTP/1.1
/// requests upgraded to h2c too, the same number `calls` lists; the JSON's `calls` stays
/// tshark's count (request HEADERS frames) beside `upgraded_calls`.
#[test]
fn every_call_is_in_the_headline() {
    let upgrade = repo().join("captures/curl-upgrade.pcap");
    let t = stdout(&["replay", upgrade.to_str().unwrap()]);
    assert!(headline(&t).ends_with("3 calls (2 by h2c upgrade)"), "{t}");
    let row = t.lines().find(|l| l.starts_with("│ calls ")).unwrap();
    assert!(row.contains("│      3 │"), "{row}");
    let mut checked = 0;
    for cap in all_captures() {
        let f = cap.to_str().unwrap();
        let mut args = vec![f];
        let keylog = cap.with_extension("keylog");
        let k = keylog.to_string_lossy().into_owned();
        if keylog.exists() {
            args.extend(["--keylog", &k]);
        }
        let table = stdout(&[&["replay"], &args[..]].concat());
        let json: Value =
            serde_json::from_str(&stdout(&[&["replay"], &args[..], &["-T", "json"]].concat()))
                .unwrap();
        let listed = records(
            stdout(&[&["calls"], &args[..], &["-T", "jsonl"]].concat()),
            "call",
        );
        let all = n(&json["calls"]) + n(&json["upgraded_calls"]);
        assert_eq!(headline_calls(&table), all, "{f}: headline vs JSON");
        assert_eq!(listed.len() as u64, all, "{f}: `calls` vs the headline");
        checked += 1;
    }
    assert!(checked >= 30, "only {checked} captures");
}

/// Item 2: a phase's largest windows are never 0 where the connection's windows are known
/// and the phase has its frames: tonic's client connection window changes only by its DATA
/// after the first 200 ms (no WINDOW_UPDATE for it), and every phase has its value.
#[test]
fn a_phase_keeps_the_windows_it_did_not_change() {
    let cap = repo().join("captures/tonic-adaptive.pcap");
    let v: Value = serde_json::from_str(&stdout(&[
        "replay",
        cap.to_str().unwrap(),
        "--every",
        "200ms",
        "-T",
        "json",
    ]))
    .unwrap();
    let phases = v["phases"].as_array().unwrap();
    assert!(phases.len() >= 10, "{}", phases.len());
    for p in phases {
        for side in ["client", "server"] {
            let w = &p["flow_control"][side]["max_window"];
            // A stream window exists where a stream is open: where a call is.
            let calls = n(&p["sides"]["client"]["frames"]["HEADERS"]) > 0;
            assert!(
                n(&w["connection"]) > 60_000 && (!calls || n(&w["stream"]) >= 65_535),
                "{} {side}: {w}",
                p["name"]
            );
        }
    }
}

/// Item 3: `calls --every` prints each period's tick after the calls that ended in it, so the
/// rows above a tick are its calls, and a last tick covers the end: the ticks add up to every
/// call (the article capture: 144, 24 a second, where the first tick said 0 and all 120).
#[test]
fn call_ticks_follow_their_calls() {
    let cap = repo().join("captures/grpcgo-article.pcap");
    let out = stdout(&[
        "calls",
        cap.to_str().unwrap(),
        "--every",
        "1s",
        "-T",
        "jsonl",
    ]);
    let (mut rows, mut ticks, mut listed, mut prev) = (0u64, 0, 0u64, 0.0);
    for l in out.lines() {
        let v: Value = serde_json::from_str(l).unwrap();
        match v["record"].as_str().unwrap() {
            "call" => {
                rows += 1;
                let end = v["end"].as_f64().unwrap();
                assert!(
                    end >= prev,
                    "a call of an earlier period after its tick: {v}"
                );
            }
            "tick" => {
                let t = v["time"].as_f64().unwrap();
                assert_eq!(n(&v["calls"]), rows, "tick at {t}: the rows above it");
                listed += rows;
                rows = 0;
                ticks += 1;
                prev = t;
            }
            _ => {}
        }
    }
    assert_eq!((rows, listed, ticks), (0, 144, 7));
    let table = stdout(&["calls", cap.to_str().unwrap(), "--every", "1s"]);
    let first = table.lines().find(|l| l.starts_with("-- ")).unwrap();
    assert!(first.ends_with(", 24 calls"), "{first}");
}

/// Item 4: `--every` is a time series: the whole capture's tables once, then a row per phase
/// (the article at 1 s: 121 lines, was 651), every period from the first packet to the last
/// in the table, the JSON and the JSON lines, those without traffic as zero rows; `--wide`
/// keeps every table per phase.
#[test]
fn every_is_a_time_series_without_holes() {
    let cap = repo().join("captures/grpcgo-article.pcap");
    let f = cap.to_str().unwrap();
    let t = stdout(&["replay", f, "--every", "1s"]);
    assert!(t.lines().count() < 150, "{} lines", t.lines().count());
    let rows: Vec<&str> = t
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("start s"))
        .skip(2)
        .take_while(|l| !l.starts_with("a row per"))
        .collect();
    assert!(rows[0].trim_start().starts_with("all"), "{t}");
    assert_eq!(rows.len(), 1 + 7, "{t}");
    let calls: u64 = rows[1..]
        .iter()
        .map(|r| r.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(calls, 144);
    // 100 ms: waves at 3 a second leave empty periods; they are zero rows, never holes.
    let lines = stdout(&["replay", f, "--every", "100ms", "-T", "jsonl"]);
    let phases = records(&lines, "phase");
    assert_eq!(phases.len(), 61);
    let empty = phases.iter().filter(|p| n(&p["calls"]) == 0).count();
    assert!(empty > 10, "{empty} empty phases");
    for (i, w) in phases.windows(2).enumerate() {
        let (a, b) = (
            w[0]["end"].as_f64().unwrap(),
            w[1]["start"].as_f64().unwrap(),
        );
        assert!(
            (a - b).abs() < 1e-6,
            "a hole after phase {}: {a} -> {b}",
            i + 1
        );
    }
    let json: Value =
        serde_json::from_str(&stdout(&["replay", f, "--every", "100ms", "-T", "json"])).unwrap();
    assert_eq!(json["phases"].as_array().unwrap().len(), 61);
    let wide = stdout(&["replay", f, "--every", "1s", "--wide"]);
    assert!(wide.contains("│ phase 7 "), "{wide}");
}

/// Item 5: TLS without keys: the headline says HTTP/2 over TLS was seen and what is missing
/// (no key log, or a key log without these client randoms), not "check --port"; the
/// warnings come one line per kind with a count, within 100 columns (`-v`: each), the JSON
/// holds each one.
#[test]
fn tls_without_keys_is_said_in_the_headline() {
    let cap = repo().join("captures/curl-nghttpd-tls13.pcap");
    let f = cap.to_str().unwrap();
    let out = run(&["replay", f]);
    assert!(out.status.success());
    let t = String::from_utf8(out.stdout).unwrap();
    let h = headline(&t);
    assert!(
        h.contains("0 HTTP/2 connections, 0 calls; but 3 TLS connections with ALPN h2 not decrypted: no key log: pass --keylog FILE"),
        "{h}"
    );
    assert!(!t.contains("check --port"), "{t}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.lines().all(|l| l.chars().count() <= 100), "{err}");
    let w: Vec<&str> = err.lines().filter(|l| l.starts_with("warning: ")).collect();
    assert_eq!(w.len(), 1, "{err}");
    assert!(
        w[0].starts_with("warning: 3 like this: connection 0 "),
        "{err}"
    );
    let every = run(&["-v", "replay", f]);
    let every = String::from_utf8(every.stderr).unwrap();
    assert_eq!(
        every.lines().filter(|l| l.starts_with("warning: ")).count(),
        3
    );
    let quiet = run(&["-q", "replay", f]);
    let quiet = String::from_utf8(quiet.stderr).unwrap();
    assert!(quiet.lines().all(|l| l.chars().count() <= 100), "{quiet}");
    let v: Value = serde_json::from_str(&stdout(&["replay", f, "-T", "json"])).unwrap();
    assert_eq!(v["warnings"].as_array().unwrap().len(), 3);
    assert_eq!(n(&v["tls"]["without_key_h2"]), 3);
    // A key log of other connections.
    let other = repo().join("captures/go-nethttp-tls.keylog");
    let t = stdout(&["replay", f, "--keylog", other.to_str().unwrap()]);
    assert!(
        headline(&t).contains("the key log has no secret for any of their 3 client randoms"),
        "{t}"
    );
}

/// Item 9: `frames` names each connection's addresses before its first frame, ends with a
/// summary (stderr, as tcpdump's count), and prints times in tshark's `-t` formats, its ticks
/// in the same one.
#[test]
fn frames_say_which_connection_and_when() {
    let f = repo().join("captures/curl-upgrade.pcap");
    let f = f.to_str().unwrap();
    let out = run(&["frames", f]);
    assert!(out.status.success());
    let table = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines[0],
        "[  0.045774] c0 connection client=127.0.0.1:35216 server=127.0.0.1:34663"
    );
    let c1 = lines.iter().position(|l| l.contains("] c1 ")).unwrap();
    assert!(
        lines[c1].ends_with("c1 connection client=127.0.0.1:35232 server=127.0.0.1:34663"),
        "{}",
        lines[c1]
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim_end(),
        "19 frames printed on 2 connections; 34 packets read"
    );
    // tshark's -t letters.
    let first = |args: &[&str]| stdout(args).lines().nth(1).unwrap().to_string();
    assert!(first(&["frames", f, "-t", "ud"]).starts_with("[2026-12-01 10:30:32.135478] c0 client"));
    assert!(first(&["frames", f, "-t", "u"]).starts_with("[10:30:32.135478] c0 client"));
    assert!(first(&["frames", f, "-t", "e"]).starts_with("[1796121032.135478] c0 client"));
    assert!(first(&["frames", f, "-t", "r"]).starts_with("[  0.045774] c0 client"));
    let dd = stdout(&["frames", f, "-t", "dd", "--stream", "3"]);
    let dd: Vec<&str> = dd.lines().collect();
    // The frames of stream 3 are 0.000264 s and 0.000045 s apart.
    assert!(dd[2].starts_with("[  0.000264]"), "{}", dd[2]);
    assert!(dd[3].starts_with("[  0.000045]"), "{}", dd[3]);
    // Ticks print their time as the frames do.
    let ticks = stdout(&["frames", f, "-t", "ud", "--every", "10ms"]);
    assert!(
        ticks.starts_with("-- [2026-12-01 10:30:32.099704] (last 10ms): 3 packets, 0 frames"),
        "{ticks}"
    );
}

/// Item 13: a filter that keeps no frame says so.
#[test]
fn frames_that_match_nothing_say_so() {
    let f = repo().join("captures/curl-upgrade.pcap");
    let out = run(&["frames", f.to_str().unwrap(), "--stream", "999999"]);
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim_end(),
        "no frame matched --conn, --stream, --type or --side: 0 of 19 frames printed; \
         34 packets read"
    );
}

/// Item 11: the letters tcpdump and tshark use mean the same here, or nothing.
#[test]
fn tcpdump_letters_mean_what_tcpdump_says() {
    let f = repo().join("captures/curl-upgrade.pcap");
    let f = f.to_str().unwrap();
    // replay -r F, and words after it are the filter.
    let a = stdout(&["replay", "-r", f, "-T", "json"]);
    let b = stdout(&["replay", f, "-T", "json"]);
    assert_eq!(a, b);
    let filtered = run(&["replay", "-r", f, "tcp", "port", "1"]);
    assert!(String::from_utf8_lossy(&filtered.stderr).contains("no packets matched \"tcp port 1\""));
    // -a, -d, -p, -t are not --analyze, --duration, --port, --type any more.
    for (args, letter) in [
        (vec!["replay", f, "-a"], "'-a'"),
        (vec!["replay", f, "-d", "1s"], "'-d'"),
        (vec!["replay", f, "-p", "80"], "'-p'"),
        (vec!["replay", f, "-Y", "http2"], "'-Y'"),
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(letter), "{args:?}: {err}");
        // clap's `-- -Y` would make the word part of the capture filter.
        assert!(!err.contains("'-- "), "{args:?}: {err}");
        assert!(err.lines().all(|l| l.chars().count() <= 100), "{err}");
    }
    let o = run(&["replay", f, "-Y", "http2"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("tshark's display filter"));
    // The long names work.
    for extra in [["--analyze", "--port=34663"], ["--duration", "1s"]] {
        let mut args = vec!["replay", f];
        args.extend(extra);
        assert!(run(&args).status.success(), "{args:?}");
    }
    // frames -t is tshark's time format; --type the frame type.
    assert!(run(&["frames", f, "--type", "ping"]).status.success());
    let o = run(&["frames", f, "-t", "ping"]);
    assert_eq!(o.status.code(), Some(2));
    // h2ledger -i DEV is sniff, -p is tcpdump's "not promiscuous" (never done): the parse is
    // what is checked here (no capture is opened without a device: -D lists them).
    let help = stdout(&["sniff", "--help"]);
    assert!(help.contains("-p, --no-promiscuous-mode"), "{help}");
    assert!(
        help.contains("--port <N>") && !help.contains("-p, --port"),
        "{help}"
    );
}

/// Item 12: "1 call", not "1 calls".
#[test]
fn one_call_is_singular() {
    let f = repo().join("captures/goh2c-post.pcap");
    let t = stdout(&["calls", f.to_str().unwrap()]);
    assert_eq!(t.lines().last(), Some("1 call"), "{t}");
}

/// Item 11, live (root): `h2ledger -i N` is `sniff` on the device `-D` numbers N.
#[test]
fn device_numbers_as_tcpdump_lists_them() {
    if !crate::util::is_root() {
        eprintln!("skipped: live capture needs root");
        return;
    }
    let list = stdout(&["-D"]);
    let n = list
        .lines()
        .find_map(|l| {
            let (n, rest) = l.split_once('.')?;
            rest.starts_with("lo ").then(|| n.to_string())
        })
        .expect("lo listed");
    let o = run(&["-i", &n, "--duration", "200ms", "-T", "json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("listening on lo,"), "{err}");
    let o = run(&["sniff", "-i", "9999", "--duration", "200ms"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no capture device number 9999"));
}

/// Item 7: each reset's and GOAWAY's code (and GOAWAY debug data) in the tables, the reset's
/// code and sender in the call records.
#[test]
fn reset_and_goaway_codes_are_shown() {
    let node = repo().join("captures/node-http2.pcap");
    let node = node.to_str().unwrap();
    let t = stdout(&["calls", node]);
    let row = t.lines().find(|l| l.contains("/slow")).unwrap();
    assert!(row.contains("RST CANCEL"), "{row}");
    let slow = records(run(&["calls", node, "-T", "jsonl"]).stdout, "call")
        .into_iter()
        .find(|c| c["method"] == "/slow")
        .unwrap();
    assert_eq!(slow["reset_code"], "CANCEL");
    assert_eq!(slow["reset_by"], "client");
    let t = stdout(&["replay", node, "--analyze"]);
    assert!(t.contains("│ RST_STREAM CANCEL "), "{t}");
    let v: Value =
        serde_json::from_str(&stdout(&["replay", node, "-T", "json", "--analyze"])).unwrap();
    assert_eq!(
        v["sides"]["client"]["rst_stream_codes"]["CANCEL"], 1,
        "{}",
        v["sides"]
    );
    assert_eq!(
        v["sides"]["server"]["rst_stream_codes"],
        serde_json::json!({})
    );
    // Two INTERNAL_ERROR GOAWAYs from the client and two NO_ERROR from the server.
    let shared = repo().join("../shared/real-captures/sv-http2-errorcode.pcap");
    if shared.exists() {
        let t = stdout(&["replay", shared.to_str().unwrap(), "--analyze"]);
        let row = t
            .lines()
            .find(|l| l.contains("GOAWAY INTERNAL_ERROR"))
            .unwrap();
        let cells: Vec<&str> = row.split('│').map(str::trim).collect();
        assert_eq!(cells[2..4], ["2", "0"], "{row}");
        assert!(
            t.contains("GOAWAY c0 by client INTERNAL_ERROR last_stream_id=0"),
            "{t}"
        );
    }
    // Debug data is shown, escaped.
    for f in all_captures() {
        let f = f.to_str().unwrap().to_string();
        let v: Value = serde_json::from_str(&stdout(
            &[&f, "-T", "json", "--analyze"]
                .iter()
                .copied()
                .fold(vec!["replay"], |mut a, x| {
                    a.push(x);
                    a
                }),
        ))
        .unwrap();
        let Some(g) = v["goaways"]
            .as_array()
            .and_then(|g| g.iter().find(|g| g["debug"] != ""))
        else {
            continue;
        };
        let t = stdout(&["replay", &f, "--analyze"]);
        let debug = g["debug"].as_str().unwrap();
        // Control characters are escaped for the terminal (`\x00`): compare up to the first.
        let shown: String = debug
            .chars()
            .take_while(|c| !c.is_control())
            .take(20)
            .collect();
        assert!(t.contains(&format!("debug \"{shown}")), "{f}: {debug}");
        assert_eq!(crate::util::too_wide(&t), None, "{f}");
    }
}

/// Items 10 and 12: 100 columns when numbers grow, one rule under the header in ASCII, the BDP
/// pings under PING in one spelling, percentiles with their max.
#[test]
fn tables_keep_their_width_and_labels() {
    let cap = |f: &str| {
        repo()
            .join("captures")
            .join(f)
            .to_str()
            .unwrap()
            .to_string()
    };
    let fits = |t: &str, what: &str| {
        for l in t.lines() {
            assert!(
                l.chars().count() <= 100,
                "{what}: {} columns: {l}",
                l.chars().count()
            );
        }
    };
    // The captures under a long directory (a CI checkout's path is long): the headlines wrap.
    let long = std::env::temp_dir().join(format!(
        "h2ledger-users-saw-{}/a-directory-long-enough-to-wrap",
        std::process::id()
    ));
    std::fs::create_dir_all(&long).unwrap();
    let mut copies = Vec::new();
    for f in ["grpcgo-flow-bdp.pcap", "grpcgo-flow-static.pcap"] {
        let to = long.join(f);
        std::fs::copy(cap(f), &to).unwrap();
        copies.push(to.to_str().unwrap().to_string());
    }
    let t = stdout(&["compare", &copies[0], &copies[1]]);
    let _ = std::fs::remove_dir_all(long.parent().unwrap());
    assert!(t.lines().next().unwrap().len() < 100, "{t}");
    fits(&t, "compare");
    let multi = repo().join("../shared/real-captures/df-http2-multi.pcap");
    if multi.exists() {
        let t = stdout(&["calls", multi.to_str().unwrap()]);
        fits(&t, "calls df-http2-multi");
        // The columns after a wide stream number stay in place.
        let status_at = |l: &str| l.find("http 200");
        let rows: Vec<&str> = t.lines().filter(|l| l.contains("http 200")).collect();
        assert!(
            rows.iter().all(|l| status_at(l) == status_at(rows[0])),
            "{t}"
        );
    }
    let article = cap("grpcgo-article.pcap");
    let ascii = stdout(&["replay", &article, "--ascii"]);
    let utf8 = stdout(&["replay", &article]);
    assert_eq!(ascii.lines().count(), utf8.lines().count(), "{ascii}");
    let lines: Vec<&str> = utf8.lines().collect();
    let ping = lines.iter().position(|l| l.starts_with("│ PING ")).unwrap();
    assert!(
        lines[ping + 1].starts_with("│   of which grpc-go-bdp "),
        "{utf8}"
    );
    // The ledger's label, not grpc-go's constant (the findings' rules above the tables cite
    // bdp_estimator.go's bdpPing as their source).
    assert!(!utf8[utf8.find('┌').unwrap()..].contains("bdpPing"));
    let v: Value =
        serde_json::from_str(&stdout(&["replay", &article, "--analyze", "-T", "json"])).unwrap();
    let call = &v["latency_us"]["call"];
    assert!(
        call["max"].as_f64().unwrap() >= call["p99"].as_f64().unwrap(),
        "{call}"
    );
    let t = stdout(&["replay", &article, "--analyze"]);
    assert!(t.contains("│ call max (us) "), "{t}");
}

/// `replay FILE ARGS --plot TMP` (as the user runs it): the SVG and stderr.
fn plot_svg(file: &std::path::Path, args: &[&str], tag: &str) -> (String, String) {
    let svg = std::env::temp_dir().join(format!(
        "h2ledger-users-saw-{}-{tag}.svg",
        std::process::id()
    ));
    let mut all = vec!["replay", file.to_str().unwrap()];
    all.extend_from_slice(args);
    all.extend(["--plot", svg.to_str().unwrap()]);
    let out = run(&all);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{all:?}: {err}");
    let s = std::fs::read_to_string(&svg).unwrap();
    let _ = std::fs::remove_file(&svg);
    (s, err)
}

/// The bars' tooltips: (kind, side, frames, bin) of every bar.
fn bars(svg: &str) -> Vec<(String, String, u64, String)> {
    svg.split("<title>")
        .skip(1)
        .filter_map(|t| {
            let t = t.split("</title>").next()?;
            let (kind, rest) = t.split_once(", ")?;
            let (side, rest) = rest.split_once(": ")?;
            let (count, rest) = rest.split_once(" frame")?;
            let bin = rest.split_once(" in ")?.1.split(" (").next()?;
            Some((kind.into(), side.into(), count.parse().ok()?, bin.into()))
        })
        .collect()
}

/// Issue 20, item 8: nghttp-nghttpd (34 ms) and python-grpcio-streaming (20 ms) were one 500 ms
/// bar each, and the article's waves of 3 calls/s came out as a 32/16 alternation in 500 ms
/// bins. The bin now follows the capture's length (about 100 bins at most), `--bin D` overrides
/// it (widened, and said, past 1,000 bins), one SETTINGS is drawn against an axis of 1, and an
/// empty plot says why, in the image and on stderr.
#[test]
fn short_captures_plot_more_than_one_bar() {
    let cap = |name: &str| repo().join("captures").join(name);
    for (name, bin) in [
        ("nghttp-nghttpd.pcap", "500 µs"),
        ("python-grpcio-streaming.pcap", "500 µs"),
        ("grpcgo-article.pcap", "100 ms"),
    ] {
        let (s, err) = plot_svg(&cap(name), &[], name);
        assert!(s.contains(&format!("frames per {bin} bin")), "{name}: {s}");
        assert!(!err.contains("warning: the plot"), "{name}: {err}");
        let b = bars(&s);
        let headers: Vec<_> = b
            .iter()
            .filter(|b| b.0 == "HEADERS" && b.1 == "client")
            .collect();
        assert!(headers.len() >= 5, "{name}: {headers:?}");
        // Every count is whole, and no axis is taller than it needs: the SETTINGS row (one per
        // side in each connection of these captures) has bars of 1 or 2.
        assert!(b.iter().all(|b| b.2 >= 1), "{name}");
    }
    // The article's second phase: waves of 8 calls every 333 ms, each in one 100 ms bin (the
    // waves are drawn, not a 16/8 alternation).
    let (s, _) = plot_svg(&cap("grpcgo-article.pcap"), &[], "article");
    let late: Vec<u64> = bars(&s)
        .into_iter()
        .filter(|b| b.0 == "HEADERS" && b.1 == "client")
        .filter(|b| b.3.split('–').next().unwrap().parse::<f64>().unwrap() >= 3.1)
        .map(|b| b.2)
        .collect();
    assert!(late.len() >= 8, "{late:?}");
    assert!(late.iter().all(|n| *n == 8), "{late:?}");
    // --bin overrides; one that makes too many bins is widened, and stderr says so.
    let (s, err) = plot_svg(&cap("grpcgo-article.pcap"), &["--bin", "10ms"], "bin10");
    assert!(s.contains("frames per 10 ms bin"), "{err}");
    assert!(!err.contains("--bin"), "{err}");
    let (s, err) = plot_svg(&cap("grpcgo-article.pcap"), &["--bin", "1us"], "bin1");
    assert!(
        err.contains(
            "warning: --bin 1 µs would make 6,002,967 bins, more than 1,000: drawn in 10 ms bins"
        ),
        "{err}"
    );
    assert!(s.contains("drawn in 10 ms bins"));
    assert!(err.lines().all(|l| l.chars().count() <= 100), "{err}");
    // A single SETTINGS (the article's first 4 packets): its axis goes to 1, not 2.
    let (s, _) = plot_svg(&cap("grpcgo-article.pcap"), &["-c", "4"], "single");
    let b = bars(&s);
    assert_eq!(b.len(), 1, "{b:?}");
    assert_eq!((b[0].0.as_str(), b[0].2), ("SETTINGS", 1));
    assert!(!s.contains(">2<"), "no tick at 2: {s}");
    // An empty capture (a pcap header, no packet): the image and stderr say why.
    let empty = std::env::temp_dir().join(format!("h2ledger-empty-{}.pcap", std::process::id()));
    let mut h = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0];
    h.extend([0; 8]);
    h.extend([0xff, 0xff, 0, 0, 1, 0, 0, 0]);
    std::fs::write(&empty, h).unwrap();
    let (s, err) = plot_svg(&empty, &[], "empty");
    let _ = std::fs::remove_file(&empty);
    assert!(s.contains("no HTTP/2 frames to draw"), "{s}");
    assert!(s.contains("no packets"), "{s}");
    assert!(
        err.contains("warning: the plot is empty: no packets"),
        "{err}"
    );
    // TLS without a key log: the plot says to pass one.
    let (s, err) = plot_svg(&cap("curl-nghttpd-tls13.pcap"), &[], "tls");
    assert!(s.contains("pass --keylog FILE"), "{s}");
    assert!(
        err.contains("the plot is empty: 3 TLS connections"),
        "{err}"
    );
}

/// Item 6: the HTTP method and the path are carried apart (JSON: `http_method` added, `method`
/// is the path as before), the per-method table is grouped by both, and a gRPC name keeps its
/// service and method when cut.
#[test]
fn method_and_path_are_apart() {
    let f = repo().join("captures/curl-upgrade.pcap");
    let f = f.to_str().unwrap();
    let calls = records(run(&["calls", f, "-T", "jsonl"]).stdout, "call");
    let pairs: Vec<(String, String)> = calls
        .iter()
        .map(|c| {
            (
                c["http_method"].as_str().unwrap().to_string(),
                c["method"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(
        pairs.contains(&("GET".into(), "/trailers".into())),
        "{pairs:?}"
    );
    assert!(
        pairs.contains(&("POST".into(), "/echo".into())),
        "{pairs:?}"
    );
    let t = stdout(&["calls", f]);
    assert!(t.contains(" GET /trailers "), "{t}");
    let v: Value =
        serde_json::from_str(&stdout(&["replay", f, "--analyze", "-T", "json"])).unwrap();
    let m = v["methods"].as_array().unwrap();
    assert!(m
        .iter()
        .any(|m| m["http_method"] == "POST" && m["method"] == "/echo"));
    let article = repo().join("captures/grpcgo-article.pcap");
    let t = stdout(&["calls", article.to_str().unwrap()]);
    let row = t.lines().nth(1).unwrap();
    // A gRPC name that does not fit loses its POST first (decision 303).
    assert!(row.contains(" /grpc.h…Health/Check "), "{row}");
}

/// The series' footnote names the `--every` period, not a short last (or lone) phase's span.
#[test]
fn the_series_names_its_period() {
    let f = repo().join("captures/grpcgo-article.pcap");
    let t = stdout(&["replay", f.to_str().unwrap(), "--every", "1s"]);
    assert!(t.contains("a row per 1s from "), "{t}");
    let f = repo().join("captures/curl-upgrade.pcap");
    let t = stdout(&["replay", f.to_str().unwrap(), "--every", "1s"]);
    assert!(t.contains("a row per --every period from "), "{t}");
}
