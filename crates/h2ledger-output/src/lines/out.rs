//! The line views' output buffer: records are written straight into a large buffer that goes
//! out in pieces of [`BUFFER`] bytes, with a broken pipe (`| head`) remembered.

use std::io::Write;

use serde::Serialize;

/// Buffer size of the line views: 256 KiB between write(2) calls.
const BUFFER: usize = 256 * 1024;

/// How a line view prints its records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Fixed columns, one row per record.
    Table,
    /// One JSON object per line.
    Lines,
    /// One JSON document: `{"<view>": [records...], "summary": {...}}`.
    Document,
    /// Comma-separated values: a header line, then a line per record ([`super::csv`]).
    Csv,
    /// Columns: each record's JSON text handed to a [`ColumnSink`] (`-T parquet`), with the
    /// columns of [`super::csv::columns`]; nothing goes to the writer.
    Columns,
}

/// Where `Shape::Columns` sends the records: a columnar file writer that lives in its own
/// crate (h2ledger-parquet), so that this one does not build it. Both calls get the columns of
/// the view, a nested key as its path (`writes.client`), in the JSON's order.
pub trait ColumnSink: Send {
    /// One record, as its JSON text (an object).
    fn row(&mut self, columns: &[String], json: &[u8]) -> Result<(), String>;
    /// After the last record: the summary record's JSON text; the file is complete on `Ok`.
    fn finish(&mut self, columns: &[String], summary: &[u8]) -> Result<(), String>;
}

/// Standard output for a line view: buffered (records are written straight into the buffer,
/// which goes out in pieces of 256 KiB), with a broken pipe (`| head`) remembered.
pub struct Out {
    w: Box<dyn Write + Send>,
    buf: Vec<u8>,
    /// How the records are printed.
    pub shape: Shape,
    /// `frames` or `calls`: the document's array key.
    pub view: &'static str,
    /// Records written so far.
    pub records: u64,
    /// The reader went away (`| head`): nothing more is written.
    pub broken: bool,
    /// `Shape::Csv`: the columns, and whether the header line is out.
    csv: Option<(Vec<String>, bool)>,
    /// `Shape::Csv`: a record's JSON text, before it becomes a line.
    scratch: Vec<u8>,
    /// `Shape::Columns`: where the records go.
    sink: Option<Box<dyn ColumnSink>>,
    /// `Shape::Columns`: the sink failed (a full disk): why. Nothing more is written.
    pub error: Option<String>,
}

impl Out {
    /// Records of `view` (`frames` or `calls`) in `shape`, written to `w`.
    pub fn new(w: Box<dyn Write + Send>, shape: Shape, view: &'static str) -> Out {
        Out {
            w,
            buf: Vec::with_capacity(BUFFER + 4096),
            shape,
            view,
            records: 0,
            broken: false,
            csv: matches!(shape, Shape::Csv | Shape::Columns)
                .then(|| (super::csv::columns(view, false), false)),
            scratch: Vec::new(),
            sink: None,
            error: None,
        }
    }

    /// Records of `view` as columns, handed to `sink` (`-T parquet`).
    pub fn columns(sink: Box<dyn ColumnSink>, view: &'static str) -> Out {
        let mut o = Out::new(Box::new(std::io::sink()), Shape::Columns, view);
        o.sink = Some(sink);
        o
    }

    /// `Shape::Columns`: the sink failed; nothing more is written.
    fn sink_failed(&mut self, e: String) {
        self.error = Some(e);
        self.broken = true;
    }

    /// `Shape::Csv`: the columns of `--messages` too (before the first record).
    pub fn csv_messages(&mut self) {
        if let Some((cols, false)) = &mut self.csv {
            *cols = super::csv::columns(self.view, true);
        }
    }

    /// `Shape::Csv`: the header line, once.
    fn csv_header(&mut self) {
        if let Some((cols, done @ false)) = &mut self.csv {
            super::csv::header(&mut self.buf, cols);
            *done = true;
        }
    }

    /// Sends the buffer on once it holds [`BUFFER`] bytes.
    fn spill(&mut self) {
        if self.buf.len() >= BUFFER {
            if !self.broken && self.w.write_all(&self.buf).is_err() {
                self.broken = true;
            }
            self.buf.clear();
        }
    }

    /// A text line (the table).
    pub fn line(&mut self, s: &str) {
        if self.broken {
            return;
        }
        // Table rows quote the capture: methods, header fields (crate::tty).
        self.buf.extend_from_slice(crate::tty::escape(s).as_bytes());
        self.buf.push(b'\n');
        self.spill();
    }

    /// One record (JSON line, or the next element of the document's array).
    pub fn record<T: Serialize>(&mut self, r: &T) {
        self.record_with(|buf| serde_json::to_writer(buf, r).is_ok());
    }

    /// One record that `write` appends to the buffer as JSON (false: it could not, and
    /// nothing of it is kept).
    pub fn record_with(&mut self, write: impl FnOnce(&mut Vec<u8>) -> bool) {
        if self.broken {
            return;
        }
        if self.shape == Shape::Columns {
            let mut json = std::mem::take(&mut self.scratch);
            json.clear();
            if write(&mut json) {
                if let (Some(sink), Some((cols, _))) = (self.sink.as_mut(), self.csv.as_ref()) {
                    if let Err(e) = sink.row(cols, &json) {
                        self.sink_failed(e);
                    }
                }
                self.records += 1;
            }
            self.scratch = json;
            return;
        }
        if self.shape == Shape::Csv {
            self.csv_header();
            let mut json = std::mem::take(&mut self.scratch);
            json.clear();
            let ok = write(&mut json)
                && self
                    .csv
                    .as_ref()
                    .is_some_and(|(cols, _)| super::csv::row(&mut self.buf, &json, cols));
            self.scratch = json;
            if !ok {
                self.broken = true;
                return;
            }
            self.records += 1;
            self.spill();
            return;
        }
        if self.shape == Shape::Document {
            if self.records == 0 {
                let _ = writeln!(self.buf, "{{\"{}\": [", self.view);
            } else {
                self.buf.extend_from_slice(b",\n");
            }
        }
        let start = self.buf.len();
        if !write(&mut self.buf) {
            self.buf.truncate(start);
            self.broken = true;
            return;
        }
        self.records += 1;
        if self.shape == Shape::Lines {
            self.buf.push(b'\n');
        }
        self.spill();
    }

    /// The closing summary record (JSON shapes), then flush.
    pub fn summary<T: Serialize>(&mut self, s: &T) {
        if !self.broken {
            if self.shape == Shape::Csv {
                self.csv_header();
            }
            let b = &mut self.buf;
            let ok = match self.shape {
                Shape::Table => true,
                // The CSV holds the records only (an empty one its header): the warnings go
                // to stderr, as with the table.
                Shape::Csv => true,
                // The columnar file keeps the summary in its metadata and is complete now.
                Shape::Columns => {
                    let json = serde_json::to_vec(s).unwrap_or_default();
                    let done = match (self.sink.as_mut(), self.csv.as_ref()) {
                        (Some(sink), Some((cols, _))) => sink.finish(cols, &json),
                        _ => Ok(()),
                    };
                    if let Err(e) = done {
                        self.sink_failed(e);
                    }
                    true
                }
                Shape::Lines => {
                    let ok = serde_json::to_writer(&mut *b, s).is_ok();
                    b.push(b'\n');
                    ok
                }
                Shape::Document => {
                    if self.records == 0 {
                        let _ = write!(b, "{{\"{}\": [", self.view);
                    }
                    b.extend_from_slice(b"\n],\n\"summary\": ");
                    let ok = serde_json::to_writer_pretty(&mut *b, s).is_ok();
                    b.extend_from_slice(b"}\n");
                    ok
                }
            };
            if !ok {
                self.broken = true;
            }
        }
        self.flush();
    }

    /// Writes out what is buffered.
    pub fn flush(&mut self) {
        if !self.broken && (self.w.write_all(&self.buf).is_err() || self.w.flush().is_err()) {
            self.broken = true;
        }
        self.buf.clear();
    }
}

/// The last record of `frames` and `calls` in the JSON shapes.
#[derive(Serialize)]
pub struct Summary<'a> {
    /// Calls listed (calls) or frames printed (frames).
    pub calls: Option<u64>,
    /// Packet counts of the run.
    pub capture: &'a h2ledger_run::CaptureStats,
    /// The input ended early (a damaged file): what stopped it.
    pub error: Option<String>,
    /// Frames printed (`frames`) or seen (`calls`).
    pub frames: Option<u64>,
    /// `summary`.
    pub record: &'static str,
    /// Reassembly counts of the run.
    pub tcp: h2ledger_run::TcpReport,
    /// `summary`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// `calls` or `frames`.
    pub view: &'static str,
    /// The run's warnings.
    pub warnings: &'a [String],
}
