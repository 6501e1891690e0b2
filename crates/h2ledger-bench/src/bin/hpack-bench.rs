//! `hpack-bench`: our HPACK decoder (`h2_frame_parser::hpack::Decoder`) against loona-hpack and
//! httlib-hpack, in one process, on the same header blocks.
//!
//! 1. Correctness: every case of every hpack-test-case story, one decoder per story (the cases
//!    of a story share one compression context), compared with the expected header list.
//! 2. Speed: all stories decoded `--reps` times per decoder after `--warmup` rounds; the decoders
//!    take turns within each round so machine noise hits them alike. Reported as the median
//!    ns per header block, and as ratios to ours.
//! 3. Robustness: `--fuzz` blocks made from the story blocks by seeded mutation (bit flips,
//!    byte overwrites, truncation, splices, insertions) or pure random bytes, each decoded by
//!    every decoder under `catch_unwind`. Reported as panic and error rates; ours must be 0.
//!
//! The stories are read where they are, never copied: `fixtures/hpack/*.json.gz` (the
//! repository's compact form, see its README) if present, else
//! `../shared/hpack-test-case/*/story_*.json`.
//!
//! Run: `cargo run --release -p h2ledger-bench --bin hpack-bench -- [--reps N] [--warmup N]
//! [--fuzz M] [--seed S] [--stories DIR]`. Exit status 1 if our decoder panics or fails a story.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::io::Read;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Instant;

use h2_frame_parser::hpack::Decoder as Ours;
use serde::Deserialize;

/// A decoded header list: (name, value) pairs in order.
type Headers = Vec<(Vec<u8>, Vec<u8>)>;

/// One header block and the SETTINGS_HEADER_TABLE_SIZE in force from it on, if it changes.
struct Case {
    wire: Vec<u8>,
    table_size: Option<u32>,
    headers: Headers,
}

struct Story {
    name: String,
    cases: Vec<Case>,
}

/// The common face of the three decoders: decode one block, return the headers' total
/// name+value length (so the work cannot be optimised away) or `Err(())`.
trait Hpack {
    const NAME: &'static str;
    fn new() -> Self;
    fn set_table_size(&mut self, n: u32);
    fn decode_sum(&mut self, block: &[u8]) -> Result<usize, ()>;
    fn decode_list(&mut self, block: &[u8]) -> Result<Headers, ()>;
}

impl Hpack for Ours {
    const NAME: &'static str = "h2-frame-parser (ours)";
    fn new() -> Self {
        Ours::new()
    }
    fn set_table_size(&mut self, n: u32) {
        self.set_max_size_limit(n);
    }
    fn decode_sum(&mut self, block: &[u8]) -> Result<usize, ()> {
        let mut sum = 0;
        self.decode(block, |h| sum += h.name.len() + h.value.len())
            .map_err(drop)?;
        Ok(sum)
    }
    fn decode_list(&mut self, block: &[u8]) -> Result<Headers, ()> {
        let mut out = Vec::new();
        self.decode(block, |h| out.push((h.name.to_vec(), h.value.to_vec())))
            .map_err(drop)?;
        Ok(out)
    }
}

struct Loona(loona_hpack::Decoder<'static>);

impl Hpack for Loona {
    const NAME: &'static str = "loona-hpack 0.4";
    fn new() -> Self {
        Loona(loona_hpack::Decoder::new())
    }
    fn set_table_size(&mut self, n: u32) {
        // The protocol limit; the encoder's size update in the block does the resize.
        self.0.set_max_allowed_table_size(n as usize);
    }
    fn decode_sum(&mut self, block: &[u8]) -> Result<usize, ()> {
        let mut sum = 0;
        self.0
            .decode_with_cb(block, |n: Cow<[u8]>, v: Cow<[u8]>| sum += n.len() + v.len())
            .map_err(drop)?;
        Ok(sum)
    }
    fn decode_list(&mut self, block: &[u8]) -> Result<Headers, ()> {
        self.0.decode(block).map_err(drop)
    }
}

/// httlib-hpack consumes its input from a `&mut Vec<u8>` and returns owned headers, so each
/// block is copied into a reused buffer first: that copy is part of using its API.
struct Httlib {
    dec: httlib_hpack::Decoder<'static>,
    buf: Vec<u8>,
    dst: Vec<(Vec<u8>, Vec<u8>, u8)>,
}

impl Hpack for Httlib {
    const NAME: &'static str = "httlib-hpack 0.1";
    fn new() -> Self {
        Httlib {
            dec: httlib_hpack::Decoder::default(),
            buf: Vec::new(),
            dst: Vec::new(),
        }
    }
    fn set_table_size(&mut self, n: u32) {
        self.dec.set_max_dynamic_size(n);
    }
    fn decode_sum(&mut self, block: &[u8]) -> Result<usize, ()> {
        self.buf.clear();
        self.buf.extend_from_slice(block);
        self.dst.clear();
        self.dec
            .decode(&mut self.buf, &mut self.dst)
            .map_err(drop)?;
        Ok(self.dst.iter().map(|(n, v, _)| n.len() + v.len()).sum())
    }
    fn decode_list(&mut self, block: &[u8]) -> Result<Headers, ()> {
        self.decode_sum(block)?;
        Ok(self.dst.drain(..).map(|(n, v, _)| (n, v)).collect())
    }
}

// ---------------------------------------------------------------------------------------------
// Loading the stories.

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex"))
        .collect()
}

/// A header in either form: compact (`[n, v]`) or original (`{n: v}`).
#[derive(Deserialize)]
#[serde(untagged)]
enum JsonHeader {
    Pair(String, String),
    Object(BTreeMap<String, String>),
}

/// One case of a story, as the fixtures write it.
#[derive(Deserialize)]
struct JsonCase {
    headers: Vec<JsonHeader>,
    wire: String,
    header_table_size: Option<u32>,
}

/// One story: its cases in order.
#[derive(Deserialize)]
struct JsonStory {
    cases: Vec<JsonCase>,
}

fn case(c: JsonCase) -> Case {
    let headers = c
        .headers
        .into_iter()
        .map(|h| match h {
            JsonHeader::Pair(n, v) => (n.into_bytes(), v.into_bytes()),
            JsonHeader::Object(o) => {
                let (n, v) = o.into_iter().next().expect("one-pair object");
                (n.into_bytes(), v.into_bytes())
            }
        })
        .collect();
    Case {
        wire: unhex(&c.wire),
        table_size: c.header_table_size,
        headers,
    }
}

fn story(name: String, v: JsonStory) -> Story {
    Story {
        name,
        cases: v.cases.into_iter().map(case).collect(),
    }
}

fn sorted_dir(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(rd) => rd.filter_map(|e| e.ok().map(|e| e.path())).collect(),
        Err(_) => Vec::new(),
    };
    v.sort();
    v
}

/// The compact fixtures: one `{story_NN: {...}}` object per encoder, gzip'd.
fn load_compact(dir: &Path) -> Vec<Story> {
    let mut out = Vec::new();
    for path in sorted_dir(dir) {
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(encoder) = file.strip_suffix(".json.gz") else {
            continue;
        };
        let mut json = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(&path).expect("open"))
            .read_to_string(&mut json)
            .expect("gunzip");
        let v: BTreeMap<String, JsonStory> = serde_json::from_str(&json).expect("json");
        for (name, st) in v {
            out.push(story(format!("{encoder}/{name}"), st));
        }
    }
    out
}

/// The original collection: `ENCODER/story_NN.json`.
fn load_original(dir: &Path) -> Vec<Story> {
    let mut out = Vec::new();
    for enc in sorted_dir(dir).into_iter().filter(|p| p.is_dir()) {
        for path in sorted_dir(&enc) {
            let file = path.file_name().unwrap().to_string_lossy().into_owned();
            if !(file.starts_with("story_") && file.ends_with(".json")) {
                continue;
            }
            let v: JsonStory =
                serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
            let name = format!("{}/{}", enc.file_name().unwrap().to_string_lossy(), file);
            out.push(story(name, v));
        }
    }
    out
}

fn load(explicit: Option<PathBuf>) -> (PathBuf, Vec<Story>) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let candidates = match explicit {
        Some(p) => vec![p],
        None => vec![
            root.join("fixtures/hpack"),
            root.join("../shared/hpack-test-case"),
        ],
    };
    for dir in candidates {
        let stories = load_compact(&dir);
        if !stories.is_empty() {
            return (dir, stories);
        }
        let stories = load_original(&dir);
        if !stories.is_empty() {
            return (dir, stories);
        }
    }
    panic!("no HPACK stories found (fixtures/hpack/*.json.gz or ../shared/hpack-test-case)");
}

// ---------------------------------------------------------------------------------------------
// The three runs.

/// Stories whose every case decodes to exactly the expected list.
fn check<D: Hpack>(stories: &[Story]) -> usize {
    stories
        .iter()
        .filter(|s| {
            let mut d = D::new();
            s.cases.iter().all(|c| {
                if let Some(n) = c.table_size {
                    d.set_table_size(n);
                }
                matches!(d.decode_list(&c.wire), Ok(h) if h == c.headers)
            })
        })
        .count()
}

/// One pass over every story with fresh decoders; returns elapsed nanoseconds.
fn pass<D: Hpack>(stories: &[Story]) -> f64 {
    let t = Instant::now();
    let mut sum = 0usize;
    for s in stories {
        let mut d = D::new();
        for c in &s.cases {
            if let Some(n) = c.table_size {
                d.set_table_size(n);
            }
            sum += d.decode_sum(black_box(&c.wire)).unwrap_or(0);
        }
    }
    black_box(sum);
    t.elapsed().as_nanos() as f64
}

/// xorshift64*: seeded, dependency-free, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// A hostile block: a story block mutated 1-4 times, or (1 in 4) random bytes. Bytes that make
/// HPACK integers and lengths large (0x7f, 0xff) are favoured, as fuzzers find them.
fn mutate(rng: &mut Rng, blocks: &[&[u8]]) -> Vec<u8> {
    if rng.below(4) == 0 {
        let len = rng.below(64);
        return (0..len).map(|_| rng.next() as u8).collect();
    }
    let mut b = blocks[rng.below(blocks.len())].to_vec();
    for _ in 0..1 + rng.below(4) {
        let special = [0x00, 0x7f, 0x80, 0xff, 0x3f, 0x1f, 0x0f, 0x40, 0x20, 0x10];
        let pos = rng.below(b.len());
        match rng.below(6) {
            0 if !b.is_empty() => b[pos] ^= 1 << rng.below(8),
            1 if !b.is_empty() => b[pos] = rng.next() as u8,
            2 if !b.is_empty() => b[pos] = special[rng.below(special.len())],
            3 => b.truncate(pos),
            4 => {
                let other = blocks[rng.below(blocks.len())];
                let from = rng.below(other.len());
                b.extend_from_slice(&other[from..]);
            }
            _ => {
                let ins: Vec<u8> = (0..1 + rng.below(8))
                    .map(|_| special[rng.below(special.len())])
                    .collect();
                let at = pos.min(b.len());
                b.splice(at..at, ins);
            }
        }
    }
    b
}

struct Robustness {
    ok: usize,
    errors: usize,
    panics: usize,
    /// Panic site and message -> count, with the first block that hit it.
    sites: BTreeMap<String, (usize, Vec<u8>)>,
}

/// Where the last panic happened and what it said, set by the hook `main` installs.
static LAST_PANIC: Mutex<String> = Mutex::new(String::new());

fn panic_site(info: &std::panic::PanicHookInfo<'_>) -> String {
    let msg = info
        .payload()
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| info.payload().downcast_ref::<String>().cloned())
        .unwrap_or_default();
    let loc = info
        .location()
        .map(|l| format!("{}:{}", l.file(), l.line()))
        .unwrap_or_default();
    // Registry paths are long; keep from the crate name on.
    let loc = loc
        .rsplit("registry/src/")
        .next()
        .unwrap_or(&loc)
        .to_string();
    let loc = loc
        .split_once('/')
        .map(|(_, r)| r.to_string())
        .unwrap_or(loc);
    format!("{loc}: {msg}")
}

/// Decodes every hostile block. The decoder keeps its context across blocks (so table
/// references hit real entries) and is replaced after an error or a panic, as a connection
/// would be.
fn robustness<D: Hpack>(hostile: &[Vec<u8>]) -> Robustness {
    let mut r = Robustness {
        ok: 0,
        errors: 0,
        panics: 0,
        sites: BTreeMap::new(),
    };
    let mut d = D::new();
    for b in hostile {
        match catch_unwind(AssertUnwindSafe(|| d.decode_sum(b))) {
            Ok(Ok(_)) => r.ok += 1,
            Ok(Err(())) => {
                r.errors += 1;
                d = D::new();
            }
            Err(_) => {
                r.panics += 1;
                let site = LAST_PANIC.lock().map(|s| s.clone()).unwrap_or_default();
                r.sites.entry(site).or_insert((0, b.clone())).0 += 1;
                d = D::new();
            }
        }
    }
    r
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

struct Opts {
    reps: usize,
    warmup: usize,
    fuzz: usize,
    seed: u64,
    budget: f64,
    show_panics: usize,
    stories: Option<PathBuf>,
}

fn opts() -> Result<Opts, String> {
    let mut o = Opts {
        reps: 30,
        warmup: 3,
        fuzz: 300_000,
        seed: 0x9E37_79B9_7F4A_7C15,
        budget: 10.0,
        show_panics: 1,
        stories: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().ok_or(format!("{a} needs a value"));
        let num = |s: String| s.parse::<u64>().map_err(|e| format!("{a}: {e}"));
        match a.as_str() {
            "--reps" => o.reps = num(val()?)?.max(1) as usize,
            "--warmup" => o.warmup = num(val()?)? as usize,
            "--fuzz" => o.fuzz = num(val()?)? as usize,
            "--seed" => o.seed = num(val()?)?.max(1),
            "--budget" => o.budget = num(val()?)? as f64,
            "--show-panics" => o.show_panics = num(val()?)? as usize,
            "--stories" => o.stories = Some(PathBuf::from(val()?)),
            "-h" | "--help" => {
                return Err(
                    "usage: hpack-bench [--reps N] [--warmup N] [--budget SECONDS] [--fuzz M] \
                            [--seed S] [--show-panics K] [--stories DIR]"
                        .into(),
                )
            }
            _ => return Err(format!("unknown argument {a}")),
        }
    }
    Ok(o)
}

fn main() -> ExitCode {
    let o = match opts() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let (dir, stories) = load(o.stories);
    let blocks: Vec<&[u8]> = stories
        .iter()
        .flat_map(|s| s.cases.iter().map(|c| c.wire.as_slice()))
        .collect();
    let n_blocks = blocks.len();
    let n_headers: usize = stories
        .iter()
        .flat_map(|s| &s.cases)
        .map(|c| c.headers.len())
        .sum();
    let n_bytes: usize = blocks.iter().map(|b| b.len()).sum();
    println!(
        "stories: {} from {} ({} header blocks, {} headers, {} bytes)",
        stories.len(),
        dir.canonicalize().unwrap_or(dir.clone()).display(),
        n_blocks,
        n_headers,
        n_bytes
    );

    // 1. Correctness.
    let passed = [
        check::<Ours>(&stories),
        check::<Loona>(&stories),
        check::<Httlib>(&stories),
    ];
    let names = [Ours::NAME, Loona::NAME, Httlib::NAME];
    println!("\ncorrectness (stories decoded exactly):");
    for (name, p) in names.iter().zip(passed) {
        println!("  {name:<24} {p}/{}", stories.len());
    }
    if let Some(s) = stories.iter().find(|s| s.cases.is_empty()) {
        println!("  (story {} has no cases)", s.name);
    }

    // 2. Speed. Each decoder gets up to `reps` timed passes, fewer if a pass is so slow that
    // `reps` of them would exceed `budget` seconds (at least 3); within a round the decoders
    // take turns, so machine noise hits them alike.
    let passes: [fn(&[Story]) -> f64; 3] = [pass::<Ours>, pass::<Loona>, pass::<Httlib>];
    let mut first = [0.0f64; 3];
    // A pass slower than half a second is its own warm-up.
    for w in 0..o.warmup.max(1) {
        for (p, f) in passes.iter().zip(first.iter_mut()) {
            if w == 0 || *f < 0.5e9 {
                *f = p(&stories);
            }
        }
    }
    let reps: Vec<usize> = first
        .iter()
        .map(|ns| ((o.budget * 1e9 / ns) as usize).clamp(3, o.reps.max(3)))
        .collect();
    let mut times: [Vec<f64>; 3] = Default::default();
    for round in 0..o.reps.max(3) {
        for ((p, t), r) in passes.iter().zip(times.iter_mut()).zip(&reps) {
            if round < *r {
                t.push(p(&stories));
            }
        }
    }
    let per_block: Vec<f64> = times
        .iter_mut()
        .map(|t| median(t) / n_blocks as f64)
        .collect();
    println!(
        "\nspeed (median over passes of all {} blocks, fresh decoder per story, after {} warm-up passes):",
        n_blocks,
        o.warmup.max(1)
    );
    println!(
        "  {:<24} {:>7} {:>12} {:>12} {:>10} {:>10}",
        "decoder", "passes", "ns/block", "ns/header", "MB/s", "vs ours"
    );
    for ((name, ns), r) in names.iter().zip(&per_block).zip(&reps) {
        println!(
            "  {name:<24} {r:>7} {ns:>12.1} {:>12.1} {:>10.1} {:>9.2}x",
            ns * n_blocks as f64 / n_headers as f64,
            n_bytes as f64 / (ns * n_blocks as f64) * 1e3,
            ns / per_block[0]
        );
    }

    // 3. Robustness.
    let mut rng = Rng(o.seed);
    let hostile: Vec<Vec<u8>> = (0..o.fuzz).map(|_| mutate(&mut rng, &blocks)).collect();
    std::panic::set_hook(Box::new(|info| {
        if let Ok(mut s) = LAST_PANIC.lock() {
            *s = panic_site(info);
        }
    }));
    let results = [
        robustness::<Ours>(&hostile),
        robustness::<Loona>(&hostile),
        robustness::<Httlib>(&hostile),
    ];
    let _ = std::panic::take_hook();
    println!(
        "\nrobustness ({} mutated/random blocks, seed {:#x}):",
        o.fuzz, o.seed
    );
    println!(
        "  {:<24} {:>9} {:>9} {:>9} {:>10}",
        "decoder", "ok", "errors", "panics", "panic rate"
    );
    for (name, r) in names.iter().zip(&results) {
        println!(
            "  {name:<24} {:>9} {:>9} {:>9} {:>9.4}%",
            r.ok,
            r.errors,
            r.panics,
            100.0 * r.panics as f64 / o.fuzz.max(1) as f64
        );
    }
    for (name, r) in names.iter().zip(&results) {
        let mut sites: Vec<_> = r.sites.iter().collect();
        sites.sort_by_key(|(_, (n, _))| std::cmp::Reverse(*n));
        for (site, (n, block)) in sites.into_iter().take(o.show_panics) {
            let hex: String = block.iter().map(|b| format!("{b:02x}")).collect();
            println!("  {name} panic x{n} at {site}\n    first block: {hex}");
        }
        if r.sites.len() > o.show_panics {
            println!("  ({} more panic sites)", r.sites.len() - o.show_panics);
        }
    }

    if results[0].panics != 0 || passed[0] != stories.len() {
        eprintln!("FAIL: our decoder must pass every story and never panic");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
