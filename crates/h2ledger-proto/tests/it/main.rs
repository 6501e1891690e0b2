//! h2ledger-proto's integration tests, one binary.

/// Reading captures: a small pcap reader, and the gRPC messages of each call through
/// h2ledger-run's pipeline and the crate's `Assembler`.
mod capture;
/// JSON compared as values (numbers as f64: Python writes 1.0 where Go writes 1).
mod jsoncmp;
/// The health captures of grpc-go and grpcio's streaming capture (schema-less).
mod others;
/// Loading schemas: files, directories, import roots, descriptor sets, one-line errors.
mod schemas;
/// The proto-* captures against their ground truth (MessageToDict, protojson).
mod truth;
/// Hand-made messages: merge rules, oneofs, maps, unknown fields, bad input, limits.
mod vectors;
