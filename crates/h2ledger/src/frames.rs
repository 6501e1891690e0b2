//! `h2ledger frames`: one line per frame, like `nghttp -v`, streamed as frames are seen.

use h2_frame_parser::{ping, Frame, Kind};
use h2ledger_core::analysis::escape_bytes;
use h2ledger_core::{FrameClass, FrameEvent, Observer, Side};
use h2ledger_tcp::Nanos;

use crate::lines::{Addrs, FrameLine, Out, Shape};

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

/// Prints each frame as it arrives (buffered; the live loop flushes when the input is idle).
pub struct FramePrinter {
    pub out: Out,
    filter: FrameFilter,
    origin: Option<Nanos>,
    /// Stop after this many frames printed (`--max-frames`).
    pub max: Option<u64>,
    addrs: Addrs,
    /// `H2LEDGER_FRAMES_VIA_SERDE` set: the JSON records by serde_json instead of the faster
    /// hand writer (jsonw.rs), to compare the two (`it::usage::frame_lines_equal_serde`).
    via_serde: bool,
}

impl FramePrinter {
    pub fn new(shape: Shape, filter: FrameFilter) -> Self {
        FramePrinter {
            out: Out::new(shape, "frames"),
            filter,
            origin: None,
            max: None,
            addrs: Addrs::default(),
            via_serde: std::env::var_os("H2LEDGER_FRAMES_VIA_SERDE").is_some(),
        }
    }

    pub fn set_origin(&mut self, t: Nanos) {
        self.origin.get_or_insert(t);
    }

    /// `--max-frames` reached.
    pub fn full(&self) -> bool {
        self.max.is_some_and(|m| self.out.records >= m)
    }
}

impl Observer for FramePrinter {
    fn frame(&mut self, ev: &FrameEvent<'_>) {
        if self.out.broken || self.full() || !self.filter.keep(ev) {
            return;
        }
        let origin = *self.origin.get_or_insert(ev.ts);
        if self.out.shape == Shape::Table {
            self.out.records += 1;
            let l = frame_line(ev, origin);
            self.out.line(&l);
        } else {
            let line = FrameLine::new(ev, &mut self.addrs);
            if self.via_serde {
                self.out.record(&line);
            } else {
                self.out.record_with(|buf| {
                    line.write_json(buf);
                    true
                });
            }
        }
    }
}

/// The names of the flags set on a frame, in bit order (at most four: HEADERS').
#[derive(Clone, Copy, Default)]
pub struct FlagNames {
    names: [&'static str; 4],
    n: usize,
}

impl FlagNames {
    fn push(&mut self, name: &'static str) {
        if let Some(slot) = self.names.get_mut(self.n) {
            *slot = name;
            self.n += 1;
        }
    }

    pub fn as_slice(&self) -> &[&'static str] {
        &self.names[..self.n]
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
}

impl serde::Serialize for FlagNames {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.as_slice().serialize(s)
    }
}

pub fn flag_names(kind: Kind, flags: u8) -> FlagNames {
    let mut v = FlagNames::default();
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
            format!(" ({})", flags.as_slice().join(" | "))
        },
        ev.head.length,
        summary(ev)
    )
    .trim_end()
    .to_string()
}
