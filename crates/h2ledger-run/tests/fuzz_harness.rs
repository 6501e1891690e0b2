//! The whole-run fuzz harness (crates/h2ledger-run/fuzz), run on every input kept in
//! fuzz/regressions/ and on inputs made here (an HTTP/2 connection with clock jumps under
//! `--every 1ns`, three connections taking turns in a pipeline that tracks two), so a crash found
//! once stays fixed. Each input also runs with the analysis on a thread of its own, which must
//! give the same report (`threads_agree`, decision 261).

#[path = "../fuzz/harness.rs"]
mod harness;

fn op(out: &mut Vec<u8>, op: u8, time: u8, payload: &[u8]) {
    out.extend_from_slice(&[op, time]);
    out.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    out.extend_from_slice(payload);
}

#[test]
fn regressions() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "bin") {
            let input = std::fs::read(&p).unwrap();
            harness::run(&input);
            harness::threads_agree(&input);
            harness::blocks(&input);
            harness::decompress(&input);
            n += 1;
        }
    }
    assert!(n > 0, "no regression inputs in {}", dir.display());
}

#[test]
fn http2_with_clock_jumps_every_nanosecond() {
    let mut preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    preface.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
    let ping = [0, 0, 8, 6, 0, 0, 0, 0, 0, 2, 4, 16, 16, 9, 14, 7, 7];
    for head in 0..16u8 {
        let mut d = vec![head];
        op(&mut d, 0x00, 1, &[]); // SYN, client
        op(&mut d, 0x04, 1, &[]); // SYN, server
        op(&mut d, 0x20, 1, &preface); // PSH, client
        op(&mut d, 0x20, 0x80 | 40, &ping); // a jump of 2^40 ns ahead
        op(&mut d, 0x24, 0xc0 | 40, &ping); // and back
        op(&mut d, 0x24, 0x80 | 63, &ping); // the largest jump the harness makes
        op(&mut d, 0x08, 1, &[]); // FIN
        op(&mut d, 0x0c, 1, &[]);
        harness::run(&d);
        harness::threads_agree(&d);
    }
}

#[test]
fn evicted_connections_return_with_two_tracked() {
    // Header bit 3: two connections tracked at once; three take turns, each evicted and back
    // (reassembly remembers as many evicted connections as it tracks).
    let mut d = vec![8 | 2];
    for round in 0..3u8 {
        for conn in 0..3u8 {
            if round == 0 {
                op(&mut d, conn, 1, &[]); // SYN, client
                op(&mut d, 0x04 | conn, 1, &[]); // SYN, server
            }
            op(&mut d, 0x20 | conn, 1, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
        }
    }
    let stats = harness::run(&d);
    harness::threads_agree(&d);
    assert!(stats.evicted >= 6, "{stats:?}");
    assert!(stats.resumed >= 6, "{stats:?}");
}

/// The reader of blocks (decision 264) cut at every size on real captures, whole, cut short
/// and changed: the same packets as the file parsed at once.
#[test]
fn blocks_on_real_captures() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../captures");
    for name in [
        "grpcgo-article.pcap",
        "grpcgo-article-any.pcapng",
        "curl-nghttpd-tls13-dsb.pcapng",
    ] {
        let file = std::fs::read(root.join(name)).unwrap();
        for (size, chunk) in [(0u8, 0u8), (1, 255), (37, 3), (255, 255), (100, 7)] {
            for cut in [file.len(), file.len() - 1, file.len() / 2, 30, 24] {
                let mut d = vec![size, chunk];
                d.extend_from_slice(&file[..cut]);
                harness::blocks(&d);
                if cut > 40 {
                    d[cut / 2] ^= 0x5a;
                    harness::blocks(&d);
                }
            }
        }
    }
}
