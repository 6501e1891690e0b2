//! docs/internal-api.md stays true: what it names exists in crates/*/src, as it says.
//!
//! * Every Rust path in an inline code span or a ```rust block (`Session::feed`,
//!   `link::decode`, `CloseKind::Superseded`, `Observer`, `RST_GRACE_NS`) must be defined:
//!   a type as `pub struct|enum|trait|type` (or a `pub use` of it), `Type::member` as a
//!   `pub fn`, field, constant or variant next to the type's definition or one of its `impl`s
//!   (a trait's methods inside the trait), `module::name` with `mod module` and a public
//!   `fn`, type or constant `name`. Lowercase words and `ALLCAPS` without `_` are not checked;
//!   paths of std and other crates (`EXTERNAL`) are skipped.
//! * Every `fn` in a ```rust block must be a signature of the code, compared without
//!   whitespace, `mut` on arguments, a leading `_` on argument names or a trailing comma: a
//!   method of `trait X` in that trait's body, any other a `pub fn` (under `impl X`, next to
//!   X's definition or one of its `impl`s).
//! * A `trait X { ... }` written out lists every method of X; a `pub enum X { ... }` every
//!   variant (a tuple variant with its fields); a `pub struct X { pub f: T, ... }` only fields
//!   X has, with those types.
//!
//! The ```text diagram is a picture and is not checked; every name in it is in a section.

use std::collections::BTreeSet;
use std::path::Path;

use crate::util::repo;

/// Names that are not the workspace's: std, the other crates', primitives.
const EXTERNAL: &str = "std core alloc io fmt serde serde_json nom tokio pcap libc anyhow clap \
    prost_reflect u8 u16 u32 u64 i32 i64 usize f64 str Self Option Some None Result Ok Err Vec \
    String Box Arc Cow ControlFlow Iterator IntoIterator Item Fn FnMut FnOnce Read Seek Write \
    SocketAddr Duration File Path Serialize IResult Send Sized Default crate super";

struct Src {
    /// (path, text, text normalized by [`norm`]) of every crates/*/src/**/*.rs but tests.
    files: Vec<(String, String, String)>,
    /// What is defined, as ("type" | "fn" | "const" | "mod", name); crates are mods.
    defs: BTreeSet<(&'static str, String)>,
}

/// Line starts that define a name, and the kind of name.
const DEFS: &[(&str, &str)] = &[
    ("pub struct ", "type"),
    ("pub enum ", "type"),
    ("pub trait ", "type"),
    ("pub type ", "type"),
    ("pub fn ", "fn"),
    ("pub async fn ", "fn"),
    ("pub const ", "const"),
    ("pub static ", "const"),
    ("pub mod ", "mod"),
    ("mod ", "mod"),
];

fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs")
            && !matches!(
                p.file_name().and_then(|n| n.to_str()),
                Some("tests.rs" | "testkit.rs")
            )
        {
            out.push(p);
        }
    }
}

impl Src {
    fn load() -> Src {
        let mut paths = Vec::new();
        let mut defs = BTreeSet::new();
        for c in std::fs::read_dir(repo().join("crates")).unwrap().flatten() {
            defs.insert(("mod", c.file_name().to_string_lossy().replace('-', "_")));
            if c.path().join("src").is_dir() {
                walk(&c.path().join("src"), &mut paths);
            }
        }
        paths.sort();
        let mut files = Vec::new();
        for p in paths {
            let text = std::fs::read_to_string(&p).unwrap();
            for l in text.lines().map(str::trim) {
                for (start, kind) in DEFS {
                    if let Some(rest) = l.strip_prefix(start) {
                        defs.insert((kind, ident_at(rest).to_string()));
                    }
                }
            }
            // A `pub use` re-exports types and modules (`pub use h2ledger_run::time;`).
            for u in text.split("pub use ").skip(1) {
                let u = u.split(';').next().unwrap_or("");
                for name in paths_in(u).iter().flat_map(|p| p.split("::")) {
                    defs.insert(("type", name.to_string()));
                }
                if let Some(last) = u.rsplit("::").next().filter(|l| !l.contains('}')) {
                    defs.insert(("mod", ident_at(last.trim()).to_string()));
                }
            }
            let normalized = norm(&text);
            files.push((p.display().to_string(), text, normalized));
        }
        Src { files, defs }
    }

    fn has(&self, kind: &'static str, name: &str) -> bool {
        self.defs.contains(&(kind, name.to_string()))
    }

    /// Files that define `ty` or hold an `impl` of or for it.
    fn files_of(&self, ty: &str) -> Vec<&(String, String, String)> {
        let def = ["struct ", "enum ", "trait ", "type "];
        self.files
            .iter()
            .filter(|f| {
                f.1.lines().map(str::trim).any(|l| {
                    let l = l.strip_prefix("pub ").unwrap_or(l);
                    def.iter().any(|d| starts_word(l, d, ty))
                        || (l.starts_with("impl") && has_word(l.split('{').next().unwrap(), ty))
                })
            })
            .collect()
    }

    /// The bodies (from the header line to the first `}` at column 0) of `KIND NAME`.
    fn bodies(&self, kind: &str, name: &str) -> Vec<String> {
        let mut v = Vec::new();
        for f in &self.files {
            let lines: Vec<&str> = f.1.lines().collect();
            for (i, l) in lines.iter().enumerate() {
                let t = l.trim_start();
                let t = t.strip_prefix("pub ").unwrap_or(t);
                if starts_word(t, &format!("{kind} "), name) {
                    let end = (i..lines.len()).find(|&j| lines[j] == "}").unwrap_or(i);
                    v.push(lines[i..=end].join("\n"));
                }
            }
        }
        v
    }

    fn variants(&self, en: &str) -> Vec<BTreeSet<String>> {
        self.bodies("enum", en)
            .iter()
            .map(|b| {
                b.lines()
                    .filter_map(|l| l.strip_prefix("    "))
                    .filter(|l| l.starts_with(|c: char| c.is_ascii_uppercase()))
                    .map(|l| ident_at(l).to_string())
                    .collect()
            })
            .collect()
    }

    /// Whether `ty::member` is defined (see the module docs).
    fn has_member(&self, ty: &str, member: &str) -> bool {
        if member.starts_with(|c: char| c.is_ascii_uppercase()) && !all_caps(member) {
            return self.variants(ty).iter().any(|v| v.contains(member));
        }
        let trait_body = self
            .bodies("trait", ty)
            .iter()
            .any(|b| b.lines().any(|l| starts_word(l.trim(), "fn ", member)));
        trait_body
            || self.files_of(ty).iter().any(|f| {
                f.1.lines().map(str::trim).any(|l| {
                    starts_word(l, "pub fn ", member)
                        || starts_word(l, "pub const ", member)
                        || (starts_word(l, "pub ", member)
                            && l[4 + member.len()..].starts_with(':'))
                })
            })
    }

    /// `sig` (normalized, from `fn`) in `texts` (normalized), as a whole signature; `public`:
    /// declared `pub fn` (outside a trait).
    fn has_sig<'a>(texts: impl IntoIterator<Item = &'a str>, sig: &str, public: bool) -> bool {
        texts.into_iter().any(|t| {
            t.match_indices(sig).any(|(i, _)| {
                let after = &t[i + sig.len()..];
                let before = t[..i].strip_suffix("async").unwrap_or(&t[..i]);
                (after.starts_with('{') || after.starts_with(';') || after.starts_with("where"))
                    && (!public || before.ends_with("pub"))
            })
        })
    }
}

/// `line` starts with `prefix` followed by the word `name`.
fn starts_word(line: &str, prefix: &str, name: &str) -> bool {
    line.strip_prefix(prefix)
        .and_then(|r| r.strip_prefix(name))
        .is_some_and(|r| !r.starts_with(|c: char| c.is_alphanumeric() || c == '_'))
}

fn has_word(text: &str, name: &str) -> bool {
    text.match_indices(name).any(|(i, _)| {
        let b = text[..i].chars().next_back();
        let a = text[i + name.len()..].chars().next();
        let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        !word(b) && !word(a)
    })
}

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// `FOO`, `MAX_2`: a constant's name (or a frame type's, `DATA`, in prose).
fn all_caps(s: &str) -> bool {
    s.chars().any(|c| c.is_ascii_uppercase())
        && s.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// `MAX_STREAMS`: checked as a constant when it stands alone (`DATA` is a word).
fn is_const_name(s: &str) -> bool {
    all_caps(s) && s.contains('_')
}

/// Without whitespace, `mut`/`_` before argument names, trailing commas.
fn norm(s: &str) -> String {
    let mut t: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    for (from, to) in [("(mut", "("), (",mut", ","), ("(_", "("), (",_", ",")] {
        let mut out = String::with_capacity(t.len());
        let mut rest = t.as_str();
        while let Some(i) = rest.find(from) {
            let next = rest[i + from.len()..].chars().next();
            let arg =
                next.is_some_and(|c| c.is_ascii_lowercase() || (from.ends_with("mut") && c == '_'));
            out.push_str(&rest[..i]);
            out.push_str(if arg { to } else { from });
            rest = &rest[i + from.len()..];
        }
        out.push_str(rest);
        t = out;
    }
    t.replace(",)", ")").replace(",>", ">").replace(",}", "}")
}

/// The paths (`a::b::C`) in `text`.
fn paths_in(text: &str) -> Vec<String> {
    let mut v = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    while i < b.len() {
        if (b[i].is_ascii_alphabetic() || b[i] == b'_') && (i == 0 || !word(b[i - 1])) {
            let start = i;
            while i < b.len() && (word(b[i]) || (b[i] == b':' && b.get(i + 1) == Some(&b':'))) {
                i += if b[i] == b':' { 2 } else { 1 };
            }
            v.push(text[start..i].trim_end_matches(':').to_string());
        } else {
            i += 1;
        }
    }
    v
}

/// Why `path` is not defined, if it is not.
fn check_path(src: &Src, path: &str) -> Option<String> {
    let segs: Vec<&str> = path.split("::").collect();
    if EXTERNAL.split_whitespace().any(|e| e == segs[0]) {
        return None;
    }
    let upper = |s: &str| s.starts_with(|c: char| c.is_ascii_uppercase());
    let camel = |s: &str| upper(s) && s.len() > 1 && s.chars().any(|c| c.is_ascii_lowercase());
    let mut k = 0;
    while k + 1 < segs.len() && !upper(segs[k]) {
        if !src.has("mod", segs[k]) {
            return Some(format!("no crate or module `{}`", segs[k]));
        }
        k += 1;
    }
    let name = segs[k];
    if let Some(member) = segs.get(k + 1) {
        if !src.has("type", name) {
            return Some(format!("no public type `{name}`"));
        }
        return (!src.has_member(name, member)).then(|| format!("`{name}` has no `{member}`"));
    }
    let ok = if is_const_name(name) {
        src.has("const", name)
    } else if camel(name) {
        src.has("type", name)
    } else if k > 0 {
        src.has("fn", name) || src.has("mod", name) || src.has("type", name)
    } else {
        true // a word, an argument, a field
    };
    (!ok).then(|| format!("`{name}` is not defined publicly"))
}

/// Text between the first `{` and its `}`, split at top-level commas.
fn items(block: &str) -> Vec<String> {
    let Some(open) = block.find('{') else {
        return Vec::new();
    };
    let (mut depth, mut cur, mut out) = (0i32, String::new(), Vec::new());
    for c in block[open + 1..].chars() {
        match c {
            '{' | '(' | '<' | '[' => depth += 1,
            '}' if depth == 0 => break,
            '}' | ')' | '>' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur);
    out.into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty() && s != "..")
        .collect()
}

/// Every problem of docs/internal-api.md against the sources.
fn problems(doc: &str, src: &Src) -> Vec<String> {
    let mut bad = Vec::new();
    let mut in_rust = None::<Vec<(usize, String)>>;
    let mut fence = false;
    for (n, line) in doc.lines().enumerate() {
        let at = n + 1;
        if line.trim_start().starts_with("```") {
            if let Some(block) = in_rust.take() {
                check_block(&block, src, &mut bad);
            } else if !fence && line.trim() == "```rust" {
                in_rust = Some(Vec::new());
            }
            fence = !fence;
            continue;
        }
        if let Some(block) = in_rust.as_mut() {
            let code = line.split("//").next().unwrap_or("");
            block.push((at, code.to_string()));
            continue;
        }
        if fence {
            continue;
        }
        for (i, span) in line.split('`').enumerate() {
            if i % 2 == 1 {
                for p in paths_in(span) {
                    if let Some(why) = check_path(src, &p) {
                        bad.push(format!("line {at}: `{p}`: {why}"));
                    }
                }
            }
        }
    }
    bad
}

fn check_block(block: &[(usize, String)], src: &Src, bad: &mut Vec<String>) {
    let mut depth = 0i32;
    // The item a line is in: (kind, name, first line, its text so far).
    let mut item: Option<(String, String, usize, String)> = None;
    for (k, (at, code)) in block.iter().enumerate() {
        let t = code.trim();
        if depth == 0 {
            let head = t.strip_prefix("pub ").unwrap_or(t);
            let kind = ["trait", "enum", "struct", "impl"]
                .into_iter()
                .find(|k| head.starts_with(&format!("{k} ")) || head.starts_with(&format!("{k}<")));
            item = kind.map(|kind| {
                let mut rest = head[kind.len()..].trim_start();
                if rest.starts_with('<') {
                    // Skip the impl's generics.
                    let mut d = 0;
                    let end = rest
                        .char_indices()
                        .find(|&(_, c)| {
                            d += (c == '<') as i32 - (c == '>') as i32;
                            d == 0
                        })
                        .map_or(0, |(i, _)| i + 1);
                    rest = rest[end..].trim_start();
                }
                let head = rest.split('{').next().unwrap();
                let rest = head.split(" for ").last().unwrap().trim_start();
                (
                    kind.to_string(),
                    ident_at(rest).to_string(),
                    *at,
                    String::new(),
                )
            });
        }
        if let Some(it) = item.as_mut() {
            it.3.push_str(code);
            it.3.push('\n');
        }
        // Names, except an enum's variants (checked below).
        let names = match &item {
            Some((kind, ..)) if kind == "enum" => {
                let inner: String = code.split_once('{').map_or(code.as_str(), |x| x.1).into();
                items(&format!("{{{inner}}}"))
                    .iter()
                    .map(|v| v[ident_at(v).len()..].to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            }
            _ => code.clone(),
        };
        for p in paths_in(&names) {
            if let Some(why) = check_path(src, &p) {
                bad.push(format!("line {at}: `{p}`: {why}"));
            }
        }
        // Signatures: from `fn` to `;` or `{`, continued on the next lines if need be.
        let starts = code
            .match_indices("fn ")
            .map(|(i, _)| i)
            .filter(|&i| i == 0 || !code.as_bytes()[i - 1].is_ascii_alphanumeric());
        for i in starts {
            let mut sig = code[i..].to_string();
            let mut j = k + 1;
            while !sig.contains([';', '{']) && j < block.len() {
                sig.push_str(&block[j].1);
                j += 1;
            }
            let sig = norm(&sig[..sig.find([';', '{']).unwrap_or(sig.len())]);
            let found = match &item {
                Some((kind, name, ..)) if kind == "trait" => {
                    let bodies = src.bodies("trait", name);
                    let bodies: Vec<String> = bodies.iter().map(|b| norm(b)).collect();
                    Src::has_sig(bodies.iter().map(String::as_str), &sig, false)
                }
                Some((_, name, ..)) => {
                    Src::has_sig(src.files_of(name).iter().map(|f| f.2.as_str()), &sig, true)
                }
                None => Src::has_sig(src.files.iter().map(|f| f.2.as_str()), &sig, true),
            };
            if !found {
                bad.push(format!("line {at}: no such signature in the code: {sig}"));
            }
        }
        depth += count(code);
        if depth == 0 {
            if let Some((kind, name, first, text)) = item.take() {
                check_item(&kind, &name, first, &text, src, bad);
            }
        }
    }
}

/// `{` minus `}` in `s`.
fn count(s: &str) -> i32 {
    s.matches('{').count() as i32 - s.matches('}').count() as i32
}

/// A trait lists all of its methods, an enum all of its variants, a struct only real fields.
fn check_item(kind: &str, name: &str, at: usize, text: &str, src: &Src, bad: &mut Vec<String>) {
    match kind {
        "trait" => {
            let fns = |s: &str| -> BTreeSet<String> {
                s.lines()
                    .filter_map(|l| l.trim().strip_prefix("fn "))
                    .map(|r| ident_at(r).to_string())
                    .collect()
            };
            let doc = fns(text.split_once('{').map_or("", |x| x.1));
            let code: Vec<BTreeSet<String>> = src
                .bodies("trait", name)
                .iter()
                .map(|b| fns(b.split_once('{').map_or("", |x| x.1)))
                .collect();
            if !code.contains(&doc) {
                bad.push(format!(
                    "line {at}: trait {name} has methods {code:?}, the doc lists {doc:?}"
                ));
            }
        }
        "enum" => {
            let doc: BTreeSet<String> = items(text)
                .iter()
                .map(|v| ident_at(v).to_string())
                .collect();
            let code = src.variants(name);
            if !code.contains(&doc) {
                bad.push(format!(
                    "line {at}: enum {name} has variants {code:?}, the doc lists {doc:?}"
                ));
            }
            // A tuple variant's fields as written: `Damaged(String)`.
            let bodies: Vec<String> = src.bodies("enum", name).iter().map(|b| norm(b)).collect();
            for v in items(text).iter().filter(|v| v.ends_with(')')) {
                let v = norm(v);
                if !bodies
                    .iter()
                    .any(|b| b.contains(&format!("{v},")) || b.contains(&format!("{v}}}")))
                {
                    bad.push(format!("line {at}: enum {name} has no variant `{v}`"));
                }
            }
        }
        "struct" => {
            let bodies: Vec<String> = src.bodies("struct", name).iter().map(|b| norm(b)).collect();
            for field in items(text) {
                let f = norm(&field);
                let real = bodies
                    .iter()
                    .any(|b| b.contains(&format!("{f},")) || b.contains(&format!("{f}}}")));
                if !real {
                    bad.push(format!("line {at}: struct {name} has no field `{field}`"));
                }
            }
        }
        _ => {}
    }
}

#[test]
fn every_name_in_the_map_is_in_the_code() {
    let doc = std::fs::read_to_string(repo().join("docs/internal-api.md")).unwrap();
    let src = Src::load();
    let bad = problems(&doc, &src);
    assert!(
        bad.is_empty(),
        "docs/internal-api.md does not match the code:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_check_can_fail() {
    let src = Src::load();
    let doc = "`Observer::wants_headers`, `Pipeline`, `link::decode`, `h2ledger_run::Nope`\n\
               ```rust\n\
               pub trait Sink {\n    fn close(&mut self, conn: ConnId, ts: Nanos);\n}\n\
               pub enum CloseKind { Fin(Dir), Rst(Dir), EndOfCapture, Evicted }\n\
               ```\n";
    let bad = problems(doc, &src);
    let expect = [
        "`Observer::wants_headers`",
        "`Pipeline`",
        "`h2ledger_run::Nope`",
        "no such signature in the code: fnclose(&mutself,conn:ConnId,ts:Nanos)",
        "trait Sink has methods",
        "enum CloseKind has variants",
    ];
    for e in expect {
        assert!(
            bad.iter().any(|b| b.contains(e)),
            "{e} not found in {bad:#?}"
        );
    }
    assert_eq!(bad.len(), expect.len(), "{bad:#?}");
}
