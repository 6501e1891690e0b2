//! The reader of records: classic pcap as libpcap reads it, pcapng whole (decision 402).

use super::{
    nanos, BlockReader, Blocks, Damage, Filled, Found, Kind, Raw, Record, MAX_BLOCK, MAX_RECORD,
    TLS_KEY_LOG,
};

fn pcap(be: bool, nanos: bool, snaplen: u32, recs: &[(u32, u32, &[u8])]) -> Vec<u8> {
    let w32 = |v: u32| if be { v.to_be_bytes() } else { v.to_le_bytes() };
    let w16 = |v: u16| if be { v.to_be_bytes() } else { v.to_le_bytes() };
    let mut o = Vec::new();
    o.extend(w32(if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 }));
    o.extend(w16(2));
    o.extend(w16(4));
    o.extend(w32(0));
    o.extend(w32(0));
    o.extend(w32(snaplen));
    o.extend(w32(1));
    for &(sec, frac, data) in recs {
        o.extend(w32(sec));
        o.extend(w32(frac));
        o.extend(w32(data.len() as u32));
        o.extend(w32(data.len() as u32));
        o.extend(data);
    }
    o
}

/// Every record of `b`, fed as the reading thread does (the rest after each record).
fn all(b: &[u8]) -> (Vec<(i64, Vec<u8>)>, Record) {
    let mut out = Vec::new();
    let (_, end) = Blocks::new().walk(b, |f| {
        if let Found::Packet { ts, start, len, .. } = f {
            out.push((ts, b[start..start + len].to_vec()));
        }
    });
    (out, end)
}

#[test]
fn classic_pcap_in_both_orders_and_units() {
    for be in [false, true] {
        for nanos in [false, true] {
            let f = pcap(be, nanos, 65_535, &[(1, 2, b"ab"), (3, 999_999, b"")]);
            let (p, end) = all(&f);
            let k = if nanos { 1 } else { 1_000 };
            assert_eq!(
                p,
                vec![
                    (1_000_000_000 + 2 * k, b"ab".to_vec()),
                    (3_000_000_000 + 999_999 * k, vec![])
                ],
                "be {be} nanos {nanos}"
            );
            assert_eq!(end, Record::More { need: 16 }, "the end of the file");
        }
    }
}

/// What libpcap may read otherwise is left to it; a cut record asks for its length.
#[test]
fn classic_pcap_odd_records() {
    let odd = |f: Vec<u8>| all(&f).1;
    // Longer than the header's snapshot length (0 too): taken whole, as tshark takes it
    // (libpcap would cut it to that length).
    for (snaplen, data) in [(1, &b"ab"[..]), (0, b"a")] {
        let (p, end) = all(&pcap(false, false, snaplen, &[(1, 0, data)]));
        assert_eq!(p, vec![(1_000_000_000, data.to_vec())], "snaplen {snaplen}");
        assert_eq!(end, Record::More { need: 16 });
    }
    assert_eq!(
        odd(pcap(false, false, 9, &[(1, 1_000_000, b"a")])),
        Record::Odd
    );
    assert_eq!(
        odd(pcap(false, true, 9, &[(1, 1_000_000_000, b"a")])),
        Record::Odd
    );
    assert_eq!(
        odd(pcap(false, false, 9, &[(0x8000_0000, 0, b"a")])),
        Record::Odd,
        "2038"
    );
    let big = vec![0u8; MAX_RECORD as usize + 1];
    assert_eq!(
        odd(pcap(false, false, u32::MAX, &[(1, 0, &big)])),
        Record::Odd
    );
    let mut f = pcap(false, false, 9, &[(1, 0, b"abcd")]);
    f.truncate(f.len() - 1);
    assert_eq!(all(&f), (vec![], Record::More { need: 20 }));
    let mut v = pcap(false, false, 9, &[]);
    v[6] = 3;
    assert_eq!(all(&v).1, Record::Odd, "version 2.3");
    assert_eq!(all(b"\xa1\xb2\xcd\x34").1, Record::Odd, "modified pcap");
    assert_eq!(all(b"\xd4\xc3").1, Record::More { need: 4 });
}

struct Ng {
    be: bool,
    out: Vec<u8>,
}

impl Ng {
    fn w32(&self, v: u32) -> [u8; 4] {
        if self.be {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }
    fn w16(&self, v: u16) -> [u8; 2] {
        if self.be {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }
    fn block(&mut self, kind: u32, body: &[u8]) {
        let total = (12 + body.len().div_ceil(4) * 4) as u32;
        let (k, t) = (self.w32(kind), self.w32(total));
        self.out.extend(k);
        self.out.extend(t);
        self.out.extend(body);
        self.out.resize(self.out.len().div_ceil(4) * 4, 0);
        self.out.extend(t);
    }
    fn section(&mut self) {
        let mut b = self.w32(0x1A2B_3C4D).to_vec();
        b.extend(self.w16(1));
        b.extend(self.w16(0));
        b.extend([0xff; 8]);
        self.block(0x0A0D_0D0A, &b);
    }
    fn interface(&mut self, linktype: u16, snaplen: u32, opts: &[(u16, &[u8])]) {
        let mut b = self.w16(linktype).to_vec();
        b.extend([0, 0]);
        b.extend(self.w32(snaplen));
        for &(code, v) in opts {
            b.extend(self.w16(code));
            b.extend(self.w16(v.len() as u16));
            b.extend(v);
            b.resize(b.len().div_ceil(4) * 4, 0);
        }
        if !opts.is_empty() {
            b.extend([0; 4]);
        }
        self.block(1, &b);
    }
    fn dsb(&mut self, kind: u32, data: &[u8]) {
        let mut b = self.w32(kind).to_vec();
        b.extend(self.w32(data.len() as u32));
        b.extend(data);
        self.block(0x0A, &b);
    }
    fn packet(&mut self, iface: u32, t: u64, data: &[u8]) {
        let mut b = self.w32(iface).to_vec();
        b.extend(self.w32((t >> 32) as u32));
        b.extend(self.w32(t as u32));
        b.extend(self.w32(data.len() as u32));
        b.extend(self.w32(data.len() as u32));
        b.extend(data);
        self.block(6, &b);
    }
}

#[test]
fn pcapng_interfaces_units_and_skipped_blocks() {
    for be in [false, true] {
        let mut ng = Ng { be, out: vec![] };
        ng.section();
        ng.interface(1, 0, &[(2, b"lo"), (9, &[6])]);
        ng.interface(1, 262_144, &[(9, &[9])]);
        ng.dsb(TLS_KEY_LOG, b"keys");
        ng.packet(0, 1_500_000, b"abc");
        ng.block(4, &[0; 8]);
        ng.packet(1, 2_000_000_007, b"");
        ng.block(0x0BAD, b"skip");
        let (p, end) = all(&ng.out);
        assert_eq!(
            p,
            vec![(1_500_000_000, b"abc".to_vec()), (2_000_000_007, vec![])],
            "be {be}"
        );
        assert_eq!(end, Record::More { need: 12 });
    }
}

/// Everything of a pcapng is read: interfaces after packets, of other link types, with any
/// resolution and an offset, Simple and obsolete Packet Blocks, a second section in the other
/// byte order, and secrets in file order among the packets.
#[test]
fn pcapng_read_whole() {
    let mut ng = Ng {
        be: false,
        out: vec![],
    };
    ng.section();
    ng.interface(1, 0, &[]);
    ng.packet(0, 5, b"a");
    ng.dsb(TLS_KEY_LOG, b"CLIENT_RANDOM x y\n");
    // Milliseconds, one hour after the epoch's time stamp.
    ng.interface(113, 0, &[(9, &[3]), (14, &3600i64.to_le_bytes())]);
    ng.packet(1, 2_500, b"bc");
    ng.block(3, &[3, 0, 0, 0, b'd', b'e', b'f', 0]);
    let mut pb = 0u16.to_le_bytes().to_vec();
    pb.extend([0, 0]);
    pb.extend(0u32.to_le_bytes());
    pb.extend(7u32.to_le_bytes());
    pb.extend(1u32.to_le_bytes());
    pb.extend(1u32.to_le_bytes());
    pb.push(b'g');
    ng.block(2, &pb);
    let mut be = Ng {
        be: true,
        out: vec![],
    };
    be.section();
    // 2^-10 s.
    be.interface(101, 0, &[(9, &[0x8a])]);
    be.packet(0, 1024 * 3 + 512, b"h");
    ng.out.extend(be.out);
    let b = &ng.out;
    let mut got = Vec::new();
    let (at, end) = Blocks::new().walk(b, |f| {
        got.push(match f {
            Found::Packet {
                ts,
                linktype,
                start,
                len,
                ..
            } => (ts, linktype, b[start..start + len].to_vec()),
            Found::Secrets { kind, start, len } => {
                (-1, kind as u16, b[start..start + len].to_vec())
            }
        })
    });
    assert_eq!((at, end), (b.len(), Record::More { need: 12 }));
    assert_eq!(
        got,
        vec![
            (5_000, 1, b"a".to_vec()),
            (-1, TLS_KEY_LOG as u16, b"CLIENT_RANDOM x y\n".to_vec()),
            (3_602_500_000_000, 113, b"bc".to_vec()),
            (0, 1, b"def".to_vec()),
            (7_000, 1, b"g".to_vec()),
            (3_500_000_000, 101, b"h".to_vec()),
        ]
    );
}

/// Every record of `b` whole, as the copying walk (`split`) hands it out: its kind and bytes.
fn copied(b: &[u8]) -> (Vec<(Kind, Vec<u8>)>, Record) {
    let mut out = Vec::new();
    let mut next = 0;
    let (at, end) = Blocks::copying().walk_raw(b, |r: Raw| {
        assert_eq!(r.start, next, "one record after the other");
        next = r.start + r.len;
        out.push((r.kind, b[r.start..r.start + r.len].to_vec()));
    });
    assert_eq!(at, next);
    (out, end)
}

/// The copying walk takes every classic pcap record that is framed right, including what the
/// reading walk leaves to libpcap, up to the one bound; a file that is no capture, or of
/// another major version, is said as damage.
#[test]
fn copying_classic_pcap() {
    // Beyond the snapshot length, a fraction beyond a second, past 2038, beyond MAX_RECORD.
    let big = vec![7u8; MAX_RECORD as usize + 1];
    let f = pcap(
        false,
        false,
        1,
        &[(1, 0, b"ab"), (0x8000_0000, 1_000_000, &big)],
    );
    let (recs, end) = copied(&f);
    assert_eq!(end, Record::More { need: 16 });
    assert_eq!(recs.len(), 3);
    assert_eq!(recs[0], (Kind::Header, f[..24].to_vec()));
    assert!(matches!(
        recs[1].0,
        Kind::Found(Found::Packet {
            linktype: 1,
            len: 2,
            ..
        })
    ));
    assert_eq!(recs[1].1, f[24..42]);
    assert_eq!(recs[2].1.len(), 16 + big.len());
    let mut v = pcap(true, true, 9, &[(1, 0, b"a")]);
    v[7] = 3;
    assert_eq!(copied(&v).0.len(), 2, "version 2.3");
    v[5] = 3;
    assert_eq!(copied(&v).1, Record::Damaged(Damage::PcapVersion(3, 3)));
    assert_eq!(
        copied(b"\xa1\xb2\xcd\x34").1,
        Record::Damaged(Damage::NotCapture)
    );
    assert_eq!(
        copied(b"text, no capture").1,
        Record::Damaged(Damage::NotCapture)
    );
    assert_eq!(copied(b"\xd4\xc3").1, Record::More { need: 4 });
    // The one bound: a record beyond MAX_BLOCK is damage, not an allocation.
    let mut h = pcap(false, false, 9, &[]);
    h.extend([0; 8]);
    h.extend((MAX_BLOCK + 1).to_le_bytes());
    h.extend([0; 4]);
    assert_eq!(copied(&h).1, Record::Damaged(Damage::Record(MAX_BLOCK + 1)));
    let said = Damage::Record(MAX_BLOCK + 1).to_string();
    assert!(said.contains("at most 32 MiB"), "{said}");
}

/// A pcapng's records whole, each with what it is; its packets and secrets those of the
/// reading walk, and its damage the same.
#[test]
fn copying_pcapng() {
    let mut ng = Ng {
        be: true,
        out: vec![],
    };
    ng.section();
    ng.interface(101, 0, &[]);
    ng.dsb(TLS_KEY_LOG, b"keys");
    ng.packet(0, 5, b"abc");
    ng.block(4, &[0; 8]);
    ng.section();
    let (recs, end) = copied(&ng.out);
    assert_eq!(end, Record::More { need: 12 });
    let kinds: Vec<_> = recs
        .iter()
        .map(|(k, _)| match k {
            Kind::Found(Found::Packet { linktype, .. }) => format!("packet {linktype}"),
            Kind::Found(Found::Secrets { .. }) => "secrets".into(),
            k => format!("{k:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "Section",
            "Other(1)",
            "secrets",
            "packet 101",
            "Other(4)",
            "Section"
        ]
    );
    assert_eq!(recs.iter().map(|r| r.1.len()).sum::<usize>(), ng.out.len());
    let mut d = ng.out.clone();
    d.extend([0, 0, 0, 6, 0, 0, 0, 13]);
    assert_eq!(copied(&d).1, Record::Damaged(Damage::Length(13)));
    assert_eq!(copied(&d).1, all(&d).1, "the reading walk's damage");
}

/// The copying reader ends a classic pcap as a pcapng: a cut record is a cut, never left to
/// libpcap.
#[test]
fn copying_reader_cuts_classic_pcap() {
    let mut f = pcap(false, false, 9, &[(1, 0, b"abcd"), (2, 0, b"efgh")]);
    f.truncate(f.len() - 1);
    for size in [1, 7, 100] {
        let mut r = BlockReader::copying(&f[..], size);
        let (mut data, mut raws, mut n) = (Vec::new(), Vec::new(), 0);
        let end = loop {
            let e = r.fill_raw(&mut data, &mut raws);
            n += raws.len();
            if e != Filled::Block {
                break e;
            }
        };
        assert_eq!(n, 2, "the header and the first record");
        assert_eq!(
            end,
            Filled::Cut {
                at: 44,
                got: 19,
                need: 20
            }
        );
    }
}

#[test]
fn time_stamps_in_any_resolution() {
    assert_eq!(nanos(7, 6, 0), 7_000);
    assert_eq!(nanos(7, 9, 0), 7);
    assert_eq!(nanos(7_000, 12, 0), 7);
    assert_eq!(nanos(u64::MAX, 127, 0), 0);
    assert_eq!(nanos(1 << 20, 0x94, -1), 0);
    assert_eq!(nanos(u64::MAX, 0, 0), i64::MAX, "saturates");
    // The 64-bit path for micro and nanoseconds agrees with the 128-bit one at its edges.
    assert_eq!(nanos(u64::MAX, 6, 0), i64::MAX);
    assert_eq!(nanos(u64::MAX, 9, 0), i64::MAX);
    assert_eq!(nanos(i64::MAX as u64, 9, 0), i64::MAX);
    assert_eq!(
        nanos(i64::MAX as u64 / 1_000, 6, 0),
        i64::MAX / 1_000 * 1_000
    );
    assert_eq!(nanos(i64::MAX as u64 / 1_000 + 1, 6, 0), i64::MAX);
    assert_eq!(nanos(5, 6, -1), -999_995_000);
    assert_eq!(nanos(0, 6, i64::MIN), i64::MIN, "saturates");
    assert_eq!(nanos(3, 0xff, 0), 0);
}

/// A damaged pcapng ends the walk with its reason, after the records before it.
#[test]
fn pcapng_damage() {
    let walk = |f: &dyn Fn(&mut Ng)| {
        let mut ng = Ng {
            be: false,
            out: vec![],
        };
        ng.section();
        ng.interface(1, 0, &[]);
        ng.packet(0, 1, b"a");
        f(&mut ng);
        let (p, end) = all(&ng.out);
        assert_eq!(p.len(), 1, "the packet before");
        end
    };
    type Case<'a> = (&'a dyn Fn(&mut Ng), Record);
    let cases: [Case; 11] = [
        (
            &|n| n.out.extend([1, 0, 0, 0, 13, 0, 0, 0]),
            Record::Damaged(Damage::Length(13)),
        ),
        (
            &|n| n.out.extend([1, 0, 0, 0, 8, 0, 0, 0]),
            Record::Damaged(Damage::Length(8)),
        ),
        (
            &|n| n.out.extend([1, 0, 0, 0, 0, 0, 0, 4]),
            Record::Damaged(Damage::TooLarge(64 << 20)),
        ),
        (
            &|n| n.out.extend([9, 0, 0, 0, 12, 0, 0, 0, 16, 0, 0, 0]),
            Record::Damaged(Damage::Trailer(12, 16)),
        ),
        (
            &|n| n.out.extend([1, 0, 0, 0, 16, 0, 0, 0]),
            Record::More { need: 16 },
        ),
        (
            &|n| n.packet(1, 1, b"a"),
            Record::Damaged(Damage::Interface(1)),
        ),
        (
            &|n| n.block(1, &[1, 0, 0, 0, 0, 0, 0, 0, 9, 0, 9, 0, 6, 0, 0, 0]),
            Record::Damaged(Damage::Options),
        ),
        (&|n| n.block(6, &[0; 16]), Record::Damaged(Damage::Short(6))),
        (
            &|n| n.dsb(TLS_KEY_LOG, b"abc"),
            Record::Found(
                Found::Secrets {
                    kind: TLS_KEY_LOG,
                    start: 16,
                    len: 3,
                },
                24,
            ),
        ),
        (
            &|n| {
                let mut b = 0u32.to_le_bytes().to_vec();
                b.extend([0, 0, 0, 0, 0, 0, 0, 0]);
                b.extend(9u32.to_le_bytes());
                b.extend(9u32.to_le_bytes());
                b.extend(b"abcd");
                n.block(6, &b)
            },
            Record::Damaged(Damage::Captured(9)),
        ),
        (
            &|n| n.block(10, &[b'K', b'S', b'L', b'T', 9, 0, 0, 0, 1, 2, 3, 4]),
            Record::Damaged(Damage::Secrets(9)),
        ),
    ];
    for (i, (blocks, end)) in cases.into_iter().enumerate() {
        let got = walk(blocks);
        // The secrets block is found whole; the walk ends after it.
        if let Record::Found(..) = end {
            continue;
        }
        assert_eq!(got, end, "case {i}");
    }
}

/// Block by block (any block size, any read size): the same records as the whole file at
/// once, and a file cut or damaged anywhere says where.
#[test]
fn the_reader_cuts_blocks_anywhere() {
    let mut ng = Ng {
        be: true,
        out: vec![],
    };
    ng.section();
    ng.interface(1, 0, &[(9, &[9])]);
    for i in 0..20u64 {
        ng.packet(0, i, &vec![i as u8; i as usize]);
        if i % 7 == 3 {
            ng.dsb(TLS_KEY_LOG, format!("CLIENT_RANDOM {i} x\n").as_bytes());
        }
    }
    let file = ng.out;
    let items = |f: &[u8], size: usize| {
        let mut r = BlockReader::new(f, size);
        let (mut data, mut found, mut got) = (Vec::new(), Vec::new(), Vec::new());
        let end = loop {
            let end = r.fill(&mut data, &mut found);
            for x in &found {
                let (start, len) = match *x {
                    Found::Packet { start, len, .. } | Found::Secrets { start, len, .. } => {
                        (start, len)
                    }
                };
                got.push(data[start..start + len].to_vec());
            }
            if end != Filled::Block {
                break end;
            }
        };
        (got, end)
    };
    let (whole, end) = items(&file, 1 << 20);
    assert_eq!(end, Filled::End);
    assert_eq!(whole.len(), 23);
    for size in [1, 7, 64, 100] {
        assert_eq!(
            items(&file, size),
            (whole.clone(), Filled::End),
            "size {size}"
        );
    }
    for cut in (4..file.len()).step_by(13) {
        let (got, end) = items(&file[..cut], 50);
        assert!(whole.starts_with(&got), "cut {cut}");
        match end {
            Filled::Cut { at, got, need } => {
                assert_eq!(at as usize + got, cut, "cut {cut}");
                assert!(need > got);
            }
            Filled::End => {}
            other => panic!("cut {cut}: {other:?}"),
        }
    }
}

/// Any bytes: no panic, and every record moves forward within the bytes given.
#[test]
fn any_bytes_move_forward() {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut bytes = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut seeds: Vec<Vec<u8>> = vec![pcap(false, false, 64, &[(1u32, 2u32, &b"abcd"[..]); 8])];
    let mut ng = Ng {
        be: true,
        out: vec![],
    };
    ng.section();
    ng.interface(1, 64, &[(9, &[9])]);
    for i in 0..8 {
        ng.packet(0, i, b"abcdefg");
    }
    seeds.push(ng.out);
    for seed in &seeds {
        for _ in 0..2_000 {
            let mut b = seed.clone();
            for _ in 0..(bytes() % 4 + 1) {
                let i = (bytes() as usize) % b.len();
                b[i] = bytes() as u8;
            }
            b.truncate((bytes() as usize) % (b.len() + 1));
            let mut r = Blocks::new();
            let mut at = 0;
            loop {
                match r.next(&b[at..]) {
                    Record::Found(
                        Found::Packet { start, len, .. } | Found::Secrets { start, len, .. },
                        next,
                    ) => {
                        assert!(next > 0 && start + len <= next && next <= b.len() - at);
                        at += next;
                    }
                    Record::Skip { next } => {
                        assert!(next > 0 && next <= b.len() - at);
                        at += next;
                    }
                    Record::More { need } => {
                        assert!(need > b.len() - at);
                        break;
                    }
                    Record::Odd | Record::Damaged(_) => break,
                }
            }
        }
    }
}
