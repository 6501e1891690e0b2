//! Go's function table, `.gopclntab` (the "pcln table"), which `go build -ldflags "-s -w"`
//! keeps when it drops the ELF symbol table: the runtime needs it for stack traces. Read as
//! Go's own `debug/gosym` reads it (go/src/debug/gosym/pclntab.go, `LineTable.parsePclnTab`,
//! `funcTab`, `funcData`): a header whose magic gives the layout, then a function table of
//! (entry, func offset) pairs sorted by entry, each `_func` naming its function by an offset
//! into the function name table.
//!
//! Layouts (magic, little-endian, from pclntab.go's `go12magic`, `go116magic`,
//! `go118magic` and Go 1.20's `go120magic`):
//!
//! | magic | Go | header words after the 8-byte prefix | functab fields |
//! |---|---|---|---|
//! | `0xfffffffb` | 1.2 to 1.15 | nfunc, then the functab | pointer-sized |
//! | `0xfffffffa` | 1.16, 1.17 | nfunc, nfiles, funcnametab, cutab, filetab, pctab, functab | pointer-sized |
//! | `0xfffffff0` | 1.18, 1.19 | nfunc, nfiles, textStart, funcnametab, cutab, filetab, pctab, functab | `u32`, entry relative to the text start |
//! | `0xfffffff1` | 1.20 and later | as 1.18 | as 1.18 |
//!
//! Contract: no input makes [`Pcln::parse`] or [`Pcln::find`] panic or read outside the
//! table; a malformed table is an error or a name that is not found. Fuzzed (`fuzz/`,
//! target `probe`).
#![forbid(unsafe_code)]

use std::fmt;

/// The pcln table layout, named by the first Go release that wrote it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PclnVersion {
    /// Go 1.2 to 1.15.
    Go12,
    /// Go 1.16 and 1.17.
    Go116,
    /// Go 1.18 and 1.19.
    Go118,
    /// Go 1.20 and later.
    Go120,
}

impl PclnVersion {
    /// The Go releases that write this layout.
    pub fn releases(self) -> &'static str {
        match self {
            PclnVersion::Go12 => "Go 1.2 to 1.15",
            PclnVersion::Go116 => "Go 1.16 or 1.17",
            PclnVersion::Go118 => "Go 1.18 or 1.19",
            PclnVersion::Go120 => "Go 1.20 or later",
        }
    }
}

/// Why a pcln table cannot be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PclnError {
    /// The first four bytes are no known magic (or the table is big-endian).
    BadMagic(u32),
    /// The header or a table it points to does not fit in the section.
    Malformed(&'static str),
}

impl fmt::Display for PclnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PclnError::BadMagic(m) => write!(f, "not a little-endian Go pcln table (magic {m:#x})"),
            PclnError::Malformed(what) => write!(f, "malformed Go pcln table: {what}"),
        }
    }
}

impl std::error::Error for PclnError {}

/// A parsed pcln table, borrowing the section's bytes.
#[derive(Clone, Debug)]
pub struct Pcln<'a> {
    /// The table's layout.
    pub version: PclnVersion,
    /// Pointer size of the target, bytes (4 or 8).
    pub ptr_size: u8,
    /// Number of functions in the function table.
    pub nfunc: u64,
    /// The address function entries are relative to (Go >= 1.18).
    pub text_start: u64,
    /// The function table: `nfunc` (entry, func offset) pairs and the end PC.
    functab: &'a [u8],
    /// Where `_func` records are (func offsets are relative to this).
    funcdata: &'a [u8],
    /// Where function names are (`_func.nameoff` is relative to this).
    funcnametab: &'a [u8],
}

/// The functab of Go 1.2 to 1.15 starts right after the 8-byte prefix and the nfunc word.
const PREFIX: usize = 8;

fn uint(b: &[u8], off: usize, size: usize) -> Option<u64> {
    let v = b.get(off..off.checked_add(size)?)?;
    Some(match size {
        4 => u64::from(u32::from_le_bytes(v.try_into().ok()?)),
        8 => u64::from_le_bytes(v.try_into().ok()?),
        _ => return None,
    })
}

impl<'a> Pcln<'a> {
    /// Reads the header of the pcln table `data`. `text` is the address of the `.text`
    /// section, the base of Go >= 1.18's entry offsets (what `debug/gosym` uses too: the
    /// header's own textStart "may be unrelocated"); `None` takes the header's.
    pub fn parse(data: &'a [u8], text: Option<u64>) -> Result<Self, PclnError> {
        let short = PclnError::Malformed("short header");
        let magic = uint(data, 0, 4).ok_or(short.clone())? as u32;
        let version = match magic {
            0xffff_fffb => PclnVersion::Go12,
            0xffff_fffa => PclnVersion::Go116,
            0xffff_fff0 => PclnVersion::Go118,
            0xffff_fff1 => PclnVersion::Go120,
            m => return Err(PclnError::BadMagic(m)),
        };
        // Bytes 4 and 5 are zero; 6 is the PC quantum (1 on x86), 7 the pointer size.
        let h = data.get(..PREFIX).ok_or(short)?;
        if h[4] != 0 || h[5] != 0 {
            return Err(PclnError::Malformed("non-zero header padding"));
        }
        let ptr_size = h[7];
        if ptr_size != 4 && ptr_size != 8 {
            return Err(PclnError::Malformed("pointer size is neither 4 nor 8"));
        }
        let ps = usize::from(ptr_size);
        let word = |i: usize| -> Result<u64, PclnError> {
            uint(data, PREFIX + i * ps, ps).ok_or(PclnError::Malformed("short header"))
        };
        let tail = |off: u64| -> Result<&'a [u8], PclnError> {
            usize::try_from(off)
                .ok()
                .and_then(|o| data.get(o..))
                .ok_or(PclnError::Malformed("table offset outside the section"))
        };
        let nfunc = word(0)?;
        let (text_start, funcnametab, funcdata, field) = match version {
            PclnVersion::Go12 => (0, data, data, ps),
            PclnVersion::Go116 => (0, tail(word(2)?)?, tail(word(6)?)?, ps),
            PclnVersion::Go118 | PclnVersion::Go120 => (
                text.unwrap_or(word(2)?),
                tail(word(3)?)?,
                tail(word(7)?)?,
                4,
            ),
        };
        let functab_start = match version {
            PclnVersion::Go12 => data
                .get(PREFIX + ps..)
                .ok_or(PclnError::Malformed("short header"))?,
            _ => funcdata,
        };
        // nfunc pairs and the end PC.
        let len = nfunc
            .checked_mul(2)
            .and_then(|n| n.checked_add(1))
            .and_then(|n| n.checked_mul(field as u64))
            .and_then(|n| usize::try_from(n).ok())
            .ok_or(PclnError::Malformed("function count too large"))?;
        let functab = functab_start
            .get(..len)
            .ok_or(PclnError::Malformed("function table outside the section"))?;
        Ok(Pcln {
            version,
            ptr_size,
            nfunc,
            text_start,
            functab,
            funcdata,
            funcnametab,
        })
    }

    fn field_size(&self) -> usize {
        match self.version {
            PclnVersion::Go12 | PclnVersion::Go116 => usize::from(self.ptr_size),
            PclnVersion::Go118 | PclnVersion::Go120 => 4,
        }
    }

    /// Entry address and name of function `i` (`None` when its record is out of bounds).
    pub fn func(&self, i: u64) -> Option<(u64, &'a [u8])> {
        let fs = self.field_size();
        let i = usize::try_from(i).ok()?;
        let entry = uint(self.functab, i.checked_mul(2)?.checked_mul(fs)?, fs)?;
        let funcoff = uint(
            self.functab,
            i.checked_mul(2)?.checked_add(1)?.checked_mul(fs)?,
            fs,
        )?;
        let func = self.funcdata.get(usize::try_from(funcoff).ok()?..)?;
        // _func: the entry (pointer-sized before Go 1.18, a u32 offset since), then nameoff.
        let entry_size = match self.version {
            PclnVersion::Go12 | PclnVersion::Go116 => usize::from(self.ptr_size),
            PclnVersion::Go118 | PclnVersion::Go120 => 4,
        };
        let nameoff = uint(func, entry_size, 4)?;
        let names = self.funcnametab.get(usize::try_from(nameoff).ok()?..)?;
        let name = &names[..names.iter().position(|&c| c == 0)?];
        let entry = match self.version {
            PclnVersion::Go12 | PclnVersion::Go116 => entry,
            PclnVersion::Go118 | PclnVersion::Go120 => self.text_start.checked_add(entry)?,
        };
        Some((entry, name))
    }

    /// The entry address of the function named `name` (Go's full name, e.g.
    /// `crypto/tls.(*Config).writeKeyLog`), if the table lists it.
    pub fn find(&self, name: &str) -> Option<u64> {
        (0..self.nfunc)
            .filter_map(|i| self.func(i))
            .find(|(_, n)| *n == name.as_bytes())
            .map(|(entry, _)| entry)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A Go 1.18-layout table with the given (entry offset, name) functions.
    pub(crate) fn table118(funcs: &[(u32, &str)]) -> Vec<u8> {
        let mut names = Vec::new();
        let mut nameoffs = Vec::new();
        for (_, n) in funcs {
            nameoffs.push(names.len() as u32);
            names.extend_from_slice(n.as_bytes());
            names.push(0);
        }
        let header = 8 + 8 * 8;
        let nametab = header;
        let functab = nametab + names.len();
        let nf = funcs.len();
        // functab: pairs + end, then the _func records (entryoff u32, nameoff u32, 8 more).
        let funcs_at = (nf * 2 + 1) * 4;
        let mut out = vec![0u8; 8];
        out[..4].copy_from_slice(&0xffff_fff0u32.to_le_bytes());
        out[6] = 1;
        out[7] = 8;
        for w in [nf, 0, 0x401000, nametab, 0, 0, 0, functab] {
            out.extend_from_slice(&(w as u64).to_le_bytes());
        }
        out.extend_from_slice(&names);
        let mut ft = Vec::new();
        for (i, (entry, _)) in funcs.iter().enumerate() {
            ft.extend_from_slice(&entry.to_le_bytes());
            ft.extend_from_slice(&((funcs_at + i * 16) as u32).to_le_bytes());
        }
        ft.extend_from_slice(&0x1000u32.to_le_bytes());
        for (i, (entry, _)) in funcs.iter().enumerate() {
            ft.extend_from_slice(&entry.to_le_bytes());
            ft.extend_from_slice(&nameoffs[i].to_le_bytes());
            ft.extend_from_slice(&[0u8; 8]);
        }
        out.extend_from_slice(&ft);
        out
    }

    #[test]
    fn finds_a_function_by_name() {
        let t = table118(&[
            (0x10, "main.main"),
            (0x40, "crypto/tls.(*Config).writeKeyLog"),
            (0x90, "crypto/tls.(*Config).writeKeyLogX"),
        ]);
        let p = Pcln::parse(&t, None).unwrap();
        assert_eq!(p.version, PclnVersion::Go118);
        assert_eq!(p.nfunc, 3);
        assert_eq!(p.find("crypto/tls.(*Config).writeKeyLog"), Some(0x401040));
        assert_eq!(p.find("crypto/tls.(*Config).writeKey"), None);
        // The .text address wins over the header's.
        let p = Pcln::parse(&t, Some(0x1000)).unwrap();
        assert_eq!(p.find("main.main"), Some(0x1010));
    }

    #[test]
    fn damaged_tables_are_errors_or_misses() {
        assert_eq!(
            Pcln::parse(&[1, 2, 3, 4, 0, 0, 1, 8], None).unwrap_err(),
            PclnError::BadMagic(0x0403_0201)
        );
        let t = table118(&[(0x10, "main.main")]);
        for n in 0..t.len() {
            if let Ok(p) = Pcln::parse(&t[..n], None) {
                let _ = p.find("main.main");
            }
        }
        let mut big = t.clone();
        big[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(Pcln::parse(&big, None).is_err());
        let mut bad_ptr = t;
        bad_ptr[7] = 3;
        assert!(Pcln::parse(&bad_ptr, None).is_err());
    }
}
