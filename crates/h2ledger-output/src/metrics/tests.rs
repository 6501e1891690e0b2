use super::*;
use h2ledger_run::Drops;

fn page(m: &Metrics) -> String {
    m.encode(Exposition::Prometheus)
}

/// The value of the one sample line that starts with `series` (name and labels, exact).
fn value(page: &str, series: &str) -> Option<f64> {
    page.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.parse().ok())
}

#[test]
fn names_follow_the_conventions() {
    let m = Metrics::new(DEFAULT_MAX_PATHS, "9.9.9");
    // Families without a series yet print nothing: calls, durations, findings.
    m.record(0, "/a", StatusKey::Grpc(0), Some(1));
    m.finding("x", Severity::info, 1);
    let p = page(&m);
    for line in [
        "# TYPE h2ledger_frames_total counter",
        "# TYPE h2ledger_bdp_pings_total counter",
        "# TYPE h2ledger_writes_total counter",
        "# TYPE h2ledger_bytes_total counter",
        "# TYPE h2ledger_calls_total counter",
        "# TYPE h2ledger_call_duration_seconds histogram",
        "# TYPE h2ledger_ping_rtt_seconds histogram",
        "# TYPE h2ledger_flow_stalls_total counter",
        "# TYPE h2ledger_findings_total counter",
        "# TYPE h2ledger_connections_open gauge",
        "# TYPE h2ledger_connections_total counter",
        "# TYPE h2ledger_packets_total counter",
        "# TYPE h2ledger_packets_dropped_total counter",
        "# TYPE h2ledger_limits_hit_total counter",
        "# TYPE h2ledger_build_info gauge",
        "h2ledger_build_info{version=\"9.9.9\"} 1",
        "h2ledger_frames_total{side=\"client\",type=\"HEADERS\"} 0",
        "h2ledger_frames_total{side=\"server\",type=\"UNKNOWN\"} 0",
        "h2ledger_ping_rtt_seconds_bucket{side=\"client\",le=\"1e-05\"} 0",
        "h2ledger_flow_stalls_total{side=\"server\",window=\"both\"} 0",
        "h2ledger_packets_dropped_total{by=\"kernel\"} 0",
        "h2ledger_limits_hit_total{limit=\"metrics_paths\"} 0",
    ] {
        assert!(p.lines().any(|l| l == line), "missing {line:?} in\n{p}");
    }
    let om = m.encode(Exposition::OpenMetrics);
    assert!(om.ends_with("# EOF\n"));
    assert!(om.contains("# TYPE h2ledger_frames counter\n"));
    assert!(om.contains("# UNIT h2ledger_call_duration_seconds seconds\n"));
}

#[test]
fn counters_are_raised_never_lowered() {
    let m = Metrics::new(DEFAULT_MAX_PATHS, "0");
    let mut f = Figures::default();
    f.sides.client.frames.0[FrameClass::Ping.index()] = 7;
    f.sides.server.bdp_pings = 3;
    f.connections = 2;
    f.open = 2;
    f.drops = Some(Drops {
        kernel: 5,
        ..Drops::default()
    });
    f.stalls.server = [1, 2, 3];
    f.limits.insert("connections", 4);
    m.set(&f);
    let p = page(&m);
    assert_eq!(
        value(&p, "h2ledger_frames_total{side=\"client\",type=\"PING\"}"),
        Some(7.0)
    );
    assert_eq!(
        value(&p, "h2ledger_bdp_pings_total{side=\"server\"}"),
        Some(3.0)
    );
    assert_eq!(
        value(
            &p,
            "h2ledger_flow_stalls_total{side=\"server\",window=\"connection\"}"
        ),
        Some(2.0)
    );
    assert_eq!(value(&p, "h2ledger_connections_open"), Some(2.0));
    assert_eq!(
        value(&p, "h2ledger_packets_dropped_total{by=\"kernel\"}"),
        Some(5.0)
    );
    assert_eq!(
        value(&p, "h2ledger_limits_hit_total{limit=\"connections\"}"),
        Some(4.0)
    );
    // A lower figure (it cannot happen with the settled ledger) leaves the counter; the gauge
    // follows.
    f.sides.client.frames = Default::default();
    f.open = 0;
    m.set(&f);
    let p = page(&m);
    assert_eq!(
        value(&p, "h2ledger_frames_total{side=\"client\",type=\"PING\"}"),
        Some(7.0)
    );
    assert_eq!(value(&p, "h2ledger_connections_open"), Some(0.0));
}

#[test]
fn calls_by_path_and_status_with_durations() {
    let m = Metrics::new(DEFAULT_MAX_PATHS, "0");
    let path = "/grpc.health.v1.Health/Check";
    m.record(0, path, StatusKey::Grpc(0), Some(120_000));
    m.record(0, path, StatusKey::Grpc(0), Some(3_000_000));
    m.record(0, path, StatusKey::Grpc(14), None);
    m.record(1, "/index.html", StatusKey::Http(200), Some(40_000));
    m.record(1, "/index.html", StatusKey::Reset, None);
    m.record(2, "/x", StatusKey::Grpc(99), Some(1));
    m.record(2, "/x", StatusKey::None, None);
    let p = page(&m);
    let calls = |l: &str| value(&p, &format!("h2ledger_calls_total{{{l}}}"));
    assert_eq!(calls(&format!("path=\"{path}\",status=\"OK\"")), Some(2.0));
    assert_eq!(
        calls(&format!("path=\"{path}\",status=\"UNAVAILABLE\"")),
        Some(1.0)
    );
    assert_eq!(calls("path=\"/index.html\",status=\"200\""), Some(1.0));
    assert_eq!(
        calls("path=\"/index.html\",status=\"RST_STREAM\""),
        Some(1.0)
    );
    assert_eq!(calls("path=\"/x\",status=\"Code(99)\""), Some(1.0));
    assert_eq!(calls("path=\"/x\",status=\"none\""), Some(1.0));
    let h = |s: &str| value(&p, &format!("h2ledger_call_duration_seconds_{s}"));
    assert_eq!(h(&format!("count{{path=\"{path}\"}}")), Some(2.0));
    assert_eq!(
        h(&format!("bucket{{path=\"{path}\",le=\"5e-05\"}}")),
        Some(0.0)
    );
    assert_eq!(
        h(&format!("bucket{{path=\"{path}\",le=\"0.00025\"}}")),
        Some(1.0)
    );
    assert_eq!(
        h(&format!("bucket{{path=\"{path}\",le=\"0.005\"}}")),
        Some(2.0)
    );
    assert_eq!(
        h(&format!("bucket{{path=\"{path}\",le=\"+Inf\"}}")),
        Some(2.0)
    );
    assert_eq!(h("count{path=\"/index.html\"}"), Some(1.0));
}

/// Quotes, backslashes, newlines and other control bytes in a path (built from bytes, as the
/// analysis names it) leave one well-formed line per series.
#[test]
fn hostile_paths_are_escaped() {
    let raw: &[u8] = b"/a\"b\\c\nd\re\x1b[31m\x00\xff}\n# TYPE evil counter";
    let text = h2ledger_core::analysis::escape_bytes(raw);
    let m = Metrics::new(DEFAULT_MAX_PATHS, "0");
    m.record(0, &text, StatusKey::Http(200), Some(1_000));
    let p = page(&m);
    let line = p
        .lines()
        .find(|l| l.starts_with("h2ledger_calls_total{"))
        .expect("a calls line");
    assert_eq!(
        line,
        r#"h2ledger_calls_total{path="/a\"b\\\\c\\x0ad\\x0de\\x1b[31m\\x00\\xff}\\x0a# TYPE evil counter",status="200"} 1"#
    );
    for l in p.lines() {
        assert!(
            l.starts_with("# HELP ") || l.starts_with("# TYPE ") || l.starts_with("h2ledger_"),
            "{l:?}"
        );
        assert!(!l.chars().any(|c| c.is_control()), "{l:?}");
    }
    assert!(!p.lines().any(|l| l.starts_with("# TYPE evil")));
}

#[test]
fn paths_beyond_the_cap_are_other_and_counted() {
    let m = Metrics::new(3, "0");
    for i in 0..10_000usize {
        m.record(i, &format!("/svc/m{i}"), StatusKey::Grpc(0), Some(1_000));
    }
    let p = page(&m);
    assert_eq!(
        value(&p, "h2ledger_calls_total{path=\"other\",status=\"OK\"}"),
        Some(9997.0)
    );
    assert_eq!(
        value(&p, "h2ledger_limits_hit_total{limit=\"metrics_paths\"}"),
        Some(9997.0)
    );
    assert_eq!(p.matches("h2ledger_calls_total{").count(), 4);
    assert_eq!(
        p.matches("h2ledger_call_duration_seconds_count{").count(),
        4
    );
}

/// The page of 10,000 distinct paths under the default cap stays under a fixed size, and
/// distinct statuses are bounded too.
#[test]
fn the_page_is_bounded() {
    let m = Metrics::new(DEFAULT_MAX_PATHS, "0");
    for i in 0..10_000usize {
        let status = StatusKey::Http((i % 1000) as u16);
        m.record(
            i,
            &format!("/p/{i}/{}", "x".repeat(40)),
            status,
            Some(1_000),
        );
    }
    let p = page(&m);
    assert!(p.len() < 1 << 20, "{} bytes", p.len());
    assert!(value(&p, "h2ledger_limits_hit_total{limit=\"metrics_statuses\"}").unwrap() > 0.0);
}

#[test]
fn accept_header_picks_the_format() {
    let prom = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    assert_eq!(Exposition::from_accept(Some(prom)), Exposition::OpenMetrics);
    assert_eq!(
        Exposition::from_accept(Some("text/plain")),
        Exposition::Prometheus
    );
    assert_eq!(Exposition::from_accept(None), Exposition::Prometheus);
}

#[test]
fn findings_hook() {
    let m = Metrics::new(DEFAULT_MAX_PATHS, "0");
    m.finding("ping-flood", Severity::critical, 2);
    let p = page(&m);
    assert_eq!(
        value(
            &p,
            "h2ledger_findings_total{id=\"ping-flood\",severity=\"critical\"}"
        ),
        Some(2.0)
    );
}

#[test]
fn the_same_figures_give_the_same_page() {
    let one = || {
        let m = Metrics::new(DEFAULT_MAX_PATHS, "0");
        for i in 0..50usize {
            m.record(
                i,
                &format!("/m{i}"),
                StatusKey::Grpc((i % 3) as u16),
                Some(1_000),
            );
        }
        page(&m)
    };
    let p = one();
    assert_eq!(p, one());
    let buckets: Vec<&str> = p
        .lines()
        .filter(|l| l.starts_with("h2ledger_ping_rtt_seconds") && l.contains("side=\"client\""))
        .collect();
    assert_eq!(buckets.len(), RTT_BUCKETS.len() + 3);
    assert!(buckets[0].contains("le=\"1e-05\""));
    assert!(buckets[RTT_BUCKETS.len()].contains("le=\"+Inf\""));
    assert!(buckets[RTT_BUCKETS.len() + 2].starts_with("h2ledger_ping_rtt_seconds_count"));
}
