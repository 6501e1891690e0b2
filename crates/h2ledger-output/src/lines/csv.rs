//! `-T csv` of `calls` and `frames`: a header line, then one line per record; the columns are
//! the keys of the JSON lines, a nested key as its path (`writes.client`), in the JSON's
//! order. RFC 4180 quoting (a cell with `,`, `"`, CR or LF is quoted, its quotes doubled);
//! lines end in LF. A null or absent key is an empty cell, a list of strings (`flag_names`) its
//! items joined by `|`, any other list its JSON text (`headers`, `settings`, messages).
//! Control characters in text are written `\xNN`, as `escape_bytes` writes bytes that are not
//! UTF-8, so that a CSV file shown on a terminal cannot drive it.

use serde_json::Value;

/// The columns of `view` (`calls` or `frames`), with the `--messages` keys when `messages`.
pub fn columns(view: &str, messages: bool) -> Vec<String> {
    use h2ledger_filter::{Src, View};
    let (v, extra): (View, &[&str]) = match (view, messages) {
        ("frames", false) => (View::Frames, &["headers", "settings"]),
        ("frames", true) => (View::Frames, &["grpc_messages", "headers", "settings"]),
        (_, false) => (View::Calls, &["grpc_status_details"]),
        (_, true) => (
            View::Calls,
            &[
                "grpc_status_details",
                "messages_omitted.client",
                "messages_omitted.server",
                "request_messages",
                "response_messages",
            ],
        ),
    };
    // The filter's fields named by their own key are the JSON's leaf keys.
    let mut cols: Vec<String> = v
        .fields()
        .iter()
        .filter(|f| f.src == Src::Key(f.name))
        .map(|f| f.name.to_string())
        .chain(extra.iter().map(|s| s.to_string()))
        .collect();
    // The JSON's keys are sorted, and `.` sorts before every character of a key.
    cols.sort();
    cols
}

/// The header line.
pub fn header(buf: &mut Vec<u8>, columns: &[String]) {
    for (i, c) in columns.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        cell(buf, c);
    }
    buf.push(b'\n');
}

/// One record's line from its JSON text; false when the text is not a JSON object.
pub fn row(buf: &mut Vec<u8>, json: &[u8], columns: &[String]) -> bool {
    let Ok(v) = serde_json::from_slice::<Value>(json) else {
        return false;
    };
    if !v.is_object() {
        return false;
    }
    let mut text = String::new();
    for (i, c) in columns.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        let mut at = Some(&v);
        for part in c.split('.') {
            at = at.and_then(|x| x.get(part));
        }
        text.clear();
        match at {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) => printable(&mut text, s),
            Some(Value::Bool(b)) => text.push_str(if *b { "true" } else { "false" }),
            Some(Value::Number(n)) => text.push_str(&n.to_string()),
            Some(Value::Array(a)) if a.iter().all(Value::is_string) => {
                for (k, s) in a.iter().enumerate() {
                    if k > 0 {
                        text.push('|');
                    }
                    printable(&mut text, s.as_str().unwrap_or(""));
                }
            }
            Some(other) => printable(&mut text, &other.to_string()),
        }
        cell(buf, &text);
    }
    buf.push(b'\n');
    true
}

/// `s` with control characters as `\xNN`.
fn printable(out: &mut String, s: &str) {
    for c in s.chars() {
        if c.is_control() && (c as u32) < 0x100 {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push(c);
        }
    }
}

/// A cell, quoted when RFC 4180 needs it.
fn cell(buf: &mut Vec<u8>, s: &str) {
    if s.contains([',', '"', '\r', '\n']) {
        buf.push(b'"');
        buf.extend_from_slice(s.replace('"', "\"\"").as_bytes());
        buf.push(b'"');
    } else {
        buf.extend_from_slice(s.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_quoted_as_rfc_4180_says() {
        let cols: Vec<String> = ["a", "b.c", "d", "e", "f", "g"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut b = Vec::new();
        header(&mut b, &cols);
        let json = br#"{"a":"x,y","b":{"c":"say \"hi\""},"d":null,"e":["END_STREAM","ACK"],"f":[["k","v"]],"g":"l1\nl2\u001b"}"#;
        assert!(row(&mut b, json, &cols));
        assert_eq!(
            String::from_utf8(b).unwrap(),
            "a,b.c,d,e,f,g\n\"x,y\",\"say \"\"hi\"\"\",,END_STREAM|ACK,\"[[\"\"k\"\",\"\"v\"\"]]\",l1\\x0al2\\x1b\n"
        );
    }

    #[test]
    fn columns_follow_the_json_order() {
        let c = columns("calls", false);
        assert_eq!(c.first().map(String::as_str), Some("compressed.client"));
        assert_eq!(c.last().map(String::as_str), Some("writes.server"));
        let f = columns("frames", false);
        let i = |k: &str| f.iter().position(|c| c == k).unwrap();
        assert!(i("flag_names") < i("flags") && i("flags") < i("headers"));
    }
}
