//! Reports as JSON: one document (the whole capture, with its phases as the last key), or JSON
//! lines (a `phase` record per phase, then the `summary`). Every object is a type whose fields
//! are declared in the published order (alphabetical; `phases` last), serialized once.

use std::io::{BufWriter, Write};

use h2ledger_run::Report;
use serde::Serialize;

/// Writes `v` as one pretty-printed JSON document and a newline.
pub fn write_pretty<T: Serialize + ?Sized>(out: &mut dyn Write, v: &T) -> std::io::Result<()> {
    let mut w = BufWriter::with_capacity(1 << 16, out);
    serde_json::to_writer_pretty(&mut w, v)?;
    writeln!(w)?;
    w.flush()
}

/// Writes `v` as one JSON line.
pub fn write_line<T: Serialize + ?Sized>(out: &mut dyn Write, v: &T) -> std::io::Result<()> {
    let mut w = BufWriter::with_capacity(1 << 16, out);
    serde_json::to_writer(&mut w, v)?;
    writeln!(w)?;
    w.flush()
}

/// Writes the whole capture's report with its phases as the last key, one phase at a time:
/// each phase's report is built, written and dropped before the next (issue 7: memory follows
/// what is open).
pub fn write_json(
    out: &mut dyn Write,
    whole: &Report,
    phases: &mut dyn Iterator<Item = Report>,
) -> std::io::Result<()> {
    let mut phases = phases.peekable();
    if phases.peek().is_none() {
        write_pretty(out, whole)
    } else {
        write_pretty(out, &whole.with_phases(phases))
    }
}

/// JSON lines: one `phase` record per phase (built one at a time), then the `summary`.
pub fn write_jsonl(
    out: &mut dyn Write,
    whole: &Report,
    phases: &mut dyn Iterator<Item = Report>,
) -> std::io::Result<()> {
    let mut w = BufWriter::with_capacity(1 << 16, out);
    for f in phases {
        serde_json::to_writer(&mut w, &f.tagged("phase"))?;
        writeln!(w)?;
    }
    serde_json::to_writer(&mut w, &whole.tagged("summary"))?;
    writeln!(w)?;
    w.flush()
}

/// `compare -T json|jsonl`: `{"a": report, "b": report}`.
#[derive(Serialize)]
struct Compare<'a> {
    a: &'a Report,
    b: &'a Report,
    #[serde(skip_serializing_if = "Option::is_none")]
    record: Option<&'static str>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
}

/// `compare -T json` (`line`: `-T jsonl`, one `summary` record).
pub fn write_compare(out: &mut dyn Write, a: &Report, b: &Report, line: bool) {
    let tag = line.then_some("summary");
    let doc = Compare {
        a,
        b,
        record: tag,
        kind: tag,
    };
    let _ = if line {
        write_line(out, &doc)
    } else {
        write_pretty(out, &doc)
    };
}
