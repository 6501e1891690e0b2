//! Each finding's words: a one-line title with its numbers, the rule (threshold and source) and
//! the advice, written from its evidence when it is reported.

use h2ledger_tcp::Nanos;

use crate::model::Side;

use super::rules::*;
use super::{Evidence, FindingId, FindingsConfig};

/// A duration in microseconds, for a person: `350 ms`, `1.2 s`, `5 min`.
fn dur(us: u64) -> String {
    if us >= 3_600_000_000 && us.is_multiple_of(3_600_000_000) {
        format!("{} h", us / 3_600_000_000)
    } else if us >= 120_000_000 && us.is_multiple_of(60_000_000) {
        format!("{} min", us / 60_000_000)
    } else if us >= 1_000_000 {
        format!("{:.1} s", us as f64 / 1e6)
    } else if us >= 1_000 {
        format!("{} ms", us / 1_000)
    } else {
        format!("{us} us")
    }
}

fn ns_us(ns: Nanos) -> u64 {
    (ns.max(0) / 1_000) as u64
}

fn side_name(s: Option<Side>) -> &'static str {
    s.map(Side::name).unwrap_or("peer")
}

fn plural(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("{n} {one}")
    } else {
        format!("{n} {many}")
    }
}

/// The failed statuses of `e` (its `grpc_NAME` keys and `http_5xx`), most first:
/// `(10, "NOT_FOUND")`.
fn failed_statuses(e: &Evidence) -> Vec<(u64, String)> {
    let mut parts: Vec<(u64, String)> = super::failures::GRPC_KEYS
        .iter()
        .enumerate()
        .skip(1)
        .filter(|(_, k)| e.n(k) > 0)
        .map(|(i, k)| {
            let name = if i == 17 {
                "other gRPC status".to_string()
            } else {
                crate::grpc::status_name(i as u16).into_owned()
            };
            (e.n(k), name)
        })
        .collect();
    if e.n("http_5xx") > 0 {
        parts.push((e.n("http_5xx"), "HTTP 5xx".to_string()));
    }
    parts
}

/// `(title, rule, advice)` of a finding.
pub(super) fn words(
    id: FindingId,
    e: &Evidence,
    side: Option<Side>,
    cfg: &FindingsConfig,
) -> (String, String, String) {
    let who = side_name(side);
    let other = side.map(|s| s.other().name()).unwrap_or("peer");
    let min = dur(ns_us(cfg.keepalive_min_time));
    match id {
        FindingId::BdpPingPerCall => (
            format!(
                "{who}: {} BDP PINGs for {} calls ({:.2} a call), {:.2} control frames and {:.2} writes a call",
                e.n("bdp_pings"),
                e.n("calls"),
                e.f("bdp_pings_per_call"),
                e.f("control_frames_per_call"),
                e.f("writes_per_call")
            ),
            format!(
                "at least {BDP_PER_CALL} PINGs with grpc-go's BDP payload 02 04 10 10 09 0e 07 07 (internal/transport/bdp_estimator.go bdpPing) per call over {BDP_MIN_CALLS} or more calls: each DATA received with no BDP PING outstanding opens a round (a WINDOW_UPDATE, a PING, its ACK)"
            ),
            "fix the windows: grpc.WithInitialWindowSize and grpc.WithInitialConnWindowSize on the client, grpc.InitialWindowSize and grpc.InitialConnWindowSize on the server, at 64 KiB or more, turn the BDP estimator off (grpc-go internal/transport/http2_client.go and http2_server.go: dynamicWindow = false when the option is >= defaultWindowSize); or batch calls so one round covers several".to_string(),
        ),
        FindingId::KeepaliveStrikes => {
            let strikes = e.n("strikes");
            let next = if strikes > MAX_PING_STRIKES {
                "past the limit: a gRPC server sends GOAWAY ENHANCE_YOUR_CALM too_many_pings".to_string()
            } else {
                format!(
                    "{} more PING{} sooner than {} after the last gets GOAWAY too_many_pings",
                    MAX_PING_STRIKES + 1 - strikes,
                    if MAX_PING_STRIKES + 1 - strikes == 1 { "" } else { "s" },
                    dur(e.n("last_min_us"))
                )
            };
            (
                format!(
                    "{} of {} (client PINGs {} apart, no data between); {next}",
                    plural(strikes, "strike", "strikes"),
                    MAX_PING_STRIKES,
                    dur(e.n("last_gap_us"))
                ),
                format!(
                    "the server's keepalive enforcement as grpc-go does it (internal/transport/http2_server.go handlePing; grpc-java KeepAliveEnforcer; gRPC core): a PING sooner than MinTime ({min}, --keepalive-min-time; 2 h while no stream is open{}) after the previous one, with no HEADERS or DATA written by the server in between, is a strike; more than maxPingStrikes ({MAX_PING_STRIKES}) close the connection",
                    if cfg.permit_without_stream { ", not applied: --permit-without-stream" } else { " unless PermitWithoutStream" }
                ),
                format!("make the client's keepalive time at least the server's MinTime (grpc-go keepalive.ClientParameters.Time >= {min}) and PermitWithoutStream false unless the server permits it; or relax the server: keepalive.EnforcementPolicy{{MinTime, PermitWithoutStream: true}} (grpc-java permitKeepAliveTime, permitKeepAliveWithoutCalls)"),
            )
        }
        FindingId::TooManyPings => (
            format!(
                "GOAWAY ENHANCE_YOUR_CALM too_many_pings after {} strikes (MinTime {min}): the connection is closed",
                e.n("strikes_total")
            ),
            format!("grpc-go internal/transport/http2_server.go handlePing: more than maxPingStrikes ({MAX_PING_STRIKES}) PINGs sooner than EnforcementPolicy.MinTime (default 5 min, defaultKeepalivePolicyMinTime) apart with no data written between them, or sooner than 2 h (defaultPingTimeout) while no stream is open unless PermitWithoutStream; grpc-java KeepAliveEnforcer and gRPC core do the same"),
            format!("raise the client's keepalive time to the server's MinTime or more ({min} by default) and set PermitWithoutStream only when the server permits it; grpc-go clients double their keepalive time after this GOAWAY, others do not"),
        ),
        FindingId::RapidReset => (
            format!(
                "{} streams reset by the client, {} before any response within 1 s, {} past the budget (CVE-2023-44487)",
                e.n("client_resets"),
                e.n("premature_resets"),
                e.n("over_reset_budget")
            ),
            format!("nghttp2 lib/nghttp2_session.h NGHTTP2_DEFAULT_STREAM_RESET_BURST ({RESET_BURST}) and _RATE ({RESET_RATE}/s): a RST_STREAM that finds the budget empty gets GOAWAY; or Envoy source/common/http/conn_manager_impl.cc maybeDrainDueToPrematureResets: at least {PREMATURE_MIN_STREAMS} streams closed (premature_reset_total_stream_count) and at least half reset before the response headers within 1 s (premature_reset_min_stream_lifetime_seconds); Go x/net http2/server.go allows 4 x MaxConcurrentStreams handlers waiting (too_many_early_resets)"),
            "a client that cancels most calls at once is either attacking or broken: limit the resets per connection at the server or proxy (nghttp2 >= 1.57, Go x/net >= 0.17, Envoy >= 1.27.1 do) and find why the client cancels".to_string(),
        ),
        FindingId::MadeYouReset => (
            format!(
                "the server reset {} streams for frames the client sent after the request (CVE-2025-8671)",
                e.n("server_resets")
            ),
            format!("server resets for a frame the client sent after its request, counted as nghttp2's glitch counter (lib/nghttp2_session.c session_update_glitch_ratelim, 1.66.0: burst {RESET_BURST}, {RESET_RATE}/s; NGHTTP2_DEFAULT_GLITCH_BURST) and as Envoy's premature resets (conn_manager_impl.cc: {PREMATURE_MIN_STREAMS} streams, half of them reset within 1 s before response headers)"),
            "the backend keeps working on streams the server reset: count server-side resets against the same budget as the client's (nghttp2 >= 1.66, Envoy, Go x/net with the MadeYouReset fixes) and close connections that provoke them".to_string(),
        ),
        FindingId::ResetFlood => (
            format!(
                "the server refused {} requests with RST_STREAM, {} past the budget (CVE-2019-9514)",
                e.n("server_resets"),
                e.n("over_reset_budget")
            ),
            format!("RST_STREAMs with an error code from the server, without a frame from the client after the request, through a budget of {RESET_BURST} refilled {RESET_RATE}/s (nghttp2 lib/nghttp2_session.h NGHTTP2_DEFAULT_STREAM_RESET_BURST/_RATE, the values its glitch counter began with); servers cap the queue of such control frames: Envoy max_outbound_control_frames 1000, Go x/net http2/server.go maxQueuedControlFrames 10000"),
            "close connections whose requests the server keeps refusing, and check that the client reads what the server writes (the flood's RST_STREAMs pile up when it does not)".to_string(),
        ),
        FindingId::ContinuationFlood => (
            format!(
                "{who}: a header block of {} CONTINUATIONs (limit {}){} (CVE-2024-27316)",
                e.n("max_continuations"),
                MAX_CONTINUATIONS,
                if e.n("unfinished") > 0 { ", never ended" } else { "" }
            ),
            format!("more than {MAX_CONTINUATIONS} CONTINUATION frames after one HEADERS: nghttp2 lib/nghttp2_session.h NGHTTP2_DEFAULT_MAX_CONTINUATIONS (CVE-2024-28182); Go x/net http2/frame.go readMetaFrame stops at twice the remaining header list size"),
            "reject header blocks longer than a few frames and bound the header list; upgrade servers (nghttp2 >= 1.61, Go x/net >= 0.23, Apache httpd >= 2.4.59)".to_string(),
        ),
        FindingId::PingFlood => (
            format!(
                "{who}: {} PINGs, up to {} unanswered, {} over {FRAME_RATE}/s (CVE-2019-9512)",
                e.n("pings"),
                e.n("max_unacked"),
                e.n("over_rate")
            ),
            format!("more than {MAX_OWED_ACKS} PING ACKs owed (nghttp2 lib/nghttp2_session.h NGHTTP2_DEFAULT_MAX_OBQ_FLOOD_ITEM; Envoy max_outbound_control_frames 1000; Go x/net maxQueuedControlFrames 10000), or PINGs sent without waiting for the previous ACK beyond {FRAME_RATE} a second (Jetty AbstractHTTP2ServerConnectionFactory WindowRateControl.Factory({FRAME_RATE}), PingBodyParser ENHANCE_YOUR_CALM invalid_ping_frame_rate; a token bucket of {FRAME_RATE} refilled each second here)"),
            format!("the {who} is flooding or broken: a prober waits for each ACK; cap unanswered PINGs at the {other}"),
        ),
        FindingId::SettingsFlood => (
            format!(
                "{who}: {} SETTINGS, up to {} unacknowledged, {} over {FRAME_RATE}/s, {} parameters at most (CVE-2019-9515)",
                e.n("settings"),
                e.n("max_unacked"),
                e.n("over_rate"),
                e.n("max_entries")
            ),
            format!("more than {MAX_OWED_ACKS} SETTINGS ACKs owed (nghttp2 NGHTTP2_DEFAULT_MAX_OBQ_FLOOD_ITEM; Envoy max_outbound_control_frames), SETTINGS sent before the previous ACK beyond {FRAME_RATE}/s (Jetty WindowRateControl.Factory({FRAME_RATE})), or more than {MAX_SETTINGS_ENTRIES} parameters in one frame (nghttp2 lib/includes/nghttp2/nghttp2.h NGHTTP2_DEFAULT_MAX_SETTINGS)"),
            format!("a peer sends SETTINGS a few times per connection; cap unacknowledged SETTINGS at the {other}"),
        ),
        FindingId::EmptyFramesFlood => (
            format!(
                "{who}: {} empty frames without END_STREAM, {} in a row (CVE-2019-9518)",
                e.n("empty_frames"),
                e.n("max_consecutive")
            ),
            format!("more than {MAX_EMPTY_RUN} consecutive such frames: Envoy max_consecutive_inbound_frames_with_empty_payload (default 1; source/common/http/http2/protocol_constraints.cc trackInboundFrames)"),
            "empty frames without END_STREAM carry nothing: close connections that send them in a row".to_string(),
        ),
        FindingId::PriorityFlood => (
            format!(
                "{who}: {} PRIORITY frames for {} header blocks, limit {} (CVE-2019-9513)",
                e.n("priority_frames"),
                e.n("header_blocks"),
                e.n("limit")
            ),
            format!("more than {PRIORITY_PER_STREAM} x (1 + header blocks) PRIORITY frames: Envoy max_inbound_priority_frames_per_stream (default 100; protocol_constraints.cc checkInboundFrameLimits)"),
            "RFC 9113 deprecates the priority tree: ignore PRIORITY cheaply and cap it per stream".to_string(),
        ),
        FindingId::WindowUpdateFlood => (
            format!(
                "{who}: {} WINDOW_UPDATEs for {} header blocks and {} DATA received, limit {}",
                e.n("window_updates"),
                e.n("header_blocks"),
                e.n("peer_data_frames"),
                e.n("limit")
            ),
            format!("more than 1 + 2 x (header blocks + {WINDOW_UPDATES_PER_DATA} x DATA frames sent to it) WINDOW_UPDATEs: Envoy max_inbound_window_update_frames_per_data_frame_sent (default 10; protocol_constraints.cc checkInboundFrameLimits)"),
            "WINDOW_UPDATEs answer DATA; many more than the DATA received is a flood: cap them at the receiver".to_string(),
        ),
        FindingId::ZeroWindow => (
            format!(
                "{who} held the {other}'s window at zero {} with data waiting, up to {}, {} in all (CVE-2019-9517)",
                plural(e.n("holds"), "time", "times"),
                dur(e.n("held_us_max")),
                dur(e.n("held_us_total"))
            ),
            format!("a stall (DATA exhausted the window, docs/ledger.md \"Flow control\") or a stream opened with a window <= 0 that lasts {} or more; no server limit applies on the wire (they time out idle streams: Envoy stream_idle_timeout 5 min), so the hold itself is the evidence", dur(ns_us(ZERO_WINDOW_HOLD))),
            format!("a receiver that keeps windows at zero makes the sender hold its data: bound the data buffered per stream and time out streams that make no progress; if the {who} is yours, read faster or raise its windows"),
        ),
        FindingId::HpackBomb => (
            format!(
                "{who}: a {}-byte header block decodes to a {}-byte header list ({:.0}x): HPACK bomb",
                e.n("encoded_bytes"),
                e.n("header_list_bytes"),
                e.f("amplification")
            ),
            format!("a header list (RFC 9113 §6.5.2 size: name + value + 32 per field) above {} bytes (Envoy envoy/http/codec.h DEFAULT_MAX_REQUEST_HEADERS_KB, 60 KiB; Go net/http DefaultMaxHeaderBytes 1 MiB) from a block at least {BOMB_RATIO} times smaller", BOMB_LIST),
            "advertise and enforce SETTINGS_MAX_HEADER_LIST_SIZE, counting decoded sizes, not bytes received; keep SETTINGS_HEADER_TABLE_SIZE small".to_string(),
        ),
        FindingId::StreamSlotsFull => (
            format!(
                "the server's {} stream slots were full {} ({} in all, {} at most); {} waited for a slot{}",
                e.n("max_concurrent_streams"),
                plural(e.n("times_full"), "time", "times"),
                dur(e.n("full_us_total")),
                dur(e.n("full_us_max")),
                plural(e.n("waited"), "call", "calls"),
                if e.n("over_limit") > 0 {
                    format!(", {} opened past the limit", plural(e.n("over_limit"), "stream", "streams"))
                } else {
                    String::new()
                }
            ),
            format!("the client's open streams reached the limit the server announced (applied at the client's SETTINGS ACK), and streams opened within {} of one ending while all were taken fill them again (queued calls taking the slots, one at a time or a batch), or beyond the limit", dur(ns_us(REFILL_NS))),
            "calls queue in the client for a stream slot: raise the server's limit (grpc-go grpc.MaxConcurrentStreams, nghttpd --max-concurrent-streams), or spread calls over more connections (grpc-go issues #1986, #5908; grpc-java #8252)".to_string(),
        ),
        FindingId::RefusedStream => (
            format!(
                "the server refused {} (REFUSED_STREAM), {} client streams in flight{}",
                plural(e.n("refused"), "stream", "streams"),
                e.n("in_flight"),
                match e.n("max_concurrent_streams") { 0 => String::new(), l => format!(", limit {l}") }
            ),
            "RST_STREAM with REFUSED_STREAM: the server did not process the stream (RFC 9113 §8.7), usually because the client went beyond SETTINGS_MAX_CONCURRENT_STREAMS (Go x/net http2/server.go over_max_streams_race; nghttp2) or because the server is shutting down".to_string(),
            "the request is safe to retry; make the client wait for a free slot (respect SETTINGS_MAX_CONCURRENT_STREAMS) or raise the server's limit".to_string(),
        ),
        FindingId::FlowStall => {
            let needed = e.n("needed_window");
            (
                format!(
                    "{who} waited for a window {} ({} stream, {} connection, {} both), {} in all, {} at most{}",
                    plural(e.n("stalls"), "time", "times"),
                    e.n("stream_limited"),
                    e.n("connection_limited"),
                    e.n("both_limited"),
                    dur(e.n("waited_us_total")),
                    dur(e.n("waited_us_max")),
                    match e.n("unresolved") {
                        0 => String::new(),
                        n => format!(
                            "; {n} never got one (the wait ended with the stream's reset or the connection's close)"
                        ),
                    }
                ),
                "a stall: a DATA frame without END_STREAM that leaves the sender's available window (the smaller of stream and connection windows) at or below zero, until a WINDOW_UPDATE or SETTINGS makes it positive (docs/ledger.md, \"Flow control\")".to_string(),
                if needed > 0 {
                    format!("a window of at least {needed} bytes (the most the {who} sent on one stalled stream) from the {other} would have avoided the stream stalls: raise its initial stream and connection windows (SETTINGS_INITIAL_WINDOW_SIZE, a connection WINDOW_UPDATE; grpc-go WithInitialWindowSize/WithInitialConnWindowSize)")
                } else {
                    format!("raise the {other}'s initial stream and connection windows (SETTINGS_INITIAL_WINDOW_SIZE and a connection WINDOW_UPDATE), or have it return window sooner")
                },
            )
        }
        FindingId::CaptureDrops => (
            format!(
                "the capture dropped {} packets ({} by the kernel, {} by the interface): counts are low",
                e.n("dropped_by_kernel") + e.n("dropped_by_interface"),
                e.n("dropped_by_kernel"),
                e.n("dropped_by_interface")
            ),
            "libpcap's drop counters (pcap_stats ps_drop, ps_ifdrop) above zero".to_string(),
            "raise the capture buffer (-B KiB; -B 131072 for full-speed loopback bursts), filter to the port (--port), or capture with less else running".to_string(),
        ),
        FindingId::MidStream => (
            format!(
                "{} began before the capture: HPACK placeholders, windows unknown",
                plural(e.n("connections"), "connection", "connections")
            ),
            "no SYN or connection preface was captured for a direction (docs/ledger.md, \"Connection\")".to_string(),
            "start the capture before the connections open (or restart the client) for complete counts".to_string(),
        ),
        FindingId::TlsNoKeys => (
            format!(
                "{} over TLS with ALPN h2 without a key: not decrypted",
                plural(e.n("connections"), "connection", "connections")
            ),
            "a TLS connection whose ALPN is h2 and whose secrets are in neither --keylog nor the pcapng's Decryption Secrets Blocks".to_string(),
            "have the application write SSLKEYLOGFILE and pass it with --keylog (or sniff --keys-from PID for a Go program)".to_string(),
        ),
        FindingId::ReassemblyGaps => (
            format!(
                "{} in {} ({} bytes), {} with framing lost",
                plural(e.n("gaps"), "capture gap", "capture gaps"),
                plural(e.n("connections"), "connection", "connections"),
                e.n("gap_bytes"),
                e.n("gaps_framing_lost")
            ),
            "a stretch of a TCP stream the capture never held (a packet lost by the capture, cut by the snap length, or missing at its end; docs/ledger.md, \"Gaps\")".to_string(),
            "capture with the full snap length (-s 0) and a larger buffer (-B), and check the capture's drop counts".to_string(),
        ),
        FindingId::CallErrors => {
            // The failed statuses, most first: `10 NOT_FOUND, 2 http 503`.
            let mut parts = failed_statuses(e);
            let late = e.n("client_deadline_cancels");
            if late > 0 {
                parts.push((
                    late,
                    "cancelled by the client at their grpc-timeout (DEADLINE_EXCEEDED at the client)".to_string(),
                ));
            }
            if e.n("client_cancels") > late {
                parts.push((
                    e.n("client_cancels") - late,
                    "cancelled by the client (RST_STREAM CANCEL)".to_string(),
                ));
            }
            parts.sort_by_key(|p| std::cmp::Reverse(p.0));
            let list: Vec<String> = parts.iter().map(|(n, s)| format!("{n} {s}")).collect();
            let deadline = e.n("grpc_deadline_exceeded") + e.n("client_deadline_cancels") > 0;
            let cancels = e.n("client_cancels") > 0;
            (
                format!(
                    "{} of {} calls failed ({:.0}%): {}",
                    e.n("failed"),
                    e.n("calls"),
                    e.f("failed_share") * 100.0,
                    if list.is_empty() { "-".to_string() } else { list.join(", ") }
                ),
                format!(
                    "a response whose grpc-status is not 0 (OK), or without grpc-status whose :status is 500 or more (a 4xx is the request's fault: counted in the evidence, not a failure), or a call the client reset with RST_STREAM CANCEL before the server ended it (a cancelled call, or one past its deadline: grpc-go's client cancels the stream when its context ends; at or past the request's grpc-timeout it counts as a deadline), once such calls are at least {} and at least {:.0}% of the connection's calls (FAILED_MIN_CALLS and FAILED_SHARE in crates/h2ledger-core/src/findings/rules.rs); gRPC status names: grpc/grpc doc/statuscodes.md",
                    super::rules::FAILED_MIN_CALLS,
                    super::rules::FAILED_SHARE * 100.0
                ),
                {
                    let mut a = "the statuses are the server's answers: `h2ledger calls` shows each failed call with its status and grpc-message, `replay --analyze` the statuses per method; fix what the messages name (NOT_FOUND, INVALID_ARGUMENT: the client's requests; UNAVAILABLE, INTERNAL, HTTP 5xx: the server or a proxy)".to_string();
                    if deadline || cancels {
                        a.push_str("; DEADLINE_EXCEEDED and client cancels: calls that outlived their deadline: compare `call us` with the deadline the client sets, and look for slow calls or stream slots that were full");
                    }
                    a
                },
            )
        }
        FindingId::GoawayCutCalls => {
            let code = h2_frame_parser::ErrorCode(e.n("goaway_code") as u32);
            (
                format!(
                    "the server's GOAWAY {code} (last stream {}) left {} unprocessed: opened above its last_stream_id",
                    e.n("last_stream_id"),
                    plural(e.n("streams_cut"), "client stream", "client streams")
                ),
                "RFC 9113 §6.8: streams with identifiers above a GOAWAY's last_stream_id were not processed by the sender; the client's streams in flight above it when the GOAWAY came, and those it opened after, are counted (each once over several GOAWAYs)".to_string(),
                format!(
                    "retry those calls on a new connection (they are safe to retry: RFC 9113 §8.7); a GOAWAY {code} is the server closing the connection{}",
                    if e.n("goaway_code") == 0 {
                        " on purpose: nginx after keepalive_requests (default 1000) requests or keepalive_timeout, grpc-go after MaxConnectionAge; raise the limit, or have the client open a new connection before it (h2load fails the cut requests, grpc-go retries them)"
                    } else {
                        " after an error: see its debug data and the server's log"
                    }
                ),
            )
        }
        FindingId::MethodErrors => {
            let mut parts = failed_statuses(e);
            parts.sort_by_key(|p| std::cmp::Reverse(p.0));
            let list: Vec<String> = parts.iter().map(|(n, s)| format!("{n} {s}")).collect();
            let others = e.n("methods_failing").saturating_sub(1);
            (
                format!(
                    "{} failed {} of {} calls ({:.0}%): {}{}",
                    if e.text("method").is_empty() { "a method" } else { e.text("method") },
                    e.n("method_failed"),
                    e.n("method_calls"),
                    e.f("method_failed_share") * 100.0,
                    if list.is_empty() { "-".to_string() } else { list.join(", ") },
                    if others > 0 {
                        format!("; {} more failing", plural(others, "method", "methods"))
                    } else {
                        String::new()
                    }
                ),
                format!(
                    "a method (the request's :path) with at least {METHOD_MIN_CALLS} calls on a connection of which the server failed at least {:.0}% (a grpc-status other than 0, or an HTTP status of 500 or more without one; the client's cancels are deadline-exceeded's and cancel-storm's); METHOD_MIN_CALLS and METHOD_FAILED_SHARE in crates/h2ledger-core/src/findings/rules.rs; at most {MAX_METHODS} methods are followed per connection (beyond: methods_untracked)",
                    METHOD_FAILED_SHARE * 100.0
                ),
                "this method fails more often than it works: `h2ledger calls -Y 'path contains \"NAME\"'` lists its calls with their status and grpc-message; NOT_FOUND, INVALID_ARGUMENT, UNIMPLEMENTED: the client asks for something the server does not have (a wrong name, an old client); UNAVAILABLE, INTERNAL, HTTP 5xx: the server or a proxy in front of it".to_string(),
            )
        }
        FindingId::MethodErrorsRise => {
            let others = e.n("methods_rising").saturating_sub(1);
            (
                format!(
                    "{} failed {} of {} calls ({:.0}%) in the first {}, then {} of {} ({:.0}%) until {}{}",
                    if e.text("method").is_empty() { "a method" } else { e.text("method") },
                    e.n("earlier_failed"),
                    e.n("earlier_calls"),
                    e.f("earlier_failed_share") * 100.0,
                    dur(e.n("split_us")),
                    e.n("later_failed"),
                    e.n("later_calls"),
                    e.f("later_failed_share") * 100.0,
                    dur(e.n("span_us")),
                    if others > 0 {
                        format!("; {} more rising", plural(others, "method", "methods"))
                    } else {
                        String::new()
                    }
                ),
                format!(
                    "a method's answered calls (grpc-status other than 0, or an HTTP status of 500 or more, is a failure; the client's cancels are left out) by the time of their request, from its first call, in {TREND_BUCKETS} buckets whose width doubles as the calls go on; the earlier window is the first half of the buckets in use, the later the rest; each with at least {RISING_MIN_CALLS} calls, the later failed share at least {:.0} points above the earlier (TREND_BUCKETS in crates/h2ledger-core/src/findings/conn.rs, RISING_MIN_CALLS and RISING_STEP in rules.rs)",
                    RISING_STEP * 100.0
                ),
                "the server began failing this method part way through: something changed at the split (a deploy, a dependency down, a pool or quota exhausted, a cache expired); `h2ledger calls -Y 'path contains \"NAME\" and grpc.status != 0'` lists the failed calls with their time, status and grpc-message, and the first of them is where to look in the server's log".to_string(),
            )
        }
        FindingId::DeadlineExceeded => (
            format!(
                "{} of {} calls ended past their deadline: {} grpc-status DEADLINE_EXCEEDED from the server, {} cancelled by the client at its grpc-timeout{}",
                e.n("deadline_calls"),
                e.n("calls"),
                e.n("grpc_deadline_exceeded"),
                e.n("client_deadline_cancels"),
                if e.n("requests_with_timeout") > 0 {
                    let (lo, hi) = (e.n("grpc_timeout_us_min"), e.n("grpc_timeout_us_max"));
                    if lo == hi {
                        format!(" (deadline {})", dur(lo))
                    } else {
                        format!(" (deadlines {} to {})", dur(lo), dur(hi))
                    }
                } else {
                    String::new()
                }
            ),
            format!(
                "a response with grpc-status 4 (DEADLINE_EXCEEDED), or a call the client reset with RST_STREAM CANCEL at or past the request's grpc-timeout (less a millisecond; grpc-go's client cancels the stream when its deadline ends), at least {DEADLINE_MIN_CALLS} on a connection (DEADLINE_MIN_CALLS in crates/h2ledger-core/src/findings/rules.rs); grpc-timeout: grpc/grpc doc/PROTOCOL-HTTP2.md"
            ),
            "the calls take longer than the client allows: compare the calls' durations (`h2ledger calls`, `call us`) with the deadline; a server slower than usual (its time to first byte), calls waiting for a stream slot (stream-slots-full) or a window (flow-stall), or a deadline set too short for the method".to_string(),
        ),
        FindingId::CancelStorm => (
            format!(
                "the client cancelled {} of {} calls ({:.0}%) with RST_STREAM CANCEL before the server answered, not at a deadline",
                e.n("cancels_not_at_deadline"),
                e.n("calls"),
                e.f("cancel_share") * 100.0
            ),
            format!(
                "RST_STREAM CANCEL (RFC 9113 §8.4) from the client on a stream the server had not ended, not at the request's grpc-timeout, at least {CANCEL_STORM_MIN} on a connection and at least {:.0}% of its calls (CANCEL_STORM_MIN, CANCEL_STORM_SHARE in crates/h2ledger-core/src/findings/rules.rs; an attack's rate is rapid-reset's)",
                CANCEL_STORM_SHARE * 100.0
            ),
            "the client gives up on its calls before the answer: a context cancelled by the caller (a user leaving, a hedged or raced request whose other copy won, a parent call that ended), or a timeout the client keeps itself without grpc-timeout; the server did the work for nothing: find the caller that cancels, and compare the calls' durations with its patience".to_string(),
        ),
        FindingId::GoawayRetries => (
            format!(
                "the client sent {} of the {} calls this connection's GOAWAY cut again on connection {}, the first {} after the GOAWAY; {} not retried",
                e.n("retried"),
                e.n("calls_cut"),
                e.n("retry_conn"),
                dur(e.n("first_retry_us")),
                e.n("not_retried")
            ),
            format!(
                "a request on another connection to the same server address, with the :path of a call the GOAWAY cut (above its last_stream_id: goaway-cut-calls), within {} of the GOAWAY, each cut call matched once (RETRY_WINDOW in crates/h2ledger-core/src/findings/rules.rs); RFC 9113 §8.7: a request not processed may be retried",
                dur(ns_us(RETRY_WINDOW))
            ),
            "the retries hid the GOAWAY from the callers (grpc-go retries such calls transparently); the cost is a new connection and the calls' delay: move the client off a connection before the server's limit (nginx keepalive_requests, grpc-go MaxConnectionAge), and retry the calls that were not".to_string(),
        ),
        FindingId::SlowCalls => {
            let mut parts = vec![format!("request sent in {}", dur(e.n("request_us")))];
            parts.push(format!("first response byte after {}", dur(e.n("first_byte_us"))));
            parts.push(format!("response {}", dur(e.n("response_us"))));
            if e.n("window_wait_us") > 0 {
                parts.push(format!("{} waiting for a window", dur(e.n("window_wait_us"))));
            }
            if e.n("slot_wait_us_max") > 0 {
                parts.push(format!(
                    "before it, at most {} waiting for a stream slot",
                    dur(e.n("slot_wait_us_max"))
                ));
            }
            if e.n("ping_rtts") > 0 {
                parts.push(format!("PING round trip {}", dur(e.n("ping_rtt_us"))));
            }
            (
                format!(
                    "{} took {} or more; the slowest{} ({}) {}: {}",
                    plural(e.n("slow_calls"), "call", "calls"),
                    dur(ns_us(SLOW_CALL)),
                    if e.text("method").is_empty() {
                        String::new()
                    } else {
                        format!(", {}", e.text("method"))
                    },
                    format_args!("stream {}", e.n("stream")),
                    dur(e.n("duration_us")),
                    parts.join(", ")
                ),
                format!(
                    "a call from its request's HEADERS to the response's END_STREAM taking at least {} (SLOW_CALL in crates/h2ledger-core/src/findings/rules.rs: the one-second limit of Nielsen's Response Times, 1993); its time split as the capture point sees it: the request (HEADERS to the request's END_STREAM), the first response byte (HEADERS to the server's first frame: the server's time plus a round trip when captured at the client), the response (first byte to END_STREAM), the time either side's DATA waited for a window on this stream (flow-stall's stalls, resolved), the most it can have waited for a stream slot before its HEADERS (it opened within 10 ms of a slot freeing after all were taken: stream-slots-full), and the connection's shortest PING round trip",
                    dur(ns_us(SLOW_CALL))
                ),
                "look at the largest part: a late first byte is the server's handler (or what it waits on); a long response with window waits is the receiver's flow-control windows (raise them: nghttp -w/-W, grpc-go InitialWindowSize); a stream-slot wait is the server's SETTINGS_MAX_CONCURRENT_STREAMS (more streams or more connections); a long response without waits is the transfer itself against the PING round trip and the bandwidth; a long-lived streaming call is slow by design (--severity slow-calls=... or ignore it)".to_string(),
            )
        }
    }
}
