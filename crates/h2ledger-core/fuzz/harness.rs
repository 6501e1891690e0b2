//! Drives a `Ledger` with arbitrary bytes: the input is a sequence of operations on one
//! connection (whether it began with a SYN is the first byte), each a direction, a kind (data,
//! gap, close) and a length, followed by the data bytes. Everything the ledger exposes is then
//! read back, the findings included. The ledger must never panic, loop or grow without bound.

use h2ledger_core::analysis::Analysis;
use h2ledger_core::findings::{Findings, FindingsConfig};
use h2ledger_core::{Ledger, LedgerReport, Tally};
use h2ledger_tcp::{CloseKind, ConnId, ConnMeta, Dir, Sink, Write};

pub fn run(data: &[u8]) {
    let Some((&first, mut rest)) = data.split_first() else {
        return;
    };
    // The findings engine with its own flow tracker (the run's harness drives it with the
    // analysis' tracker too).
    let findings = Findings::new(FindingsConfig::default()).with_own_flow();
    let mut ledger = Ledger::new((
        (Tally::new(), Analysis::new(None).keep_finished()),
        findings,
    ));
    ledger.open(&ConnMeta {
        id: ConnId(0),
        first_src: "127.0.0.1:40000".parse().unwrap(),
        first_dst: "127.0.0.1:50051".parse().unwrap(),
        syn_sender: (first & 1 == 1).then_some(Dir::Fwd),
        start: 0,
        resumes: None,
    });
    // Start the interesting streams often: the preface, then frames.
    if first & 2 == 2 {
        let w = Write {
            index: 0,
            ts: 0,
            len: 24,
        };
        ledger.write(ConnId(0), Dir::Fwd, &w);
        ledger.data(ConnId(0), Dir::Fwd, &w, h2_frame_parser::PREFACE);
    }
    let mut index = [1u64, 0];
    let mut ts = 1;
    while rest.len() >= 3 {
        let (op, len) = (rest[0], u16::from_be_bytes([rest[1], rest[2]]) as usize);
        rest = &rest[3..];
        let dir = if op & 1 == 0 { Dir::Fwd } else { Dir::Rev };
        let d = (op & 1) as usize;
        ts += 1000;
        match op >> 1 & 3 {
            0 | 1 => {
                let n = len.min(rest.len());
                let w = Write {
                    index: index[d],
                    ts,
                    len: n as u32,
                };
                index[d] += 1;
                ledger.write(ConnId(0), dir, &w);
                // Deliver in one piece or two, as reassembly may.
                let (a, b) = rest[..n].split_at(n / 2 * usize::from(op & 8 == 8));
                ledger.data(ConnId(0), dir, &w, a);
                ledger.data(ConnId(0), dir, &w, b);
                rest = &rest[n..];
            }
            2 => ledger.gap(ConnId(0), dir, ts, len as u64),
            _ => ledger.close(ConnId(0), ts, CloseKind::Fin(dir)),
        }
    }
    ledger.close(ConnId(0), ts, CloseKind::EndOfCapture);
    let conns = ledger.connections();
    let report = LedgerReport::build(&conns, &ledger.observer.0 .0);
    let _ = report.sides.client.frames.total();
    let f = &mut ledger.observer.1;
    f.drain_new(|x| {
        let _ = x.title.len();
    });
    let r = f.report();
    assert!(r.findings.len() <= h2ledger_core::findings::MAX_FINDINGS);
    let an = &mut ledger.observer.0 .1;
    an.flush();
    let _ = an.report(&conns, None);
    an.drain_finished(|c| {
        let _ = c.status();
    });
}
