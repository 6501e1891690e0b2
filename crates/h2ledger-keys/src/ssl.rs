//! Where to put the uprobe in a file that holds OpenSSL (1.1.1, 3.x) or BoringSSL, shared or
//! static, with or without symbols (issue 37): the entry of `ssl_log_secret`, the internal
//! function every handshake passes each secret through, with the label and the secret as
//! arguments, before it checks whether a key log callback is set (OpenSSL ssl/ssl_lib.c
//! `ssl_log_secret(SSL *ssl, const char *label, const uint8_t *secret, size_t secret_len)`;
//! BoringSSL ssl/ssl_lib.cc `bssl::ssl_log_secret(const SSL *ssl, const char *label,
//! Span<const uint8_t> secret)`: the span is passed as two registers, so both put the label in
//! RSI, the secret in RDX and its length in RCX, System V AMD64 ABI §3.2.3).
//!
//! Found by its symbol when `.symtab` or `.dynsym` names it, and by its call sites: every
//! `lea LABEL(%rip),%rsi` that loads the address of a key log label string ("CLIENT_RANDOM",
//! "EXPORTER_SECRET", ...) and is followed, within [`SITE_WINDOW`] instructions and with RSI
//! unchanged, by a `call`. All of them, and the symbol, must name one target; otherwise the
//! file is refused ([`SslError::Disagree`]), never guessed.
//!
//! The client random that names the connection is not an argument: it is read from the `SSL`
//! object at the place the function's own code reads it for its key log line
//! ([`RandomAt`]): the first `lea DISP(%reg),...` whose base holds the `SSL *` (RDI at the
//! entry), or a value loaded from it (`mov DISP(%rdi),%rax`; BoringSSL's `ssl->s3`). Debian's
//! libssl.so.3 (3.0.19): `lea 0x160(%rax),%rdx` with RAX = RDI (s3.client_random inside the
//! SSL object); node 20's static OpenSSL: `lea 0x160(%r12),%r15`; grpcio 1.85's BoringSSL:
//! `mov 0x30(%rbp),%rax; lea 0x30(%rax),%rsi` (ssl->s3->client_random: two reads).
//!
//! Contract: [`find_ssl_probe`] reads untrusted bytes and never panics; what it cannot use is
//! an [`SslError`] that says why in one line. Pure, `forbid(unsafe_code)`.
#![forbid(unsafe_code)]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

use iced_x86::{
    Code, Decoder, DecoderOptions, FlowControl, Instruction, Mnemonic, OpKind, Register,
};

use crate::elf::{Elf, ElfError, EM_X86_64};

/// The key log labels OpenSSL and BoringSSL pass to `ssl_log_secret` (OpenSSL
/// ssl/ssl_local.h `MASTER_SECRET_LABEL` .. `EARLY_EXPORTER_SECRET_LABEL`; BoringSSL
/// ssl/tls13_both.cc and ssl/handshake*.cc the same strings).
pub const SSL_LABELS: [&str; 8] = [
    "CLIENT_RANDOM",
    "CLIENT_EARLY_TRAFFIC_SECRET",
    "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
    "SERVER_HANDSHAKE_TRAFFIC_SECRET",
    "CLIENT_TRAFFIC_SECRET_0",
    "SERVER_TRAFFIC_SECRET_0",
    "EARLY_EXPORTER_SECRET",
    "EXPORTER_SECRET",
];

/// How many instructions may stand between a label's `lea` and the `call` it belongs to
/// (grpcio 1.85's BoringSSL has 4: `mov %r13,%rdi; movzbl ..,%ecx; add ..,%rdx; call`).
pub const SITE_WINDOW: usize = 8;

/// How many bytes of the function are read for the client random's place when its size is
/// not known (no symbol): OpenSSL 3.0's reads it in its first 16 bytes, BoringSSL's at 0xb3.
pub const SCAN_BYTES: usize = 1024;

/// Which library the file holds, by its version string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// OpenSSL, with its version (`OpenSSL 3.0.19 27 Jan 2026`) when the file holds one.
    OpenSsl(Option<String>),
    /// BoringSSL (the file holds the string "BoringSSL").
    BoringSsl,
}

impl fmt::Display for Flavor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Flavor::OpenSsl(Some(v)) => f.write_str(v),
            Flavor::OpenSsl(None) => f.write_str("OpenSSL"),
            Flavor::BoringSsl => f.write_str("BoringSSL"),
        }
    }
}

/// Where the client random is, from the `SSL *` (RDI at the function's entry).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RandomAt {
    /// `Some(d)`: first read the pointer at `ssl + d` (BoringSSL's `ssl->s3`).
    pub deref: Option<i32>,
    /// Then the random is at `base + offset`.
    pub offset: i32,
}

impl fmt::Display for RandomAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.deref {
            None => write!(f, "SSL+{:#x}", self.offset),
            Some(d) => write!(f, "*(SSL+{d:#x})+{:#x}", self.offset),
        }
    }
}

/// How the function was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SslFoundBy {
    /// The symbol that names it, if any.
    pub symbol: Option<String>,
    /// Call sites that load a label's address into RSI right before calling it.
    pub sites: usize,
    /// The labels those sites load.
    pub site_labels: Vec<String>,
}

impl fmt::Display for SslFoundBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(s) = &self.symbol {
            write!(f, "symbol {s}")?;
            if self.sites > 0 {
                f.write_str(", and ")?;
            }
        }
        if self.sites > 0 || self.symbol.is_none() {
            write!(
                f,
                "{} call sites passing {} ({})",
                self.sites,
                if self.site_labels.len() == 1 {
                    "a label"
                } else {
                    "labels"
                },
                self.site_labels.join(", ")
            )?;
        }
        Ok(())
    }
}

/// A probe point in a file holding OpenSSL or BoringSSL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SslProbe {
    /// The function's entry (virtual address in the file).
    pub address: u64,
    /// Its offset in the file: what a uprobe is placed by.
    pub file_offset: u64,
    /// How it was found.
    pub found_by: SslFoundBy,
    /// The library.
    pub flavor: Flavor,
    /// Where the client random is read at the probe.
    pub random: RandomAt,
    /// Every label string in the file, by virtual address (to read a label from the file when
    /// the process's page was not resident at the probe).
    pub labels: BTreeMap<u64, String>,
}

impl SslProbe {
    /// `ssl_log_secret of OpenSSL 3.0.19 ... at 0x3a1c0, file offset 0x3a1c0, found by 3 call
    /// sites passing labels (...); client random at SSL+0x160`.
    pub fn describe(&self) -> String {
        format!(
            "ssl_log_secret of {} at {:#x}, file offset {:#x}, found by {}; client random at {}",
            self.flavor, self.address, self.file_offset, self.found_by, self.random
        )
    }
}

/// Why a file has no usable probe point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SslError {
    /// Not a readable ELF file.
    Elf(ElfError),
    /// Not x86-64 (the call-site scan and the BPF program read amd64 code and registers).
    NotAmd64(u16),
    /// No key log label string in the file: no OpenSSL or BoringSSL inside.
    NoLabels,
    /// Label strings, but no call that passes one and no symbol.
    NoSites,
    /// The call sites (and the symbol) name different functions.
    Disagree(Vec<(u64, usize)>, Option<u64>),
    /// The function's code does not show where it reads the client random.
    NoRandom(u64),
    /// The function found lies in no executable segment of the file.
    BadAddress(u64),
    /// A library that is not supported, and why.
    Other(&'static str),
}

impl fmt::Display for SslError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SslError::Elf(e) => e.fmt(f),
            SslError::NotAmd64(m) => write!(f, "not an x86-64 file (ELF machine {m}); only amd64 is supported"),
            SslError::NoLabels => f.write_str("no TLS key log label strings: neither OpenSSL nor BoringSSL inside"),
            SslError::NoSites => f.write_str(
                "key log label strings, but no call passes one and no symbol names ssl_log_secret: not a known OpenSSL or BoringSSL build",
            ),
            SslError::Disagree(targets, symbol) => {
                f.write_str("the call sites passing a key log label disagree on the function (")?;
                for (n, (t, c)) in targets.iter().enumerate() {
                    write!(f, "{}{t:#x} from {c}", if n > 0 { ", " } else { "" })?;
                }
                if let Some(s) = symbol {
                    write!(f, "; symbol ssl_log_secret at {s:#x}")?;
                }
                f.write_str("); refused rather than guessed")
            }
            SslError::NoRandom(a) => write!(
                f,
                "ssl_log_secret at {a:#x}: its code does not show where it reads the client random from the SSL object; refused"
            ),
            SslError::BadAddress(a) => write!(f, "ssl_log_secret at {a:#x} lies in no executable segment of the file"),
            SslError::Other(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for SslError {}

impl From<ElfError> for SslError {
    fn from(e: ElfError) -> Self {
        SslError::Elf(e)
    }
}

/// Every occurrence of a label string (`LABEL\0`, not the tail of a longer identifier unless
/// that is itself a label: "EXPORTER_SECRET" may share the bytes of "EARLY_EXPORTER_SECRET"),
/// by file offset.
pub fn label_strings(data: &[u8]) -> BTreeMap<usize, &'static str> {
    let mut out = BTreeMap::new();
    for label in SSL_LABELS {
        let needle: Vec<u8> = label.bytes().chain([0]).collect();
        let mut from = 0;
        while let Some(p) = find(&data[from..], &needle) {
            let at = from + p;
            let before = at.checked_sub(1).map(|b| data[b]);
            let standalone =
                !before.is_some_and(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_');
            let tail_of_label = SSL_LABELS.iter().any(|l| {
                l.len() > label.len()
                    && l.ends_with(label)
                    && at >= l.len() - label.len()
                    && data.get(at - (l.len() - label.len())..at + label.len())
                        == Some(l.as_bytes())
                    && {
                        let s = at - (l.len() - label.len());
                        s == 0 || !data[s - 1].is_ascii_alphanumeric()
                    }
            });
            if standalone || tail_of_label {
                out.insert(at, label);
            }
            from = at + 1;
        }
    }
    out
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    let first = needle[0];
    let mut i = 0;
    while i + needle.len() <= hay.len() {
        match hay[i..=hay.len() - needle.len()]
            .iter()
            .position(|&c| c == first)
        {
            None => return None,
            Some(p) => {
                i += p;
                if &hay[i..i + needle.len()] == needle {
                    return Some(i);
                }
                i += 1;
            }
        }
    }
    None
}

/// A call site: a label's address loaded into RSI, then a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    /// The `lea`'s address.
    pub at: u64,
    /// The label it loads.
    pub label: &'static str,
    /// The call's target.
    pub target: u64,
}

/// The call sites in `code` (mapped at `ip`) that pass one of `labels` (by virtual address)
/// in RSI. Any bytes decode to something; the scan is linear and bounded by `code`.
pub fn call_sites(code: &[u8], ip: u64, labels: &HashMap<u64, &'static str>) -> Vec<Site> {
    let mut out = Vec::new();
    let mut d = Decoder::with_ip(64, code, ip, DecoderOptions::NONE);
    let mut insn = Instruction::default();
    let mut pending: Option<(u64, &'static str, usize)> = None;
    while d.can_decode() {
        d.decode_out(&mut insn);
        if insn.is_invalid() {
            pending = None;
            continue;
        }
        // `lea LABEL(%rip),%rsi`, or in a fixed-address executable `mov $LABEL,%esi`
        // (node 20).
        let loaded = match insn.code() {
            Code::Lea_r64_m
                if insn.op0_register() == Register::RSI && insn.is_ip_rel_memory_operand() =>
            {
                Some(insn.ip_rel_memory_address())
            }
            Code::Mov_r32_imm32 if insn.op0_register() == Register::ESI => {
                Some(u64::from(insn.immediate32()))
            }
            _ => None,
        };
        if let Some(addr) = loaded {
            pending = labels.get(&addr).map(|l| (insn.ip(), *l, 0));
            continue;
        }
        let Some((at, label, n)) = pending else {
            continue;
        };
        match insn.flow_control() {
            FlowControl::Call if insn.op0_kind() == OpKind::NearBranch64 => {
                out.push(Site {
                    at,
                    label,
                    target: insn.near_branch64(),
                });
                pending = None;
            }
            FlowControl::Next if !writes(&insn, Register::RSI) && n + 1 < SITE_WINDOW => {
                pending = Some((at, label, n + 1));
            }
            _ => pending = None,
        }
    }
    out
}

/// Whether `insn` writes `reg` (or a part of it) as its first operand, or exchanges it.
fn writes(insn: &Instruction, reg: Register) -> bool {
    let op0 = insn.op_count() > 0
        && insn.op0_kind() == OpKind::Register
        && insn.op0_register().full_register() == reg
        && !matches!(
            insn.mnemonic(),
            Mnemonic::Cmp | Mnemonic::Test | Mnemonic::Push | Mnemonic::Bt
        );
    let xchg = insn.mnemonic() == Mnemonic::Xchg
        && insn.op_count() > 1
        && insn.op1_kind() == OpKind::Register
        && insn.op1_register().full_register() == reg;
    op0 || xchg
}

/// What a register holds, as far as the scan of the function can tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Val {
    Unknown,
    /// The `SSL *` (RDI at the entry).
    Ssl,
    /// The pointer loaded from `ssl + d`.
    Loaded(i32),
}

/// Registers a call may change (System V AMD64: every argument register, RAX, R10, R11).
const CALLER_SAVED: [Register; 9] = [
    Register::RAX,
    Register::RCX,
    Register::RDX,
    Register::RSI,
    Register::RDI,
    Register::R8,
    Register::R9,
    Register::R10,
    Register::R11,
];

/// Where the function at `ip` (its bytes `code`) takes the client random from: the first `lea
/// DISP(%base)` (no index) whose base holds the SSL pointer or a pointer loaded from it.
/// Registers are followed through register moves and loads from the SSL object; a call
/// forgets the caller-saved ones. The scan is linear: a `pop` (an epilogue restoring saved
/// registers) and a `ret` leave the state as it was, since the code after them is reached by
/// a branch from before them (grpcio's BoringSSL returns early when no key log callback is
/// set, and reads the random past that `ret`).
pub fn random_at(code: &[u8], ip: u64) -> Option<RandomAt> {
    let mut regs: HashMap<Register, Val> = HashMap::new();
    regs.insert(Register::RDI, Val::Ssl);
    let mut d = Decoder::with_ip(64, code, ip, DecoderOptions::NONE);
    let mut insn = Instruction::default();
    while d.can_decode() {
        d.decode_out(&mut insn);
        if insn.is_invalid() {
            return None;
        }
        let base_val = |insn: &Instruction, regs: &HashMap<Register, Val>| {
            if insn.memory_index() != Register::None || insn.segment_prefix() != Register::None {
                return Val::Unknown;
            }
            regs.get(&insn.memory_base())
                .copied()
                .unwrap_or(Val::Unknown)
        };
        let disp = i32::try_from(insn.memory_displacement64() as i64).ok();
        match insn.code() {
            Code::Lea_r64_m => {
                let v = base_val(&insn, &regs);
                match (v, disp) {
                    (Val::Ssl, Some(off)) if (0..0x10000).contains(&off) => {
                        return Some(RandomAt {
                            deref: None,
                            offset: off,
                        })
                    }
                    (Val::Loaded(dr), Some(off)) if (0..0x10000).contains(&off) => {
                        return Some(RandomAt {
                            deref: Some(dr),
                            offset: off,
                        })
                    }
                    _ => {}
                }
                regs.insert(insn.op0_register(), Val::Unknown);
            }
            Code::Mov_r64_rm64 if insn.op1_kind() == OpKind::Register => {
                let v = regs
                    .get(&insn.op1_register())
                    .copied()
                    .unwrap_or(Val::Unknown);
                regs.insert(insn.op0_register(), v);
            }
            Code::Mov_r64_rm64 if insn.op1_kind() == OpKind::Memory => {
                let v = match (base_val(&insn, &regs), disp) {
                    (Val::Ssl, Some(off)) if (0..0x10000).contains(&off) => Val::Loaded(off),
                    _ => Val::Unknown,
                };
                regs.insert(insn.op0_register(), v);
            }
            Code::Mov_rm64_r64 if insn.op0_kind() == OpKind::Register => {
                let v = regs
                    .get(&insn.op1_register())
                    .copied()
                    .unwrap_or(Val::Unknown);
                regs.insert(insn.op0_register(), v);
            }
            _ if insn.mnemonic() == Mnemonic::Pop => {}
            _ => {
                if insn.flow_control() == FlowControl::Call
                    || insn.flow_control() == FlowControl::IndirectCall
                {
                    for r in CALLER_SAVED {
                        regs.remove(&r);
                    }
                } else if insn.op_count() > 0 && insn.op0_kind() == OpKind::Register {
                    let r = insn.op0_register().full_register();
                    if writes(&insn, r) {
                        regs.remove(&r);
                    }
                }
                if insn.mnemonic() == Mnemonic::Xchg
                    && insn.op_count() > 1
                    && insn.op1_kind() == OpKind::Register
                {
                    regs.remove(&insn.op1_register().full_register());
                }
            }
        }
    }
    None
}

/// The version string of the library the file holds.
fn flavor(data: &[u8]) -> Flavor {
    if find(data, b"BoringSSL").is_some() {
        return Flavor::BoringSsl;
    }
    // "OpenSSL 3.0.19 27 Jan 2026": OPENSSL_VERSION_TEXT, in libcrypto or a static build.
    let mut from = 0;
    while let Some(p) = find(&data[from..], b"OpenSSL ") {
        let at = from + p;
        let rest = &data[at..data.len().min(at + 48)];
        let end = rest.iter().position(|&c| c == 0).unwrap_or(rest.len());
        let s = &rest[..end];
        let version = s.get(8..).unwrap_or_default();
        let dotted = version.split(|&c| c == b' ').next().unwrap_or_default();
        let parts: Vec<&[u8]> = dotted.split(|&c| c == b'.').collect();
        if parts.len() >= 3
            && parts.iter().all(|p| !p.is_empty() && p[0].is_ascii_digit())
            && s.iter().all(|c| c.is_ascii_graphic() || *c == b' ')
        {
            return Flavor::OpenSsl(Some(String::from_utf8_lossy(s).into_owned()));
        }
        from = at + 1;
    }
    Flavor::OpenSsl(None)
}

/// Finds `ssl_log_secret` in the ELF file `bytes`, by its symbol and its call sites (which
/// must agree), and where it reads the client random.
pub fn find_ssl_probe(bytes: &[u8]) -> Result<SslProbe, SslError> {
    let elf = Elf::parse(bytes)?;
    if elf.machine != EM_X86_64 {
        return Err(SslError::NotAmd64(elf.machine));
    }
    let strings = label_strings(bytes);
    if strings.is_empty() {
        return Err(SslError::NoLabels);
    }
    // NSS (libssl3.so) writes its key log itself, from SSLKEYLOGFILE read at start.
    if find(bytes, b"SSL_ImportFD").is_some() && find(bytes, b"NSS_").is_some() {
        return Err(SslError::Other(
            "NSS: not supported (it has no ssl_log_secret; its key log is written only when \
             SSLKEYLOGFILE is set at start)",
        ));
    }
    // GnuTLS logs the same labels through its own function, with other arguments.
    if find(bytes, b"GNUTLS_3").is_some() && find(bytes, b"gnutls_").is_some() {
        return Err(SslError::Other(
            "GnuTLS: not supported (it has no ssl_log_secret; its key log goes through \
             gnutls_session_set_keylog_function)",
        ));
    }
    // rustls names the same labels for its KeyLog, and logs secrets only through the one the
    // program sets (rustls::KeyLogFile reads SSLKEYLOGFILE): nothing to probe without it.
    if find(bytes, b"rustls").is_some()
        && find(bytes, b"BoringSSL").is_none()
        && find(bytes, b"OpenSSL ").is_none()
    {
        return Err(SslError::Other(
            "rustls: not supported (it logs secrets only through the KeyLog the program sets; \
             rustls::KeyLogFile writes SSLKEYLOGFILE)",
        ));
    }
    let mut labels: HashMap<u64, &'static str> = HashMap::new();
    for (&off, &l) in &strings {
        if let Some(va) = elf.vaddr_of_offset(off as u64) {
            labels.insert(va, l);
        }
    }
    let symbol = elf
        .symbol_where(|n| n == b"ssl_log_secret" || is_bssl_log_secret(n))
        .filter(|(_, s)| s.value != 0);
    // Call sites, in every executable segment.
    let mut sites = Vec::new();
    for s in elf.segments().iter().filter(|s| s.is_exec()) {
        if let Some(code) = elf.read_va(s.vaddr, s.filesz) {
            sites.extend(call_sites(code, s.vaddr, &labels));
        }
    }
    let mut targets: BTreeMap<u64, usize> = BTreeMap::new();
    for s in &sites {
        *targets.entry(s.target).or_default() += 1;
    }
    let address = match (targets.len(), &symbol) {
        (0, None) => return Err(SslError::NoSites),
        (0, Some((_, s))) => s.value,
        (1, None) => *targets.keys().next().unwrap_or(&0),
        (1, Some((_, s))) if targets.contains_key(&s.value) => s.value,
        _ => {
            return Err(SslError::Disagree(
                targets.into_iter().collect(),
                symbol.map(|(_, s)| s.value),
            ))
        }
    };
    let file_offset = match elf.segment_of(address) {
        Some(s) if s.is_exec() => elf.file_offset(address),
        _ => None,
    }
    .ok_or(SslError::BadAddress(address))?;
    let seg = elf
        .segment_of(address)
        .ok_or(SslError::BadAddress(address))?;
    let left = seg.filesz - (address - seg.vaddr);
    let len = match &symbol {
        Some((_, s)) if s.value == address && s.size > 0 => s.size.min(4 * SCAN_BYTES as u64),
        _ => SCAN_BYTES as u64,
    }
    .min(left);
    let code = elf
        .read_va(address, len)
        .ok_or(SslError::BadAddress(address))?;
    let random = random_at(code, address).ok_or(SslError::NoRandom(address))?;
    let site_labels: BTreeSet<&str> = sites.iter().map(|s| s.label).collect();
    let mut by_va = BTreeMap::new();
    for (va, l) in labels {
        by_va.insert(va, l.to_string());
    }
    Ok(SslProbe {
        address,
        file_offset,
        found_by: SslFoundBy {
            symbol: symbol.map(|(n, _)| String::from_utf8_lossy(n).into_owned()),
            sites: sites.len(),
            site_labels: site_labels.into_iter().map(str::to_string).collect(),
        },
        flavor: flavor(bytes),
        random,
        labels: by_va,
    })
}

/// `bssl::ssl_log_secret(...)` mangled (Itanium C++ ABI): `_ZN4bssl14ssl_log_secretE...`.
fn is_bssl_log_secret(n: &[u8]) -> bool {
    n.starts_with(b"_ZN4bssl14ssl_log_secretE")
}

/// Libraries whose TLS this crate cannot take secrets from, by file name, with the reason.
pub fn unsupported_library(file_name: &str) -> Option<&'static str> {
    if file_name.starts_with("libgnutls.so") {
        Some("GnuTLS (no ssl_log_secret; its key log goes through gnutls_session_set_keylog_function only)")
    } else if file_name.starts_with("libssl3.so") || file_name.starts_with("libnss3.so") {
        Some("NSS (its key log is written only when SSLKEYLOGFILE is set at start)")
    } else if file_name == "libjvm.so" {
        Some(
            "Java's JSSE (its TLS is Java code, with no native function to probe; a Java agent \
             that writes a key log, or -Djavax.net.debug, is the way there)",
        )
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libraries_without_a_probe_are_named() {
        assert!(unsupported_library("libgnutls.so.30")
            .unwrap()
            .starts_with("GnuTLS"));
        assert!(unsupported_library("libnss3.so")
            .unwrap()
            .starts_with("NSS"));
        assert!(unsupported_library("libjvm.so")
            .unwrap()
            .starts_with("Java's JSSE"));
        assert_eq!(unsupported_library("libssl.so.3"), None);
    }

    #[test]
    fn label_strings_and_tails() {
        let d = b"\0EARLY_EXPORTER_SECRET\0XCLIENT_RANDOM\0CLIENT_RANDOM\0";
        let s = label_strings(d);
        let v: Vec<(usize, &str)> = s.into_iter().collect();
        assert_eq!(
            v,
            [
                (1, "EARLY_EXPORTER_SECRET"),
                (7, "EXPORTER_SECRET"),
                (38, "CLIENT_RANDOM")
            ]
        );
    }

    /// The sites of Debian's libssl.so.3 and grpcio's BoringSSL, as bytes.
    #[test]
    fn call_site_and_random_of_openssl_3() {
        // 0x1000: lea 0x100(%rip),%rsi -> 0x1107; mov %r14,%rdi; call 0x2000
        let mut code = vec![0x48, 0x8d, 0x35, 0x00, 0x01, 0x00, 0x00, 0x4c, 0x89, 0xf7];
        let call_at = 0x1000 + code.len() as i64 + 5;
        code.push(0xe8);
        code.extend_from_slice(&((0x2000 - call_at) as i32).to_le_bytes());
        let labels = HashMap::from([(0x1107u64, "CLIENT_RANDOM")]);
        let s = call_sites(&code, 0x1000, &labels);
        assert_eq!(
            s,
            [Site {
                at: 0x1000,
                label: "CLIENT_RANDOM",
                target: 0x2000
            }]
        );
        // RSI overwritten in between: no site.
        let mut code2 = code[..7].to_vec();
        code2.extend_from_slice(&[0x48, 0x89, 0xde]); // mov %rbx,%rsi
        code2.extend_from_slice(&code[10..]);
        assert!(call_sites(&code2, 0x1000, &labels).is_empty());
        // OpenSSL 3.0.19's ssl_log_secret: mov %rdi,%rax; mov %rdx,%r8; mov %rsi,%rdi;
        // mov %rcx,%r9; lea 0x160(%rax),%rdx; mov $0x20,%ecx; mov %rax,%rsi; jmp
        let f = [
            0x48, 0x89, 0xf8, 0x49, 0x89, 0xd0, 0x48, 0x89, 0xf7, 0x49, 0x89, 0xc9, 0x48, 0x8d,
            0x90, 0x60, 0x01, 0x00, 0x00, 0xb9, 0x20, 0x00, 0x00, 0x00, 0x48, 0x89, 0xc6,
        ];
        assert_eq!(
            random_at(&f, 0x3a1c0),
            Some(RandomAt {
                deref: None,
                offset: 0x160
            })
        );
        // BoringSSL: mov %rdi,%rbp; call x; mov 0x30(%rbp),%rax; lea 0x30(%rax),%rsi
        let b = [
            0x48, 0x89, 0xfd, 0xe8, 0, 0, 0, 0, 0x48, 0x8b, 0x45, 0x30, 0x48, 0x8d, 0x70, 0x30,
        ];
        assert_eq!(
            random_at(&b, 0x1000),
            Some(RandomAt {
                deref: Some(0x30),
                offset: 0x30
            })
        );
        // The same through RDI after a call (RDI is forgotten): nothing.
        let c = [
            0xe8, 0, 0, 0, 0, 0x48, 0x8b, 0x47, 0x30, 0x48, 0x8d, 0x70, 0x30,
        ];
        assert_eq!(random_at(&c, 0x1000), None);
    }

    #[test]
    fn hostile_bytes_never_panic() {
        let labels = HashMap::from([(0x10u64, "CLIENT_RANDOM")]);
        let mut x: u64 = 0x9e3779b97f4a7c15;
        for n in 0..2000usize {
            let mut b = vec![0u8; n % 97];
            for v in b.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *v = x as u8;
            }
            let _ = call_sites(&b, u64::MAX - 8, &labels);
            let _ = random_at(&b, 0);
            let _ = label_strings(&b);
            let _ = find_ssl_probe(&b);
        }
        assert!(matches!(find_ssl_probe(b"\x7fELF"), Err(SslError::Elf(_))));
    }
}
