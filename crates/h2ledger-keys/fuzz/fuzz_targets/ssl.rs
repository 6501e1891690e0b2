#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::ssl(data));

// -malloc_limit_mb without a sanitizer (scripts/fuzz.sh builds with `-s none`).
#[path = "../../../h2ledger-run/fuzz/malloc_limit.rs"]
mod malloc_limit;
