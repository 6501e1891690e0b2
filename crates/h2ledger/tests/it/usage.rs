//! Issue 12: the binary as a tcpdump and tshark user runs it: `-r`, `-D`, `-c`, compressed
//! captures, one output model (`--format table|json|jsonl` on every view, `type` on each line),
//! completions and the man page.

use std::io::Write as _;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::util::*;

const F: &str = "grpcgo-article.pcap";

fn tmp(name: &str) -> std::path::PathBuf {
    let d = scratch("usage");
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// `tool ARGS < input > output`: a real compressor, as a user makes the file.
fn compress(tool: &str, args: &[&str], input: &std::path::Path, out: &std::path::Path) {
    assert!(have(tool), "{tool} is needed (apt-get install {tool})");
    let status = Command::new(tool)
        .args(args)
        .stdin(std::fs::File::open(input).unwrap())
        .stdout(std::fs::File::create(out).unwrap())
        .status()
        .unwrap();
    assert!(status.success(), "{tool} {args:?}");
}

fn with_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut c = Command::new(bin())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = c.stdin.take().unwrap();
    let data = input.to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&data);
    });
    let o = c.wait_with_output().unwrap();
    feeder.join().unwrap();
    o
}

fn json_of(o: &Output) -> Value {
    assert!(
        o.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("one JSON document")
}

#[test]
fn gzip_and_zstd_captures_read_like_the_plain_file() {
    let plain = capture(F);
    let want = replay_json(plain.to_str().unwrap(), &["--analyze"]);
    let gz = tmp("a.pcap.gz");
    compress("gzip", &["-c"], &plain, &gz);
    // The name says nothing: the magic bytes decide.
    let zst = tmp("a.capture");
    compress("zstd", &["-q", "-c"], &plain, &zst);
    for f in [&gz, &zst] {
        let got = replay_json(f.to_str().unwrap(), &["--analyze"]);
        assert_eq!(got["sides"], want["sides"], "{}", f.display());
        assert_eq!(got["analysis"], want["analysis"], "{}", f.display());
        assert_eq!(got["calls"], want["calls"]);
        // Also on standard input.
        let o = with_stdin(
            &["replay", "-", "-T", "json", "--analyze"],
            &std::fs::read(f).unwrap(),
        );
        assert_eq!(json_of(&o)["sides"], want["sides"], "stdin {}", f.display());
    }
    // calls and frames read them too.
    let o = run(&["calls", gz.to_str().unwrap(), "-T", "jsonl"]);
    assert!(o.status.success());
    let calls = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| l.contains("\"type\":\"call\""))
        .count();
    assert_eq!(calls as u64, n(&want["calls"]));
}

#[test]
fn keys_embedded_in_a_compressed_pcapng_are_used() {
    let f = repo().join("captures/curl-nghttpd-tls13-dsb.pcapng");
    if !f.exists() {
        panic!("{} is missing", f.display());
    }
    let want = replay_json(f.to_str().unwrap(), &[]);
    assert!(n(&want["tls"]["decrypted"]) > 0);
    let zst = tmp("dsb.pcapng.zst");
    compress("zstd", &["-q", "-c"], &f, &zst);
    let got = replay_json(zst.to_str().unwrap(), &[]);
    assert_eq!(got["tls"], want["tls"]);
    assert_eq!(got["sides"], want["sides"]);
}

#[test]
fn a_cut_or_corrupt_compressed_capture_is_said() {
    // A big enough capture that a cut gzip still holds whole packets.
    let plain = capture("python-grpcio-ipv6.pcap");
    let gz = tmp("cut.pcap.gz");
    compress("gzip", &["-c"], &plain, &gz);
    let mut bytes = std::fs::read(&gz).unwrap();
    bytes.truncate(bytes.len() / 2);
    std::fs::write(&gz, &bytes).unwrap();
    let o = run(&["replay", gz.to_str().unwrap()]);
    // Warnings are wrapped at 100 columns: read them as one text.
    let err = String::from_utf8_lossy(&o.stderr)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("gzip"), "{err}");
    assert!(
        err.contains("the ledger covers the packets before that point"),
        "{err}"
    );
    assert!(
        !o.stdout.is_empty(),
        "the packets before the cut are counted"
    );
    // Garbage after a gzip magic: one line, exit 2.
    let bad = tmp("bad.gz");
    std::fs::write(&bad, b"\x1f\x8b\x08\x00garbage garbage garbage garbage").unwrap();
    let o = run(&["replay", bad.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("gzip"), "{err}");
    // The zstd magic alone on stdin.
    let o = with_stdin(&["replay", "-"], b"\x28\xb5\x2f\xfd");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("zstd") && err.contains("ends early"), "{err}");
}

/// A cut zstd file counts the packets before the cut, like a cut gzip (decision 83), even
/// when all of it is within one window that ruzstd holds back until the frame's end (a small
/// file: before, nothing was read and it was refused, exit 2), with a checksum or without,
/// cut inside a block or between blocks.
#[test]
fn a_cut_zstd_capture_counts_the_packets_before_the_cut() {
    let plain = capture("grpcgo-flow-static.pcap");
    let packets = |o: &Output| {
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
        n(&v["capture"]["packets"])
    };
    let whole = packets(&run(&["replay", plain.to_str().unwrap(), "-T", "json"]));
    assert!(whole > 100);
    for (i, flags) in [&["-c"][..], &["-c", "--no-check"], &["-c", "-19"]]
        .into_iter()
        .enumerate()
    {
        let zst = tmp(&format!("whole-{i}.pcap.zst"));
        compress("zstd", flags, &plain, &zst);
        let bytes = std::fs::read(&zst).unwrap();
        let mut seen = Vec::new();
        for cut in [
            bytes.len() / 4,
            bytes.len() / 2,
            bytes.len() - 5,
            bytes.len() - 1,
        ] {
            let f = tmp(&format!("cut-{i}-{cut}.pcap.zst"));
            std::fs::write(&f, &bytes[..cut]).unwrap();
            let o = run(&["replay", f.to_str().unwrap(), "-T", "json"]);
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(1), "{flags:?} cut at {cut}: {err}");
            // The warning is in the JSON's warnings.
            let out = String::from_utf8_lossy(&o.stdout);
            assert!(
                out.contains("zstd: the compressed stream ends early"),
                "{out}"
            );
            let got = packets(&o);
            // (Cut in the checksum: every packet.)
            assert!(
                got > 0 && got <= whole,
                "{flags:?} cut at {cut}: {got} of {whole}"
            );
            seen.push(got);
        }
        assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{flags:?}: {seen:?}");
    }
}

fn at(args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .current_dir(repo().join("captures"))
        .output()
        .unwrap()
}

#[test]
fn dash_r_reads_a_file_like_tcpdump() {
    let want = replay_json(capture(F).to_str().unwrap(), &[]);
    for args in [
        vec!["-r", F, "-T", "json"],
        vec!["-q", "-r", F, "-T", "json"],
        vec!["--read=grpcgo-article.pcap", "-T", "json"],
        vec!["replay", F, "-T", "json"],
    ] {
        let got = json_of(&at(&args));
        assert_eq!(got["sides"], want["sides"], "{args:?}");
    }
    // Inside the line views, -r FILE is the FILE word.
    let a = at(&["frames", "-r", F, "-T", "jsonl"]);
    let b = at(&["frames", F, "-T", "jsonl"]);
    assert_eq!(a.stdout, b.stdout);
}

#[test]
fn dash_c_counts_packets_and_max_frames_counts_frames() {
    // The first 3 packets are the handshake: no frame.
    let o = at(&["frames", F, "-c", "3", "-T", "jsonl"]);
    assert!(records(&o.stdout, "frame").is_empty());
    assert_eq!(records(&o.stdout, "summary")[0]["capture"]["packets"], 3);
    let o = at(&["frames", F, "-c", "40", "-T", "jsonl"]);
    let s = &records(&o.stdout, "summary")[0];
    assert_eq!(s["capture"]["packets"], 40);
    assert!(n(&s["frames"]) > 0);
    let o = at(&["frames", F, "--max-frames", "7", "-T", "jsonl"]);
    assert_eq!(records(&o.stdout, "frame").len(), 7);
    let o = at(&["calls", F, "-c", "100", "-T", "jsonl"]);
    assert_eq!(records(&o.stdout, "summary")[0]["capture"]["packets"], 100);
    // -c stops reading the file (tcpdump -c): damage after packet N is never reached.
    let cut = tmp("cut.pcap");
    let bytes = std::fs::read(capture(F)).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() - 7]).unwrap();
    let o = at(&["calls", cut.to_str().unwrap(), "-T", "jsonl"]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "a cut file is an error when read to its end"
    );
    let o = at(&["calls", cut.to_str().unwrap(), "-c", "100", "-T", "jsonl"]);
    let s = &records(&o.stdout, "summary")[0];
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(s["error"], Value::Null);
    assert_eq!(s["capture"]["packets"], 100);
    for bad in ["0", "-1", "x"] {
        let o = at(&["frames", F, "-c", bad]);
        assert_eq!(o.status.code(), Some(2), "-c {bad}");
        let o = at(&["-r", F, "-c", bad]);
        assert_eq!(o.status.code(), Some(2), "-r F -c {bad}");
    }
    // tcpdump -r F -c N: replay (and so `h2ledger -r F`) takes -c and --duration as sniff -r
    // does, and reads the same packets. The cut file ends in a whole ledger of 100 packets.
    for limit in [["-c", "100"], ["--duration", "1s"]] {
        let want = at(&["sniff", "-r", F, limit[0], limit[1], "-T", "json"]);
        let got = at(&["-r", F, limit[0], limit[1], "-T", "json"]);
        assert_eq!(got.stdout, want.stdout, "{limit:?}");
        let all = json_of(&at(&["-r", F, "-T", "json"]));
        let part = json_of(&got);
        assert!(n(&part["capture"]["packets"]) < n(&all["capture"]["packets"]));
    }
    assert_eq!(
        json_of(&at(&["-r", F, "-c", "100", "-T", "json"]))["capture"]["packets"],
        100
    );
    let o = at(&["replay", cut.to_str().unwrap(), "-c", "100", "-T", "json"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Live-only flags on a file are an error, not ignored.
    for flag in [["-w", "/tmp/x.pcap"], ["-B", "1024"], ["-s", "1500"]] {
        let o = at(&["calls", F, flag[0], flag[1]]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{flag:?}: {err}");
        assert!(err.contains("live capture"), "{err}");
    }
}

#[test]
fn every_line_view_has_table_json_and_jsonl() {
    for view in ["calls", "frames"] {
        let record = &view[..view.len() - 1];
        let lines = at(&[view, F, "-T", "jsonl"]);
        assert!(lines.status.success());
        let text = String::from_utf8_lossy(&lines.stdout);
        let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        assert_eq!(last["type"], "summary", "{view}: the summary comes last");
        assert_eq!(last["view"], view);
        let all = records(&lines.stdout, record);
        assert!(!all.is_empty());
        // One document with the same records.
        let doc = json_of(&at(&[view, F, "-T", "json"]));
        assert_eq!(doc[view].as_array().unwrap(), &all, "{view}");
        assert_eq!(doc["summary"], last);
        // The table.
        let t = at(&[view, F]);
        assert!(t.status.success());
        assert!(!String::from_utf8_lossy(&t.stdout).starts_with('{'));
    }
    // Calls: record and type are both `call`.
    let o = at(&["calls", F, "-T", "jsonl"]);
    assert!(records(&o.stdout, "call")
        .iter()
        .all(|c| c["type"] == "call"));
}

#[test]
fn every_tick_on_a_file_is_by_capture_time() {
    let o = at(&["calls", F, "--every", "1s", "-T", "jsonl"]);
    let ticks = records(&o.stdout, "tick");
    // The capture spans 6.003 s: ticks at +1 s .. +6 s, and one for the last 2,967 us.
    assert_eq!(ticks.len(), 7, "{ticks:?}");
    let packets: u64 = ticks.iter().map(|t| n(&t["packets"])).sum();
    assert!(packets <= 470);
    assert!(ticks[..6].iter().all(|t| t["period_s"] == 1.0));
    assert_eq!(ticks[6]["period_s"], 0.002967);
    let o = at(&["frames", F, "--every", "2s"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        text.lines().filter(|l| l.starts_with("-- ")).count(),
        4,
        "{text}"
    );
}

#[test]
fn tables_fit_100_columns_and_ascii_without_utf8() {
    for f in [
        F,
        "tonic-small-window.pcap",
        "node-http2.pcap",
        "python-grpcio-ipv6.pcap",
    ] {
        let o = at(&["calls", f]);
        let text = String::from_utf8(o.stdout).unwrap();
        for l in text.lines() {
            assert!(
                l.chars().count() <= 100,
                "{f}: {} columns: {l}",
                l.chars().count()
            );
        }
        let o = Command::new(bin())
            .args(["calls", f])
            .current_dir(repo().join("captures"))
            .env("LANG", "C")
            .env_remove("LC_ALL")
            .env_remove("LC_CTYPE")
            .output()
            .unwrap();
        assert!(o.stdout.is_ascii(), "{f}: LANG=C output is ASCII");
    }
    // Piped, the frames table is one line per frame, so that `wc -l` and `grep -c` count
    // frames (on a terminal it fits 100 columns: it::install::frames_fit_a_terminal).
    for f in [
        F,
        "tonic-small-window.pcap",
        "curl-upgrade.pcap",
        "hyper-h2.pcap",
    ] {
        let table = String::from_utf8(at(&["frames", f]).stdout).unwrap();
        let lines = records(at(&["frames", f, "-T", "jsonl"]).stdout, "frame");
        let conns: std::collections::BTreeSet<_> =
            lines.iter().map(|l| l["conn"].as_u64()).collect();
        // A line per frame, and one per connection before its first frame.
        let (conn_lines, frame_lines): (Vec<&str>, Vec<&str>) = table
            .lines()
            .partition(|l| l.contains(" connection client="));
        assert_eq!(frame_lines.len(), lines.len(), "frames {f}");
        assert_eq!(conn_lines.len(), conns.len(), "frames {f}");
        assert!(!table.contains("+HEADERS"), "frames {f}");
    }
    let o = at(&["frames", F, "--max-frames", "7"]);
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 1 + 7);
    let help = String::from_utf8(at(&["calls", "--help"]).stdout).unwrap();
    for abbreviation in [
        "H/D/T/o:",
        "ttfb us",
        "round c/s:",
        "writes c/s:",
        "NOT_FOUND",
        "grpc-message",
        "microseconds",
    ] {
        assert!(
            help.contains(abbreviation),
            "calls --help explains {abbreviation}"
        );
    }
}

#[test]
fn quiet_groups_repeated_warnings() {
    let loud = at(&["replay", "snaplen-cut.pcap"]);
    let quiet = at(&["-q", "replay", "snaplen-cut.pcap"]);
    let (l, q) = (
        String::from_utf8_lossy(&loud.stderr).lines().count(),
        String::from_utf8_lossy(&quiet.stderr).to_string(),
    );
    // By default one warning per kind, wrapped; -q one line per kind; -v every one.
    assert!(l < 40, "{l}");
    assert!(q.lines().count() < 10, "{q}");
    assert!(q.contains(" like this: "), "{q}");
    assert!(q.lines().all(|l| l.chars().count() <= 100), "{q}");
    let every = at(&["-v", "replay", "snaplen-cut.pcap"]);
    let every = String::from_utf8_lossy(&every.stderr);
    assert_eq!(
        every.lines().filter(|l| l.starts_with("warning: ")).count(),
        59
    );
    // -q changes stderr, and the findings block on stdout (one line each, issue 38) only.
    let tables = |o: &[u8]| {
        let t = String::from_utf8_lossy(o).to_string();
        t[t.find('┌').expect("a table")..].to_string()
    };
    assert_eq!(
        tables(&loud.stdout),
        tables(&quiet.stdout),
        "-q changes stderr only"
    );
}

#[test]
fn replay_tables_fit_100_columns_with_phases() {
    for f in [
        F,
        "node-http2.pcap",
        "grpcgo-flow-static.pcap",
        "tonic-tls.pcap",
    ] {
        for extra in [
            &[][..],
            &["--analyze"],
            &["--split-at", "3s"],
            &["--every", "1s"],
            &["--every", "1s", "--wide"],
        ] {
            let mut args = vec!["replay", f];
            args.extend_from_slice(extra);
            let o = at(&args);
            let text = String::from_utf8(o.stdout).unwrap();
            let widest = text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
            assert!(widest <= 100, "{args:?}: {widest} columns\n{text}");
        }
    }
    // Every phase is still there, each once: a row each, or with --wide, a bounds line each.
    let o = at(&["replay", F, "--every", "1s"]);
    let text = String::from_utf8(o.stdout).unwrap();
    for i in 0..=6 {
        let start = format!("{i}.000 ");
        assert_eq!(
            text.lines()
                .filter(|l| l.trim_start().starts_with(&start))
                .count(),
            1,
            "phase {} has its row\n{text}",
            i + 1
        );
    }
    let o = at(&["replay", F, "--every", "1s", "--wide"]);
    let text = String::from_utf8(o.stdout).unwrap();
    for i in 1..=7 {
        assert!(
            text.contains(&format!("phase {i}: ")),
            "phase {i} has its bounds line"
        );
    }
    let o = at(&["compare", F, "grpcgo-flow-bdp.pcap"]);
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
    assert!(text.contains("B - A"), "{text}");
}

#[test]
fn compare_shows_both_and_the_difference() {
    let o = at(&[
        "compare",
        "grpcgo-flow-static.pcap",
        "grpcgo-flow-bdp.pcap",
        "-T",
        "json",
    ]);
    let v = json_of(&o);
    let a = replay_json(capture("grpcgo-flow-static.pcap").to_str().unwrap(), &[]);
    let b = replay_json(capture("grpcgo-flow-bdp.pcap").to_str().unwrap(), &[]);
    assert_eq!(v["a"]["sides"], a["sides"]);
    assert_eq!(v["b"]["sides"], b["sides"]);
    let t = String::from_utf8(
        at(&["compare", "grpcgo-flow-static.pcap", "grpcgo-flow-bdp.pcap"]).stdout,
    )
    .unwrap();
    // Client PINGs: 0 with the static window, 20 with BDP on.
    let ping = t
        .lines()
        .find(|l| l.contains("│ PING ") || l.contains("| PING "))
        .unwrap();
    assert!(ping.contains("+20"), "{ping}");
}

#[test]
fn replay_jsonl_is_phases_then_the_summary() {
    let doc = json_of(&at(&["replay", F, "-T", "json", "--every", "1s"]));
    let o = at(&["replay", F, "-T", "jsonl", "--every", "1s"]);
    assert!(o.status.success());
    let phases = records(&o.stdout, "phase");
    assert_eq!(phases.len(), doc["phases"].as_array().unwrap().len());
    for (p, d) in phases.iter().zip(doc["phases"].as_array().unwrap()) {
        assert_eq!(p["type"], "phase");
        assert_eq!(p["sides"], d["sides"]);
    }
    let text = String::from_utf8_lossy(&o.stdout);
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["record"], "summary");
    assert_eq!(last["sides"], doc["sides"]);
    assert_eq!(last["calls"], doc["calls"]);
    // compare and the plain replay too: one line each.
    let o = at(&["compare", F, F, "-T", "jsonl"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(text.lines().count(), 1);
    let v: Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(v["type"], "summary");
    assert_eq!(v["a"]["sides"], v["b"]["sides"]);
}

#[test]
fn a_cut_outside_the_capture_is_said() {
    let v = json_of(&at(&["replay", F, "--split-at", "2s,100s", "-T", "json"]));
    let w: Vec<&str> = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert!(
        w.iter()
            .any(|w| w.contains("+100.000 s") && w.contains("outside the capture")),
        "{w:?}"
    );
    let v = json_of(&at(&["replay", F, "--split-at", "2s,4s", "-T", "json"]));
    assert!(v["warnings"].as_array().unwrap().is_empty(), "{v}");
}

/// The `calls` table's header reads without the legend, and its rows name gRPC statuses as the
/// metrics do (`OK`, not `grpc 0`), within 100 columns (issue 38).
#[test]
fn calls_table_names_statuses() {
    let o = at(&["calls", "grpcgo-article.pcap"]);
    let text = String::from_utf8(o.stdout).unwrap();
    let head = text.lines().next().unwrap();
    for h in [
        "method",
        "status",
        "ttfb us",
        "call us",
        "frames c/s",
        "writes c/s",
    ] {
        assert!(head.contains(h), "{head}");
    }
    for cryptic in ["H/D/T/o", "rnd", "wr c/s"] {
        assert!(!head.contains(cryptic), "{head}");
    }
    let rows: Vec<&str> = text
        .lines()
        .skip(1)
        .filter(|l| l.contains("Health/Check"))
        .collect();
    assert_eq!(rows.len(), 144, "{text}");
    assert!(rows.iter().all(|r| r.contains(" OK ")), "{text}");
    assert!(!text.contains("grpc 0"), "{text}");
    assert_eq!(crate::util::too_wide(&text), None, "{text}");
}
