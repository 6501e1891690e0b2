//! Packets in, ledger out: link decode, TCP reassembly, TLS decryption, the ledger.
//!
//! [`Pipeline::packet`] takes one captured packet (link type, time, bytes) as libpcap hands it
//! over; [`Pipeline::finish`] ends the input (every connection is closed and folded).

use h2ledger_core::{Ledger, LedgerReport, Observer, Tally, Unlisted};
use h2ledger_tcp::defrag::Defrag;
use h2ledger_tcp::link::Decoded;
use h2ledger_tcp::{link, Config, LinkType, Nanos, Reassembler};
use h2ledger_tls::Tls;

use crate::report::{secs, CaptureStats};

/// Where a live key log's new lines come from (the binary reads the file; the library only asks).
pub type KeyPoll = Box<dyn FnMut() -> Option<String>>;

pub(crate) struct Pipeline<O> {
    pub(crate) reasm: Reassembler,
    pub(crate) ledger: Ledger<O>,
    pub(crate) stats: CaptureStats,
    /// IP datagrams sent in fragments, until whole.
    defrag: Defrag,
    /// Between reassembly and the ledger: TLS connections decrypted, the rest passed through.
    pub(crate) tls: Tls,
    key_poll: Option<KeyPoll>,
    first: Option<Nanos>,
    last: Nanos,
    prev: Nanos,
    /// When the input ends, if later than `last`: the last packet of a run of several
    /// sessions this one is a part of ([`Pipeline::end_at`]; decision 451).
    end_at: Nanos,
    /// The number of the packet being read in the whole input, when this pipeline reads a
    /// part of it (`replay -j N`: the dealer's count, [`Pipeline::number_next`]); its
    /// warnings name that packet as one session over the input would.
    number: Option<u64>,
}

/// A packet whose time is more than an hour from the previous packet's is reported.
const TIMESTAMP_JUMP_NS: u64 = 3_600_000_000_000;

/// Connections tracked at once by default (`--max-connections`): each costs a few KiB (its
/// reassembly, framing and HPACK state, its counters), so 4,096 keep a run with the analysis within about 64 MiB.
/// Beyond, the least recently active connection is closed as evicted and counted.
pub const DEFAULT_MAX_CONNECTIONS: usize = 4096;

impl<O: Observer> Pipeline<O> {
    /// A pipeline that tracks at most `max` connections at once (at least 1).
    pub fn with_max_connections(observer: O, max: usize) -> Self {
        Pipeline {
            reasm: Reassembler::new(Config {
                max_connections: max.max(1),
                ..Config::default()
            }),
            ledger: Ledger::new(observer),
            stats: CaptureStats::default(),
            defrag: Defrag::default(),
            tls: Tls::new(Default::default(), Default::default()),
            key_poll: None,
            first: None,
            last: 0,
            prev: 0,
            end_at: 0,
            number: None,
        }
    }

    /// TLS keys (and, live, where new key-log lines come from).
    pub fn with_tls(mut self, tls: Tls, poll: Option<KeyPoll>) -> Self {
        self.tls = tls;
        self.key_poll = poll;
        self
    }

    /// TLS warnings into the ledger's; live, what the key log gained.
    fn tls_housekeeping(&mut self) {
        if self.tls.waiting_for_keys() {
            if let Some(text) = self.key_poll.as_mut().and_then(|f| f()) {
                self.tls.layer(&mut self.ledger).add_keys(&text);
            }
        }
        if self.tls.has_warnings() {
            for (kind, msg) in self.tls.take_warnings() {
                self.ledger.warnings.add(kind, || msg);
            }
        }
    }

    /// Key log text from the input (see [`crate::Session::add_keys`]).
    pub fn add_keys(&mut self, text: &str) -> u64 {
        self.tls.expect_keys_in_input();
        let mut layer = self.tls.layer(&mut self.ledger);
        let mut n = layer.add_keys(text);
        if !text.ends_with('\n') {
            n += layer.add_keys("\n");
        }
        self.tls_housekeeping();
        n
    }

    /// The next packet is packet `n` of the whole input (1 for the first), not this
    /// pipeline's own count: a part of a run of several sessions names packets as the run
    /// does (decision 471).
    pub fn number_next(&mut self, n: u64) {
        self.number = Some(n);
    }

    pub fn packet(&mut self, linktype: LinkType, ts: Nanos, data: &[u8]) {
        self.stats.packets += 1;
        match self.first {
            None => self.first = Some(ts),
            Some(_) => {
                // A clock jump or a damaged timestamp: said, and it costs no memory (phases and
                // plot buckets exist only where packets are).
                let jump = ts.saturating_sub(self.prev);
                if jump.unsigned_abs() > TIMESTAMP_JUMP_NS {
                    let n = self.number.unwrap_or(self.stats.packets);
                    let prev = self.prev;
                    self.ledger.warnings.add("timestamp-jump", || {
                        format!(
                            "packet {n}: its time is {:.0} s {} the previous packet's ({} -> {}); phases and plots span the gap",
                            jump.unsigned_abs() as f64 / 1e9,
                            if jump > 0 { "after" } else { "before" },
                            secs(prev),
                            secs(ts)
                        )
                    });
                }
            }
        }
        self.prev = ts;
        self.last = self.last.max(ts);
        match link::decode_any(linktype, data) {
            Ok(Some(Decoded::Tcp(seg))) => {
                self.stats.tcp_segments += 1;
                self.reasm
                    .push(ts, &seg, &mut self.tls.layer(&mut self.ledger));
                self.tls_housekeeping();
            }
            Ok(Some(Decoded::Fragment(f))) => self.fragment(ts, &f),
            Ok(None) => self.stats.not_tcp += 1,
            Err(e) => {
                self.stats.undecodable += 1;
                let n = self.number.unwrap_or(self.stats.packets);
                self.ledger.warnings.add("undecodable-packet", || {
                    format!("packet {n}: cannot decode (link type {linktype}): {e}")
                });
            }
        }
    }

    /// An IP fragment: not TCP by itself; the one that completes a TCP segment's datagram is
    /// that segment (decision 470).
    fn fragment(&mut self, ts: Nanos, f: &link::Fragment<'_>) {
        let given_up = self.defrag.given_up;
        let whole = self.defrag.push(ts, f);
        if self.defrag.given_up > given_up {
            let n = self.number.unwrap_or(self.stats.packets);
            self.ledger.warnings.add("ip-fragments", || {
                format!(
                    "packet {n}: an IP datagram in fragments given up (a fragment cut by the \
                     snapshot length, past 65,535 bytes, older than 30 s, or over the bound of \
                     {} datagrams, {} MiB in progress)",
                    h2ledger_tcp::defrag::MAX_DATAGRAMS,
                    h2ledger_tcp::defrag::MAX_BYTES >> 20
                )
            });
        }
        let seg = match whole.as_deref() {
            Some(b) if f.proto == 6 => link::tcp_in(f.src, f.dst, b),
            _ => {
                self.stats.not_tcp += 1;
                return;
            }
        };
        match seg {
            Ok(seg) => {
                self.stats.tcp_segments += 1;
                self.reasm
                    .push(ts, &seg, &mut self.tls.layer(&mut self.ledger));
                self.tls_housekeeping();
            }
            Err(e) => {
                self.stats.undecodable += 1;
                let n = self.number.unwrap_or(self.stats.packets);
                self.ledger.warnings.add("undecodable-packet", || {
                    format!("packet {n}: cannot decode the datagram its fragments make: {e}")
                });
            }
        }
    }

    /// No packet for a while (live): connections reset more than a second before `now` close.
    pub fn idle(&mut self, now: Nanos) {
        self.reasm
            .advance(now, &mut self.tls.layer(&mut self.ledger));
        self.tls_housekeeping();
    }

    /// The last packet's time (`None` before any).
    pub fn last_packet(&self) -> Option<Nanos> {
        self.first.map(|_| self.last)
    }

    /// The input ends at `t` if that is later than its last packet (a part of several
    /// sessions ends at the whole run's last packet): what is still open closes then.
    pub fn end_at(&mut self, t: Nanos) {
        self.end_at = self.end_at.max(t);
    }

    /// When the input ends: its last packet, or [`Pipeline::end_at`]'s time if later.
    pub fn end_time(&self) -> Nanos {
        self.last.max(self.end_at)
    }

    /// End of input: flush reassembly (declaring what never arrived as gaps).
    pub fn finish(&mut self) {
        self.tls_housekeeping();
        self.reasm
            .finish(self.end_time(), &mut self.tls.layer(&mut self.ledger));
        self.tls_housekeeping();
        self.ledger.finish();
        self.stats.first = self.first;
        self.stats.last = self.first.map(|_| self.last);
    }

    /// The ledger report from `tally` (the run's, or one phase's), with the run's warnings.
    pub fn ledger_report(&self, tally: &Tally) -> LedgerReport {
        let mut report = LedgerReport::build(&self.ledger.connections(), tally);
        report.warnings = self.ledger.warnings.messages.clone();
        let listed: Vec<u32> = report.per_connection.iter().map(|c| c.id).collect();
        report.unlisted_first = match self.ledger.unlisted_first(&listed) {
            Some(v) => Unlisted::Known(v),
            None => Unlisted::Unknown,
        };
        report.anomalies = self
            .ledger
            .warnings
            .counts
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect();
        report
    }
}

impl<O> Pipeline<O> {
    /// Says why a ledger is empty (`filter`: the capture filter, if any).
    pub fn note_empty(&self, report: &mut LedgerReport, filter: Option<&str>) {
        // TLS without a key explains it (the headline says so, the TLS warnings name them).
        let hidden = self.tls.report().without_key_h2 > 0;
        if let Some(w) = empty_note(
            self.stats.packets,
            self.stats.tcp_segments,
            report.connections,
            hidden,
            filter,
        ) {
            report.warnings.push(w);
        }
    }
}

/// Why a ledger of `connections` HTTP/2 connections over `packets` is empty, if it is
/// (`hidden`: TLS without a key explains it; `filter`: the capture filter, if any).
pub(crate) fn empty_note(
    packets: u64,
    tcp_segments: u64,
    connections: u64,
    hidden: bool,
    filter: Option<&str>,
) -> Option<String> {
    if packets > 0 && connections == 0 && !hidden {
        Some(format!(
            "no HTTP/2 connection among {packets} packets ({tcp_segments} TCP segments){}",
            filter
                .map(|f| format!(" matching \"{f}\""))
                .unwrap_or_default()
        ))
    } else if packets == 0 {
        Some(match filter {
            Some(f) => format!("no packets matched \"{f}\""),
            None => "the capture holds no packets".to_string(),
        })
    } else {
        None
    }
}

/// The filter an [`empty_note`] names, when `w` is one: `Some(None)` without a filter.
pub(crate) fn empty_note_filter(w: &str) -> Option<Option<String>> {
    if w == "the capture holds no packets" {
        return Some(None);
    }
    if let Some(rest) = w.strip_prefix("no packets matched \"") {
        return Some(rest.strip_suffix('"').map(str::to_owned));
    }
    let rest = w.strip_prefix("no HTTP/2 connection among ")?;
    match rest.split_once(" matching \"") {
        Some((_, f)) => Some(f.strip_suffix('"').map(str::to_owned)),
        None => rest.ends_with(" TCP segments)").then_some(None),
    }
}

#[cfg(test)]
mod tests {
    //! A stream's life as the ledger derives it ([`h2ledger_core::StreamStep`], issue 36), on
    //! real captures, against RFC 9113 §5.1 as written: a map of every stream ever seen, with
    //! no cap and nothing forgotten.

    use std::collections::HashMap;

    use h2_frame_parser::{ErrorCode, Frame, Kind};
    use h2ledger_core::{FrameEvent, Observer, StreamStep};
    use h2ledger_tcp::LinkType;

    use super::Pipeline;

    /// A frame on a stream: connection, direction index, stream, type, END_STREAM (on DATA
    /// and HEADERS, the only frames that define it), RST_STREAM code, and the ledger's step.
    type Seen = (u32, usize, u32, Kind, bool, Option<ErrorCode>, StreamStep);

    #[derive(Default)]
    struct Steps(Vec<Seen>);

    impl Observer for Steps {
        fn header_need(&self) -> h2ledger_core::ledger::HeaderNeed {
            h2ledger_core::ledger::HeaderNeed::None
        }
        fn frame(&mut self, ev: &FrameEvent<'_>) {
            let sid = ev.head.stream_id.0;
            if sid == 0 {
                assert_eq!(ev.stream, StreamStep::None, "{:?}", ev.head);
                return;
            }
            let end =
                matches!(ev.head.kind, Kind::Data | Kind::Headers) && ev.head.flags.is_end_stream();
            let code = match ev.frame {
                Some(Frame::RstStream(r)) => Some(r.code),
                _ => None,
            };
            let d = ev.dir.index();
            self.0
                .push((ev.conn.0, d, sid, ev.head.kind, end, code, ev.stream));
        }
    }

    /// The steps of a capture (a classic pcap of the repository's captures/).
    fn steps(file: &str) -> Vec<Seen> {
        let path = format!("{}/../../captures/{file}", env!("CARGO_MANIFEST_DIR"));
        let b = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let le = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
        let ns = match le(0) {
            0xa1b2_c3d4 => false,
            0xa1b2_3c4d => true,
            m => panic!("{path}: not a little-endian classic pcap ({m:#x})"),
        };
        let link = LinkType(le(20) as i32);
        let mut p = Pipeline::with_max_connections(Steps::default(), 4096);
        let mut at = 24;
        while at + 16 <= b.len() {
            let (sec, frac, caplen) = (le(at) as i64, le(at + 4) as i64, le(at + 8) as usize);
            let ts = sec * 1_000_000_000 + if ns { frac } else { frac * 1000 };
            p.packet(link, ts, &b[at + 16..at + 16 + caplen]);
            at += 16 + caplen;
        }
        p.finish();
        std::mem::take(&mut p.ledger.observer.0)
    }

    /// What RFC 9113 §5.1 says each frame did, from a map that never forgets.
    fn expected(seen: &[Seen]) -> Vec<StreamStep> {
        #[derive(Default)]
        struct S {
            blocks: [bool; 2],
            ended: [bool; 2],
            closed: bool,
        }
        fn end(s: &mut S, d: usize) -> StreamStep {
            if s.ended[d] {
                return StreamStep::None;
            }
            s.ended[d] = true;
            if s.ended[1 - d] {
                s.closed = true;
                StreamStep::Ended
            } else {
                StreamStep::HalfClosed
            }
        }
        let mut m: HashMap<(u32, u32), S> = HashMap::new();
        let mut out = Vec::new();
        for &(conn, d, sid, kind, fin, code, _) in seen {
            let s = m.get_mut(&(conn, sid));
            out.push(match (kind, s) {
                (Kind::Headers, None) => {
                    let mut s = S::default();
                    s.blocks[d] = true;
                    let step = if fin {
                        end(&mut s, d)
                    } else {
                        StreamStep::Opened
                    };
                    m.insert((conn, sid), s);
                    step
                }
                (Kind::Headers, Some(s)) => {
                    s.blocks[d] = true;
                    match (s.closed, fin) {
                        (true, _) => StreamStep::Untracked,
                        (false, true) => end(s, d),
                        (false, false) => StreamStep::None,
                    }
                }
                (Kind::Data, s) if fin => match s {
                    Some(s) if !s.closed => end(s, d),
                    _ => StreamStep::Untracked,
                },
                (Kind::RstStream, s) => {
                    let answered = s.as_ref().is_some_and(|s| s.blocks[d]);
                    if let Some(s) = s {
                        s.closed = true;
                    }
                    if code == Some(ErrorCode::REFUSED_STREAM) && !answered {
                        StreamStep::Refused
                    } else {
                        StreamStep::Reset { code }
                    }
                }
                _ => StreamStep::None,
            });
        }
        out
    }

    /// The ledger's steps on `file` are RFC 9113's; returns how many of each kind.
    fn check(file: &str) -> HashMap<&'static str, usize> {
        let seen = steps(file);
        let want = expected(&seen);
        let mut n = HashMap::new();
        for (s, w) in seen.iter().zip(&want) {
            assert_eq!(s.6, *w, "{file}: {s:?}");
            let k = match s.6 {
                StreamStep::None => "none",
                StreamStep::Opened => "opened",
                StreamStep::HalfClosed => "half-closed",
                StreamStep::Ended => "ended",
                StreamStep::Reset { .. } => "reset",
                StreamStep::Refused => "refused",
                StreamStep::Untracked => "untracked",
            };
            *n.entry(k).or_default() += 1;
        }
        n
    }

    #[test]
    fn every_call_of_a_grpc_capture_opens_and_ends_once() {
        // grpcgo-article.tshark.json: 144 calls, 144 server TRAILERS, no RST_STREAM.
        let n = check("grpcgo-article.pcap");
        assert_eq!(n.get("opened"), Some(&144), "{n:?}");
        assert_eq!(n.get("ended"), Some(&144), "{n:?}");
        assert_eq!(n.get("half-closed"), Some(&144), "{n:?}");
        assert_eq!(n.get("reset"), None, "{n:?}");
    }

    #[test]
    fn resets_and_refusals_are_told_apart() {
        // rapid-reset-goh2c.tshark.json: 2,000 client HEADERS and 2,000 client RST_STREAM.
        let n = check("findings/rapid-reset-goh2c.pcap");
        assert_eq!(n.get("reset"), Some(&2000), "{n:?}");
        // refused-stream-nghttpd.tshark.json: 12 server RST_STREAM, REFUSED_STREAM before any
        // response (nghttpd -m past its limit).
        let n = check("findings/refused-stream-nghttpd.pcap");
        assert_eq!(n.get("refused"), Some(&12), "{n:?}");
        assert_eq!(n.get("reset"), None, "{n:?}");
    }

    #[test]
    fn connections_met_mid_way_and_upgraded_follow_the_rfc_too() {
        for f in [
            "midconn.pcap",
            "midconn-trailers-ipv6.pcap",
            "curl-upgrade-trailers.pcap",
            "python-grpcio-streaming.pcap",
            "nghttp-nghttpd.pcap",
        ] {
            check(f);
        }
    }
}
