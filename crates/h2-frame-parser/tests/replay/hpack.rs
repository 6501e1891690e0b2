// Shared by the `hpack` fuzz target and tests/fuzz_regressions.rs (included, not a module of
// its own).

/// Splits `data` into blocks (first byte: number of blocks, then a length byte before each)
/// and feeds them through a normal and a mid-stream decoder that each persist across blocks.
pub fn hpack(data: &[u8]) {
    use h2_frame_parser::hpack::Decoder;
    let Some((&first, mut rest)) = data.split_first() else {
        return;
    };
    let mut normal = Decoder::new();
    let mut mid = Decoder::new_mid_stream();
    if first & 0x80 != 0 {
        normal.set_max_size_limit(u32::from(first) * 64);
        mid.set_max_size_limit(u32::from(first) * 64);
    }
    let blocks = usize::from(first & 0x0f) + 1;
    for _ in 0..blocks {
        let (block, next) = match rest.split_first() {
            Some((&len, tail)) => {
                let len = usize::from(len).min(tail.len());
                tail.split_at(len)
            }
            None => (rest, rest),
        };
        rest = next;
        for dec in [&mut normal, &mut mid] {
            let mut out = 0usize;
            let result = dec.decode(block, |h| {
                // Headers come from the block, the tables or a placeholder: bounded.
                out += h.name.len() + h.value.len();
                assert!(!h.value_unseen || h.name_unseen);
            });
            if let Err(e) = result {
                let _ = e.to_string();
            }
            assert!(dec.table_size() <= dec.max_size());
            let _ = out;
        }
    }
    // Whatever is left goes to fresh decoders as one block.
    let _ = Decoder::new().decode(rest, |_| {});
    let _ = Decoder::new_mid_stream().decode(rest, |_| {});
}
