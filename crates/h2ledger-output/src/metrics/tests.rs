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

/// The `_bucket` and `_count` lines of histogram `name` (its name and `_`), from `le` on.
fn bucket_lines(page: &str, name: &str) -> Vec<String> {
    page.lines()
        .filter(|l| l.starts_with(name) && !l.contains("_sum") && !l.starts_with('#'))
        .map(|l| {
            // Keep `le` and the value: the labels before it differ between the two pages.
            let le = l.find("le=").map_or("", |i| &l[i..]);
            let le = if le.is_empty() {
                l.rsplit(' ').next().unwrap_or("")
            } else {
                le
            };
            le.to_string()
        })
        .collect()
}

/// A batch puts each value in the bucket prometheus-client's own `Histogram` puts it in, the
/// bounds themselves included, and its `_count` is theirs (decision 206).
#[test]
fn a_batch_buckets_as_prometheus_client_does() {
    use prometheus_client::metrics::histogram::Histogram;
    let values: Vec<i64> = vec![
        0,
        1,
        9_999,
        10_000,
        10_001,
        49_999,
        50_000,
        50_001,
        100_000,
        250_000,
        999_999,
        1_000_000,
        2_500_000,
        100_000_000,
        999_999_999,
        1_000_000_000,
        2_500_000_000,
        2_500_000_001,
        10_000_000_000,
        10_000_000_001,
        i64::MAX / 4,
    ];
    for (bounds, is_call) in [(CALL_BUCKETS, true), (RTT_BUCKETS, false)] {
        let h = Histogram::new(bounds);
        let mut r = prometheus_client::registry::Registry::default();
        r.register("x", "x", h.clone());
        let m = Metrics::new(DEFAULT_MAX_PATHS, "0");
        let mut b = Batch::default();
        for v in &values {
            h.observe(*v as f64 / 1e9);
            if is_call {
                b.add(0, "/a", StatusKey::Grpc(0), Some(*v));
            } else {
                b.ping_rtt(Side::Client, *v);
            }
        }
        m.flush(&mut b);
        let mut theirs = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut theirs, &r).unwrap();
        let name = if is_call {
            "h2ledger_call_duration_seconds_"
        } else {
            "h2ledger_ping_rtt_seconds_"
        };
        let client: String = page(&m)
            .lines()
            .filter(|l| !l.contains("side=\"server\""))
            .map(|l| format!("{l}\n"))
            .collect();
        let ours = bucket_lines(&client, name);
        let want = bucket_lines(&theirs, "x_");
        assert_eq!(ours.len(), bounds.len() + 2, "{ours:?}");
        assert_eq!(ours, want);
    }
}

/// Calls handed over in one batch give the page they give one by one: the same labels (the
/// statuses beyond the cap are `other` in the order calls came), counts and limits.
#[test]
fn a_batch_gives_the_page_of_calls_one_by_one() {
    let calls: Vec<(usize, StatusKey, Option<i64>)> = (0..3_000usize)
        .map(|i| {
            let status = StatusKey::Http((i * 7 % 90) as u16);
            (i % 5, status, (i % 3 != 0).then_some(i as i64 * 1_000))
        })
        .collect();
    let one = Metrics::new(3, "0");
    for (m, s, d) in &calls {
        one.record(*m, &format!("/m{m}"), *s, *d);
    }
    let batched = Metrics::new(3, "0");
    let mut b = Batch::default();
    for (m, s, d) in &calls {
        b.add(*m as u32, &format!("/m{m}"), *s, *d);
        if b.full() {
            batched.flush(&mut b);
        }
    }
    batched.flush(&mut b);
    let no_sums = |p: String| -> String {
        p.lines()
            .filter(|l| !l.contains("_sum{"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let (a, z) = (no_sums(page(&one)), no_sums(page(&batched)));
    assert!(value(&a, "h2ledger_limits_hit_total{limit=\"metrics_statuses\"}").unwrap() > 0.0);
    assert_eq!(a, z);
}

/// `h2ledger_process_connections_total`: counts raised to the owners' totals, the first
/// `MAX_COMMS` commands by name, the rest `other` and counted in `metrics_comms`; a command
/// named once keeps its label after the cap is reached.
#[test]
fn process_labels_are_capped() {
    let m = Metrics::new(DEFAULT_MAX_PATHS, "9.9.9");
    m.processes([(Side::Client, "h2load", 2), (Side::Server, "nghttpd", 2)]);
    m.processes([(Side::Client, "h2load", 3), (Side::Server, "nghttpd", 2)]);
    let p = page(&m);
    let v = |s: &str| value(&p, s);
    assert_eq!(
        v("h2ledger_process_connections_total{side=\"client\",comm=\"h2load\"}"),
        Some(3.0)
    );
    assert_eq!(
        v("h2ledger_process_connections_total{side=\"server\",comm=\"nghttpd\"}"),
        Some(2.0)
    );
    let names: Vec<String> = (0..MAX_COMMS + 5).map(|i| format!("w{i:02}")).collect();
    let mut all: Vec<(Side, &str, u64)> = names
        .iter()
        .map(|n| (Side::Client, n.as_str(), 1))
        .collect();
    all.push((Side::Client, "h2load", 4));
    m.processes(all);
    let p = page(&m);
    let v = |s: &str| value(&p, s);
    // h2load and nghttpd hold 2 of the 32: w00 to w29 are named, w30 to w36 are other.
    assert_eq!(
        v("h2ledger_process_connections_total{side=\"client\",comm=\"w29\"}"),
        Some(1.0)
    );
    assert_eq!(
        v("h2ledger_process_connections_total{side=\"client\",comm=\"w30\"}"),
        None
    );
    assert_eq!(
        v("h2ledger_process_connections_total{side=\"client\",comm=\"other\"}"),
        Some(7.0)
    );
    assert_eq!(
        v("h2ledger_limits_hit_total{limit=\"metrics_comms\"}"),
        Some(7.0)
    );
    assert_eq!(
        v("h2ledger_process_connections_total{side=\"client\",comm=\"h2load\"}"),
        Some(4.0)
    );
}
