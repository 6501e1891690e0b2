//! Integration tests of the h2ledger binary, run as a user runs it.
//!
//! * `golden`: the real captures in captures/ against their golden ledgers, which were
//!   cross-checked with Wireshark's dissector (the command is in captures/README.md).
//! * `tshark`: the same comparison, with the reference recomputed from tshark now (when
//!   tshark is installed; CI installs it).
//! * `bad_input`: broken, empty, foreign and truncated inputs: one clear line, never a panic.
//! * `analysis`: calls, writes per call, PING rounds, latency percentiles, phases, `frames`,
//!   against the workloads' own counts and tshark's per-frame timestamps.
//! * `flow`: flow-control stalls and windows, gRPC messages (issue 11), against
//!   scripts/tshark-flow.py and the workloads' known answers.
//! * `live`: (root) `sniff` on real gRPC workloads (tonic; grpc-go when Go is installed),
//!   `sniff --write` then `replay`, and the demo's JSON.

mod util;

mod analysis;
mod bad_input;
mod flow;
mod golden;
mod live;
mod tshark;
