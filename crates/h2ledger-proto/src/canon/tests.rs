use super::wkt::{camel, duration, timestamp};
use super::*;

fn ts(s: i64, n: i32) -> String {
    let mut o = String::new();
    timestamp(s, n, &mut o).unwrap();
    o
}
fn du(s: i64, n: i32) -> String {
    let mut o = String::new();
    duration(s, n, &mut o).unwrap();
    o
}

#[test]
fn timestamps() {
    assert_eq!(ts(0, 0), "\"1970-01-01T00:00:00Z\"");
    assert_eq!(ts(63108020, 21_000_000), "\"1972-01-01T10:00:20.021Z\"");
    assert_eq!(ts(1, 1000), "\"1970-01-01T00:00:01.000001Z\"");
    assert_eq!(ts(1, 1), "\"1970-01-01T00:00:01.000000001Z\"");
    assert_eq!(ts(-1, 0), "\"1969-12-31T23:59:59Z\"");
    assert_eq!(ts(MIN_TIMESTAMP_SECONDS, 0), "\"0001-01-01T00:00:00Z\"");
    assert_eq!(
        ts(MAX_TIMESTAMP_SECONDS, 999_999_999),
        "\"9999-12-31T23:59:59.999999999Z\""
    );
    assert_eq!(ts(951782400, 0), "\"2000-02-29T00:00:00Z\"");
    assert!(timestamp(MAX_TIMESTAMP_SECONDS + 1, 0, &mut String::new()).is_err());
    assert!(timestamp(i64::MAX, i32::MAX, &mut String::new()).is_err());
}

#[test]
fn durations() {
    assert_eq!(du(1, 500_000_000), "\"1.500s\"");
    assert_eq!(du(0, -500_000_000), "\"-0.500s\"");
    assert_eq!(du(-3, -100_000_000), "\"-3.100s\"");
    assert_eq!(du(1, 10_000), "\"1.000010s\"");
    assert_eq!(du(0, 0), "\"0s\"");
    assert!(duration(1, -1, &mut String::new()).is_err());
    assert!(duration(i64::MIN, 0, &mut String::new()).is_err());
}

#[test]
fn field_mask_paths() {
    let mut s = String::new();
    assert!(camel("foo_bar.baz_qux", &mut s));
    assert_eq!(s, "fooBar.bazQux");
    assert!(!camel("fooBar", &mut String::new()));
    assert!(!camel("foo__bar", &mut String::new()));
    assert!(!camel("foo_", &mut String::new()));
}
