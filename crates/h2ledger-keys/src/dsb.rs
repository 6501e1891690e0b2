//! A pcapng Decryption Secrets Block holding key log lines (pcapng spec,
//! draft-ietf-opsawg-pcapng §4.7 "Decryption Secrets Block"): block type `0x0000000A`,
//! secrets type `0x544c534b` ("TLSK", NSS key log format), the text padded with zeros to 4
//! bytes, the block's total length before and after. What `sniff -w out.pcapng --keys-from`
//! writes before the packets that need the keys (`crate::pcapng`), so that
//! Wireshark and `h2ledger replay` decrypt the file alone; h2ledger-tls's
//! `h2ledger_run::input::key_log_of` reads it back.
#![forbid(unsafe_code)]

/// Decryption Secrets Block type.
pub(crate) const DSB_BLOCK_TYPE: u32 = 0x0000_000A;
/// Secrets type of a TLS key log.
pub(crate) const TLS_KEY_LOG: u32 = 0x544C_534B;

/// Encodes `keylog` (key log lines, each ending with `\n`) as one little-endian Decryption
/// Secrets Block, to be written into a little-endian section (after its Section Header Block).
/// `None` if the text is too long for a block's 32-bit length.
pub fn decryption_secrets_block(keylog: &str) -> Option<Vec<u8>> {
    let text = keylog.as_bytes();
    let padded = text.len().div_ceil(4).checked_mul(4)?;
    // Block type, total length, secrets type, secrets length, data, total length.
    let total = padded.checked_add(20)?;
    let total32 = u32::try_from(total).ok()?;
    let mut b = Vec::with_capacity(total);
    b.extend_from_slice(&DSB_BLOCK_TYPE.to_le_bytes());
    b.extend_from_slice(&total32.to_le_bytes());
    b.extend_from_slice(&TLS_KEY_LOG.to_le_bytes());
    b.extend_from_slice(&u32::try_from(text.len()).ok()?.to_le_bytes());
    b.extend_from_slice(text);
    b.resize(16 + padded, 0);
    b.extend_from_slice(&total32.to_le_bytes());
    Some(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A little-endian Section Header Block with no options, and an Interface Description
    /// Block (Ethernet), as a pcapng writer puts before any DSB.
    fn shb_idb() -> Vec<u8> {
        let mut b = Vec::new();
        for w in [0x0A0D_0D0Au32, 28, 0x1A2B_3C4D] {
            b.extend_from_slice(&w.to_le_bytes());
        }
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&0u16.to_le_bytes());
        b.extend_from_slice(&(-1i64).to_le_bytes());
        b.extend_from_slice(&28u32.to_le_bytes());
        for w in [1u32, 20, 1, 0, 20] {
            b.extend_from_slice(&w.to_le_bytes());
        }
        b
    }

    #[test]
    fn h2ledger_run_reads_it_back() {
        let text = "CLIENT_RANDOM 0101010101010101010101010101010101010101010101010101010101010101 \
                    020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202\n\
                    CLIENT_TRAFFIC_SECRET_0 0303030303030303030303030303030303030303030303030303030303030303 \
                    0404040404040404040404040404040404040404040404040404040404040404\n";
        for t in [text, &text[..text.len() - 1], "X\n", ""] {
            let dsb = decryption_secrets_block(t).unwrap();
            assert_eq!(dsb.len() % 4, 0);
            assert_eq!(&dsb[dsb.len() - 4..], &dsb[4..8]);
            let mut file = shb_idb();
            file.extend_from_slice(&dsb);
            let got = h2ledger_run::input::key_log_of(&file).unwrap();
            assert_eq!(got.1, 1);
            let want = if t.is_empty() || t.ends_with('\n') {
                t.to_owned()
            } else {
                format!("{t}\n")
            };
            assert_eq!(got.0, if t.is_empty() { "\n".to_owned() } else { want });
            let keys = h2ledger_tls::KeyLog::parse(&got.0);
            if t == text {
                assert_eq!((keys.stats.key_lines, keys.stats.skipped_lines), (2, 0));
                assert!(keys.get(&[1; 32]).is_some() && keys.get(&[3; 32]).is_some());
            }
        }
    }
}
