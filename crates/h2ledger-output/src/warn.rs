//! Warnings on stderr, at most 100 columns a line: one per kind (the messages with their
//! numbers and addresses taken out), with a count and the first example, wrapped; with
//! `-q/--quiet` that line cut to the width; with `-v/--verbose` every warning. The JSON always
//! holds every one (up to its cap).

use crate::{Style, TABLE_WIDTH};

/// The kind of a warning: its text with every run of digits (and of the `.`, `:`, `[`, `]`
/// between them, as in addresses) replaced by `#`.
fn kind(w: &str) -> String {
    let mut out = String::with_capacity(w.len());
    let mut in_number = false;
    for c in w.chars() {
        let part = c.is_ascii_digit() || (in_number && matches!(c, '.' | ':' | '[' | ']'));
        if part {
            if !in_number {
                out.push('#');
            }
            in_number = true;
        } else {
            in_number = false;
            out.push(c);
        }
    }
    out
}

/// How warnings are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// One per kind with a count, wrapped (the default).
    Grouped,
    /// One line per kind, cut to the width (`-q`).
    Quiet,
    /// Every warning, wrapped (`-v`).
    Every,
}

impl Mode {
    /// The mode `style` asks for.
    pub fn of(style: Style) -> Mode {
        match (style.verbose, style.quiet) {
            (true, _) => Mode::Every,
            (false, true) => Mode::Quiet,
            (false, false) => Mode::Grouped,
        }
    }
}

/// The warnings to print, without the `warning: ` prefix, one string each (not yet wrapped):
/// every one, or one per kind with the first example and how many more there are.
pub fn lines(warnings: &[String], mode: Mode) -> Vec<String> {
    if mode == Mode::Every {
        return warnings.to_vec();
    }
    let mut kinds: Vec<(usize, &str)> = Vec::new();
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for w in warnings {
        match index.get(&kind(w)) {
            Some(&i) => kinds[i].0 += 1,
            None => {
                index.insert(kind(w), kinds.len());
                kinds.push((1, w));
            }
        }
    }
    kinds
        .into_iter()
        .map(|(n, first)| match n {
            1 => first.to_string(),
            _ => format!("{n} like this: {first}"),
        })
        .collect()
}

/// `warning: TEXT` in lines of at most [`TABLE_WIDTH`] columns: wrapped at spaces, the next
/// lines indented by two (`-q`: one line, cut with `…`, `~` in ASCII).
fn render(text: &str, mode: Mode, st: Style) -> String {
    let line = format!("warning: {text}");
    if mode == Mode::Quiet {
        return crate::table::cut_end(&line, TABLE_WIDTH, st);
    }
    let mut out = String::new();
    for (i, l) in crate::table::wrap(&line, TABLE_WIDTH - 2)
        .lines()
        .enumerate()
    {
        if i > 0 {
            out.push_str("\n  ");
        }
        out.push_str(l);
    }
    out
}

/// Writes `warnings` as `style` says (see the module docs).
pub fn write(out: &mut dyn std::io::Write, warnings: &[String], style: Style) {
    let mode = Mode::of(style);
    let all = lines(warnings, mode);
    for l in &all {
        // A warning may quote the capture (crate::tty).
        let _ = writeln!(out, "{}", render(&crate::tty::escape(l), mode, style));
    }
    if mode != Mode::Every && all.len() < warnings.len() {
        let _ = writeln!(
            out,
            "({} warnings in all: -v prints each, and -T json holds them)",
            warnings.len()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouped_by_kind_with_the_first_example() {
        let w: Vec<String> = [
            "connection 3 (127.0.0.1:50051 -> 127.0.0.1:4431): the capture ends inside a frame",
            "connection 12 (10.0.0.1:80 -> 10.0.0.2:5000): the capture ends inside a frame",
            "packet 7: cannot decode",
            "connection 4 (127.0.0.1:1 -> 127.0.0.1:2): the capture ends inside a frame",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(lines(&w, Mode::Every), w);
        assert_eq!(
            lines(&w, Mode::Grouped),
            [
                "3 like this: connection 3 (127.0.0.1:50051 -> 127.0.0.1:4431): the capture ends inside a frame",
                "packet 7: cannot decode",
            ]
        );
        assert_eq!(lines(&w, Mode::Quiet), lines(&w, Mode::Grouped));
    }

    #[test]
    fn every_line_fits_100_columns() {
        let long = format!(
            "connection 0 127.0.0.1:1 -> 127.0.0.1:2: {}",
            "word ".repeat(80)
        );
        let w = vec![long.clone(), long];
        for st in [
            Style::default(),
            Style {
                quiet: true,
                ..Style::default()
            },
            Style {
                verbose: true,
                ..Style::default()
            },
        ] {
            let mut out = Vec::new();
            write(&mut out, &w, st);
            let text = String::from_utf8(out).unwrap();
            assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
            let n = text.lines().filter(|l| l.starts_with("warning: ")).count();
            assert_eq!(n, if st.verbose { 2 } else { 1 }, "{text}");
        }
    }
}
