//! `h2ledger frames`: one line per frame, like `nghttp -v`, streamed as frames are seen.

use std::io::{BufWriter, Stdout, Write as _};

use h2_frame_parser::{ping, Frame, Kind};
use h2ledger_core::analysis::escape_bytes;
use h2ledger_core::{FrameClass, FrameEvent, Observer, Side};
use h2ledger_tcp::Nanos;
use serde_json::{json, Map, Value};

/// Which frames to print.
#[derive(Clone, Debug, Default)]
pub struct FrameFilter {
    pub conns: Vec<u32>,
    pub streams: Vec<u32>,
    /// Wire type names (`HEADERS`) or ledger classes (`TRAILERS`, `PING_ACK`), upper case.
    pub types: Vec<String>,
    pub side: Option<Side>,
}

impl FrameFilter {
    fn keep(&self, ev: &FrameEvent<'_>) -> bool {
        (self.conns.is_empty() || self.conns.contains(&ev.conn.0))
            && (self.streams.is_empty() || self.streams.contains(&ev.head.stream_id))
            && (self.types.is_empty()
                || self
                    .types
                    .iter()
                    .any(|t| t == ev.head.kind.name() || t == ev.class.name()))
            && self.side.is_none_or(|s| s == ev.side)
    }
}

/// Prints each frame as it arrives. A closed stdout sets `broken`.
pub struct FramePrinter {
    out: BufWriter<Stdout>,
    jsonl: bool,
    filter: FrameFilter,
    origin: Option<Nanos>,
    pub broken: bool,
    /// Flush after every frame (live capture).
    pub flush_each: bool,
}

impl FramePrinter {
    pub fn new(jsonl: bool, filter: FrameFilter) -> Self {
        FramePrinter {
            out: BufWriter::new(std::io::stdout()),
            jsonl,
            filter,
            origin: None,
            broken: false,
            flush_each: false,
        }
    }

    pub fn set_origin(&mut self, t: Nanos) {
        self.origin.get_or_insert(t);
    }

    pub fn flush(&mut self) {
        if self.out.flush().is_err() {
            self.broken = true;
        }
    }
}

impl Observer for FramePrinter {
    fn frame(&mut self, ev: &FrameEvent<'_>) {
        if self.broken || !self.filter.keep(ev) {
            return;
        }
        let origin = *self.origin.get_or_insert(ev.ts);
        let r = if self.jsonl {
            writeln!(self.out, "{}", frame_json(ev))
        } else {
            writeln!(self.out, "{}", frame_line(ev, origin))
        };
        if r.is_err() || (self.flush_each && self.out.flush().is_err()) {
            self.broken = true;
        }
    }
}

fn flag_names(kind: Kind, flags: u8) -> Vec<&'static str> {
    let mut v = Vec::new();
    let f = |bit: u8| flags & bit != 0;
    match kind {
        Kind::Data => {
            if f(0x1) {
                v.push("END_STREAM");
            }
            if f(0x8) {
                v.push("PADDED");
            }
        }
        Kind::Headers => {
            if f(0x1) {
                v.push("END_STREAM");
            }
            if f(0x4) {
                v.push("END_HEADERS");
            }
            if f(0x8) {
                v.push("PADDED");
            }
            if f(0x20) {
                v.push("PRIORITY");
            }
        }
        Kind::Settings | Kind::Ping if f(0x1) => v.push("ACK"),
        Kind::PushPromise | Kind::Continuation => {
            if f(0x4) {
                v.push("END_HEADERS");
            }
            if kind == Kind::PushPromise && f(0x8) {
                v.push("PADDED");
            }
        }
        _ => {}
    }
    v
}

fn hex(b: &[u8]) -> String {
    b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The one-line summary of a frame's content.
fn summary(ev: &FrameEvent<'_>) -> String {
    if let Some(h) = ev.headers {
        return h
            .iter()
            .map(|x| format!("{}: {}", escape_bytes(x.name), escape_bytes(x.value)))
            .collect::<Vec<_>>()
            .join("; ");
    }
    match ev.frame {
        Some(Frame::Ping(p)) => {
            let label = ping::classify(&p.payload).map_or("other", |k| k.label);
            format!("opaque_data={} ({label})", hex(&p.payload))
        }
        Some(Frame::WindowUpdate(w)) => format!("window_size_increment={}", w.increment),
        Some(Frame::RstStream(r)) => format!("error_code={}", r.code),
        Some(Frame::GoAway(g)) => format!(
            "last_stream_id={} error_code={} debug=\"{}\"",
            g.last_stream_id,
            g.code,
            escape_bytes(g.debug)
        ),
        Some(Frame::Settings(s)) => s
            .iter()
            .map(|(id, v)| format!("{id}={v}"))
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}

fn frame_line(ev: &FrameEvent<'_>, origin: Nanos) -> String {
    let flags = flag_names(ev.head.kind, ev.head.flags.0);
    let class = if ev.class.name() != ev.head.kind.name() && ev.class != FrameClass::Unknown {
        format!(" [{}]", ev.class.name())
    } else {
        String::new()
    };
    format!(
        "[{:>10.6}] c{} {:<6} stream={:<5} {:<13}{} flags=0x{:02x}{} length={} {}",
        (ev.ts - origin) as f64 / 1e9,
        ev.conn.0,
        ev.side.name(),
        ev.head.stream_id,
        ev.head.kind.name(),
        class,
        ev.head.flags.0,
        if flags.is_empty() {
            String::new()
        } else {
            format!(" ({})", flags.join(" | "))
        },
        ev.head.length,
        summary(ev)
    )
    .trim_end()
    .to_string()
}

/// One JSON object per frame (keys documented in docs/article.md).
pub fn frame_json(ev: &FrameEvent<'_>) -> Value {
    let mut m = Map::new();
    m.insert(
        "time".into(),
        json!(
            ev.ts.div_euclid(1_000_000_000) as f64 + ev.ts.rem_euclid(1_000_000_000) as f64 / 1e9
        ),
    );
    m.insert("conn".into(), json!(ev.conn.0));
    m.insert("src".into(), json!(ev.src.to_string()));
    m.insert("dst".into(), json!(ev.dst.to_string()));
    m.insert("side".into(), json!(ev.side.name()));
    m.insert("stream".into(), json!(ev.head.stream_id));
    m.insert("type".into(), json!(ev.head.kind.name()));
    m.insert("class".into(), json!(ev.class.name()));
    m.insert("flags".into(), json!(ev.head.flags.0));
    m.insert(
        "flag_names".into(),
        json!(flag_names(ev.head.kind, ev.head.flags.0)),
    );
    m.insert("length".into(), json!(ev.head.length));
    m.insert(
        "write".into(),
        if ev.write == h2ledger_core::ledger::NO_WRITE {
            Value::Null
        } else {
            json!(ev.write)
        },
    );
    if let Some(h) = ev.headers {
        let pairs: Vec<Value> = h
            .iter()
            .map(|x| json!([escape_bytes(x.name), escape_bytes(x.value)]))
            .collect();
        m.insert("headers".into(), Value::Array(pairs));
    }
    match ev.frame {
        Some(Frame::Ping(p)) => {
            m.insert("ping".into(), json!(hex(&p.payload).replace(' ', "")));
            m.insert(
                "ping_label".into(),
                json!(ping::classify(&p.payload).map_or("other", |k| k.label)),
            );
        }
        Some(Frame::WindowUpdate(w)) => {
            m.insert("increment".into(), json!(w.increment));
        }
        Some(Frame::RstStream(r)) => {
            m.insert("error".into(), json!(r.code.to_string()));
        }
        Some(Frame::GoAway(g)) => {
            m.insert("error".into(), json!(g.code.to_string()));
            m.insert("last_stream_id".into(), json!(g.last_stream_id));
            m.insert("debug".into(), json!(escape_bytes(g.debug)));
        }
        Some(Frame::Settings(s)) => {
            let v: Vec<Value> = s.iter().map(|(id, v)| json!([id.to_string(), v])).collect();
            m.insert("settings".into(), Value::Array(v));
        }
        _ => {}
    }
    Value::Object(m)
}
