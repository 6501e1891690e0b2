#![no_main]
//! Arbitrary header blocks through normal and mid-stream decoders, several blocks sharing one
//! decoder: must never panic and must stay bounded.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    h2_frame_parser_fuzz_shared::hpack(data);
});

mod h2_frame_parser_fuzz_shared {
    include!("../../tests/replay/hpack.rs");
}

// -malloc_limit_mb without a sanitizer (scripts/fuzz.sh builds with `-s none`).
#[path = "../../../h2ledger-run/fuzz/malloc_limit.rs"]
mod malloc_limit;
