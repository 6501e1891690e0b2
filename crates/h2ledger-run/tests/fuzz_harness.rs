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

/// The reader of records on hostile pcapng (decision 402): block lengths that lie (zero,
/// below 12, not a multiple of 4, beyond the bound, unlike the trailer), files cut inside a
/// block, options and secrets that overrun their block, packets on interfaces never
/// described, a section of another version: the same records and end block by block, never a
/// panic, and nothing held beyond one bounded block.
#[test]
fn blocks_on_hostile_pcapng() {
    fn block(kind: u32, body: &[u8], len: Option<u32>) -> Vec<u8> {
        let total = 12 + body.len().div_ceil(4) * 4;
        let mut b = kind.to_le_bytes().to_vec();
        b.extend(len.unwrap_or(total as u32).to_le_bytes());
        b.extend(body);
        b.resize(total - 4, 0);
        b.extend((total as u32).to_le_bytes());
        b
    }
    let shb = block(
        0x0A0D_0D0A,
        &[
            0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0, 255, 255, 255, 255, 255, 255, 255, 255,
        ],
        None,
    );
    let idb = block(
        1,
        &[1, 0, 0, 0, 0, 0, 4, 0, 9, 0, 1, 0, 9, 0, 0, 0, 0, 0, 0, 0],
        None,
    );
    let mut epb = vec![0u8; 20];
    epb[12] = 4;
    epb[16] = 4;
    epb.extend(b"abcd");
    let epb = block(6, &epb, None);
    let dsb = block(0x0A, b"KSLT\x03\x00\x00\x00abc\x00", None);
    let good: Vec<u8> = [&shb[..], &idb, &epb, &dsb, &epb].concat();
    let mut cases: Vec<Vec<u8>> = vec![good.clone()];
    for len in [0u32, 4, 11, 13, 0x0200_0004, u32::MAX, 16] {
        cases.push([&shb, &idb, &block(6, &[0; 24], Some(len))[..]].concat());
        cases.push([&shb[..], &block(0x0A, &[0; 8], Some(len))].concat());
    }
    cases.push(
        [
            &shb,
            &idb,
            &block(1, &[1, 0, 0, 0, 0, 0, 0, 0, 9, 0, 200, 0], None)[..],
        ]
        .concat(),
    );
    cases.push([&shb, &idb, &block(0x0A, b"KSLT\xff\x00\x00\x00", None)[..]].concat());
    cases.push(
        [
            &shb,
            &idb,
            &block(
                6,
                &[7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                None,
            )[..],
        ]
        .concat(),
    );
    let mut v2 = shb.clone();
    v2[12] = 2;
    cases.push([&v2[..], &idb, &epb].concat());
    for cut in 0..good.len() {
        cases.push(good[..cut].to_vec());
    }
    for c in cases {
        for (size, chunk) in [(0u8, 0u8), (3, 1), (255, 255)] {
            let mut d = vec![size, chunk];
            d.extend_from_slice(&c);
            harness::blocks(&d);
        }
    }
}
