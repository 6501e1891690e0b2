//! What a person looks at (issue 12, items 8 and 9): the `--plot` SVG (small multiples per
//! frame kind and side, round ticks, a one-bin capture drawn, a legend only for what is drawn,
//! `wrote FILE`), and the live view of `sniff --every` (a header with the clock, elapsed time,
//! rates and drops; the last period empty when it was; no escape sequences unless stdout is a
//! terminal that can take them).

use crate::util::*;

/// `replay FILE ARGS --plot TMP`: the SVG and stderr.
fn plot(file: &str, args: &[&str]) -> (String, String) {
    let svg = std::env::temp_dir().join(format!(
        "h2ledger-views-{}-{file}-{}.svg",
        std::process::id(),
        args.len()
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
fn plot_of_a_one_bin_capture_has_marks() {
    // 34 ms: one 100 ms bucket.
    let (s, _) = plot("nghttp-nghttpd.pcap", &[]);
    assert_eq!(bars(&s, HEADERS_BLUE), 2, "a HEADERS bar per side");
    assert!(
        s.contains("over the whole 34 ms (one bin)"),
        "{:?}",
        texts(&s)
    );
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
    // 0.5 s bins over 6 s: 12 bars per side for HEADERS, PING bars on both sides.
    assert_eq!(bars(&s, HEADERS_BLUE), 24);
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
