//! Warnings on stderr: one line each, or with `-q/--quiet` one line per kind (the messages with
//! their numbers and addresses taken out) with a count and the first example.

use crate::Style;

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

/// The lines to print for `warnings` (without the `warning: ` prefix).
pub fn lines(warnings: &[String], quiet: bool) -> Vec<String> {
    if !quiet {
        return warnings.to_vec();
    }
    let mut kinds: Vec<(String, usize, &str)> = Vec::new();
    let mut index = std::collections::HashMap::new();
    for w in warnings {
        let k = kind(w);
        match index.get(&k) {
            Some(&i) => {
                let e: &mut (String, usize, &str) = &mut kinds[i];
                e.1 += 1;
            }
            None => {
                index.insert(k.clone(), kinds.len());
                kinds.push((k, 1, w));
            }
        }
    }
    kinds
        .into_iter()
        .map(|(_, n, first)| {
            if n == 1 {
                first.to_string()
            } else {
                format!("{n} warnings like this one: {first}")
            }
        })
        .collect()
}

/// Writes `warnings` (grouped with `-q`), one `warning: ` line each.
pub fn write(out: &mut dyn std::io::Write, warnings: &[String], style: Style) {
    for l in lines(warnings, style.quiet) {
        // A warning may quote the capture (crate::tty).
        let _ = writeln!(out, "warning: {}", crate::tty::escape(&l));
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
        assert_eq!(lines(&w, false), w);
        assert_eq!(
            lines(&w, true),
            [
                "3 warnings like this one: connection 3 (127.0.0.1:50051 -> 127.0.0.1:4431): the capture ends inside a frame",
                "packet 7: cannot decode",
            ]
        );
    }
}
