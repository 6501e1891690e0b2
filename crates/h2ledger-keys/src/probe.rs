//! Where to put the uprobe in a Go executable: the entry of
//! `crypto/tls.(*Config).writeKeyLog`, found in the ELF symbol table or, in a binary built
//! with `-ldflags "-s -w"` (no symbol table), in Go's own function table `.gopclntab`; and
//! whether the arguments are where the BPF program reads them (Go's register ABI on amd64).
//!
//! Contract: [`find_go_probe`] reads untrusted bytes (any executable a PID points to) and
//! never panics; everything it cannot use is a [`ProbeError`] that says why in one line.
#![forbid(unsafe_code)]

use std::fmt;

use crate::buildinfo::{go_version, parse_go_version};
use crate::elf::{Elf, ElfError, EM_X86_64};
use crate::gopclntab::{Pcln, PclnVersion};

/// The function every Go `crypto/tls` handshake calls for each secret, whether a
/// `KeyLogWriter` is set or not (go/src/crypto/tls/common.go: `func (c *Config)
/// writeKeyLog(label string, clientRandom, secret []byte) error`, called from
/// handshake_client.go, handshake_server.go and their _tls13 twins).
pub const GO_WRITE_KEY_LOG: &str = "crypto/tls.(*Config).writeKeyLog";

/// How the probe point was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FoundBy {
    /// The ELF symbol table (`.symtab`).
    Symtab,
    /// Go's function table (`.gopclntab`): the binary has no symbol table.
    Pclntab,
}

impl fmt::Display for FoundBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FoundBy::Symtab => "ELF symbol table",
            FoundBy::Pclntab => "Go function table (.gopclntab; no symbol table)",
        })
    }
}

/// Where writeKeyLog's arguments are at its entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GoAbi {
    /// Go's internal register ABI on amd64 (Go >= 1.17, go/src/cmd/compile/abi-internal.md):
    /// integer arguments in RAX, RBX, RCX, RDI, RSI, R8, R9, R10, R11, in order.
    Register,
    /// The stack ABI of Go < 1.17 (arguments on the stack above the return address).
    Stack,
}

/// A probe point in a Go executable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbePoint {
    /// The function's entry (virtual address).
    pub address: u64,
    /// Its offset in the file: what a uprobe is placed by.
    pub file_offset: u64,
    /// Which table gave the address.
    pub found_by: FoundBy,
    /// `runtime.buildVersion` (`go1.19.8`), when the build information was readable.
    pub go_version: Option<String>,
    /// The pcln table's layout, when there is one.
    pub pcln: Option<PclnVersion>,
    /// Where the function's arguments are at its entry.
    pub abi: GoAbi,
}

/// Why a binary has no usable probe point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProbeError {
    /// Not a readable ELF file.
    Elf(ElfError),
    /// Not an x86-64 executable (the BPF program reads amd64 registers).
    NotAmd64(u16),
    /// Neither build information nor a pcln table: not a Go program.
    NotGo,
    /// A Go program without the function: crypto/tls is not linked in, or the compiler
    /// inlined it away.
    NoFunction {
        /// `runtime.buildVersion`, when readable.
        go_version: Option<String>,
    },
    /// Found, but the arguments are on the stack (Go < 1.17), which the BPF program does not
    /// read; or the version could not be told.
    UnsupportedAbi {
        /// `runtime.buildVersion`, when readable.
        go_version: Option<String>,
        /// Why the ABI is not the register one, or could not be told.
        why: &'static str,
    },
    /// The address found is in no executable segment of the file.
    BadAddress(u64),
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = |v: &Option<String>| v.clone().unwrap_or_else(|| "Go of unknown version".into());
        match self {
            ProbeError::Elf(e) => e.fmt(f),
            ProbeError::NotAmd64(m) => write!(f, "not an x86-64 executable (ELF machine {m})"),
            ProbeError::NotGo => f.write_str(
                "not a Go program (no .go.buildinfo, no .gopclntab); only Go's crypto/tls is supported so far",
            ),
            ProbeError::NoFunction { go_version } => write!(
                f,
                "{GO_WRITE_KEY_LOG} is not in this {} binary: crypto/tls is not linked in, or the function was inlined away",
                v(go_version)
            ),
            ProbeError::UnsupportedAbi { go_version, why } => {
                write!(f, "{} passes arguments on the stack ({why}); only Go >= 1.17 on amd64 (register ABI) is supported", v(go_version))
            }
            ProbeError::BadAddress(a) => {
                write!(f, "{GO_WRITE_KEY_LOG} at {a:#x} lies in no executable segment of the file")
            }
        }
    }
}

impl std::error::Error for ProbeError {}

impl From<ElfError> for ProbeError {
    fn from(e: ElfError) -> Self {
        ProbeError::Elf(e)
    }
}

/// Finds the entry of `crypto/tls.(*Config).writeKeyLog` in the executable `bytes` and
/// checks that its arguments are in registers.
pub fn find_go_probe(bytes: &[u8]) -> Result<ProbePoint, ProbeError> {
    let elf = Elf::parse(bytes)?;
    if elf.machine != EM_X86_64 {
        return Err(ProbeError::NotAmd64(elf.machine));
    }
    let go_version = go_version(&elf);
    let text = elf.section(".text").map(|s| s.addr);
    let pcln = elf
        .section(".gopclntab")
        .and_then(|s| elf.section_data(&s))
        .and_then(|d| Pcln::parse(d, text).ok());
    if go_version.is_none() && pcln.is_none() {
        return Err(ProbeError::NotGo);
    }
    let (address, found_by) = match elf.symbol(GO_WRITE_KEY_LOG) {
        Some(s) => (s.value, FoundBy::Symtab),
        None => match pcln.as_ref().and_then(|p| p.find(GO_WRITE_KEY_LOG)) {
            Some(a) => (a, FoundBy::Pclntab),
            None => return Err(ProbeError::NoFunction { go_version }),
        },
    };
    let pcln = pcln.map(|p| p.version);
    let abi = abi(go_version.as_deref(), pcln).map_err(|why| ProbeError::UnsupportedAbi {
        go_version: go_version.clone(),
        why,
    })?;
    let file_offset = match elf.segment_of(address) {
        Some(s) if s.is_exec() => elf.file_offset(address),
        _ => None,
    }
    .ok_or(ProbeError::BadAddress(address))?;
    Ok(ProbePoint {
        address,
        file_offset,
        found_by,
        go_version,
        pcln,
        abi,
    })
}

/// The ABI by the build information's version, else by the pcln layout. Go 1.17 moved amd64
/// to the register ABI (go/src/cmd/compile/abi-internal.md; Go 1.17 release notes,
/// "Compiler"); 1.16 and 1.17 share a pcln layout, so that layout alone cannot tell.
fn abi(version: Option<&str>, pcln: Option<PclnVersion>) -> Result<GoAbi, &'static str> {
    if let Some((major, minor)) = version.and_then(parse_go_version) {
        return if (major, minor) >= (1, 17) {
            Ok(GoAbi::Register)
        } else {
            Err("Go < 1.17")
        };
    }
    match pcln {
        Some(PclnVersion::Go118 | PclnVersion::Go120) => Ok(GoAbi::Register),
        Some(PclnVersion::Go116) => Err("Go 1.16 or 1.17 and no readable version to tell which"),
        Some(PclnVersion::Go12) => Err("Go < 1.16"),
        None => Err("no readable version and no pcln table"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abi_by_version_then_layout() {
        assert_eq!(abi(Some("go1.19.8"), None), Ok(GoAbi::Register));
        assert_eq!(
            abi(Some("go1.17"), Some(PclnVersion::Go116)),
            Ok(GoAbi::Register)
        );
        assert!(abi(Some("go1.16.3"), Some(PclnVersion::Go116)).is_err());
        assert_eq!(abi(None, Some(PclnVersion::Go120)), Ok(GoAbi::Register));
        assert!(abi(None, Some(PclnVersion::Go116)).is_err());
        assert!(abi(None, None).is_err());
    }

    #[test]
    fn symbol_table_of_a_non_go_file_is_not_go() {
        let f = crate::elf::tests::tiny_elf(GO_WRITE_KEY_LOG, 0x400150);
        assert_eq!(find_go_probe(&f), Err(ProbeError::NotGo));
        assert!(matches!(
            find_go_probe(b"#!/bin/sh\n"),
            Err(ProbeError::Elf(_))
        ));
    }
}
