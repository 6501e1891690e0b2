//! Integration tests of the h2ledger binary, run as a user runs it.
//!
//! * `golden`: the real captures in captures/ against their golden ledgers, which were
//!   cross-checked with Wireshark's dissector (the command is in captures/README.md).
//! * `tshark`: the same comparison, with the reference recomputed from tshark now (when
//!   tshark is installed; CI installs it).
//! * `bad_input`: broken, empty, foreign and truncated inputs: one clear line, never a panic.
//! * `analysis`: calls, writes per call, PING rounds, latency percentiles, phases, `frames`,
//!   against the workloads' own counts and tshark's per-frame timestamps.
//! * `tls`: HTTP/2 over TLS decrypted with key logs (curl/nghttpd captures, the shared ones).
//! * `live`: (root) `sniff` on real gRPC workloads (tonic; grpc-go when Go is installed),
//!   `sniff --write` then `replay`, and the demo's JSON.

mod util;

mod analysis;
mod bad_input;
mod golden;
mod live;
mod tls;
mod tshark;
