//! Issue 39 point 2: `h2ledger split` on every capture in captures/ (pcap and pcapng, a TLS
//! pcapng with Decryption Secrets Blocks among them). Each connection lands whole in one
//! shard, so the shards' reports add up to the whole capture's: connections, calls, packets,
//! and every side's frames, bytes and writes. Also the format kept, the names, and the errors.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util::{bin, capture, n, repo, run, scratch, FRAME_KEYS};

const SHARDS: usize = 3;

/// Every capture under captures/, recursively.
pub fn captures() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|e| e == "pcap" || e == "pcapng") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&repo().join("captures"), &mut out);
    out
}

/// The figures that add up over disjoint sets of connections.
fn additive(v: &Value) -> Vec<(String, u64)> {
    let mut out = vec![
        ("connections".to_string(), n(&v["connections"])),
        ("calls".to_string(), n(&v["calls"])),
        ("packets".to_string(), n(&v["capture"]["packets"])),
    ];
    for side in ["client", "server"] {
        let s = &v["sides"][side];
        for key in ["bytes", "writes", "bdp_pings", "tls_records"] {
            out.push((format!("{side}.{key}"), n(&s[key])));
        }
        for k in FRAME_KEYS {
            out.push((format!("{side}.frames.{k}"), n(&s["frames"][k])));
        }
    }
    out
}

fn replay(file: &Path, keylog: Option<&Path>) -> Value {
    let mut args = vec!["replay", file.to_str().unwrap(), "-T", "json"];
    if let Some(k) = keylog {
        args.extend(["--keylog", k.to_str().unwrap()]);
    }
    let out = run(&args);
    // 1: a damaged capture's report (e.g. a cut last record) is still whole.
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "h2ledger {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("replay prints one JSON object")
}

#[test]
fn shards_add_up_to_the_whole_on_every_capture() {
    let dir = scratch("split-every");
    std::fs::create_dir_all(&dir).unwrap();
    let all = captures();
    assert!(all.len() > 20, "captures/ holds the captures");
    assert!(all
        .iter()
        .any(|p| p.ends_with("curl-nghttpd-tls13-dsb.pcapng")));
    let mut spread = 0;
    for file in &all {
        let out_dir = dir.join(file.file_stem().unwrap());
        let f = file.to_str().unwrap();
        let out = run(&["split", f, "--shards", "3", "-w", out_dir.to_str().unwrap()]);
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "split {f}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The format is the content's, whatever the name says.
        let head = std::fs::read(file).unwrap();
        let ext = if head.starts_with(&[0x0a, 0x0d, 0x0d, 0x0a]) {
            "pcapng"
        } else {
            "pcap"
        };
        let stem = file.file_stem().unwrap().to_str().unwrap();
        let shards: Vec<PathBuf> = (0..SHARDS)
            .map(|k| out_dir.join(format!("{stem}.{k}.{ext}")))
            .collect();
        let keylog = file.with_extension("keylog");
        let keylog = keylog.exists().then_some(keylog.as_path());
        let whole = additive(&replay(file, keylog));
        let parts: Vec<_> = shards
            .iter()
            .map(|s| additive(&replay(s, keylog)))
            .collect();
        if parts.iter().filter(|p| p[0].1 > 0).count() > 1 {
            spread += 1;
        }
        for (i, (key, total)) in whole.iter().enumerate() {
            let sum: u64 = parts.iter().map(|p| p[i].1).sum();
            assert_eq!(sum, *total, "{f}: {key} over the {SHARDS} shards");
        }
        // Each shard begins with the input's own header (pcap: the 24 bytes; pcapng: the
        // Section Header Block up to its section length).
        for s in &shards {
            let b = std::fs::read(s).unwrap();
            let keep = if ext == "pcap" { 24 } else { 16 };
            assert_eq!(
                b[..keep],
                head[..keep],
                "{}: the input's header",
                s.display()
            );
        }
    }
    // Captures of several connections do get spread.
    assert!(
        spread >= 5,
        "only {spread} captures spread over more than one shard"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The secrets of a TLS pcapng are in every shard, so every shard decrypts its own calls.
#[test]
fn secrets_blocks_go_to_every_shard() {
    let dir = scratch("split-dsb");
    std::fs::create_dir_all(&dir).unwrap();
    let file = capture("curl-nghttpd-tls13-dsb.pcapng");
    let out = run(&[
        "split",
        file.to_str().unwrap(),
        "-n",
        "3",
        "-w",
        dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("copied to every shard"), "{text}");
    let mut calls = 0;
    for k in 0..SHARDS {
        let s = dir.join(format!("curl-nghttpd-tls13-dsb.{k}.pcapng"));
        let v = replay(&s, None);
        // No undecrypted connection in any shard.
        if n(&v["connections"]) > 0 {
            assert!(n(&v["calls"]) > 0, "shard {k} decrypts its calls: {v}");
        }
        calls += n(&v["calls"]);
    }
    assert_eq!(calls, n(&replay(&file, None)["calls"]));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Compressed input and standard input give the same shards as the plain file.
#[test]
fn compressed_and_piped_input_split_the_same() {
    let dir = scratch("split-gz");
    std::fs::create_dir_all(&dir).unwrap();
    let file = capture("nghttp-nghttpd.pcap");
    let plain = std::fs::read(&file).unwrap();
    let gz = dir.join("nghttp-nghttpd.pcap.gz");
    {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(
            std::fs::File::create(&gz).unwrap(),
            flate2::Compression::fast(),
        );
        e.write_all(&plain).unwrap();
        e.finish().unwrap();
    }
    let a = dir.join("a");
    let b = dir.join("b");
    let c = dir.join("c");
    for (input, out) in [(&file, &a), (&gz, &b)] {
        let o = run(&[
            "split",
            input.to_str().unwrap(),
            "-n",
            "2",
            "-w",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let o = std::process::Command::new(bin())
        .args(["split", "-", "-n", "2", "-w", c.to_str().unwrap()])
        .stdin(std::fs::File::open(&gz).unwrap())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for k in 0..2 {
        let x = std::fs::read(a.join(format!("nghttp-nghttpd.{k}.pcap"))).unwrap();
        let y = std::fs::read(b.join(format!("nghttp-nghttpd.{k}.pcap"))).unwrap();
        let z = std::fs::read(c.join(format!("stdin.{k}.pcap"))).unwrap();
        assert_eq!(x, y, "shard {k} of the gzip stream");
        assert_eq!(x, z, "shard {k} of standard input");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Bad input, an unwritable directory, no shards: one line and exit status 2, no shard left.
#[test]
fn errors_are_one_line() {
    let dir = scratch("split-errors");
    std::fs::create_dir_all(&dir).unwrap();
    let good = capture("nghttp-nghttpd.pcap");
    let text = repo().join("captures/README.md");
    let cut = dir.join("cut.pcap");
    let bytes = std::fs::read(&good).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() - 5]).unwrap();
    let blocked = dir.join("a-file");
    std::fs::write(&blocked, b"x").unwrap();
    let d = dir.join("out");
    let cases: [(Vec<&str>, &str); 4] = [
        (
            vec![
                "split",
                text.to_str().unwrap(),
                "-n",
                "2",
                "-w",
                d.to_str().unwrap(),
            ],
            "not a pcap or pcapng capture",
        ),
        (
            vec![
                "split",
                "/nonexistent.pcap",
                "-n",
                "2",
                "-w",
                d.to_str().unwrap(),
            ],
            "cannot open",
        ),
        (
            vec![
                "split",
                good.to_str().unwrap(),
                "-n",
                "2",
                "-w",
                blocked.to_str().unwrap(),
            ],
            "cannot make the output directory",
        ),
        (
            vec![
                "split",
                good.to_str().unwrap(),
                "-n",
                "0",
                "-w",
                d.to_str().unwrap(),
            ],
            "0 is not in 1..=4096",
        ),
    ];
    for (args, says) in cases {
        let o = run(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.lines().next().unwrap_or("").contains(says),
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    assert!(
        !d.exists() || std::fs::read_dir(&d).unwrap().next().is_none(),
        "no shard is left behind"
    );
    // A capture cut inside its last record: the records before it are split, exit status 1.
    let o = run(&[
        "split",
        cut.to_str().unwrap(),
        "-n",
        "2",
        "-w",
        d.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("ends inside a record"));
    let whole = n(&replay(&good, None)["capture"]["packets"]);
    let parts: u64 = (0..2)
        .map(|k| n(&replay(&d.join(format!("cut.{k}.pcap")), None)["capture"]["packets"]))
        .sum();
    assert_eq!(parts, whole - 1);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The byte where the pcapng block after the first `skip` of `file` begins (a little-endian
/// file).
fn block_at(file: &[u8], skip: usize) -> usize {
    let mut at = 0;
    for _ in 0..skip {
        at += u32::from_le_bytes(file[at + 4..at + 8].try_into().unwrap()) as usize;
    }
    at
}

/// Damage is read by the reader replay uses (decision 421): split says it in replay's words,
/// with the byte, in one line, exit status 2 and no shard left.
#[test]
fn damage_is_said_as_replay_says_it() {
    let dir = scratch("split-damage");
    std::fs::create_dir_all(&dir).unwrap();
    let mut b = std::fs::read(capture("grpcgo-article-any.pcapng")).unwrap();
    let at = block_at(&b, 4);
    let len = u32::from_le_bytes(b[at + 4..at + 8].try_into().unwrap()) as usize;
    let trailer = at + len - 4;
    b[trailer] ^= 0x40;
    let end = u32::from_le_bytes(b[trailer..trailer + 4].try_into().unwrap());
    let file = dir.join("damaged.pcapng");
    std::fs::write(&file, &b).unwrap();
    let said = format!(
        "damaged pcapng at byte {at}: a block whose length is {len} at its start and {end} at \
         its end"
    );
    let out_dir = dir.join("out");
    let f = file.to_str().unwrap();
    let o = run(&["split", f, "-n", "2", "-w", out_dir.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(&said), "{err}\nwants: {said}");
    assert!(
        !out_dir.exists() || std::fs::read_dir(&out_dir).unwrap().next().is_none(),
        "no shard is left behind"
    );
    let o = run(&["replay", f]);
    let err = String::from_utf8_lossy(&o.stderr);
    let words = err.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains(&said), "replay: {err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A first section header whose byte-order magic is damaged is said to be a damaged pcapng
/// (its block type says so), not a damaged pcap.
#[test]
fn a_damaged_first_section_header_is_a_pcapng_s() {
    let dir = scratch("split-damaged-shb");
    std::fs::create_dir_all(&dir).unwrap();
    let mut b = std::fs::read(capture("grpcgo-article-any.pcapng")).unwrap();
    b[8..12].copy_from_slice(&0xffff_fff0u32.to_le_bytes());
    let file = dir.join("damaged-shb.pcapng");
    std::fs::write(&file, &b).unwrap();
    let out_dir = dir.join("out");
    let o = run(&[
        "split",
        file.to_str().unwrap(),
        "-n",
        "2",
        "-w",
        out_dir.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("damaged pcapng at byte 0: a section header without the byte-order magic"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A block beyond libpcap's 16 MiB (split's bound before decision 422) and within the
/// reader's 32 MiB: copied to every shard, as replay reads it.
#[test]
fn a_block_of_17_mib_is_copied() {
    let dir = scratch("split-17mib");
    std::fs::create_dir_all(&dir).unwrap();
    let src = capture("curl-nghttpd-tls13-dsb.pcapng");
    let b = std::fs::read(&src).unwrap();
    // A custom block (type 0x0BAD, stepped over by readers) after the interface.
    let at = block_at(&b, 2);
    let total = 12 + (17 << 20);
    let mut custom = 0x0BADu32.to_le_bytes().to_vec();
    custom.extend((total as u32).to_le_bytes());
    custom.resize(total - 4, b'.');
    custom.extend((total as u32).to_le_bytes());
    let file = dir.join("big-block.pcapng");
    std::fs::write(&file, [&b[..at], &custom, &b[at..]].concat()).unwrap();
    let out_dir = dir.join("out");
    let o = run(&[
        "split",
        file.to_str().unwrap(),
        "-n",
        "2",
        "-w",
        out_dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut calls = 0;
    for k in 0..2 {
        let s = out_dir.join(format!("big-block.{k}.pcapng"));
        let shard = std::fs::read(&s).unwrap();
        assert!(
            shard.windows(64).any(|w| w == &custom[8..72]),
            "shard {k} holds the block"
        );
        assert!(shard.len() > total, "shard {k}: {} bytes", shard.len());
        calls += n(&replay(&s, None)["calls"]);
    }
    assert_eq!(calls, n(&replay(&src, None)["calls"]));
    let _ = std::fs::remove_dir_all(&dir);
}
