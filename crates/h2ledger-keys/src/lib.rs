//! TLS secrets taken from a running program, with no change to it (issue 25): a uprobe on Go's
//! `crypto/tls.(*Config).writeKeyLog`, which every Go TLS handshake calls for each secret
//! whether a `KeyLogWriter` is set or not, copies the label, the client random and the secret
//! into a BPF ring buffer; [`KeySource`] turns them into `SSLKEYLOGFILE` lines for
//! h2ledger-tls (`Layer::add_keys`), a key log file or a pcapng Decryption Secrets Block
//! ([`decryption_secrets_block`]).
//!
//! * `probe` (private, its types re-exported here: [`find_go_probe`], [`ProbePoint`]; with
//!   [`elf`], [`gopclntab`] and the private `buildinfo`): where the probe goes, found in the
//!   ELF symbol table or, in a binary built with `-ldflags "-s -w"`, in Go's function table;
//!   the Go version and its ABI. Pure, `forbid(unsafe_code)`, fuzzed.
//! * [`record`]: the ring buffer records and their decoding into [`KeyLine`]s, duplicates
//!   removed. Pure, `forbid(unsafe_code)`, fuzzed.
//! * [`feed`]: the secrets of several attached processes as one feed, repeats dropped, for
//!   the session, a pcapng file and a key log writer. Pure (given its sources).
//! * [`pcapng`]: a pcapng writer (section, interface, packet and Decryption Secrets Blocks) for
//!   `sniff -w out.pcapng --keys-from`: each secret before the packets it decrypts. Pure.
//! * `bpf` (private): the BPF program, as instructions (no compiler at build time). Pure.
//! * `sys` (private): bpf(2), perf_event_open(2), the ring buffer mapping. The one module
//!   with unsafe code; Linux on x86-64 only. Elsewhere [`KeySource::attach`] says in one line
//!   that this build has no BPF support.
//!
//! * [`ssl`]: OpenSSL's and BoringSSL's `ssl_log_secret` in a file, by symbol and by call
//!   sites (cross-checked), and where it reads the client random (issue 37). Pure,
//!   `forbid(unsafe_code)`.
//!
//! Covered: Go >= 1.17 on amd64 (the register ABI), with or without symbols; tested with
//! Debian 12's Go 1.19. OpenSSL 1.1.1/3.x and BoringSSL on amd64, shared or static, with or
//! without symbols (docs/decisions.md #290-295). Not covered: Go < 1.17 (stack ABI), other
//! architectures, GnuTLS, NSS, Java's JSSE, rustls without a key log (each named when refused).
//!
//! ```no_run
//! use h2ledger_keys::KeySource;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut keys = KeySource::attach(1234)?;     // as root (or CAP_SYS_ADMIN), before dropping privileges
//! eprintln!("keys from {}", keys.attached());
//! loop {
//!     keys.wait(Some(std::time::Duration::from_millis(500)))?;
//!     for line in keys.poll() {
//!         println!("{line}");                   // CLIENT_HANDSHAKE_TRAFFIC_SECRET <random> <secret>
//!     }
//! }
//! # }
//! ```

#![warn(missing_docs)]

mod bpf;
mod buildinfo;
mod dsb;
pub mod elf;
pub mod feed;
pub mod gopclntab;
pub mod pcapng;
mod probe;
pub mod record;
mod source;
pub mod ssl;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod sys;

pub use dsb::decryption_secrets_block;
pub use probe::{find_go_probe, FoundBy, GoAbi, ProbeError, ProbePoint, GO_WRITE_KEY_LOG};
pub use record::{KeyLine, Origin, Stats};
pub use source::{inspect, AttachError, AttachInfo, KeySource, SourceStats, SslAttach, RING_SIZE};
pub use ssl::{find_ssl_probe, SslError, SslProbe};

/// Key log text of `lines` (each followed by a newline), as `Layer::add_keys` and
/// `--keys-out FILE` take it.
pub fn keylog_text<'a>(lines: impl IntoIterator<Item = &'a KeyLine>) -> String {
    let mut s = String::new();
    for l in lines {
        s.push_str(&l.to_string());
        s.push('\n');
    }
    s
}
