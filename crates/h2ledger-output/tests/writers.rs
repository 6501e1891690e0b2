//! The line views write their records by hand ([`h2ledger_output::jsonw`]) for speed: the bytes
//! must equal serde_json's of the same typed record on every frame and call of every golden
//! capture (escapes, nulls, floats, gRPC and not). And the analysis, which gets only the header
//! fields it reads, must give the same calls and report as when it gets every field.

use std::path::{Path, PathBuf};

use h2ledger_core::{FrameEvent, Observer};
use h2ledger_output::lines::{Addrs, CallLine, FrameLine};
use h2ledger_run::{Obs, Pipeline, Wanted};

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

/// Feeds every packet of `file` (with its key log, if one is beside it) to `p`.
fn replay<O: Observer>(file: &Path, p: &mut Pipeline<O>, mut after: impl FnMut(&mut Pipeline<O>)) {
    let mut keys = String::new();
    if let Ok(k) = std::fs::read_to_string(file.with_extension("keylog")) {
        keys.push_str(&k);
    }
    if let Some(e) = h2ledger_tls::keylog_from_pcapng(&std::fs::read(file).unwrap()) {
        keys.push_str(&e.text);
    }
    p.tls = h2ledger_tls::Tls::new(Default::default(), h2ledger_tls::KeyLog::parse(&keys));
    let mut cap = pcap::Capture::from_file_with_precision(file, pcap::Precision::Nano).unwrap();
    let linktype = cap.get_datalink().0;
    while let Ok(pkt) = cap.next_packet() {
        let ts = pkt.header.ts.tv_sec * 1_000_000_000 + pkt.header.ts.tv_usec;
        p.packet(linktype, ts, pkt.data);
        after(p);
    }
    p.finish();
}

/// Compares both writers on every frame it sees.
#[derive(Default)]
struct FrameCheck {
    addrs: Addrs,
    frames: usize,
    first_difference: Option<(String, String)>,
}

impl Observer for FrameCheck {
    fn frame(&mut self, ev: &FrameEvent<'_>) {
        let line = FrameLine::new(ev, &mut self.addrs);
        let mut fast = Vec::new();
        line.write_json(&mut fast);
        let slow = serde_json::to_vec(&line).unwrap();
        self.frames += 1;
        if fast != slow && self.first_difference.is_none() {
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
        let mut p = Pipeline::new(FrameCheck::default());
        replay(&f, &mut p, |_| {});
        let c = &p.ledger.observer;
        if let Some((fast, slow)) = &c.first_difference {
            panic!("{}: hand writer\n{fast}\nserde_json\n{slow}", f.display());
        }
        n += c.frames;
    }
    assert!(n > 10_000, "{n} frames compared");
}

/// Every call of `file` as the hand writer writes it, checked against serde_json's bytes.
fn call_lines(file: &Path, all_headers: bool) -> Vec<String> {
    let mut obs = Obs::new(&Wanted {
        analysis: true,
        ..Wanted::default()
    });
    obs.all_headers = all_headers;
    obs.analysis = obs.analysis.map(|a| a.calls_only());
    let mut p = Pipeline::new(obs);
    let mut lines = Vec::new();
    let mut take = |p: &mut Pipeline<Obs>| {
        if let Some(a) = p.ledger.observer.analysis.as_mut() {
            a.drain_finished(|c| {
                let line = CallLine::new(&c);
                let mut fast = Vec::new();
                line.write_json(&mut fast);
                let slow = serde_json::to_vec(&line).unwrap();
                let fast = String::from_utf8(fast).unwrap();
                assert_eq!(fast, String::from_utf8(slow).unwrap(), "{}", file.display());
                lines.push(fast);
            });
        }
    };
    replay(file, &mut p, &mut take);
    if let Some(a) = p.ledger.observer.analysis.as_mut() {
        a.flush();
    }
    take(&mut p);
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
            let mut obs = Obs::new(&Wanted {
                analysis: true,
                ..Wanted::default()
            });
            obs.all_headers = all;
            let mut p = Pipeline::new(obs);
            replay(&f, &mut p, |_| {});
            let whole = p.ledger_report(&p.ledger.observer.tally);
            let (r, _) = h2ledger_run::build(&mut p, whole);
            serde_json::to_string(&r).unwrap()
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
