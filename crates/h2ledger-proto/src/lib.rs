//! gRPC messages decoded: protobuf with the user's schemas, and raw without.
//!
//! * [`Schemas`] load `.proto` files (compiled in-process by protox, no protoc; the
//!   well-known types built in) and FileDescriptorSets (prost-reflect). A schema error is a
//!   [`SchemaError`] whose `Display` is one line naming file, line and column.
//! * [`Assembler`] cuts one direction of one stream's DATA payloads into gRPC messages
//!   ([`Envelope`]s), keeping each message's bytes up to a cap.
//! * [`Schemas::decode`] turns one message into a [`Message`]: the type from the call's
//!   `:path`, `grpc-encoding` gzip/deflate inflated (capped), and the message as canonical
//!   JSON exactly as Go's protojson and Python's `MessageToDict` print it with default options,
//!   or the schema-less decode (`protoc --decode_raw`'s view) when no schema matches.
//!
//! Contract: no input makes it panic, hang or use memory or time beyond linear in the bytes
//! given (bounded by [`Limits`]); every bound that is hit is an [`Anomaly`] on the message.
//! No pcap, no async, no printing.
//!
//! The shape of `raw`, an array of fields in wire order:
//!
//! ```text
//! [{"field":1,"value":"150","wire":"varint"},
//!  {"field":2,"message":[...],"wire":"len"}      (or "string": "...", or "bytes": "base64")
//!  {"field":3,"value":"0x3f800000","wire":"fixed32"},
//!  {"field":4,"value":"0x3ff0000000000000","wire":"fixed64"},
//!  {"field":5,"message":[...],"wire":"group"},
//!  {"bytes":"...","error":"truncated value","offset":9}]   (last, when the rest is no protobuf)
//! ```
//!
//! ```
//! use h2ledger_proto::{Assembler, Direction, Limits, Schemas};
//!
//! let dir = std::env::temp_dir().join(format!("h2ledger-proto-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! std::fs::write(dir.join("health.proto"), r#"
//!     syntax = "proto3";
//!     package grpc.health.v1;
//!     message HealthCheckRequest { string service = 1; }
//!     message HealthCheckResponse {
//!       enum ServingStatus { UNKNOWN = 0; SERVING = 1; NOT_SERVING = 2; SERVICE_UNKNOWN = 3; }
//!       ServingStatus status = 1;
//!     }
//!     service Health { rpc Check(HealthCheckRequest) returns (HealthCheckResponse); }
//! "#).unwrap();
//! let schemas = Schemas::builder().proto(dir.join("health.proto")).build().unwrap();
//!
//! // A response DATA payload: one gRPC message, field 1 = 1 (SERVING).
//! let mut asm = Assembler::new(Limits::default().max_message_bytes);
//! let mut got = Vec::new();
//! asm.feed(&[0, 0, 0, 0, 2, 0x08, 0x01], |env| {
//!     let m = schemas.decode("/grpc.health.v1.Health/Check", Direction::Response, &env, None, &Limits::default());
//!     got.push(m.to_json());
//! });
//! assert_eq!(got, [r#"{"bytes":2,"compressed":false,"message":{"status":"SERVING"},"raw":null,"type":"grpc.health.v1.HealthCheckResponse"}"#]);
//!
//! // Without a schema: the schema-less form.
//! let raw = h2ledger_proto::decode_raw(&[0x08, 0x01], &Limits::default()).unwrap();
//! assert_eq!(raw, r#"[{"field":1,"value":"1","wire":"varint"}]"#);
//! # std::fs::remove_dir_all(&dir).unwrap();
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod assemble;
mod builtin;
mod canon;
mod compress;
mod details;
mod json;
mod message;
mod raw;
mod schema;
mod wire;

pub use assemble::{Assembler, Envelope, Partial};
pub use builtin::builtin_files;
pub use details::{base64_decode, builtin, STATUS_TYPE};
pub use message::{decode_raw, Anomaly, Direction, Limits, Message};
pub use prost_reflect::DescriptorPool;
pub use schema::{Method, SchemaError, Schemas, SchemasBuilder};
