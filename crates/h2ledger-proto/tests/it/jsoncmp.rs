use serde_json::Value;

/// Where `a` and `b` differ, as a JSON-pointer-like path, or None when equal. Numbers are
/// equal when their f64 values are (MessageToDict's 1.0 is protojson's 1), or, below
/// f32::MIN_POSITIVE, when they are the same f32: for a subnormal `float` MessageToDict prints
/// at least 6 digits (`type_checkers.ToShortestFloat` starts at precision 6: 1.4013e-45) where
/// protojson and this crate print the shortest (1e-45); both read back as the same float.
/// Object key order does not matter.
pub fn diff(a: &Value, b: &Value, at: &str) -> Option<String> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let same = match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
                (Some(p), Some(q), _, _) => p == q,
                (_, _, Some(p), Some(q)) => p == q,
                _ => {
                    let (p, q) = (x.as_f64().unwrap(), y.as_f64().unwrap());
                    p == q || (p.abs() < f64::from(f32::MIN_POSITIVE) && p as f32 == q as f32)
                }
            };
            (!same).then(|| format!("{at}: {x} != {y}"))
        }
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys()) {
                match (x.get(k), y.get(k)) {
                    (Some(p), Some(q)) => {
                        if let Some(d) = diff(p, q, &format!("{at}/{k}")) {
                            return Some(d);
                        }
                    }
                    (p, q) => return Some(format!("{at}/{k}: {p:?} != {q:?}")),
                }
            }
            None
        }
        (Value::Array(x), Value::Array(y)) => {
            if x.len() != y.len() {
                return Some(format!("{at}: {} elements != {}", x.len(), y.len()));
            }
            x.iter()
                .zip(y)
                .enumerate()
                .find_map(|(i, (p, q))| diff(p, q, &format!("{at}/{i}")))
        }
        _ => (a != b).then(|| format!("{at}: {a} != {b}")),
    }
}
