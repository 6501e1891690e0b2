//! `h2ledger explain ID`: what a finding id means without a capture: what it names, whose
//! frames and what it counts, the rule and where it comes from, and the advice. The rule and
//! the advice are the words a finding of the id carries ([`super::text`]), written without
//! evidence; the rest is here, one entry per id (the match is exhaustive: a new id does not
//! compile without its explanation). docs/findings.md says the same at more length.

use super::{text, Evidence, FindingId, FindingsConfig, Severity};

/// One id's explanation.
#[derive(Clone, Debug, PartialEq)]
pub struct Explanation {
    /// The id.
    pub id: FindingId,
    /// Its severity by default (`--severity ID=LEVEL` changes it).
    pub severity: Severity,
    /// What it names, in one sentence.
    pub what: &'static str,
    /// The side whose frames it is about.
    pub side: &'static str,
    /// What its `count` counts.
    pub count: &'static str,
    /// Where the rule comes from: the projects' files and constants, and h2ledger's own.
    pub source: &'static str,
    /// The threshold, as a finding states it.
    pub rule: String,
    /// What to change, as a finding advises it (without its numbers).
    pub advice: String,
}

/// `(what, side, count, source)` of `id`.
fn entry(id: FindingId) -> (&'static str, &'static str, &'static str, &'static str) {
    use FindingId as F;
    match id {
        F::BdpPingPerCall => (
            "grpc-go's BDP estimator runs about one round (WINDOW_UPDATE, PING, PING ACK) per call",
            "the side that sent the BDP PINGs",
            "its BDP PINGs",
            "grpc-go internal/transport/bdp_estimator.go bdpPing (the PING payload); http2_client.go and http2_server.go dynamicWindow; h2ledger rules.rs BDP_PER_CALL, BDP_MIN_CALLS",
        ),
        F::KeepaliveStrikes => (
            "client PINGs the server counts as keepalive strikes (too soon, no data between)",
            "client",
            "strikes",
            "grpc-go internal/transport/http2_server.go handlePing, maxPingStrikes, defaultKeepalivePolicyMinTime, defaultPingTimeout; grpc-java KeepAliveEnforcer; h2ledger rules.rs MAX_PING_STRIKES",
        ),
        F::TooManyPings => (
            "the server closed the connection with GOAWAY ENHANCE_YOUR_CALM too_many_pings",
            "client",
            "strikes",
            "grpc-go internal/transport/http2_server.go handlePing (GOAWAY debug data too_many_pings); h2ledger rules.rs MAX_PING_STRIKES",
        ),
        F::RapidReset => (
            "streams reset by the client right after opening (CVE-2023-44487)",
            "client",
            "the client's RST_STREAMs",
            "nghttp2 lib/nghttp2_session.h NGHTTP2_DEFAULT_STREAM_RESET_BURST, NGHTTP2_DEFAULT_STREAM_RESET_RATE; Envoy source/common/http/conn_manager_impl.cc isPrematureRstStream, maybeDrainDueToPrematureResets; h2ledger findings/mod.rs RESET_BURST, RESET_RATE, rules.rs PREMATURE_MIN_STREAMS",
        ),
        F::MadeYouReset => (
            "the client makes the server reset its streams with a frame after a valid request (CVE-2025-8671)",
            "client",
            "the server's resets of that kind",
            "nghttp2 1.66.0 lib/nghttp2_session.c session_update_glitch_ratelim, NGHTTP2_DEFAULT_GLITCH_BURST/_RATE; Envoy conn_manager_impl.cc premature resets; h2ledger findings/mod.rs RESET_BURST, RESET_RATE",
        ),
        F::ContinuationFlood => (
            "a header block cut into CONTINUATION frames without end (CVE-2024-27316, CVE-2023-45288, CVE-2024-28182)",
            "the sender",
            "header blocks over the limit",
            "nghttp2 lib/nghttp2_session.h NGHTTP2_DEFAULT_MAX_CONTINUATIONS; Go x/net http2/frame.go readMetaFrame; h2ledger rules.rs MAX_CONTINUATIONS",
        ),
        F::PingFlood => (
            "PINGs faster than the peer answers them (CVE-2019-9512)",
            "the sender",
            "its PINGs",
            "nghttp2 lib/nghttp2_session.h NGHTTP2_DEFAULT_MAX_OBQ_FLOOD_ITEM; Envoy max_outbound_control_frames; Go x/net maxQueuedControlFrames; Jetty AbstractHTTP2ServerConnectionFactory WindowRateControl.Factory(128); h2ledger rules.rs MAX_OWED_ACKS, findings/mod.rs FRAME_RATE",
        ),
        F::SettingsFlood => (
            "SETTINGS faster than the peer acknowledges them, or too many parameters (CVE-2019-9515)",
            "the sender",
            "its SETTINGS frames",
            "nghttp2 NGHTTP2_DEFAULT_MAX_OBQ_FLOOD_ITEM, lib/includes/nghttp2/nghttp2.h NGHTTP2_DEFAULT_MAX_SETTINGS; Envoy max_outbound_control_frames; Jetty WindowRateControl.Factory(128); h2ledger rules.rs MAX_OWED_ACKS, MAX_SETTINGS_ENTRIES",
        ),
        F::ResetFlood => (
            "requests the server must refuse, each answered with RST_STREAM (CVE-2019-9514)",
            "client",
            "the server's resets",
            "nghttp2 lib/nghttp2_session.h NGHTTP2_DEFAULT_STREAM_RESET_BURST/_RATE; Envoy max_outbound_control_frames; Go x/net http2/server.go maxQueuedControlFrames; h2ledger findings/mod.rs RESET_BURST, RESET_RATE",
        ),
        F::EmptyFramesFlood => (
            "frames with no payload and no END_STREAM, in a row (CVE-2019-9518)",
            "client",
            "empty frames",
            "Envoy source/common/http/http2/protocol_constraints.cc trackInboundFrames, max_consecutive_inbound_frames_with_empty_payload; h2ledger rules.rs MAX_EMPTY_RUN",
        ),
        F::PriorityFlood => (
            "PRIORITY frames far beyond the streams opened (CVE-2019-9513)",
            "client",
            "PRIORITY frames",
            "Envoy protocol_constraints.cc checkInboundFrameLimits, max_inbound_priority_frames_per_stream; h2ledger rules.rs PRIORITY_PER_STREAM",
        ),
        F::WindowUpdateFlood => (
            "WINDOW_UPDATEs far beyond the DATA received",
            "client",
            "WINDOW_UPDATEs",
            "Envoy protocol_constraints.cc checkInboundFrameLimits, max_inbound_window_update_frames_per_data_frame_sent; h2ledger rules.rs WINDOW_UPDATES_PER_DATA",
        ),
        F::ZeroWindow => (
            "a receiver holding the sender's window at zero while the sender has data (CVE-2019-9517)",
            "the receiver that holds the window",
            "holds",
            "RFC 9113 §6.9; Envoy stream_idle_timeout (the defence); h2ledger rules.rs ZERO_WINDOW_HOLD",
        ),
        F::HpackBomb => (
            "a small header block that decodes to a huge header list",
            "the sender",
            "such header blocks",
            "RFC 9113 §6.5.2 (header list size); Envoy envoy/http/codec.h DEFAULT_MAX_REQUEST_HEADERS_KB; Go net/http DefaultMaxHeaderBytes; h2ledger rules.rs BOMB_LIST, BOMB_RATIO",
        ),
        F::StreamSlotsFull => (
            "calls queued for the server's SETTINGS_MAX_CONCURRENT_STREAMS",
            "client",
            "calls that waited plus streams opened beyond the limit",
            "RFC 9113 §5.1.2; grpc-go issues #1986, #5908; grpc-java #8252; h2ledger rules.rs REFILL_NS",
        ),
        F::RefusedStream => (
            "RST_STREAM REFUSED_STREAM from the server: not processed, safe to retry",
            "server",
            "refused streams",
            "RFC 9113 §8.7; Go x/net http2/server.go over_max_streams_race; nghttp2",
        ),
        F::FlowStall => (
            "a sender waited for a flow-control window",
            "the sender",
            "stalls",
            "RFC 9113 §6.9; docs/ledger.md \"Flow control\" (the stall h2ledger counts)",
        ),
        F::CaptureDrops => (
            "libpcap dropped packets: the counts are low",
            "none (capture-wide)",
            "the times it was seen",
            "libpcap pcap_stats ps_drop, ps_ifdrop",
        ),
        F::MidStream => (
            "connections whose start the capture lacks",
            "none (capture-wide)",
            "the times it was seen",
            "docs/ledger.md \"Connection\" (no SYN or preface for a direction)",
        ),
        F::TlsNoKeys => (
            "TLS connections with ALPN h2 that could not be decrypted",
            "none (capture-wide)",
            "the times it was seen",
            "the key log (--keylog, SSLKEYLOGFILE format) or the pcapng's Decryption Secrets Blocks",
        ),
        F::ReassemblyGaps => (
            "stretches of TCP streams the capture lacks",
            "none (capture-wide)",
            "the times it was seen",
            "docs/ledger.md \"Gaps\"",
        ),
        F::CallErrors => (
            "calls that failed: a gRPC status other than OK, an HTTP status of 500 or more, or cancelled by the client",
            "server (whose answers they are)",
            "failed calls",
            "grpc/grpc doc/statuscodes.md (the status names); RFC 9113 §8.1 (:status); h2ledger findings/rules.rs FAILED_MIN_CALLS, FAILED_SHARE",
        ),
        F::GoawayCutCalls => (
            "client streams the server's GOAWAY left unprocessed (above its last_stream_id)",
            "server (that sent the GOAWAY)",
            "client streams above the last_stream_id",
            "RFC 9113 §6.8 (GOAWAY, last_stream_id), §8.7 (safe to retry); nginx ngx_http_v2_module keepalive_requests",
        ),
        F::MethodErrors => (
            "a method (request :path) that fails at least half of its calls on a connection",
            "server (whose answers they are)",
            "the failed calls of the method that fails most",
            "h2ledger findings/rules.rs METHOD_MIN_CALLS, METHOD_FAILED_SHARE, MAX_METHODS; grpc/grpc doc/statuscodes.md",
        ),
        F::MethodErrorsRise => (
            "a method whose failed share in the later half of its calls' time is clearly above the earlier half's",
            "server (whose answers they are)",
            "the failed calls of the later window",
            "h2ledger findings/conn.rs TREND_BUCKETS, TREND_WIDTH; findings/rules.rs RISING_MIN_CALLS, RISING_STEP; grpc/grpc doc/statuscodes.md",
        ),
        F::DeadlineExceeded => (
            "calls that ended past their deadline: grpc-status 4 (DEADLINE_EXCEEDED) or the client's RST_STREAM CANCEL at its grpc-timeout",
            "client (whose deadline it is)",
            "calls past their deadline",
            "grpc/grpc doc/PROTOCOL-HTTP2.md (grpc-timeout), doc/statuscodes.md (DEADLINE_EXCEEDED); h2ledger findings/rules.rs DEADLINE_MIN_CALLS",
        ),
        F::CancelStorm => (
            "the client cancelling many of its calls (RST_STREAM CANCEL before the server ended them, not at a deadline)",
            "client (that cancels)",
            "cancels not at a deadline",
            "RFC 9113 §8.4 (CANCEL); h2ledger findings/rules.rs CANCEL_STORM_MIN, CANCEL_STORM_SHARE",
        ),
        F::GoawayRetries => (
            "calls a server's GOAWAY cut that the client sent again on another connection to the same server",
            "client (that retries)",
            "cut calls retried",
            "RFC 9113 §6.8 (last_stream_id), §8.7 (a request not processed can be retried); grpc-go transparent retry; h2ledger findings/rules.rs RETRY_WINDOW",
        ),
        F::SlowCalls => (
            "calls that took a second or more, the slowest one's time split into what the wire shows",
            "server (whose answers they wait for)",
            "slow calls",
            "h2ledger findings/rules.rs SLOW_CALL (Nielsen, Response Times: The 3 Important Limits, 1993); RFC 9113 §6.7 (PING), §6.9 (flow control), §5.1.2 (stream concurrency)",
        ),
    }
}

/// The explanation of `id` under the server policy `cfg` (the keepalive rules name its MinTime).
pub fn explain(id: FindingId, cfg: &FindingsConfig) -> Explanation {
    let (what, side, count, source) = entry(id);
    let (_, rule, advice) = text::words(id, &Evidence::default(), None, cfg);
    Explanation {
        id,
        severity: id.severity(),
        what,
        side,
        count,
        source,
        rule,
        advice,
    }
}
