//! The layer's state and its public face: [`Config`], [`Tls`] (every connection, the totals,
//! the pending warnings, the plaintext being handed on) and [`Layer`], the borrowing
//! [`Sink`] that the modules above this one implement.

use std::collections::VecDeque;

use h2ledger_tcp::{Dir, Nanos, Sink, Write};

use super::conn::Conns;
use super::report::TlsReport;
use crate::keylog::KeyLog;

/// Memory bounds and live behaviour (docs/ledger.md, "Memory bounds").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Whole records held per direction while their keys are unknown (the ServerHello not
    /// seen yet, or, when `wait_for_keys`, a key log that has not caught up). Beyond this the
    /// held records are dropped as undecrypted and the direction is given up (counted).
    pub max_held_bytes_per_dir: usize,
    /// The same, over all connections together: a direction that would hold more gives up
    /// the same way. Without it, `max_connections` open connections could each hold the
    /// per-direction bound.
    pub max_held_bytes_total: usize,
    /// Live capture: the key log grows while we watch. A connection whose client random has
    /// no key yet holds its records until the key arrives ([`Layer::add_keys`]) or
    /// `key_wait` of capture time passes. Replay: `false`, a missing key is final at once.
    pub wait_for_keys: bool,
    /// With `wait_for_keys`: how long, in capture time, a connection waits for a missing
    /// key (from its start, or from the Finished whose application secret was missing); the
    /// first record to be held after that gives the wait up.
    pub key_wait: Nanos,
    /// Per-connection summaries kept for the report; later connections only count in totals.
    /// The default is the ledger's own list (`h2ledger_core::tally::MAX_CONN_DETAIL`).
    pub max_conn_reports: usize,
    /// Warnings waiting for [`Tls::take_warnings`]; later ones are only counted.
    pub max_pending_warnings: usize,
    /// Live secrets come from these processes (h2ledger's `--keys-from`, e.g. `pid 1234
    /// (server)`), attached before the capture began: the no-key and no-handshake warnings
    /// say so instead of asking for a key log.
    pub keys_from: Option<String>,
    /// The capture comes from standard input or a pipe, whose pcapng secrets blocks are not
    /// read ahead: the no-key warning says so.
    pub piped: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_held_bytes_per_dir: 1 << 20,
            max_held_bytes_total: 16 << 20,
            wait_for_keys: false,
            key_wait: 10_000_000_000,
            max_conn_reports: 1_000,
            max_pending_warnings: 10_000,
            keys_from: None,
            piped: false,
        }
    }
}

/// The TLS state of every connection. Use it as a [`Sink`] in front of the ledger with
/// [`Tls::layer`] (borrowing) or [`TlsLayer`](super::TlsLayer) (owning).
pub struct Tls {
    pub(crate) cfg: Config,
    pub(crate) keylog: KeyLog,
    pub(crate) conns: Conns,
    /// Totals, and the summaries of the connections that ended.
    pub(crate) report: TlsReport,
    pub(crate) warnings: Warnings,
    /// Connections holding records for a key not in the key log yet.
    pub(crate) waiting: usize,
    /// Bytes held in all connections' directions (see [`Config::max_held_bytes_total`]).
    pub(crate) held_total: usize,
    /// Plaintext of the records one write (TCP segment) completed, decrypted in place here and
    /// handed to the inner sink in one `data` call: the ledger sees a write's bytes at once,
    /// as on cleartext, instead of one call per record. Never holds bytes between two calls
    /// of the layer; at most one data call's records.
    pub(crate) out: Vec<u8>,
    /// Whose bytes `out` holds: connection, direction, write.
    pub(crate) out_to: Option<(u32, Dir, Write)>,
}

/// Warnings waiting for [`Tls::take_warnings`], bounded by [`Config::max_pending_warnings`].
pub(crate) struct Warnings {
    pending: VecDeque<(&'static str, String)>,
    max: usize,
    /// Warnings beyond the bound.
    dropped: u64,
}

impl Warnings {
    /// Keeps a warning of `kind`, or counts it when too many wait.
    pub(crate) fn push(&mut self, kind: &'static str, msg: String) {
        if self.pending.len() < self.max {
            self.pending.push_back((kind, msg));
        } else {
            self.dropped += 1;
        }
    }
}

/// A [`Sink`] that decrypts in front of `inner` ([`Tls::layer`]).
pub struct Layer<'a, S: Sink> {
    pub(crate) tls: &'a mut Tls,
    pub(crate) inner: &'a mut S,
}

impl Tls {
    /// No connection yet; `keylog`: the secrets known so far (live, more come with
    /// [`Layer::add_keys`]).
    pub fn new(cfg: Config, keylog: KeyLog) -> Self {
        let report = TlsReport {
            keylog: keylog.stats,
            keylog_randoms: keylog.len() as u64,
            ..TlsReport::default()
        };
        Tls {
            warnings: Warnings {
                pending: VecDeque::new(),
                max: cfg.max_pending_warnings,
                dropped: 0,
            },
            cfg,
            keylog,
            conns: Conns::default(),
            report,
            waiting: 0,
            held_total: 0,
            out: Vec::new(),
            out_to: None,
        }
    }

    /// The layer as a [`Sink`] in front of `inner`.
    pub fn layer<'a, S: Sink>(&'a mut self, inner: &'a mut S) -> Layer<'a, S> {
        Layer { tls: self, inner }
    }

    /// The input itself carries secrets (a pcapng's Decryption Secrets Blocks, read where they
    /// lie): a block may come after records it decrypts (a `--keys-from -w` file whose probed
    /// server derived a secret after the packet that needs it reached the file; decision 412),
    /// so from now on a connection without its key waits for it as live does (within
    /// `key_wait` of capture time and the held bytes' bounds) instead of being given up at once.
    pub fn expect_keys_in_input(&mut self) {
        self.cfg.wait_for_keys = true;
    }

    /// Whether a connection holds records for a client random the key log does not have yet
    /// (live: re-read the key log file and call [`Layer::add_keys`]).
    pub fn waiting_for_keys(&self) -> bool {
        self.waiting > 0
    }

    /// Warnings since the last call, as (kind, message). Kinds: `tls-no-key`,
    /// `tls-no-handshake`, `tls-truncated-handshake`, `tls-auth-failure`, `tls-gap`,
    /// `tls-bad-record`, `tls-unsupported`, `tls-held-limit`.
    pub fn take_warnings(&mut self) -> impl Iterator<Item = (&'static str, String)> + '_ {
        self.warnings.pending.drain(..)
    }

    /// Whether [`Tls::take_warnings`] has something.
    pub fn has_warnings(&self) -> bool {
        !self.warnings.pending.is_empty()
    }

    /// Totals and per-connection summaries so far (connections still open are not in it).
    pub fn report(&self) -> TlsReport {
        let mut r = self.report.clone();
        r.keylog = self.keylog.stats;
        r.keylog_randoms = self.keylog.len() as u64;
        r
    }
}
