//! What the ledger keeps of each folded connection, small (decision 457): a [`Folded`] is 56
//! bytes, and up to [`h2ledger_tcp::DEFAULT_MAX_EVICTED`] (131,072) of them are kept, so the map
//! held 7.5 MiB at 100,000 connections (60-byte buckets), 11 MiB while it grew. Packed, one
//! takes 16 bytes: its root, one word of flags (HTTP/2, the client and how it was found) and
//! one word per direction (what [`DirFold`] it is, its frames' start, which SETTINGS values
//! await their ACK, and its maximum frame size, at most 2^24 - 1). The values of a SETTINGS
//! awaiting its ACK (rare: a SETTINGS with HEADER_TABLE_SIZE or MAX_FRAME_SIZE whose ACK had
//! not come when the connection was folded) go to a second map by the same key, which holds
//! at most as many entries as the first.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use h2ledger_tcp::{ConnId, Dir};

use super::{Began, ClientBy, DirFold, FifoMap, Folded, StreamIdHasher};

/// A [`Folded`] in 16 bytes (see the module docs).
#[derive(Clone, Copy, Debug)]
pub(super) struct Packed {
    root: u32,
    /// Bit 0: HTTP/2; bit 1: a client is known; bit 2: it is [`Dir::Rev`]; bits 3..6: how it
    /// was found ([`ClientBy`]).
    flags: u32,
    /// Per direction: bits 0..3 the kind (see [`kind`]), bit 3 a SETTINGS awaits its ACK, bit
    /// 4 it set HEADER_TABLE_SIZE, bit 5 MAX_FRAME_SIZE (those values are in the side map);
    /// bits 8..32 the maximum frame size of a framed direction.
    dirs: [u32; 2],
}

const HTTP2: u32 = 1;
const CLIENT: u32 = 2;
const CLIENT_REV: u32 = 4;
const CLIENT_BY_SHIFT: u32 = 3;

const KIND: u32 = 7;
const SETTINGS: u32 = 8;
const TABLE: u32 = 16;
const FRAME: u32 = 32;
const MAX_FRAME_SHIFT: u32 = 8;

/// The kind of a packed direction: its [`DirFold`] variant, and a framed one's [`Began`].
mod kind {
    pub(super) const FRESH: u32 = 0;
    pub(super) const DEAD: u32 = 1;
    pub(super) const LOST: u32 = 2;
    pub(super) const ON_TIME: u32 = 3;
    pub(super) const LATE: u32 = 4;
    pub(super) const MID_STREAM: u32 = 5;
}

const CLIENT_BYS: [ClientBy; 5] = [
    ClientBy::Syn,
    ClientBy::Preface,
    ClientBy::PseudoHeaders,
    ClientBy::OddStreams,
    ClientBy::EphemeralPort,
];

/// A direction packed, and the values of its SETTINGS awaiting an ACK (0 where absent).
fn pack_dir(d: DirFold) -> (u32, [u32; 2]) {
    match d {
        DirFold::Fresh => (kind::FRESH, [0; 2]),
        DirFold::Dead => (kind::DEAD, [0; 2]),
        DirFold::Lost => (kind::LOST, [0; 2]),
        DirFold::Framed {
            max_frame,
            began,
            settings,
        } => {
            debug_assert!(max_frame < 1 << 24, "{max_frame}");
            let mut w = match began {
                Began::OnTime => kind::ON_TIME,
                Began::Late => kind::LATE,
                Began::MidStream => kind::MID_STREAM,
            } | (max_frame << MAX_FRAME_SHIFT);
            let mut vals = [0; 2];
            if let Some((table, frame)) = settings {
                w |= SETTINGS;
                if let Some(t) = table {
                    w |= TABLE;
                    vals[0] = t;
                }
                if let Some(f) = frame {
                    w |= FRAME;
                    vals[1] = f;
                }
            }
            (w, vals)
        }
    }
}

fn unpack_dir(w: u32, vals: [u32; 2]) -> DirFold {
    let began = match w & KIND {
        kind::FRESH => return DirFold::Fresh,
        kind::DEAD => return DirFold::Dead,
        kind::LOST => return DirFold::Lost,
        kind::ON_TIME => Began::OnTime,
        kind::LATE => Began::Late,
        _ => Began::MidStream,
    };
    DirFold::Framed {
        max_frame: w >> MAX_FRAME_SHIFT,
        began,
        settings: (w & SETTINGS != 0).then_some((
            (w & TABLE != 0).then_some(vals[0]),
            (w & FRAME != 0).then_some(vals[1]),
        )),
    }
}

impl Packed {
    /// `f` packed, and the values its directions' SETTINGS awaiting an ACK carry, when any
    /// does carry one.
    pub(super) fn pack(f: &Folded) -> (Packed, Option<[u32; 4]>) {
        let mut flags = if f.http2 { HTTP2 } else { 0 };
        if let Some((d, by)) = f.client {
            flags |= CLIENT;
            if d == Dir::Rev {
                flags |= CLIENT_REV;
            }
            let i = CLIENT_BYS.iter().position(|b| *b == by).unwrap_or(0) as u32;
            flags |= i << CLIENT_BY_SHIFT;
        }
        let (w0, v0) = pack_dir(f.dirs[0]);
        let (w1, v1) = pack_dir(f.dirs[1]);
        let side = ((w0 | w1) & (TABLE | FRAME) != 0).then_some([v0[0], v0[1], v1[0], v1[1]]);
        (
            Packed {
                root: f.root.0,
                flags,
                dirs: [w0, w1],
            },
            side,
        )
    }

    /// Whether some values are in the side map.
    fn has_side(&self) -> bool {
        (self.dirs[0] | self.dirs[1]) & (TABLE | FRAME) != 0
    }

    /// The [`Folded`] packed, with the side map's values (if [`Packed::has_side`]).
    pub(super) fn unpack(&self, side: [u32; 4]) -> Folded {
        let client = (self.flags & CLIENT != 0).then(|| {
            let d = if self.flags & CLIENT_REV != 0 {
                Dir::Rev
            } else {
                Dir::Fwd
            };
            let by = CLIENT_BYS[((self.flags >> CLIENT_BY_SHIFT) & 7) as usize % CLIENT_BYS.len()];
            (d, by)
        });
        Folded {
            root: ConnId(self.root),
            http2: self.flags & HTTP2 != 0,
            client,
            dirs: [
                unpack_dir(self.dirs[0], [side[0], side[1]]),
                unpack_dir(self.dirs[1], [side[2], side[3]]),
            ],
        }
    }
}

/// The folded connections by the id the reassembler evicted, packed, at most `cap` (the
/// oldest forgotten beyond), with the side map of their SETTINGS values.
pub(super) struct FoldedMap {
    map: FifoMap<Packed>,
    side: HashMap<u32, [u32; 4], BuildHasherDefault<StreamIdHasher>>,
}

impl FoldedMap {
    pub(super) fn new(cap: usize) -> FoldedMap {
        FoldedMap {
            map: FifoMap::new(cap),
            side: HashMap::default(),
        }
    }

    /// Keeps `f` for `k`, forgetting the oldest when full.
    pub(super) fn insert(&mut self, k: u32, f: &Folded) {
        let (p, side) = Packed::pack(f);
        if let Some((old, o)) = self.map.insert(k, p) {
            if o.has_side() {
                self.side.remove(&old);
            }
        }
        match side {
            Some(s) => {
                self.side.insert(k, s);
            }
            None => {
                self.side.remove(&k);
            }
        }
    }

    /// What was kept for `k`, now forgotten.
    pub(super) fn remove(&mut self, k: u32) -> Option<Folded> {
        let p = self.map.remove(k)?;
        let side = if p.has_side() {
            self.side.remove(&k).unwrap_or_default()
        } else {
            [0; 4]
        };
        Some(p.unpack(side))
    }

    /// Forgets everything.
    pub(super) fn clear(&mut self) {
        // Not `FifoMap::drain`, which would copy every entry into a list first.
        self.map = FifoMap::new(self.map.cap);
        self.side = HashMap::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(f: Folded) {
        let mut m = FoldedMap::new(4);
        m.insert(7, &f);
        let back = m.remove(7).expect("kept");
        assert_eq!(format!("{f:?}"), format!("{back:?}"));
        assert!(m.side.is_empty());
    }

    #[test]
    fn every_form_comes_back_as_it_went() {
        let dirs = [
            DirFold::Fresh,
            DirFold::Dead,
            DirFold::Lost,
            DirFold::Framed {
                max_frame: 16_384,
                began: Began::OnTime,
                settings: None,
            },
            DirFold::Framed {
                max_frame: (1 << 24) - 1,
                began: Began::Late,
                settings: Some((None, None)),
            },
            DirFold::Framed {
                max_frame: 20_000,
                began: Began::MidStream,
                settings: Some((Some(u32::MAX), None)),
            },
            DirFold::Framed {
                max_frame: 16_385,
                began: Began::OnTime,
                settings: Some((Some(0), Some(u32::MAX))),
            },
        ];
        let clients = [None].into_iter().chain(
            CLIENT_BYS
                .iter()
                .flat_map(|b| [Some((Dir::Fwd, *b)), Some((Dir::Rev, *b))]),
        );
        for client in clients {
            for (i, a) in dirs.iter().enumerate() {
                for b in &dirs[i..] {
                    for http2 in [false, true] {
                        round(Folded {
                            root: ConnId(u32::MAX - i as u32),
                            http2,
                            client,
                            dirs: [*a, *b],
                        });
                    }
                }
            }
        }
    }

    #[test]
    fn the_side_map_forgets_with_the_map() {
        let with = Folded {
            root: ConnId(1),
            http2: true,
            client: None,
            dirs: [
                DirFold::Framed {
                    max_frame: 16_384,
                    began: Began::OnTime,
                    settings: Some((Some(4096), None)),
                },
                DirFold::Fresh,
            ],
        };
        let mut m = FoldedMap::new(2);
        for k in 0..10 {
            m.insert(k, &with);
            assert!(m.side.len() <= 2, "{}", m.side.len());
        }
        assert!(m.remove(9).is_some());
        assert_eq!(m.side.len(), 1);
        m.clear();
        assert!(m.side.is_empty());
    }

    #[test]
    fn a_packed_folded_connection_is_16_bytes() {
        assert_eq!(std::mem::size_of::<Packed>(), 16);
    }
}
