//! What the hellos tell a connection (RFC 8446 §4.1, RFC 5246 §7.4.1): the client and its
//! random, the ALPN protocols offered and chosen, the version and cipher suite. Which keys
//! follow is the `keys` module's job; what the records do, the `record` module's.

use h2ledger_tcp::Dir;

use super::conn::TlsConn;
use crate::crypto;
use crate::wire;

impl TlsConn {
    /// A ClientHello from `dir`. Only the first counts (a second one follows a
    /// HelloRetryRequest), and only from the side that sent it.
    pub(crate) fn client_hello(&mut self, dir: Dir, body: &[u8]) {
        if self.client.is_some_and(|c| c != dir) || self.client_random.is_some() {
            return;
        }
        if let Some(ch) = wire::client_hello(body) {
            self.client = Some(dir);
            self.client_random = Some(ch.random);
            self.alpn_offered = ch.alpn;
        }
    }

    /// A ServerHello from `dir`, answering the ClientHello. `Some(ok)` when it is the one that
    /// chose the connection's version and suite (not a HelloRetryRequest); `ok`: both are
    /// decrypted here (else the connection is marked unsupported).
    pub(crate) fn server_hello(&mut self, dir: Dir, body: &[u8]) -> Option<bool> {
        if self.client != Some(dir.other()) || self.sh.is_some() {
            return None;
        }
        let sh = wire::server_hello(body)?;
        if sh.hello_retry {
            return None;
        }
        let suite = crypto::suite(sh.cipher);
        let ok = match sh.version {
            0x0304 => suite.is_some_and(|s| s.tls13),
            0x0303 => suite.is_some_and(|s| !s.tls13),
            _ => false,
        };
        if sh.version != 0x0304 {
            // TLS 1.3 says its ALPN in EncryptedExtensions.
            self.alpn = Some(sh.alpn.clone());
        }
        self.suite = suite;
        self.sh = Some(sh);
        self.unsupported = !ok;
        Some(ok)
    }

    /// TLS 1.3 EncryptedExtensions from `dir` (the server): the ALPN protocol chosen.
    pub(crate) fn encrypted_extensions(&mut self, dir: Dir, body: &[u8]) {
        if self.client != Some(dir.other()) {
            return;
        }
        if let Some(alpn) = wire::encrypted_extensions_alpn(body) {
            self.alpn = Some(alpn);
        }
    }
}
