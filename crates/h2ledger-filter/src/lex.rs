//! The filter's words: field names, numbers, durations, strings, operators; each with the
//! columns it spans (characters, from 0), for the caret of an error.

use crate::Error;

#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// A field name, a keyword or a bare value (`RST_STREAM`, `true`).
    Word(String),
    /// A number as written (also hex, `0x1`), and its value.
    Num(f64),
    /// A number with a unit, in microseconds.
    Dur(f64),
    /// A quoted string, its escapes undone.
    Str(String),
    LParen,
    RParen,
    LBrace,
    RBrace,
    Comma,
    Cmp(Op),
    /// `&&`
    AndAnd,
    /// `||`
    OrOr,
    /// `!`
    Bang,
    /// `&`
    Amp,
    /// `~` (matches)
    Tilde,
    End,
}

/// A comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    pub fn text(self) -> &'static str {
        match self {
            Op::Eq => "==",
            Op::Ne => "!=",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
        }
    }
}

/// A word and its columns: `start`, and `len` characters.
#[derive(Clone, Debug)]
pub struct Spanned {
    pub tok: Tok,
    pub start: usize,
    pub len: usize,
}

fn word_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.'
}

/// The words of `text`, ending with [`Tok::End`]. Linear in the text.
pub fn lex(text: &str) -> Result<Vec<Spanned>, Error> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let n = chars.len();
    let at = |k: usize| chars.get(k).copied();
    while i < n {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        let two = |a: char, b: char| c == a && at(i + 1) == Some(b);
        let (tok, len) = if two('=', '=') {
            // tshark's `===` (all equal) is `==` on fields that have one value.
            (Tok::Cmp(Op::Eq), if at(i + 2) == Some('=') { 3 } else { 2 })
        } else if two('!', '=') {
            (Tok::Cmp(Op::Ne), if at(i + 2) == Some('=') { 3 } else { 2 })
        } else if two('<', '=') {
            (Tok::Cmp(Op::Le), 2)
        } else if two('>', '=') {
            (Tok::Cmp(Op::Ge), 2)
        } else if two('&', '&') {
            (Tok::AndAnd, 2)
        } else if two('|', '|') {
            (Tok::OrOr, 2)
        } else if two('~', '=') {
            return Err(Error::new(
                start,
                2,
                "~= (any not equal) is for fields with several values; use != here",
            ));
        } else {
            match c {
                '=' => {
                    return Err(Error::new(start, 1, "a single = does not compare: use =="));
                }
                '|' => {
                    return Err(Error::new(
                        start,
                        1,
                        "a single | is not an operator: use || or \"or\"",
                    ))
                }
                '<' => (Tok::Cmp(Op::Lt), 1),
                '>' => (Tok::Cmp(Op::Gt), 1),
                '!' => (Tok::Bang, 1),
                '&' => (Tok::Amp, 1),
                '~' => (Tok::Tilde, 1),
                '(' => (Tok::LParen, 1),
                ')' => (Tok::RParen, 1),
                '{' => (Tok::LBrace, 1),
                '}' => (Tok::RBrace, 1),
                ',' => (Tok::Comma, 1),
                '"' => string(&chars, i, false)?,
                'r' if at(i + 1) == Some('"') => {
                    let (t, l) = string(&chars, i + 1, true)?;
                    (t, l + 1)
                }
                c if c.is_ascii_digit()
                    || (c == '.' && at(i + 1).is_some_and(|d| d.is_ascii_digit()))
                    || (c == '-' && at(i + 1).is_some_and(|d| d.is_ascii_digit() || d == '.')) =>
                {
                    number(&chars, i)?
                }
                c if word_start(c) => {
                    let mut j = i;
                    while j < n && word_char(chars[j]) {
                        j += 1;
                    }
                    (Tok::Word(chars[i..j].iter().collect()), j - i)
                }
                c => {
                    let shown = if c.is_control() {
                        format!("U+{:04X}", c as u32)
                    } else {
                        format!("\"{c}\"")
                    };
                    return Err(Error::new(
                        start,
                        1,
                        format!("unexpected character {shown} (quote text values: \"...\")"),
                    ));
                }
            }
        };
        out.push(Spanned { tok, start, len });
        i += len;
    }
    out.push(Spanned {
        tok: Tok::End,
        start: n,
        len: 1,
    });
    Ok(out)
}

/// A string from the quote at `i`: escapes `\\ \" \n \r \t \0 \xNN` (ASCII), none when `raw`.
/// Returns the token and its length with both quotes.
fn string(chars: &[char], i: usize, raw: bool) -> Result<(Tok, usize), Error> {
    let mut s = String::new();
    let mut j = i + 1;
    loop {
        let Some(&c) = chars.get(j) else {
            let open = if raw { i - 1 } else { i };
            return Err(Error::new(open, 1, "this string has no closing quote (\")"));
        };
        match c {
            '"' => return Ok((Tok::Str(s), j + 1 - i)),
            '\\' if !raw => {
                let e = chars.get(j + 1).copied();
                let v =
                    match e {
                        Some('\\') => '\\',
                        Some('"') => '"',
                        Some('n') => '\n',
                        Some('r') => '\r',
                        Some('t') => '\t',
                        Some('0') => '\0',
                        Some('x') => {
                            let h: String = chars.iter().skip(j + 2).take(2).collect();
                            match u8::from_str_radix(&h, 16) {
                                Ok(b) if h.len() == 2 && b < 0x80 => {
                                    s.push(char::from(b));
                                    j += 4;
                                    continue;
                                }
                                _ => return Err(Error::new(
                                    j,
                                    2,
                                    "\\x takes two hex digits of an ASCII character (00 to 7f); \
                                     write other characters as they are",
                                )),
                            }
                        }
                        _ => {
                            return Err(Error::new(
                                j,
                                2,
                                "unknown escape: use \\\\ \\\" \\n \\r \\t \\0 or \\xNN (or a raw \
                             string, r\"...\", for a regular expression)",
                            ))
                        }
                    };
                s.push(v);
                j += 2;
            }
            c => {
                s.push(c);
                j += 1;
            }
        }
    }
}

/// A number from `i` (a sign, digits, a fraction, an exponent; or `0x` and hex digits), and a
/// unit right after it (`10ms`): then a duration in microseconds.
fn number(chars: &[char], i: usize) -> Result<(Tok, usize), Error> {
    let n = chars.len();
    let mut j = i;
    let neg = chars[j] == '-';
    if neg {
        j += 1;
    }
    if chars.get(j) == Some(&'0') && matches!(chars.get(j + 1), Some('x' | 'X')) {
        let mut k = j + 2;
        while k < n && chars[k].is_ascii_hexdigit() {
            k += 1;
        }
        let digits: String = chars[j + 2..k].iter().collect();
        let after_ok = chars.get(k).is_none_or(|c| !word_char(*c));
        return match u64::from_str_radix(&digits, 16) {
            Ok(v) if after_ok && !neg => Ok((Tok::Num(v as f64), k - i)),
            _ => Err(Error::new(
                i,
                k.max(i + 1) - i,
                "not a number: a hex number is 0x and up to 16 hex digits, no sign",
            )),
        };
    }
    // Mantissa digits, without the point, and the power of ten they are scaled by.
    let mut digits = String::new();
    let mut exp: i64 = 0;
    while j < n && chars[j].is_ascii_digit() {
        digits.push(chars[j]);
        j += 1;
    }
    if chars.get(j) == Some(&'.') && chars.get(j + 1).is_some_and(|c| c.is_ascii_digit()) {
        j += 1;
        while j < n && chars[j].is_ascii_digit() {
            digits.push(chars[j]);
            exp -= 1;
            j += 1;
        }
    }
    if matches!(chars.get(j), Some('e' | 'E')) {
        let mut k = j + 1;
        let sign = match chars.get(k) {
            Some('-') => {
                k += 1;
                -1
            }
            Some('+') => {
                k += 1;
                1
            }
            _ => 1,
        };
        let ds = k;
        while k < n && chars[k].is_ascii_digit() {
            k += 1;
        }
        if k > ds {
            let e: String = chars[ds..k].iter().collect();
            // Bounded: a longer exponent is infinity or zero anyway.
            let e: i64 = e.parse::<i64>().unwrap_or(100_000).min(100_000);
            exp += sign * e;
            j = k;
        }
    }
    let num_end = j;
    let mut k = j;
    while k < n && (chars[k].is_ascii_alphabetic() || chars[k] == 'µ') {
        k += 1;
    }
    let unit: String = chars[j..k].iter().collect();
    if chars.get(k).is_some_and(|c| word_char(*c)) {
        let mut e = k;
        while e < n && word_char(chars[e]) {
            e += 1;
        }
        return Err(Error::new(
            i,
            e - i,
            "not a number (a number is 42, 1.5, 1e6 or 0x1f; a duration 10ms, 1.5s, 250us)",
        ));
    }
    // Exact to the last digit: the decimal text, scaled by the unit, parsed once.
    let scaled = |shift: i64| -> f64 {
        let t = format!("{}{}e{}", if neg { "-" } else { "" }, digits, exp + shift);
        t.parse::<f64>().unwrap_or(f64::NAN)
    };
    if digits.is_empty() {
        return Err(Error::new(i, k.max(i + 1) - i, "not a number"));
    }
    if unit.is_empty() {
        return Ok((Tok::Num(scaled(0)), num_end - i));
    }
    let us = match unit.as_str() {
        "ns" => scaled(-3),
        "us" | "µs" => scaled(0),
        "ms" => scaled(3),
        "s" => scaled(6),
        "m" | "min" => scaled(6) * 60.0,
        "h" => scaled(6) * 3600.0,
        _ => {
            return Err(Error::new(
                j,
                k - j,
                format!(
                    "unknown unit \"{unit}\": durations take ns, us, ms, s, m or h (10ms, 1.5s)"
                ),
            ))
        }
    };
    if neg {
        return Err(Error::new(i, k - i, "a duration has no sign"));
    }
    Ok((Tok::Dur(us), k - i))
}
