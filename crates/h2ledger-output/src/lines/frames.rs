//! `h2ledger frames`: one line per frame, like `nghttp -v`, streamed as frames are seen.

use h2_frame_parser::{ping, Frame, Kind};
use h2ledger_core::analysis::escape_bytes;
use h2ledger_core::{FrameClass, FrameEvent, Observer, Side};
use h2ledger_tcp::Nanos;

use super::{Addrs, FrameLine, HeaderJson, Out, Shape};

/// Which frames to print.
#[derive(Clone, Debug, Default)]
pub struct FrameFilter {
    /// Only these connections (none: all).
    pub conns: Vec<u32>,
    /// Only these streams (none: all).
    pub streams: Vec<u32>,
    /// Wire type names (`HEADERS`) or ledger classes (`TRAILERS`, `PING_ACK`), upper case.
    pub types: Vec<String>,
    /// Only frames sent by this side.
    pub side: Option<Side>,
}

impl FrameFilter {
    fn keep(&self, ev: &FrameEvent<'_>) -> bool {
        (self.conns.is_empty() || self.conns.contains(&ev.conn.0))
            && (self.streams.is_empty() || self.streams.contains(&ev.head.stream_id.0))
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
    /// Where the frames go.
    pub out: Out,
    filter: FrameFilter,
    /// How times are printed (`-t`), and what they count from.
    clock: super::Clock,
    /// Connections announced (their addresses printed) and not closed yet.
    announced: std::collections::HashSet<u32>,
    /// Connections announced in all, and frames seen (printed or not).
    conns: u64,
    seen: u64,
    /// Stop after this many frames printed (`--max-frames`).
    pub max: Option<u64>,
    addrs: Addrs,
    /// The JSON of the header lists last printed (`frames --format jsonl`).
    header_json: HeaderJson,
    /// The table goes to a terminal: frames wider than [`WIDTH`] go on over more lines.
    /// Piped or redirected, a frame is one line (`wc -l` and `grep -c` count frames).
    wrap: bool,
    /// `--messages`: gRPC messages shown on the DATA frame that completes them.
    messages: Option<super::grpc_frames::FrameMessages>,
    /// `--wide`: a message's table line whole, not cut to [`WIDTH`].
    wide: bool,
    style: crate::Style,
    /// `-Y`: only the frames whose record passes this display filter.
    display: Option<h2ledger_filter::Filter>,
}

impl FramePrinter {
    /// A printer of the frames `filter` keeps into `out`; `wrap`: the table goes to a terminal
    /// (a frame wider than [`WIDTH`] goes on over more lines).
    pub fn new(out: Out, filter: FrameFilter, wrap: bool) -> Self {
        FramePrinter {
            out,
            filter,
            clock: super::Clock::default(),
            announced: std::collections::HashSet::new(),
            conns: 0,
            seen: 0,
            max: None,
            addrs: Addrs::default(),
            header_json: HeaderJson::default(),
            wrap,
            messages: None,
            wide: false,
            style: crate::Style::default(),
            display: None,
        }
    }

    /// Prints only the frames whose record passes `f` (`-Y`), after `--conn`, `--stream`,
    /// `--type` and `--side`.
    pub fn with_display_filter(mut self, f: Option<h2ledger_filter::Filter>) -> Self {
        self.display = f;
        self
    }

    /// Shows the gRPC messages each DATA frame completes (`--messages`), decoded by `dec`;
    /// `wide`: their table lines whole; `style`: how a cut line ends.
    pub fn with_messages(mut self, dec: super::Messages, wide: bool, style: crate::Style) -> Self {
        self.messages = Some(super::grpc_frames::FrameMessages::new(dec));
        self.out.csv_messages();
        self.wide = wide;
        self.style = style;
        self
    }

    /// The warnings about the messages shown (none without `--messages`).
    pub fn message_warnings(&self) -> Vec<String> {
        self.messages
            .as_ref()
            .map(|m| m.decoder().warnings())
            .unwrap_or_default()
    }

    /// Prints times with `clock` (`-t`).
    pub fn with_clock(mut self, clock: super::Clock) -> Self {
        self.clock = clock;
        self
    }

    /// The first packet's time: the table's relative times count from it.
    pub fn set_origin(&mut self, t: Nanos) {
        self.clock.set_origin(t);
    }

    /// The time of a tick at `t`, as the frames' times are printed.
    pub fn tick_stamp(&self, t: Nanos) -> String {
        self.clock.tick_stamp(t)
    }

    /// After the last frame (table, CSV): frames printed (of those seen, when some were not), on
    /// how many connections (table), and the packets read, for stderr as tcpdump's "N packets
    /// captured" (piped, stdout keeps a line per frame and per connection). The JSON shapes end
    /// with the summary record instead: `None`.
    pub fn closing_line(&self, packets: u64) -> Option<String> {
        if !matches!(self.out.shape, Shape::Table | Shape::Csv) || self.out.broken {
            return None;
        }
        let (n, c) = (self.out.records, self.conns);
        let plural = |k: u64| if k == 1 { "" } else { "s" };
        let mut l = if n == 0 && self.seen > 0 {
            let flags = if self.display.is_some() {
                "--conn, --stream, --type, --side or -Y"
            } else {
                "--conn, --stream, --type or --side"
            };
            format!(
                "no frame matched {flags}: 0 of {} frame{} printed",
                self.seen,
                plural(self.seen)
            )
        } else {
            let mut l = if n != self.seen {
                format!("{n} of {} frames printed", self.seen)
            } else {
                format!("{n} frame{} printed", plural(n))
            };
            // Only the table announces (and counts) connections.
            if self.out.shape == Shape::Table {
                l.push_str(&format!(" on {c} connection{}", plural(c)));
            }
            l
        };
        l.push_str(&format!("; {packets} packet{} read", plural(packets)));
        Some(l)
    }

    /// `--max-frames` reached.
    pub fn full(&self) -> bool {
        self.max.is_some_and(|m| self.out.records >= m)
    }
}

impl h2ledger_run::View for FramePrinter {
    fn frames(&self) -> u64 {
        self.out.records
    }
    /// The reader went away, or `--max-frames` frames were printed.
    fn stop(&self) -> Option<h2ledger_run::Stop> {
        if self.out.broken {
            Some(h2ledger_run::Stop::OutputClosed)
        } else if self.full() {
            Some(h2ledger_run::Stop::MaxFrames)
        } else {
            None
        }
    }
}

impl Observer for FramePrinter {
    fn wants_data(&self, conn: h2ledger_tcp::ConnId, stream: h2ledger_core::StreamId) -> bool {
        self.messages
            .as_ref()
            .is_some_and(|m| m.wants_data(conn, stream))
    }

    fn gap(&mut self, conn: h2ledger_tcp::ConnId, dir: h2ledger_tcp::Dir, _ts: Nanos, lost: bool) {
        if let Some(m) = &mut self.messages {
            m.gap(conn, dir, lost);
        }
    }

    fn close(&mut self, summary: &h2ledger_core::ConnSummary) {
        self.announced.remove(&summary.id.0);
        if let Some(m) = &mut self.messages {
            m.close(summary.id);
        }
    }

    fn frame(&mut self, ev: &FrameEvent<'_>) {
        let print = !(self.out.broken || self.full())
            && self.filter.keep(ev)
            && self
                .display
                .as_ref()
                .is_none_or(|f| f.matches(&FrameLine::new(ev, &mut self.addrs)));
        // Every frame of a gRPC stream is cut, printed or not.
        let msgs = match &mut self.messages {
            Some(m) => m.frame(ev, print),
            None => Default::default(),
        };
        self.seen += 1;
        // The table's time, before the clock counts this frame (`-t d` is since the one before).
        let table = self.out.shape == Shape::Table;
        let mut stamp = String::new();
        if print && table {
            self.clock.stamp(&mut stamp, ev.ts);
        }
        self.clock.seen(ev.ts);
        if !print {
            return;
        }
        if table {
            // Only the table announces connections (and counts them for its closing line).
            let new_conn = self.announced.insert(ev.conn.0);
            self.conns += u64::from(new_conn);
            self.out.records += 1;
            if new_conn {
                let (client, server) = match ev.side {
                    Side::Client => (ev.src, ev.dst),
                    Side::Server => (ev.dst, ev.src),
                };
                self.out.line(&format!(
                    "{stamp} c{} connection client={client} server={server}",
                    ev.conn.0
                ));
            }
            for l in frame_lines(ev, &stamp, self.wrap) {
                self.out.line(&l);
            }
            for d in &msgs.msgs {
                let l = super::grpc_frames::table_line(ev, &stamp, d, &msgs, self.wide, self.style);
                self.out.line(&l);
            }
        } else {
            let mut line = FrameLine::new(ev, &mut self.addrs);
            line.set_messages(&msgs.msgs);
            let cache = &mut self.header_json;
            self.out.record_with(|buf| {
                line.write_json_cached(buf, cache, ev);
                true
            });
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

    /// The names, in bit order.
    pub fn as_slice(&self) -> &[&'static str] {
        &self.names[..self.n]
    }

    /// No flag set.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
}

impl serde::Serialize for FlagNames {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.as_slice().serialize(s)
    }
}

/// The names of the flags set on a frame of type `kind`.
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

/// The frame's content as items (header fields, settings) and the text that joins them.
/// Bytes from the capture are escaped for the terminal here (crate::tty), before the line is
/// measured and cut.
fn summary(ev: &FrameEvent<'_>) -> (Vec<String>, &'static str) {
    let text = |b: &[u8]| crate::tty::escape(&escape_bytes(b)).into_owned();
    if let Some(h) = ev.headers {
        let items = h
            .iter()
            .map(|x| format!("{}: {}", text(x.name), text(x.value)))
            .collect();
        return (items, "; ");
    }
    let one = match ev.frame {
        Some(Frame::Ping(p)) => {
            let label = ping::classify(&p.payload).map_or("other", |k| k.label);
            format!("opaque_data={} ({label})", hex(&p.payload))
        }
        Some(Frame::WindowUpdate(w)) => format!("window_size_increment={}", w.increment),
        Some(Frame::RstStream(r)) => format!("error_code={}", r.code),
        Some(Frame::GoAway(g)) => {
            let items = vec![
                format!("last_stream_id={}", g.last_stream_id),
                format!("error_code={}", g.code),
                format!("debug=\"{}\"", text(g.debug)),
            ];
            return (items, " ");
        }
        Some(Frame::Settings(s)) => {
            return (s.iter().map(|(id, v)| format!("{id}={v}")).collect(), " ")
        }
        _ => return (Vec::new(), " "),
    };
    (vec![one], " ")
}

/// The table's width on a terminal: a frame whose line would be wider goes on as many lines as
/// it takes, each starting with the frame's time, connection, side and stream and then `+`
/// and its class (`+HEADERS`, `+PING_ACK`). Piped or redirected, every frame is one line.
pub const WIDTH: usize = 100;

fn frame_lines(ev: &FrameEvent<'_>, stamp: &str, wrap_wide: bool) -> Vec<String> {
    use std::fmt::Write as _;
    let flags = flag_names(ev.head.kind, ev.head.flags.0);
    // One line, noting where its parts end: the tag (time, connection, side, stream), the
    // type and class, the flags, the length.
    let mut line = String::with_capacity(128);
    let _ = write!(
        line,
        "{stamp} c{} {:<6} stream={:<5}",
        ev.conn.0,
        ev.side.name(),
        ev.head.stream_id,
    );
    let tag = line.len();
    let _ = write!(line, " {:<13}", ev.head.kind.name());
    if ev.class.name() != ev.head.kind.name() && ev.class != FrameClass::Unknown {
        let _ = write!(line, " [{}]", ev.class.name());
    }
    let kind = line.len();
    let _ = write!(line, " flags=0x{:02x}", ev.head.flags.0);
    if !flags.is_empty() {
        let _ = write!(line, " ({})", flags.as_slice().join(" | "));
    }
    let flag_end = line.len();
    let _ = write!(line, " length={}", ev.head.length);
    let length = line.len();
    let (items, sep) = summary(ev);
    for (k, item) in items.iter().enumerate() {
        line.push_str(if k == 0 { " " } else { sep });
        line.push_str(item);
    }
    let fits = line.len() <= WIDTH || line.chars().count() <= WIDTH;
    if fits || !wrap_wide {
        line.truncate(line.trim_end().len());
        return vec![line];
    }
    let mut parts = vec![
        (&line[..kind], ""),
        (&line[kind + 1..flag_end], " "),
        (&line[flag_end + 1..length], " "),
    ];
    for (k, item) in items.iter().enumerate() {
        parts.push((item, if k == 0 { " " } else { sep }));
    }
    // Each continuation names the frame's class after a `+`, so that a line found by grep
    // still tells a PING from its ACK and trailers from headers.
    let more = format!("+{}", ev.class.name());
    wrap(&parts, &format!("{} {more:<13} ", &line[..tag]))
}

/// `parts` (each with the text that joins it to the one before) in lines of at most [`WIDTH`]
/// characters; the lines after the first start with `cont`, and a line that stops before a
/// part ends with its joint, trimmed (`;` between header fields). A part longer than a whole
/// line is cut.
fn wrap(parts: &[(&str, &str)], cont: &str) -> Vec<String> {
    let cont_len = cont.chars().count();
    // Room for the trimmed joint (`;`) that ends a line cut before the next part.
    let ends = parts
        .iter()
        .map(|p| p.1.trim_end().len())
        .max()
        .unwrap_or(0);
    let limit = WIDTH - ends;
    let room = limit.saturating_sub(cont_len).max(20);
    let mut lines = Vec::new();
    let mut cur = String::new();
    let mut len = 0;
    for (k, &(part, joint)) in parts.iter().enumerate() {
        let n = part.chars().count();
        let joint_len = joint.chars().count();
        if k > 0 && len + joint_len + n <= limit {
            cur.push_str(joint);
            cur.push_str(part);
            len += joint_len + n;
            continue;
        }
        if k > 0 {
            cur.push_str(joint.trim_end());
            lines.push(std::mem::take(&mut cur).trim_end().to_string());
            cur.push_str(cont);
            len = cont_len;
        }
        let width = if k == 0 { limit } else { room };
        let chars: Vec<char> = part.chars().collect();
        let mut pieces = chars.chunks(width).peekable();
        while let Some(piece) = pieces.next() {
            cur.extend(piece);
            len += piece.len();
            if pieces.peek().is_some() {
                lines.push(std::mem::take(&mut cur));
                cur.push_str(cont);
                len = cont_len;
            }
        }
    }
    lines.push(cur.trim_end().to_string());
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines never pass [`WIDTH`], the parts come back whole when the lines are put together
    /// again, and a line that fits is left as one line.
    #[test]
    fn wrap_fits_the_width_and_loses_nothing() {
        let cont = format!("{:<36}+HEADERS      ", "[  0.001159] c0 client stream=1");
        let long = "v".repeat(230);
        let fields: Vec<String> = (0..40)
            .map(|i| match i % 3 {
                0 => format!("x-{i}: {}", "a".repeat(i * 3)),
                1 => format!("k{i}: {long}"),
                _ => format!("n{i}: é{i}"),
            })
            .collect();
        let mut parts = vec![("[  0.001159] c0 client stream=1     HEADERS      ", "")];
        parts.extend(fields.iter().map(|f| (f.as_str(), "; ")));
        let lines = wrap(&parts, &cont);
        assert!(lines.len() > 40);
        for l in &lines {
            assert!(
                l.chars().count() <= WIDTH,
                "{} columns: {l}",
                l.chars().count()
            );
        }
        for (i, l) in lines.iter().enumerate().skip(1) {
            assert!(l.starts_with(&cont), "line {i}: {l}");
        }
        // Put together: each continuation's prefix removed, and a cut inside a part (no `;`
        // at the line's end) joined without a space.
        let mut text = String::new();
        for (i, l) in lines.iter().enumerate() {
            let body = if i == 0 { l.as_str() } else { &l[cont.len()..] };
            if i > 0 && text.ends_with(';') {
                text.push(' ');
            }
            text.push_str(body);
        }
        let want = format!("{}{}", parts[0].0.trim_end(), "");
        assert!(text.starts_with(&want));
        let items: Vec<&str> = fields.iter().map(String::as_str).collect();
        assert!(text.ends_with(&items.join("; ")), "{text}");
        // Every way a line can meet the width: heads and fields of each length.
        for h in 30..100 {
            let head = "h".repeat(h);
            let fields: Vec<String> = (0..60).map(|i| format!("f: {}", "a".repeat(i))).collect();
            let mut parts = vec![(head.as_str(), "")];
            parts.extend(fields.iter().map(|f| (f.as_str(), "; ")));
            for l in wrap(&parts, &cont) {
                assert!(l.chars().count() <= WIDTH, "head {h}: {l}");
            }
        }
        // A short frame is one line.
        let one = wrap(
            &[("[  0.1] c0 client stream=1 DATA", ""), ("length=5", " ")],
            &cont,
        );
        assert_eq!(
            one,
            vec!["[  0.1] c0 client stream=1 DATA length=5".to_string()]
        );
    }
}
