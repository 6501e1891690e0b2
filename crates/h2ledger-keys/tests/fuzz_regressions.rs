//! The fuzz harnesses (crates/h2ledger-keys/fuzz) run here on every input kept in
//! fuzz/regressions/, so a crash found once stays fixed.

#[path = "../fuzz/harness.rs"]
mod harness;

#[test]
fn regressions() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "bin") {
            let data = std::fs::read(&p).unwrap();
            harness::probe(&data);
            harness::record(&data);
            n += 1;
        }
    }
    assert!(n > 0, "no regression inputs in {}", dir.display());
}

/// The wrapped seed reaches the pcln table and build info parsers through `find_go_probe`.
#[test]
fn the_wrapped_seed_finds_the_probe_point() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions");
    let data = std::fs::read(dir.join("probe-wrapped-go119.bin")).unwrap();
    let file = harness::wrap(&data[1..]);
    let p = h2ledger_keys::find_go_probe(&file).unwrap();
    assert_eq!(p.found_by, h2ledger_keys::FoundBy::Pclntab);
    assert_eq!(p.address, 0x400040);
    assert_eq!(p.go_version.as_deref(), Some("go1.19.8"));
}
