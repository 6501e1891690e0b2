//! Where `--keys-from`/`--keys-from-lib` would put the probe in each file given (OpenSSL or
//! BoringSSL; issue 37), and how long finding it took: `cargo run -p h2ledger-keys --example
//! ssl-probe -- /usr/lib/x86_64-linux-gnu/libssl.so.3 /usr/bin/node`.

fn main() {
    let mut bad = false;
    for f in std::env::args().skip(1) {
        let t = std::time::Instant::now();
        let r = std::fs::read(&f)
            .map_err(|e| e.to_string())
            .and_then(|b| h2ledger_keys::find_ssl_probe(&b).map_err(|e| e.to_string()));
        let ms = t.elapsed().as_secs_f64() * 1e3;
        match r {
            Ok(p) => println!("{f}: {} ({ms:.0} ms)", p.describe()),
            Err(e) => {
                bad = true;
                println!("{f}: {e} ({ms:.0} ms)")
            }
        }
    }
    std::process::exit(i32::from(bad));
}
