//! A reusable list of decoded header fields: one byte arena, no allocation per field once warm.

use h2_frame_parser::hpack::HeaderRef;

#[derive(Clone, Copy, Debug)]
struct Field {
    name: (u32, u32),
    value: (u32, u32),
    unseen: bool,
}

/// The header fields of one header block, in order.
#[derive(Debug, Default)]
pub struct HeaderList {
    bytes: Vec<u8>,
    fields: Vec<Field>,
    /// Only the first field and those [`crate::ledger::analysis_header`] names were kept.
    partial: bool,
}

/// One decoded field. `unseen`: the name or value came from a dynamic table entry the capture
/// never saw, and is a placeholder.
#[derive(Clone, Copy, Debug)]
pub struct Header<'a> {
    pub name: &'a [u8],
    pub value: &'a [u8],
    pub unseen: bool,
}

impl HeaderList {
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.fields.clear();
    }

    pub(crate) fn set_partial(&mut self, partial: bool) {
        self.partial = partial;
    }

    pub fn push(&mut self, h: &HeaderRef<'_>) {
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

    pub fn len(&self) -> usize {
        self.fields.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

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
            !self.partial || crate::ledger::analysis_header(name),
            "{:?} is not kept in a partial list: add it to ledger::analysis_header",
            String::from_utf8_lossy(name)
        );
        self.iter().find(|h| h.name == name).map(|h| h.value)
    }
}
