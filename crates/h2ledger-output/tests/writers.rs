//! The line views write their records by hand ([`h2ledger_output::jsonw`]) for speed: the bytes
//! must equal serde_json's of the same typed record on every frame and call of every golden
//! capture (escapes, nulls, floats, gRPC and not). And the analysis, which gets only the header
//! fields it reads, must give the same calls and report as when it gets every field.

use std::path::{Path, PathBuf};

use h2ledger_core::{FrameEvent, Observer};
use h2ledger_output::lines::{
    Addrs, CallLine, FrameLine, FrameMessages, HeaderJson, Messages, TimeMemo,
};
use h2ledger_run::{End, Obs, Options, Session, View, Wanted};
use h2ledger_tcp::LinkType;

fn golden_captures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../captures");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "pcap" || x == "pcapng"))
        .collect();
    files.sort();
    assert!(files.len() > 10, "the golden captures are there");
    files
}

/// The session options of `file`: its key log (beside it, or inside a pcapng).
fn options(file: &Path) -> Options {
    let mut keys = String::new();
    if let Ok(k) = std::fs::read_to_string(file.with_extension("keylog")) {
        keys.push_str(&k);
    }
    if let Some((text, _)) = h2ledger_run::input::key_log_of(&std::fs::read(file).unwrap()) {
        keys.push_str(&text);
    }
    Options {
        tls: h2ledger_tls::Tls::new(Default::default(), h2ledger_tls::KeyLog::parse(&keys)),
        ..Options::default()
    }
}

/// Feeds every packet of `file` to `s`, calling `after` after each.
fn replay<O: View>(file: &Path, s: &mut Session<O>, mut after: impl FnMut(&mut Session<O>)) {
    let mut cap = pcap::Capture::from_file_with_precision(file, pcap::Precision::Nano).unwrap();
    let linktype = LinkType(cap.get_datalink().0);
    while let Ok(pkt) = cap.next_packet() {
        let ts = pkt.header.ts.tv_sec * 1_000_000_000 + pkt.header.ts.tv_usec;
        let _ = s.feed(linktype, ts, pkt.data);
        after(s);
    }
}

/// Compares both writers on every frame it sees.
#[derive(Default)]
struct FrameCheck {
    addrs: Addrs,
    /// The printer's header cache: its lines must be the same bytes too.
    header_json: HeaderJson,
    frames: usize,
    first_difference: Option<(String, String)>,
}

impl View for FrameCheck {
    fn frames(&self) -> u64 {
        self.frames as u64
    }
}

impl Observer for FrameCheck {
    fn frame(&mut self, ev: &FrameEvent<'_>) {
        let line = FrameLine::new(ev, &mut self.addrs);
        let mut fast = Vec::new();
        line.write_json(&mut fast);
        let mut cached = Vec::new();
        line.write_json_cached(&mut cached, &mut self.header_json, ev);
        let slow = serde_json::to_vec(&line).unwrap();
        self.frames += 1;
        if (fast != slow || cached != slow) && self.first_difference.is_none() {
            let fast = if fast == slow { cached } else { fast };
            self.first_difference = Some((
                String::from_utf8_lossy(&fast).into_owned(),
                String::from_utf8_lossy(&slow).into_owned(),
            ));
        }
    }
}

#[test]
fn frame_lines_equal_serde() {
    let mut n = 0;
    for f in golden_captures() {
        let mut s = Session::new(FrameCheck::default(), options(&f));
        replay(&f, &mut s, |_| {});
        s.end();
        let c = s.view();
        if let Some((fast, slow)) = &c.first_difference {
            panic!("{}: hand writer\n{fast}\nserde_json\n{slow}", f.display());
        }
        n += c.frames;
    }
    assert!(n > 10_000, "{n} frames compared");
}

/// Every call of `file` as the hand writer writes it, checked against serde_json's bytes.
fn call_lines(file: &Path, all_headers: bool) -> Vec<String> {
    let obs = Obs::new(&Wanted {
        analysis: true,
        calls_only: true,
        all_headers,
        ..Wanted::default()
    });
    let mut s = Session::new(obs, options(file));
    let mut lines = Vec::new();
    let mut times = TimeMemo::default();
    let mut take = |s: &mut Session| {
        s.drain_calls(|c| {
            let line = CallLine::new(&c);
            let mut fast = Vec::new();
            line.write_json(&mut fast);
            let mut memo = Vec::new();
            line.write_json_memo(&mut memo, &mut times);
            let slow = serde_json::to_vec(&line).unwrap();
            assert_eq!(memo, fast, "{}: the writer's time memo", file.display());
            let fast = String::from_utf8(fast).unwrap();
            assert_eq!(fast, String::from_utf8(slow).unwrap(), "{}", file.display());
            lines.push(fast);
        });
    };
    replay(file, &mut s, &mut take);
    s.end();
    take(&mut s);
    lines
}

#[test]
fn call_lines_equal_serde() {
    let n: usize = golden_captures()
        .iter()
        .map(|f| call_lines(f, false).len())
        .sum();
    assert!(n > 1000, "{n} calls compared");
}

/// The decoder of `--messages` with the schemas of the captures: the proto captures'
/// everything.proto and gRPC's health.proto.
fn decoder() -> Messages {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let schemas = h2ledger_proto::Schemas::builder()
        .proto(root.join("captures/src/proto-everything/everything.proto"))
        .proto(root.join("crates/h2ledger-proto/tests/data/health.proto"))
        .build()
        .unwrap();
    Messages::new(schemas, h2ledger_proto::Limits::default(), 100)
}

/// `calls --messages`: every call's record with its messages, both writers, on every golden
/// capture (gRPC and not, with and without a schema, compressed, cut, not parsing); keys in
/// the published order (a message's `message` is protojson's, in the schema's order).
#[test]
fn call_lines_with_messages_equal_serde() {
    let dec = decoder();
    let (mut calls, mut msgs) = (0, 0);
    for f in golden_captures() {
        let obs = Obs::new(&Wanted {
            analysis: true,
            calls_only: true,
            messages: Some(Default::default()),
            ..Wanted::default()
        });
        let mut s = Session::new(obs, options(&f));
        let mut take = |s: &mut Session| {
            s.drain_calls(|c| {
                let m = dec.call(c.grpc, c.rec.conn, c.rec.stream);
                msgs += m.as_ref().map_or(0, |m| m.dirs[0].len() + m.dirs[1].len());
                let line = CallLine::new(&c).with_messages(m.as_ref());
                let mut fast = Vec::new();
                line.write_json(&mut fast);
                let slow = serde_json::to_vec(&line).unwrap();
                assert_eq!(
                    String::from_utf8_lossy(&fast),
                    String::from_utf8_lossy(&slow),
                    "{}",
                    f.display()
                );
                assert_ordered(&f.display().to_string(), &fast);
                calls += 1;
            });
        };
        replay(&f, &mut s, &mut take);
        s.end();
        take(&mut s);
    }
    assert!(calls > 1000, "{calls} calls compared");
    assert!(msgs > 1000, "{msgs} messages compared");
}

/// `frames --messages`: the DATA frames with their `grpc_messages`, both writers.
#[derive(Default)]
struct FrameMsgCheck {
    addrs: Addrs,
    msgs: Option<FrameMessages>,
    with_messages: usize,
    first_difference: Option<(String, String)>,
}

impl View for FrameMsgCheck {
    fn frames(&self) -> u64 {
        0
    }
}

impl Observer for FrameMsgCheck {
    fn wants_data(&self, conn: h2ledger_tcp::ConnId, stream: h2_frame_parser::StreamId) -> bool {
        self.msgs
            .as_ref()
            .is_some_and(|m| m.wants_data(conn, stream))
    }
    fn gap(&mut self, conn: h2ledger_tcp::ConnId, dir: h2ledger_tcp::Dir, _: i64, lost: bool) {
        if let Some(m) = &mut self.msgs {
            m.gap(conn, dir, lost);
        }
    }
    fn close(&mut self, s: &h2ledger_core::ConnSummary) {
        if let Some(m) = &mut self.msgs {
            m.close(s.id);
        }
    }
    fn frame(&mut self, ev: &FrameEvent<'_>) {
        let Some(m) = &mut self.msgs else {
            return;
        };
        let got = m.frame(ev, true);
        if got.msgs.is_empty() {
            return;
        }
        self.with_messages += 1;
        let line = FrameLine::new(ev, &mut self.addrs).with_messages(&got.msgs);
        let mut fast = Vec::new();
        line.write_json(&mut fast);
        let slow = serde_json::to_vec(&line).unwrap();
        if fast != slow && self.first_difference.is_none() {
            self.first_difference = Some((
                String::from_utf8_lossy(&fast).into_owned(),
                String::from_utf8_lossy(&slow).into_owned(),
            ));
        }
        assert_ordered("frame", &fast);
    }
}

#[test]
fn frame_lines_with_messages_equal_serde() {
    let mut n = 0;
    for f in golden_captures() {
        let check = FrameMsgCheck {
            msgs: Some(FrameMessages::new(decoder())),
            ..FrameMsgCheck::default()
        };
        let mut s = Session::new(check, options(&f));
        replay(&f, &mut s, |_| {});
        s.end();
        let c = s.view();
        if let Some((fast, slow)) = &c.first_difference {
            panic!("{}: hand writer\n{fast}\nserde_json\n{slow}", f.display());
        }
        n += c.with_messages;
    }
    assert!(n > 1000, "{n} frames with messages compared");
}

/// The analysis gets only a block's first field and the fields it reads (`ledger::
/// analysis_header`): its calls and report must equal those of a run that copies every field.
/// Fails when the analysis reads a field that is not kept.
#[test]
fn analysis_reads_only_kept_headers() {
    let mut calls = 0;
    for f in golden_captures() {
        let (kept, all) = (call_lines(&f, false), call_lines(&f, true));
        assert_eq!(
            kept,
            all,
            "{}: calls differ with every header field",
            f.display()
        );
        calls += kept.len();
        let report = |all: bool| {
            let obs = Obs::new(&Wanted {
                analysis: true,
                all_headers: all,
                ..Wanted::default()
            });
            let mut s = Session::new(obs, options(&f));
            replay(&f, &mut s, |_| {});
            let done = s.finish(&End::Complete, None);
            serde_json::to_string(&done.report).unwrap()
        };
        assert_eq!(
            report(false),
            report(true),
            "{}: the report differs",
            f.display()
        );
    }
    assert!(calls > 1000, "{calls} calls compared");
}

/// Checks, while it is read, that every JSON object's keys are in byte order (the published
/// order), except that a report's `phases` come last.
struct Ordered;

impl<'de> serde::Deserialize<'de> for Ordered {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(OrderVisitor)
    }
}

struct OrderVisitor;

impl<'de> serde::de::Visitor<'de> for OrderVisitor {
    type Value = Ordered;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Ordered, E> {
        Ok(Ordered)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Ordered, E> {
        Ok(Ordered)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Ordered, E> {
        Ok(Ordered)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Ordered, E> {
        Ok(Ordered)
    }
    fn visit_str<E>(self, _: &str) -> Result<Ordered, E> {
        Ok(Ordered)
    }
    fn visit_unit<E>(self) -> Result<Ordered, E> {
        Ok(Ordered)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<Ordered, A::Error> {
        while a.next_element::<Ordered>()?.is_some() {}
        Ok(Ordered)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> Result<Ordered, A::Error> {
        let mut prev: Option<String> = None;
        let mut after_phases = false;
        while let Some(k) = a.next_key::<String>()? {
            if k == "message" {
                // A gRPC message's canonical JSON: protojson's order (the schema's), the
                // program's data like a header value, not a record of ours.
                a.next_value::<serde::de::IgnoredAny>()?;
            } else {
                a.next_value::<Ordered>()?;
            }
            if after_phases {
                return Err(serde::de::Error::custom(format!(
                    "\"{k}\" after \"phases\""
                )));
            }
            let in_order = prev.as_ref().is_none_or(|p| p.as_bytes() < k.as_bytes());
            if k == "phases" && !in_order {
                // A report's phases come after its other keys.
                after_phases = true;
                continue;
            }
            if let Some(p) = &prev {
                if p.as_bytes() >= k.as_bytes() {
                    return Err(serde::de::Error::custom(format!("\"{k}\" after \"{p}\"")));
                }
            }
            prev = Some(k);
        }
        Ok(Ordered)
    }
}

fn assert_ordered(what: &str, text: &[u8]) {
    let text = std::str::from_utf8(text).unwrap();
    for line in text.lines().filter(|l| l.starts_with('{')) {
        // JSON lines: each line; a document: the whole text.
        if serde_json::from_str::<serde_json::Value>(line).is_err() {
            break;
        }
        if let Err(e) = serde_json::from_str::<Ordered>(line) {
            panic!("{what}: keys out of order: {e}\n{line}");
        }
    }
    if let Err(e) = serde_json::from_str::<Ordered>(text.trim_end()) {
        if serde_json::from_str::<serde_json::Value>(text.trim_end()).is_ok() {
            panic!("{what}: keys out of order: {e}");
        }
    }
}

/// Every JSON record h2ledger prints declares its keys in the published order (alphabetical,
/// `phases` last): reports with analysis and phases (document and lines), the live view's tick
/// line, the demo's and compare's documents, on every golden capture.
#[test]
fn every_json_record_keeps_the_published_key_order() {
    use h2ledger_output::{json, live, Format, Style};
    let mut checked = 0;
    for f in golden_captures() {
        let mut s = Session::new(
            Obs::new(&Wanted {
                analysis: true,
                splitter: Some(h2ledger_core::Splitter::every(1_000_000_000)),
                ..Wanted::default()
            }),
            options(&f),
        );
        replay(&f, &mut s, |_| {});
        let tick = s.tick();
        let done = s.finish(&End::Complete, None);
        let whole = &done.report;
        let name = f.display().to_string();
        let mut doc = Vec::new();
        json::write_json(&mut doc, whole, &mut s.phases(&done)).unwrap();
        assert_ordered(&name, &doc);
        let mut lines = Vec::new();
        json::write_jsonl(&mut lines, whole, &mut s.phases(&done)).unwrap();
        assert_ordered(&name, &lines);
        let mut cmp = Vec::new();
        json::write_compare(&mut cmp, whole, whole, false);
        assert_ordered(&name, &cmp);
        let mut line = Vec::new();
        let mut view = live::LiveView::new("lo", live::TickFormat::Jsonl, false, Style::default());
        view.tick(&mut line, &tick, Default::default());
        assert_ordered(&name, &line);
        let reports: Vec<h2ledger_run::Report> = s.phases(&done).collect();
        let results: Vec<h2ledger_output::demo::PhaseResult> = reports
            .iter()
            .map(|r| h2ledger_output::demo::PhaseResult {
                name: r.name.clone(),
                callers: 1,
                rate_per_caller: 1.0,
                calls_made: r.ledger.calls,
                calls_ok: r.ledger.calls,
                start_ns: r.start.unwrap_or(0),
                end_ns: r.end.unwrap_or(0),
            })
            .collect();
        let stack = h2ledger_output::demo::Stack {
            name: "grpc-go",
            version: "1",
            program: "p",
            port: 1,
            bdp_known: true,
            results: &results,
            phases: &reports,
            whole,
            capture: whole.capture.as_ref().unwrap(),
            tcp: whole.tcp.unwrap(),
        };
        for format in [Format::Json, Format::Jsonl] {
            let mut demo = Vec::new();
            h2ledger_output::demo::write_demo(
                &mut demo,
                &mut std::io::sink(),
                format,
                std::slice::from_ref(&stack),
                false,
                Default::default(),
                3,
                10,
                Style::default(),
            )
            .unwrap();
            assert_ordered(&name, &demo);
        }
        checked += 1;
    }
    assert!(checked > 10);
}

/// The demo's findings per phase agree with its line (issue 38): on the article's capture, the
/// first phase (1 caller x 24/s) has grpc-go's BDP PINGs at 1.00 a call on each side, and the
/// second (8 callers x 3/s) does not reach the rule, so only the first lists the finding;
/// the whole run pools both (0.58 and 0.60).
#[test]
fn demo_findings_are_per_phase() {
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../captures/grpcgo-article.pcap");
    // The workload's phase boundary (captures/grpcgo-article.workload.json: 1796035824.6646295).
    let cut = 1_796_035_824_664_629_500;
    let obs = Obs::new(&Wanted {
        analysis: true,
        splitter: Some(h2ledger_core::analysis::Splitter::at(vec![
            h2ledger_core::analysis::Cut::At(cut),
        ])),
        findings: Some(Default::default()),
        ..Wanted::default()
    });
    let mut s = Session::new(obs, options(&f));
    replay(&f, &mut s, |_| {});
    let done = s.finish(&End::Complete, None);
    let whole = done.report.findings.clone().unwrap();
    let pooled: Vec<f64> = whole
        .iter()
        .filter(|x| x.id.name() == "bdp-ping-per-call")
        .map(|x| x.evidence.f("bdp_pings_per_call"))
        .collect();
    assert_eq!(pooled.len(), 2);
    assert!(
        pooled.iter().all(|r| (0.55..0.65).contains(r)),
        "{pooled:?}"
    );
    let phases: Vec<_> = s.phases(&done).collect();
    assert_eq!(phases.len(), 2);
    let per: Vec<Vec<f64>> = phases
        .iter()
        .map(|p| {
            h2ledger_output::demo::phase_findings(p)
                .iter()
                .filter(|x| x.id.name() == "bdp-ping-per-call")
                .map(|x| x.evidence.f("bdp_pings_per_call"))
                .collect()
        })
        .collect();
    assert_eq!(per[0].len(), 2, "{per:?}");
    assert!(per[0].iter().all(|r| (*r - 1.0).abs() < 0.05), "{per:?}");
    assert!(per[1].is_empty(), "{per:?}");
    // Its title says the phase's numbers.
    let t = h2ledger_output::demo::phase_findings(&phases[0]);
    assert!(t.iter().any(|x| x.title.contains("(1.00 a call)")), "{t:?}");
}
