//! Decodes every case of every hpack-test-case story (fixtures/hpack/*.json.gz, see the
//! README there) with one decoder per story, and compares the header lists byte for byte.

use std::io::Read;
use std::path::PathBuf;

use flate2::read::GzDecoder;
use h2_frame_parser::hpack::Decoder;
use serde_json::Value;

const ENCODERS: [&str; 4] = [
    "go-hpack",
    "haskell-http2-linear-huffman",
    "nghttp2",
    "python-hpack",
];

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/hpack")
}

fn load(encoder: &str) -> Value {
    let path = fixtures().join(format!("{encoder}.json.gz"));
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut json = String::new();
    GzDecoder::new(file).read_to_string(&mut json).unwrap();
    serde_json::from_str(&json).unwrap()
}

fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex length");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn show(h: &[(Vec<u8>, Vec<u8>)]) -> String {
    h.iter()
        .map(|(n, v)| {
            format!(
                "  {}: {}\n",
                String::from_utf8_lossy(n),
                String::from_utf8_lossy(v)
            )
        })
        .collect()
}

/// Returns (cases, headers) checked, or a description of the first mismatch.
fn run_story(encoder: &str, name: &str, story: &Value) -> Result<(usize, usize), String> {
    let mut dec = Decoder::new();
    let cases = story["cases"].as_array().ok_or("no cases")?;
    let mut headers = 0;
    for (i, case) in cases.iter().enumerate() {
        if let Some(size) = case.get("header_table_size").and_then(Value::as_u64) {
            dec.set_max_size_limit(size as u32);
        }
        let wire = unhex(case["wire"].as_str().ok_or("no wire")?);
        let want: Vec<(Vec<u8>, Vec<u8>)> = case["headers"]
            .as_array()
            .ok_or("no headers")?
            .iter()
            .map(|pair| {
                let name = pair[0].as_str().unwrap().as_bytes().to_vec();
                let value = pair[1].as_str().unwrap().as_bytes().to_vec();
                (name, value)
            })
            .collect();
        let mut got = Vec::with_capacity(want.len());
        let result = dec.decode(&wire, |h| {
            assert!(!h.name_unseen && !h.value_unseen);
            got.push((h.name.to_vec(), h.value.to_vec()));
        });
        if let Err(e) = result {
            return Err(format!("{encoder}/{name} case {i}: decode error: {e}"));
        }
        if got != want {
            let first = got
                .iter()
                .zip(&want)
                .position(|(g, w)| g != w)
                .unwrap_or(got.len().min(want.len()));
            return Err(format!(
                "{encoder}/{name} case {i}: headers differ (first at position {first})\n\
                 wire: {}\n--- expected ({} headers)\n{}--- decoded ({} headers)\n{}",
                case["wire"].as_str().unwrap_or_default(),
                want.len(),
                show(&want),
                got.len(),
                show(&got)
            ));
        }
        headers += want.len();
    }
    Ok((cases.len(), headers))
}

#[test]
fn all_stories_decode_exactly() {
    let mut failures = Vec::new();
    let (mut stories, mut cases, mut headers) = (0, 0, 0);
    for encoder in ENCODERS {
        let all = load(encoder);
        let all = all.as_object().expect("object of stories");
        assert_eq!(all.len(), 32, "{encoder}: expected 32 stories");
        for (name, story) in all {
            match run_story(encoder, name, story) {
                Ok((c, h)) => {
                    stories += 1;
                    cases += c;
                    headers += h;
                }
                Err(e) => failures.push(e),
            }
        }
    }
    if !failures.is_empty() {
        panic!(
            "{} stories failed:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }
    assert_eq!(stories, 128);
    assert_eq!(cases, 13_536);
    eprintln!("{stories} stories, {cases} cases, {headers} headers decoded exactly");
}

/// The same blocks through a mid-stream decoder: a decoder that saw the connection from its
/// start must decode identically, with no placeholders.
#[test]
fn mid_stream_decoder_agrees_when_nothing_was_missed() {
    let all = load("nghttp2");
    for (name, story) in all.as_object().unwrap() {
        let mut normal = Decoder::new();
        let mut mid = Decoder::new_mid_stream();
        for case in story["cases"].as_array().unwrap() {
            let wire = unhex(case["wire"].as_str().unwrap());
            let mut a = Vec::new();
            let mut b = Vec::new();
            normal
                .decode(&wire, |h| a.push((h.name.to_vec(), h.value.to_vec())))
                .unwrap();
            mid.decode(&wire, |h| {
                assert!(!h.name_unseen && !h.value_unseen, "{name}");
                b.push((h.name.to_vec(), h.value.to_vec()))
            })
            .unwrap();
            assert_eq!(a, b, "{name}");
        }
    }
}

/// Skipping the first blocks of a story leaves a mid-stream decoder with placeholders but
/// never an error, and every header it does not mark unseen is exactly right.
#[test]
fn mid_stream_decoder_after_skipping_blocks() {
    let all = load("python-hpack");
    let mut placeholders = 0;
    for (name, story) in all.as_object().unwrap() {
        let cases = story["cases"].as_array().unwrap();
        let skip = cases.len() / 3;
        let mut mid = Decoder::new_mid_stream();
        for (i, case) in cases.iter().enumerate().skip(skip) {
            let wire = unhex(case["wire"].as_str().unwrap());
            let want = case["headers"].as_array().unwrap();
            let mut n = 0;
            mid.decode(&wire, |h| {
                let pair = &want[n];
                if !h.name_unseen {
                    assert_eq!(
                        h.name,
                        pair[0].as_str().unwrap().as_bytes(),
                        "{name} case {i}"
                    );
                } else {
                    placeholders += 1;
                }
                if !h.value_unseen {
                    assert_eq!(
                        h.value,
                        pair[1].as_str().unwrap().as_bytes(),
                        "{name} case {i}"
                    );
                }
                n += 1;
            })
            .unwrap_or_else(|e| panic!("{name} case {i}: {e}"));
            assert_eq!(n, want.len(), "{name} case {i}");
        }
    }
    assert!(
        placeholders > 0,
        "skipping blocks should produce placeholders"
    );
}

/// Every story of every encoder in ../shared/hpack-test-case (9 encoders, read in place;
/// skipped with a message when the folder is absent): each case decodes exactly.
#[test]
fn shared_stories_of_all_encoders_decode_exactly() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/hpack-test-case");
    let Ok(dirs) = std::fs::read_dir(&root) else {
        // CI has ../shared: there a missing folder is a failure, not a skip.
        assert!(
            std::env::var("CI").map_or(true, |v| v != "true"),
            "{} is absent under CI=true",
            root.display()
        );
        eprintln!("skipped: {} is absent", root.display());
        return;
    };
    let mut encoders: Vec<PathBuf> = dirs
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    encoders.sort();
    let mut failures = Vec::new();
    let (mut stories, mut cases) = (0, 0);
    for dir in &encoders {
        let encoder = dir.file_name().unwrap().to_string_lossy().into_owned();
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        assert!(files.len() >= 31, "{encoder}: {} stories", files.len());
        for f in files {
            let mut story: Value =
                serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
            // This folder's headers are one-pair objects; run_story takes [name, value].
            for case in story["cases"].as_array_mut().unwrap() {
                let pairs: Vec<Value> = case["headers"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|o| {
                        let (k, v) = o.as_object().unwrap().iter().next().unwrap();
                        Value::Array(vec![Value::String(k.clone()), v.clone()])
                    })
                    .collect();
                case["headers"] = Value::Array(pairs);
            }
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            match run_story(&encoder, &name, &story) {
                Ok((c, _)) => {
                    stories += 1;
                    cases += c;
                }
                Err(e) => failures.push(e),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} stories failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(encoders.len(), 9);
    assert_eq!((stories, cases), (286, 30_222));
    eprintln!("{stories} stories, {cases} cases of 9 encoders decoded exactly");
}
