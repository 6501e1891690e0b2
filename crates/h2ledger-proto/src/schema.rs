//! Schemas: `.proto` files compiled in-process by protox, FileDescriptorSets read by
//! prost-reflect, and the tables the decoder walks.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use miette::Diagnostic;
use prost_reflect::{
    Cardinality, DescriptorPool, FieldDescriptor, Kind as PKind, MessageDescriptor,
};

use crate::json;

/// A schema that could not be loaded. `Display` is one line that names the file and, when
/// known, the line and column: `health.proto:12:5: expected ';', but found '}'`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    /// The file, as given (or as the compiler names an imported file).
    pub file: Option<String>,
    /// 1-based line and column, when the error points into the file's text.
    pub line_col: Option<(u32, u32)>,
    /// What is wrong, on one line.
    pub message: String,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.file, self.line_col) {
            (Some(file), Some((l, c))) => write!(f, "{file}:{l}:{c}: {}", self.message),
            (Some(file), None) => write!(f, "{file}: {}", self.message),
            (None, _) => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for SchemaError {}

/// One line: newlines and runs of spaces become single spaces.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl SchemaError {
    fn io(path: &Path, e: &std::io::Error) -> Self {
        SchemaError {
            file: Some(path.display().to_string()),
            line_col: None,
            message: one_line(&e.to_string()),
        }
    }

    /// protox's error: its file, the first label's line and column in the file's text (miette
    /// spans are byte offsets), and its message.
    fn protox(e: &protox::Error, roots: &[PathBuf]) -> Self {
        let file = e.file().map(str::to_owned);
        let mut line_col = None;
        let label = e.labels().and_then(|mut l| l.next());
        if let Some(label) = label {
            let offset = label.offset();
            let text = e.source_code().and_then(|src| {
                src.read_span(label.inner(), 0, 0)
                    .ok()
                    .map(|s| (s.line(), s.column()))
            });
            line_col = match text {
                Some((l, c)) => Some((l as u32 + 1, c as u32 + 1)),
                // No source attached: read the file itself under the import roots.
                None => file
                    .as_deref()
                    .and_then(|f| line_col_in_file(roots, f, offset)),
            };
        }
        let mut message = one_line(&e.to_string());
        if let Some(help) = e.help() {
            message.push_str(" (");
            message.push_str(&one_line(&help.to_string()));
            message.push(')');
        }
        SchemaError {
            file,
            line_col,
            message,
        }
    }
}

fn line_col_in_file(roots: &[PathBuf], name: &str, offset: usize) -> Option<(u32, u32)> {
    let text = roots
        .iter()
        .find_map(|r| std::fs::read_to_string(r.join(name)).ok())?;
    let before = text.get(..offset)?;
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    Some((line as u32, col as u32))
}

/// What to load: `.proto` files or directories, import roots, FileDescriptorSet files.
#[derive(Debug, Default, Clone)]
pub struct SchemasBuilder {
    protos: Vec<PathBuf>,
    roots: Vec<PathBuf>,
    sets: Vec<PathBuf>,
}

/// The well-known types, always in the pool (protox carries their sources).
const WELL_KNOWN: &[&str] = &[
    "google/protobuf/any.proto",
    "google/protobuf/duration.proto",
    "google/protobuf/empty.proto",
    "google/protobuf/field_mask.proto",
    "google/protobuf/struct.proto",
    "google/protobuf/timestamp.proto",
    "google/protobuf/wrappers.proto",
];

impl SchemasBuilder {
    /// A `.proto` file, or a directory whose `.proto` files (recursively, in name order) are
    /// all compiled. Its directory (or the directory itself) is an import root after those
    /// given with [`import_root`](Self::import_root).
    pub fn proto(&mut self, path: impl Into<PathBuf>) -> &mut Self {
        self.protos.push(path.into());
        self
    }

    /// An import root (`--proto-path`, protoc's `-I`). The well-known types need none.
    pub fn import_root(&mut self, dir: impl Into<PathBuf>) -> &mut Self {
        self.roots.push(dir.into());
        self
    }

    /// A FileDescriptorSet file (`protoc --include_imports -o FILE`, `buf build -o FILE`).
    pub fn descriptor_set(&mut self, path: impl Into<PathBuf>) -> &mut Self {
        self.sets.push(path.into());
        self
    }

    /// Reads and compiles everything.
    pub fn build(&self) -> Result<Schemas, SchemaError> {
        let mut pool = DescriptorPool::new();
        for set in &self.sets {
            let bytes = std::fs::read(set).map_err(|e| SchemaError::io(set, &e))?;
            pool.decode_file_descriptor_set(bytes.as_slice())
                .map_err(|e| SchemaError {
                    file: Some(set.display().to_string()),
                    line_col: None,
                    message: format!(
                        "not a usable FileDescriptorSet: {}",
                        one_line(&e.to_string())
                    ),
                })?;
        }
        let mut roots = self.roots.clone();
        let mut files = Vec::new();
        for p in &self.protos {
            let meta = std::fs::metadata(p).map_err(|e| SchemaError::io(p, &e))?;
            if meta.is_dir() {
                roots.push(p.clone());
                let before = files.len();
                collect_protos(p, &mut files, 0).map_err(|e| SchemaError::io(p, &e))?;
                files[before..].sort();
            } else {
                roots.push(p.parent().map_or_else(
                    || PathBuf::from("."),
                    |d| {
                        if d.as_os_str().is_empty() {
                            PathBuf::from(".")
                        } else {
                            d.to_path_buf()
                        }
                    },
                ));
                files.push(p.clone());
            }
        }
        let mut c = protox::Compiler::new(&roots).map_err(|e| SchemaError::protox(&e, &roots))?;
        c.include_imports(true);
        for f in WELL_KNOWN {
            if pool.get_file_by_name(f).is_none() {
                c.open_file(f)
                    .map_err(|e| SchemaError::protox(&e, &roots))?;
            }
        }
        for f in &files {
            c.open_file(f)
                .map_err(|e| SchemaError::protox(&e, &roots))?;
        }
        let set = c.file_descriptor_set();
        for file in set.file {
            if pool.get_file_by_name(file.name()).is_some() {
                continue;
            }
            let name = file.name().to_owned();
            pool.add_file_descriptor_proto(file)
                .map_err(|e| SchemaError {
                    file: Some(name),
                    line_col: None,
                    message: one_line(&e.to_string()),
                })?;
        }
        crate::builtin::add_to(&mut pool);
        Ok(Schemas::from_pool(pool))
    }
}

/// Directories are walked to this depth (a symlink loop ends here).
const MAX_DIR_DEPTH: u32 = 32;

fn collect_protos(dir: &Path, out: &mut Vec<PathBuf>, depth: u32) -> std::io::Result<()> {
    if depth > MAX_DIR_DEPTH {
        return Ok(());
    }
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let p = e.path();
        if e.file_type()?.is_dir() {
            collect_protos(&p, out, depth + 1)?;
        } else if p.extension().is_some_and(|x| x == "proto") {
            out.push(p);
        }
    }
    Ok(())
}

/// A gRPC method found from its `:path`.
#[derive(Debug, Clone, Copy)]
pub struct Method<'a> {
    /// `package.Service.Method`.
    pub full_name: &'a str,
    /// The request message's full name.
    pub input: &'a str,
    /// The response message's full name.
    pub output: &'a str,
    /// The client sends a stream.
    pub client_streaming: bool,
    /// The server sends a stream.
    pub server_streaming: bool,
}

pub(crate) struct MethodInfo {
    pub(crate) full_name: Box<str>,
    pub(crate) input: u32,
    pub(crate) output: u32,
    pub(crate) client_streaming: bool,
    pub(crate) server_streaming: bool,
}

/// Compiled schemas: the descriptor pool, and per message type the table the decoder walks.
pub struct Schemas {
    pool: DescriptorPool,
    pub(crate) tables: Tables,
    methods: HashMap<Box<str>, MethodInfo>,
}

impl fmt::Debug for Schemas {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Schemas")
            .field("messages", &self.tables.msgs.len())
            .field("methods", &self.methods.len())
            .finish()
    }
}

/// The built-in schemas only (crate::builtin): health, reflection, `google.rpc.Status`.
impl Default for Schemas {
    fn default() -> Self {
        let mut pool = DescriptorPool::new();
        crate::builtin::add_to(&mut pool);
        Schemas::from_pool(pool)
    }
}

impl Schemas {
    /// What to load; [`SchemasBuilder::build`] reads it.
    pub fn builder() -> SchemasBuilder {
        SchemasBuilder::default()
    }

    /// Schemas from a descriptor pool built elsewhere.
    pub fn from_pool(pool: DescriptorPool) -> Self {
        let tables = Tables::build(&pool);
        let mut methods = HashMap::new();
        for s in pool.services() {
            for m in s.methods() {
                let (Some(&input), Some(&output)) = (
                    tables.by_name.get(m.input().full_name()),
                    tables.by_name.get(m.output().full_name()),
                ) else {
                    continue;
                };
                let path = format!("/{}/{}", s.full_name(), m.name());
                methods.insert(
                    path.into_boxed_str(),
                    MethodInfo {
                        full_name: m.full_name().into(),
                        input,
                        output,
                        client_streaming: m.is_client_streaming(),
                        server_streaming: m.is_server_streaming(),
                    },
                );
            }
        }
        Schemas {
            pool,
            tables,
            methods,
        }
    }

    /// The descriptor pool (prost-reflect): every file loaded, the well-known types included.
    pub fn pool(&self) -> &DescriptorPool {
        &self.pool
    }

    /// The method a gRPC `:path` (`/package.Service/Method`) names, if a schema has it.
    pub fn method(&self, path: &str) -> Option<Method<'_>> {
        let m = self.methods.get(path)?;
        Some(Method {
            full_name: &m.full_name,
            input: &self.tables.msgs[m.input as usize].name,
            output: &self.tables.msgs[m.output as usize].name,
            client_streaming: m.client_streaming,
            server_streaming: m.server_streaming,
        })
    }

    pub(crate) fn method_types(&self, path: &str) -> Option<(u32, u32)> {
        self.methods.get(path).map(|m| (m.input, m.output))
    }

    /// Number of gRPC methods known.
    pub fn methods_len(&self) -> usize {
        self.methods.len()
    }

    pub(crate) fn message_index(&self, full_name: &str) -> Option<u32> {
        self.tables.by_name.get(full_name).copied()
    }
}

/// Field types as the decoder needs them: a message or enum is an index into the tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Double,
    Float,
    Int32,
    Int64,
    Uint32,
    Uint64,
    Sint32,
    Sint64,
    Fixed32,
    Fixed64,
    Sfixed32,
    Sfixed64,
    Bool,
    String,
    Bytes,
    Enum(u32),
    Message(u32),
    Group(u32),
}

impl Kind {
    /// Scalars that may be packed (protobuf's "primitive numeric types", bool and enums).
    pub(crate) fn packable(self) -> bool {
        !matches!(
            self,
            Kind::String | Kind::Bytes | Kind::Message(_) | Kind::Group(_)
        )
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Card {
    /// `presence`: explicit presence (proto2 optional, proto3 `optional`, oneof members,
    /// messages): shown whenever present on the wire, even when the value is the default.
    Single {
        presence: bool,
    },
    Repeated,
    /// A map field: its entry's key and value kinds.
    Map {
        key: Kind,
        value: Kind,
    },
}

pub(crate) struct FieldInfo {
    pub(crate) number: u32,
    /// `"jsonName":`, quoted and escaped (extensions: `"[full.name]":`).
    pub(crate) key: Box<str>,
    pub(crate) kind: Kind,
    pub(crate) card: Card,
    pub(crate) oneof: Option<u16>,
}

/// Message types whose JSON form is not an object of their fields (the proto3 JSON mapping's
/// table, <https://protobuf.dev/programming-guides/json/>).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wkt {
    Any,
    Timestamp,
    Duration,
    Struct,
    Value,
    ListValue,
    FieldMask,
    Empty,
    /// `google.protobuf.DoubleValue` and its kin: the JSON of field 1 of this kind.
    Wrapper(Kind),
}

impl Wkt {
    fn of(name: &str) -> Option<Wkt> {
        Some(match name {
            "google.protobuf.Any" => Wkt::Any,
            "google.protobuf.Timestamp" => Wkt::Timestamp,
            "google.protobuf.Duration" => Wkt::Duration,
            "google.protobuf.Struct" => Wkt::Struct,
            "google.protobuf.Value" => Wkt::Value,
            "google.protobuf.ListValue" => Wkt::ListValue,
            "google.protobuf.FieldMask" => Wkt::FieldMask,
            "google.protobuf.Empty" => Wkt::Empty,
            "google.protobuf.DoubleValue" => Wkt::Wrapper(Kind::Double),
            "google.protobuf.FloatValue" => Wkt::Wrapper(Kind::Float),
            "google.protobuf.Int64Value" => Wkt::Wrapper(Kind::Int64),
            "google.protobuf.UInt64Value" => Wkt::Wrapper(Kind::Uint64),
            "google.protobuf.Int32Value" => Wkt::Wrapper(Kind::Int32),
            "google.protobuf.UInt32Value" => Wkt::Wrapper(Kind::Uint32),
            "google.protobuf.BoolValue" => Wkt::Wrapper(Kind::Bool),
            "google.protobuf.StringValue" => Wkt::Wrapper(Kind::String),
            "google.protobuf.BytesValue" => Wkt::Wrapper(Kind::Bytes),
            _ => return None,
        })
    }
}

/// Field numbers up to this are found by a direct index; larger ones by binary search.
const DENSE_MAX: u32 = 128;
const NONE: u16 = u16::MAX;

pub(crate) struct MsgInfo {
    pub(crate) name: std::sync::Arc<str>,
    pub(crate) wkt: Option<Wkt>,
    /// Declaration order, then extensions by full name (protojson's `order.IndexNameFieldOrder`).
    pub(crate) fields: Vec<FieldInfo>,
    dense: Vec<u16>,
    sparse: Vec<(u32, u16)>,
    pub(crate) oneofs: u16,
}

impl MsgInfo {
    /// The index in `fields` of field `number`.
    #[inline]
    pub(crate) fn field(&self, number: u32) -> Option<u16> {
        if number <= DENSE_MAX {
            let i = *self.dense.get(number as usize)?;
            (i != NONE).then_some(i)
        } else {
            let k = self
                .sparse
                .binary_search_by_key(&number, |&(n, _)| n)
                .ok()?;
            Some(self.sparse[k].1)
        }
    }
}

pub(crate) struct EnumInfo {
    /// `google.protobuf.NullValue`: JSON `null`.
    pub(crate) null: bool,
    /// A proto2 enum: a number it does not define is an unknown field, not a value (the
    /// language guide's "closed enums"; protobuf-go `protoimpl` and C++ parse it so).
    pub(crate) closed: bool,
    /// (number, `"NAME"` quoted), sorted by number; for aliases the first declared name
    /// (protoreflect's `EnumValueDescriptors.ByNumber`).
    pub(crate) values: Vec<(i32, Box<str>)>,
}

impl EnumInfo {
    /// A closed enum's number that it does not define.
    pub(crate) fn rejects(&self, n: i32) -> bool {
        self.closed && self.name(n).is_none()
    }

    pub(crate) fn name(&self, n: i32) -> Option<&str> {
        let k = self.values.binary_search_by_key(&n, |(v, _)| *v).ok()?;
        Some(&self.values[k].1)
    }
}

pub(crate) struct Tables {
    pub(crate) msgs: Vec<MsgInfo>,
    pub(crate) enums: Vec<EnumInfo>,
    pub(crate) by_name: HashMap<Box<str>, u32>,
}

impl Tables {
    fn build(pool: &DescriptorPool) -> Tables {
        let mut by_name = HashMap::new();
        let all: Vec<MessageDescriptor> = pool.all_messages().collect();
        for (i, m) in all.iter().enumerate() {
            by_name.insert(Box::from(m.full_name()), i as u32);
        }
        let mut enum_idx = HashMap::new();
        let mut enums = Vec::new();
        for e in pool.all_enums() {
            enum_idx.insert(e.full_name().to_owned(), enums.len() as u32);
            let mut values: Vec<(i32, Box<str>)> = Vec::new();
            for v in e.values() {
                let mut q = String::new();
                json::string(&mut q, v.name());
                values.push((v.number(), q.into()));
            }
            // Stable: the first declared name of each number stays first.
            values.sort_by_key(|(n, _)| *n);
            values.dedup_by_key(|(n, _)| *n);
            enums.push(EnumInfo {
                null: e.full_name() == "google.protobuf.NullValue",
                closed: e.parent_file().syntax() == prost_reflect::Syntax::Proto2,
                values,
            });
        }
        let kind = |f: &FieldDescriptor| -> Kind {
            match f.kind() {
                PKind::Double => Kind::Double,
                PKind::Float => Kind::Float,
                PKind::Int32 => Kind::Int32,
                PKind::Int64 => Kind::Int64,
                PKind::Uint32 => Kind::Uint32,
                PKind::Uint64 => Kind::Uint64,
                PKind::Sint32 => Kind::Sint32,
                PKind::Sint64 => Kind::Sint64,
                PKind::Fixed32 => Kind::Fixed32,
                PKind::Fixed64 => Kind::Fixed64,
                PKind::Sfixed32 => Kind::Sfixed32,
                PKind::Sfixed64 => Kind::Sfixed64,
                PKind::Bool => Kind::Bool,
                PKind::String => Kind::String,
                PKind::Bytes => Kind::Bytes,
                PKind::Enum(e) => Kind::Enum(enum_idx.get(e.full_name()).copied().unwrap_or(0)),
                PKind::Message(m) => {
                    let i = by_name.get(m.full_name()).copied().unwrap_or(0);
                    if f.is_group() {
                        Kind::Group(i)
                    } else {
                        Kind::Message(i)
                    }
                }
            }
        };
        let info = |f: &FieldDescriptor, key: Box<str>| -> FieldInfo {
            let card = if f.is_map() {
                match f.kind() {
                    PKind::Message(entry) => Card::Map {
                        key: kind(&entry.map_entry_key_field()),
                        value: kind(&entry.map_entry_value_field()),
                    },
                    _ => Card::Repeated,
                }
            } else if f.cardinality() == Cardinality::Repeated {
                Card::Repeated
            } else {
                Card::Single {
                    presence: f.supports_presence(),
                }
            };
            FieldInfo {
                number: f.number(),
                key,
                kind: kind(f),
                card,
                oneof: f
                    .containing_oneof()
                    .and_then(|o| o.path().last().and_then(|&i| u16::try_from(i).ok())),
            }
        };
        let mut msgs: Vec<MsgInfo> = all
            .iter()
            .map(|m| {
                let fields: Vec<FieldInfo> = m
                    .fields()
                    .map(|f| {
                        let mut k = String::new();
                        json::string(&mut k, f.json_name());
                        k.push(':');
                        info(&f, k.into())
                    })
                    .collect();
                MsgInfo {
                    name: m.full_name().into(),
                    wkt: Wkt::of(m.full_name()),
                    fields,
                    dense: Vec::new(),
                    sparse: Vec::new(),
                    oneofs: u16::try_from(m.oneofs().len()).unwrap_or(u16::MAX - 1),
                }
            })
            .collect();
        let mut exts: Vec<_> = pool.all_extensions().collect();
        exts.sort_by(|a, b| a.full_name().cmp(b.full_name()));
        for x in exts {
            let Some(&owner) = by_name.get(x.containing_message().full_name()) else {
                continue;
            };
            let mut k = String::new();
            json::string(&mut k, &format!("[{}]", x.full_name()));
            k.push(':');
            let card = if x.cardinality() == Cardinality::Repeated {
                Card::Repeated
            } else {
                Card::Single { presence: true }
            };
            let kd = match x.kind() {
                PKind::Message(m) => {
                    let i = by_name.get(m.full_name()).copied().unwrap_or(0);
                    if x.is_group() {
                        Kind::Group(i)
                    } else {
                        Kind::Message(i)
                    }
                }
                PKind::Enum(e) => Kind::Enum(enum_idx.get(e.full_name()).copied().unwrap_or(0)),
                _ => {
                    // Scalars: reuse the mapping through a field-like view.
                    match x.kind() {
                        PKind::Double => Kind::Double,
                        PKind::Float => Kind::Float,
                        PKind::Int32 => Kind::Int32,
                        PKind::Int64 => Kind::Int64,
                        PKind::Uint32 => Kind::Uint32,
                        PKind::Uint64 => Kind::Uint64,
                        PKind::Sint32 => Kind::Sint32,
                        PKind::Sint64 => Kind::Sint64,
                        PKind::Fixed32 => Kind::Fixed32,
                        PKind::Fixed64 => Kind::Fixed64,
                        PKind::Sfixed32 => Kind::Sfixed32,
                        PKind::Sfixed64 => Kind::Sfixed64,
                        PKind::Bool => Kind::Bool,
                        PKind::String => Kind::String,
                        _ => Kind::Bytes,
                    }
                }
            };
            let m = &mut msgs[owner as usize];
            if m.fields.iter().any(|f| f.number == x.number()) {
                continue;
            }
            m.fields.push(FieldInfo {
                number: x.number(),
                key: k.into(),
                kind: kd,
                card,
                oneof: None,
            });
        }
        for m in &mut msgs {
            let max = m
                .fields
                .iter()
                .map(|f| f.number)
                .filter(|&n| n <= DENSE_MAX)
                .max();
            if let Some(max) = max {
                m.dense = vec![NONE; max as usize + 1];
            }
            for (i, f) in m.fields.iter().enumerate() {
                let i = u16::try_from(i).unwrap_or(NONE);
                if f.number <= DENSE_MAX {
                    m.dense[f.number as usize] = i;
                } else {
                    m.sparse.push((f.number, i));
                }
            }
            m.sparse.sort_unstable();
        }
        Tables {
            msgs,
            enums,
            by_name,
        }
    }
}
