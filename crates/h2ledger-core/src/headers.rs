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
    /// Per [`Known`] name: 1 + the index of the first field with that name, 0 for none; set
    /// as fields are pushed, so that the engine's readers of these names (every request and
    /// response) find them without a scan of the list.
    first: [u16; Known::COUNT],
    /// Unique to this filling of the list ([`HeaderList::stamp`]); 0 before the first.
    stamp: u64,
}

/// The last stamp given ([`HeaderList::stamp`]).
static STAMPS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The header names the engine reads on every block ([`HeaderList::known`]); each is one of
/// the names the analysis and the findings keep (`analysis::reads_header`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Known {
    /// `:status`
    Status,
    /// `:path`
    Path,
    /// `:method`
    Method,
    /// `content-type`
    ContentType,
    /// `grpc-status`
    GrpcStatus,
    /// `grpc-timeout`
    GrpcTimeout,
    /// `grpc-encoding`
    GrpcEncoding,
}

impl Known {
    const COUNT: usize = 7;

    /// The known name `name` is, if any.
    #[inline]
    fn of(name: &[u8]) -> Option<Known> {
        Some(match name {
            b":status" => Known::Status,
            b":path" => Known::Path,
            b":method" => Known::Method,
            b"content-type" => Known::ContentType,
            b"grpc-status" => Known::GrpcStatus,
            b"grpc-timeout" => Known::GrpcTimeout,
            b"grpc-encoding" => Known::GrpcEncoding,
            _ => return None,
        })
    }

    /// The name itself.
    pub fn name(self) -> &'static [u8] {
        match self {
            Known::Status => b":status",
            Known::Path => b":path",
            Known::Method => b":method",
            Known::ContentType => b"content-type",
            Known::GrpcStatus => b"grpc-status",
            Known::GrpcTimeout => b"grpc-timeout",
            Known::GrpcEncoding => b"grpc-encoding",
        }
    }
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
        self.first = other.first;
    }

    /// Bytes the list holds (names, values and their places), about.
    pub fn held(&self) -> usize {
        self.bytes.len() + self.fields.len() * std::mem::size_of::<Field>()
    }

    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.fields.clear();
        self.cut = 0;
        self.first = [0; Known::COUNT];
        self.stamp = STAMPS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
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

    /// A number given to the list each time it is emptied to be filled again, unique in the
    /// process (0 for a list never emptied): two lists with the same stamp other than 0 hold
    /// the same fields (one is a clone of the other, or it is the same list, unchanged: the
    /// ledger's list of a direction stays as it is while its blocks repeat, decision 220). The
    /// analysis' thread is sent one copy of a list however many frames carry it (decision 407).
    pub fn stamp(&self) -> u64 {
        self.stamp
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
        if let Some(k) = Known::of(h.name) {
            let f = &mut self.first[k as usize];
            if *f == 0 {
                // A list of more than 65,534 fields before the first such name: found by a
                // scan instead (`known`).
                *f = u16::try_from(self.fields.len() + 1).unwrap_or(u16::MAX);
            }
        }
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

    /// The value of the first field named `k`: [`HeaderList::get`] of its name, without a
    /// scan of the list.
    ///
    /// Inlined at each of its callers (five a call in the findings' failure rules): a call
    /// cost 22 instructions, most of them the call's own (decision 473); the scan past 65,534
    /// fields is out of line.
    #[inline(always)]
    pub fn known(&self, k: Known) -> Option<&[u8]> {
        debug_assert!(
            self.kept.is_none_or(|kept| kept(k.name())),
            "{:?} is not kept",
            k
        );
        match self.first[k as usize] {
            0 => None,
            u16::MAX => self.known_scan(k),
            i => {
                let f = self.fields.get(usize::from(i) - 1)?;
                self.bytes.get(f.value.0 as usize..f.value.1 as usize)
            }
        }
    }

    /// [`HeaderList::known`] of a field past the 65,534th: a scan.
    #[cold]
    #[inline(never)]
    fn known_scan(&self, k: Known) -> Option<&[u8]> {
        self.get(k.name())
    }
}

#[cfg(test)]
mod tests {
    use super::{HeaderList, Known};
    use h2_frame_parser::hpack::HeaderRef;

    fn push(l: &mut HeaderList, name: &[u8], value: &[u8]) {
        l.push(&HeaderRef {
            name,
            value,
            name_unseen: false,
            value_unseen: false,
            never_indexed: false,
        });
    }

    const ALL: [Known; Known::COUNT] = [
        Known::Status,
        Known::Path,
        Known::Method,
        Known::ContentType,
        Known::GrpcStatus,
        Known::GrpcTimeout,
        Known::GrpcEncoding,
    ];

    /// `known` answers as `get` does: the first field of the name, none when absent, after a
    /// clear, a copy, and past 65,534 fields (where it scans).
    #[test]
    fn known_is_get_without_a_scan() {
        let mut l = HeaderList::default();
        push(&mut l, b":status", b"200");
        push(&mut l, b"content-type", b"application/grpc");
        push(&mut l, b"grpc-status", b"0");
        push(&mut l, b"grpc-status", b"13");
        push(&mut l, b"Content-Type", b"text/plain");
        for k in ALL {
            assert_eq!(l.known(k), l.get(k.name()), "{k:?}");
        }
        assert_eq!(l.known(Known::GrpcStatus), Some(&b"0"[..]));
        assert_eq!(l.known(Known::Path), None);
        let mut c = HeaderList::default();
        c.copy_from(&l);
        assert_eq!(c.known(Known::ContentType), Some(&b"application/grpc"[..]));
        l.clear();
        assert_eq!(l.known(Known::Status), None);
        for _ in 0..70_000 {
            push(&mut l, b"x", b"");
        }
        push(&mut l, b":path", b"/a");
        push(&mut l, b":path", b"/b");
        assert_eq!(l.known(Known::Path), Some(&b"/a"[..]));
        for k in ALL {
            assert_eq!(l.known(k), l.get(k.name()), "{k:?}");
        }
    }
}
