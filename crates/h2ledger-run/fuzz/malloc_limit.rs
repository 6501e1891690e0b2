//! libFuzzer's `-malloc_limit_mb` for fuzz builds without a sanitizer (`scripts/fuzz.sh` builds
//! with `cargo fuzz -s none`): libFuzzer sees single allocations only through a sanitizer's
//! malloc hooks, so without one a huge request (a buffer sized by a timestamp or a length
//! field) would go unseen until its pages are touched. Every fuzz target includes this file
//! (`#[path]`): an allocation above [`LIMIT`] aborts, and libFuzzer keeps the input as a crash.
//! `-rss_limit_mb` needs no sanitizer and still applies.

use std::alloc::{GlobalAlloc, Layout, System};

/// The same 512 MiB as the `-malloc_limit_mb=512` scripts/fuzz.sh passes.
pub const LIMIT: usize = 512 << 20;

struct Capped;

fn check(size: usize) {
    if size > LIMIT {
        // Unbuffered stderr and no allocation: safe inside the allocator.
        eprintln!("==malloc-limit== allocation of {size} bytes exceeds the limit of {LIMIT} bytes");
        std::process::abort();
    }
}

// SAFETY: every call goes to the system allocator unchanged; only the size is checked first.
unsafe impl GlobalAlloc for Capped {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        check(layout.size());
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        check(layout.size());
        System.alloc_zeroed(layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        check(new_size);
        System.realloc(ptr, layout, new_size)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static CAPPED: Capped = Capped;
