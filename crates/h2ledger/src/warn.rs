//! Warnings on stderr: one line each, or with `-q/--quiet` one line per kind (the messages with
//! their numbers and addresses taken out) with a count and the first example.

use std::sync::atomic::{AtomicBool, Ordering};

static QUIET: AtomicBool = AtomicBool::new(false);

/// `-q`: group repeated warnings (and no progress display).
pub fn set_quiet(q: bool) {
    QUIET.store(q, Ordering::Relaxed);
}

pub fn quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

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

/// Prints `warnings` on stderr, grouped with `-q`.
pub fn print(warnings: &[String]) {
    for l in lines(warnings, quiet()) {
        // A warning may quote the capture (crate::tty).
        eprintln!("warning: {}", crate::tty::escape(&l));
    }
}

/// Plain ASCII output (`--ascii`, or a locale set to one that is not UTF-8, such as `LANG=C`;
/// with no locale variable set at all, UTF-8 is assumed): table borders and the ellipsis of cut
/// text.
static ASCII: AtomicBool = AtomicBool::new(false);

pub fn set_ascii(forced: bool) {
    let locale = ["LC_ALL", "LC_CTYPE", "LANG"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
        .unwrap_or_else(|| "C.UTF-8".to_string())
        .to_ascii_lowercase();
    let utf8 = locale.contains("utf-8") || locale.contains("utf8");
    ASCII.store(forced || !utf8, Ordering::Relaxed);
}

pub fn ascii() -> bool {
    ASCII.load(Ordering::Relaxed)
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
