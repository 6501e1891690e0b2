//! The ledger's vocabulary: sides and the frame classes it counts, and the one bound on the
//! streams that are followed.

/// Open streams followed at once, the one bound of every per-stream table: the ledger's per
/// connection (HEADERS vs TRAILERS), and over all connections the flow tracker's
/// ([`crate::flow::MAX_FLOW_STREAMS`]), the findings' ([`crate::findings::MAX_FINDING_STREAMS`]),
/// the gRPC tracker's ([`crate::grpc::MAX_GRPC_STREAMS`]) and the analysis' calls in flight
/// ([`crate::analysis::MAX_ACTIVE_CALLS`]). Each table costs from 5 (the ledger's) to about 290
/// bytes (the gRPC tracker's, in a table at most half full) a stream: at 65,536 streams
/// `replay --analyze` peaked at 66.5 MiB of heap (2^17 streams open on one connection, `just
/// stress`); 32,768 keep every view of a run within 64 MiB whatever a peer opens. Real servers
/// allow 100 to 1,000 concurrent streams a connection (SETTINGS_MAX_CONCURRENT_STREAMS).
/// Beyond, each table counts what it did not follow and the report says so (docs/ledger.md,
/// "Bounds").
pub const MAX_OPEN_STREAMS: usize = 1 << 15;

use h2ledger_tcp::Nanos;
use serde::ser::{Serialize, SerializeMap, Serializer};

/// PINGs of one direction of a connection awaiting their ACK that the connection model
/// remembers, by payload and time, the one bound of PING matching (the oldest is forgotten
/// when a 65th is sent; its ACK is then [`PingFact::Unmatched`]). Every reader of round trips
/// (the analysis, the gRPC tracker, the findings) reads [`crate::FrameEvent::ping`].
pub const MAX_OUTSTANDING_PINGS: usize = 64;

/// What the connection model says of a PING frame ([`crate::FrameEvent::ping`]), derived once
/// per connection in the ledger. An ACK from one direction answers a PING of the other: the
/// oldest outstanding one with the same payload (RFC 9113 §6.7: "Receivers of a PING frame
/// ... MUST send a PING frame with the ACK flag set ... with an identical frame payload").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PingFact {
    /// Not a PING frame.
    #[default]
    None,
    /// A PING (not an ACK); `owed`: the direction's PINGs not yet answered before this one,
    /// counted as PINGs sent minus ACKs received (whatever their payloads, and unbounded: a
    /// flood's depth).
    Sent {
        /// PINGs owed an ACK when this one was sent.
        owed: u64,
    },
    /// A PING ACK answering the PING sent at `sent` (its round trip is the ACK's time minus
    /// `sent`).
    Acked {
        /// When the PING it answers was sent.
        sent: Nanos,
    },
    /// A PING ACK that answers no PING the model remembers (never sent in the capture, or
    /// forgotten past [`MAX_OUTSTANDING_PINGS`]), or whose payload could not be read.
    Unmatched,
}

/// One direction's PINGs awaiting an ACK ([`PingFact`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct PingBook {
    owed: u64,
    out: std::collections::VecDeque<([u8; 8], Nanos)>,
}

impl PingBook {
    /// This direction sent a PING (its payload when the frame was read).
    pub(crate) fn sent(&mut self, payload: Option<[u8; 8]>, ts: Nanos) -> PingFact {
        let owed = self.owed;
        self.owed += 1;
        if let Some(p) = payload {
            if self.out.len() >= MAX_OUTSTANDING_PINGS {
                self.out.pop_front();
            }
            self.out.push_back((p, ts));
        }
        PingFact::Sent { owed }
    }

    /// The other direction answered one of this direction's PINGs.
    pub(crate) fn acked(&mut self, payload: Option<[u8; 8]>) -> PingFact {
        self.owed = self.owed.saturating_sub(1);
        let Some(p) = payload else {
            return PingFact::Unmatched;
        };
        match self.out.iter().position(|x| x.0 == p) {
            Some(i) => match self.out.remove(i) {
                Some((_, sent)) => PingFact::Acked { sent },
                None => PingFact::Unmatched,
            },
            None => PingFact::Unmatched,
        }
    }
}

/// What a frame did to its stream's life (RFC 9113 §5.1) as the connection model follows it:
/// [`crate::FrameEvent::stream`], derived once per connection in the ledger, whose one table of
/// open streams keeps each stream's state (docs/ledger.md, "Streams"). The side a step speaks of
/// is the frame's sender ([`crate::FrameEvent::side`]); the model follows halves by direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StreamStep {
    /// A frame of the connection (stream 0), or one that changed nothing of its stream's life:
    /// no END_STREAM, no RST_STREAM, not a header block that opens it.
    #[default]
    None,
    /// The first header block of the stream (idle -> open; on a connection met mid-way, the
    /// first block seen), without END_STREAM.
    Opened,
    /// END_STREAM: the sender's half closed while the other half is still open (half-closed).
    /// A header block that opens the stream with END_STREAM (a GET) makes this step too.
    HalfClosed,
    /// END_STREAM after the other side's: both halves are closed, the stream is over.
    Ended,
    /// RST_STREAM from the sender: the stream is closed, with the frame's error code (`None`
    /// when the frame could not be read).
    Reset {
        /// The RST_STREAM's error code.
        code: Option<h2_frame_parser::ErrorCode>,
    },
    /// RST_STREAM with REFUSED_STREAM from a side that had sent no header block on the stream:
    /// refused before any response, so not processed (RFC 9113 §8.7).
    Refused,
    /// A header block or END_STREAM on a stream the model does not hold open: beyond
    /// [`MAX_OPEN_STREAMS`], closed already (ended, or reset: a frame crossing the RST), or
    /// opened before the capture began.
    Untracked,
}

/// Which end of a connection sent a frame. See docs/ledger.md for how the client is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Side {
    /// The side that opens streams with requests.
    Client,
    /// The side that answers them.
    Server,
}

impl Side {
    /// Both sides, client first.
    pub const ALL: [Side; 2] = [Side::Client, Side::Server];

    /// `client` or `server`, as in the JSON keys.
    pub fn name(self) -> &'static str {
        match self {
            Side::Client => "client",
            Side::Server => "server",
        }
    }

    pub(crate) fn other(self) -> Side {
        match self {
            Side::Client => Side::Server,
            Side::Server => Side::Client,
        }
    }

    /// 0 for the client, 1 for the server: the index of arrays kept by side (`[client,
    /// server]`) in records printed a million times.
    pub(crate) fn index(self) -> usize {
        match self {
            Side::Client => 0,
            Side::Server => 1,
        }
    }
}

/// One value per side: what a ledger, an analysis or a report keeps for the client and the
/// server. Serialized as `{"client": .., "server": ..}`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Sides<T> {
    /// The client's value.
    pub client: T,
    /// The server's value.
    pub server: T,
}

impl<T> Sides<T> {
    /// The value of side `s`.
    pub fn get(&self, s: Side) -> &T {
        match s {
            Side::Client => &self.client,
            Side::Server => &self.server,
        }
    }

    /// The value of side `s`, mutable.
    pub fn get_mut(&mut self, s: Side) -> &mut T {
        match s {
            Side::Client => &mut self.client,
            Side::Server => &mut self.server,
        }
    }

    /// Both sides made from their [`Side`].
    pub fn from_fn(mut f: impl FnMut(Side) -> T) -> Sides<T> {
        Sides {
            client: f(Side::Client),
            server: f(Side::Server),
        }
    }
}

impl<T> Sides<T> {
    /// Both values, client first.
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        [&mut self.client, &mut self.server].into_iter()
    }
}

impl<T> std::ops::Index<Side> for Sides<T> {
    type Output = T;
    #[inline]
    fn index(&self, s: Side) -> &T {
        self.get(s)
    }
}

impl<T> std::ops::IndexMut<Side> for Sides<T> {
    #[inline]
    fn index_mut(&mut self, s: Side) -> &mut T {
        self.get_mut(s)
    }
}

/// The rows of the ledger. HEADERS and TRAILERS split the HEADERS frame type by position on the
/// stream; PING/PING_ACK and SETTINGS/SETTINGS_ACK split by the ACK flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FrameClass {
    /// The first HEADERS frame a side sends on a stream.
    Headers,
    /// Any later HEADERS frame of that side on that stream.
    Trailers,
    /// DATA.
    Data,
    /// WINDOW_UPDATE.
    WindowUpdate,
    /// PING without the ACK flag.
    Ping,
    /// PING with the ACK flag.
    PingAck,
    /// SETTINGS without the ACK flag.
    Settings,
    /// SETTINGS with the ACK flag.
    SettingsAck,
    /// RST_STREAM.
    RstStream,
    /// GOAWAY.
    GoAway,
    /// PRIORITY.
    Priority,
    /// PUSH_PROMISE.
    PushPromise,
    /// CONTINUATION.
    Continuation,
    /// A frame type RFC 9113 does not define.
    Unknown,
}

impl FrameClass {
    /// Number of classes.
    pub const COUNT: usize = 14;
    /// Every class, in the table's row order.
    pub const ALL: [FrameClass; FrameClass::COUNT] = [
        FrameClass::Headers,
        FrameClass::Trailers,
        FrameClass::Data,
        FrameClass::WindowUpdate,
        FrameClass::Ping,
        FrameClass::PingAck,
        FrameClass::Settings,
        FrameClass::SettingsAck,
        FrameClass::RstStream,
        FrameClass::GoAway,
        FrameClass::Priority,
        FrameClass::PushPromise,
        FrameClass::Continuation,
        FrameClass::Unknown,
    ];

    /// The JSON key and table row name (a public contract: never rename).
    pub fn name(self) -> &'static str {
        match self {
            FrameClass::Headers => "HEADERS",
            FrameClass::Trailers => "TRAILERS",
            FrameClass::Data => "DATA",
            FrameClass::WindowUpdate => "WINDOW_UPDATE",
            FrameClass::Ping => "PING",
            FrameClass::PingAck => "PING_ACK",
            FrameClass::Settings => "SETTINGS",
            FrameClass::SettingsAck => "SETTINGS_ACK",
            FrameClass::RstStream => "RST_STREAM",
            FrameClass::GoAway => "GOAWAY",
            FrameClass::Priority => "PRIORITY",
            FrameClass::PushPromise => "PUSH_PROMISE",
            FrameClass::Continuation => "CONTINUATION",
            FrameClass::Unknown => "UNKNOWN",
        }
    }

    /// The class of a [`FrameClass::name`], in any case.
    pub fn from_name(name: &str) -> Option<FrameClass> {
        FrameClass::ALL
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(name))
    }

    /// Position in [`FrameClass::ALL`] (the index of [`FrameCounts`]).
    pub fn index(self) -> usize {
        self as usize
    }

    /// Frames that carry no call payload: everything but HEADERS, TRAILERS, DATA and CONTINUATION.
    pub(crate) fn is_control(self) -> bool {
        !matches!(
            self,
            FrameClass::Headers
                | FrameClass::Trailers
                | FrameClass::Data
                | FrameClass::Continuation
        )
    }
}

/// Frame counts by class, serialized as an object with the fourteen class names as keys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrameCounts(pub [u64; FrameClass::COUNT]);

impl FrameCounts {
    /// Frames of class `c`.
    pub fn get(&self, c: FrameClass) -> u64 {
        self.0[c.index()]
    }

    pub(crate) fn add(&mut self, c: FrameClass, n: u64) {
        self.0[c.index()] += n;
    }

    pub(crate) fn merge(&mut self, other: &FrameCounts) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a += b;
        }
    }

    /// Frames of every class.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// Control frames: every class but HEADERS, TRAILERS, DATA and CONTINUATION.
    pub fn control(&self) -> u64 {
        FrameClass::ALL
            .iter()
            .filter(|c| c.is_control())
            .map(|c| self.get(*c))
            .sum()
    }
}

impl Serialize for FrameCounts {
    /// Keyed by class name, in the published order of every JSON object: byte order of the
    /// names (`CONTINUATION`, `DATA`, `GOAWAY`, ...).
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut names = FrameClass::ALL;
        names.sort_unstable_by_key(|c| c.name());
        let mut m = s.serialize_map(Some(FrameClass::COUNT))?;
        for c in names {
            m.serialize_entry(c.name(), &self.get(c))?;
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ack_answers_the_oldest_ping_with_its_payload() {
        let mut b = PingBook::default();
        assert_eq!(b.sent(Some([1; 8]), 10), PingFact::Sent { owed: 0 });
        assert_eq!(b.sent(Some([2; 8]), 20), PingFact::Sent { owed: 1 });
        assert_eq!(b.sent(Some([1; 8]), 30), PingFact::Sent { owed: 2 });
        assert_eq!(b.acked(Some([1; 8])), PingFact::Acked { sent: 10 });
        assert_eq!(b.acked(Some([9; 8])), PingFact::Unmatched);
        assert_eq!(b.acked(Some([1; 8])), PingFact::Acked { sent: 30 });
        // An unread PING is owed but cannot be matched; owed never goes below 0.
        assert_eq!(b.sent(None, 40), PingFact::Sent { owed: 0 });
        assert_eq!(b.acked(None), PingFact::Unmatched);
        assert_eq!(b.acked(Some([2; 8])), PingFact::Acked { sent: 20 });
        assert_eq!(b.sent(Some([3; 8]), 50), PingFact::Sent { owed: 0 });
    }

    #[test]
    fn the_oldest_outstanding_ping_is_forgotten_past_the_bound() {
        let mut b = PingBook::default();
        for i in 0..=MAX_OUTSTANDING_PINGS as u64 {
            let fact = b.sent(Some(i.to_be_bytes()), i as Nanos);
            assert_eq!(fact, PingFact::Sent { owed: i });
        }
        assert_eq!(b.out.len(), MAX_OUTSTANDING_PINGS);
        assert_eq!(b.acked(Some(0u64.to_be_bytes())), PingFact::Unmatched);
        assert_eq!(
            b.acked(Some(1u64.to_be_bytes())),
            PingFact::Acked { sent: 1 }
        );
    }
}
