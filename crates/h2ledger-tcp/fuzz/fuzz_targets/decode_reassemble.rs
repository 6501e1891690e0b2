//! Arbitrary bytes as a sequence of `(linktype, frame)` records fed to `link::decode`
//! and a `Reassembler` with a tiny `Config`, checking the `Sink` call contract.
//!
//! Record layout: 1 byte linktype selector, 1 byte timestamp step, 2 bytes frame
//! length (big endian, cut to what is left), then the frame.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    h2ledger_tcp_fuzz_check::run(data);
});

#[path = "../src/check.rs"]
mod h2ledger_tcp_fuzz_check;

// -malloc_limit_mb without a sanitizer (scripts/fuzz.sh builds with `-s none`).
#[path = "../../../h2ledger-run/fuzz/malloc_limit.rs"]
mod malloc_limit;
