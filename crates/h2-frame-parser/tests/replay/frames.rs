// Shared by the `frames` fuzz target and tests/fuzz_regressions.rs (included, not a module
// of its own).

/// Parses frames until the input runs out, loading each and checking that the header
/// judgement and the load agree with the wire.
pub fn frames(data: &[u8]) {
    use h2_frame_parser::{raw_frame, Frame, Head, HEAD_LEN};
    let mut input = data;
    loop {
        match raw_frame(input) {
            Ok((rest, raw)) => {
                assert_eq!(raw.payload.len(), raw.head.length as usize);
                assert_eq!(input.len(), rest.len() + HEAD_LEN + raw.payload.len());
                let plausible = raw.head.plausible(16_777_215);
                let _ = raw.head.kind.name();
                match Frame::load(raw) {
                    Ok(frame) => {
                        assert_eq!(frame.kind(), raw.head.kind);
                        if let Frame::Settings(s) = frame {
                            assert_eq!(s.iter().count(), s.len());
                        }
                    }
                    Err(e) => {
                        let _ = e.to_string();
                        let _ = plausible;
                    }
                }
                input = rest;
            }
            Err(nom::Err::Incomplete(_)) => break,
            Err(e) => panic!("raw_frame returned a non-Incomplete error: {e:?}"),
        }
    }
    // Every 9-byte window is a header; plausibility must not panic at any frame size limit.
    for w in data.windows(HEAD_LEN).take(64) {
        if let Ok((_, head)) = Head::parse(w) {
            let _ = head.plausible(0);
            let _ = head.plausible(u32::MAX);
        }
    }
}
