//! The static table (RFC 7541 Appendix A) and the dynamic table (RFC 7541 §2.3.2, §4).

use std::collections::VecDeque;

/// RFC 7541 Appendix A; index 1 is `STATIC_TABLE[0]`.
pub(crate) static STATIC_TABLE: [(&[u8], &[u8]); 61] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// "The size of an entry is the sum of its name's length in octets (as defined in
/// Section 5.2), its value's length in octets, and 32." (RFC 7541 §4.1)
pub(crate) const ENTRY_OVERHEAD: usize = 32;

/// One dynamic-table entry: name and value in one allocation.
#[derive(Debug)]
pub(crate) struct Entry {
    buf: Box<[u8]>,
    name_len: usize,
    /// Accounted size. For a placeholder name the real name length is unknown and counted as
    /// 0, so the size is a lower bound (see `Decoder::new_mid_stream`).
    size: usize,
    pub(crate) name_unseen: bool,
}

impl Entry {
    pub(crate) fn new(name: &[u8], value: &[u8], name_unseen: bool) -> Entry {
        let mut buf = Vec::with_capacity(name.len() + value.len());
        buf.extend_from_slice(name);
        buf.extend_from_slice(value);
        Entry {
            buf: buf.into_boxed_slice(),
            name_len: name.len(),
            size: Self::accounted_size(name, value, name_unseen),
            name_unseen,
        }
    }

    pub(crate) fn accounted_size(name: &[u8], value: &[u8], name_unseen: bool) -> usize {
        let name_len = if name_unseen { 0 } else { name.len() };
        name_len + value.len() + ENTRY_OVERHEAD
    }

    pub(crate) fn name(&self) -> &[u8] {
        self.buf.get(..self.name_len).unwrap_or_default()
    }

    pub(crate) fn value(&self) -> &[u8] {
        self.buf.get(self.name_len..).unwrap_or_default()
    }
}

/// FIFO table, newest entry first (dynamic index 0 is HPACK index 62).
#[derive(Debug)]
pub(crate) struct DynamicTable {
    entries: VecDeque<Entry>,
    size: usize,
    max_size: usize,
}

impl DynamicTable {
    pub(crate) fn new(max_size: usize) -> Self {
        DynamicTable {
            entries: VecDeque::new(),
            size: 0,
            max_size,
        }
    }

    pub(crate) fn get(&self, i: usize) -> Option<&Entry> {
        self.entries.get(i)
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn size(&self) -> usize {
        self.size
    }

    pub(crate) fn max_size(&self) -> usize {
        self.max_size
    }

    /// "Whenever the maximum size for the dynamic table is reduced, entries are evicted from
    /// the end of the dynamic table until the size of the dynamic table is less than or equal
    /// to the maximum size." (RFC 7541 §4.3)
    pub(crate) fn set_max_size(&mut self, max_size: usize) {
        self.max_size = max_size;
        self.evict_to(max_size);
    }

    /// Whether an entry of `size` would be kept by [`DynamicTable::insert`].
    pub(crate) fn fits(&self, size: usize) -> bool {
        size <= self.max_size
    }

    /// "Before a new entry is added to the dynamic table, entries are evicted from the end of
    /// the dynamic table until the size of the dynamic table is less than or equal to (maximum
    /// size - new entry size) or until the table is empty. [...] an attempt to add an entry
    /// larger than the maximum size causes the table to be emptied of all existing entries and
    /// results in an empty table." (RFC 7541 §4.4)
    pub(crate) fn insert(&mut self, entry: Entry) {
        if !self.fits(entry.size) {
            self.entries.clear();
            self.size = 0;
            return;
        }
        self.evict_to(self.max_size - entry.size);
        self.size += entry.size;
        self.entries.push_front(entry);
    }

    /// Same as inserting an entry too large for the table.
    pub(crate) fn clear(&mut self) {
        self.entries.clear();
        self.size = 0;
    }

    fn evict_to(&mut self, target: usize) {
        while self.size > target {
            match self.entries.pop_back() {
                Some(e) => self.size -= e.size,
                None => {
                    self.size = 0;
                    break;
                }
            }
        }
    }
}
