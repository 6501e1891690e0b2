//! A reusable list of decoded header fields: one byte arena, no allocation per field once warm.

use h2_frame_parser::hpack::HeaderRef;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Field {
    name: (u32, u32),
    value: (u32, u32),
    unseen: bool,
}

/// Bytes of names and values one [`HeaderList`] keeps: a header block may reference a 4 KiB
/// dynamic-table entry thousands of times (an HPACK bomb), and copying every reference would
/// cost memory in proportion to the decoded size, not to the bytes received. Past it, fields
/// are dropped and [`HeaderList::cut`] says so.
pub const MAX_HEADER_LIST_KEPT: usize = 1 << 20;

/// The header fields of one header block, in order.
#[derive(Clone, Debug, Default)]
pub struct HeaderList {
    bytes: Vec<u8>,
    fields: Vec<Field>,
    /// Fields dropped beyond [`MAX_HEADER_LIST_KEPT`].
    cut: u32,
    /// Only the first field and the names this function accepts were kept.
    kept: Option<fn(&[u8]) -> bool>,
}

/// One decoded field. `unseen`: the name or value came from a dynamic table entry the capture
/// never saw, and is a placeholder.
#[derive(Clone, Copy, Debug)]
pub struct Header<'a> {
    /// The field name, as decoded.
    pub name: &'a [u8],
    /// The field value, as decoded.
    pub value: &'a [u8],
    /// The name or value is a placeholder for a dynamic table entry the capture never saw.
    pub unseen: bool,
}

impl HeaderList {
    /// Makes this list a copy of `other`, reusing this one's memory (a list handed to
    /// another thread in a batch that comes back to be refilled).
    pub fn copy_from(&mut self, other: &HeaderList) {
        // Cleared first: a list that once held a large block does not keep its size.
        self.clear();
        self.bytes.extend_from_slice(&other.bytes);
        self.fields.extend_from_slice(&other.fields);
        self.cut = other.cut;
        self.kept = other.kept;
    }

    /// Bytes the list holds (names, values and their places), about.
    pub fn held(&self) -> usize {
        self.bytes.len() + self.fields.len() * std::mem::size_of::<Field>()
    }

    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.fields.clear();
        self.cut = 0;
        // A block near the cap leaves a large arena: do not keep it for every later block
        // (tested first: `shrink_to` is not free, and this runs at every block).
        if self.bytes.capacity() > 64 * 1024 {
            self.bytes.shrink_to(64 * 1024);
        }
        // Likewise the fields of a block of thousands of empty fields (about 20 bytes each).
        if self.fields.capacity() > 4096 {
            self.fields.shrink_to(4096);
        }
    }

    /// Fields not kept because the list reached `MAX_HEADER_LIST_KEPT` bytes (1 MiB).
    pub fn cut(&self) -> u32 {
        self.cut
    }

    pub(crate) fn set_kept(&mut self, kept: Option<fn(&[u8]) -> bool>) {
        self.kept = kept;
    }

    pub(crate) fn push(&mut self, h: &HeaderRef<'_>) {
        if self.bytes.len() + h.name.len() + h.value.len() > MAX_HEADER_LIST_KEPT {
            self.cut = self.cut.saturating_add(1);
            return;
        }
        let n0 = self.bytes.len() as u32;
        self.bytes.extend_from_slice(h.name);
        let n1 = self.bytes.len() as u32;
        self.bytes.extend_from_slice(h.value);
        let v1 = self.bytes.len() as u32;
        self.fields.push(Field {
            name: (n0, n1),
            value: (n1, v1),
            unseen: h.name_unseen || h.value_unseen,
        });
    }

    /// Whether `other` holds the same fields (names, values, placeholders), in the same
    /// order: a cheap comparison of two byte arenas and two span lists.
    pub fn same_fields(&self, other: &HeaderList) -> bool {
        self.bytes == other.bytes && self.fields == other.fields
    }

    /// Bytes of the names and values kept.
    pub fn byte_len(&self) -> usize {
        self.bytes.len()
    }

    /// Fields kept.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// Whether no field was kept.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The fields kept, in block order.
    pub fn iter(&self) -> impl Iterator<Item = Header<'_>> + '_ {
        self.fields.iter().map(move |f| Header {
            name: &self.bytes[f.name.0 as usize..f.name.1 as usize],
            value: &self.bytes[f.value.0 as usize..f.value.1 as usize],
            unseen: f.unseen,
        })
    }

    /// The value of the first field with this name.
    pub fn get(&self, name: &[u8]) -> Option<&[u8]> {
        debug_assert!(
            self.kept.is_none_or(|kept| kept(name)),
            "{:?} is not kept: the observer's HeaderNeed does not name it",
            String::from_utf8_lossy(name)
        );
        self.iter().find(|h| h.name == name).map(|h| h.value)
    }
}
