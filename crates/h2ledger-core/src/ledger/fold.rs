//! What the ledger keeps of each folded connection, small (decision 457): a [`Folded`] is 56
//! bytes, and up to [`h2ledger_tcp::DEFAULT_MAX_EVICTED`] (131,072) of them are kept, so the map
//! held 7.5 MiB at 100,000 connections (60-byte buckets), 11 MiB while it grew. Packed, one
//! takes 12 bytes: its root and one word per direction (what [`DirFold`] it is, its frames'
//! start, which SETTINGS values await their ACK, and its maximum frame size, at most 2^24 - 1),
//! whose spare bits hold the connection's flags (HTTP/2, the client and how it was found). The values of a SETTINGS
//! awaiting its ACK (rare: a SETTINGS with HEADER_TABLE_SIZE or MAX_FRAME_SIZE whose ACK had
//! not come when the connection was folded) go to a second map by the same key, which holds
//! at most as many entries as the first.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use h2ledger_tcp::{ConnId, Dir};

use super::{Began, ClientBy, DirFold, FifoMap, Folded, StreamIdHasher};

/// A [`Folded`] in 12 bytes (see the module docs).
#[derive(Clone, Copy, Debug)]
pub(super) struct Packed {
    root: u32,
    /// Per direction: bits 0..5 its code ([`kind`] times 5 plus its SETTINGS state, see
    /// [`settings_state`]); bits 5..8 three bits of the connection's flags (direction 0: HTTP/2,
    /// then the low two bits of [`client_code`]; direction 1: its high two bits); bits 8..32
    /// the maximum frame size of a framed direction.
    dirs: [u32; 2],
}

const CODE: u32 = 31;
const EXTRA_SHIFT: u32 = 5;
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

/// A SETTINGS awaiting its ACK: 0 none, 1 with neither value, 2 HEADER_TABLE_SIZE only, 3
/// MAX_FRAME_SIZE only, 4 both (those values are in the side map).
fn settings_state(s: Option<(Option<u32>, Option<u32>)>) -> u32 {
    match s {
        None => 0,
        Some((None, None)) => 1,
        Some((Some(_), None)) => 2,
        Some((None, Some(_))) => 3,
        Some((Some(_), Some(_))) => 4,
    }
}

/// The client: 0 unknown, else 1 + 5 for [`Dir::Rev`] + its [`ClientBy`]'s place (at most 10).
fn client_code(c: Option<(Dir, ClientBy)>) -> u32 {
    match c {
        None => 0,
        Some((d, by)) => {
            let i = CLIENT_BYS.iter().position(|b| *b == by).unwrap_or(0) as u32;
            1 + if d == Dir::Rev { 5 } else { 0 } + i
        }
    }
}

/// A direction packed (its flag bits left 0), and the values of its SETTINGS awaiting an ACK
/// (0 where absent).
fn pack_dir(d: DirFold) -> (u32, [u32; 2]) {
    match d {
        DirFold::Fresh => (kind::FRESH * 5, [0; 2]),
        DirFold::Dead => (kind::DEAD * 5, [0; 2]),
        DirFold::Lost => (kind::LOST * 5, [0; 2]),
        DirFold::Framed {
            max_frame,
            began,
            settings,
        } => {
            debug_assert!(max_frame < 1 << 24, "{max_frame}");
            let k = match began {
                Began::OnTime => kind::ON_TIME,
                Began::Late => kind::LATE,
                Began::MidStream => kind::MID_STREAM,
            };
            let (t, f) = settings.unwrap_or_default();
            (
                (k * 5 + settings_state(settings)) | (max_frame << MAX_FRAME_SHIFT),
                [t.unwrap_or(0), f.unwrap_or(0)],
            )
        }
    }
}

fn unpack_dir(w: u32, vals: [u32; 2]) -> DirFold {
    let code = w & CODE;
    let began = match code / 5 {
        kind::FRESH => return DirFold::Fresh,
        kind::DEAD => return DirFold::Dead,
        kind::LOST => return DirFold::Lost,
        kind::ON_TIME => Began::OnTime,
        kind::LATE => Began::Late,
        _ => Began::MidStream,
    };
    let settings = match code % 5 {
        0 => None,
        1 => Some((None, None)),
        2 => Some((Some(vals[0]), None)),
        3 => Some((None, Some(vals[1]))),
        _ => Some((Some(vals[0]), Some(vals[1]))),
    };
    DirFold::Framed {
        max_frame: w >> MAX_FRAME_SHIFT,
        began,
        settings,
    }
}

/// Whether a packed direction's SETTINGS values are in the side map.
fn has_values(w: u32) -> bool {
    (w & CODE) % 5 >= 2
}

impl Packed {
    /// `f` packed, and the values its directions' SETTINGS awaiting an ACK carry, when any
    /// does carry one.
    pub(super) fn pack(f: &Folded) -> (Packed, Option<[u32; 4]>) {
        let (mut w0, v0) = pack_dir(f.dirs[0]);
        let (mut w1, v1) = pack_dir(f.dirs[1]);
        let side = (has_values(w0) || has_values(w1)).then_some([v0[0], v0[1], v1[0], v1[1]]);
        let client = client_code(f.client);
        w0 |= (u32::from(f.http2) | (client & 3) << 1) << EXTRA_SHIFT;
        w1 |= (client >> 2) << EXTRA_SHIFT;
        (
            Packed {
                root: f.root.0,
                dirs: [w0, w1],
            },
            side,
        )
    }

    /// Whether some values are in the side map.
    fn has_side(&self) -> bool {
        has_values(self.dirs[0]) || has_values(self.dirs[1])
    }

    /// The [`Folded`] packed, with the side map's values (if [`Packed::has_side`]).
    pub(super) fn unpack(&self, side: [u32; 4]) -> Folded {
        let extra0 = (self.dirs[0] >> EXTRA_SHIFT) & 7;
        let extra1 = (self.dirs[1] >> EXTRA_SHIFT) & 7;
        let client = (extra0 >> 1) | (extra1 << 2);
        let client = (client != 0).then(|| {
            let c = client - 1;
            let d = if c >= 5 { Dir::Rev } else { Dir::Fwd };
            (d, CLIENT_BYS[(c % 5) as usize])
        });
        let strip = |w: u32| w & !(7 << EXTRA_SHIFT);
        Folded {
            root: ConnId(self.root),
            http2: extra0 & 1 != 0,
            client,
            dirs: [
                unpack_dir(strip(self.dirs[0]), [side[0], side[1]]),
                unpack_dir(strip(self.dirs[1]), [side[2], side[3]]),
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
    fn a_packed_folded_connection_is_12_bytes() {
        assert_eq!(std::mem::size_of::<Packed>(), 12);
    }
}
