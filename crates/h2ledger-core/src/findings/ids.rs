//! The finding ids (a public contract) and their severities.

use serde::{Serialize, Serializer};

/// How bad a finding is. Ordered: `Info < Warn < Critical`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Worth knowing (a stall, a capture that began mid-connection).
    Info,
    /// Costs something or will break (keepalive strikes, calls waiting, gaps in the capture).
    Warn,
    /// A peer was or would be cut off: an abuse pattern by a server's own limit, or a GOAWAY
    /// that ended the connection.
    Critical,
}

impl Severity {
    /// Every severity, least first.
    pub const ALL: [Severity; 3] = [Severity::Info, Severity::Warn, Severity::Critical];

    /// Its name in the JSON and `--fail-on`.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warn => "warn",
            Severity::Critical => "critical",
        }
    }

    /// The severity named `s`.
    pub fn from_name(s: &str) -> Option<Severity> {
        Severity::ALL.into_iter().find(|x| x.name() == s)
    }
}

impl Serialize for Severity {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

macro_rules! ids {
    ($($v:ident = $name:literal, $sev:ident, $abuse:literal;)*) => {
        /// What a finding says. The names are a public contract (JSON `id`, `--fail-on`, the
        /// metrics' `findings_total{id=...}`); docs/findings.md describes each.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum FindingId { $(#[doc = $name] $v),* }

        impl FindingId {
            /// Every id, in the order of docs/findings.md.
            pub const ALL: &'static [FindingId] = &[$(FindingId::$v),*];

            /// How many ids there are.
            pub const COUNT: usize = Self::ALL.len();

            /// The stable name (`rapid-reset`).
            pub fn name(self) -> &'static str {
                match self { $(FindingId::$v => $name),* }
            }

            /// The severity a finding of this id has unless the user set another
            /// (`--severity`, [`super::Severities`]).
            pub fn severity(self) -> Severity {
                match self { $(FindingId::$v => Severity::$sev),* }
            }

            /// Whether the id names an abuse pattern (a CVE): none may fire on ordinary traffic.
            pub fn is_abuse(self) -> bool {
                match self { $(FindingId::$v => $abuse),* }
            }

            /// Whether the id is filed once for the whole capture (no connection, no side: its
            /// `stream` is null), not per connection: `mid-stream`, `reassembly-gaps`,
            /// `tls-no-keys`, `capture-drops`. Sessions that each read part of one capture
            /// (`sniff --workers`, `replay -j`) file it once each; their merged report and
            /// metrics count it once (decision 418).
            pub fn capture_wide(self) -> bool {
                matches!(
                    self,
                    FindingId::MidStream
                        | FindingId::ReassemblyGaps
                        | FindingId::TlsNoKeys
                        | FindingId::CaptureDrops
                )
            }
        }
    };
}

ids! {
    BdpPingPerCall = "bdp-ping-per-call", Warn, false;
    KeepaliveStrikes = "keepalive-strikes", Warn, false;
    TooManyPings = "too-many-pings", Critical, false;
    RapidReset = "rapid-reset", Critical, true;
    MadeYouReset = "made-you-reset", Critical, true;
    ContinuationFlood = "continuation-flood", Critical, true;
    PingFlood = "ping-flood", Critical, true;
    SettingsFlood = "settings-flood", Critical, true;
    ResetFlood = "reset-flood", Critical, true;
    EmptyFramesFlood = "empty-frames-flood", Critical, true;
    PriorityFlood = "priority-flood", Critical, true;
    WindowUpdateFlood = "window-update-flood", Critical, true;
    ZeroWindow = "zero-window", Warn, true;
    HpackBomb = "hpack-bomb", Critical, true;
    StreamSlotsFull = "stream-slots-full", Warn, false;
    RefusedStream = "refused-stream", Warn, false;
    FlowStall = "flow-stall", Info, false;
    CaptureDrops = "capture-drops", Warn, false;
    MidStream = "mid-stream", Info, false;
    TlsNoKeys = "tls-no-keys", Warn, false;
    ReassemblyGaps = "reassembly-gaps", Warn, false;
    CallErrors = "call-errors", Warn, false;
    GoawayCutCalls = "goaway-cut-calls", Warn, false;
    MethodErrors = "method-errors", Warn, false;
    DeadlineExceeded = "deadline-exceeded", Warn, false;
    CancelStorm = "cancel-storm", Warn, false;
    SlowCalls = "slow-calls", Info, false;
    GoawayRetries = "goaway-retries", Info, false;
    MethodErrorsRise = "method-errors-rise", Warn, false;
}

impl FindingId {
    /// The id named `s`.
    pub fn from_name(s: &str) -> Option<FindingId> {
        FindingId::ALL.iter().copied().find(|x| x.name() == s)
    }
}

impl Serialize for FindingId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}
