//! `--messages` and the schema flags of `calls` and `frames` (issue 22), and the decoder they
//! make.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use h2ledger_core::grpc::KeepLimits;
use h2ledger_output::lines::Messages;
use h2ledger_proto::{Limits, Schemas};

/// gRPC messages: whether to decode them, with which schemas, within which bounds.
#[derive(Args, Clone, Debug, Default)]
pub struct MessageArgs {
    /// Decode each gRPC message: with a schema as canonical JSON (protojson's), without one
    /// schema-less (like `protoc --decode_raw`); gRPC health, reflection (v1, v1alpha) and
    /// google.rpc.Status are built in. `calls`: `request_messages` and
    /// `response_messages` in the JSON, the first message of each direction under the call in
    /// the table; `frames`: on the DATA frame that completes each message
    #[arg(long)]
    pub messages: bool,
    /// A .proto file, or a directory of them (recursively), compiled in-process (no protoc);
    /// repeatable; implies --messages
    #[arg(long = "proto", value_name = "PATH")]
    pub protos: Vec<PathBuf>,
    /// An import root of --proto files (protoc's -I); repeatable. The well-known types
    /// (google/protobuf/*.proto) are built in
    #[arg(long = "proto-path", value_name = "DIR")]
    pub proto_paths: Vec<PathBuf>,
    /// A FileDescriptorSet (`protoc --include_imports -o FILE`, `buf build -o FILE`);
    /// repeatable; implies --messages
    #[arg(long = "descriptor-set", value_name = "FILE")]
    pub descriptor_sets: Vec<PathBuf>,
    /// A message longer than this on the wire (or decompressed) is listed with its length,
    /// neither kept nor decoded (anomaly message-too-large); gRPC's default receive limit
    #[arg(long, value_name = "BYTES", default_value_t = 4 << 20,
          value_parser = clap::value_parser!(u32).range(0..=1 << 30))]
    pub max_message_bytes: u32,
    /// `calls`: messages listed per call and direction; later ones are counted in
    /// `messages_omitted` and a warning
    #[arg(long, value_name = "N", default_value_t = 100,
          value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    pub max_messages: u32,
}

impl MessageArgs {
    /// Whether messages are decoded (`--messages`, or a schema given).
    pub fn on(&self) -> bool {
        self.messages || !self.protos.is_empty() || !self.descriptor_sets.is_empty()
    }

    /// What the run keeps of each message for `calls`.
    pub fn keep(&self) -> KeepLimits {
        KeepLimits {
            max_messages: self.max_messages,
            max_message_bytes: self.max_message_bytes,
            ..KeepLimits::default()
        }
    }

    /// The decoder, its schemas loaded (`None` without `--messages`). A schema that does not
    /// load is one line, `FILE:LINE:COL: what`.
    pub fn decoder(&self) -> Result<Option<Messages>> {
        if !self.on() {
            return Ok(None);
        }
        let schemas = if self.protos.is_empty() && self.descriptor_sets.is_empty() {
            Schemas::default()
        } else {
            let mut b = Schemas::builder();
            for p in &self.proto_paths {
                b.import_root(p);
            }
            for p in &self.protos {
                b.proto(p);
            }
            for d in &self.descriptor_sets {
                b.descriptor_set(d);
            }
            b.build().map_err(anyhow::Error::new)?
        };
        let max = self.max_message_bytes as usize;
        let limits = Limits {
            max_message_bytes: max,
            // grpc-go checks the decompressed size against the same receive limit.
            max_decompressed_bytes: max,
            max_json_bytes: Limits::default().max_json_bytes.max(max.saturating_mul(8)),
            ..Limits::default()
        };
        Ok(Some(Messages::new(schemas, limits, self.max_messages)))
    }
}
