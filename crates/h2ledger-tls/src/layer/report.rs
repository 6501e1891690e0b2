//! What the layer reports: [`TlsReport`] (the JSON `tls` object: totals and one
//! [`ConnReport`] per connection), each connection's [`Status`], decided once when it ends,
//! and the warning that explains it. The fields are declared in the published JSON order
//! (alphabetical): serde writes them as declared.

use h2ledger_tcp::{ConnMeta, Dir};
use serde::Serialize;

use super::conn::{label, TlsConn};
use crate::crypto;
use crate::keylog::{to_hex, KeyLog, KeyLogStats};

/// How to make an application write a key log; part of every no-key warning.
pub const KEYLOG_HOWTO: &str = "pass --keylog FILE, written by the application: \
SSLKEYLOGFILE=FILE for curl, OpenSSL, NSS (Firefox, Chrome) and rustls' KeyLogFile, \
tls.Config.KeyLogWriter in Go, SSLContext.keylog_filename in Python";

/// What became of one TLS connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Application data decrypted and handed to the ledger.
    Decrypted,
    /// The key log has no (usable) secret for this connection's client random.
    NoKey,
    /// ALPN chose something other than `h2` (or nothing): counted as TLS, not given to the ledger.
    NotH2,
    /// The capture began after the handshake: there is no client random to look a key up by.
    NoHandshake,
    /// The handshake was cut short (ClientHello or ServerHello never complete).
    TruncatedHandshake,
    /// A version or cipher suite this crate does not decrypt.
    Unsupported,
    /// Every decryption attempt failed authentication.
    AuthFailed,
}

impl Status {
    /// The name the JSON uses (`"no-key"`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Status::Decrypted => "decrypted",
            Status::NoKey => "no-key",
            Status::NotH2 => "not-h2",
            Status::NoHandshake => "no-handshake",
            Status::TruncatedHandshake => "truncated-handshake",
            Status::Unsupported => "unsupported",
            Status::AuthFailed => "auth-failed",
        }
    }
}

/// One TLS connection, for the report. Per-side arrays are (client, server).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ConnReport {
    /// The ALPN protocol the server chose; `None` when not seen.
    pub alpn: Option<String>,
    /// The ALPN protocols the client offered.
    pub alpn_offered: Vec<String>,
    /// Records that failed authentication.
    pub auth_failures: u64,
    /// The cipher suite the server chose, by its IANA name (hex when unknown).
    pub cipher: Option<String>,
    /// The ClientHello's sender and receiver ("ip:port"); the first packet's when no
    /// ClientHello was seen.
    pub client: String,
    /// The ClientHello's random (hex), which the key log is looked up by.
    pub client_random: Option<String>,
    /// Record bytes per side that could not be decrypted (no key, after a failure or a gap).
    pub encrypted_bytes: [u64; 2],
    /// The connection's id (the ledger's connection numbering).
    pub id: u32,
    /// KeyUpdates followed (TLS 1.3).
    pub key_updates: u64,
    /// Application data bytes decrypted per side (client, server).
    pub plaintext_bytes: [u64; 2],
    /// Records per side (client, server).
    pub records: [u64; 2],
    /// The server's address ("ip:port").
    pub server: String,
    /// What became of it.
    pub status: Status,
    /// The version the server chose ("TLS 1.3", "TLS 1.2", ...).
    pub version: Option<&'static str>,
}

/// Totals over every TLS connection, and the per-connection summaries.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TlsReport {
    /// Connections whose every decryption attempt failed ([`Status::AuthFailed`]).
    pub auth_failed: u64,
    /// Records that failed authentication.
    pub auth_failures: u64,
    /// TCP connections that carried TLS.
    pub connections: u64,
    /// Connections decrypted ([`Status::Decrypted`]).
    pub decrypted: u64,
    /// Times a direction's held records hit [`Config::max_held_bytes_per_dir`] or
    /// [`Config::max_held_bytes_total`].
    ///
    /// [`Config::max_held_bytes_per_dir`]: crate::Config::max_held_bytes_per_dir
    /// [`Config::max_held_bytes_total`]: crate::Config::max_held_bytes_total
    pub held_limit_hits: u64,
    /// KeyUpdates followed (TLS 1.3).
    pub key_updates: u64,
    /// Key log lines read (key lines, skipped lines).
    pub keylog: KeyLogStats,
    /// Client randoms the key log has secrets for.
    pub keylog_randoms: u64,
    /// Connections whose capture began after the handshake ([`Status::NoHandshake`]).
    pub no_handshake: u64,
    /// Connections whose ALPN is not `h2` ([`Status::NotH2`]).
    pub not_h2: u64,
    /// One summary per connection that ended, in the order they ended.
    pub per_connection: Vec<ConnReport>,
    /// Connections beyond [`Config::max_conn_reports`], in the totals only.
    ///
    /// [`Config::max_conn_reports`]: crate::Config::max_conn_reports
    pub per_connection_dropped: u64,
    /// TLS records seen (both sides).
    pub records: u64,
    /// Connections whose handshake was cut short ([`Status::TruncatedHandshake`]).
    pub truncated_handshake: u64,
    /// Connections with a version or suite not decrypted ([`Status::Unsupported`]).
    pub unsupported: u64,
    /// Connections the key log has no key for ([`Status::NoKey`]).
    pub without_key: u64,
    /// Of those, connections whose ALPN was h2 (chosen, or offered when the ServerHello is
    /// not seen): HTTP/2 a key would show.
    pub without_key_h2: u64,
}

fn name_of(p: &[u8]) -> String {
    String::from_utf8_lossy(p).into_owned()
}

impl TlsConn {
    /// What became of the connection, once it is over: the first that holds of these.
    fn status(&self) -> Status {
        let alpn_chosen = self.alpn.as_ref().and_then(|a| a.as_deref());
        if self.mid_stream {
            Status::NoHandshake
        } else if self.client_random.is_none() || self.sh.is_none() {
            Status::TruncatedHandshake
        } else if self.unsupported {
            Status::Unsupported
        } else if self.alpn.is_some() && alpn_chosen != Some(b"h2") {
            Status::NotH2
        } else if self.keys.missing() {
            Status::NoKey
        } else if self.decrypted_any {
            Status::Decrypted
        } else if self.auth_failures > 0 {
            Status::AuthFailed
        } else {
            Status::NoKey
        }
    }
}

impl TlsReport {
    /// Folds connection `t` (over) into the totals and, room permitting, the per-connection
    /// summaries. Returns the warning that says what became of it, if one is due (no key,
    /// no handshake, truncated, unsupported; an authentication failure was said when it
    /// happened).
    pub(crate) fn fold(
        &mut self,
        meta: &ConnMeta,
        t: &TlsConn,
        keylog: &KeyLog,
        keys_from: Option<&str>,
        piped: bool,
        max_conn_reports: usize,
    ) -> Option<(&'static str, String)> {
        let status = t.status();
        let warning = self.count(status, meta, t, keylog, keys_from, piped);
        if self.per_connection.len() < max_conn_reports {
            self.per_connection.push(conn_report(meta, t, status));
        } else {
            self.per_connection_dropped += 1;
        }
        warning
    }

    /// Counts a connection's status; its warning, if due.
    fn count(
        &mut self,
        status: Status,
        meta: &ConnMeta,
        t: &TlsConn,
        keylog: &KeyLog,
        keys_from: Option<&str>,
        piped: bool,
    ) -> Option<(&'static str, String)> {
        let lbl = label(meta, t.client);
        let h2_offered = t.alpn_offered.iter().any(|p| p == b"h2");
        let alpn_chosen = t.alpn.as_ref().and_then(|a| a.as_deref());
        let encrypted = t.dirs.fwd.encrypted + t.dirs.rev.encrypted;
        let alpn_text = match (alpn_chosen, h2_offered) {
            (Some(p), _) => format!("ALPN {}", name_of(p)),
            (None, true) => "ALPN h2 offered".to_string(),
            (None, false) => "no ALPN h2".to_string(),
        };
        match status {
            Status::Decrypted => {
                self.decrypted += 1;
                None
            }
            Status::NotH2 => {
                self.not_h2 += 1;
                None
            }
            Status::NoKey => {
                self.without_key += 1;
                let random = t.client_random.map(|r| to_hex(&r)).unwrap_or_default();
                let why = if let Some(src) = keys_from {
                    format!(
                        "no secret for client random {random} came from {src} (neither end of \
                         the connection is that process, or its secret was lost); the key log \
                         has {} client randoms",
                        keylog.len()
                    )
                } else if keylog.is_empty() && piped {
                    "no key log given (a pcapng's Decryption Secrets Blocks, if it has any, are \
                     read only from a file, not from standard input or a pipe)"
                        .to_string()
                } else if keylog.is_empty() {
                    "no key log given".to_string()
                } else {
                    format!(
                        "the key log ({} client randoms) has no usable secret for client random {random}",
                        keylog.len()
                    )
                };
                let howto = match keys_from {
                    Some(_) => String::new(),
                    None => format!("; {KEYLOG_HOWTO}"),
                };
                let h2 = alpn_chosen == Some(b"h2") || (alpn_chosen.is_none() && h2_offered);
                self.without_key_h2 += u64::from(h2);
                h2.then(|| {
                    (
                        "tls-no-key",
                        format!(
                            "{lbl}: TLS with {alpn_text} seen, {encrypted} bytes encrypted; {why}{howto}"
                        ),
                    )
                })
            }
            Status::NoHandshake => {
                self.no_handshake += 1;
                let msg = match keys_from {
                    Some(src) => format!(
                        "{lbl}: TLS records seen ({encrypted} bytes) but its handshake came \
                         before h2ledger attached to {src} and began capturing: no secret can \
                         be had for it, so it is not decrypted"
                    ),
                    None => format!(
                        "{lbl}: TLS records seen ({encrypted} bytes) but the capture began after \
                         the handshake: without the ClientHello's random no key can be found, \
                         so there is no way to decrypt it"
                    ),
                };
                Some(("tls-no-handshake", msg))
            }
            Status::TruncatedHandshake => {
                self.truncated_handshake += 1;
                let what = if t.client_random.is_none() {
                    "ClientHello"
                } else {
                    "ServerHello"
                };
                Some((
                    "tls-truncated-handshake",
                    format!(
                        "{lbl}: TLS handshake cut short (no complete {what}); {encrypted} bytes \
                         not decrypted"
                    ),
                ))
            }
            Status::Unsupported => {
                self.unsupported += 1;
                let sh = t.sh.as_ref().expect("unsupported needs a ServerHello");
                Some((
                    "tls-unsupported",
                    format!(
                        "{lbl}: TLS version {:#06x} with cipher suite {:#06x} is not decrypted \
                         (supported: TLS 1.3, and TLS 1.2 AES-GCM / ChaCha20-Poly1305)",
                        sh.version, sh.cipher
                    ),
                ))
            }
            Status::AuthFailed => {
                self.auth_failed += 1;
                None // already warned when it failed
            }
        }
    }
}

/// The summary of connection `t`, sides by the ClientHello (the first packet's sender is
/// the client when there was none).
fn conn_report(meta: &ConnMeta, t: &TlsConn, status: Status) -> ConnReport {
    let (cd, sd) = match t.client {
        Some(Dir::Rev) => (&t.dirs.rev, &t.dirs.fwd),
        _ => (&t.dirs.fwd, &t.dirs.rev),
    };
    let (ca, sa) = match t.client {
        Some(Dir::Rev) => (meta.first_dst, meta.first_src),
        _ => (meta.first_src, meta.first_dst),
    };
    ConnReport {
        id: meta.id.0,
        client: ca.to_string(),
        server: sa.to_string(),
        version: t.sh.as_ref().map(|s| match s.version {
            0x0304 => "TLS 1.3",
            0x0303 => "TLS 1.2",
            0x0302 => "TLS 1.1",
            0x0301 => "TLS 1.0",
            _ => "other",
        }),
        cipher: t.sh.as_ref().map(|s| match crypto::suite(s.cipher) {
            Some(su) => su.name.to_string(),
            None => format!("{:#06x}", s.cipher),
        }),
        alpn: t.alpn.as_ref().and_then(|a| a.as_deref()).map(name_of),
        alpn_offered: t.alpn_offered.iter().map(|p| name_of(p)).collect(),
        status,
        client_random: t.client_random.map(|r| to_hex(&r)),
        records: [cd.records, sd.records],
        plaintext_bytes: [cd.plaintext, sd.plaintext],
        encrypted_bytes: [cd.encrypted, sd.encrypted],
        auth_failures: t.auth_failures,
        key_updates: t.key_updates,
    }
}
