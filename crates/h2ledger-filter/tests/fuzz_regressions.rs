//! The fuzz harness (crates/h2ledger-filter/fuzz) runs here on every input kept in
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
            harness::filter(&std::fs::read(&p).unwrap());
            n += 1;
        }
    }
    assert!(n > 0, "no regression inputs in {}", dir.display());
}
