//! Fuzz harness of h2ledger-filter (also run on every input in regressions/ by
//! tests/fuzz_regressions.rs).
//!
//! * `filter`: the first byte picks the view (calls or frames), the rest is the expression
//!   (invalid UTF-8 replaced). Nothing may panic. A filter that parses is evaluated on records
//!   that hold every field of the view with several values, and on an empty record; a mistake
//!   must name a column inside the expression (or just past its end) and render as three
//!   lines: the message, the expression, the caret.

use std::borrow::Cow;

use h2ledger_filter::{Filter, Record, Value, View};

/// A record whose every key answers from `seed`: numbers, text, lists, true and false, null.
struct Synthetic(u8);

const NAMES: [&str; 6] = ["END_STREAM", "ACK", "PADDED", "END_HEADERS", "", "CANCEL"];
const TEXTS: [&str; 6] = [
    "",
    "RST_STREAM",
    "/grpc.health.v1.Health/Check",
    "CANCEL",
    "é\u{0}x",
    "PING",
];

impl Record for Synthetic {
    fn get(&self, key: &str) -> Value<'_> {
        let h = key
            .bytes()
            .fold(self.0, |a, b| a.wrapping_mul(31).wrapping_add(b));
        match (key, h % 7) {
            ("flag_names", k) => Value::Strs(&NAMES[..usize::from(k) % NAMES.len()]),
            (_, 0) => Value::Null,
            (_, 1) => Value::Num(f64::from(h)),
            (_, 2) => Value::Num(-0.5),
            (_, 3) => Value::Bool(h % 2 == 0),
            (_, 4) => Value::Num(f64::MAX),
            (_, k) => Value::Str(Cow::Borrowed(TEXTS[usize::from(k + h) % TEXTS.len()])),
        }
    }
}

struct Empty;

impl Record for Empty {
    fn get(&self, _: &str) -> Value<'_> {
        Value::Null
    }
}

pub fn filter(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let view = if mode % 2 == 0 {
        View::Calls
    } else {
        View::Frames
    };
    let expr = String::from_utf8_lossy(rest);
    match Filter::parse(&expr, view) {
        Ok(f) => {
            for seed in 0..8 {
                let _ = f.matches(&Synthetic(seed));
            }
            let _ = f.matches(&Empty);
        }
        Err(e) => {
            assert!(e.start <= expr.chars().count(), "{e:?} in {expr:?}");
            assert!(e.len >= 1);
            assert!(!e.msg.contains('\n'), "{e:?}");
            let r = e.render(&expr);
            assert_eq!(r.lines().count(), 3, "{r}");
        }
    }
}
