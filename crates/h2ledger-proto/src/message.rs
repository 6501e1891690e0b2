//! One decoded gRPC message, and the decode itself.

use std::fmt;
use std::sync::Arc;

use crate::assemble::Envelope;
use crate::canon::{Canon, CanonError};
use crate::compress::{self, DecompressError, Encoding};
use crate::json;
use crate::raw;
use crate::schema::Schemas;

/// Which side sent a message: the request is the method's input type, the response its output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Client to server.
    Request,
    /// Server to client.
    Response,
}

/// Bounds on the work and memory of one message's decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Messages longer on the wire are not decoded ([`Anomaly::TooLarge`]). Default 4 MiB,
    /// gRPC's default receive limit (grpc-go `defaultServerMaxReceiveMessageSize` and
    /// `defaultClientMaxReceiveMessageSize`, `1024 * 1024 * 4`, in `server.go` and
    /// `dialoptions.go`).
    pub max_message_bytes: usize,
    /// A compressed message inflating past this is a decompression bomb
    /// ([`Anomaly::DecompressCap`]). Default 4 MiB: grpc-go checks the decompressed size
    /// against the same receive limit (`rpc_util.go`, `decompress`).
    pub max_decompressed_bytes: usize,
    /// Nesting of messages and groups. Default 100, protobuf's default recursion limit (C++
    /// `CodedInputStream::default_recursion_limit_`, `coded_stream.cc`; prost's
    /// `RECURSION_LIMIT`).
    pub max_depth: u32,
    /// The JSON text of `message` or `raw` may grow to this; past it the text is dropped
    /// ([`Anomaly::JsonCap`]). Default 32 MiB: 8 times a 4 MiB message.
    pub max_json_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_message_bytes: 4 << 20,
            max_decompressed_bytes: 4 << 20,
            max_depth: 100,
            max_json_bytes: 32 << 20,
        }
    }
}

/// What went wrong with a message. Every kind leaves the message counted and the decode
/// going; none is a panic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Anomaly {
    /// Longer on the wire than `max_message_bytes`: not decoded.
    TooLarge {
        /// The limit.
        limit: usize,
    },
    /// A Compressed-Flag other than 0 or 1.
    BadFlag(u8),
    /// The Compressed-Flag is set but the stream has no `grpc-encoding` (or `identity`).
    NoEncoding,
    /// A `grpc-encoding` other than gzip, deflate and identity.
    UnknownEncoding(Box<str>),
    /// The compressed bytes are damaged.
    Decompress(Box<str>),
    /// The message inflates past `max_decompressed_bytes` (a decompression bomb).
    DecompressCap {
        /// The limit.
        limit: usize,
    },
    /// The bytes do not parse as the method's message type; `raw` has what they are.
    NotParsed(Box<str>),
    /// The message parsed but a well-known type in it has no JSON form (an `Any` of a type no
    /// schema has, a Timestamp out of range, ...); `raw` has the message.
    Unprintable(Box<str>),
    /// The JSON text would pass `max_json_bytes`.
    JsonCap {
        /// The limit.
        limit: usize,
    },
}

impl Anomaly {
    /// A stable name for counting (kebab-case, like the ledger's anomaly kinds).
    pub fn kind(&self) -> &'static str {
        match self {
            Anomaly::TooLarge { .. } => "message-too-large",
            Anomaly::BadFlag(_) => "bad-compressed-flag",
            Anomaly::NoEncoding => "compressed-without-encoding",
            Anomaly::UnknownEncoding(_) => "unknown-encoding",
            Anomaly::Decompress(_) => "decompress-error",
            Anomaly::DecompressCap { .. } => "decompression-bomb",
            Anomaly::NotParsed(_) => "message-parse",
            Anomaly::Unprintable(_) => "message-json",
            Anomaly::JsonCap { .. } => "message-json-cap",
        }
    }
}

impl fmt::Display for Anomaly {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Anomaly::TooLarge { limit } => {
                write!(f, "message larger than {limit} bytes, not decoded")
            }
            Anomaly::BadFlag(b) => write!(f, "Compressed-Flag {b} (0 or 1 expected)"),
            Anomaly::NoEncoding => f.write_str("Compressed-Flag set without a grpc-encoding"),
            Anomaly::UnknownEncoding(e) => {
                write!(f, "grpc-encoding {e:?} is not gzip, deflate or identity")
            }
            Anomaly::Decompress(e) => write!(f, "decompression failed: {e}"),
            Anomaly::DecompressCap { limit } => {
                write!(
                    f,
                    "decompresses to more than {limit} bytes (decompression bomb), not decoded"
                )
            }
            Anomaly::NotParsed(e) => write!(f, "does not parse as its type: {e}"),
            Anomaly::Unprintable(e) => write!(f, "no JSON form: {e}"),
            Anomaly::JsonCap { limit } => write!(f, "JSON form longer than {limit} bytes, dropped"),
        }
    }
}

/// One decoded message: the object `calls --messages` and `frames` show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The message type's full name, when a schema knows the method.
    pub type_name: Option<Arc<str>>,
    /// The length on the wire (Message-Length).
    pub bytes: u64,
    /// The Compressed-Flag.
    pub compressed: bool,
    /// Canonical JSON (proto3 JSON mapping) as JSON text, when a schema matched and the bytes
    /// parsed.
    pub message: Option<String>,
    /// The schema-less decode as JSON text (the crate docs give its shape): when no schema
    /// matched, when the bytes did not parse against the type, or when they hold fields the
    /// schema does not know (`unknown_fields > 0`).
    pub raw: Option<String>,
    /// Fields the schema does not know, at any depth (kept in `raw`).
    pub unknown_fields: u32,
    /// What went wrong, if anything.
    pub anomaly: Option<Anomaly>,
}

impl Message {
    /// Appends the public JSON object, keys in alphabetical order (as every object h2ledger
    /// prints): `{"bytes":N,"compressed":bool,"message":…,"raw":…,"type":…}`.
    pub fn write_json(&self, out: &mut String) {
        out.push_str("{\"bytes\":");
        json::int(out, self.bytes);
        out.push_str(if self.compressed {
            ",\"compressed\":true"
        } else {
            ",\"compressed\":false"
        });
        out.push_str(",\"message\":");
        out.push_str(self.message.as_deref().unwrap_or("null"));
        out.push_str(",\"raw\":");
        out.push_str(self.raw.as_deref().unwrap_or("null"));
        out.push_str(",\"type\":");
        match &self.type_name {
            Some(t) => json::string(out, t),
            None => out.push_str("null"),
        }
        out.push('}');
    }

    /// The public JSON object as a new string.
    pub fn to_json(&self) -> String {
        let mut s = String::new();
        self.write_json(&mut s);
        s
    }
}

/// The schema-less decode of `bytes` (JSON text), or `None` past `max_json_bytes`.
pub fn decode_raw(bytes: &[u8], limits: &Limits) -> Option<String> {
    let mut s = String::new();
    raw::write(bytes, limits.max_depth, limits.max_json_bytes, &mut s).ok()?;
    Some(s)
}

impl Schemas {
    /// Decodes one message of the call to `path` (`/package.Service/Method`): the method's
    /// input type for a request, its output type for a response; schema-less when no schema
    /// has the method. `encoding` is the stream's `grpc-encoding` header.
    pub fn decode(
        &self,
        path: &str,
        dir: Direction,
        env: &Envelope<'_>,
        encoding: Option<&str>,
        limits: &Limits,
    ) -> Message {
        let ty = self.method_types(path).map(|(i, o)| match dir {
            Direction::Request => i,
            Direction::Response => o,
        });
        self.decode_index(ty, env, encoding, limits)
    }

    /// Decodes one message as the type `type_name` (a full name, `package.Message`);
    /// schema-less when `type_name` is `None` or unknown.
    pub fn decode_as(
        &self,
        type_name: Option<&str>,
        env: &Envelope<'_>,
        encoding: Option<&str>,
        limits: &Limits,
    ) -> Message {
        let ty = type_name.and_then(|t| self.message_index(t.strip_prefix('.').unwrap_or(t)));
        self.decode_index(ty, env, encoding, limits)
    }

    fn decode_index(
        &self,
        ty: Option<u32>,
        env: &Envelope<'_>,
        encoding: Option<&str>,
        limits: &Limits,
    ) -> Message {
        let mut m = Message {
            type_name: ty.map(|i| self.tables.msgs[i as usize].name.clone()),
            bytes: u64::from(env.wire_len),
            compressed: env.compressed(),
            message: None,
            raw: None,
            unknown_fields: 0,
            anomaly: None,
        };
        if env.cut
            || env.wire_len as usize > limits.max_message_bytes
            || env.bytes.len() > limits.max_message_bytes
        {
            m.anomaly = Some(Anomaly::TooLarge {
                limit: limits.max_message_bytes,
            });
            return m;
        }
        let inflated;
        let bytes: &[u8] = match env.flag {
            0 => env.bytes,
            1 => {
                let enc = match Encoding::from_header(encoding) {
                    Some(Encoding::Identity) => {
                        m.anomaly = Some(Anomaly::NoEncoding);
                        return m;
                    }
                    Some(e) => e,
                    None => {
                        m.anomaly = Some(Anomaly::UnknownEncoding(
                            encoding.unwrap_or_default().into(),
                        ));
                        return m;
                    }
                };
                match compress::decompress(enc, env.bytes, limits.max_decompressed_bytes) {
                    Ok(b) => {
                        inflated = b;
                        &inflated
                    }
                    Err(DecompressError::Cap) => {
                        m.anomaly = Some(Anomaly::DecompressCap {
                            limit: limits.max_decompressed_bytes,
                        });
                        return m;
                    }
                    Err(DecompressError::Bad(e)) => {
                        m.anomaly = Some(Anomaly::Decompress(e.into()));
                        return m;
                    }
                }
            }
            f => {
                m.anomaly = Some(Anomaly::BadFlag(f));
                return m;
            }
        };
        let mut want_raw = true;
        if let Some(t) = ty {
            let mut c = Canon {
                tables: &self.tables,
                max_depth: limits.max_depth,
                max_out: limits.max_json_bytes,
                unknown: 0,
            };
            // Small messages print about 4 times their size (names, quotes): one allocation.
            let mut out = String::with_capacity(bytes.len() * 4 + 64);
            match c.message(t, &[bytes], 0, None, &mut out) {
                Ok(()) => {
                    m.message = Some(out);
                    m.unknown_fields = c.unknown;
                    want_raw = c.unknown > 0;
                }
                Err(e) => {
                    m.anomaly = Some(match e {
                        CanonError::Wire(w) => Anomaly::NotParsed(w.text().into()),
                        CanonError::Utf8 => Anomaly::NotParsed("string field is not UTF-8".into()),
                        CanonError::Unprintable(s) => Anomaly::Unprintable(s.into()),
                        CanonError::Output => Anomaly::JsonCap {
                            limit: limits.max_json_bytes,
                        },
                    });
                }
            }
        }
        if want_raw {
            match decode_raw(bytes, limits) {
                Some(r) => m.raw = Some(r),
                None => {
                    m.anomaly.get_or_insert(Anomaly::JsonCap {
                        limit: limits.max_json_bytes,
                    });
                }
            }
        }
        m
    }
}
