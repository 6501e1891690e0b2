//! Unit tests: RFC 7541 Appendix C, mid-stream placeholders, size updates, integer limits.

use super::*;

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

type Owned = (Vec<u8>, Vec<u8>, bool, bool, bool);

fn run(dec: &mut Decoder, block: &[u8]) -> Result<Vec<Owned>, HpackError> {
    let mut out = Vec::new();
    dec.decode(block, |h| {
        out.push((
            h.name.to_vec(),
            h.value.to_vec(),
            h.name_unseen,
            h.value_unseen,
            h.never_indexed,
        ))
    })?;
    Ok(out)
}

/// Decodes and compares names and values only.
fn check(dec: &mut Decoder, wire: &str, want: &[(&str, &str)]) {
    let got = run(dec, &hex(wire)).unwrap();
    let got: Vec<(String, String)> = got
        .into_iter()
        .map(|(n, v, ..)| (String::from_utf8(n).unwrap(), String::from_utf8(v).unwrap()))
        .collect();
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn c2_literals_and_indexed() {
    let mut d = Decoder::new();
    check(
        &mut d,
        "400a637573746f6d2d6b65790d637573746f6d2d686561646572",
        &[("custom-key", "custom-header")],
    );
    assert_eq!((d.table_len(), d.table_size()), (1, 55));

    let mut d = Decoder::new();
    check(
        &mut d,
        "040c2f73616d706c652f70617468",
        &[(":path", "/sample/path")],
    );
    assert_eq!(d.table_len(), 0);

    let mut d = Decoder::new();
    let got = run(&mut d, &hex("100870617373776f726406736563726574")).unwrap();
    assert_eq!(
        got,
        [(b"password".to_vec(), b"secret".to_vec(), false, false, true)]
    );
    assert_eq!(d.table_len(), 0);

    let mut d = Decoder::new();
    check(&mut d, "82", &[(":method", "GET")]);
    assert_eq!(d.table_len(), 0);
}

const C3: [&str; 3] = [
    "828684410f7777772e6578616d706c652e636f6d",
    "828684be58086e6f2d6361636865",
    "828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565",
];
const C4: [&str; 3] = [
    "828684418cf1e3c2e5f23a6ba0ab90f4ff",
    "828684be5886a8eb10649cbf",
    "828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf",
];

fn requests(wires: [&str; 3]) {
    let mut d = Decoder::new();
    let base = [(":method", "GET"), (":scheme", "http"), (":path", "/")];
    let auth = (":authority", "www.example.com");
    check(&mut d, wires[0], &[base[0], base[1], base[2], auth]);
    assert_eq!((d.table_len(), d.table_size()), (1, 57));
    check(
        &mut d,
        wires[1],
        &[
            base[0],
            base[1],
            base[2],
            auth,
            ("cache-control", "no-cache"),
        ],
    );
    assert_eq!((d.table_len(), d.table_size()), (2, 110));
    check(
        &mut d,
        wires[2],
        &[
            (":method", "GET"),
            (":scheme", "https"),
            (":path", "/index.html"),
            auth,
            ("custom-key", "custom-value"),
        ],
    );
    assert_eq!((d.table_len(), d.table_size()), (3, 164));
}

#[test]
fn c3_requests_without_huffman() {
    requests(C3);
}

#[test]
fn c4_requests_with_huffman() {
    requests(C4);
}

const C5: [&str; 3] = [
    "4803333032580770726976617465611d4d6f6e2c203231204f637420323031332032303a31333a323120474d54\
     6e1768747470733a2f2f7777772e6578616d706c652e636f6d",
    "4803333037c1c0bf",
    "88c1611d4d6f6e2c203231204f637420323031332032303a31333a323220474d54c05a04677a69707738666f6f\
     3d4153444a4b48514b425a584f5157454f50495541585157454f49553b206d61782d6167653d333630303b2076\
     657273696f6e3d31",
];
const C6: [&str; 3] = [
    "488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f\
     0b97c8e9ae82ae43d3",
    "4883640effc1c0bf",
    "88c16196d07abe941054d444a8200595040b8166e084a62d1bffc05a839bd9ab77ad94e7821dd7f2e6c7b335df\
     dfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007",
];

fn responses(wires: [&str; 3]) {
    let mut d = Decoder::new();
    d.set_max_size_limit(256);
    assert_eq!(d.max_size(), 256);
    let date1 = ("date", "Mon, 21 Oct 2013 20:13:21 GMT");
    let loc = ("location", "https://www.example.com");
    check(
        &mut d,
        wires[0],
        &[(":status", "302"), ("cache-control", "private"), date1, loc],
    );
    assert_eq!((d.table_len(), d.table_size()), (4, 222));
    check(
        &mut d,
        wires[1],
        &[(":status", "307"), ("cache-control", "private"), date1, loc],
    );
    assert_eq!((d.table_len(), d.table_size()), (4, 222));
    check(
        &mut d,
        wires[2],
        &[
            (":status", "200"),
            ("cache-control", "private"),
            ("date", "Mon, 21 Oct 2013 20:13:22 GMT"),
            loc,
            ("content-encoding", "gzip"),
            (
                "set-cookie",
                "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
            ),
        ],
    );
    assert_eq!((d.table_len(), d.table_size()), (3, 215));
}

#[test]
fn c5_responses_without_huffman() {
    responses(C5);
}

#[test]
fn c6_responses_with_huffman() {
    responses(C6);
}

#[test]
fn invalid_index_normal_mode() {
    let mut d = Decoder::new();
    assert_eq!(run(&mut d, &[0x80]), Err(HpackError::InvalidIndex(0)));
    assert_eq!(run(&mut d, &[0xbe]), Err(HpackError::InvalidIndex(62)));
    // Literal with an unknown indexed name.
    assert_eq!(
        run(&mut d, &[0x7f, 0x00, 0x01, b'x']),
        Err(HpackError::InvalidIndex(63))
    );
}

#[test]
fn mid_stream_placeholders() {
    let mut d = Decoder::new_mid_stream();
    assert!(d.is_mid_stream());
    // Indexed 62 and 70: both unseen.
    let got = run(&mut d, &[0xbe, 0xc6]).unwrap();
    assert_eq!(
        got,
        [
            (
                b"<unseen:62>".to_vec(),
                b"<unseen>".to_vec(),
                true,
                true,
                false
            ),
            (
                b"<unseen:70>".to_vec(),
                b"<unseen>".to_vec(),
                true,
                true,
                false
            ),
        ]
    );
    assert_eq!(d.table_len(), 0);
    // Literal without indexing, name index 63 unseen: real value, placeholder name.
    let got = run(&mut d, &[0x0f, 0x30, 0x02, b'h', b'i']).unwrap();
    assert_eq!(
        got,
        [(b"<unseen:63>".to_vec(), b"hi".to_vec(), true, false, false)]
    );
    // Never indexed with unseen name.
    let got = run(&mut d, &[0x1f, 0x30, 0x01, b's']).unwrap();
    assert_eq!(
        got,
        [(b"<unseen:63>".to_vec(), b"s".to_vec(), true, false, true)]
    );
    // Index 0 is still an error.
    assert_eq!(run(&mut d, &[0x80]), Err(HpackError::InvalidIndex(0)));
}

#[test]
fn mid_stream_incremental_with_unseen_name_keeps_alignment() {
    let mut d = Decoder::new_mid_stream();
    // 0x7f 0x01 = literal with incremental indexing, name index 64 (unseen), value "v1".
    let got = run(&mut d, &[0x7f, 0x01, 0x02, b'v', b'1']).unwrap();
    assert_eq!(
        got,
        [(b"<unseen:64>".to_vec(), b"v1".to_vec(), true, false, false)]
    );
    assert_eq!((d.table_len(), d.table_size()), (1, 2 + 32));
    // Now insert a fully known entry; the placeholder entry moves to index 63.
    let got = run(&mut d, &[0x40, 0x01, b'k', 0x01, b'w']).unwrap();
    assert_eq!(got, [(b"k".to_vec(), b"w".to_vec(), false, false, false)]);
    // Index 62 = k: w, 63 = the placeholder-named entry with its exact value, 64 unseen.
    let got = run(&mut d, &[0xbe, 0xbf, 0xc0]).unwrap();
    assert_eq!(
        got,
        [
            (b"k".to_vec(), b"w".to_vec(), false, false, false),
            (b"<unseen:64>".to_vec(), b"v1".to_vec(), true, false, false),
            (
                b"<unseen:64>".to_vec(),
                b"<unseen>".to_vec(),
                true,
                true,
                false
            ),
        ]
    );
    // A literal naming the placeholder entry (index 63) inherits name_unseen.
    let got = run(&mut d, &[0x0f, 0x30, 0x01, b'z']).unwrap();
    assert_eq!(
        got,
        [(b"<unseen:64>".to_vec(), b"z".to_vec(), true, false, false)]
    );
}

#[test]
fn mid_stream_eviction_only_known() {
    let mut d = Decoder::new_mid_stream();
    d.decode(&[0x3f, 0x61], |_| {}).unwrap(); // size update to 31 + 97 = 128
    assert_eq!(d.max_size(), 128);
    // Two entries of 32 + 1 + 30 = 63 octets fit (126); a third evicts the oldest.
    let entry = |c: u8| {
        let mut v = vec![0x40, 0x01, c, 30];
        v.extend_from_slice(&[b'x'; 30]);
        v
    };
    for c in [b'a', b'b', b'c'] {
        d.decode(&entry(c), |_| {}).unwrap();
    }
    assert_eq!((d.table_len(), d.table_size()), (2, 126));
    let got = run(&mut d, &[0xbe, 0xbf, 0xc0]).unwrap();
    assert_eq!(got[0].0, b"c");
    assert_eq!(got[1].0, b"b");
    assert_eq!(
        got[2].0, b"<unseen:64>",
        "beyond what we know: placeholder, not an error"
    );
}

#[test]
fn size_update_rules() {
    let mut d = Decoder::new();
    // 0x3f 0xe1 0x1f = 31 + 0x61 + (0x1f << 7) = 4096: allowed.
    d.decode(&[0x3f, 0xe1, 0x1f], |_| {}).unwrap();
    // 4097 exceeds the limit.
    assert_eq!(
        d.decode(&[0x3f, 0xe2, 0x1f], |_| {}),
        Err(HpackError::SizeUpdateTooLarge {
            requested: 4097,
            limit: 4096
        })
    );
    // Two updates at the start are fine; after a field they are not.
    d.decode(&[0x20, 0x3f, 0x01, 0x82], |_| {}).unwrap();
    assert_eq!(d.max_size(), 32);
    assert_eq!(
        d.decode(&[0x82, 0x20], |_| {}),
        Err(HpackError::SizeUpdateNotAtStart)
    );

    // Raising the limit permits a larger update; lowering it shrinks the table at once.
    let mut d = Decoder::new();
    d.set_max_size_limit(8192);
    d.decode(&[0x3f, 0xe1, 0x3f], |_| {}).unwrap(); // 31 + 0x61 + (0x3f << 7) = 8192
    assert_eq!(d.max_size(), 8192);
    d.decode(
        &hex("400a637573746f6d2d6b65790d637573746f6d2d686561646572"),
        |_| {},
    )
    .unwrap();
    assert_eq!(d.table_len(), 1);
    d.set_max_size_limit(40);
    assert_eq!((d.max_size(), d.table_len(), d.table_size()), (40, 0, 0));

    // Size update to 0 empties the table.
    let mut d = Decoder::new();
    d.decode(
        &hex("400a637573746f6d2d6b65790d637573746f6d2d686561646572"),
        |_| {},
    )
    .unwrap();
    d.decode(&[0x20], |_| {}).unwrap();
    assert_eq!((d.table_len(), d.table_size()), (0, 0));

    // Mid-stream: an update above the limit is accepted and raises the limit.
    let mut d = Decoder::new_mid_stream();
    d.decode(&[0x3f, 0xe2, 0x1f], |_| {}).unwrap();
    assert_eq!((d.max_size(), d.max_size_limit()), (4097, 4097));
}

#[test]
fn entry_larger_than_table_empties_it() {
    let mut d = Decoder::new();
    d.decode(&[0x3f, 0x21], |_| {}).unwrap(); // max size 64
    d.decode(&[0x40, 0x01, b'a', 0x01, b'b'], |_| {}).unwrap(); // 34 octets
    assert_eq!(d.table_len(), 1);
    // 32 + 1 + 40 > 64: emitted, not inserted, table emptied.
    let mut big = vec![0x40, 0x01, b'c', 40];
    big.extend_from_slice(&[b'z'; 40]);
    let got = run(&mut d, &big).unwrap();
    assert_eq!(got[0].1.len(), 40);
    assert_eq!((d.table_len(), d.table_size()), (0, 0));
}

#[test]
fn new_entry_may_name_the_entry_it_evicts() {
    let mut d = Decoder::new();
    d.decode(&[0x3f, 0x21], |_| {}).unwrap(); // max size 64
    d.decode(&[0x40, 0x04, b'n', b'a', b'm', b'e', 0x01, b'v'], |_| {})
        .unwrap(); // 37
                   // Literal with incremental indexing, name = index 62 ("name"), evicting that entry.
    let got = run(&mut d, &[0x7e, 0x02, b'v', b'2']).unwrap();
    assert_eq!(
        (got[0].0.as_slice(), got[0].1.as_slice()),
        (&b"name"[..], &b"v2"[..])
    );
    let got = run(&mut d, &[0xbe]).unwrap();
    assert_eq!(
        (got[0].0.as_slice(), got[0].1.as_slice()),
        (&b"name"[..], &b"v2"[..])
    );
    assert_eq!(d.table_len(), 1);
}

#[test]
fn integer_limits() {
    let mut v = 0;
    let mut pos = 0;
    // RFC 7541 C.1.2: 1337 with a 5-bit prefix.
    assert_eq!(decode_int(&[0x1f, 0x9a, 0x0a], &mut pos, 5), Ok(1337));
    assert_eq!(pos, 3);
    // u32::MAX with a 7-bit prefix: 127 + 0xffff_ff80.
    pos = 0;
    assert_eq!(
        decode_int(&[0x7f, 0x80, 0xff, 0xff, 0xff, 0x0f], &mut pos, 7),
        Ok(u32::MAX)
    );
    // One more overflows.
    pos = 0;
    assert_eq!(
        decode_int(&[0x7f, 0x81, 0xff, 0xff, 0xff, 0x0f], &mut pos, 7),
        Err(HpackError::IntegerOverflow)
    );
    // Endless continuation octets stop after 5.
    pos = 0;
    let zeros = [0x7f, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00];
    assert_eq!(
        decode_int(&zeros, &mut pos, 7),
        Err(HpackError::IntegerOverflow)
    );
    pos = 0;
    assert_eq!(
        decode_int(&[0x7f, 0x80], &mut pos, 7),
        Err(HpackError::Truncated)
    );
    // Through the decoder: huge index, huge string length.
    let mut d = Decoder::new();
    assert_eq!(
        d.decode(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], |_| v += 1),
        Err(HpackError::IntegerOverflow)
    );
    assert_eq!(
        d.decode(&[0x00, 0x7f, 0xff, 0xff, 0xff, 0x0f], |_| v += 1),
        Err(HpackError::Truncated)
    );
    assert_eq!(v, 0);
}

#[test]
fn truncated_and_huffman_errors() {
    let mut d = Decoder::new();
    assert_eq!(
        d.decode(&[0x40, 0x03, b'a'], |_| {}),
        Err(HpackError::Truncated)
    );
    assert_eq!(d.decode(&[0x40], |_| {}), Err(HpackError::Truncated));
    // Huffman value with zero padding.
    assert_eq!(
        d.decode(&[0x00, 0x01, b'a', 0x81, 0x18], |_| {}),
        Err(HpackError::HuffmanPadding)
    );
    // Huffman value with EOS.
    assert_eq!(
        d.decode(&[0x00, 0x01, b'a', 0x84, 0xff, 0xff, 0xff, 0xff], |_| {}),
        Err(HpackError::HuffmanEos)
    );
    assert_eq!(
        HpackError::InvalidIndex(70).to_string(),
        "invalid HPACK index 70"
    );
}

#[test]
fn empty_block() {
    let mut d = Decoder::new();
    assert_eq!(run(&mut d, &[]).unwrap(), []);
}

/// `0x3f` + the 5-bit-prefix integer `v`: a dynamic table size update.
fn size_update(v: u32) -> Vec<u8> {
    let mut b = vec![0x3f];
    let mut v = v - 31;
    while v >= 128 {
        b.push((v % 128) as u8 | 0x80);
        v /= 128;
    }
    b.push(v as u8);
    b
}

#[test]
fn cap_bounds_the_table_whatever_settings_allow() {
    for mut d in [Decoder::new(), Decoder::new_mid_stream()] {
        d.set_cap(8192);
        d.set_max_size_limit(u32::MAX);
        let mut block = size_update(u32::MAX);
        // Three entries of 4 000 octets (+ 32 + 1): only two fit 8 192.
        for name in [b'a', b'b', b'c'] {
            block.extend([0x40, 1, name, 0x7f, 0x9f, 0x1e]); // value length 3 998
            block.extend(vec![b'x'; 3998]);
        }
        // The newest (62) decodes exactly; the oldest (64) is beyond the capped table.
        block.extend([0xbe, 0xc0]);
        let h = run(&mut d, &block).unwrap();
        assert!(d.capped());
        assert_eq!(d.max_size(), 8192);
        assert!(d.table_size() <= 8192);
        assert_eq!(h[3].0, b"c");
        assert_eq!(h[4].0, b"<unseen:64>");
    }
}

#[test]
fn uncapped_decoder_keeps_the_exact_behaviour() {
    let mut d = Decoder::new();
    d.set_max_size_limit(1 << 20);
    run(&mut d, &size_update(1 << 20)).unwrap();
    assert!(!d.capped());
    assert_eq!(d.max_size(), 1 << 20);
    assert_eq!(run(&mut d, &[0xc0]), Err(HpackError::InvalidIndex(64)));
}

/// `changes` moves with every change decoding depends on (an insertion, a size update, the
/// limit or the cap), and not for a block of indexed fields and literals that are not
/// indexed: decoding such a block again gives the same fields.
#[test]
fn changes_move_with_the_state_only() {
    let mut dec = Decoder::new();
    let c0 = dec.changes();
    // C.3.1: three indexed fields and :authority with incremental indexing.
    let first = hex("8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d");
    run(&mut dec, &first).unwrap();
    let c1 = dec.changes();
    assert_ne!(c0, c1, "an insertion is a change");
    // Indexed fields (one from the dynamic table) and a literal without indexing.
    let plain = hex("8286 84be 0003 6162 6301 78");
    let a = run(&mut dec, &plain).unwrap();
    assert_eq!(dec.changes(), c1, "nothing inserted");
    assert_eq!(run(&mut dec, &plain).unwrap(), a);
    assert_eq!(dec.changes(), c1);
    dec.set_max_size_limit(4096);
    assert_ne!(dec.changes(), c1, "the limit is a change");
    let c2 = dec.changes();
    run(&mut dec, &size_update(4096)).unwrap();
    assert_ne!(dec.changes(), c2, "a size update is a change");
    let c3 = dec.changes();
    dec.set_cap(1 << 16);
    assert_ne!(dec.changes(), c3, "the cap is a change");
}
