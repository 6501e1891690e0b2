//! The examples in README.md and docs/*.md, run: every fenced block line `$ h2ledger ...` is a
//! command, and the block's lines after it (up to the next `$ ` line or the closing fence) are
//! its stdout. The convention for doc authors is docs/decisions.md, entry "Doc examples".
//!
//! * The command runs under `sh -c` (pipes such as `| head -8` or `| jq ...` and `\`
//!   continuation lines work) with `h2ledger` on PATH, in a scratch directory where
//!   `captures/` and `fixtures/` are the repository's and `docs/` is empty (so `--plot
//!   docs/x.svg` writes nothing into the checkout). It must exit 0; only stdout is compared
//!   (show stderr or an exit status with `2>&1` or `; echo "exit $?"`).
//! * Lines are compared without trailing whitespace; trailing empty lines do not count.
//! * A line that is exactly `...` stands for any number of output lines (zero or more).
//! * `sniff`, `demo` and `-i DEV` need live capture or root: they are skipped and listed; so is
//!   a command whose pipe needs a program that is not installed (e.g. jq).
//!
//! After an output change, rewrite the docs' blocks in place and review the diff:
//!
//! ```text
//! H2LEDGER_BLESS_DOCS=1 cargo test -p h2ledger --test it doc_examples
//! git diff README.md docs/
//! ```
//!
//! Blessing keeps `...` markers: the lines before the first one become the output's first
//! lines and the lines after the last one its last lines; lines between two markers are kept
//! as written, and a block that still does not match is reported for a hand edit.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::snap::fast_bin;
use crate::util::{have, repo};

const ELISION: &str = "...";

/// One `$ h2ledger ...` example.
struct Example {
    /// Path relative to the repository root.
    doc: String,
    /// Index (0-based) of the `$` line in the doc.
    line: usize,
    command: String,
    /// The doc's lines [start, end) that hold the expected output.
    output: (usize, usize),
}

impl Example {
    fn at(&self, offset: usize) -> String {
        format!("{}:{}", self.doc, self.output.0 + offset + 1)
    }
}

/// README.md and docs/*.md, sorted.
fn docs() -> Vec<String> {
    let mut docs = vec!["README.md".to_string()];
    let mut more: Vec<String> = std::fs::read_dir(repo().join("docs"))
        .expect("docs/ exists")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    more.sort();
    docs.extend(more);
    docs
}

fn parse(doc: &str, lines: &[&str]) -> Vec<Example> {
    let mut examples = Vec::new();
    let mut in_fence = false;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            i += 1;
            continue;
        }
        if !in_fence || !line.starts_with("$ ") {
            i += 1;
            continue;
        }
        let start = i;
        let mut command = line[2..].to_string();
        while command.ends_with('\\') && i + 1 < lines.len() {
            i += 1;
            command.push('\n');
            command.push_str(lines[i]);
        }
        i += 1;
        let out_start = i;
        while i < lines.len() && !lines[i].starts_with("$ ") && !lines[i].starts_with("```") {
            i += 1;
        }
        if command.starts_with("h2ledger ") {
            examples.push(Example {
                doc: doc.to_string(),
                line: start,
                command,
                output: (out_start, i),
            });
        }
    }
    examples
}

/// The stages of a shell pipeline (`|` outside quotes).
fn pipeline(command: &str) -> Vec<String> {
    let (mut stages, mut stage, mut quote) = (Vec::new(), String::new(), None);
    for c in command.chars() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, '|') => {
                stages.push(std::mem::take(&mut stage));
                continue;
            }
            _ => {}
        }
        stage.push(c);
    }
    stages.push(stage);
    stages
}

/// Why an example cannot run here, if it cannot.
fn skip_reason(command: &str) -> Option<String> {
    let stages = pipeline(command);
    let first: Vec<&str> = stages[0].split_whitespace().collect();
    if matches!(first.get(1), Some(&"sniff") | Some(&"demo"))
        || first
            .iter()
            .any(|a| *a == "-i" || a.starts_with("--interface"))
    {
        return Some("live capture (root)".to_string());
    }
    for stage in &stages[1..] {
        if let Some(program) = stage.split_whitespace().next() {
            if !have(program) {
                return Some(format!("needs `{program}`, not installed"));
            }
        }
    }
    None
}

/// A scratch working directory: the repository's captures/ and fixtures/, an empty docs/,
/// and bin/h2ledger.
fn scratch() -> PathBuf {
    let dir = crate::util::scratch("doc-examples");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("docs")).unwrap();
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    let root = repo().canonicalize().unwrap();
    for shared in ["captures", "fixtures"] {
        std::os::unix::fs::symlink(root.join(shared), dir.join(shared)).unwrap();
    }
    let bin = fast_bin().canonicalize().unwrap();
    std::os::unix::fs::symlink(bin, dir.join("bin/h2ledger")).unwrap();
    dir
}

/// Runs the command; its stdout, or an error with the exit status and stderr.
fn run(dir: &Path, command: &str) -> Result<String, String> {
    let path = format!(
        "{}:{}",
        dir.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("sh")
        .args(["-c", command])
        .current_dir(dir)
        .env("PATH", path)
        .output()
        .expect("sh runs");
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "exit status {}, stderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// Output lines as compared: no trailing whitespace, no trailing empty lines.
fn normalize<S: AsRef<str>>(lines: &[S]) -> Vec<String> {
    let mut v: Vec<String> = lines
        .iter()
        .map(|l| l.as_ref().trim_end().to_string())
        .collect();
    while v.last().is_some_and(|l| l.is_empty()) {
        v.pop();
    }
    v
}

/// Where the expected lines first fail to match.
struct Mismatch {
    /// Index into the expected lines.
    expected_at: usize,
    /// Index into the actual lines, when one lines up.
    actual_at: Option<usize>,
    note: &'static str,
}

/// The expected lines split at `...` lines: (index of the segment's first line, its lines).
fn segments(expected: &[String]) -> Vec<(usize, &[String])> {
    let mut segs = Vec::new();
    let mut start = 0;
    for (i, line) in expected.iter().enumerate() {
        if line == ELISION {
            segs.push((start, &expected[start..i]));
            start = i + 1;
        }
    }
    segs.push((start, &expected[start..]));
    segs
}

fn first_difference(expected: &[String], actual: &[String]) -> usize {
    expected
        .iter()
        .zip(actual)
        .position(|(e, a)| e != a)
        .unwrap_or(expected.len().min(actual.len()))
}

/// Glob matching by lines, `...` being the wildcard: the first segment is a prefix, the last a
/// suffix, and the others are found in order, each at its leftmost place (leftmost is exact
/// for fixed segments).
fn compare(expected: &[String], actual: &[String]) -> Result<(), Mismatch> {
    let segs = segments(expected);
    if segs.len() == 1 {
        if expected == actual {
            return Ok(());
        }
        let at = first_difference(expected, actual);
        return Err(Mismatch {
            expected_at: at,
            actual_at: Some(at),
            note: "",
        });
    }
    let (_, first) = segs[0];
    if !actual.starts_with(first) {
        let at = first_difference(first, actual);
        return Err(Mismatch {
            expected_at: at,
            actual_at: Some(at),
            note: "before the first `...`",
        });
    }
    let (last_start, last) = segs[segs.len() - 1];
    if actual.len() < first.len() + last.len() || !actual.ends_with(last) {
        let base = actual.len().saturating_sub(last.len()).max(first.len());
        let at = first_difference(last, &actual[base..]);
        return Err(Mismatch {
            expected_at: last_start + at,
            actual_at: Some(base + at),
            note: "after the last `...` (the output's last lines)",
        });
    }
    let mut pos = first.len();
    let end = actual.len() - last.len();
    for &(start, seg) in &segs[1..segs.len() - 1] {
        match (pos..=end.saturating_sub(seg.len()))
            .find(|&k| k + seg.len() <= end && actual[k..k + seg.len()] == *seg)
        {
            Some(k) => pos = k + seg.len(),
            None => {
                return Err(Mismatch {
                    expected_at: start,
                    actual_at: None,
                    note: "this run of lines between `...` markers is not in the output",
                })
            }
        }
    }
    Ok(())
}

/// The expected block rewritten from the actual output, keeping its `...` markers.
fn bless(expected: &[String], actual: &[String]) -> Vec<String> {
    let segs = segments(expected);
    if segs.len() == 1 {
        return actual.to_vec();
    }
    let n = segs.len();
    let mut out = Vec::new();
    for (i, &(_, seg)) in segs.iter().enumerate() {
        if i > 0 {
            out.push(ELISION.to_string());
        }
        if i == 0 && !seg.is_empty() {
            out.extend_from_slice(&actual[..seg.len().min(actual.len())]);
        } else if i == n - 1 && !seg.is_empty() {
            out.extend_from_slice(&actual[actual.len().saturating_sub(seg.len())..]);
        } else {
            out.extend_from_slice(seg);
        }
    }
    out
}

fn report(ex: &Example, expected: &[String], actual: &[String], m: &Mismatch) -> String {
    let show = |l: Option<&String>| l.map_or("(no line)".to_string(), |l| format!("{l:?}"));
    let mut r = format!(
        "{}:{}: $ {}\n  first difference at {}{}{}:\n    expected: {}\n    actual:   {}\n",
        ex.doc,
        ex.line + 1,
        ex.command,
        ex.at(m.expected_at),
        if m.note.is_empty() { "" } else { ", " },
        m.note,
        show(expected.get(m.expected_at)),
        m.actual_at.map_or("(not found)".to_string(), |a| format!(
            "{} (output line {})",
            show(actual.get(a)),
            a + 1
        )),
    );
    let (e, a) = (expected.join("\n") + "\n", actual.join("\n") + "\n");
    let diff = similar::TextDiff::from_lines(&e, &a);
    r.push_str(&format!(
        "{}",
        diff.unified_diff()
            .context_radius(2)
            .header(&format!("{} (docs)", ex.doc), "actual output")
    ));
    r
}

#[test]
fn doc_examples_print_what_the_docs_show() {
    let bless_docs = std::env::var("H2LEDGER_BLESS_DOCS").is_ok_and(|v| !v.is_empty() && v != "0");
    let dir = scratch();
    let (mut checked, mut skipped, mut failures, mut blessed) = (0, vec![], vec![], vec![]);
    for doc in docs() {
        let path = repo().join(&doc);
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let borrowed: Vec<&str> = lines.iter().map(String::as_str).collect();
        let examples = parse(&doc, &borrowed);
        let mut rewrites = Vec::new();
        for ex in &examples {
            if let Some(why) = skip_reason(&ex.command) {
                let first_line = ex.command.lines().next().unwrap_or("");
                skipped.push(format!("{}:{}: {first_line} ({why})", doc, ex.line + 1));
                continue;
            }
            checked += 1;
            let expected = normalize(&lines[ex.output.0..ex.output.1]);
            let actual = match run(&dir, &ex.command) {
                Ok(stdout) => normalize(&stdout.lines().collect::<Vec<_>>()),
                Err(e) => {
                    failures.push(format!("{}:{}: $ {}\n  {e}", doc, ex.line + 1, ex.command));
                    continue;
                }
            };
            let Err(m) = compare(&expected, &actual) else {
                continue;
            };
            if bless_docs {
                let new = bless(&expected, &actual);
                if compare(&new, &actual).is_ok() {
                    blessed.push(format!("{}:{}: {}", doc, ex.line + 1, ex.command));
                    rewrites.push((ex.output, new));
                    continue;
                }
                failures.push(format!(
                    "(H2LEDGER_BLESS_DOCS could not keep this block's `...` markers: edit it by hand)\n{}",
                    report(ex, &expected, &actual, &m)
                ));
                continue;
            }
            failures.push(report(ex, &expected, &actual, &m));
        }
        if !rewrites.is_empty() {
            for ((start, end), new) in rewrites.into_iter().rev() {
                lines.splice(start..end, new);
            }
            let mut out = lines.join("\n");
            if text.ends_with('\n') {
                out.push('\n');
            }
            std::fs::write(&path, out).unwrap();
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    for s in &skipped {
        eprintln!("skipped: {s}");
    }
    for b in &blessed {
        eprintln!("rewritten (H2LEDGER_BLESS_DOCS): {b}");
    }
    eprintln!(
        "doc examples: {checked} run, {} skipped, {} rewritten, {} failed",
        skipped.len(),
        blessed.len(),
        failures.len()
    );
    assert!(
        checked > 0,
        "no `$ h2ledger` example found in README.md or docs/*.md"
    );
    assert!(
        failures.is_empty(),
        "{} doc example(s) do not print what the docs show (rewrite the blocks with \
         H2LEDGER_BLESS_DOCS=1 cargo test -p h2ledger --test it doc_examples):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

mod matching {
    use super::{compare, normalize};

    fn v(s: &str) -> Vec<String> {
        normalize(&s.lines().collect::<Vec<_>>())
    }

    #[test]
    fn pipes_inside_quotes_are_not_stages() {
        let stages = super::pipeline("h2ledger x -f json \\\n  | jq '.a | {b}' | head -1");
        assert_eq!(stages.len(), 3, "{stages:?}");
        assert_eq!(stages[1].trim(), "jq '.a | {b}'");
    }

    #[test]
    fn live_commands_are_skipped() {
        for live in [
            "h2ledger sniff --duration 5s",
            "h2ledger demo --seconds 3",
            "h2ledger calls -i lo --format jsonl | head -1",
            "h2ledger frames --interface=lo",
        ] {
            assert!(super::skip_reason(live).is_some(), "{live}");
        }
        assert_eq!(
            super::skip_reason("h2ledger replay captures/x.pcap | head -3"),
            None
        );
    }

    #[test]
    fn elision_matches_any_run_of_lines() {
        let actual = v("a\nb\nc\nd\ne");
        for ok in [
            "a\nb\nc\nd\ne",
            "a\n...\ne",
            "...\ne",
            "a\n...",
            "...",
            "a\n...\nc\n...\ne",
            "a\nb\n...\nc\nd\ne",
        ] {
            assert!(compare(&v(ok), &actual).is_ok(), "{ok:?}");
        }
        for bad in [
            "a\nb\nc\nd",
            "a\nb\nc\nd\ne\nf",
            "b\n...",
            "...\nd",
            "a\n...\nx\n...\ne",
            "a\nb\nc\n...\nc\nd\ne",
            "a\n...\nc\n...\nb\n...",
        ] {
            assert!(compare(&v(bad), &actual).is_err(), "{bad:?}");
        }
    }
}
