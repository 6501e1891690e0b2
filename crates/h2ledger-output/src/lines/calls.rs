//! `h2ledger calls`: every call (stream) of a capture, as a table or JSON lines.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use h2ledger_core::analysis::{CallRec, CallView};
use h2ledger_core::flow::CallFlow;
use h2ledger_core::grpc::CallGrpc;

use super::{secs, CallLine, Out, Shape};
use crate::Style;

/// The `calls` listing, printed as calls are folded (about the order they end, within a second
/// of capture time), so that no row is held: the table's columns have fixed widths.
pub struct CallPrinter {
    /// `None` while the writer thread has it.
    out: Option<Out>,
    layout: Vec<(usize, &'static str, i32)>,
    /// Times are printed relative to this (the first packet), seconds since the epoch.
    origin: Option<f64>,
    /// Calls printed so far.
    pub calls: u64,
    style: Style,
    /// The JSON records' writer thread, while it runs.
    writer: Option<Writer>,
    /// Method names (`:path`, `:method`) by the analysis' method id, as the writer thread was
    /// told them (it keeps its own copy).
    methods: Vec<(Arc<str>, Arc<str>)>,
    /// `--messages`: each call's gRPC messages, decoded where the record is written.
    messages: Option<super::Messages>,
    /// `-Y`: only the calls whose record passes this display filter.
    display: Option<h2ledger_filter::Filter>,
    /// Calls seen, printed or not.
    pub seen: u64,
}

/// A call handed to the writer thread: what its record is made of, owned.
struct Owned {
    rec: CallRec,
    /// The names of method `rec.method` (path, HTTP method) when the writer does not know them
    /// yet (the first call of a method, or an id beyond [`MAX_CACHED_METHODS`]); the writer
    /// keeps them by id. Not a reference per call: two threads counting one `Arc` for every
    /// call made its count a cache line both cores wrote (decision 272).
    names: Option<(Arc<str>, Arc<str>)>,
    flow: CallFlow,
    grpc: Option<CallGrpc>,
}

/// The JSON records are formatted and written on a second thread, in order: formatting is
/// about a quarter of `calls --format jsonl` on one core (docs/performance.md). The channel is
/// bounded (backpressure, bounded memory), and the main thread takes the output back (joins
/// the thread) before it writes anything itself: a tick, the summary. A flush when idle is a
/// message to the thread.
struct Writer {
    tx: SyncSender<Msg>,
    batch: Vec<Owned>,
    /// Batches the thread has written, emptied, for reuse: a new one of [`BATCH`] calls is
    /// 268 KiB, which glibc maps and unmaps each time above its mmap threshold (decision 461).
    spare: Receiver<Vec<Owned>>,
    thread: JoinHandle<Option<Out>>,
    broken: Arc<AtomicBool>,
}

impl Writer {
    /// Sends the calls batched so far (none: nothing to send); false when the thread is gone.
    fn send_batch(&mut self) -> bool {
        if self.batch.is_empty() {
            return true;
        }
        let next = self
            .spare
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(BATCH));
        let batch = std::mem::replace(&mut self.batch, next);
        self.tx.send(Msg::Calls(batch)).is_ok()
    }
}

enum Msg {
    /// The output, first: it stays with the main thread when no thread can be started.
    Start(Box<Out>),
    Calls(Vec<Owned>),
    /// Write out what is buffered (live, when the input is idle).
    Flush,
}

/// Calls per message to the writer thread, and messages in flight.
const BATCH: usize = 1024;
const IN_FLIGHT: usize = 8;
/// Method ids cached for the writer (the analysis keeps at most 4,096 names).
const MAX_CACHED_METHODS: usize = 1 << 16;

/// Column headers and widths of the `--wide` table (a negative width aligns left and may cut
/// the text; numbers are never cut).
const WIDE: [(&str, i32); 17] = [
    ("conn", 4),
    ("stream", 6),
    ("start s", 10),
    ("method", -28),
    ("status", -32),
    ("1st byte us", 11),
    ("call us", 9),
    ("in fl", 5),
    ("client H/D/T/o", 14),
    ("server H/D/T/o", 14),
    ("writes c/s", 10),
    ("round c/s", 9),
    // Flow control and gRPC (crate::table::flow::call_cells).
    ("stalls c/s", 10),
    ("stalled us c/s", 14),
    ("msgs c/s", 9),
    ("server us / rtt us", 18),
    // Not a column of the wide table: the narrow one's frames per side.
    ("frames c/s", 10),
];

/// Columns of the `--wide` table (the last cell of [`WIDE`] is the narrow table's own).
const WIDE_COLUMNS: usize = 16;

/// The default table, at most 100 columns, with headers a user reads without the legend
/// (decision 303): (index into [`WIDE`]'s cells, header, width).
const NARROW: [(usize, &str, i32); 9] = [
    (0, "conn", 4),
    (1, "stream", 6),
    (2, "start s", 7),
    (3, "method", -20),
    (4, "status", -21),
    (5, "ttfb us", 7),
    (6, "call us", 7),
    (16, "frames c/s", 10),
    (10, "writes c/s", 10),
];

/// What the columns mean (`calls --help` and docs/ledger.md say the same).
pub const LEGEND: &str = "Columns: conn and stream number the call; start s: seconds from the \
first packet; method: the :path (a gRPC name that does not fit loses its POST, then the middle \
of its package: the start, a mark, Service/Method); status: the gRPC status by name (NOT_FOUND) with the \
grpc-message after a colon (and on a line of its own, `! details:`, the error details of a \
google.rpc.Status the server sent in grpc-status-details-bin), http N without grpc-status, RST and the error code when the call \
was reset, none when no response status was seen; ttfb us (1st byte us with --wide): request \
HEADERS to the first response frame; call us: to the response's END_STREAM; frames c/s and \
writes c/s: the call's frames and the TCP writes that carried them, sent by the client/server. \
With --wide: in fl: other calls in flight at its start; H/D/T/o: the call's \
HEADERS/DATA/TRAILERS/other frames per side; round c/s: the call opened a BDP-estimator round \
of the client/server (y); stalls, stalled us, msgs, server us / rtt us: flow-control stalls, \
gRPC messages, server time and the connection's PING round trip. Durations in microseconds \
(us), like every table and the JSON keys; `-` is not seen.";

fn row(layout: &[(usize, &str, i32)], cells: &[String], st: Style) -> String {
    let mut line = String::new();
    // Columns a number overflowed (stream 18131983 in a column of 6): the next text column
    // gives them back, so that the row keeps its width and the columns after it line up.
    let mut over = 0;
    for (i, (cell, _, w)) in layout.iter().enumerate() {
        if i > 0 {
            line.push(' ');
        }
        let c = &cells[*cell];
        let width = w.unsigned_abs() as usize;
        if *w < 0 {
            let width = width.saturating_sub(over).max(1);
            over = 0;
            // The method keeps its end (or its service and method); the status its start.
            let c = if *cell == 3 {
                crate::table::cut(c, width, st)
            } else {
                crate::table::cut_end(&crate::tty::escape(c), width, st)
            };
            line.push_str(&format!("{c:<width$}"));
        } else {
            over += c.chars().count().saturating_sub(width);
            line.push_str(&format!("{c:>width$}"));
        }
    }
    line.trim_end().to_string()
}

/// The layout of the `--wide` table.
fn wide() -> Vec<(usize, &'static str, i32)> {
    WIDE.iter()
        .take(WIDE_COLUMNS)
        .enumerate()
        .map(|(i, (h, w))| (i, *h, *w))
        .collect()
}

impl CallPrinter {
    /// A printer of calls into `out`; `wide_table`: every column of the table.
    pub fn new(out: Out, wide_table: bool, style: Style) -> Self {
        CallPrinter {
            out: Some(out),
            layout: if wide_table { wide() } else { NARROW.to_vec() },
            origin: None,
            calls: 0,
            style,
            writer: None,
            methods: Vec::new(),
            messages: None,
            display: None,
            seen: 0,
        }
    }

    /// Prints only the calls whose record passes `f` (`-Y`).
    pub fn with_display_filter(mut self, f: Option<h2ledger_filter::Filter>) -> Self {
        self.display = f;
        self
    }

    /// Prints each call's gRPC messages (`--messages`), decoded by `dec`: in the JSON shapes
    /// every message, on the writer thread; in the table the first of each direction.
    pub fn with_messages(mut self, dec: super::Messages) -> Self {
        self.messages = Some(dec);
        if let Some(o) = self.out.as_mut() {
            o.csv_messages();
        }
        self
    }

    /// The warnings about the messages printed (none without `--messages`); call after the
    /// last call is written ([`CallPrinter::out`] waits for the writer thread).
    pub fn message_warnings(&mut self) -> Vec<String> {
        self.out();
        self.messages
            .as_ref()
            .map(super::Messages::warnings)
            .unwrap_or_default()
    }

    /// The output, back from the writer thread (every call handed to it written first).
    pub fn out(&mut self) -> &mut Out {
        if let Some(mut w) = self.writer.take() {
            w.send_batch();
            let Writer { tx, thread, .. } = w;
            drop(tx);
            // The thread ends when the channel closes and gives the output back; a panic
            // there is one here.
            match thread.join() {
                Ok(out) => self.out = out,
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        self.out.get_or_insert_with(|| {
            // Only if the thread never got the output (it is handed over right after the
            // start): nothing more can be written.
            let mut o = Out::new(Box::new(std::io::sink()), Shape::Lines, "calls");
            o.broken = true;
            o
        })
    }

    /// Writes out what is buffered, on the writer thread when it runs (no join: live, the
    /// input goes idle between bursts many times a second).
    pub fn flush(&mut self) {
        let Some(w) = self.writer.as_mut() else {
            self.out().flush();
            return;
        };
        let sent = w.send_batch() && w.tx.send(Msg::Flush).is_ok();
        if !sent {
            w.broken.store(true, Ordering::Relaxed);
        }
    }

    /// The reader of the output went away (`| head`).
    pub fn broken(&self) -> bool {
        self.out.as_ref().is_some_and(|o| o.broken)
            || self
                .writer
                .as_ref()
                .is_some_and(|w| w.broken.load(Ordering::Relaxed))
    }

    /// Hands a call to the writer thread (started on the first call); false when no thread
    /// could be started (the caller writes the record itself).
    fn hand_over(&mut self, c: &CallView<'_>) -> bool {
        if self.writer.is_none() {
            if self.out.as_ref().is_none_or(|o| o.broken) {
                return false;
            }
            let broken = Arc::new(AtomicBool::new(false));
            let (tx, rx) = sync_channel::<Msg>(IN_FLIGHT);
            // At most IN_FLIGHT + 2 batches exist: one here, those in flight, one written.
            let (back, spare) = channel::<Vec<Owned>>();
            let flag = broken.clone();
            let dec = self.messages.clone();
            let spawned = std::thread::Builder::new()
                .name("calls-writer".into())
                .spawn(move || {
                    let mut out = match rx.recv() {
                        Ok(Msg::Start(out)) => out,
                        _ => return None,
                    };
                    let mut times = super::TimeMemo::default();
                    // The methods' names by id, as the calls brought them.
                    let mut names: Vec<(Arc<str>, Arc<str>)> = Vec::new();
                    for msg in rx {
                        let mut batch = match msg {
                            Msg::Calls(batch) => batch,
                            Msg::Flush => {
                                out.flush();
                                flag.store(out.broken, Ordering::Relaxed);
                                continue;
                            }
                            Msg::Start(_) => continue,
                        };
                        // Read in place (a call is a few hundred bytes: not moved out
                        // first), and dropped with the batch's clear below.
                        for o in batch.iter_mut() {
                            if out.broken {
                                continue;
                            }
                            let id = o.rec.method as usize;
                            if let (Some(n), true) = (&o.names, id < MAX_CACHED_METHODS) {
                                if names.len() <= id {
                                    names.resize(id + 1, (Arc::from(""), Arc::from("")));
                                }
                                names[id] = n.clone();
                            }
                            let (method, http_method) = match o.names.as_ref().or(names.get(id)) {
                                Some((m, h)) => (&**m, &**h),
                                None => ("", ""),
                            };
                            let v = CallView {
                                rec: &o.rec,
                                method,
                                http_method,
                                flow: o.flow,
                                grpc: o.grpc.as_ref(),
                            };
                            let msgs = dec
                                .as_ref()
                                .map(|d| d.call(v.grpc, v.rec.conn, v.rec.stream));
                            let line = with_messages(CallLine::new(&v), &msgs);
                            out.record_with(|buf| {
                                line.write_json_memo(buf, &mut times);
                                true
                            });
                            if let Some(k) = o.grpc.as_mut().and_then(|g| g.kept.take()) {
                                // Decoded: its record goes back to the tracker for reuse.
                                h2ledger_core::grpc::Kept::recycle(k);
                            }
                        }
                        batch.clear();
                        flag.store(out.broken, Ordering::Relaxed);
                        // Gone when the printer is: then the batch is freed here.
                        let _ = back.send(batch);
                    }
                    Some(*out)
                });
            let Ok(thread) = spawned else {
                return false;
            };
            let Some(out) = self.out.take() else {
                return false;
            };
            if let Err(e) = tx.send(Msg::Start(Box::new(out))) {
                // The thread is gone already: the output comes back with the error.
                if let Msg::Start(out) = e.0 {
                    self.out = Some(*out);
                }
                return false;
            }
            self.writer = Some(Writer {
                tx,
                batch: Vec::with_capacity(BATCH),
                spare,
                thread,
                broken,
            });
            // A new writer knows no names yet.
            self.methods.clear();
        }
        // The names go to the writer with the first call of a method (and again if an id
        // ever named another); the writer keeps them, by id, as `methods` does here.
        let id = c.rec.method as usize;
        let names = match self.methods.get(id) {
            Some((m, h)) if **m == *c.method && **h == *c.http_method => None,
            _ => {
                let m: (Arc<str>, Arc<str>) = (Arc::from(c.method), Arc::from(c.http_method));
                if id < MAX_CACHED_METHODS {
                    if self.methods.len() <= id {
                        self.methods.resize(id + 1, (Arc::from(""), Arc::from("")));
                    }
                    self.methods[id] = m.clone();
                }
                Some(m)
            }
        };
        let Some(w) = self.writer.as_mut() else {
            return false;
        };
        w.batch.push(Owned {
            rec: *c.rec,
            names,
            flow: c.flow,
            grpc: c.grpc.cloned(),
        });
        if w.batch.len() >= BATCH && !w.send_batch() {
            w.broken.store(true, Ordering::Relaxed);
        }
        true
    }

    /// The first packet's time: `start s` counts from it.
    pub fn set_origin(&mut self, t: h2ledger_tcp::Nanos) {
        if self.origin.is_none() {
            self.origin = Some(secs(t));
        }
    }

    fn line(&mut self, s: &str) {
        self.out().line(s);
    }

    /// Prints one call (a table row, or a JSON record).
    pub fn call(&mut self, c: &CallView<'_>) {
        self.seen += 1;
        if let Some(f) = &self.display {
            if !f.matches(&CallLine::new(c)) {
                return;
            }
        }
        self.calls += 1;
        if self.writer.is_some() || self.out().shape != Shape::Table {
            if self.hand_over(c) {
                return;
            }
            let msgs = self
                .messages
                .as_ref()
                .map(|d| d.call(c.grpc, c.rec.conn, c.rec.stream));
            let line = with_messages(CallLine::new(c), &msgs);
            self.out().record_with(|buf| {
                line.write_json(buf);
                true
            });
            return;
        }
        let narrow = self.layout.len() < WIDE_COLUMNS;
        if self.calls == 1 {
            let mut head = vec![String::new(); WIDE.len()];
            for (i, h, _) in &self.layout {
                head[*i] = h.to_string();
            }
            let l = row(&self.layout, &head, self.style);
            self.line(&l);
        }
        let r = c.rec;
        // Durations in microseconds, like every other table and the JSON keys (decision 97).
        let us = crate::table::flow::us;
        let f = |rel: usize| {
            r.frames[rel]
                .iter()
                .map(u16::to_string)
                .collect::<Vec<_>>()
                .join("/")
        };
        let yn = |b: bool| if b { "y" } else { "-" };
        let base = [
            r.conn.to_string(),
            r.stream.to_string(),
            if narrow {
                format!("{:.3}", secs(r.start) - self.origin.unwrap_or(0.0))
            } else {
                format!("{:.6}", secs(r.start) - self.origin.unwrap_or(0.0))
            },
            // Escaped before the column is sized (crate::tty).
            // The HTTP method before the path (`GET /index.html`), as a request line.
            if c.http_method.is_empty() {
                crate::tty::escape(c.method).into_owned()
            } else {
                crate::tty::escape(&format!("{} {}", c.http_method, c.method)).into_owned()
            },
            match r.reset_by() {
                // Why it was reset: the code, short in the narrow table.
                Some((code, _)) if narrow => format!("RST {}", crate::table::short_code(code)),
                Some((code, _)) => format!("RST {code}"),
                // The gRPC status by name, and its grpc-message (escaped: it is the peer's).
                None => match c.grpc.and_then(|g| g.grpc_message.as_deref()) {
                    Some(m) if !m.is_empty() => format!(
                        "{}: {}",
                        crate::table::short_status(&c.status()),
                        crate::tty::escape(m)
                    ),
                    _ => crate::table::short_status(&c.status()),
                },
            },
            us(r.first_byte),
            us(r.end),
            r.inflight.to_string(),
            f(0),
            f(1),
            format!("{}/{}", r.writes[0], r.writes[1]),
            format!(
                "{}/{}",
                yn(r.opened_round(h2ledger_core::Side::Client)),
                yn(r.opened_round(h2ledger_core::Side::Server))
            ),
        ];
        let all = |rel: usize| r.frames[rel].iter().map(|n| u32::from(*n)).sum::<u32>();
        let cells: Vec<String> = base
            .into_iter()
            .chain(crate::table::flow::call_cells(c))
            .chain([format!("{}/{}", all(0), all(1))])
            .collect();
        let l = row(&self.layout, &cells, self.style);
        self.line(&l);
        // The server's google.rpc.Status details, under the call (cut unless --wide).
        if let Some(d) = super::messages::status_details(c.grpc) {
            let width = narrow.then_some(super::WIDTH);
            let l = super::messages::status_details_line(&d, width, self.style);
            self.line(&l);
        }
        if self.messages.is_some() {
            self.message_lines(c, !narrow);
        }
    }

    /// `--messages` in the table: under the call's row, the first message of each direction
    /// (`>` request, `<` response; `1/N` when there are N), one line each, cut to 100 columns
    /// unless `wide`.
    fn message_lines(&mut self, c: &CallView<'_>, wide: bool) {
        let Some(dec) = &self.messages else {
            return;
        };
        let Some(m) = dec.call(c.grpc, c.rec.conn, c.rec.stream) else {
            return;
        };
        let mut lines = Vec::new();
        for (rel, arrow) in [(0, '>'), (1, '<')] {
            let Some(first) = m.dirs[rel].first() else {
                continue;
            };
            let n = m.dirs[rel].len() + m.omitted[rel] as usize;
            let prefix = format!("  {arrow} 1/{n} ");
            let enc = c.grpc.and_then(|g| g.encoding[rel].as_deref());
            let width = (!wide).then_some(super::WIDTH);
            lines.push(super::table_line(&prefix, first, enc, width, self.style));
        }
        for l in lines {
            self.line(&l);
        }
    }

    /// After the last call (table): the count. The JSON shapes end with the summary record.
    pub fn finish(&mut self) {
        if self.out().shape == Shape::Table {
            let n = self.calls;
            let plural = |k: u64| if k == 1 { "" } else { "s" };
            if self.display.is_some() {
                let seen = self.seen;
                self.line(&format!("{n} of {seen} call{} matched -Y", plural(seen)));
            } else {
                self.line(&format!("{n} call{}", plural(n)));
            }
        }
    }
}

/// `line` with the messages of `msgs` when `--messages` is on (`Some`); unchanged otherwise.
fn with_messages<'a>(
    line: CallLine<'a>,
    msgs: &'a Option<Option<super::CallMessages>>,
) -> CallLine<'a> {
    match msgs {
        Some(m) => line.with_messages(m.as_ref()),
        None => line,
    }
}
