//! The state machines of a TLS connection: [`State`], one per direction (what its next record
//! is, as far as decryption goes), and [`Keys`], one per connection (whether the key log has
//! its secrets). Each has its transitions in one `match` ([`State::on`], [`Keys::on`]); the
//! layer asks them questions and tells them what happened, nothing else sets them.
//!
//! What does not change once known is kept beside them as facts, not states: the hellos
//! (client random, version, suite, ALPN), a capture that began mid-stream, a version or suite
//! not decrypted.

use h2ledger_tcp::Nanos;

/// A direction of a TLS connection.
///
/// ```text
///                ChangeCipherSpec (TLS 1.2)
///          +-------------------------------------------> Cipher
///          |
///          |     AppKey: this side's Finished, or a
///  --> Hello ---- record only the application key -----> App
///          |      opens (TLS 1.3)                         ^
///          |                                              | Authenticated
///          |     TrialKey: only the application           |
///          +---- secret is known (TLS 1.3) ----------> Trial
///
///  Hello, Cipher, Trial, App --Stop--> Dead     a record failed authentication, the key
///                                               is missing for good, or the held records
///                                               passed their bound
///  any state --FramingLost--> Lost              bytes missing from the capture, or bytes
///                                               that are not a record header
/// ```
///
/// Any other event leaves the state as it is (a second ChangeCipherSpec; a record that
/// authenticates under the key in use; in `Trial` a record that does not is counted and the
/// next one tried). `Lost` is final, `Dead` leaves only for `Lost`.
///
/// `Hello` reads the handshake in the clear; TLS 1.3's protected handshake records, once its
/// handshake key is known, are decrypted in `Hello` too (the key is data, not state: it may
/// come later, from the ServerHello or a key log that catches up, and `KeyUpdate` replaces
/// it). A failed record in `Trial` is counted and the next one tried. `Dead` still frames
/// records and counts their bytes; `Lost` only counts bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum State {
    /// Before this side's ChangeCipherSpec (TLS 1.2) or Finished (TLS 1.3).
    #[default]
    Hello,
    /// TLS 1.2, after this side's ChangeCipherSpec: every record but a ChangeCipherSpec is
    /// protected.
    Cipher,
    /// TLS 1.3 without the handshake secret: the application key is tried on each protected
    /// record until one authenticates.
    Trial,
    /// TLS 1.3, on application traffic keys.
    App,
    /// Decryption of this direction stopped (said once, in a warning): records are framed
    /// and counted, not decrypted.
    Dead,
    /// Records can no longer be framed (after a gap or a bad header): bytes are counted.
    Lost,
}

/// What happens to a direction ([`State::on`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    /// TLS 1.2: this side's ChangeCipherSpec.
    ChangeCipherSpec,
    /// TLS 1.3: the application key takes over (this side's Finished, or a record the
    /// handshake key did not open).
    AppKey,
    /// TLS 1.3: only the application secret is known; it is tried.
    TrialKey,
    /// A record authenticated.
    Authenticated,
    /// Decryption gives up: a record failed authentication, the key is missing for good,
    /// or the held records passed their bound.
    Stop,
    /// Bytes missing from the capture, or bytes that are not a record header.
    FramingLost,
}

impl State {
    /// The one place a direction changes state.
    pub(crate) fn on(&mut self, ev: Event) {
        use Event::*;
        use State::*;
        *self = match (*self, ev) {
            (Lost, _) | (_, FramingLost) => Lost,
            (Dead, _) | (_, Stop) => Dead,
            (Hello, ChangeCipherSpec) => Cipher,
            (Hello, AppKey) => App,
            (Hello, TrialKey) => Trial,
            (Trial, Authenticated) => App,
            // A repeated ChangeCipherSpec, a record that authenticates under a key in use.
            (s, _) => s,
        };
    }

    /// Records are no longer decrypted (`Dead` or `Lost`).
    pub(crate) fn stopped(self) -> bool {
        matches!(self, State::Dead | State::Lost)
    }
}

/// Whether the key log has a connection's secrets. `Missing` and `Waiting` are the
/// connection's "no key" status; `Waiting` (live capture only, `Config::wait_for_keys`) holds
/// its records until the key log catches up or `key_wait` of capture time passes.
///
/// ```text
///  --> Unknown --Found-------------------------------------------> Found
///         |
///         +--NotFound (replay) -------------------------------------> Missing
///         |
///         +--NotFound (live) --> Waiting --Found: the key log caught up --> Found
///                                   |
///                                   +--GiveUp: key_wait passed, or the end --> Missing
///
///  from                      event                               to
///  any                       Found                               Found
///  Unknown, Found, Missing   NotFound or NoAppKey, waiting       Waiting { since: at }
///  Unknown, Found, Missing   NotFound or NoAppKey, not waiting   Missing
///  Waiting                   NotFound or NoAppKey                Waiting (since kept)
///  Waiting                   NoLookup                            Unknown
///  Waiting                   GiveUp                              Missing
///  Unknown, Found, Missing   NoLookup or GiveUp                  unchanged
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Keys {
    /// Not looked up yet (no ServerHello), or a retry could not look it up.
    #[default]
    Unknown,
    /// Looked up and found (both directions have a key, or are given up).
    Found,
    /// Not in the key log, final.
    Missing,
    /// Not in the key log yet, since this capture time: records are held.
    Waiting { since: Nanos },
}

/// What the key log said ([`Keys::on`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KeyEvent {
    /// A lookup found what every direction needs.
    Found,
    /// A lookup could not be made: the hellos lack the client random, suite or client.
    NoLookup,
    /// A lookup did not find everything; `wait`: at `at`, start waiting.
    NotFound { wait: bool, at: Nanos },
    /// A side's Finished, and no application secret for it; `wait`: at `at`, start waiting.
    NoAppKey { wait: bool, at: Nanos },
    /// Stop waiting.
    GiveUp,
}

impl Keys {
    /// The one place a connection's key state changes.
    pub(crate) fn on(&mut self, ev: KeyEvent) {
        use KeyEvent::*;
        *self = match (*self, ev) {
            (_, Found) => Keys::Found,
            (Keys::Waiting { .. }, NoLookup) => Keys::Unknown,
            (Keys::Waiting { .. }, GiveUp) => Keys::Missing,
            (s @ Keys::Waiting { .. }, NotFound { .. } | NoAppKey { .. }) => s,
            (_, NotFound { wait: true, at } | NoAppKey { wait: true, at }) => {
                Keys::Waiting { since: at }
            }
            (_, NotFound { .. } | NoAppKey { .. }) => Keys::Missing,
            (s, NoLookup | GiveUp) => s,
        };
    }

    /// The key log lacks a secret this connection needs (`Missing` or `Waiting`).
    pub(crate) fn missing(self) -> bool {
        matches!(self, Keys::Missing | Keys::Waiting { .. })
    }

    /// Since when records wait for the key log, if they do.
    pub(crate) fn waiting_since(self) -> Option<Nanos> {
        match self {
            Keys::Waiting { since } => Some(since),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_direction_moves_as_drawn() {
        use Event::*;
        use State::*;
        let after = |s: State, ev: Event| {
            let mut s = s;
            s.on(ev);
            s
        };
        for (from, ev, to) in [
            (Hello, ChangeCipherSpec, Cipher),
            (Hello, AppKey, App),
            (Hello, TrialKey, Trial),
            (Trial, Authenticated, App),
            (Cipher, ChangeCipherSpec, Cipher),
            (App, Authenticated, App),
            (Hello, Authenticated, Hello),
            (Trial, AppKey, Trial),
            (Hello, Stop, Dead),
            (Cipher, Stop, Dead),
            (Trial, Stop, Dead),
            (App, Stop, Dead),
            (Dead, AppKey, Dead),
            (Dead, FramingLost, Lost),
            (App, FramingLost, Lost),
            (Lost, Stop, Lost),
            (Lost, ChangeCipherSpec, Lost),
        ] {
            assert_eq!(after(from, ev), to, "{from:?} on {ev:?}");
        }
        assert!(Dead.stopped() && Lost.stopped() && !App.stopped() && !Trial.stopped());
    }

    #[test]
    fn the_key_state_follows_its_table() {
        use KeyEvent::*;
        let w = Keys::Waiting { since: 7 };
        let after = |s: Keys, ev: KeyEvent| {
            let mut s = s;
            s.on(ev);
            s
        };
        let miss = NotFound { wait: false, at: 9 };
        let wait = NoAppKey { wait: true, at: 9 };
        for (from, ev, to) in [
            (Keys::Unknown, Found, Keys::Found),
            (w, Found, Keys::Found),
            (Keys::Unknown, miss, Keys::Missing),
            (Keys::Found, wait, Keys::Waiting { since: 9 }),
            (Keys::Missing, wait, Keys::Waiting { since: 9 }),
            (w, wait, w),
            (w, miss, w),
            (w, NoLookup, Keys::Unknown),
            (w, GiveUp, Keys::Missing),
            (Keys::Found, NoLookup, Keys::Found),
            (Keys::Missing, GiveUp, Keys::Missing),
        ] {
            assert_eq!(after(from, ev), to, "{from:?} on {ev:?}");
        }
        assert!(w.missing() && Keys::Missing.missing() && !Keys::Found.missing());
        assert_eq!(w.waiting_since(), Some(7));
    }
}
