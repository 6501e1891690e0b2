//! The NSS key log format (`SSLKEYLOGFILE`), as written by OpenSSL, BoringSSL, NSS, rustls'
//! `KeyLogFile`, Go's `tls.Config.KeyLogWriter` and Python's `SSLContext.keylog_filename`.
//!
//! One secret per line: `LABEL <client_random hex> <secret hex>`. Lines that are not key lines
//! (comments, blank lines, unknown labels, bad hex) are skipped and counted, never an error.
//! Labels: `CLIENT_RANDOM` (TLS 1.2 master secret, 48 bytes) and the TLS 1.3 secrets
//! `CLIENT_HANDSHAKE_TRAFFIC_SECRET`, `SERVER_HANDSHAKE_TRAFFIC_SECRET`,
//! `CLIENT_TRAFFIC_SECRET_0`, `SERVER_TRAFFIC_SECRET_0`; `EXPORTER_SECRET`,
//! `EARLY_EXPORTER_SECRET` and `CLIENT_EARLY_TRAFFIC_SECRET` are key lines that decryption does
//! not need.
//!
//! Also Wireshark's own TLS 1.2 form, `RSA Session-ID:<session id hex> Master-Key:<master
//! secret hex>` (what Wireshark's "Export TLS Session Keys" writes; its ssl-utils.c
//! `ssl_load_keyfile` reads it), looked up by the ServerHello's session id when the client
//! random has no master secret.

use std::collections::HashMap;

/// Secrets longer than this are not key lines (SHA-384 secrets are 48 bytes).
const MAX_SECRET: usize = 64;

/// The secrets known for one client random.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Secrets {
    /// TLS 1.2 master secret (`CLIENT_RANDOM`).
    pub master: Option<Vec<u8>>,
    /// TLS 1.3 `CLIENT_HANDSHAKE_TRAFFIC_SECRET`.
    pub client_handshake: Option<Vec<u8>>,
    /// TLS 1.3 `SERVER_HANDSHAKE_TRAFFIC_SECRET`.
    pub server_handshake: Option<Vec<u8>>,
    /// TLS 1.3 `CLIENT_TRAFFIC_SECRET_0` (the first application secret).
    pub client_traffic_0: Option<Vec<u8>>,
    /// TLS 1.3 `SERVER_TRAFFIC_SECRET_0`.
    pub server_traffic_0: Option<Vec<u8>>,
}

/// What reading key log text found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct KeyLogStats {
    /// Lines holding a secret (any known label).
    pub key_lines: u64,
    /// Lines skipped: comments, blank, unknown labels, malformed hex or lengths.
    pub skipped_lines: u64,
}

/// Secrets by client random. Text may arrive in pieces (a growing file): a line without its
/// newline is kept until the rest arrives, or [`KeyLog::finish_text`] is called.
#[derive(Clone, Debug, Default)]
pub struct KeyLog {
    by_random: HashMap<[u8; 32], Secrets>,
    /// TLS 1.2 master secrets by session id (`RSA Session-ID:... Master-Key:...`).
    by_session: HashMap<Vec<u8>, Vec<u8>>,
    partial: String,
    /// Lines read so far.
    pub stats: KeyLogStats,
}

impl KeyLog {
    /// An empty key log (live: text comes with [`KeyLog::add_text`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// A complete key log text.
    pub fn parse(text: &str) -> Self {
        let mut k = KeyLog::new();
        k.add_text(text);
        k.finish_text();
        k
    }

    /// Adds text (a whole file or the bytes appended since the last call). Returns how many
    /// key lines were added.
    pub fn add_text(&mut self, text: &str) -> u64 {
        let before = self.stats.key_lines;
        let mut rest = text;
        while let Some(nl) = rest.find('\n') {
            let (line, tail) = rest.split_at(nl);
            rest = &tail[1..];
            if self.partial.is_empty() {
                self.line(line);
            } else {
                let mut l = std::mem::take(&mut self.partial);
                l.push_str(line);
                self.line(&l);
            }
        }
        // A line longer than any key line can be is skipped without being kept.
        if self.partial.len() + rest.len() <= 512 {
            self.partial.push_str(rest);
        } else {
            self.partial.clear();
            self.partial.push('#');
        }
        self.stats.key_lines - before
    }

    /// End of the text: a last line without a newline is read.
    pub fn finish_text(&mut self) -> u64 {
        let before = self.stats.key_lines;
        let l = std::mem::take(&mut self.partial);
        if !l.is_empty() {
            self.line(&l);
        }
        self.stats.key_lines - before
    }

    fn line(&mut self, line: &str) {
        if self.key_line(line.trim_end_matches('\r')) {
            self.stats.key_lines += 1;
        } else {
            self.stats.skipped_lines += 1;
        }
    }

    fn key_line(&mut self, line: &str) -> bool {
        if let Some(rest) = line.strip_prefix("RSA ") {
            return self.session_line(rest);
        }
        let mut it = line.split_ascii_whitespace();
        let (Some(label), Some(random), Some(secret), None) =
            (it.next(), it.next(), it.next(), it.next())
        else {
            return false;
        };
        let Some(random) = hex::<32>(random) else {
            return false;
        };
        if secret.len() % 2 != 0 || secret.len() / 2 > MAX_SECRET {
            return false;
        }
        let Some(secret) = hex_vec(secret) else {
            return false;
        };
        let slot = match label {
            "CLIENT_RANDOM" if secret.len() == 48 => {
                &mut self.by_random.entry(random).or_default().master
            }
            "CLIENT_HANDSHAKE_TRAFFIC_SECRET" => {
                &mut self.by_random.entry(random).or_default().client_handshake
            }
            "SERVER_HANDSHAKE_TRAFFIC_SECRET" => {
                &mut self.by_random.entry(random).or_default().server_handshake
            }
            "CLIENT_TRAFFIC_SECRET_0" => {
                &mut self.by_random.entry(random).or_default().client_traffic_0
            }
            "SERVER_TRAFFIC_SECRET_0" => {
                &mut self.by_random.entry(random).or_default().server_traffic_0
            }
            "EXPORTER_SECRET" | "EARLY_EXPORTER_SECRET" | "CLIENT_EARLY_TRAFFIC_SECRET" => {
                return true
            }
            _ => return false,
        };
        *slot = Some(secret);
        true
    }

    /// `Session-ID:<1 to 32 bytes hex> Master-Key:<48 bytes hex>` (after `RSA `).
    fn session_line(&mut self, rest: &str) -> bool {
        let mut it = rest.split_ascii_whitespace();
        let (Some(id), Some(key), None) = (it.next(), it.next(), it.next()) else {
            return false;
        };
        let (Some(id), Some(key)) = (
            id.strip_prefix("Session-ID:"),
            key.strip_prefix("Master-Key:"),
        ) else {
            return false;
        };
        if id.is_empty() || id.len() > 64 || id.len() % 2 != 0 || key.len() != 96 {
            return false;
        }
        let (Some(id), Some(key)) = (hex_vec(id), hex_vec(key)) else {
            return false;
        };
        self.by_session.insert(id, key);
        true
    }

    /// The TLS 1.2 master secret a `RSA Session-ID:` line gave for this session id.
    pub fn master_by_session(&self, session_id: &[u8]) -> Option<&[u8]> {
        self.by_session.get(session_id).map(Vec::as_slice)
    }

    /// The secrets known for a ClientHello's random.
    pub fn get(&self, client_random: &[u8; 32]) -> Option<&Secrets> {
        self.by_random.get(client_random)
    }

    /// Client randoms with at least one secret, and session ids with a master secret.
    pub fn len(&self) -> usize {
        self.by_random.len() + self.by_session.len()
    }

    /// No client random nor session id has a secret.
    pub fn is_empty(&self) -> bool {
        self.by_random.is_empty() && self.by_session.is_empty()
    }
}

fn nibble(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

fn hex<const N: usize>(s: &str) -> Option<[u8; N]> {
    let b = s.as_bytes();
    if b.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (i, o) in out.iter_mut().enumerate() {
        *o = nibble(b[2 * i])? << 4 | nibble(b[2 * i + 1])?;
    }
    Some(out)
}

fn hex_vec(s: &str) -> Option<Vec<u8>> {
    s.as_bytes()
        .chunks(2)
        .map(|p| Some(nibble(p[0])? << 4 | nibble(*p.get(1)?)?))
        .collect()
}

/// Lower-case hex of bytes (for messages).
pub(crate) fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_lines_are_read_and_others_counted() {
        let r = "ab".repeat(32);
        let text = format!(
            "# comment\n\nCLIENT_RANDOM {r} {}\nSERVER_TRAFFIC_SECRET_0 {r} {}\r\n\
             EXPORTER_SECRET {r} {}\nBOGUS {r} 00\nCLIENT_RANDOM zz {}\nCLIENT_RANDOM {r} 0011\n\
             CLIENT_TRAFFIC_SECRET_0 {r} {}",
            "11".repeat(48),
            "22".repeat(32),
            "33".repeat(32),
            "11".repeat(48),
            "44".repeat(48),
        );
        let k = KeyLog::parse(&text);
        assert_eq!(k.stats.key_lines, 4);
        assert_eq!(k.stats.skipped_lines, 5);
        let s = k.get(&[0xab; 32]).unwrap();
        assert_eq!(s.master.as_deref(), Some(&[0x11u8; 48][..]));
        assert_eq!(s.server_traffic_0.as_deref(), Some(&[0x22u8; 32][..]));
        assert_eq!(s.client_traffic_0.as_deref(), Some(&[0x44u8; 48][..]));
        assert!(s.client_handshake.is_none());
    }

    #[test]
    fn text_in_pieces_waits_for_the_newline() {
        let line = format!("CLIENT_RANDOM {} {}\n", "01".repeat(32), "02".repeat(48));
        let mut k = KeyLog::new();
        assert_eq!(k.add_text(&line[..20]), 0);
        assert_eq!(k.add_text(&line[20..]), 1);
        assert!(k.get(&[1; 32]).is_some());
        assert_eq!(k.stats.skipped_lines, 0);
    }

    #[test]
    fn an_endless_line_is_not_kept() {
        let mut k = KeyLog::new();
        for _ in 0..100 {
            k.add_text(&"x".repeat(1000));
        }
        assert!(k.partial.len() <= 512);
        k.add_text("\n");
        assert_eq!(k.stats.skipped_lines, 1);
    }
}
