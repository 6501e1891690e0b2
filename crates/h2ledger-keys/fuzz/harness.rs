//! Fuzz harnesses of h2ledger-keys (also run on every input in regressions/ by
//! tests/fuzz_regressions.rs).
//!
//! * `probe`: what reads an executable. The first byte picks how the rest is used: as a whole
//!   file (`find_go_probe`); as a pcln table (`Pcln::parse`, every function, `find`); or cut
//!   into a `.text` address, a `.gopclntab`, a `.go.buildinfo` and a `.symtab` that are wrapped
//!   into a well-formed ELF file, so that the bytes reach the table parsers through
//!   `find_go_probe` (random bytes are rarely an ELF header). Nothing may panic, and a probe
//!   point found must lie in the file.
//! * `ssl`: what finds OpenSSL's and BoringSSL's `ssl_log_secret` (issue 37): the call-site
//!   scan and the random's place over the raw bytes as x86-64 code, and `find_ssl_probe` on
//!   the bytes as a file and wrapped into a well-formed ELF file (one r-x segment over it all,
//!   so label strings and `lea`/`call` sites in the input are found). Nothing may panic; an
//!   error is one line; a probe point found lies in the file.
//! * `record`: ring buffer records. The input is cut into records of `RECORD_LEN` bytes (the
//!   last one short) and decoded; the label fallback answers from the input. The counts must
//!   add up and every line delivered must be a well-formed key log line. Also the DSB encoder
//!   on the input as text.

use h2ledger_keys::gopclntab::Pcln;
use h2ledger_keys::record::{Decoder, RECORD_LEN};
use h2ledger_keys::{decryption_secrets_block, find_go_probe};

pub fn probe(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 3 {
        0 => check(rest, find_go_probe(rest)),
        1 => {
            let text = (mode & 0x80 != 0).then_some(0x401000);
            if let Ok(p) = Pcln::parse(rest, text) {
                for i in 0..p.nfunc.min(10_000) {
                    let _ = p.func(i);
                }
                let _ = p.find("crypto/tls.(*Config).writeKeyLog");
            }
        }
        _ => {
            let file = wrap(rest);
            check(&file, find_go_probe(&file));
        }
    }
}

pub fn ssl(data: &[u8]) {
    use h2ledger_keys::ssl::{call_sites, label_strings, random_at};
    let labels: std::collections::HashMap<u64, &'static str> = label_strings(data)
        .into_iter()
        .map(|(off, l)| (0x400000 + off as u64, l))
        .collect();
    let _ = call_sites(data, 0x400000, &labels);
    let _ = random_at(data, 0x400000);
    let file = wrap(data);
    for f in [data, &file[..]] {
        match h2ledger_keys::find_ssl_probe(f) {
            Ok(p) => assert!(p.file_offset < f.len() as u64, "{p:?}"),
            Err(e) => assert!(!e.to_string().contains('\n'), "{e}"),
        }
    }
}

fn check(file: &[u8], r: Result<h2ledger_keys::ProbePoint, h2ledger_keys::ProbeError>) {
    match r {
        Ok(p) => assert!(p.file_offset < file.len() as u64, "{p:?}"),
        Err(e) => assert!(!e.to_string().contains('\n'), "{e}"),
    }
}

/// Splits `b` by 2-byte little-endian lengths into parts (the last takes the rest).
fn parts(mut b: &[u8], n: usize) -> Vec<&[u8]> {
    let mut out = Vec::new();
    for _ in 0..n - 1 {
        let len = match b {
            [a, c, rest @ ..] => {
                b = rest;
                usize::from(u16::from_le_bytes([*a, *c]))
            }
            _ => 0,
        };
        let (head, tail) = b.split_at(len.min(b.len()));
        out.push(head);
        b = tail;
    }
    out.push(b);
    out
}

/// A well-formed ELF64 x86-64 file: one r-x PT_LOAD at 0x400000 over the whole file, and
/// sections .text (address from the input), .gopclntab, .go.buildinfo, .symtab + .strtab
/// holding the input's parts.
pub fn wrap(b: &[u8]) -> Vec<u8> {
    let p = parts(b, 5);
    let text_addr = p[0]
        .iter()
        .take(8)
        .fold(0u64, |a, &x| (a << 8) | u64::from(x));
    let names = b"\0.text\0.gopclntab\0.go.buildinfo\0.symtab\0.strtab\0.shstrtab\0";
    let mut f = vec![0u8; 64 + 56];
    let place = |f: &mut Vec<u8>, d: &[u8]| {
        while !f.len().is_multiple_of(16) {
            f.push(0);
        }
        let off = f.len() as u64;
        f.extend_from_slice(d);
        (off, d.len() as u64)
    };
    let pcln = place(&mut f, p[1]);
    let binfo = place(&mut f, p[2]);
    let symtab = place(&mut f, p[3]);
    let strtab = place(&mut f, p[4]);
    let shstr = place(&mut f, names);
    while !f.len().is_multiple_of(8) {
        f.push(0);
    }
    let shoff = f.len() as u64;
    // (name offset in `names`, type, addr, (offset, size), link, entsize)
    type Sh = (u32, u32, u64, (u64, u64), u32, u64);
    let sections: [Sh; 7] = [
        (0, 0, 0, (0, 0), 0, 0),
        (1, 1, text_addr, (0, 0), 0, 0),
        (7, 1, 0x400000 + pcln.0, pcln, 0, 0),
        (18, 1, 0x400000 + binfo.0, binfo, 0, 0),
        (32, 2, 0, symtab, 5, 24),
        (40, 3, 0, strtab, 0, 0),
        (48, 3, 0, shstr, 0, 0),
    ];
    for (name, kind, addr, (off, size), link, entsize) in sections {
        let mut e = [0u8; 64];
        e[0..4].copy_from_slice(&name.to_le_bytes());
        e[4..8].copy_from_slice(&kind.to_le_bytes());
        e[16..24].copy_from_slice(&addr.to_le_bytes());
        e[24..32].copy_from_slice(&off.to_le_bytes());
        e[32..40].copy_from_slice(&size.to_le_bytes());
        e[40..44].copy_from_slice(&link.to_le_bytes());
        e[56..64].copy_from_slice(&entsize.to_le_bytes());
        f.extend_from_slice(&e);
    }
    let len = f.len() as u64;
    f[..4].copy_from_slice(b"\x7fELF");
    f[4] = 2;
    f[5] = 1;
    f[6] = 1;
    f[16..18].copy_from_slice(&2u16.to_le_bytes());
    f[18..20].copy_from_slice(&62u16.to_le_bytes());
    f[32..40].copy_from_slice(&64u64.to_le_bytes());
    f[40..48].copy_from_slice(&shoff.to_le_bytes());
    f[54..56].copy_from_slice(&56u16.to_le_bytes());
    f[56..58].copy_from_slice(&1u16.to_le_bytes());
    f[58..60].copy_from_slice(&64u16.to_le_bytes());
    f[60..62].copy_from_slice(&7u16.to_le_bytes());
    f[62..64].copy_from_slice(&6u16.to_le_bytes());
    // PT_LOAD, r-x, vaddr 0x400000, offset 0, the whole file.
    f[64..68].copy_from_slice(&1u32.to_le_bytes());
    f[68..72].copy_from_slice(&5u32.to_le_bytes());
    f[80..88].copy_from_slice(&0x400000u64.to_le_bytes());
    f[96..104].copy_from_slice(&len.to_le_bytes());
    f[104..112].copy_from_slice(&len.to_le_bytes());
    f
}

pub fn record(data: &[u8]) {
    let mut d = Decoder::new();
    let mut delivered = 0u64;
    for (i, chunk) in data.chunks(RECORD_LEN).enumerate() {
        let fallback = |ptr: u64, len: usize| {
            (!ptr.is_multiple_of(3))
                .then(|| data.iter().cycle().skip(i).take(len).copied().collect())
        };
        if let Some((line, _origin)) = d.push(chunk, fallback) {
            delivered += 1;
            let s = line.to_string();
            let f: Vec<&str> = s.split(' ').collect();
            assert_eq!(f.len(), 3, "{s}");
            assert!(h2ledger_keys::record::is_label(f[0].as_bytes()), "{s}");
            assert_eq!(f[1].len(), 64, "{s}");
            assert!(
                !f[2].is_empty() && f[2].len() <= 128 && f[2].len().is_multiple_of(2),
                "{s}"
            );
        }
    }
    let s = d.stats();
    assert_eq!(s.lines, delivered);
    assert_eq!(
        s.records,
        s.lines + s.duplicates + s.not_a_record + s.bad_random + s.bad_secret + s.bad_label
    );
    let text = String::from_utf8_lossy(data);
    if let Some(b) = decryption_secrets_block(&text) {
        assert_eq!(b.len() % 4, 0);
        assert_eq!(b[4..8], b[b.len() - 4..]);
    }
}
