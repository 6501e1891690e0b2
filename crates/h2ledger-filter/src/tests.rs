use std::borrow::Cow;
use std::collections::HashMap;

use super::*;

/// A record from `(key, value)` pairs.
struct Rec(HashMap<&'static str, Value<'static>>);

impl Record for Rec {
    fn get(&self, key: &str) -> Value<'_> {
        self.0.get(key).cloned().unwrap_or(Value::Null)
    }
}

fn call(pairs: &[(&'static str, Value<'static>)]) -> Rec {
    Rec(pairs.iter().cloned().collect())
}

fn s(v: &'static str) -> Value<'static> {
    Value::Str(Cow::Borrowed(v))
}

fn n(v: f64) -> Value<'static> {
    Value::Num(v)
}

fn ok(expr: &str, view: View) -> Filter {
    Filter::parse(expr, view).unwrap_or_else(|e| panic!("{expr}: {}", e.render(expr)))
}

fn err(expr: &str, view: View) -> Error {
    match Filter::parse(expr, view) {
        Ok(_) => panic!("{expr}: parsed"),
        Err(e) => e,
    }
}

#[test]
fn the_issues_examples_select_as_tshark_would() {
    let failed = call(&[
        ("grpc_status", n(5.0)),
        ("method", s("/grpc.health.v1.Health/Check")),
        ("duration_us", n(12_500.0)),
        ("conn", n(3.0)),
    ]);
    let ok_call = call(&[
        ("grpc_status", n(0.0)),
        ("method", s("/x.Y/Z")),
        ("duration_us", n(9_999.0)),
        ("conn", n(0.0)),
    ]);
    let http = call(&[("http_status", n(200.0)), ("method", s("/big.bin"))]);
    let cases: [(&str, [bool; 3]); 16] = [
        ("grpc.status != 0", [true, false, false]),
        ("grpc_status == 0", [false, true, false]),
        ("!(grpc.status == 0)", [true, false, true]),
        ("not grpc.status == 0", [true, false, true]),
        ("call.duration > 10ms", [true, false, false]),
        ("duration_us > 10000", [true, false, false]),
        ("call.duration <= 9.999ms", [false, true, false]),
        ("path contains \"Health\"", [true, false, false]),
        ("conn == 3", [true, false, false]),
        ("conn == 3 or path == \"/big.bin\"", [true, false, true]),
        (
            "conn == 3 || path == \"/big.bin\" && http_status == 200",
            [true, false, true],
        ),
        (
            "(conn == 3 || conn == 0) and grpc.status",
            [true, false, false],
        ),
        ("grpc_status", [true, false, false]),
        ("conn in {0, 3}", [true, true, false]),
        ("path matches \"health\"", [true, false, false]),
        ("path matches \"(?-i)HEALTH\"", [false, false, false]),
    ];
    for (expr, want) in cases {
        let f = ok(expr, View::Calls);
        let got = [f.matches(&failed), f.matches(&ok_call), f.matches(&http)];
        assert_eq!(got, want, "{expr}");
    }
}

#[test]
fn durations_are_exact_microseconds() {
    let r = call(&[("duration_us", n(1100.0))]);
    for (e, want) in [
        ("duration == 1.1ms", true),
        ("duration == 1100us", true),
        ("duration == 1100000ns", true),
        ("duration < 0.0011s", false),
        ("duration_us == 1100", true),
        ("duration_us == 1.1ms", true),
        ("duration < 1m", true),
        ("duration >= 1e3us", true),
    ] {
        assert_eq!(ok(e, View::Calls).matches(&r), want, "{e}");
    }
    let e = err("call.duration > 10", View::Calls);
    assert!(e.msg.contains("give its unit"), "{}", e.msg);
    assert_eq!(e.start, 16);
}

#[test]
fn frames_take_tsharks_names() {
    let flags: &'static [&'static str] = &["END_STREAM", "END_HEADERS"];
    let headers = call(&[
        ("type", s("HEADERS")),
        ("flags", n(5.0)),
        ("flag_names", Value::Strs(flags)),
        ("stream", n(1.0)),
    ]);
    let rst = call(&[
        ("type", s("RST_STREAM")),
        ("error", s("CANCEL")),
        ("flags", n(0.0)),
        ("flag_names", Value::Strs(&[])),
        ("stream", n(3.0)),
    ]);
    let ping_ack = call(&[
        ("type", s("PING")),
        ("flags", n(1.0)),
        ("flag_names", Value::Strs(&["ACK"])),
        ("stream", n(0.0)),
    ]);
    let cases: [(&str, [bool; 3]); 14] = [
        ("http2.type == 3", [false, true, false]),
        ("http2.type == RST_STREAM", [false, true, false]),
        ("http2.type == \"headers\"", [true, false, false]),
        ("http2.type != 1", [false, true, true]),
        ("http2.rst_stream.error == 8", [false, true, false]),
        ("http2.rst_stream.error == CANCEL", [false, true, false]),
        ("http2.goaway.error == 8", [false, false, false]),
        ("http2.flags.end_stream", [true, false, false]),
        ("http2.flags.ack.ping", [false, false, true]),
        ("http2.flags.ack.settings", [false, false, false]),
        ("http2.flags & 0x4", [true, false, false]),
        ("http2.flags & 0x1 == 1", [true, false, true]),
        ("flag_names contains \"END\"", [true, false, false]),
        (
            "http2.streamid > 0 and not flag_names",
            [false, true, false],
        ),
    ];
    for (expr, want) in cases {
        let f = ok(expr, View::Frames);
        let got = [f.matches(&headers), f.matches(&rst), f.matches(&ping_ack)];
        assert_eq!(got, want, "{expr}");
    }
}

#[test]
fn a_missing_field_fails_every_comparison() {
    let r = call(&[("conn", n(1.0))]);
    for e in [
        "grpc_status == 0",
        "grpc_status != 0",
        "grpc_status < 1",
        "grpc_status >= 0",
        "grpc_message contains \"\"",
        "grpc_message matches \".*\"",
        "grpc_status in {0 1 2}",
        "grpc_status",
        "reset",
    ] {
        assert!(!ok(e, View::Calls).matches(&r), "{e}");
        assert!(ok(&format!("not {e}"), View::Calls).matches(&r), "not {e}");
    }
    // An empty filter selects everything.
    assert!(ok("  ", View::Calls).matches(&r));
}

#[test]
fn mistakes_name_their_column() {
    let cases: [(&str, usize, &str); 17] = [
        ("http2.streamid == and", 18, "\"and\" was unexpected"),
        ("conn = 3", 5, "use =="),
        ("conn == 3 conn == 4", 10, "join tests with and"),
        ("(conn == 3", 10, "needs its )"),
        ("conn == 3)", 9, "closes no ("),
        ("grpc.code == 0", 0, "grpc.status"),
        ("path == /x", 8, "unexpected character \"/\""),
        ("path == 3", 8, "quote the value"),
        ("conn == \"3\"", 8, "compared with a number"),
        ("conn > 10ms", 7, "not a duration"),
        ("method contains 3", 16, "contains takes text"),
        ("conn contains \"3\"", 5, "contains is for text"),
        ("path matches \"(\"", 13, "not a regular expression"),
        ("reset > true", 6, "compare it with == or !="),
        ("path == \"abc", 8, "no closing quote"),
        ("conn == 10xs", 10, "unknown unit \"xs\""),
        ("conn == 1.2.3", 8, "not a number"),
    ];
    for (expr, col, words) in cases {
        let e = err(expr, View::Calls);
        assert_eq!(e.start, col, "{expr}: {}", e.render(expr));
        assert!(e.msg.contains(words), "{expr}: {}", e.msg);
        let r = e.render(expr);
        assert_eq!(r.lines().count(), 3, "{r}");
        assert!(!e.msg.contains('\n'));
        // The caret is under the column.
        let caret = r.lines().nth(2).unwrap();
        assert_eq!(caret.find('^'), Some(4 + col), "{r}");
    }
    let e = err("http2.type == 3", View::Calls);
    assert!(e.msg.contains("other view"), "{}", e.msg);
    let e = err("http2.type == 12", View::Frames);
    assert!(e.msg.contains("UNKNOWN"), "{}", e.msg);
    let e = err("durration > 1s", View::Calls);
    assert!(e.msg.contains("duration"), "{}", e.msg);
}

#[test]
fn nesting_is_bounded_and_long_chains_are_flat() {
    let deep = format!("{}conn{}", "(".repeat(65), ")".repeat(65));
    assert!(err(&deep, View::Calls).msg.contains("nested more than 64"));
    let nots = format!("{}conn", "not ".repeat(100));
    assert!(err(&nots, View::Calls).msg.contains("nested"));
    let ok64 = format!("{}conn{}", "(".repeat(64), ")".repeat(64));
    assert!(ok(&ok64, View::Calls).matches(&call(&[("conn", n(2.0))])));
    // 100,000 terms: one flat list, no deep recursion to evaluate or drop.
    let long = vec!["conn == 1"; 100_000].join(" or ");
    let f = ok(&long, View::Calls);
    assert!(f.matches(&call(&[("conn", n(1.0))])));
    assert!(!f.matches(&call(&[("conn", n(2.0))])));
}

#[test]
fn a_long_expression_is_shown_around_the_caret() {
    let expr = format!("{} and conn ==", vec!["conn == 1"; 40].join(" or "));
    let e = err(&expr, View::Calls);
    let r = e.render(&expr);
    let lines: Vec<&str> = r.lines().collect();
    assert!(lines[1].chars().count() < 100, "{r}");
    let caret = lines[2].find('^').unwrap();
    assert!(caret < 100);
    assert!(lines[1].starts_with("    ..."), "{r}");
}

#[test]
fn every_field_parses_with_a_value_of_its_type() {
    for view in [View::Calls, View::Frames] {
        for f in view.fields() {
            let v = match f.ty {
                Ty::Num => "1",
                Ty::Dur { .. } => "1ms",
                Ty::Str => "\"x\"",
                Ty::Bool => "true",
                Ty::List => "",
                Ty::TypeCode => "1",
                Ty::ErrorCode => "8",
            };
            let e = if v.is_empty() {
                format!("{} contains \"x\"", f.name)
            } else {
                format!("{} == {v}", f.name)
            };
            ok(&e, view);
            ok(f.name, view);
        }
    }
}

#[test]
fn a_valid_filter_that_may_not_mean_what_it_says_has_a_note() {
    let f = ok("method == \"GET\"", View::Calls);
    assert!(
        f.notes()[0].contains("http_method == \"GET\""),
        "{:?}",
        f.notes()
    );
    assert!(ok("path == \"/GET\"", View::Calls).notes().is_empty());
    let e = err("status == 200", View::Calls);
    assert!(e.msg.contains("http_status"), "{}", e.msg);
}
