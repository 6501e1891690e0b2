//! The records of `h2ledger calls` and `h2ledger frames` as one Apache Parquet file
//! (`-T parquet -w FILE`), written with the parquet crate's low-level column writers (no Arrow),
//! zstd-compressed.
//!
//! The contract (docs/schema/parquet.md): the columns are the keys of the view's JSON lines,
//! nothing added or renamed. A nested object is a Parquet group of the same name (`writes` with
//! `client` and `server`), so `writes.client` reads the same in SQL over the Parquet as over
//! the JSON lines loaded with their nested objects (DuckDB's `read_json`, Spark's
//! `spark.read.json`). Lists (`flag_names`, `headers`, `settings`, the gRPC messages) are one
//! text column holding the list's JSON text, as the JSON lines print it. Every leaf is
//! optional: JSON's `null` is Parquet's null. Numbers are `INT64`, except times in seconds
//! (`start`, `end`, `time`) and durations (the `_us` keys), which are `DOUBLE`, as the JSON
//! prints them. Text is `BYTE_ARRAY` annotated `STRING`. The summary record, which the JSON
//! lines end with, is the file's key-value metadata `h2ledger.summary` (its JSON text), beside
//! `h2ledger.view` (`calls` or `frames`).
//!
//! ```
//! use h2ledger_output::lines::ColumnSink as _;
//! let path = std::env::temp_dir().join("h2ledger-parquet-doc.parquet");
//! let file = std::fs::File::create(&path).unwrap();
//! let mut w = h2ledger_parquet::ParquetSink::new(Box::new(file), "calls");
//! let cols = vec!["conn".to_string(), "writes.client".to_string()];
//! w.row(&cols, br#"{"conn":0,"writes":{"client":3}}"#).unwrap();
//! w.finish(&cols, br#"{"record":"summary"}"#).unwrap();
//! assert_eq!(&std::fs::read(&path).unwrap()[..4], b"PAR1");
//! ```
#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;

use h2ledger_filter::{Src, Ty, View};
use h2ledger_output::lines::ColumnSink;
use parquet::basic::{Compression, ZstdLevel};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use serde_json::value::RawValue;

/// Rows held before they go out as one row group. The bound on what the writer holds is this
/// or [`ROW_GROUP_BYTES`], whichever comes first; nothing is dropped at either, the group is
/// written out (memory follows the group, not the file).
pub const ROW_GROUP_ROWS: usize = 65_536;

/// Bytes of text held before the rows go out as one row group (frames with large header
/// lists reach this before [`ROW_GROUP_ROWS`]).
pub const ROW_GROUP_BYTES: usize = 64 << 20;

/// zstd's level: 3 is zstd's own default (`ZSTD_CLEVEL_DEFAULT` in zstd.h).
const ZSTD_LEVEL: i32 = 3;

/// A leaf column's Parquet type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `INT64`: counts, ids, status codes.
    Int,
    /// `DOUBLE`: times in seconds, durations in microseconds.
    Double,
    /// `BOOLEAN`.
    Bool,
    /// `BYTE_ARRAY (STRING)`: text, and a list as its JSON text.
    Text,
}

impl Kind {
    fn parquet(self) -> &'static str {
        match self {
            Kind::Int => "INT64",
            Kind::Double => "DOUBLE",
            Kind::Bool => "BOOLEAN",
            Kind::Text => "BYTE_ARRAY (STRING)",
        }
    }
}

/// The Parquet type of `view`'s column `path` (a nested key as `writes.client`).
pub fn kind(view: &str, path: &str) -> Kind {
    let v = if view == "frames" {
        View::Frames
    } else {
        View::Calls
    };
    let ty = v
        .fields()
        .iter()
        .find(|f| f.src == Src::Key(f.name) && f.name == path)
        .map(|f| f.ty);
    match ty {
        Some(Ty::Dur { .. }) => Kind::Double,
        Some(Ty::Num) if matches!(path, "start" | "end" | "time") => Kind::Double,
        Some(Ty::Num | Ty::TypeCode | Ty::ErrorCode) => Kind::Int,
        Some(Ty::Bool) => Kind::Bool,
        Some(Ty::Str | Ty::List) => Kind::Text,
        // The `--messages` keys the filter does not name: counts, and lists as JSON text.
        None if path.starts_with("messages_omitted.") => Kind::Int,
        None => Kind::Text,
    }
}

/// The schema of `view` with `columns`, as Parquet's message text (docs/schema/parquet.md
/// prints it): a group per nested object, every leaf optional.
pub fn schema_text(view: &str, columns: &[String]) -> String {
    let mut tree = Node::default();
    for c in columns {
        tree.insert(c, kind(view, c));
    }
    let mut s = format!("message {view} {{\n");
    tree.print(&mut s, 1);
    s.push_str("}\n");
    s
}

/// A group of the schema: its children in the columns' order.
#[derive(Default)]
struct Node {
    children: Vec<(String, Option<Kind>, Node)>,
}

impl Node {
    fn insert(&mut self, path: &str, k: Kind) {
        let (head, rest) = match path.split_once('.') {
            Some((h, r)) => (h, Some(r)),
            None => (path, None),
        };
        let i = match self.children.iter().position(|(n, _, _)| n == head) {
            Some(i) => i,
            None => {
                self.children
                    .push((head.to_string(), None, Node::default()));
                self.children.len() - 1
            }
        };
        match rest {
            Some(r) => self.children[i].2.insert(r, k),
            None => self.children[i].1 = Some(k),
        }
    }

    fn print(&self, s: &mut String, depth: usize) {
        let pad = "  ".repeat(depth);
        for (name, k, node) in &self.children {
            match k {
                Some(k) => {
                    let t = match k {
                        Kind::Int => "INT64",
                        Kind::Double => "DOUBLE",
                        Kind::Bool => "BOOLEAN",
                        Kind::Text => "BYTE_ARRAY",
                    };
                    let ann = if *k == Kind::Text { " (STRING)" } else { "" };
                    s.push_str(&format!("{pad}OPTIONAL {t} {name}{ann};\n"));
                }
                None => {
                    s.push_str(&format!("{pad}REQUIRED GROUP {name} {{\n"));
                    node.print(s, depth + 1);
                    s.push_str(&format!("{pad}}}\n"));
                }
            }
        }
    }

    /// The leaves' paths in the schema's order (Parquet's column order).
    fn leaves(&self, prefix: &str, out: &mut Vec<String>) {
        for (name, k, node) in &self.children {
            let p = if prefix.is_empty() {
                name.clone()
            } else {
                format!("{prefix}.{name}")
            };
            if k.is_some() {
                out.push(p);
            } else {
                node.leaves(&p, out);
            }
        }
    }
}

/// A leaf column's values of the rows held: definition levels (1 present, 0 null) and the
/// present values.
struct Leaf {
    name: String,
    kind: Kind,
    def: Vec<i16>,
    ints: Vec<i64>,
    doubles: Vec<f64>,
    bools: Vec<bool>,
    texts: Vec<ByteArray>,
}

/// Writes records as a Parquet file (see the crate's docs): a [`ColumnSink`] for
/// `h2ledger_output::lines::Out::columns`.
pub struct ParquetSink {
    view: &'static str,
    out: Option<Box<dyn Write + Send>>,
    writer: Option<SerializedFileWriter<Box<dyn Write + Send>>>,
    leaves: Vec<Leaf>,
    /// A leaf's index in `leaves` by its path (`writes.client`).
    index: HashMap<String, usize>,
    rows: usize,
    text_bytes: usize,
    /// Rows written so far.
    pub written: u64,
}

fn err(e: impl std::fmt::Display) -> String {
    format!("parquet: {e}")
}

impl ParquetSink {
    /// A file of `view`'s records (`calls` or `frames`) written to `out`; nothing is written
    /// before the first record or the end.
    pub fn new(out: Box<dyn Write + Send>, view: &'static str) -> ParquetSink {
        ParquetSink {
            view,
            out: Some(out),
            writer: None,
            leaves: Vec::new(),
            index: HashMap::new(),
            rows: 0,
            text_bytes: 0,
            written: 0,
        }
    }

    /// Opens the file with the schema of `columns`, once.
    fn start(&mut self, columns: &[String]) -> Result<(), String> {
        let Some(out) = self.out.take() else {
            return Ok(());
        };
        let text = schema_text(self.view, columns);
        let schema = parquet::schema::parser::parse_message_type(&text).map_err(err)?;
        let mut tree = Node::default();
        for c in columns {
            tree.insert(c, kind(self.view, c));
        }
        let mut paths = Vec::new();
        tree.leaves("", &mut paths);
        self.leaves = paths
            .into_iter()
            .map(|p| Leaf {
                kind: kind(self.view, &p),
                name: p,
                def: Vec::new(),
                ints: Vec::new(),
                doubles: Vec::new(),
                bools: Vec::new(),
                texts: Vec::new(),
            })
            .collect();
        self.index = self
            .leaves
            .iter()
            .enumerate()
            .map(|(i, l)| (l.name.clone(), i))
            .collect();
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(
                ZstdLevel::try_new(ZSTD_LEVEL).map_err(err)?,
            ))
            .set_created_by(format!(
                "h2ledger {} (parquet-rs)",
                env!("CARGO_PKG_VERSION")
            ))
            .build();
        self.writer =
            Some(SerializedFileWriter::new(out, Arc::new(schema), Arc::new(props)).map_err(err)?);
        Ok(())
    }

    /// Writes the rows held as one row group.
    fn flush_group(&mut self) -> Result<(), String> {
        let Some(w) = self.writer.as_mut() else {
            return Ok(());
        };
        if self.rows == 0 {
            return Ok(());
        }
        let mut rg = w.next_row_group().map_err(err)?;
        for leaf in &mut self.leaves {
            let Some(mut col) = rg.next_column().map_err(err)? else {
                return Err(err("fewer columns than the schema's"));
            };
            let def = Some(&leaf.def[..]);
            match leaf.kind {
                Kind::Int => col.typed::<Int64Type>().write_batch(&leaf.ints, def, None),
                Kind::Double => col
                    .typed::<DoubleType>()
                    .write_batch(&leaf.doubles, def, None),
                Kind::Bool => col.typed::<BoolType>().write_batch(&leaf.bools, def, None),
                Kind::Text => col
                    .typed::<ByteArrayType>()
                    .write_batch(&leaf.texts, def, None),
            }
            .map_err(err)?;
            col.close().map_err(err)?;
            leaf.def.clear();
            leaf.ints.clear();
            leaf.doubles.clear();
            leaf.bools.clear();
            leaf.texts.clear();
        }
        rg.close().map_err(err)?;
        self.written += self.rows as u64;
        self.rows = 0;
        self.text_bytes = 0;
        Ok(())
    }
}

impl ColumnSink for ParquetSink {
    fn row(&mut self, columns: &[String], json: &[u8]) -> Result<(), String> {
        self.start(columns)?;
        let text = std::str::from_utf8(json).map_err(err)?;
        let mut path = String::new();
        walk(
            text,
            &mut path,
            &self.index,
            &mut self.leaves,
            &mut self.text_bytes,
        )?;
        // Keys the record does not have (or under a null object) are nulls.
        for leaf in &mut self.leaves {
            if leaf.def.len() == self.rows {
                leaf.def.push(0);
            }
        }
        self.rows += 1;
        if self.rows >= ROW_GROUP_ROWS || self.text_bytes >= ROW_GROUP_BYTES {
            self.flush_group()?;
        }
        Ok(())
    }

    fn finish(&mut self, columns: &[String], summary: &[u8]) -> Result<(), String> {
        self.start(columns)?;
        self.flush_group()?;
        let Some(mut w) = self.writer.take() else {
            return Ok(());
        };
        w.append_key_value_metadata(KeyValue::new(
            "h2ledger.view".to_string(),
            self.view.to_string(),
        ));
        w.append_key_value_metadata(KeyValue::new(
            "h2ledger.summary".to_string(),
            String::from_utf8_lossy(summary).into_owned(),
        ));
        let mut out = w.into_inner().map_err(err)?;
        out.flush().map_err(err)?;
        Ok(())
    }
}

/// One JSON object's keys into the leaves, by path, without building a tree of values: the
/// object is split into its keys and raw values (borrowed), a nested object walked the same
/// way under `path.`. Keys that are no column are passed over.
fn walk(
    json: &str,
    path: &mut String,
    index: &HashMap<String, usize>,
    leaves: &mut [Leaf],
    text_bytes: &mut usize,
) -> Result<(), String> {
    let map: Vec<(&str, &RawValue)> = serde_json::from_str::<RawObject<'_>>(json).map_err(err)?.0;
    let len = path.len();
    for (k, v) in map {
        path.truncate(len);
        path.push_str(k);
        if let Some(&i) = index.get(path.as_str()) {
            put(&mut leaves[i], v.get(), text_bytes)?;
        } else if v.get().starts_with('{') {
            path.push('.');
            walk(v.get(), path, index, leaves, text_bytes)?;
        }
    }
    path.truncate(len);
    Ok(())
}

/// A JSON object as its keys and raw values, in order (h2ledger's keys have no escapes: a key
/// with one is an error).
struct RawObject<'a>(Vec<(&'a str, &'a RawValue)>);

impl<'de> serde::Deserialize<'de> for RawObject<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = RawObject<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<RawObject<'de>, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = m.next_entry::<&'de str, &'de RawValue>()? {
                    out.push((k, v));
                }
                Ok(RawObject(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// One value of a leaf from its JSON text; a value of the wrong type is an error.
fn put(leaf: &mut Leaf, t: &str, text_bytes: &mut usize) -> Result<(), String> {
    if t == "null" {
        leaf.def.push(0);
        return Ok(());
    }
    let bad = || {
        err(format!(
            "column {} ({}) cannot hold {t}",
            leaf.name,
            leaf.kind.parquet()
        ))
    };
    match leaf.kind {
        Kind::Int => {
            let v = t.parse::<i64>().map_err(|_| bad())?;
            leaf.ints.push(v);
        }
        Kind::Double => {
            // JSON's numbers only: Rust's parser would also take `inf` and `NaN`.
            if !t.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
                return Err(bad());
            }
            let v = t.parse::<f64>().map_err(|_| bad())?;
            leaf.doubles.push(v);
        }
        Kind::Bool => {
            let v = match t {
                "true" => true,
                "false" => false,
                _ => return Err(bad()),
            };
            leaf.bools.push(v);
        }
        Kind::Text => {
            let b = match t.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
                Some(s) if !s.contains('\\') => s.as_bytes().to_vec(),
                Some(_) => serde_json::from_str::<String>(t).map_err(err)?.into_bytes(),
                // A list or an object: its JSON text as the JSON lines print it.
                None => t.as_bytes().to_vec(),
            };
            *text_bytes += b.len();
            leaf.texts.push(ByteArray::from(b));
        }
    }
    leaf.def.push(1);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::file::reader::{FileReader, SerializedFileReader};

    #[test]
    fn nested_keys_are_groups_and_lists_are_json_text() {
        let cols: Vec<String> = h2ledger_output::lines::csv::columns("frames", false);
        let s = schema_text("frames", &cols);
        assert!(s.contains("OPTIONAL DOUBLE time;"), "{s}");
        assert!(
            s.contains("OPTIONAL BYTE_ARRAY flag_names (STRING);"),
            "{s}"
        );
        assert!(s.contains("OPTIONAL INT64 length;"), "{s}");
        let c = h2ledger_output::lines::csv::columns("calls", false);
        let s = schema_text("calls", &c);
        assert!(
            s.contains("REQUIRED GROUP writes {\n    OPTIONAL INT64 client;"),
            "{s}"
        );
        assert!(s.contains("OPTIONAL DOUBLE duration_us;"), "{s}");
        assert!(s.contains("OPTIONAL BOOLEAN reset;"), "{s}");
    }

    /// docs/schema/parquet.md prints each schema in a code block that starts with its
    /// `message` line; `H2LEDGER_BLESS_DOCS=1` rewrites the blocks from the code.
    #[test]
    fn docs_schema_page_is_the_code() {
        let page =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema/parquet.md");
        let mut text = std::fs::read_to_string(&page).unwrap();
        let mut stale = Vec::new();
        for (view, messages, name) in [
            ("calls", false, "calls"),
            ("calls", true, "calls --messages"),
            ("frames", false, "frames"),
            ("frames", true, "frames --messages"),
        ] {
            let cols = h2ledger_output::lines::csv::columns(view, messages);
            let want = schema_text(view, &cols);
            let tag = format!("```\n# {name}\n");
            let start = text
                .find(&tag)
                .unwrap_or_else(|| panic!("no block {tag:?}"))
                + tag.len();
            let end = start + text[start..].find("```").unwrap();
            if text[start..end] != want {
                stale.push(name);
                text.replace_range(start..end, &want);
            }
        }
        if std::env::var_os("H2LEDGER_BLESS_DOCS").is_some() {
            std::fs::write(&page, text).unwrap();
        } else {
            assert!(
                stale.is_empty(),
                "docs/schema/parquet.md is stale for {stale:?} (H2LEDGER_BLESS_DOCS=1 rewrites it)"
            );
        }
    }

    #[test]
    fn rows_read_back_with_nulls_and_the_summary() {
        let path = std::env::temp_dir().join(format!("h2l-pq-{}.parquet", std::process::id()));
        let cols: Vec<String> = ["a.b", "a.c", "d", "e", "f"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        {
            let f = std::fs::File::create(&path).unwrap();
            let mut w = ParquetSink::new(Box::new(f), "frames");
            w.row(
                &cols,
                br#"{"a":{"b":"x","c":null},"d":["END_STREAM"],"f":1}"#,
            )
            .unwrap();
            w.row(&cols, br#"{"a":null,"d":[],"e":"y"}"#).unwrap();
            w.finish(&cols, br#"{"record":"summary"}"#).unwrap();
        }
        let r = SerializedFileReader::new(std::fs::File::open(&path).unwrap()).unwrap();
        let kv = r.metadata().file_metadata().key_value_metadata().unwrap();
        assert!(kv.iter().any(|k| k.key == "h2ledger.summary"
            && k.value.as_deref() == Some(r#"{"record":"summary"}"#)));
        let rows: Vec<String> = r
            .get_row_iter(None)
            .unwrap()
            .map(|row| row.unwrap().to_string())
            .collect();
        assert_eq!(
            rows,
            [
                r#"{a: {b: "x", c: null}, d: "["END_STREAM"]", e: null, f: "1"}"#,
                r#"{a: {b: null, c: null}, d: "[]", e: "y", f: null}"#
            ]
        );
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_wrong_type_is_an_error_not_a_panic() {
        let cols = vec!["conn".to_string()];
        let mut w = ParquetSink::new(Box::new(std::io::sink()), "calls");
        let e = w.row(&cols, br#"{"conn":"zero"}"#).unwrap_err();
        assert!(e.contains("column conn (INT64)"), "{e}");
        assert!(w.row(&cols, b"not json").is_err());
    }
}
