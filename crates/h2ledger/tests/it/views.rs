//! What a person looks at (issue 12, items 8 and 9): the `--plot` SVG (small multiples per
//! frame kind and side, round ticks, a short capture in fine bins, a legend only for what is drawn,
//! `wrote FILE`), and the live view of `sniff --every` (a header with the clock, elapsed time,
//! rates and drops; the last period empty when it was; no escape sequences unless stdout is a
//! terminal that can take them).

use crate::util::*;

/// `replay FILE ARGS --plot TMP`: the SVG and stderr. TMP is this call's own (a call counter,
/// decision 250): named by the file and the number of arguments, two tests plotting one
/// capture with as many arguments would write, read and remove one file at once.
fn plot(file: &str, args: &[&str]) -> (String, String) {
    static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let svg = std::env::temp_dir().join(format!(
        "h2ledger-views-{}-{file}-{}.svg",
        std::process::id(),
        CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let path = capture(file);
    let mut all = vec!["replay", path.to_str().unwrap()];
    all.extend_from_slice(args);
    all.extend(["--plot", svg.to_str().unwrap()]);
    let out = run(&all);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    let s = std::fs::read_to_string(&svg).unwrap();
    let _ = std::fs::remove_file(&svg);
    assert!(
        err.contains(&format!("wrote {}", svg.display())),
        "stderr confirms the file: {err}"
    );
    (s, err)
}

/// The text of every `<text>` element, in order.
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let body = t.split_once('>')?.1;
            Some(body.split("</text>").next()?.trim().to_string())
        })
        .collect()
}

fn kinds_drawn(svg: &str) -> Vec<String> {
    texts(svg)
        .into_iter()
        .filter(|t| FRAME_KEYS.contains(&t.as_str()))
        .collect()
}

/// `fill="#RRGGBB"` rectangles: the bars of one frame kind's colour.
fn bars(svg: &str, colour: &str) -> usize {
    svg.split("<rect")
        .skip(1)
        .filter(|r| r.contains(&format!(r#"fill="{colour}""#)))
        .count()
}

const HEADERS_BLUE: &str = "#1F77B4";
const PING_RED: &str = "#D62728";

#[test]
fn plot_of_a_short_capture_has_marks() {
    // 34 ms: 500 µs bins (69), not one 100 ms bucket.
    let (s, _) = plot("nghttp-nghttpd.pcap", &[]);
    assert!(bars(&s, HEADERS_BLUE) > 2, "HEADERS bars on both sides");
    assert!(s.contains("frames per 500 µs bin"), "{:?}", texts(&s));
    // No phases: no boundary drawn, none announced.
    assert!(!s.contains("phase boundar"), "{:?}", texts(&s));
    assert!(!s.contains("dashed"));
}

#[test]
fn plot_has_a_row_per_kind_seen_so_equal_series_never_hide() {
    let (s, _) = plot(
        "grpcgo-article.pcap",
        &["--split-at", "2026-11-30T10:50:24.6646295Z"],
    );
    // HEADERS, DATA, WINDOW_UPDATE and PING are all 24/s in phase 1: each its own row.
    assert_eq!(
        kinds_drawn(&s),
        [
            "HEADERS",
            "TRAILERS",
            "DATA",
            "WINDOW_UPDATE",
            "PING",
            "PING_ACK",
            "SETTINGS",
            "SETTINGS_ACK"
        ]
    );
    // 100 ms bins over 6 s: HEADERS bars on both sides (a bar per bin with a call in phase
    // 1, one per wave of 8 calls in phase 2), PING bars on both sides.
    assert!(
        bars(&s, HEADERS_BLUE) >= 2 * (29 + 8),
        "{}",
        bars(&s, HEADERS_BLUE)
    );
    assert!(bars(&s, PING_RED) >= 20);
    // The legend: the phase boundary (drawn), no stalls (none happened).
    let t = texts(&s);
    assert!(
        t.contains(&"phase boundary at 3.002 s".to_string()),
        "{t:?}"
    );
    assert!(!s.contains("stall"), "{t:?}");
    // Round ticks: at most two significant digits (10, 20, 30; 50k, 100k; 1.5M), never 12/38
    // or 375000.
    let numbers: Vec<&String> = t
        .iter()
        .filter(|x| {
            x.chars()
                .next()
                .is_some_and(|c| c.is_ascii_digit() || c == '-')
        })
        .filter(|x| !x.contains(' '))
        .collect();
    assert!(numbers.len() > 40, "{t:?}");
    for x in numbers {
        let digits: String = x
            .trim_end_matches(['k', 'M'])
            .chars()
            .filter(char::is_ascii_digit)
            .collect();
        let significant = digits.trim_start_matches('0').trim_end_matches('0');
        assert!(significant.len() <= 2, "tick label {x}");
    }
}

#[test]
fn plot_legend_is_only_for_what_is_drawn() {
    let (s, _) = plot("grpcgo-article.pcap", &[]);
    assert!(!s.contains("phase boundar"), "no phases, no boundary");
    // No RST_STREAM or GOAWAY row where there is none.
    assert!(!kinds_drawn(&s).contains(&"RST_STREAM".to_string()));
    let (s, _) = plot("tonic-small-window.pcap", &["--analyze"]);
    assert!(s.contains("stall begins"), "stalls drawn and named");
    assert!(!kinds_drawn(&s).contains(&"PING".to_string()));
    assert!(
        texts(&s)
            .iter()
            .any(|t| t.contains("no PING, PING_ACK frames")),
        "the kinds the article reads and this capture lacks are said"
    );
}

/// The fields of the live view's header (a test of their names: people read them).
const HEADER: [&str; 7] = [
    "UTC",
    "elapsed",
    "packets/s",
    "frames/s",
    "calls/s",
    "drops: kernel",
    "interface",
];

/// `h2ledger sniff ARGS` with `TERM` set, stdout piped, once it is listening.
fn sniff_with_term(args: &[&str], term: &str) -> std::process::Child {
    let mut child = std::process::Command::new(bin())
        .arg("sniff")
        .args(args)
        .env("TERM", term)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let line = listening_line(&mut child);
    assert!(line.contains("listening on"), "sniff said: {line}");
    child
}

/// `sniff --every` with stdout a pipe (and a TERM that could redraw): plain views appended,
/// no escape sequence; each with the header; the last period empty once traffic stopped.
#[test]
fn sniff_every_without_a_tty_appends_plain_views() {
    if crate::live::skip_unless_root("sniff_every_without_a_tty") {
        return;
    }
    use h2ledger_workload::{Options, Phase};
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (made, out) = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let opts = Options::default();
        let server = h2ledger_workload::serve(listener, &opts).await;
        let port = addr.port().to_string();
        let sniff = sniff_with_term(&["--port", &port, "--every", "250ms"], "xterm-256color");
        let r =
            h2ledger_workload::run_phases(addr, &[Phase::new("one", 1, 20.0, 1.0)], &opts).await;
        // Idle for several periods: the last views must show an empty last period.
        tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
        let pid = sniff.id().to_string();
        assert!(std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success());
        let out = tokio::task::spawn_blocking(move || sniff.wait_with_output().unwrap())
            .await
            .unwrap();
        let _ = server.shutdown().await;
        (r.iter().map(|r| r.calls_made).sum::<u64>(), out)
    });
    assert!(out.status.success());
    assert!(made >= 10, "{made} calls");
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(!s.contains('\x1b'), "no escape sequence in a pipe: {s:?}");
    // A time series (issue 20 item 4): one heading, then a row per tick, then the report.
    assert_eq!(s.matches("h2ledger sniff on lo").count(), 1, "{s}");
    let mut lines = s
        .lines()
        .skip_while(|l| !l.starts_with("h2ledger sniff on lo"));
    lines.next();
    let heading: Vec<&str> = lines.by_ref().take(2).collect();
    assert!(heading[0].trim_start().starts_with("time"), "{s}");
    let rows: Vec<&str> = lines
        .take_while(|l| l.len() > 8 && l.as_bytes()[2] == b':' && l.as_bytes()[5] == b':')
        .collect();
    assert!(rows.len() >= 5, "{} rows: {s}", rows.len());
    let width = heading[0].chars().count();
    let calls: Vec<u64> = rows
        .iter()
        .map(|r| {
            assert_eq!(r.chars().count(), width, "rows line up: {r}");
            r.split_whitespace().nth(1).unwrap().parse().unwrap()
        })
        .collect();
    assert!(calls.iter().any(|c| *c > 0), "a busy period: {calls:?}");
    // After the traffic: none in the last period, and the periods add up to every call.
    assert_eq!(*calls.last().unwrap(), 0, "{calls:?}");
    assert_eq!(calls.iter().sum::<u64>(), made, "{calls:?}");
}

/// `sniff --every` on a terminal (a pty from `script`): redrawn in place (cursor moves) with
/// a TERM that can, plain lines with `TERM=dumb`.
#[test]
fn sniff_every_on_a_terminal_redraws_unless_term_is_dumb() {
    if crate::live::skip_unless_root("sniff_every_on_a_terminal") {
        return;
    }
    if !have("script") {
        crate::util::skipped("SKIPPED sniff_every_on_a_terminal: no script(1) (util-linux)");
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let pty = |term: &str| -> String {
        let cmd = format!("{} sniff --port {port} --every 200ms --duration 1s", bin());
        let out = std::process::Command::new("script")
            .args(["-qfec", &cmd, "/dev/null"])
            .env("TERM", term)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let dumb = pty("dumb");
    assert!(!dumb.contains('\x1b'), "TERM=dumb: {dumb:?}");
    // Appended: one heading, a row per tick.
    assert_eq!(dumb.matches("h2ledger sniff on lo").count(), 1, "{dumb}");
    assert!(dumb.contains("frames/call"), "{dumb}");
    let xterm = pty("xterm-256color");
    // crossterm's MoveTo(0, 0) and clear to the end of the screen.
    assert!(xterm.contains("\x1b[1;1H"), "redrawn in place: {xterm:?}");
    assert!(xterm.contains("\x1b[J"), "{xterm:?}");
    for field in HEADER {
        assert!(xterm.contains(field), "{field}");
    }
}

/// `--format json` ticks: one compact line each, with the header's numbers in `live`.
#[test]
fn sniff_every_json_ticks_have_the_header_numbers() {
    if crate::live::skip_unless_root("sniff_every_json") {
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let out = run(&[
        "sniff",
        "--port",
        &port,
        "--every",
        "200ms",
        "--duration",
        "700ms",
        "--format",
        "jsonl",
    ]);
    assert!(out.status.success());
    let s = String::from_utf8(out.stdout).unwrap();
    let first: serde_json::Value = serde_json::from_str(s.lines().next().unwrap()).unwrap();
    assert_eq!(first["record"], "tick", "{first}");
    let last: serde_json::Value = serde_json::from_str(s.lines().last().unwrap()).unwrap();
    assert_eq!(last["record"], "summary", "the summary comes last: {last}");
    let live = &first["live"];
    for k in [
        "time",
        "elapsed_s",
        "period_s",
        "packets_per_s",
        "frames_per_s",
        "calls_per_s",
    ] {
        assert!(!live[k].is_null(), "{k}: {first}");
    }
    assert!(live["time"].as_str().unwrap().ends_with('Z'));
    assert!(first["last"]["sides"].is_object(), "{first}");
    assert!(first["drops"]["kernel"].is_u64());
}

/// The plot file is created before the capture is read: an unwritable path is one line and
/// exit status 2 at once; `sniff` creates it before giving up root, so a directory only root
/// may write still gets its plot.
#[test]
fn plot_file_is_created_first() {
    let out = run(&[
        "replay",
        capture("nghttp-nghttpd.pcap").to_str().unwrap(),
        "--plot",
        "/nonexistent-dir/x.svg",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "no ledger printed before the error");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot write the plot"), "{err}");
    if crate::live::skip_unless_root("sniff_plot_as_root") {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("views-root");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let svg = dir.join("live.svg");
    let out = run(&[
        "sniff",
        "--port",
        "9",
        "--duration",
        "300ms",
        "--plot",
        svg.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("running as nobody"),
        "root was given up: {err}"
    );
    assert!(err.contains(&format!("wrote {}", svg.display())), "{err}");
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(s.contains("no HTTP/2 frames to draw"), "{s}");
    let _ = std::fs::remove_dir_all(&dir);
}
