//! Replays every file in fuzz/regressions/ (crash inputs found by the fuzz targets, kept
//! after the fix) through both fuzz harnesses, plus a few hand-made hostile inputs.

mod replay {
    pub mod frames {
        include!("replay/frames.rs");
    }
    pub mod hpack {
        include!("replay/hpack.rs");
    }
}

fn regressions() -> Vec<(String, Vec<u8>)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    files
        .into_iter()
        .filter(|p| p.is_file() && p.file_name().is_some_and(|n| n != "README.md"))
        .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
        .collect()
}

#[test]
fn replay_regressions_through_both_parsers() {
    for (name, bytes) in regressions() {
        eprintln!("replaying {name}");
        replay::frames::frames(&bytes);
        replay::hpack::hpack(&bytes);
    }
}

#[test]
fn hostile_inputs() {
    let cases: [&[u8]; 6] = [
        &[],
        &[0xff; 64],
        &[0x00; 64],
        &[0x0f, 0x7f, 0xff, 0xff, 0xff, 0xff, 0x0f],
        &[
            0x3f, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x40, 0x7f, 0xff, 0xff, 0xff, 0x0f,
        ],
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
    ];
    for bytes in cases {
        replay::frames::frames(bytes);
        replay::hpack::hpack(bytes);
    }
}
