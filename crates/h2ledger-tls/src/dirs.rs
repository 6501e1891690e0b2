//! A value per TCP direction of a connection, indexed by [`Dir`].
//!
//! `h2ledger_core::Sides<T>` does the same by `Side` (client, server) one layer up; this crate
//! works below it, where only the TCP direction is known for sure (which side is the client
//! comes from the ClientHello, when there is one).

use h2ledger_tcp::Dir;

/// One `T` per direction: `fwd` from the sender of the connection's first packet, `rev`
/// towards it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Dirs<T> {
    pub(crate) fwd: T,
    pub(crate) rev: T,
}

impl<T> Dirs<T> {
    pub(crate) fn get(&self, d: Dir) -> &T {
        match d {
            Dir::Fwd => &self.fwd,
            Dir::Rev => &self.rev,
        }
    }

    pub(crate) fn get_mut(&mut self, d: Dir) -> &mut T {
        match d {
            Dir::Fwd => &mut self.fwd,
            Dir::Rev => &mut self.rev,
        }
    }

    /// Both values, `fwd` first.
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        [&mut self.fwd, &mut self.rev].into_iter()
    }
}
