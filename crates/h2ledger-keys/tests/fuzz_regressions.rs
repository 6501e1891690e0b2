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
            harness::ssl(&data);
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

/// The ssl seed: one `lea CLIENT_RANDOM(%rip),%rsi; mov %r14,%rdi; call` site, and the called
/// function reads the random at SSL+0x160 as OpenSSL 3.0's does.
#[test]
fn the_ssl_seed_has_a_site_and_a_random() {
    use h2ledger_keys::ssl::{call_sites, label_strings, random_at};
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions");
    let data = std::fs::read(dir.join("ssl-sites.bin")).unwrap();
    let labels = label_strings(&data)
        .into_iter()
        .map(|(off, l)| (0x400000 + off as u64, l))
        .collect();
    let sites = call_sites(&data, 0x400000, &labels);
    assert_eq!(sites.len(), 1, "{sites:?}");
    assert_eq!(
        (sites[0].label, sites[0].target),
        ("CLIENT_RANDOM", 0x400020)
    );
    let r = random_at(&data[0x20..], 0x400020).unwrap();
    assert_eq!((r.deref, r.offset), (None, 0x160));
}
