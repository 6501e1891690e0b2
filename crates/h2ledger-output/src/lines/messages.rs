//! gRPC messages decoded for `calls --messages` and `frames --messages` (issue 22): the
//! decoder the views share ([`Messages`]: the schemas, the limits, the counts of what went
//! wrong), the message object both print, and its table line.
//!
//! The object, keys in the published (alphabetical) order:
//! `{"anomaly": null | {"detail", "kind"}, "bytes": N, "compressed": bool, "message": canonical
//! JSON or null, "raw": schema-less decode or null, "type": full name or null}`. `message` is
//! the proto3 JSON mapping as protojson prints it, its fields in the schema's order (it is the
//! program's data, like a header value, not a record of ours).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use h2ledger_core::grpc::{CallGrpc, KeptHow};
use h2ledger_proto::{Direction, Envelope, Limits, Message, Schemas};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

use crate::jsonw::{k, Obj};
use crate::Style;

/// The anomaly kind of a message listed without its bytes because the kept messages held
/// their memory limit already (docs/ledger.md, "Memory bounds").
pub const MEMORY_CAP: &str = "message-memory-cap";

/// One message as the views print it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// The decode.
    pub msg: Message,
    /// Listed without its bytes: the kept messages' memory limit was reached.
    pub over_budget: bool,
}

impl Decoded {
    /// The anomaly's kind and text, if any.
    pub fn anomaly(&self) -> Option<(&'static str, String)> {
        if self.over_budget {
            return Some((
                MEMORY_CAP,
                "not kept: the messages held reached their memory limit".to_string(),
            ));
        }
        self.msg.anomaly.as_ref().map(|a| (a.kind(), a.to_string()))
    }

    /// Appends the object (see the module docs), byte for byte as serde_json writes it.
    pub fn write_json(&self, b: &mut Vec<u8>) {
        let m = &self.msg;
        let mut o = Obj::new(b);
        match self.anomaly() {
            Some((kind, detail)) => o.obj(k!("anomaly"), |o| {
                o.str(k!("detail"), &detail);
                o.plain(k!("kind"), kind);
            }),
            None => o.null(k!("anomaly")),
        }
        o.u64(k!("bytes"), m.bytes);
        o.bool(k!("compressed"), m.compressed);
        o.raw(k!("message"), |b| {
            b.extend_from_slice(m.message.as_deref().unwrap_or("null").as_bytes())
        });
        o.raw(k!("raw"), |b| {
            b.extend_from_slice(m.raw.as_deref().unwrap_or("null").as_bytes())
        });
        o.opt_str(k!("type"), m.type_name.as_deref());
        o.end();
    }
}

/// A call's `grpc-status-details-bin` (the server's `google.rpc.Status`, base64) decoded with
/// the built-in schemas (crates/h2ledger-proto `builtin`: the standard error details in its
/// `details`), whether or not `--messages` is on; `None` when the call had none.
pub fn status_details(g: Option<&CallGrpc>) -> Option<Decoded> {
    let v = g?.status_details.as_deref()?;
    let msg = h2ledger_proto::builtin().decode_status_details(v, &Limits::default());
    Some(Decoded {
        msg,
        over_budget: false,
    })
}

/// The table's line for a call's status details: `  ! ` and each detail as its short type
/// name and its fields (`ErrorInfo {"reason":"OVERLOADED",...}; RetryInfo {...}`), the
/// Status' own code and message being in the status column already; cut to `width`.
pub fn status_details_line(d: &Decoded, width: Option<usize>, st: Style) -> String {
    let mut s = String::from("  ! details: ");
    let parsed = d
        .msg
        .message
        .as_deref()
        .and_then(|m| serde_json::from_str::<serde_json::Value>(m).ok());
    match parsed.as_ref().and_then(|v| v.get("details")?.as_array()) {
        Some(list) => {
            for (i, det) in list.iter().enumerate() {
                if i > 0 {
                    s.push_str("; ");
                }
                let mut det = det.clone();
                let ty = det
                    .as_object_mut()
                    .and_then(|o| o.remove("@type"))
                    .and_then(|t| t.as_str().map(str::to_owned))
                    .unwrap_or_default();
                s.push_str(ty.rsplit(['.', '/']).next().unwrap_or(&ty));
                s.push(' ');
                s.push_str(&det.to_string());
            }
            if list.is_empty() {
                s.push_str("none");
            }
        }
        None => match (d.anomaly(), &d.msg.raw) {
            (Some((kind, _)), Some(r)) => {
                s.push_str(&format!("!{kind} raw {r}"));
            }
            (Some((kind, text)), None) => s.push_str(&format!("!{kind} {text}")),
            (None, _) => s.push_str("none"),
        },
    }
    let s = crate::tty::escape(&s).into_owned();
    match width {
        Some(w) => cut_end(&s, w, st),
        None => s,
    }
}

/// JSON text kept as it is (serde_json's `RawValue`; the hand writer copies it).
fn raw_value<S: Serializer>(text: Option<&str>, s: S) -> Result<S::Ok, S::Error> {
    match text {
        Some(t) => serde_json::value::RawValue::from_string(t.to_string())
            .map_err(serde::ser::Error::custom)?
            .serialize(s),
        None => s.serialize_none(),
    }
}

#[derive(Serialize)]
struct AnomalyObj {
    detail: String,
    kind: &'static str,
}

struct Text<'a>(Option<&'a str>);

impl Serialize for Text<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        raw_value(self.0, s)
    }
}

impl Serialize for Decoded {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let m = &self.msg;
        let mut map = s.serialize_map(Some(6))?;
        map.serialize_entry(
            "anomaly",
            &self
                .anomaly()
                .map(|(kind, detail)| AnomalyObj { detail, kind }),
        )?;
        map.serialize_entry("bytes", &m.bytes)?;
        map.serialize_entry("compressed", &m.compressed)?;
        map.serialize_entry("message", &Text(m.message.as_deref()))?;
        map.serialize_entry("raw", &Text(m.raw.as_deref()))?;
        map.serialize_entry("type", &m.type_name.as_deref())?;
        map.end()
    }
}

/// A list of messages: `[object, ...]`.
#[derive(Clone, Copy)]
pub struct MsgList<'a>(pub &'a [Decoded]);

impl Serialize for MsgList<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for d in self.0 {
            seq.serialize_element(d)?;
        }
        seq.end()
    }
}

impl MsgList<'_> {
    /// The array, byte for byte as serde_json writes it.
    pub fn write_json(&self, b: &mut Vec<u8>) {
        b.push(b'[');
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                b.push(b',');
            }
            d.write_json(b);
        }
        b.push(b']');
    }
}

/// A call's messages, decoded: in wire order per direction (0: request, 1: response), and the
/// complete messages beyond `--max-messages`, counted and not listed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallMessages {
    /// The listed messages of each direction.
    pub dirs: [Vec<Decoded>; 2],
    /// The messages of each direction not listed.
    pub omitted: [u32; 2],
}

/// What went wrong with messages in a run, for the warnings.
#[derive(Debug, Default)]
struct Stats {
    /// Per anomaly kind: how many, and the first one (where, and what).
    anomalies: BTreeMap<&'static str, (u64, String)>,
    /// Calls with messages not listed, and those messages.
    omitted_calls: u64,
    omitted: u64,
    /// Streams not followed by `frames` (more than `stream_limit` open at once).
    untracked_streams: u64,
    stream_limit: usize,
}

/// The decoder of `--messages`: schemas (none: every message schema-less), limits, and the
/// counts of anomalies met (shared by the threads that decode).
#[derive(Clone)]
pub struct Messages {
    schemas: Arc<Schemas>,
    limits: Limits,
    max_messages: u32,
    stats: Arc<Mutex<Stats>>,
}

/// The name of a direction in tables and warnings.
fn dir_name(rel: usize) -> &'static str {
    if rel == 0 {
        "request"
    } else {
        "response"
    }
}

impl Messages {
    /// A decoder with `schemas` and `limits`; `max_messages` is `--max-messages`, named in
    /// the warning when calls had more.
    pub fn new(schemas: Schemas, limits: Limits, max_messages: u32) -> Self {
        Messages {
            schemas: Arc::new(schemas),
            limits,
            max_messages,
            stats: Arc::default(),
        }
    }

    /// The schemas.
    pub fn schemas(&self) -> &Schemas {
        &self.schemas
    }

    /// The limits of one message's decode.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// One message of the call to `path`; `at` says where it was (for the warning of its
    /// anomaly, if it has one).
    pub fn one(
        &self,
        path: &str,
        dir: Direction,
        env: &Envelope<'_>,
        encoding: Option<&str>,
        at: impl FnOnce() -> String,
    ) -> Decoded {
        let msg = self.schemas.decode(path, dir, env, encoding, &self.limits);
        let d = Decoded {
            msg,
            over_budget: false,
        };
        self.count(&d, at);
        d
    }

    fn count(&self, d: &Decoded, at: impl FnOnce() -> String) {
        if let Some((kind, text)) = d.anomaly() {
            let mut s = self.stats.lock().unwrap_or_else(|e| e.into_inner());
            let e = s
                .anomalies
                .entry(kind)
                .or_insert_with(|| (0, format!("{}: {text}", at())));
            e.0 += 1;
        }
    }

    /// The messages of a call (`None` when it is not gRPC or its messages were not kept);
    /// `conn` and `stream` name it in warnings.
    pub fn call(&self, g: Option<&CallGrpc>, conn: u32, stream: u32) -> Option<CallMessages> {
        let g = g.filter(|g| g.grpc)?;
        let kept = g.kept.as_ref()?;
        let mut out = CallMessages::default();
        for rel in 0..2 {
            let dir = if rel == 0 {
                Direction::Request
            } else {
                Direction::Response
            };
            let enc = g.encoding[rel].as_deref();
            out.dirs[rel].reserve_exact(kept.len(rel));
            for (i, (m, bytes)) in kept.messages(rel).enumerate() {
                let env = Envelope {
                    flag: m.flag,
                    bytes,
                    wire_len: m.wire_len,
                    cut: m.how != KeptHow::Whole,
                };
                let mut msg = self
                    .schemas
                    .decode(kept.path(), dir, &env, enc, &self.limits);
                let over_budget = m.how == KeptHow::OverBudget;
                if over_budget {
                    msg.anomaly = None;
                }
                let d = Decoded { msg, over_budget };
                self.count(&d, || {
                    format!(
                        "conn {conn} stream {stream} {} {} message {}",
                        kept.path(),
                        dir_name(rel),
                        i + 1
                    )
                });
                out.dirs[rel].push(d);
            }
            out.omitted[rel] = kept.omitted(rel);
        }
        let omitted = u64::from(out.omitted[0]) + u64::from(out.omitted[1]);
        if omitted > 0 {
            let mut s = self.stats.lock().unwrap_or_else(|e| e.into_inner());
            s.omitted_calls += 1;
            s.omitted += omitted;
        }
        Some(out)
    }

    /// A stream `frames` could not follow (`limit` were open already).
    pub(crate) fn untracked_stream(&self, limit: usize) {
        let mut s = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        s.untracked_streams += 1;
        s.stream_limit = limit;
    }

    /// The run's warnings about messages: each anomaly kind with its count and first
    /// example, messages not listed beyond `--max-messages`, streams not followed.
    pub fn warnings(&self) -> Vec<String> {
        let s = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        let mut w = Vec::new();
        for (kind, (n, first)) in &s.anomalies {
            let what = match *kind {
                "message-too-large" => format!(
                    "larger than --max-message-bytes ({} bytes), not decoded",
                    self.limits.max_message_bytes
                ),
                "message-parse" => "did not parse as their type (raw kept)".to_string(),
                "message-json" => "have no JSON form (raw kept)".to_string(),
                "decompression-bomb" => format!(
                    "decompress to more than {} bytes (decompression bomb), not decoded",
                    self.limits.max_decompressed_bytes
                ),
                MEMORY_CAP => "were listed without their bytes: the messages held reached \
                               their memory limit"
                    .to_string(),
                _ => "could not be decoded".to_string(),
            };
            w.push(format!(
                "gRPC messages: {n} {what} ({kind}); the first: {first}"
            ));
        }
        if s.omitted > 0 {
            w.push(format!(
                "gRPC messages: {} calls had more than --max-messages {} messages in a direction: {} messages counted, not listed (messages_omitted)",
                s.omitted_calls, self.max_messages, s.omitted
            ));
        }
        if s.untracked_streams > 0 {
            w.push(format!(
                "gRPC messages: {} streams were not followed (more than {} open at once): their messages are not shown",
                s.untracked_streams, s.stream_limit
            ));
        }
        w
    }
}

/// The first `w` characters of `s`, cut with `…` (`~` in ASCII) when longer.
fn cut_end(s: &str, w: usize, st: Style) -> String {
    let n = s.chars().count();
    if n <= w {
        return s.to_string();
    }
    let mark = if st.ascii { "~" } else { "…" };
    let mut out: String = s.chars().take(w.saturating_sub(1)).collect();
    out.push_str(mark);
    out
}

/// A message as one table line: `prefix`, the short type name (or `(no schema)`), the length,
/// `gzip`-style compression, an anomaly, then the message's JSON (or `raw` and the schema-less
/// decode); cut to `width` characters unless `width` is `None` (`--wide`).
pub fn table_line(
    prefix: &str,
    d: &Decoded,
    enc: Option<&str>,
    width: Option<usize>,
    st: Style,
) -> String {
    let m = &d.msg;
    let mut s = String::with_capacity(128);
    s.push_str(prefix);
    match m.type_name.as_deref() {
        Some(t) => s.push_str(t.rsplit('.').next().unwrap_or(t)),
        None => s.push_str("(no schema)"),
    }
    s.push_str(&format!(" {} B", m.bytes));
    if m.compressed {
        s.push(' ');
        s.push_str(enc.unwrap_or("compressed"));
    }
    if let Some((kind, _)) = d.anomaly() {
        s.push_str(" !");
        s.push_str(kind);
    }
    match (&m.message, &m.raw) {
        (Some(j), _) => {
            s.push(' ');
            s.push_str(j);
        }
        (None, Some(r)) => {
            s.push_str(" raw ");
            s.push_str(r);
        }
        (None, None) => {}
    }
    // Bytes from the capture are escaped before the line is measured (crate::tty).
    let s = crate::tty::escape(&s).into_owned();
    match width {
        Some(w) => cut_end(&s, w, st),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(type_name: Option<&str>, message: Option<&str>, raw: Option<&str>) -> Decoded {
        Decoded {
            msg: Message {
                type_name: type_name.map(Arc::from),
                bytes: 7,
                compressed: true,
                message: message.map(str::to_string),
                raw: raw.map(str::to_string),
                unknown_fields: 0,
                anomaly: None,
            },
            over_budget: false,
        }
    }

    /// The hand writer gives serde_json's bytes, anomaly or not, null or not.
    #[test]
    fn object_bytes_equal_serde() {
        let mut cases = vec![
            decoded(Some("a.B"), Some(r#"{"x":"1e+21","y":[1,2]}"#), None),
            decoded(
                None,
                None,
                Some(r#"[{"field":1,"value":"1","wire":"varint"}]"#),
            ),
            decoded(Some("q\"uote"), None, None),
        ];
        let mut bad = decoded(Some("a.B"), None, Some("[]"));
        bad.msg.anomaly = Some(h2ledger_proto::Anomaly::NotParsed("truncated \"x\"".into()));
        cases.push(bad);
        let mut cap = decoded(Some("a.B"), None, None);
        cap.over_budget = true;
        cases.push(cap);
        let mut fast = Vec::new();
        MsgList(&cases).write_json(&mut fast);
        let slow = serde_json::to_vec(&MsgList(&cases)).unwrap();
        assert_eq!(
            String::from_utf8(fast).unwrap(),
            String::from_utf8(slow).unwrap()
        );
    }

    #[test]
    fn table_lines_are_cut_at_the_end() {
        let d = decoded(
            Some("h2ledger.test.v1.Everything"),
            Some(r#"{"a":"bcdefgh"}"#),
            None,
        );
        let st = Style::default();
        assert_eq!(
            table_line("  > ", &d, Some("gzip"), None, st),
            r#"  > Everything 7 B gzip {"a":"bcdefgh"}"#
        );
        assert_eq!(
            table_line("  > ", &d, Some("gzip"), Some(30), st),
            r#"  > Everything 7 B gzip {"a":…"#
        );
        let ascii = Style { ascii: true, ..st };
        assert_eq!(
            table_line("", &d, None, Some(20), ascii),
            "Everything 7 B comp~"
        );
    }
}
