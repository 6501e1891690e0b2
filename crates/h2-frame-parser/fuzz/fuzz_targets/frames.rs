#![no_main]
//! raw_frame loop + Frame::load + Head::plausible over arbitrary bytes: must never panic.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    h2_frame_parser_fuzz_shared::frames(data);
});

mod h2_frame_parser_fuzz_shared {
    include!("../../tests/replay/frames.rs");
}

// -malloc_limit_mb without a sanitizer (scripts/fuzz.sh builds with `-s none`).
#[path = "../../../h2ledger-run/fuzz/malloc_limit.rs"]
mod malloc_limit;
