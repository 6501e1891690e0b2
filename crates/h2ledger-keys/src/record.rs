//! The records the BPF program writes into the ring buffer, one per call of
//! `writeKeyLog(label, clientRandom, secret)`, and their decoding into [`KeyLine`]s.
//!
//! Layout (little-endian, [`RECORD_LEN`] bytes; the offsets are the constants below, which the
//! BPF program in `bpf::program` writes by):
//!
//! ```text
//!   0 u32 MAGIC           4 u32 kind            0: Go's writeKeyLog, 1: ssl_log_secret (C)
//!   8 u64 ktime_ns        CLOCK_MONOTONIC when the probe fired (bpf_ktime_get_ns)
//!  16 u64 pid_tgid        thread group id << 32 | thread id (bpf_get_current_pid_tgid)
//!  24 u64 label_ptr       the label's address in the process (for the fallback read)
//!  32 u64 label_len       the lengths as passed (RCX, RSI, R10), before capping
//!  40 u64 random_len
//!  48 u64 secret_len
//!  56 i32 label_rc        bpf_probe_read_user's result per copy: 0 or -errno
//!  60 i32 random_rc
//!  64 i32 secret_rc       68 u32 zero
//!  72 [u8; 64] label      at most LABEL_CAP bytes copied
//! 136 [u8; 32] random     at most RANDOM_CAP
//! 168 [u8; 64] secret     at most SECRET_CAP
//! 232 u64 ip              the probed instruction's address (kind 1; 0 for Go)
//! ```
//!
//! Kind 1 (OpenSSL's and BoringSSL's `ssl_log_secret`, issue 37): the label is a C string, so
//! `label_rc` is `bpf_probe_read_user_str`'s result (its length with the NUL, or -errno) and
//! `label_len` is unused; the random is read from the SSL object (32 bytes); when the label
//! could not be read, the fallback is asked for the label at `label_ptr - ip` (its place
//! relative to the function's entry, which the file gives) with length 0.
//!
//! Contract: the bytes come from the kernel but are read as untrusted: any input gives a
//! [`KeyLine`] or a counted rejection, never a panic (fuzzed: `fuzz/`, target `record`).
//! Memory is bounded: the duplicate filter remembers the last [`DEDUP_WINDOW`] lines.
#![forbid(unsafe_code)]

use std::collections::{HashSet, VecDeque};
use std::fmt;

/// The record's first word: `b"h2k1"`.
pub(crate) const MAGIC: u32 = u32::from_le_bytes(*b"h2k1");
/// Bytes of one ring buffer record, as the BPF program writes it.
pub const RECORD_LEN: usize = 240;
pub(crate) const OFF_KIND: usize = 4;
pub(crate) const OFF_IP: usize = 232;
/// `kind` of a record written at `ssl_log_secret` (OpenSSL, BoringSSL).
pub(crate) const KIND_SSL: u32 = 1;
pub(crate) const OFF_KTIME: usize = 8;
pub(crate) const OFF_PID_TGID: usize = 16;
pub(crate) const OFF_LABEL_PTR: usize = 24;
pub(crate) const OFF_LABEL_LEN: usize = 32;
pub(crate) const OFF_RANDOM_LEN: usize = 40;
pub(crate) const OFF_SECRET_LEN: usize = 48;
pub(crate) const OFF_LABEL_RC: usize = 56;
pub(crate) const OFF_RANDOM_RC: usize = 60;
pub(crate) const OFF_SECRET_RC: usize = 64;
pub(crate) const OFF_LABEL: usize = 72;
pub(crate) const OFF_RANDOM: usize = 136;
pub(crate) const OFF_SECRET: usize = 168;
/// The copy caps the issue set: 64 bytes of label, 32 of client random, 64 of secret.
pub(crate) const LABEL_CAP: usize = 64;
pub(crate) const RANDOM_CAP: usize = 32;
pub(crate) const SECRET_CAP: usize = 64;
/// A TLS client random is 32 bytes (RFC 8446 §4.1.2, RFC 5246 §7.4.1.2).
pub(crate) const RANDOM_LEN: usize = 32;
/// How many recent lines the duplicate filter remembers. Go calls writeKeyLog from the client
/// and the server of a connection when both are in the process (8 calls for 4 TLS 1.3
/// secrets), and a call whose stack must grow enters the function twice (runtime.morestack
/// restarts it); duplicates come within one handshake, so a window is enough.
pub const DEDUP_WINDOW: usize = 4096;

/// One secret, as a line of the `SSLKEYLOGFILE` format (NSS key log format:
/// `<label> <client random hex> <secret hex>`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KeyLine {
    /// `CLIENT_RANDOM` (TLS 1.2 master secret), `CLIENT_HANDSHAKE_TRAFFIC_SECRET`,
    /// `SERVER_HANDSHAKE_TRAFFIC_SECRET`, `CLIENT_TRAFFIC_SECRET_0`,
    /// `SERVER_TRAFFIC_SECRET_0`, ...: upper-case letters, digits and `_`.
    pub label: String,
    /// The ClientHello's random: the key log's key for the connection.
    pub client_random: [u8; RANDOM_LEN],
    /// The secret (48 bytes for a TLS 1.2 master secret, the hash's length for TLS 1.3).
    pub secret: Vec<u8>,
}

impl fmt::Display for KeyLine {
    /// The key log line, without its newline.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label)?;
        f.write_str(" ")?;
        for b in self.client_random {
            write!(f, "{b:02x}")?;
        }
        f.write_str(" ")?;
        for b in &self.secret {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// Where and when a secret was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Origin {
    /// CLOCK_MONOTONIC nanoseconds when the probe fired.
    pub ktime_ns: u64,
    /// Process (thread group) id and thread id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
}

/// A raw record, its fields read and not yet checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Record<'a> {
    pub(crate) origin: Origin,
    pub(crate) kind: u32,
    pub(crate) ip: u64,
    pub(crate) label_ptr: u64,
    pub(crate) label_len: u64,
    pub(crate) random_len: u64,
    pub(crate) secret_len: u64,
    pub(crate) label_rc: i32,
    pub(crate) random_rc: i32,
    pub(crate) secret_rc: i32,
    pub(crate) label: &'a [u8; LABEL_CAP],
    pub(crate) random: &'a [u8; RANDOM_CAP],
    pub(crate) secret: &'a [u8; SECRET_CAP],
}

/// Why a record gave no key line. Each is counted in [`Stats`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reject {
    /// Shorter than [`RECORD_LEN`] or without [`MAGIC`].
    NotARecord,
    /// The client random is not 32 bytes, or could not be read.
    BadRandom,
    /// The secret is empty, longer than [`SECRET_CAP`], or could not be read.
    BadSecret,
    /// The label could not be read (not even by the fallback), or is not a key log label.
    BadLabel,
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().expect("4 bytes"))
}
fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().expect("8 bytes"))
}

impl<'a> Record<'a> {
    /// Reads a record; more bytes than [`RECORD_LEN`] (ring buffer padding) are ignored.
    pub(crate) fn parse(b: &'a [u8]) -> Result<Self, Reject> {
        // One length check: every fixed offset below is inside it.
        let b = b.get(..RECORD_LEN).ok_or(Reject::NotARecord)?;
        if u32_at(b, 0) != MAGIC {
            return Err(Reject::NotARecord);
        }
        let pid_tgid = u64_at(b, OFF_PID_TGID);
        Ok(Record {
            origin: Origin {
                ktime_ns: u64_at(b, OFF_KTIME),
                pid: (pid_tgid >> 32) as u32,
                tid: pid_tgid as u32,
            },
            kind: u32_at(b, OFF_KIND),
            ip: u64_at(b, OFF_IP),
            label_ptr: u64_at(b, OFF_LABEL_PTR),
            label_len: u64_at(b, OFF_LABEL_LEN),
            random_len: u64_at(b, OFF_RANDOM_LEN),
            secret_len: u64_at(b, OFF_SECRET_LEN),
            label_rc: u32_at(b, OFF_LABEL_RC) as i32,
            random_rc: u32_at(b, OFF_RANDOM_RC) as i32,
            secret_rc: u32_at(b, OFF_SECRET_RC) as i32,
            label: b[OFF_LABEL..OFF_LABEL + LABEL_CAP].try_into().expect("cap"),
            random: b[OFF_RANDOM..OFF_RANDOM + RANDOM_CAP]
                .try_into()
                .expect("cap"),
            secret: b[OFF_SECRET..OFF_SECRET + SECRET_CAP]
                .try_into()
                .expect("cap"),
        })
    }

    /// The key line. `fallback(ptr, len)` reads the label from the process when the BPF copy
    /// failed (a label is a string constant, still there later; the page holding it may not
    /// have been resident when the probe fired, and a BPF program cannot fault it in).
    pub(crate) fn key_line(
        &self,
        fallback: impl FnOnce(u64, usize) -> Option<Vec<u8>>,
    ) -> Result<KeyLine, Reject> {
        if self.random_rc != 0 || self.random_len != RANDOM_LEN as u64 {
            return Err(Reject::BadRandom);
        }
        if self.secret_rc != 0 || self.secret_len == 0 || self.secret_len > SECRET_CAP as u64 {
            return Err(Reject::BadSecret);
        }
        if self.kind == KIND_SSL {
            // A C string: label_rc is its length with the NUL, or -errno.
            let label = match usize::try_from(self.label_rc) {
                Ok(n) if n > 1 && n <= LABEL_CAP && is_label(&self.label[..n - 1]) => {
                    self.label[..n - 1].to_vec()
                }
                _ => fallback(self.label_ptr.wrapping_sub(self.ip), 0).ok_or(Reject::BadLabel)?,
            };
            if !is_label(&label) {
                return Err(Reject::BadLabel);
            }
            return Ok(KeyLine {
                label: String::from_utf8(label).map_err(|_| Reject::BadLabel)?,
                client_random: *self.random,
                secret: self.secret[..self.secret_len as usize].to_vec(),
            });
        }
        if self.label_len == 0 || self.label_len > LABEL_CAP as u64 {
            return Err(Reject::BadLabel);
        }
        let len = self.label_len as usize;
        let label = if self.label_rc == 0 {
            self.label[..len].to_vec()
        } else {
            fallback(self.label_ptr, len)
                .filter(|l| l.len() == len)
                .ok_or(Reject::BadLabel)?
        };
        if !is_label(&label) {
            return Err(Reject::BadLabel);
        }
        Ok(KeyLine {
            label: String::from_utf8(label).map_err(|_| Reject::BadLabel)?,
            client_random: *self.random,
            secret: self.secret[..self.secret_len as usize].to_vec(),
        })
    }
}

/// A key log label: upper-case ASCII letters, digits and `_`, starting with a letter.
pub fn is_label(l: &[u8]) -> bool {
    l.first().is_some_and(u8::is_ascii_uppercase)
        && l.iter()
            .all(|&c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_')
}

/// Counts of what the decoder saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Records read from the ring buffer.
    pub records: u64,
    /// Key lines delivered (duplicates excluded).
    pub lines: u64,
    /// Records that repeated a line already delivered (client and server of one process, or a
    /// function entered twice).
    pub duplicates: u64,
    /// Labels read by the fallback (the BPF copy had failed).
    pub label_fallbacks: u64,
    /// Records rejected, by reason.
    pub not_a_record: u64,
    /// Client random not 32 bytes, or not readable.
    pub bad_random: u64,
    /// Secret empty, longer than 64 bytes, or not readable.
    pub bad_secret: u64,
    /// Label not readable (not even by the fallback), or not a key log label.
    pub bad_label: u64,
}

/// Turns records into key lines, once each.
#[derive(Debug, Default)]
pub struct Decoder {
    seen: HashSet<KeyLine>,
    order: VecDeque<KeyLine>,
    stats: Stats,
}

impl Decoder {
    /// A decoder that has delivered nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes one ring buffer record; `Some` for a key line not delivered before.
    pub fn push(
        &mut self,
        bytes: &[u8],
        fallback: impl FnOnce(u64, usize) -> Option<Vec<u8>>,
    ) -> Option<(KeyLine, Origin)> {
        self.stats.records += 1;
        let mut used_fallback = false;
        let r = Record::parse(bytes).and_then(|r| {
            let line = r.key_line(|p, n| {
                used_fallback = true;
                fallback(p, n)
            })?;
            Ok((line, r.origin))
        });
        let (line, origin) = match r {
            Ok(x) => x,
            Err(why) => {
                *match why {
                    Reject::NotARecord => &mut self.stats.not_a_record,
                    Reject::BadRandom => &mut self.stats.bad_random,
                    Reject::BadSecret => &mut self.stats.bad_secret,
                    Reject::BadLabel => &mut self.stats.bad_label,
                } += 1;
                return None;
            }
        };
        if used_fallback {
            self.stats.label_fallbacks += 1;
        }
        if self.seen.contains(&line) {
            self.stats.duplicates += 1;
            return None;
        }
        if self.order.len() == DEDUP_WINDOW {
            if let Some(old) = self.order.pop_front() {
                self.seen.remove(&old);
            }
        }
        self.seen.insert(line.clone());
        self.order.push_back(line.clone());
        self.stats.lines += 1;
        Some((line, origin))
    }

    /// What it saw so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }
}

/// Builds a record as the `ssl_log_secret` program writes it (kind 1): the label as a C
/// string read in full (`label_rc` its length with the NUL), `ip` the probe's address.
pub fn encode_ssl_record(
    origin: Origin,
    ip: u64,
    label: &[u8],
    random: &[u8; 32],
    secret: &[u8],
) -> Vec<u8> {
    let mut b = encode_record(origin, label, random, secret);
    b[OFF_KIND..OFF_KIND + 4].copy_from_slice(&KIND_SSL.to_le_bytes());
    b[OFF_IP..OFF_IP + 8].copy_from_slice(&ip.to_le_bytes());
    b[OFF_LABEL_LEN..OFF_LABEL_LEN + 8].fill(0);
    let rc = (label.len().min(LABEL_CAP - 1) + 1) as i32;
    b[OFF_LABEL_RC..OFF_LABEL_RC + 4].copy_from_slice(&rc.to_le_bytes());
    if label.len() < LABEL_CAP {
        b[OFF_LABEL + label.len()] = 0;
    }
    b
}

/// Builds a record as the BPF program writes it (tests, fuzz seeds, documentation).
pub fn encode_record(origin: Origin, label: &[u8], random: &[u8], secret: &[u8]) -> Vec<u8> {
    let mut b = vec![0u8; RECORD_LEN];
    b[..4].copy_from_slice(&MAGIC.to_le_bytes());
    b[OFF_KTIME..OFF_KTIME + 8].copy_from_slice(&origin.ktime_ns.to_le_bytes());
    let pid_tgid = (u64::from(origin.pid) << 32) | u64::from(origin.tid);
    b[OFF_PID_TGID..OFF_PID_TGID + 8].copy_from_slice(&pid_tgid.to_le_bytes());
    for (off, len) in [
        (OFF_LABEL_LEN, label.len()),
        (OFF_RANDOM_LEN, random.len()),
        (OFF_SECRET_LEN, secret.len()),
    ] {
        b[off..off + 8].copy_from_slice(&(len as u64).to_le_bytes());
    }
    for (off, cap, v) in [
        (OFF_LABEL, LABEL_CAP, label),
        (OFF_RANDOM, RANDOM_CAP, random),
        (OFF_SECRET, SECRET_CAP, secret),
    ] {
        let n = v.len().min(cap);
        b[off..off + n].copy_from_slice(&v[..n]);
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    const O: Origin = Origin {
        ktime_ns: 5,
        pid: 7,
        tid: 9,
    };

    fn none(_: u64, _: usize) -> Option<Vec<u8>> {
        None
    }

    #[test]
    fn a_record_becomes_a_key_log_line() {
        let rec = encode_record(O, b"CLIENT_TRAFFIC_SECRET_0", &[0xab; 32], &[1, 2, 0xff]);
        let r = Record::parse(&rec).unwrap();
        assert_eq!(r.origin, O);
        let line = r.key_line(none).unwrap();
        assert_eq!(
            line.to_string(),
            format!("CLIENT_TRAFFIC_SECRET_0 {} 0102ff", "ab".repeat(32))
        );
    }

    #[test]
    fn rejections() {
        let good = encode_record(O, b"CLIENT_RANDOM", &[1; 32], &[2; 48]);
        assert_eq!(
            Record::parse(&good[..RECORD_LEN - 1]).unwrap_err(),
            Reject::NotARecord
        );
        let mut bad = good.clone();
        bad[0] ^= 1;
        assert_eq!(Record::parse(&bad).unwrap_err(), Reject::NotARecord);
        let r = |b: &[u8]| Record::parse(b).unwrap().key_line(none).unwrap_err();
        assert_eq!(
            r(&encode_record(O, b"CLIENT_RANDOM", &[1; 31], &[2; 48])),
            Reject::BadRandom
        );
        assert_eq!(
            r(&encode_record(O, b"CLIENT_RANDOM", &[1; 32], &[])),
            Reject::BadSecret
        );
        assert_eq!(
            r(&encode_record(O, b"CLIENT_RANDOM", &[1; 32], &[2; 65])),
            Reject::BadSecret
        );
        assert_eq!(
            r(&encode_record(O, b"client random", &[1; 32], &[2; 48])),
            Reject::BadLabel
        );
        assert_eq!(
            r(&encode_record(O, b"", &[1; 32], &[2; 48])),
            Reject::BadLabel
        );
        let mut failed = good.clone();
        failed[OFF_SECRET_RC..OFF_SECRET_RC + 4].copy_from_slice(&(-14i32).to_le_bytes());
        assert_eq!(r(&failed), Reject::BadSecret);
    }

    #[test]
    fn label_fallback_and_duplicates() {
        let mut rec = encode_record(O, b"SERVER_TRAFFIC_SECRET_0", &[3; 32], &[4; 32]);
        rec[OFF_LABEL_RC..OFF_LABEL_RC + 4].copy_from_slice(&(-14i32).to_le_bytes());
        rec[OFF_LABEL..OFF_LABEL + LABEL_CAP].fill(0);
        let mut d = Decoder::new();
        let fb = |_: u64, n: usize| Some(b"SERVER_TRAFFIC_SECRET_0"[..n].to_vec());
        let (line, origin) = d.push(&rec, fb).unwrap();
        assert_eq!(line.label, "SERVER_TRAFFIC_SECRET_0");
        assert_eq!(origin.pid, 7);
        assert!(d.push(&rec, fb).is_none());
        assert!(d.push(&rec, none).is_none()); // the fallback fails: rejected
        let s = d.stats();
        assert_eq!(
            (
                s.records,
                s.lines,
                s.duplicates,
                s.label_fallbacks,
                s.bad_label
            ),
            (3, 1, 1, 2, 1)
        );
    }

    #[test]
    fn ssl_records_read_a_c_string_label_or_ask_relative_to_the_probe() {
        let rec = encode_ssl_record(O, 0x7f00_0003_a1c0, b"CLIENT_RANDOM", &[5; 32], &[6; 48]);
        let l = Record::parse(&rec).unwrap().key_line(none).unwrap();
        assert_eq!(l.label, "CLIENT_RANDOM");
        assert_eq!(l.secret.len(), 48);
        // The label page was not resident: asked at label_ptr - ip.
        let mut rec = rec;
        rec[OFF_LABEL_RC..OFF_LABEL_RC + 4].copy_from_slice(&(-14i32).to_le_bytes());
        rec[OFF_LABEL_PTR..OFF_LABEL_PTR + 8].copy_from_slice(&0x7f00_0008_949bu64.to_le_bytes());
        let asked = std::cell::Cell::new(None);
        let l = Record::parse(&rec)
            .unwrap()
            .key_line(|p, n| {
                asked.set(Some((p, n)));
                Some(b"CLIENT_RANDOM".to_vec())
            })
            .unwrap();
        assert_eq!(l.label, "CLIENT_RANDOM");
        assert_eq!(asked.get(), Some((0x8949b - 0x3a1c0, 0)));
        assert_eq!(
            Record::parse(&rec).unwrap().key_line(none),
            Err(Reject::BadLabel)
        );
        // A label_rc past the buffer, or a string that is no label: the fallback decides.
        rec[OFF_LABEL_RC..OFF_LABEL_RC + 4].copy_from_slice(&1000i32.to_le_bytes());
        assert_eq!(
            Record::parse(&rec).unwrap().key_line(none),
            Err(Reject::BadLabel)
        );
    }

    #[test]
    fn the_duplicate_window_is_bounded() {
        let mut d = Decoder::new();
        for i in 0..(DEDUP_WINDOW as u32 + 10) {
            let mut random = [0u8; 32];
            random[..4].copy_from_slice(&i.to_le_bytes());
            assert!(d
                .push(&encode_record(O, b"CLIENT_RANDOM", &random, &[1; 48]), none)
                .is_some());
        }
        assert_eq!(d.seen.len(), DEDUP_WINDOW);
        assert_eq!(d.order.len(), DEDUP_WINDOW);
    }
}
