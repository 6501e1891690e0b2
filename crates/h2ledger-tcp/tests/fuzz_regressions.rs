//! Every input in `fuzz/regressions/` (crashes once found by the fuzz target, plus
//! hand-made seeds) replayed through the fuzz harness.

#[path = "../fuzz/src/check.rs"]
mod check;

#[test]
fn fuzz_regressions() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/regressions");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        eprintln!("{}", path.display());
        check::run(&data);
        n += 1;
    }
    assert!(n > 0, "no regression inputs in {dir}");
}
