#![no_main]

#[path = "../harness.rs"]
mod harness;

// The analysis on the ledger's thread and on its own (decision 261): the same report.
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    harness::threads_agree(data);
});

// -malloc_limit_mb without a sanitizer (scripts/fuzz.sh builds with `-s none`).
#[path = "../malloc_limit.rs"]
mod malloc_limit;
