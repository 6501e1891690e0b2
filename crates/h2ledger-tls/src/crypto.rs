//! Key schedules (TLS 1.3 HKDF-Expand-Label, RFC 8446 §7.1-7.3; TLS 1.2 PRF, RFC 5246 §5 and
//! §6.3) and AEAD record decryption (RFC 8446 §5.2-5.3; RFC 5288 for AES-GCM and RFC 7905 for
//! ChaCha20-Poly1305 in TLS 1.2). No cipher is written here: the AEADs are `ring`'s (BoringSSL's
//! assembly: AES-NI, PCLMULQDQ and AVX where the CPU has them, picked at run time), the key
//! schedules RustCrypto's `hkdf`, `hmac` and `sha2`.
//!
//! Why `ring` and not RustCrypto's `aes-gcm` for the records: HTTP/2 records are small (the
//! tonic benchmark's average 73 bytes), where the per-record cost dominates; `aes-gcm` 0.10
//! spent ~400 ns a record there, about a fifth of the whole replay (docs/performance.md,
//! "TLS decryption").

use hkdf::Hkdf;
use hmac::digest::KeyInit;
use hmac::{Hmac, Mac};
use sha2::{Sha256, Sha384};

/// The AEAD authentication tag length of every supported suite.
pub(crate) const TAG_LEN: usize = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hash {
    Sha256,
    Sha384,
}

impl Hash {
    /// The output (and traffic secret) length in bytes.
    pub(crate) fn output_len(self) -> usize {
        match self {
            Hash::Sha256 => 32,
            Hash::Sha384 => 48,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Aead {
    Aes128Gcm,
    Aes256Gcm,
    ChaCha20Poly1305,
}

impl Aead {
    pub(crate) fn key_len(self) -> usize {
        match self {
            Aead::Aes128Gcm => 16,
            Aead::Aes256Gcm | Aead::ChaCha20Poly1305 => 32,
        }
    }
}

/// A cipher suite this crate decrypts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Suite {
    pub(crate) id: u16,
    pub(crate) name: &'static str,
    pub(crate) aead: Aead,
    pub(crate) hash: Hash,
    /// A TLS 1.3 suite (else TLS 1.2).
    pub(crate) tls13: bool,
}

/// The AEAD suites HTTP/2 allows (RFC 9113 §9.2.2 and Appendix A: TLS 1.3, and TLS 1.2 with
/// ephemeral key exchange and an AEAD), plus TLS 1.2's static-RSA GCM suites, which decrypt
/// the same way with a key log.
pub(crate) const SUITES: &[Suite] = &[
    s(
        0x1301,
        "TLS_AES_128_GCM_SHA256",
        Aead::Aes128Gcm,
        Hash::Sha256,
        true,
    ),
    s(
        0x1302,
        "TLS_AES_256_GCM_SHA384",
        Aead::Aes256Gcm,
        Hash::Sha384,
        true,
    ),
    s(
        0x1303,
        "TLS_CHACHA20_POLY1305_SHA256",
        Aead::ChaCha20Poly1305,
        Hash::Sha256,
        true,
    ),
    s(
        0xC02B,
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        Aead::Aes128Gcm,
        Hash::Sha256,
        false,
    ),
    s(
        0xC02C,
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        Aead::Aes256Gcm,
        Hash::Sha384,
        false,
    ),
    s(
        0xC02F,
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        Aead::Aes128Gcm,
        Hash::Sha256,
        false,
    ),
    s(
        0xC030,
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        Aead::Aes256Gcm,
        Hash::Sha384,
        false,
    ),
    s(
        0xCCA8,
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        Aead::ChaCha20Poly1305,
        Hash::Sha256,
        false,
    ),
    s(
        0xCCA9,
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        Aead::ChaCha20Poly1305,
        Hash::Sha256,
        false,
    ),
    s(
        0xCCAA,
        "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        Aead::ChaCha20Poly1305,
        Hash::Sha256,
        false,
    ),
    s(
        0x009E,
        "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256",
        Aead::Aes128Gcm,
        Hash::Sha256,
        false,
    ),
    s(
        0x009F,
        "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384",
        Aead::Aes256Gcm,
        Hash::Sha384,
        false,
    ),
    s(
        0x009C,
        "TLS_RSA_WITH_AES_128_GCM_SHA256",
        Aead::Aes128Gcm,
        Hash::Sha256,
        false,
    ),
    s(
        0x009D,
        "TLS_RSA_WITH_AES_256_GCM_SHA384",
        Aead::Aes256Gcm,
        Hash::Sha384,
        false,
    ),
];

const fn s(id: u16, name: &'static str, aead: Aead, hash: Hash, tls13: bool) -> Suite {
    Suite {
        id,
        name,
        aead,
        hash,
        tls13,
    }
}

pub(crate) fn suite(id: u16) -> Option<&'static Suite> {
    SUITES.iter().find(|s| s.id == id)
}

/// HKDF-Expand-Label(Secret, Label, "", Length) (RFC 8446 §7.1). `None` when the secret is
/// shorter than the hash (a malformed key log line).
pub(crate) fn expand_label(hash: Hash, secret: &[u8], label: &[u8], len: usize) -> Option<Vec<u8>> {
    let mut info = Vec::with_capacity(10 + label.len());
    info.extend_from_slice(&(len as u16).to_be_bytes());
    info.push((6 + label.len()) as u8);
    info.extend_from_slice(b"tls13 ");
    info.extend_from_slice(label);
    info.push(0); // empty context
    let mut out = vec![0u8; len];
    match hash {
        Hash::Sha256 => Hkdf::<Sha256>::from_prk(secret)
            .ok()?
            .expand(&info, &mut out)
            .ok()?,
        Hash::Sha384 => Hkdf::<Sha384>::from_prk(secret)
            .ok()?
            .expand(&info, &mut out)
            .ok()?,
    }
    Some(out)
}

/// The next generation of a TLS 1.3 traffic secret (KeyUpdate, RFC 8446 §7.2).
pub(crate) fn next_traffic_secret(hash: Hash, secret: &[u8]) -> Option<Vec<u8>> {
    expand_label(hash, secret, b"traffic upd", hash.output_len())
}

/// The TLS 1.2 PRF: P_hash(secret, label + seed) (RFC 5246 §5).
pub(crate) fn prf12(hash: Hash, secret: &[u8], label: &[u8], seed: &[u8], len: usize) -> Vec<u8> {
    match hash {
        Hash::Sha256 => p_hash::<Hmac<Sha256>>(secret, label, seed, len),
        Hash::Sha384 => p_hash::<Hmac<Sha384>>(secret, label, seed, len),
    }
}

fn p_hash<M: Mac + KeyInit + Clone>(
    secret: &[u8],
    label: &[u8],
    seed: &[u8],
    len: usize,
) -> Vec<u8> {
    let Ok(base) = <M as KeyInit>::new_from_slice(secret) else {
        return vec![0; len]; // HMAC takes keys of any length
    };
    let mut out = Vec::with_capacity(len + 64);
    let mut a = {
        let mut m = base.clone();
        m.update(label);
        m.update(seed);
        m.finalize().into_bytes().to_vec()
    };
    while out.len() < len {
        let mut m = base.clone();
        m.update(&a);
        m.update(label);
        m.update(seed);
        out.extend_from_slice(&m.finalize().into_bytes());
        let mut m = base.clone();
        m.update(&a);
        a = m.finalize().into_bytes().to_vec();
    }
    out.truncate(len);
    out
}

/// One direction's record protection: key, IV and the record sequence number.
pub(crate) struct Decryptor {
    key: ring::aead::LessSafeKey,
    iv: [u8; 12],
    /// TLS 1.2 AES-GCM: 4-byte implicit salt + 8-byte explicit nonce in the record.
    explicit_nonce: bool,
    tls13: bool,
    pub(crate) seq: u64,
}

/// A record failed authentication (wrong key, wrong sequence number, or damaged bytes).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct AuthError;

impl Decryptor {
    fn new(aead: Aead, key: &[u8], iv: &[u8], explicit_nonce: bool, tls13: bool) -> Option<Self> {
        let alg = match aead {
            Aead::Aes128Gcm => &ring::aead::AES_128_GCM,
            Aead::Aes256Gcm => &ring::aead::AES_256_GCM,
            Aead::ChaCha20Poly1305 => &ring::aead::CHACHA20_POLY1305,
        };
        let key = ring::aead::LessSafeKey::new(ring::aead::UnboundKey::new(alg, key).ok()?);
        let mut full = [0u8; 12];
        full[..iv.len()].copy_from_slice(iv);
        Some(Decryptor {
            key,
            iv: full,
            explicit_nonce,
            tls13,
            seq: 0,
        })
    }

    /// TLS 1.3: key and IV from a traffic secret (RFC 8446 §7.3).
    pub(crate) fn tls13(suite: &Suite, secret: &[u8]) -> Option<Self> {
        let key = expand_label(suite.hash, secret, b"key", suite.aead.key_len())?;
        let iv = expand_label(suite.hash, secret, b"iv", 12)?;
        Decryptor::new(suite.aead, &key, &iv, false, true)
    }

    /// TLS 1.2: both directions' keys from the master secret (RFC 5246 §6.3). Returns
    /// (client write, server write).
    pub(crate) fn tls12(
        suite: &Suite,
        master: &[u8],
        client_random: &[u8; 32],
        server_random: &[u8; 32],
    ) -> Option<(Self, Self)> {
        let k = suite.aead.key_len();
        let iv = match suite.aead {
            Aead::ChaCha20Poly1305 => 12,
            _ => 4,
        };
        let mut seed = server_random.to_vec();
        seed.extend_from_slice(client_random);
        let block = prf12(suite.hash, master, b"key expansion", &seed, 2 * k + 2 * iv);
        let (ck, rest) = block.split_at(k);
        let (sk, rest) = rest.split_at(k);
        let (civ, siv) = rest.split_at(iv);
        let explicit = suite.aead != Aead::ChaCha20Poly1305;
        Some((
            Decryptor::new(suite.aead, ck, civ, explicit, false)?,
            Decryptor::new(suite.aead, sk, siv, explicit, false)?,
        ))
    }

    /// Decrypts one record in place. `header` is the 5-byte record header, `body` the record's
    /// payload; returns the plaintext's length, at the start of `body` (TLS 1.2 AES-GCM: moved
    /// down over the 8-byte explicit nonce). The sequence number advances only on success; on
    /// failure `body` holds unspecified bytes (ring's contract), so a caller that wants to try
    /// another key keeps the ciphertext elsewhere.
    pub(crate) fn open(&mut self, header: &[u8; 5], body: &mut [u8]) -> Result<usize, AuthError> {
        let mut nonce = self.iv;
        let start = if self.explicit_nonce {
            if body.len() < 8 + TAG_LEN {
                return Err(AuthError);
            }
            nonce[4..].copy_from_slice(&body[..8]);
            8
        } else {
            if body.len() < TAG_LEN {
                return Err(AuthError);
            }
            for (n, s) in nonce[4..].iter_mut().zip(self.seq.to_be_bytes()) {
                *n ^= s;
            }
            0
        };
        let len = body.len() - start - TAG_LEN;
        let mut aad = [0u8; 13];
        let aad: &[u8] = if self.tls13 {
            header
        } else {
            // seq_num + type + version + length of the plaintext (RFC 5246 §6.2.3.3)
            aad[..8].copy_from_slice(&self.seq.to_be_bytes());
            aad[8..11].copy_from_slice(&header[..3]);
            aad[11..].copy_from_slice(&(len as u16).to_be_bytes());
            &aad
        };
        self.key
            .open_within(
                ring::aead::Nonce::assume_unique_for_key(nonce),
                ring::aead::Aad::from(aad),
                body,
                start..,
            )
            .map_err(|_| AuthError)?;
        self.seq = self.seq.wrapping_add(1);
        Ok(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// RFC 8448 §3 (Simple 1-RTT Handshake): the server handshake traffic secret gives this
    /// key and IV.
    #[test]
    fn rfc8448_server_handshake_key_and_iv() {
        let secret = unhex("b6 7b 7d 69 0c c1 6c 4e 75 e5 42 13 cb 2d 37 b4 e9 c9 12 bc de d9 10 5d 42 be fd 59 d3 91 ad 38");
        assert_eq!(
            expand_label(Hash::Sha256, &secret, b"key", 16).unwrap(),
            unhex("3f ce 51 60 09 c2 17 27 d0 f2 e4 e8 6e e4 03 bc")
        );
        assert_eq!(
            expand_label(Hash::Sha256, &secret, b"iv", 12).unwrap(),
            unhex("5d 31 3e b2 67 12 76 ee 13 00 0b 30")
        );
    }

    /// RFC 5246 PRF test vector (the widely used one from the IETF TLS list, SHA-256).
    #[test]
    fn prf_sha256_vector() {
        let secret = unhex("9b be 43 6b a9 40 f0 17 b1 76 52 84 9a 71 db 35");
        let seed = unhex("a0 ba 9f 93 6c da 31 18 27 a6 f7 96 ff d5 19 8c");
        let out = prf12(Hash::Sha256, &secret, b"test label", &seed, 100);
        assert_eq!(
            out,
            unhex(
                "e3 f2 29 ba 72 7b e1 7b 8d 12 26 20 55 7c d4 53 c2 aa b2 1d 07 c3 d4 95 32 9b 52 d4 e6 1e db 5a
                 6b 30 17 91 e9 0d 35 c9 c9 a4 6b 4e 14 ba f9 af 0f a0 22 f7 07 7d ef 17 ab fd 37 97 c0 56 4b ab
                 4f bc 91 66 6e 9d ef 9b 97 fc e3 4f 79 67 89 ba a4 80 82 d1 22 ee 42 c5 a7 2e 5a 51 10 ff f7 01
                 87 34 7b 66"
            )
        );
    }
}
