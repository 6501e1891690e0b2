//! Reports as JSON: one document (with the phases as its last key), or JSON lines.

use serde::Serialize;
use serde_json::Value;

use h2ledger_run::Report;

/// `v` as JSON, its keys in sorted order at every level: the published order of every JSON
/// object (docs/ledger.md), which serde_json's map keeps.
pub fn json_value<T: Serialize + ?Sized>(v: &T) -> Value {
    serde_json::to_value(v).expect("a report always serializes")
}

/// Writes the whole capture's report with its phases as the last key, one phase at a time:
/// each phase's report is built, written and dropped before the next (issue 7: memory follows
/// what is open).
pub fn write_json(
    out: &mut dyn std::io::Write,
    whole: &Report,
    phases: &mut dyn Iterator<Item = Report>,
) -> std::io::Result<()> {
    let head = serde_json::to_string_pretty(&json_value(whole)).expect("json");
    let mut phases = phases.peekable();
    if phases.peek().is_none() {
        return writeln!(out, "{head}");
    }
    // `head` ends with "\n}": continue the object with the phases.
    let body = head.strip_suffix('}').unwrap_or(&head).trim_end();
    write!(out, "{body},\n  \"phases\": [")?;
    for (i, f) in phases.enumerate() {
        let one = serde_json::to_string_pretty(&json_value(&f)).expect("json");
        write!(out, "{}\n    ", if i == 0 { "" } else { "," })?;
        for (k, line) in one.lines().enumerate() {
            if k > 0 {
                write!(out, "\n    ")?;
            }
            write!(out, "{line}")?;
        }
    }
    writeln!(out, "\n  ]\n}}")
}

/// `value` as one JSON line with `record` and `type` set to `kind`.
pub fn record_line(value: serde_json::Value, kind: &str) -> String {
    let mut v = value;
    if let Value::Object(m) = &mut v {
        m.insert("record".into(), Value::from(kind));
        m.insert("type".into(), Value::from(kind));
    }
    v.to_string()
}

/// JSON lines: one `phase` record per phase (built one at a time), then the `summary`.
pub fn write_jsonl(
    out: &mut dyn std::io::Write,
    whole: &Report,
    phases: &mut dyn Iterator<Item = Report>,
) -> std::io::Result<()> {
    for f in phases {
        writeln!(out, "{}", record_line(json_value(&f), "phase"))?;
    }
    writeln!(out, "{}", record_line(json_value(whole), "summary"))
}

/// `compare -T json|jsonl`: `{"a": report, "b": report}`.
pub fn write_compare(out: &mut dyn std::io::Write, a: &Report, b: &Report, line: bool) {
    let v = serde_json::json!({"a": json_value(a), "b": json_value(b)});
    let _ = if line {
        writeln!(out, "{}", record_line(v, "summary"))
    } else {
        writeln!(out, "{}", serde_json::to_string_pretty(&v).expect("json"))
    };
}
