//! HPACK (RFC 7541) decoding, one [`Decoder`] per direction of a connection.
//!
//! # Contract
//!
//! [`Decoder::decode`] never panics and always terminates, whatever the input: integers are
//! bounded to `u32` (at most 5 continuation octets), string lengths are checked against the
//! block before anything is read, and Huffman output is at most 8/5 of its input. Memory
//! grows by at most O(block length) per call plus the dynamic table, which holds at most
//! `max_size / 32` entries. Decoded headers borrow from the block, the static table, the
//! dynamic table or two reused scratch buffers: nothing is allocated per header unless the
//! header is inserted into the dynamic table (one allocation per inserted entry).
//!
//! Headers are delivered to the callback as they are decoded. After an error the callback
//! may already have seen some of the block's headers, and the compression context is no
//! longer reliable (a real peer would close the connection with COMPRESSION_ERROR).
//!
//! # Mid-stream captures
//!
//! A capture that begins after the connection started has missed earlier insertions, so
//! the peer's table holds entries this decoder never saw. [`Decoder::new_mid_stream`] makes
//! such references visible instead of fatal:
//!
//! * An index past the entries we know yields a placeholder [`HeaderRef`]: name
//!   `<unseen:N>` (N is the HPACK index as sent), value `<unseen>`, `name_unseen` and
//!   `value_unseen` set.
//! * A literal whose indexed name is unseen keeps its real value and gets the placeholder
//!   name with `name_unseen` set. With incremental indexing it is inserted into the table
//!   with that placeholder name (flagged), so later indices stay aligned and later references
//!   to it show the exact value with `name_unseen == true`.
//! * Eviction only evicts what we know. Because unseen entries are older than every entry we
//!   know, the real table evicts all of them before any of ours, so our entries are evicted
//!   at the right time; the approximation is that the size of a placeholder-named entry
//!   counts its (unknown) name as 0 octets, so such entries may stay a little longer than
//!   in the peer's table (harmless: the peer never references an index it has evicted).
//! * A dynamic table size update above the limit is accepted (and raises the limit): the
//!   SETTINGS_HEADER_TABLE_SIZE that allowed it may predate the capture. The table still
//!   never exceeds [`Decoder::set_cap`].
//!
//! # Bounded table
//!
//! [`Decoder::set_cap`] bounds the table whatever SETTINGS allowed; past the cap, references
//! to entries the capped table no longer holds decode as placeholders ([`Decoder::capped`]).
//!
//! # Example
//!
//! ```
//! use h2_frame_parser::hpack::Decoder;
//!
//! let mut dec = Decoder::new();
//! let mut seen = Vec::new();
//! // RFC 7541 C.3.1: indexed :method GET, :scheme http, :path /, literal :authority.
//! let block = b"\x82\x86\x84\x41\x0fwww.example.com";
//! dec.decode(block, |h| seen.push((h.name.to_vec(), h.value.to_vec()))).unwrap();
//! assert_eq!(seen[3], (b":authority".to_vec(), b"www.example.com".to_vec()));
//! assert_eq!(dec.table_len(), 1);
//! ```

use core::fmt;
use std::io::Write as _;

mod huffman;
mod table;

use table::{DynamicTable, Entry, STATIC_TABLE};

/// The initial SETTINGS_HEADER_TABLE_SIZE (RFC 9113 §6.5.2).
pub const DEFAULT_MAX_SIZE: u32 = 4096;

/// Value of a placeholder for an unseen dynamic-table entry.
pub const UNSEEN_VALUE: &[u8] = b"<unseen>";

/// One decoded header field. Borrowed; copy what you keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderRef<'a> {
    /// The field name.
    pub name: &'a [u8],
    /// The field value.
    pub value: &'a [u8],
    /// The name is a placeholder `<unseen:N>` (mid-stream mode only).
    pub name_unseen: bool,
    /// The value is the placeholder [`UNSEEN_VALUE`] (mid-stream mode only).
    pub value_unseen: bool,
    /// Sent as "literal header field never indexed" (0x10 pattern): the sender marked it
    /// sensitive.
    pub never_indexed: bool,
}

/// Why a header block could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HpackError {
    /// The block ended inside a representation.
    Truncated,
    /// An integer exceeded `u32` or used more than 5 continuation octets.
    IntegerOverflow,
    /// Index 0, or an index past the static and dynamic tables (normal mode).
    InvalidIndex(u32),
    /// A Huffman string contained the EOS symbol.
    HuffmanEos,
    /// A Huffman string ended with more than 7 bits of padding, or padding that is not a
    /// prefix of EOS.
    HuffmanPadding,
    /// A Huffman code that cannot be decoded.
    HuffmanInvalid,
    /// A dynamic table size update above SETTINGS_HEADER_TABLE_SIZE.
    SizeUpdateTooLarge {
        /// The size the update asked for.
        requested: u32,
        /// SETTINGS_HEADER_TABLE_SIZE in force.
        limit: u32,
    },
    /// A dynamic table size update after a header field representation.
    SizeUpdateNotAtStart,
}

impl fmt::Display for HpackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            HpackError::Truncated => f.write_str("header block truncated"),
            HpackError::IntegerOverflow => f.write_str("HPACK integer overflow"),
            HpackError::InvalidIndex(i) => write!(f, "invalid HPACK index {i}"),
            HpackError::HuffmanEos => f.write_str("Huffman string contains EOS"),
            HpackError::HuffmanPadding => f.write_str("invalid Huffman padding"),
            HpackError::HuffmanInvalid => f.write_str("invalid Huffman code"),
            HpackError::SizeUpdateTooLarge { requested, limit } => {
                write!(
                    f,
                    "dynamic table size update {requested} exceeds limit {limit}"
                )
            }
            HpackError::SizeUpdateNotAtStart => {
                f.write_str("dynamic table size update not at the start of a header block")
            }
        }
    }
}

impl std::error::Error for HpackError {}

/// Where a literal's name is.
enum Name<'b> {
    Static(usize),
    Dynamic(usize),
    /// In `scratch_name`: a Huffman-decoded name or an `<unseen:N>` placeholder.
    Scratch {
        unseen: bool,
    },
    Raw(&'b [u8]),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Indexing {
    Incremental,
    Without,
    Never,
}

/// An HPACK decoder: the dynamic table of one direction plus scratch buffers.
#[derive(Debug)]
pub struct Decoder {
    table: DynamicTable,
    /// SETTINGS_HEADER_TABLE_SIZE: the largest size a size update may ask for.
    limit: u32,
    /// The largest table this decoder keeps, whatever the peer asks (see [`Decoder::set_cap`]).
    cap: u32,
    /// A size update asked for more than `cap`: the table is smaller than the peer's.
    capped: bool,
    mid_stream: bool,
    scratch_name: Vec<u8>,
    scratch_value: Vec<u8>,
    /// The last block's header list size (RFC 9113 §6.5.2).
    list_size: u64,
    /// Moves at every change of state that decoding depends on (see [`Decoder::changes`]).
    changes: u64,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder::new()
    }
}

impl Decoder {
    /// For a connection seen from its start: empty table, maximum size 4096.
    pub fn new() -> Self {
        Decoder {
            table: DynamicTable::new(DEFAULT_MAX_SIZE as usize),
            limit: DEFAULT_MAX_SIZE,
            cap: u32::MAX,
            capped: false,
            mid_stream: false,
            scratch_name: Vec::new(),
            scratch_value: Vec::new(),
            list_size: 0,
            changes: 0,
        }
    }

    /// For a capture that began mid-connection: references to entries we never saw become
    /// placeholders (see the module docs).
    pub fn new_mid_stream() -> Self {
        Decoder {
            mid_stream: true,
            ..Decoder::new()
        }
    }

    /// Whether references to entries never seen decode as placeholders.
    pub fn is_mid_stream(&self) -> bool {
        self.mid_stream
    }

    /// Call when this decoder's side has acknowledged SETTINGS_HEADER_TABLE_SIZE `n`. A smaller
    /// limit shrinks the table at once (the encoder must shrink to at most `n` anyway); a larger
    /// one only permits later size updates up to `n` (RFC 7541 §4.2).
    pub fn set_max_size_limit(&mut self, n: u32) {
        self.changed();
        self.limit = n;
        if self.table.max_size() > n as usize {
            self.table.set_max_size(n as usize);
        }
    }

    /// The SETTINGS_HEADER_TABLE_SIZE in force (see [`Decoder::set_max_size_limit`]).
    pub fn max_size_limit(&self) -> u32 {
        self.limit
    }

    /// Bounds the dynamic table to `cap` octets whatever the protocol allows (memory for a
    /// table sized as sent could reach 4 GiB). A size update above `cap` sets the table to
    /// `cap` and [`Decoder::capped`]: entries then leave the table earlier than in the peer's,
    /// and a reference to one of those decodes as a placeholder (as in mid-stream mode)
    /// instead of failing.
    pub fn set_cap(&mut self, cap: u32) {
        self.changed();
        self.cap = cap;
        if self.table.max_size() > cap as usize {
            self.table.set_max_size(cap as usize);
            self.capped = true;
        }
    }

    /// A size update asked for more than the cap (see [`Decoder::set_cap`]).
    pub fn capped(&self) -> bool {
        self.capped
    }

    /// The current maximum table size (the last size update, or the initial 4096).
    pub fn max_size(&self) -> usize {
        self.table.max_size()
    }

    /// Number of dynamic-table entries we know.
    pub fn table_len(&self) -> usize {
        self.table.len()
    }

    /// Size of the known dynamic-table entries per RFC 7541 §4.1.
    pub fn table_size(&self) -> usize {
        self.table.size()
    }

    /// The header list size of the last block [`Decoder::decode`] read (RFC 9113 §6.5.2: each
    /// field's name and value lengths plus 32), as far as it was decoded. A small block can
    /// reference large table entries many times: this is what it expands to.
    pub fn last_list_size(&self) -> u64 {
        self.list_size
    }

    /// A count that moves whenever the state decoding depends on changes: an entry inserted,
    /// the table emptied or resized, the size limit or the cap set. Two decodes of the same
    /// block on this decoder with the same count before each (and no change made by the
    /// first) deliver the same headers, list size and result: a caller may keep the first's
    /// output instead of decoding again. Errors do not move it: the caller is expected to
    /// drop the decoder (or stop remembering) after one.
    pub fn changes(&self) -> u64 {
        self.changes
    }

    #[inline(always)]
    fn changed(&mut self) {
        self.changes = self.changes.wrapping_add(1);
    }

    #[inline(always)]
    fn count(&mut self, n: usize) {
        self.list_size += n as u64 + 32;
    }

    /// Decodes one complete header block (the concatenated fragments of HEADERS or
    /// PUSH_PROMISE and its CONTINUATION frames), calling `f` for each header in order.
    /// Inlined: each caller has its own closure, and the call per block is hot.
    #[inline(always)]
    pub fn decode<F: FnMut(HeaderRef<'_>)>(
        &mut self,
        block: &[u8],
        mut f: F,
    ) -> Result<(), HpackError> {
        let mut pos = 0;
        let mut at_start = true;
        self.list_size = 0;
        while let Some(&first) = block.get(pos) {
            if first & 0x80 != 0 {
                // Indexed Header Field (§6.1).
                at_start = false;
                let index = decode_int(block, &mut pos, 7)?;
                self.indexed(index, &mut f)?;
            } else if first & 0x40 != 0 {
                // Literal Header Field with Incremental Indexing (§6.2.1).
                at_start = false;
                self.literal(block, &mut pos, 6, Indexing::Incremental, &mut f)?;
            } else if first & 0x20 != 0 {
                // Dynamic Table Size Update (§6.3). "This dynamic table size update MUST
                // occur at the beginning of the first header block following the change to
                // the dynamic table size." (§4.2) Anywhere else is a decoding error.
                if !at_start {
                    return Err(HpackError::SizeUpdateNotAtStart);
                }
                let size = decode_int(block, &mut pos, 5)?;
                self.size_update(size)?;
            } else {
                // Literal Header Field without Indexing (§6.2.2) or Never Indexed (§6.2.3).
                at_start = false;
                let mode = if first & 0x10 != 0 {
                    Indexing::Never
                } else {
                    Indexing::Without
                };
                self.literal(block, &mut pos, 4, mode, &mut f)?;
            }
        }
        Ok(())
    }

    fn size_update(&mut self, size: u32) -> Result<(), HpackError> {
        self.changed();
        // "The new maximum size MUST be lower than or equal to the limit determined by the
        // protocol using HPACK. A value that exceeds this limit MUST be treated as a decoding
        // error." (§6.3)
        if size > self.limit {
            if !self.mid_stream {
                return Err(HpackError::SizeUpdateTooLarge {
                    requested: size,
                    limit: self.limit,
                });
            }
            self.limit = size;
        }
        if size > self.cap {
            self.capped = true;
        }
        self.table.set_max_size(size.min(self.cap) as usize);
        Ok(())
    }

    /// Where HPACK index `index` points. Writes a placeholder name into `scratch_name` for an
    /// unseen entry in mid-stream mode.
    fn lookup(&mut self, index: u32) -> Result<Name<'static>, HpackError> {
        let i = index as usize;
        // "The index value of 0 is not used. It MUST be treated as a decoding error if found
        // in an indexed header field representation." (§6.1)
        if i == 0 {
            return Err(HpackError::InvalidIndex(index));
        }
        if i <= STATIC_TABLE.len() {
            return Ok(Name::Static(i - 1));
        }
        let d = i - STATIC_TABLE.len() - 1;
        if d < self.table.len() {
            return Ok(Name::Dynamic(d));
        }
        // "Indices strictly greater than the sum of the lengths of both tables MUST be
        // treated as a decoding error." (§2.3.3)
        if !self.mid_stream && !self.capped {
            return Err(HpackError::InvalidIndex(index));
        }
        self.scratch_name.clear();
        let _ = write!(self.scratch_name, "<unseen:{index}>");
        Ok(Name::Scratch { unseen: true })
    }

    fn indexed<F: FnMut(HeaderRef<'_>)>(
        &mut self,
        index: u32,
        f: &mut F,
    ) -> Result<(), HpackError> {
        let h = match self.lookup(index)? {
            Name::Static(i) => {
                let (name, value) = STATIC_TABLE.get(i).copied().unwrap_or_default();
                HeaderRef {
                    name,
                    value,
                    ..HeaderRef::EMPTY
                }
            }
            Name::Dynamic(d) => match self.table.get(d) {
                Some(e) => HeaderRef {
                    name: e.name(),
                    value: e.value(),
                    name_unseen: e.name_unseen,
                    ..HeaderRef::EMPTY
                },
                None => return Err(HpackError::InvalidIndex(index)),
            },
            Name::Scratch { .. } | Name::Raw(_) => HeaderRef {
                name: &self.scratch_name,
                value: UNSEEN_VALUE,
                name_unseen: true,
                value_unseen: true,
                never_indexed: false,
            },
        };
        let n = h.name.len() + h.value.len();
        f(h);
        self.count(n);
        Ok(())
    }

    fn literal<'b, F: FnMut(HeaderRef<'_>)>(
        &mut self,
        block: &'b [u8],
        pos: &mut usize,
        prefix: u8,
        mode: Indexing,
        f: &mut F,
    ) -> Result<(), HpackError> {
        let index = decode_int(block, pos, prefix)?;
        let name: Name<'b> = if index == 0 {
            match read_string(block, pos, &mut self.scratch_name)? {
                Some(raw) => Name::Raw(raw),
                None => Name::Scratch { unseen: false },
            }
        } else {
            self.lookup(index)?
        };
        let raw_value = read_string(block, pos, &mut self.scratch_value)?;

        let (name, name_unseen): (&[u8], bool) = match name {
            Name::Static(i) => (STATIC_TABLE.get(i).map_or(&b""[..], |e| e.0), false),
            Name::Dynamic(d) => match self.table.get(d) {
                Some(e) => (e.name(), e.name_unseen),
                None => return Err(HpackError::InvalidIndex(index)),
            },
            Name::Scratch { unseen } => (&self.scratch_name, unseen),
            Name::Raw(raw) => (raw, false),
        };
        let value: &[u8] = raw_value.unwrap_or(&self.scratch_value);
        let header = HeaderRef {
            name,
            value,
            name_unseen,
            value_unseen: false,
            never_indexed: mode == Indexing::Never,
        };
        let n = name.len() + value.len();
        if mode != Indexing::Incremental {
            f(header);
            self.count(n);
            return Ok(());
        }
        self.changes = self.changes.wrapping_add(1);
        if !self
            .table
            .fits(Entry::accounted_size(name, value, name_unseen))
        {
            // Too large for the table: it empties the table and is not inserted (§4.4).
            f(header);
            self.count(n);
            self.table.clear();
            return Ok(());
        }
        // Copy before inserting: the name may belong to an entry this insertion evicts.
        let entry = Entry::new(name, value, name_unseen);
        f(HeaderRef {
            name: entry.name(),
            value: entry.value(),
            ..header
        });
        self.count(n);
        self.table.insert(entry);
        Ok(())
    }
}

impl HeaderRef<'static> {
    const EMPTY: HeaderRef<'static> = HeaderRef {
        name: b"",
        value: b"",
        name_unseen: false,
        value_unseen: false,
        never_indexed: false,
    };
}

/// Integer representation (§5.1) with an N-bit prefix, bounded to `u32`.
fn decode_int(buf: &[u8], pos: &mut usize, prefix: u8) -> Result<u32, HpackError> {
    let mask = u8::MAX >> (8 - prefix);
    let first = buf.get(*pos).ok_or(HpackError::Truncated)? & mask;
    *pos += 1;
    if first < mask {
        return Ok(u32::from(first));
    }
    let mut value = u64::from(mask);
    let mut shift = 0u32;
    loop {
        let byte = *buf.get(*pos).ok_or(HpackError::Truncated)?;
        *pos += 1;
        // "Integer encodings that exceed implementation limits -- in value or octet length
        // -- MUST be treated as decoding errors." (§5.1)
        if shift > 28 {
            return Err(HpackError::IntegerOverflow);
        }
        value += u64::from(byte & 0x7f) << shift;
        if value > u64::from(u32::MAX) {
            return Err(HpackError::IntegerOverflow);
        }
        if byte & 0x80 == 0 {
            return Ok(value as u32);
        }
        shift += 7;
    }
}

/// String literal (§5.2). Returns the raw octets, or `None` when they were Huffman-decoded
/// into `scratch`.
fn read_string<'b>(
    buf: &'b [u8],
    pos: &mut usize,
    scratch: &mut Vec<u8>,
) -> Result<Option<&'b [u8]>, HpackError> {
    let huffman = buf.get(*pos).ok_or(HpackError::Truncated)? & 0x80 != 0;
    let len = decode_int(buf, pos, 7)? as usize;
    let end = pos.checked_add(len).ok_or(HpackError::Truncated)?;
    let raw = buf.get(*pos..end).ok_or(HpackError::Truncated)?;
    *pos = end;
    if huffman {
        scratch.clear();
        huffman::decode(raw, scratch)?;
        Ok(None)
    } else {
        Ok(Some(raw))
    }
}

#[cfg(test)]
mod tests;
