//! What the ledger reports of a connection ([`ConnSummary`]) and of the run ([`Warnings`]).

use super::*;

/// How the client of a connection was identified, strongest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientBy {
    /// The sender of the SYN (or the receiver of the SYN-ACK).
    Syn,
    /// The sender of the client connection preface.
    Preface,
    /// A request (`:method`) or response (`:status`) header block.
    PseudoHeaders,
    /// The side that sent more HEADERS on odd-numbered streams.
    OddStreams,
    /// The side with the higher port.
    EphemeralPort,
}

impl ClientBy {
    /// The published name (`per_connection[].client_by`): `syn`, `preface`, `pseudo-headers`,
    /// `odd-streams` or `ephemeral-port`.
    pub fn name(self) -> &'static str {
        match self {
            ClientBy::Syn => "syn",
            ClientBy::Preface => "preface",
            ClientBy::PseudoHeaders => "pseudo-headers",
            ClientBy::OddStreams => "odd-streams",
            ClientBy::EphemeralPort => "ephemeral-port",
        }
    }
}

/// What the ledger knows of a connection once the input is done.
#[derive(Clone, Debug)]
pub struct ConnSummary {
    /// The connection.
    pub id: ConnId,
    /// HTTP/2 was found on it (only those are counted).
    pub http2: bool,
    /// The client's address.
    pub client: SocketAddr,
    /// The server's address.
    pub server: SocketAddr,
    /// The TCP direction the client sends in.
    pub client_dir: Dir,
    /// The evidence the client was told by.
    pub client_by: ClientBy,
    /// The capture did not hold the start of at least one direction.
    pub mid_stream: bool,
    /// Time of its first packet.
    pub start: Nanos,
    /// HTTP/2 began after HTTP/1.1 on this connection (an h2c upgrade or a CONNECT tunnel).
    pub prelude: Option<Prelude>,
    /// The HTTP/1.1 request of an h2c upgrade was seen: stream 1 is its call.
    pub upgraded_call: bool,
    /// This connection continues one that was evicted from reassembly and whose state was
    /// folded for good before it came back: the same connection, counted once (under the
    /// original when that was HTTP/2, [`ConnSummary::continued_counted`]), its counts added
    /// to the totals.
    pub continues: Option<ConnId>,
    /// The connection it continues was HTTP/2 when its state was folded, and was counted
    /// then: this one adds its counts, not a connection.
    pub continued_counted: bool,
    /// When the connection ended (its FIN or RST, or the end of the capture), once it has.
    pub end: Option<Nanos>,
}

/// What came before HTTP/2 on a connection seen from its start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prelude {
    /// `Upgrade: h2c` request, `101 Switching Protocols`, then the preface (RFC 7540 §3.2).
    Upgrade,
    /// `CONNECT` to a proxy, its `2xx` answer, then HTTP/2 inside the tunnel.
    Connect,
}

impl Prelude {
    /// The published name (`per_connection[].prelude`): `h2c-upgrade` or `connect-tunnel`.
    pub fn name(self) -> &'static str {
        match self {
            Prelude::Upgrade => "h2c-upgrade",
            Prelude::Connect => "connect-tunnel",
        }
    }
}

/// Warnings: the first [`MAX_WARNINGS`] as text, all counted by kind.
#[derive(Debug, Default)]
pub struct Warnings {
    /// The first [`MAX_WARNINGS`] messages, then one line saying that later ones are only counted.
    pub messages: Vec<String>,
    /// Every warning, counted by kind (`gap`, `malformed-frame`, ...): the report's `anomalies`.
    pub counts: BTreeMap<&'static str, u64>,
    /// Every warning added, of every kind: a run watches it to look at `counts` only when it
    /// changed.
    pub total: u64,
}

impl Warnings {
    /// Counts a warning of `kind`; `msg` is called only while messages are still kept.
    pub fn add(&mut self, kind: &'static str, msg: impl FnOnce() -> String) {
        *self.counts.entry(kind).or_default() += 1;
        self.total += 1;
        if self.messages.len() < MAX_WARNINGS {
            self.messages.push(msg());
        } else if self.messages.len() == MAX_WARNINGS {
            self.messages
                .push("further warnings are only counted (see \"anomalies\")".to_string());
        }
    }
}
