//! A small reader of 64-bit little-endian ELF files (the System V gABI, "ELF-64 Object File
//! Format"): section and program headers, symbol lookup, virtual address to file offset.
//!
//! Contract: [`Elf::parse`] checks every header table's extent against the input once; after
//! that no accessor can panic, whatever the bytes say (each read is a checked `get`), and an
//! accessor that would read past the input returns `None`. Fuzzed (`fuzz/`, target `probe`).
#![forbid(unsafe_code)]

use std::fmt;

/// `e_machine` of x86-64 (gABI `EM_X86_64`).
pub(crate) const EM_X86_64: u16 = 62;
/// `sh_type` of a section that occupies no file space (`SHT_NOBITS`, e.g. `.bss`).
const SHT_NOBITS: u32 = 8;
/// `sh_type` of the static symbol table (`SHT_SYMTAB`) and of the dynamic one (`SHT_DYNSYM`).
const SHT_SYMTAB: u32 = 2;
const SHT_DYNSYM: u32 = 11;
/// `p_type` of a loadable segment and the executable bit of `p_flags`.
const PT_LOAD: u32 = 1;
const PF_X: u32 = 1;
/// Section header index escapes (gABI "Special Section Indexes").
const SHN_XINDEX: u16 = 0xffff;
/// More section headers than this is not a binary we attach to.
const MAX_SECTIONS: u64 = 1 << 16;
const MAX_SEGMENTS: u64 = 1 << 12;

/// Why bytes are not an ELF file this reader can use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ElfError {
    /// No `\x7fELF` magic.
    NotElf,
    /// A 32-bit or big-endian ELF file.
    Unsupported(&'static str),
    /// A header table points outside the file, or its sizes are wrong.
    Malformed(&'static str),
}

impl fmt::Display for ElfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ElfError::NotElf => f.write_str("not an ELF file"),
            ElfError::Unsupported(what) => write!(f, "unsupported ELF file: {what}"),
            ElfError::Malformed(what) => write!(f, "malformed ELF file: {what}"),
        }
    }
}

impl std::error::Error for ElfError {}

/// One section header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Section {
    /// Offset of its name in the section name table.
    pub name: u32,
    /// `sh_type`.
    pub kind: u32,
    /// `sh_addr`: its virtual address when loaded.
    pub addr: u64,
    /// `sh_offset`: where its bytes are in the file.
    pub offset: u64,
    /// `sh_size`, bytes.
    pub size: u64,
    /// `sh_link` (for a symbol table: its string table's index).
    pub link: u32,
    /// `sh_entsize`: bytes per entry of a table section.
    pub entsize: u64,
}

/// One program header of a loadable segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// `p_flags` (PF_X, PF_W, PF_R).
    pub flags: u32,
    /// `p_offset`: where it starts in the file.
    pub offset: u64,
    /// `p_vaddr`: its virtual address.
    pub vaddr: u64,
    /// `p_filesz`: bytes taken from the file.
    pub filesz: u64,
    /// `p_memsz`: bytes in memory.
    pub memsz: u64,
}

impl Segment {
    /// Whether the segment is mapped executable.
    pub(crate) fn is_exec(&self) -> bool {
        self.flags & PF_X != 0
    }
}

/// A symbol found by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Symbol {
    /// `st_value`: the symbol's virtual address.
    pub value: u64,
    /// `st_size`, bytes.
    pub size: u64,
    /// From `.dynsym` rather than `.symtab`.
    pub dynamic: bool,
}

/// A parsed ELF file borrowing its bytes.
#[derive(Clone, Debug)]
pub struct Elf<'a> {
    data: &'a [u8],
    /// `e_machine`.
    pub machine: u16,
    sections: Vec<Section>,
    segments: Vec<Segment>,
    shstrndx: usize,
}

fn u16_at(b: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_le_bytes(
        b.get(off..off.checked_add(2)?)?.try_into().ok()?,
    ))
}
fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(off..off.checked_add(4)?)?.try_into().ok()?,
    ))
}
fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        b.get(off..off.checked_add(8)?)?.try_into().ok()?,
    ))
}

/// `b[off..off + len]` with every bound checked (offsets are `u64` in ELF).
pub(crate) fn slice(b: &[u8], off: u64, len: u64) -> Option<&[u8]> {
    let start = usize::try_from(off).ok()?;
    let end = start.checked_add(usize::try_from(len).ok()?)?;
    b.get(start..end)
}

/// A table of `num` entries of `entsize` bytes at `off`, all inside `data`.
fn table(data: &[u8], off: u64, entsize: u16, want: u16, num: u64) -> Result<&[u8], ElfError> {
    if num == 0 {
        return Ok(&[]);
    }
    if entsize < want {
        return Err(ElfError::Malformed("header table entry too small"));
    }
    let len = u64::from(entsize)
        .checked_mul(num)
        .ok_or(ElfError::Malformed("header table too large"))?;
    slice(data, off, len).ok_or(ElfError::Malformed("header table outside the file"))
}

impl<'a> Elf<'a> {
    /// Reads the ELF header, the section headers and the loadable program headers.
    pub fn parse(data: &'a [u8]) -> Result<Self, ElfError> {
        if data.get(..4) != Some(b"\x7fELF") {
            return Err(ElfError::NotElf);
        }
        let h = data
            .get(..64)
            .ok_or(ElfError::Malformed("short ELF header"))?;
        // e_ident[EI_CLASS] = ELFCLASS64, e_ident[EI_DATA] = ELFDATA2LSB.
        if h[4] != 2 {
            return Err(ElfError::Unsupported("not 64-bit"));
        }
        if h[5] != 1 {
            return Err(ElfError::Unsupported("not little-endian"));
        }
        let bad = ElfError::Malformed("short ELF header");
        let machine = u16_at(h, 18).ok_or(bad.clone())?;
        let phoff = u64_at(h, 32).ok_or(bad.clone())?;
        let shoff = u64_at(h, 40).ok_or(bad.clone())?;
        let phentsize = u16_at(h, 54).ok_or(bad.clone())?;
        let phnum = u16_at(h, 56).ok_or(bad.clone())?;
        let shentsize = u16_at(h, 58).ok_or(bad.clone())?;
        let mut shnum = u64::from(u16_at(h, 60).ok_or(bad.clone())?);
        let mut shstrndx = u64::from(u16_at(h, 62).ok_or(bad)?);

        // Extended numbering: with e_shnum 0 the count is section 0's sh_size, and with
        // e_shstrndx SHN_XINDEX the index is its sh_link (gABI, "Sections").
        if shoff != 0 && (shnum == 0 || shstrndx == u64::from(SHN_XINDEX)) {
            let first = table(data, shoff, shentsize, 64, 1)?;
            if shnum == 0 {
                shnum = u64_at(first, 32).unwrap_or(0);
            }
            if shstrndx == u64::from(SHN_XINDEX) {
                shstrndx = u64::from(u32_at(first, 40).unwrap_or(0));
            }
        }
        if shoff == 0 {
            shnum = 0;
        }
        if shnum > MAX_SECTIONS {
            return Err(ElfError::Malformed("too many sections"));
        }
        let sh = table(data, shoff, shentsize, 64, shnum)?;
        let mut sections = Vec::with_capacity(shnum as usize);
        for e in sh.chunks_exact(usize::from(shentsize.max(1))) {
            let r = (|| {
                Some(Section {
                    name: u32_at(e, 0)?,
                    kind: u32_at(e, 4)?,
                    addr: u64_at(e, 16)?,
                    offset: u64_at(e, 24)?,
                    size: u64_at(e, 32)?,
                    link: u32_at(e, 40)?,
                    entsize: u64_at(e, 56)?,
                })
            })();
            sections.push(r.ok_or(ElfError::Malformed("short section header"))?);
        }

        let phnum = u64::from(phnum);
        if phnum > MAX_SEGMENTS {
            return Err(ElfError::Malformed("too many program headers"));
        }
        let ph = table(data, phoff, phentsize, 56, phnum)?;
        let mut segments = Vec::new();
        for e in ph.chunks_exact(usize::from(phentsize.max(1))) {
            if u32_at(e, 0) != Some(PT_LOAD) {
                continue;
            }
            let r = (|| {
                Some(Segment {
                    flags: u32_at(e, 4)?,
                    offset: u64_at(e, 8)?,
                    vaddr: u64_at(e, 16)?,
                    filesz: u64_at(e, 32)?,
                    memsz: u64_at(e, 40)?,
                })
            })();
            segments.push(r.ok_or(ElfError::Malformed("short program header"))?);
        }
        Ok(Elf {
            data,
            machine,
            sections,
            segments,
            shstrndx: usize::try_from(shstrndx).unwrap_or(usize::MAX),
        })
    }

    /// The file's bytes.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// The section headers.
    pub fn sections(&self) -> &[Section] {
        &self.sections
    }

    /// The loadable segments.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// A NUL-terminated name at `off` in string table section `table` (bounded by the section).
    fn name_in(&self, table: usize, off: u32) -> Option<&'a [u8]> {
        let t = self.sections.get(table)?;
        let strings = self.section_data(t)?;
        let s = strings.get(usize::try_from(off).ok()?..)?;
        let end = s.iter().position(|&c| c == 0)?;
        Some(&s[..end])
    }

    /// The first section named `name`.
    pub fn section(&self, name: &str) -> Option<Section> {
        self.sections
            .iter()
            .find(|s| self.name_in(self.shstrndx, s.name) == Some(name.as_bytes()))
            .copied()
    }

    /// A section's bytes in the file (`None` for `SHT_NOBITS` or one outside the file).
    pub fn section_data(&self, s: &Section) -> Option<&'a [u8]> {
        if s.kind == SHT_NOBITS {
            return None;
        }
        slice(self.data, s.offset, s.size)
    }

    /// The symbol `name` from `.symtab`, else from `.dynsym`, whose value is not 0.
    pub fn symbol(&self, name: &str) -> Option<Symbol> {
        [SHT_SYMTAB, SHT_DYNSYM].iter().find_map(|&kind| {
            self.sections
                .iter()
                .filter(|s| s.kind == kind)
                .find_map(|s| self.symbol_in(s, name))
        })
    }

    fn symbol_in(&self, table: &Section, name: &str) -> Option<Symbol> {
        let data = self.section_data(table)?;
        let strtab = usize::try_from(table.link).ok()?;
        // Elf64_Sym: st_name u32, st_info u8, st_other u8, st_shndx u16, st_value u64, st_size u64.
        let entsize = usize::try_from(table.entsize).ok().filter(|&e| e >= 24)?;
        data.chunks_exact(entsize).find_map(|e| {
            let value = u64_at(e, 8)?;
            (value != 0 && self.name_in(strtab, u32_at(e, 0)?) == Some(name.as_bytes())).then(
                || Symbol {
                    value,
                    size: u64_at(e, 16).unwrap_or(0),
                    dynamic: table.kind == SHT_DYNSYM,
                },
            )
        })
    }

    /// The first symbol of `.symtab`, else `.dynsym`, whose name satisfies `pred` and whose
    /// value is not 0, with its name.
    pub fn symbol_where(&self, pred: impl Fn(&[u8]) -> bool) -> Option<(&'a [u8], Symbol)> {
        [SHT_SYMTAB, SHT_DYNSYM].iter().find_map(|&kind| {
            self.sections
                .iter()
                .filter(|s| s.kind == kind)
                .find_map(|table| {
                    let data = self.section_data(table)?;
                    let strtab = usize::try_from(table.link).ok()?;
                    let entsize = usize::try_from(table.entsize).ok().filter(|&e| e >= 24)?;
                    data.chunks_exact(entsize).find_map(|e| {
                        let value = u64_at(e, 8)?;
                        let name = self.name_in(strtab, u32_at(e, 0)?)?;
                        (value != 0 && pred(name)).then(|| {
                            (
                                name,
                                Symbol {
                                    value,
                                    size: u64_at(e, 16).unwrap_or(0),
                                    dynamic: table.kind == SHT_DYNSYM,
                                },
                            )
                        })
                    })
                })
        })
    }

    /// The virtual address of file offset `off`, if a loadable segment's file image holds it.
    pub fn vaddr_of_offset(&self, off: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|s| off >= s.offset && off - s.offset < s.filesz)
            .and_then(|s| s.vaddr.checked_add(off - s.offset))
    }

    /// The loadable segment whose file image holds virtual address `va`.
    pub(crate) fn segment_of(&self, va: u64) -> Option<&Segment> {
        self.segments
            .iter()
            .find(|s| va >= s.vaddr && va - s.vaddr < s.filesz)
    }

    /// The file offset of virtual address `va` (what a uprobe is placed by), if a loadable
    /// segment's file image holds it.
    pub(crate) fn file_offset(&self, va: u64) -> Option<u64> {
        let s = self.segment_of(va)?;
        (va - s.vaddr).checked_add(s.offset)
    }

    /// `len` bytes at virtual address `va`, if the file holds them all in one segment.
    pub(crate) fn read_va(&self, va: u64, len: u64) -> Option<&'a [u8]> {
        let s = self.segment_of(va)?;
        if len > s.filesz - (va - s.vaddr) {
            return None;
        }
        slice(self.data, self.file_offset(va)?, len)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A minimal ELF64 file: header, one PT_LOAD segment (r-x, vaddr 0x400000 from offset 0),
    /// sections: null, .text (at 0x401000 / offset 0x1000... kept small), .shstrtab,
    /// .symtab, .strtab.
    pub(crate) fn tiny_elf(symbol: &str, value: u64) -> Vec<u8> {
        let mut f = vec![0u8; 0x200];
        f[..4].copy_from_slice(b"\x7fELF");
        f[4] = 2;
        f[5] = 1;
        f[6] = 1;
        f[16..18].copy_from_slice(&2u16.to_le_bytes()); // ET_EXEC
        f[18..20].copy_from_slice(&EM_X86_64.to_le_bytes());
        f[32..40].copy_from_slice(&64u64.to_le_bytes()); // phoff
        f[54..56].copy_from_slice(&56u16.to_le_bytes());
        f[56..58].copy_from_slice(&1u16.to_le_bytes());
        // PT_LOAD r-x: vaddr 0x400000, offset 0, filesz 0x200.
        let p = 64;
        f[p..p + 4].copy_from_slice(&PT_LOAD.to_le_bytes());
        f[p + 4..p + 8].copy_from_slice(&5u32.to_le_bytes());
        f[p + 16..p + 24].copy_from_slice(&0x400000u64.to_le_bytes());
        f[p + 32..p + 40].copy_from_slice(&0x200u64.to_le_bytes());
        f[p + 40..p + 48].copy_from_slice(&0x200u64.to_le_bytes());
        // String tables.
        let shstr = b"\0.shstrtab\0.symtab\0.strtab\0";
        f[0x100..0x100 + shstr.len()].copy_from_slice(shstr);
        let mut strtab = vec![0u8];
        strtab.extend_from_slice(symbol.as_bytes());
        strtab.push(0);
        f[0x120..0x120 + strtab.len()].copy_from_slice(&strtab);
        // One symbol after the null one.
        let s = 0x180 + 24;
        f[s..s + 4].copy_from_slice(&1u32.to_le_bytes());
        f[s + 4] = 0x12; // STB_GLOBAL, STT_FUNC
        f[s + 8..s + 16].copy_from_slice(&value.to_le_bytes());
        // Section headers appended at 0x200.
        let mut sh = vec![0u8; 64]; // null
        let mut push = |name: u32, kind: u32, off: u64, size: u64, link: u32, entsize: u64| {
            let mut e = vec![0u8; 64];
            e[0..4].copy_from_slice(&name.to_le_bytes());
            e[4..8].copy_from_slice(&kind.to_le_bytes());
            e[24..32].copy_from_slice(&off.to_le_bytes());
            e[32..40].copy_from_slice(&size.to_le_bytes());
            e[40..44].copy_from_slice(&link.to_le_bytes());
            e[56..64].copy_from_slice(&entsize.to_le_bytes());
            sh.extend_from_slice(&e);
        };
        push(1, 3, 0x100, shstr.len() as u64, 0, 0); // 1: .shstrtab
        push(11, SHT_SYMTAB, 0x180, 48, 3, 24); // 2: .symtab -> 3
        push(19, 3, 0x120, strtab.len() as u64, 0, 0); // 3: .strtab
        f[40..48].copy_from_slice(&0x200u64.to_le_bytes());
        f[58..60].copy_from_slice(&64u16.to_le_bytes());
        f[60..62].copy_from_slice(&4u16.to_le_bytes());
        f[62..64].copy_from_slice(&1u16.to_le_bytes());
        f.extend_from_slice(&sh);
        f
    }

    #[test]
    fn finds_symbol_section_and_offset() {
        let f = tiny_elf("crypto/tls.(*Config).writeKeyLog", 0x400150);
        let e = Elf::parse(&f).unwrap();
        assert_eq!(e.machine, EM_X86_64);
        assert!(e.section(".symtab").is_some());
        assert!(e.section(".gopclntab").is_none());
        let s = e.symbol("crypto/tls.(*Config).writeKeyLog").unwrap();
        assert_eq!(s.value, 0x400150);
        assert!(!s.dynamic);
        assert_eq!(e.file_offset(0x400150), Some(0x150));
        assert_eq!(e.file_offset(0x400200), None);
        assert_eq!(e.read_va(0x4001f0, 16).map(|b| b.len()), Some(16));
        assert_eq!(e.read_va(0x4001f0, 17), None);
        assert!(e.symbol("crypto/tls.(*Config).writeKeyLo").is_none());
    }

    #[test]
    fn rejects_what_it_cannot_read() {
        assert_eq!(Elf::parse(b"MZ").unwrap_err(), ElfError::NotElf);
        assert!(matches!(
            Elf::parse(b"\x7fELF\x02\x01"),
            Err(ElfError::Malformed(_))
        ));
        let mut f = tiny_elf("x", 0x400100);
        f[4] = 1;
        assert!(matches!(Elf::parse(&f), Err(ElfError::Unsupported(_))));
        let mut f = tiny_elf("x", 0x400100);
        f[40..48].copy_from_slice(&u64::MAX.to_le_bytes()); // shoff far away
        assert!(matches!(Elf::parse(&f), Err(ElfError::Malformed(_))));
        // Every truncation parses or fails without a panic.
        let f = tiny_elf("x", 0x400100);
        for n in 0..f.len() {
            let _ = Elf::parse(&f[..n]).map(|e| e.symbol("x"));
        }
    }
}
