//! The display filter of `h2ledger calls -Y` and `frames -Y`: tshark's shape (`grpc.status !=
//! 0 and call.duration > 10ms`, `http2.type == 3`, `path contains "Health"`) over the fields
//! of the view's JSON lines (docs/filter.md).
//!
//! A filter selects exactly the records that jq's `select(...)` of the same test selects from
//! `-T jsonl` (a test compares them on every capture in captures/):
//!
//! * a field is a key of the JSON line (a nested key as `writes.client`), or tshark's name of
//!   the same (`http2.streamid` for `stream`), or one of the short names (`path`,
//!   `call.duration`); [`View::fields`] lists them;
//! * a comparison with a field the record does not have (null in the JSON) is false, whatever
//!   the operator, as in tshark: `grpc.status != 0` selects the gRPC calls that failed;
//! * a field alone means present and not zero, not empty, not false.
//!
//! Parsing is linear in the expression (nesting is at most [`MAX_DEPTH`] deep, `matches`
//! compiles with the `regex` crate under a size limit) and never panics; evaluation is linear
//! in the expression. A mistake is an [`Error`] with its column, which
//! [`Error::render`] shows under the expression with a caret, as tshark does.

#![forbid(unsafe_code)]

mod fields;
mod lex;

use std::borrow::Cow;
use std::fmt;

pub use fields::{Field, Src, Ty, View, CALLS, ERRORS, FRAMES, TYPES};
use lex::{Op, Spanned, Tok};

/// Parentheses and `not` nested at most this deep.
pub const MAX_DEPTH: usize = 64;

/// The largest compiled regular expression of `matches` (bytes of the regex crate's program).
const REGEX_LIMIT: usize = 1 << 20;

/// A value of a record's field, as its JSON line holds it.
#[derive(Clone, Debug, PartialEq)]
pub enum Value<'a> {
    /// null, or no such key.
    Null,
    /// true or false.
    Bool(bool),
    /// A number.
    Num(f64),
    /// A string.
    Str(Cow<'a, str>),
    /// A list of strings (`flag_names`).
    Strs(&'a [&'a str]),
}

/// A record a filter is tested on: the value of a key of its JSON line (a nested key as `a.b`).
pub trait Record {
    /// The value of `key` ([`Value::Null`] when the JSON line has none, or null).
    fn get(&self, key: &str) -> Value<'_>;
}

/// A mistake in a filter: what is wrong, at which columns (characters from 0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// The first column of what is wrong.
    pub start: usize,
    /// How many characters are wrong (at least 1).
    pub len: usize,
    /// What is wrong and what to write instead.
    pub msg: String,
}

impl Error {
    fn new(start: usize, len: usize, msg: impl Into<String>) -> Error {
        Error {
            start,
            len: len.max(1),
            msg: msg.into(),
        }
    }

    /// `column N: what` on one line, then `expr` and a caret under the columns, as tshark
    /// shows a bad display filter. Characters that would break the line are shown as spaces,
    /// and a long expression is cut to some 80 characters around the caret.
    pub fn render(&self, expr: &str) -> String {
        let chars: Vec<char> = expr
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let (mut from, mut to) = (0, chars.len());
        if chars.len() > 90 {
            from = self.start.saturating_sub(40);
            to = (from + 80).min(chars.len());
        }
        let mut shown: String = chars.get(from..to).unwrap_or_default().iter().collect();
        let mut caret_at = self.start.saturating_sub(from);
        if from > 0 {
            shown.insert_str(0, "...");
            caret_at += 3;
        }
        if to < chars.len() {
            shown.push_str("...");
        }
        let len = self.len.min(80);
        format!(
            "column {}: {}\n    {}\n    {}^{}",
            self.start + 1,
            self.msg,
            shown.trim_end(),
            " ".repeat(caret_at),
            "~".repeat(len - 1)
        )
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "column {}: {}", self.start + 1, self.msg)
    }
}

impl std::error::Error for Error {}

/// A value of the expression.
#[derive(Clone, Debug)]
enum Lit {
    Num(f64),
    Str(String),
    Bool(bool),
}

/// Where a test reads its value.
#[derive(Clone, Debug)]
enum Get {
    Src(Src),
    /// A number field `&` a mask.
    Mask(&'static str, u64),
}

#[derive(Clone, Debug)]
enum Check {
    Present,
    Cmp(Op, Lit),
    In(Vec<Lit>),
    Contains(String),
    Matches(regex::Regex),
}

#[derive(Clone, Debug)]
enum Node {
    All(Vec<Node>),
    Any(Vec<Node>),
    Not(Box<Node>),
    Test(Get, Check),
}

/// A parsed display filter of a view.
#[derive(Clone, Debug)]
pub struct Filter {
    root: Node,
    view: View,
    notes: Vec<String>,
}

impl Filter {
    /// The filter `expr` of `view`'s records; an empty expression selects every record.
    pub fn parse(expr: &str, view: View) -> Result<Filter, Error> {
        let toks = lex::lex(expr)?;
        let mut p = Parser {
            toks,
            i: 0,
            view,
            depth: 0,
            notes: Vec::new(),
        };
        if p.peek() == &Tok::End {
            return Ok(Filter {
                root: Node::All(Vec::new()),
                view,
                notes: Vec::new(),
            });
        }
        let root = p.or()?;
        let t = p.cur();
        if t.tok != Tok::End {
            let msg = match &t.tok {
                Tok::RParen => "this ) closes no (".to_string(),
                _ => format!(
                    "{} was unexpected here: join tests with and, or (&&, ||)",
                    show(&t.tok)
                ),
            };
            return Err(Error::new(t.start, t.len, msg));
        }
        Ok(Filter {
            root,
            view,
            notes: p.notes,
        })
    }

    /// What the filter may not mean as written, though valid (`method == "GET"`: `method` is
    /// the `:path`, as in the JSON); one line each, to show on stderr.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The view the filter is for.
    pub fn view(&self) -> View {
        self.view
    }

    /// Whether `r` passes the filter.
    pub fn matches(&self, r: &dyn Record) -> bool {
        eval(&self.root, r)
    }
}

fn eval(n: &Node, r: &dyn Record) -> bool {
    match n {
        Node::All(v) => v.iter().all(|x| eval(x, r)),
        Node::Any(v) => v.iter().any(|x| eval(x, r)),
        Node::Not(x) => !eval(x, r),
        Node::Test(get, check) => test(get, check, r),
    }
}

fn value<'a>(get: &Get, r: &'a dyn Record) -> Value<'a> {
    match *get {
        Get::Src(Src::Key(k)) => r.get(k),
        Get::Src(Src::ErrorOf(kind)) => match r.get("type") {
            Value::Str(t) if t == kind => r.get("error"),
            _ => Value::Null,
        },
        Get::Src(Src::Flag(name, kind)) => {
            if let Some(kind) = kind {
                if !matches!(r.get("type"), Value::Str(t) if t == kind) {
                    return Value::Bool(false);
                }
            }
            match r.get("flag_names") {
                Value::Strs(l) => Value::Bool(l.contains(&name)),
                _ => Value::Bool(false),
            }
        }
        Get::Mask(k, m) => match r.get(k) {
            Value::Num(v) if v >= 0.0 => Value::Num(((v as u64) & m) as f64),
            _ => Value::Null,
        },
    }
}

fn test(get: &Get, check: &Check, r: &dyn Record) -> bool {
    let v = value(get, r);
    match check {
        Check::Present => match v {
            Value::Null => false,
            Value::Bool(b) => b,
            Value::Num(n) => n != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::Strs(l) => !l.is_empty(),
        },
        Check::Cmp(op, lit) => cmp(&v, *op, lit),
        Check::In(lits) => lits.iter().any(|l| cmp(&v, Op::Eq, l)),
        Check::Contains(needle) => match v {
            Value::Str(s) => s.contains(needle.as_str()),
            Value::Strs(l) => l.iter().any(|s| s.contains(needle.as_str())),
            _ => false,
        },
        Check::Matches(re) => match v {
            Value::Str(s) => re.is_match(&s),
            Value::Strs(l) => l.iter().any(|s| re.is_match(s)),
            _ => false,
        },
    }
}

fn cmp(v: &Value<'_>, op: Op, lit: &Lit) -> bool {
    use std::cmp::Ordering;
    let ord = match (v, lit) {
        (Value::Num(a), Lit::Num(b)) => a.partial_cmp(b),
        (Value::Str(a), Lit::Str(b)) => Some(a.as_ref().cmp(b.as_str())),
        (Value::Bool(a), Lit::Bool(b)) => Some(a.cmp(b)),
        _ => None,
    };
    let Some(o) = ord else {
        return false;
    };
    match op {
        Op::Eq => o == Ordering::Equal,
        Op::Ne => o != Ordering::Equal,
        Op::Lt => o == Ordering::Less,
        Op::Le => o != Ordering::Greater,
        Op::Gt => o == Ordering::Greater,
        Op::Ge => o != Ordering::Less,
    }
}

/// A word as an error quotes it.
fn show(t: &Tok) -> String {
    match t {
        Tok::Word(w) => format!("\"{w}\""),
        Tok::Num(_) => "a number".into(),
        Tok::Dur(_) => "a duration".into(),
        Tok::Str(_) => "a string".into(),
        Tok::LParen => "\"(\"".into(),
        Tok::RParen => "\")\"".into(),
        Tok::LBrace => "\"{\"".into(),
        Tok::RBrace => "\"}\"".into(),
        Tok::Comma => "\",\"".into(),
        Tok::Cmp(op) => format!("\"{}\"", op.text()),
        Tok::AndAnd => "\"&&\"".into(),
        Tok::OrOr => "\"||\"".into(),
        Tok::Bang => "\"!\"".into(),
        Tok::Amp => "\"&\"".into(),
        Tok::Tilde => "\"~\"".into(),
        Tok::End => "the end".into(),
    }
}

fn keyword(t: &Tok, k: &str) -> bool {
    matches!(t, Tok::Word(w) if w.eq_ignore_ascii_case(k))
}

/// Words that are operators, never field names.
const KEYWORDS: [&str; 12] = [
    "and", "or", "not", "eq", "ne", "lt", "le", "gt", "ge", "contains", "matches", "in",
];

struct Parser {
    toks: Vec<Spanned>,
    i: usize,
    view: View,
    depth: usize,
    notes: Vec<String>,
}

impl Parser {
    fn cur(&self) -> &Spanned {
        // The last word is always End, and the parser never moves past it.
        &self.toks[self.i.min(self.toks.len() - 1)]
    }

    fn peek(&self) -> &Tok {
        &self.cur().tok
    }

    fn bump(&mut self) -> Spanned {
        let t = self.cur().clone();
        if self.i + 1 < self.toks.len() {
            self.i += 1;
        }
        t
    }

    fn is_or(&self) -> bool {
        matches!(self.peek(), Tok::OrOr) || keyword(self.peek(), "or")
    }

    fn is_and(&self) -> bool {
        matches!(self.peek(), Tok::AndAnd) || keyword(self.peek(), "and")
    }

    fn or(&mut self) -> Result<Node, Error> {
        let mut v = vec![self.and()?];
        while self.is_or() {
            self.bump();
            v.push(self.and()?);
        }
        Ok(if v.len() == 1 {
            v.swap_remove(0)
        } else {
            Node::Any(v)
        })
    }

    fn and(&mut self) -> Result<Node, Error> {
        let mut v = vec![self.unary()?];
        while self.is_and() {
            self.bump();
            v.push(self.unary()?);
        }
        Ok(if v.len() == 1 {
            v.swap_remove(0)
        } else {
            Node::All(v)
        })
    }

    fn enter(&mut self, t: &Spanned) -> Result<(), Error> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Error::new(
                t.start,
                t.len,
                format!("nested more than {MAX_DEPTH} deep (parentheses and not)"),
            ));
        }
        Ok(())
    }

    fn unary(&mut self) -> Result<Node, Error> {
        if matches!(self.peek(), Tok::Bang) || keyword(self.peek(), "not") {
            let t = self.bump();
            self.enter(&t)?;
            let inner = self.unary()?;
            self.depth -= 1;
            return Ok(Node::Not(Box::new(inner)));
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<Node, Error> {
        let t = self.bump();
        match &t.tok {
            Tok::LParen => {
                self.enter(&t)?;
                let inner = self.or()?;
                self.depth -= 1;
                let close = self.cur().clone();
                if close.tok != Tok::RParen {
                    return Err(Error::new(
                        close.start,
                        close.len,
                        format!(
                            "{} was unexpected here: the ( at column {} needs its )",
                            show(&close.tok),
                            t.start + 1
                        ),
                    ));
                }
                self.bump();
                Ok(inner)
            }
            Tok::Word(w) if !KEYWORDS.iter().any(|k| w.eq_ignore_ascii_case(k)) => {
                let w = w.clone();
                self.test(&w, &t)
            }
            Tok::End => Err(Error::new(
                t.start,
                1,
                "the filter ends here: a field name, ( or not was expected",
            )),
            other => Err(Error::new(
                t.start,
                t.len,
                format!(
                    "{} was unexpected here: a test starts with a field name (conn == 3), ( or not",
                    show(other)
                ),
            )),
        }
    }

    fn field(&self, name: &str, t: &Spanned) -> Result<&'static Field, Error> {
        if let Some(f) = fields::find(self.view, name) {
            return Ok(f);
        }
        let view = self.view.name();
        let mut msg = if fields::in_other(self.view, name) {
            format!("\"{name}\" is a field of the other view, not of {view}")
        } else {
            format!("\"{name}\" is not a field of {view}")
        };
        let close = fields::close(self.view, name);
        if close.is_empty() {
            msg.push_str(" (docs/filter.md lists the fields)");
        } else {
            msg.push_str(&format!("; did you mean {}?", close.join(", ")));
        }
        Err(Error::new(t.start, t.len, msg))
    }

    fn test(&mut self, name: &str, t: &Spanned) -> Result<Node, Error> {
        let f = self.field(name, t)?;
        let mut get = Get::Src(f.src);
        if self.peek() == &Tok::Amp {
            let amp = self.bump();
            let key = match (f.src, f.ty) {
                (Src::Key(k), Ty::Num) => k,
                _ => {
                    return Err(Error::new(
                        amp.start,
                        1,
                        format!("& masks a number field; {} is {}", f.name, f.ty.describe()),
                    ))
                }
            };
            let m = self.bump();
            match m.tok {
                Tok::Num(v) if v >= 0.0 && v.fract() == 0.0 && v <= u64::MAX as f64 => {
                    get = Get::Mask(key, v as u64);
                }
                _ => {
                    return Err(Error::new(
                        m.start,
                        m.len,
                        "& takes a whole number, a mask like 0x1",
                    ))
                }
            }
        }
        let ty = if matches!(get, Get::Mask(..)) {
            Ty::Num
        } else {
            f.ty
        };
        let op_tok = self.cur().clone();
        let op = match &op_tok.tok {
            Tok::Cmp(op) => Some(*op),
            Tok::Word(w) => match w.as_str() {
                "eq" => Some(Op::Eq),
                "ne" => Some(Op::Ne),
                "lt" => Some(Op::Lt),
                "le" => Some(Op::Le),
                "gt" => Some(Op::Gt),
                "ge" => Some(Op::Ge),
                _ => None,
            },
            _ => None,
        };
        if let Some(op) = op {
            self.bump();
            if !matches!(op, Op::Eq | Op::Ne)
                && matches!(ty, Ty::Bool | Ty::TypeCode | Ty::ErrorCode)
            {
                return Err(Error::new(
                    op_tok.start,
                    op_tok.len,
                    format!("{} is {}: compare it with == or !=", f.name, ty.describe()),
                ));
            }
            let lit = self.lit(f, ty, op)?;
            return Ok(Node::Test(get, Check::Cmp(op, lit)));
        }
        let text_op = |what: &str| -> Result<(), Error> {
            if matches!(ty, Ty::Str | Ty::List) {
                return Ok(());
            }
            Err(Error::new(
                op_tok.start,
                op_tok.len,
                format!("{what} is for text; {} is {}", f.name, ty.describe()),
            ))
        };
        if keyword(&op_tok.tok, "contains") {
            text_op("contains")?;
            self.bump();
            let v = self.bump();
            return match v.tok {
                Tok::Str(s) | Tok::Word(s) => Ok(Node::Test(get, Check::Contains(s))),
                other => Err(Error::new(
                    v.start,
                    v.len,
                    format!("contains takes text (\"...\"), not {}", show(&other)),
                )),
            };
        }
        if keyword(&op_tok.tok, "matches") || op_tok.tok == Tok::Tilde {
            text_op("matches")?;
            self.bump();
            let v = self.bump();
            let Tok::Str(pat) = v.tok else {
                return Err(Error::new(
                    v.start,
                    v.len,
                    format!(
                        "matches takes a regular expression in quotes (\"^/grpc\\\\.health\" or \
                         r\"^/grpc\\.health\"), not {}",
                        show(&v.tok)
                    ),
                ));
            };
            // tshark's matches ignores case; (?-i) turns that off.
            let re = regex::RegexBuilder::new(&pat)
                .case_insensitive(true)
                .size_limit(REGEX_LIMIT)
                .dfa_size_limit(REGEX_LIMIT)
                .build()
                .map_err(|e| {
                    let why = e.to_string();
                    let why = why.lines().last().unwrap_or("").trim();
                    let why = why.strip_prefix("error: ").unwrap_or(why);
                    Error::new(
                        v.start,
                        v.len,
                        format!("not a regular expression (Rust regex syntax): {why}"),
                    )
                })?;
            return Ok(Node::Test(get, Check::Matches(re)));
        }
        if keyword(&op_tok.tok, "in") {
            self.bump();
            let open = self.bump();
            if open.tok != Tok::LBrace {
                return Err(Error::new(
                    open.start,
                    open.len,
                    "in takes a set of values in braces: conn in {1 2 3}",
                ));
            }
            if matches!(ty, Ty::List) {
                return Err(Error::new(
                    op_tok.start,
                    op_tok.len,
                    format!("{} is a list: use contains", f.name),
                ));
            }
            let mut lits = Vec::new();
            loop {
                match self.peek() {
                    Tok::RBrace if !lits.is_empty() => {
                        self.bump();
                        break;
                    }
                    Tok::Comma if !lits.is_empty() => {
                        self.bump();
                    }
                    Tok::End | Tok::RBrace => {
                        let c = self.cur().clone();
                        return Err(Error::new(
                            c.start,
                            c.len,
                            "a set needs values and a closing }: conn in {1 2 3}",
                        ));
                    }
                    _ => lits.push(self.lit(f, ty, Op::Eq)?),
                }
            }
            return Ok(Node::Test(get, Check::In(lits)));
        }
        Ok(Node::Test(get, Check::Present))
    }

    /// The value after an operator, as field `f` (of type `ty`) takes it.
    fn lit(&mut self, f: &Field, ty: Ty, op: Op) -> Result<Lit, Error> {
        let v = self.bump();
        let name = f.name;
        let bad = |msg: String| Err(Error::new(v.start, v.len, msg));
        match (ty, &v.tok) {
            (Ty::Num, Tok::Num(n)) => Ok(Lit::Num(*n)),
            (Ty::Num, Tok::Dur(_)) => bad(format!("{name} is a number, not a duration")),
            (Ty::Dur { .. }, Tok::Dur(us)) => Ok(Lit::Num(*us)),
            (Ty::Dur { bare: true }, Tok::Num(n)) => Ok(Lit::Num(*n)),
            (Ty::Dur { bare: false }, Tok::Num(_)) => bad(format!(
                "{name} is a duration: give its unit (10ms, 1.5s, 250us), or compare the _us key \
                 with microseconds"
            )),
            (Ty::Str, Tok::Str(s) | Tok::Word(s)) => {
                let http = [
                    "GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "CONNECT",
                ];
                if matches!(f.src, Src::Key("method")) && http.contains(&s.as_str()) {
                    self.notes.push(format!(
                        "{name} is the :path; for the HTTP method: http_method == \"{s}\""
                    ));
                }
                Ok(Lit::Str(s.clone()))
            }
            (Ty::Str, Tok::Num(_) | Tok::Dur(_)) if name == "status" => bad(format!(
                "{name} is text (\"grpc-status 0\", \":status 200\"): quote the value, or \
                 compare http_status or grpc_status with a number"
            )),
            (Ty::Str, Tok::Num(_) | Tok::Dur(_)) => {
                bad(format!("{name} is text: quote the value (\"...\")"))
            }
            (Ty::Bool, Tok::Word(w)) if w.eq_ignore_ascii_case("true") => Ok(Lit::Bool(true)),
            (Ty::Bool, Tok::Word(w)) if w.eq_ignore_ascii_case("false") => Ok(Lit::Bool(false)),
            (Ty::Bool, Tok::Num(n)) if *n == 1.0 || *n == 0.0 => Ok(Lit::Bool(*n == 1.0)),
            (Ty::Bool, _) => bad(format!("{name} is true or false (or 1 or 0)")),
            (Ty::TypeCode, Tok::Num(n)) => match TYPES.get(whole(*n).unwrap_or(usize::MAX)) {
                Some(t) => Ok(Lit::Str((*t).to_string())),
                None => bad(format!(
                    "{name}: the frame types are 0 to 9 ({}); the JSON names every other type \
                     UNKNOWN (type == \"UNKNOWN\")",
                    TYPES.join(", ")
                )),
            },
            (Ty::TypeCode, Tok::Str(s) | Tok::Word(s)) => {
                let up = s.to_ascii_uppercase();
                if TYPES.contains(&up.as_str()) || up == "UNKNOWN" {
                    Ok(Lit::Str(up))
                } else {
                    bad(format!(
                        "unknown frame type \"{s}\" (0 to 9: {})",
                        TYPES.join(", ")
                    ))
                }
            }
            (Ty::ErrorCode, Tok::Num(n)) => match whole(*n) {
                Some(k) if k <= u32::MAX as usize => Ok(Lit::Str(
                    ERRORS
                        .get(k)
                        .map_or_else(|| format!("{k:#x}"), |e| (*e).to_string()),
                )),
                _ => bad(format!("{name} is a 32-bit error code (0 to 0xffffffff)")),
            },
            (Ty::ErrorCode, Tok::Str(s) | Tok::Word(s)) => {
                let up = s.to_ascii_uppercase();
                if ERRORS.contains(&up.as_str()) {
                    Ok(Lit::Str(up))
                } else if let Some(k) = s
                    .strip_prefix("0x")
                    .and_then(|h| u32::from_str_radix(h, 16).ok())
                {
                    Ok(Lit::Str(
                        ERRORS
                            .get(k as usize)
                            .map_or_else(|| format!("{k:#x}"), |e| (*e).to_string()),
                    ))
                } else {
                    bad(format!(
                        "unknown error code \"{s}\" (a number, or one of {})",
                        ERRORS.join(", ")
                    ))
                }
            }
            (Ty::List, _) => bad(format!(
                "{name} is a list: use {name} contains \"END_STREAM\", or {name} alone"
            )),
            (_, Tok::End) => bad(format!(
                "the filter ends here: a value was expected after {}",
                op.text()
            )),
            (_, other) => bad(format!(
                "{} was unexpected here: {name} is compared with {}",
                show(other),
                ty_value(ty)
            )),
        }
    }
}

/// What a value of `ty` looks like, for errors.
fn ty_value(ty: Ty) -> &'static str {
    match ty {
        Ty::Num => "a number (42, 1.5, 0x1f)",
        Ty::Dur { bare: true } => "a duration (10ms, 1.5s, 250us) or microseconds",
        Ty::Dur { bare: false } => "a duration (10ms, 1.5s, 250us)",
        Ty::Str => "text in quotes (\"...\")",
        Ty::Bool => "true or false",
        Ty::List => "contains \"...\"",
        Ty::TypeCode => "a frame type (0 to 9, or DATA, HEADERS, ...)",
        Ty::ErrorCode => "an error code (8, or CANCEL, ...)",
    }
}

/// `n` as an index when it is a whole number from 0.
fn whole(n: f64) -> Option<usize> {
    (n >= 0.0 && n.fract() == 0.0 && n <= u32::MAX as f64).then_some(n as usize)
}

#[cfg(test)]
mod tests;
