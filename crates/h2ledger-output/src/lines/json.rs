//! The records of the line views as JSON: one typed record per frame and per call, written by
//! hand ([`crate::jsonw`]) into the output buffer, byte for byte as `serde_json::to_writer`
//! writes the same type (a test compares the two on every golden capture). Keys are in
//! alphabetical order, as they always were.

use h2_frame_parser::{ping, Frame};
use h2ledger_core::analysis::{escape_bytes, CallView, NO_STATUS};
use h2ledger_core::FrameEvent;
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

use super::messages::{CallMessages, Decoded, MsgList};

/// Slots of [`Addrs`] and [`HeaderJson`]: a connection (and direction) has one, chosen by its
/// number, so that frames of up to this many interleaved connections find theirs.
const SLOTS: usize = 64;

/// The text of connections' addresses: a frame's connection nearly always had a frame a moment
/// ago, and formatting an address costs more than the rest of a frame's line. One slot per
/// connection number modulo `SLOTS`, holding both addresses (either direction).
#[derive(Default)]
pub struct Addrs {
    slots: Vec<AddrSlot>,
}

#[derive(Default)]
struct AddrSlot {
    key: Option<(std::net::SocketAddr, std::net::SocketAddr)>,
    a: String,
    b: String,
}

impl Addrs {
    fn get(
        &mut self,
        conn: u32,
        src: std::net::SocketAddr,
        dst: std::net::SocketAddr,
    ) -> (&str, &str) {
        if self.slots.is_empty() {
            self.slots.resize_with(SLOTS, AddrSlot::default);
        }
        let s = &mut self.slots[conn as usize % SLOTS];
        match s.key {
            Some(k) if k == (src, dst) => {}
            Some(k) if k == (dst, src) => return (&s.b, &s.a),
            _ => {
                s.key = Some((src, dst));
                s.a.clear();
                s.b.clear();
                use std::fmt::Write as _;
                let _ = write!(s.a, "{src}");
                let _ = write!(s.b, "{dst}");
            }
        }
        (&s.a, &s.b)
    }
}

/// The JSON of the header list each connection and direction printed last (`frames --format
/// jsonl`): a client sends the same request fields again and again, a server the same
/// response fields; an equal list (same names and values, compared as bytes) copies the JSON
/// instead of escaping every field again. One slot per (connection, direction) number modulo
/// `SLOTS`; lists above `HEADER_JSON_MAX` bytes are not kept, so the cache holds at most a
/// few MiB however many connections pass.
#[derive(Default)]
pub struct HeaderJson {
    slots: Vec<HeaderSlot>,
    /// The text of the last frames' times.
    times: TimeMemo,
}

/// The largest header list (names and values) whose JSON [`HeaderJson`] keeps.
const HEADER_JSON_MAX: usize = 4096;

#[derive(Default)]
struct HeaderSlot {
    list: Option<h2ledger_core::HeaderList>,
    json: Vec<u8>,
}

impl HeaderJson {
    /// `h` as JSON into `b`: from the slot of `ev`'s connection and direction when it holds
    /// the same list.
    fn write(
        slots: &mut Vec<HeaderSlot>,
        b: &mut Vec<u8>,
        h: &h2ledger_core::HeaderList,
        ev: &FrameEvent<'_>,
    ) {
        if slots.is_empty() {
            slots.resize_with(SLOTS, HeaderSlot::default);
        }
        let i = (ev.conn.0 as usize * 2 + ev.dir.index()) % SLOTS;
        let s = &mut slots[i];
        if s.list.as_ref().is_some_and(|l| l.same_fields(h)) {
            b.extend_from_slice(&s.json);
            return;
        }
        let start = b.len();
        header_list(b, h);
        if h.byte_len() <= HEADER_JSON_MAX {
            match &mut s.list {
                Some(l) => l.clone_from(h),
                None => s.list = Some(h.clone()),
            }
            s.json.clear();
            s.json.extend_from_slice(&b[start..]);
        } else {
            s.list = None;
            s.json = Vec::new();
        }
    }
}

/// Header bytes as text: `\` for a backslash, `\xNN` for bytes that are not UTF-8 (as
/// `escape_bytes`), without a copy when there is nothing to escape (nearly always).
struct Escaped<'a>(&'a [u8]);

impl Serialize for Escaped<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(self.0) {
            Ok(t) if !t.contains('\\') => s.serialize_str(t),
            _ => s.serialize_str(&escape_bytes(self.0)),
        }
    }
}

/// Microseconds from nanoseconds, `null` when negative (not seen).
fn us(ns: i64) -> Option<f64> {
    (ns >= 0).then(|| ns as f64 / 1000.0)
}

/// Epoch seconds of `ns`, exact in its integer part (the line views' times).
pub fn secs(ns: i64) -> f64 {
    ns.div_euclid(1_000_000_000) as f64 + ns.rem_euclid(1_000_000_000) as f64 / 1e9
}

#[derive(Serialize)]
struct Pair<T> {
    client: T,
    server: T,
}

fn pair<T: Copy>(v: [T; 2]) -> Pair<T> {
    Pair {
        client: v[0],
        server: v[1],
    }
}

/// A frame's header list as `[[name, value], ...]`.
struct Headers<'a>(&'a h2ledger_core::HeaderList);

impl Serialize for Headers<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(None)?;
        for h in self.0.iter() {
            seq.serialize_element(&[Escaped(h.name), Escaped(h.value)])?;
        }
        seq.end()
    }
}

/// SETTINGS as `[["NAME", value], ...]`.
struct SettingsList<'a>(&'a h2_frame_parser::Settings<'a>);

impl Serialize for SettingsList<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(None)?;
        for (id, v) in self.0.iter() {
            seq.serialize_element(&(id.to_string(), v))?;
        }
        seq.end()
    }
}

struct Hex<'a>(&'a [u8]);

impl std::fmt::Display for Hex<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// One frame (`frames --format jsonl`; keys of issue 4, plus `record`). Its `type` is the
/// HTTP/2 frame type, as issue 4 specified (docs/decisions.md #80).
#[derive(Serialize)]
pub struct FrameLine<'a> {
    class: &'static str,
    conn: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    debug: Option<String>,
    dst: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    flag_names: super::frames::FlagNames,
    flags: u8,
    /// `frames --messages`: the gRPC messages this DATA frame completes.
    #[serde(skip_serializing_if = "Option::is_none")]
    grpc_messages: Option<MsgList<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    headers: Option<Headers<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    increment: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_stream_id: Option<u32>,
    length: u32,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "opt_hex")]
    ping: Option<&'a [u8]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ping_label: Option<&'static str>,
    record: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    settings: Option<SettingsList<'a>>,
    side: &'static str,
    src: &'a str,
    stream: u32,
    time: f64,
    #[serde(rename = "type")]
    kind: &'static str,
    write: Option<u64>,
}

fn opt_hex<S: Serializer>(v: &Option<&[u8]>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(b) => s.collect_str(&Hex(b)),
        None => s.serialize_none(),
    }
}

impl<'a> FrameLine<'a> {
    /// The record of a frame (its addresses' text from `addrs`).
    pub fn new(ev: &'a FrameEvent<'a>, addrs: &'a mut Addrs) -> FrameLine<'a> {
        let (src, dst) = addrs.get(ev.conn.0, ev.src, ev.dst);
        let mut l = FrameLine {
            class: ev.class.name(),
            conn: ev.conn.0,
            debug: None,
            dst,
            error: None,
            flag_names: super::frames::flag_names(ev.head.kind, ev.head.flags.0),
            flags: ev.head.flags.0,
            grpc_messages: None,
            headers: ev.headers.map(Headers),
            increment: None,
            last_stream_id: None,
            length: ev.head.length,
            ping: None,
            ping_label: None,
            record: "frame",
            settings: None,
            side: ev.side.name(),
            src,
            stream: ev.head.stream_id.0,
            time: secs(ev.ts),
            kind: ev.head.kind.name(),
            write: (ev.write != h2ledger_core::ledger::NO_WRITE).then_some(ev.write),
        };
        match ev.frame {
            Some(Frame::Ping(p)) => {
                l.ping = Some(&p.payload[..]);
                l.ping_label = Some(ping::classify(&p.payload).map_or("other", |k| k.label));
            }
            Some(Frame::WindowUpdate(w)) => l.increment = Some(w.increment),
            Some(Frame::RstStream(r)) => l.error = Some(r.code.to_string()),
            Some(Frame::GoAway(g)) => {
                l.error = Some(g.code.to_string());
                l.last_stream_id = Some(g.last_stream_id);
                l.debug = Some(escape_bytes(g.debug));
            }
            Some(Frame::Settings(s)) => l.settings = Some(SettingsList(s)),
            _ => {}
        }
        l
    }
}

impl<'a> FrameLine<'a> {
    /// With the gRPC messages the frame completes (`frames --messages`; none: no key).
    pub fn with_messages(mut self, msgs: &'a [Decoded]) -> Self {
        self.set_messages(msgs);
        self
    }

    /// [`FrameLine::with_messages`] in place: a `FrameLine` is some 200 bytes, and moving it
    /// through `with_messages` cost a copy per frame printed.
    pub fn set_messages(&mut self, msgs: &'a [Decoded]) {
        if !msgs.is_empty() {
            self.grpc_messages = Some(MsgList(msgs));
        }
    }
}

impl FrameLine<'_> {
    /// This record as serde_json writes it (the same bytes, by hand: `frames --format jsonl`
    /// prints millions; `it::usage::frame_lines_equal_serde` compares the two).
    pub fn write_json(&self, buf: &mut Vec<u8>) {
        self.write_json_with(buf, &mut TimeMemo::default(), &mut |b, h| header_list(b, h));
    }

    /// [`FrameLine::write_json`], the header list's JSON from `cache` when the frame's
    /// connection and direction printed the same list last (the same bytes), and the time's
    /// text when one of the last two frames had the same (frames of one packet do).
    pub fn write_json_cached(
        &self,
        buf: &mut Vec<u8>,
        cache: &mut HeaderJson,
        ev: &FrameEvent<'_>,
    ) {
        let HeaderJson { slots, times } = cache;
        self.write_json_with(buf, times, &mut |b, h| HeaderJson::write(slots, b, h, ev));
    }

    fn write_json_with(
        &self,
        buf: &mut Vec<u8>,
        times: &mut TimeMemo,
        headers: &mut dyn FnMut(&mut Vec<u8>, &h2ledger_core::HeaderList),
    ) {
        use crate::jsonw::{k, Obj};
        let mut o = Obj::new(buf);
        o.plain(k!("class"), self.class);
        o.u64(k!("conn"), self.conn.into());
        if let Some(d) = &self.debug {
            o.str(k!("debug"), d);
        }
        o.plain(k!("dst"), self.dst);
        if let Some(e) = &self.error {
            o.str(k!("error"), e);
        }
        o.plain_strs(k!("flag_names"), self.flag_names.as_slice());
        o.u64(k!("flags"), self.flags.into());
        if let Some(m) = &self.grpc_messages {
            o.raw(k!("grpc_messages"), |b| m.write_json(b));
        }
        if let Some(h) = &self.headers {
            o.raw(k!("headers"), |b| headers(b, h.0));
        }
        if let Some(v) = self.increment {
            o.u64(k!("increment"), v.into());
        }
        if let Some(v) = self.last_stream_id {
            o.u64(k!("last_stream_id"), v.into());
        }
        o.u64(k!("length"), self.length.into());
        if let Some(p) = self.ping {
            o.raw(k!("ping"), |b| {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                b.push(b'"');
                for x in p {
                    b.extend_from_slice(&[HEX[usize::from(x >> 4)], HEX[usize::from(x & 15)]]);
                }
                b.push(b'"');
            });
        }
        if let Some(l) = self.ping_label {
            o.plain(k!("ping_label"), l);
        }
        o.plain(k!("record"), self.record);
        if let Some(s) = &self.settings {
            // Rare (a few per connection): serde_json's own bytes.
            o.raw(k!("settings"), |b| {
                serde_json::to_writer(b, s).expect("settings always serialize into a Vec")
            });
        }
        o.plain(k!("side"), self.side);
        o.plain(k!("src"), self.src);
        o.u64(k!("stream"), self.stream.into());
        o.raw(k!("time"), |b| times.float(b, self.time));
        o.plain(k!("type"), self.kind);
        o.opt_u64(k!("write"), self.write);
        o.end();
    }
}

/// A header list as `[[name, value], ...]` ([`Headers`]' bytes).
fn header_list(b: &mut Vec<u8>, h: &h2ledger_core::HeaderList) {
    b.push(b'[');
    for (i, h) in h.iter().enumerate() {
        if i > 0 {
            b.push(b',');
        }
        b.push(b'[');
        escaped(b, h.name);
        b.push(b',');
        escaped(b, h.value);
        b.push(b']');
    }
    b.push(b']');
}

/// [`Escaped`] into `b`: printable ASCII without `"` or `\` (nearly every header) is copied.
fn escaped(b: &mut Vec<u8>, v: &[u8]) {
    if !crate::jsonw::needs_escape(v, true) {
        b.push(b'"');
        b.extend_from_slice(v);
        b.push(b'"');
    } else {
        serde_json::to_writer(b, &Escaped(v)).expect("a string always serializes into a Vec");
    }
}

/// A call's frames by kind, keys sorted: DATA, HEADERS, TRAILERS, other.
struct CallFrames([u16; 4]);

impl CallFrames {
    /// `CALL_KINDS` (HEADERS, DATA, TRAILERS, other) indices in key order: DATA, HEADERS,
    /// TRAILERS, other.
    const SORTED: [usize; 4] = [1, 0, 2, 3];

    /// `{"DATA":n,"HEADERS":n,"TRAILERS":n,"other":n}` (the keys of CALL_KINDS in SORTED
    /// order).
    fn write(&self, b: &mut Vec<u8>) {
        let [headers, data, trailers, other] = self.0;
        lit(b, "{\"DATA\":");
        num(b, data.into());
        lit(b, ",\"HEADERS\":");
        num(b, headers.into());
        lit(b, ",\"TRAILERS\":");
        num(b, trailers.into());
        lit(b, ",\"other\":");
        num(b, other.into());
        b.push(b'}');
    }
}

impl Serialize for CallFrames {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(4))?;
        for i in Self::SORTED {
            m.serialize_entry(h2ledger_core::analysis::CALL_KINDS[i], &self.0[i])?;
        }
        m.end()
    }
}

#[derive(Serialize)]
struct Encoding<'a> {
    client: Option<&'a str>,
    server: Option<&'a str>,
}

/// One call (`calls --format jsonl`; keys of issues 4 and 11, plus `record` and `type`).
#[derive(Serialize)]
pub struct CallLine<'a> {
    compressed: Option<Pair<u32>>,
    conn: u32,
    duration_us: Option<f64>,
    end: Option<f64>,
    first_byte_us: Option<f64>,
    frames: Pair<CallFramesRef>,
    grpc_encoding: Encoding<'a>,
    grpc_message: Option<&'a str>,
    grpc_status: Option<u16>,
    /// The response's `grpc-status-details-bin` as a `google.rpc.Status` message object
    /// (null: the call had none).
    grpc_status_details: Option<Decoded>,
    /// The request's `:method` (null when it had none; `method` is the `:path`).
    http_method: Option<&'a str>,
    http_status: Option<u16>,
    in_flight_at_start: u16,
    incomplete_messages: Option<Pair<u32>>,
    message_bytes: Option<Pair<u64>>,
    messages: Option<Pair<u32>>,
    /// `calls --messages`: complete messages beyond `--max-messages`, not listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    messages_omitted: Option<Option<Pair<u32>>>,
    method: &'a str,
    opened_bdp_round: Pair<bool>,
    ping_rtt_us: Option<f64>,
    record: &'static str,
    /// `calls --messages`: the request's messages (null: not gRPC).
    #[serde(skip_serializing_if = "Option::is_none")]
    request_messages: Option<Option<MsgList<'a>>>,
    reset: bool,
    /// The side that sent the RST_STREAM that ended the call (null: none did).
    reset_by: Option<&'static str>,
    /// That RST_STREAM's error code: RFC 9113's name, or `0x..`.
    reset_code: Option<String>,
    /// `calls --messages`: the response's messages (null: not gRPC).
    #[serde(skip_serializing_if = "Option::is_none")]
    response_messages: Option<Option<MsgList<'a>>>,
    server_time_us: Option<f64>,
    stalled_us: Pair<f64>,
    stalls: Pair<u32>,
    start: f64,
    status: Status,
    stream: u32,
    #[serde(rename = "type")]
    kind: &'static str,
    writes: Pair<u16>,
}

/// A call's status (`grpc-status 0`), kept in parts: printed without a `String`.
struct Status((&'static str, Option<u16>));

impl Serialize for Status {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            (text, Some(n)) => s.collect_str(&format_args!("{text}{n}")),
            (text, None) => s.serialize_str(text),
        }
    }
}

/// [`CallFrames`] by value (the record is `Copy`).
type CallFramesRef = CallFrames;

impl<'a> CallLine<'a> {
    /// The record of a call.
    pub fn new(c: &'a CallView<'a>) -> CallLine<'a> {
        let r = c.rec;
        let f = c.flow;
        let g = c.grpc;
        let grpc = g.is_some_and(|g| g.grpc);
        let k = g.map(|g| g.counts).unwrap_or_default();
        let side = |v: [u64; 2]| grpc.then(|| pair(v));
        CallLine {
            compressed: grpc.then(|| pair([k[0].compressed, k[1].compressed])),
            conn: r.conn,
            duration_us: us(r.end),
            end: (r.end >= 0).then(|| secs(r.start + r.end)),
            first_byte_us: us(r.first_byte),
            frames: Pair {
                client: CallFrames(r.frames[0]),
                server: CallFrames(r.frames[1]),
            },
            grpc_encoding: Encoding {
                client: g.and_then(|g| g.encoding[0].as_deref()),
                server: g.and_then(|g| g.encoding[1].as_deref()),
            },
            grpc_message: g.and_then(|g| g.grpc_message.as_deref()),
            grpc_status: (r.grpc_status != NO_STATUS).then_some(r.grpc_status),
            grpc_status_details: super::messages::status_details(g),
            http_method: (!c.http_method.is_empty()).then_some(c.http_method),
            http_status: (r.http_status != 0).then_some(r.http_status),
            in_flight_at_start: r.inflight,
            incomplete_messages: grpc.then(|| pair([k[0].incomplete, k[1].incomplete])),
            message_bytes: side([k[0].bytes, k[1].bytes]),
            messages: grpc.then(|| pair([k[0].messages, k[1].messages])),
            messages_omitted: None,
            method: c.method,
            opened_bdp_round: pair([
                r.opened_round(h2ledger_core::Side::Client),
                r.opened_round(h2ledger_core::Side::Server),
            ]),
            ping_rtt_us: g.and_then(|g| us(g.ping_rtt_ns)),
            record: "call",
            request_messages: None,
            reset: r.reset(),
            reset_by: r.reset_by().map(|(_, side)| side.name()),
            reset_code: r.reset_by().map(|(code, _)| code.to_string()),
            response_messages: None,
            server_time_us: g.and_then(|g| us(g.server_time_ns)),
            stalled_us: pair([
                f.stalled_ns[0] as f64 / 1000.0,
                f.stalled_ns[1] as f64 / 1000.0,
            ]),
            stalls: pair(f.stalls),
            start: secs(r.start),
            status: Status(c.status_parts()),
            stream: r.stream,
            kind: "call",
            writes: pair(r.writes),
        }
    }
}

impl<'a> CallLine<'a> {
    /// With the call's messages (`calls --messages`): `request_messages`,
    /// `response_messages` and `messages_omitted`, null when the call is not gRPC.
    pub fn with_messages(mut self, m: Option<&'a CallMessages>) -> Self {
        self.request_messages = Some(m.map(|m| MsgList(&m.dirs[0])));
        self.response_messages = Some(m.map(|m| MsgList(&m.dirs[1])));
        self.messages_omitted = Some(m.map(|m| pair(m.omitted)));
        self
    }
}

impl CallLine<'_> {
    /// The record as `serde_json::to_writer` writes it (same keys, same order, same bytes:
    /// `it::usage::call_lines_equal_serde` checks), several times faster. Written as runs of
    /// constant text between the values (`,"conn":`, `},"grpc_encoding":{"client":`): a record
    /// always has the same keys in the same order, so each run is one copy.
    pub fn write_json(&self, buf: &mut Vec<u8>) {
        self.write_json_memo(buf, &mut TimeMemo::default());
    }

    /// [`CallLine::write_json`], the text of `start` and `end` from `memo` when a call just
    /// written had the same (calls that start in one write, or end in one, have the same times).
    pub fn write_json_memo(&self, buf: &mut Vec<u8>, memo: &mut TimeMemo) {
        use crate::jsonw::{float, string};
        fn pair<T: Into<u64> + Copy>(b: &mut Vec<u8>, p: &Option<Pair<T>>) {
            match p {
                Some(p) => {
                    lit(b, "{\"client\":");
                    num(b, p.client.into());
                    lit(b, ",\"server\":");
                    num(b, p.server.into());
                    b.push(b'}');
                }
                None => lit(b, "null"),
            }
        }
        fn opt_f64(b: &mut Vec<u8>, v: Option<f64>) {
            match v {
                Some(v) => float(b, v),
                None => lit(b, "null"),
            }
        }
        fn opt_str(b: &mut Vec<u8>, v: Option<&str>) {
            match v {
                Some(v) => string(b, v),
                None => lit(b, "null"),
            }
        }
        fn opt_num(b: &mut Vec<u8>, v: Option<u16>) {
            match v {
                Some(v) => num(b, v.into()),
                None => lit(b, "null"),
            }
        }
        fn bool(b: &mut Vec<u8>, v: bool) {
            lit(b, if v { "true" } else { "false" });
        }
        /// `key` (`,"name":`) and the list, `null`, or nothing.
        fn list(b: &mut Vec<u8>, key: &str, l: &Option<Option<MsgList<'_>>>) {
            match l {
                Some(Some(l)) => {
                    lit(b, key);
                    l.write_json(b);
                }
                Some(None) => {
                    lit(b, key);
                    lit(b, "null");
                }
                None => {}
            }
        }
        fn plain(b: &mut Vec<u8>, v: &str) {
            debug_assert!(!crate::jsonw::needs_escape(v.as_bytes(), false), "{v:?}");
            b.push(b'"');
            lit(b, v);
            b.push(b'"');
        }
        let b = buf;
        lit(b, "{\"compressed\":");
        pair(b, &self.compressed);
        lit(b, ",\"conn\":");
        num(b, self.conn.into());
        lit(b, ",\"duration_us\":");
        opt_f64(b, self.duration_us);
        lit(b, ",\"end\":");
        match self.end {
            Some(v) => memo.float(b, v),
            None => lit(b, "null"),
        }
        lit(b, ",\"first_byte_us\":");
        opt_f64(b, self.first_byte_us);
        lit(b, ",\"frames\":{\"client\":");
        self.frames.client.write(b);
        lit(b, ",\"server\":");
        self.frames.server.write(b);
        lit(b, "},\"grpc_encoding\":{\"client\":");
        opt_str(b, self.grpc_encoding.client);
        lit(b, ",\"server\":");
        opt_str(b, self.grpc_encoding.server);
        lit(b, "},\"grpc_message\":");
        opt_str(b, self.grpc_message);
        lit(b, ",\"grpc_status\":");
        opt_num(b, self.grpc_status);
        lit(b, ",\"grpc_status_details\":");
        match &self.grpc_status_details {
            Some(d) => d.write_json(b),
            None => lit(b, "null"),
        }
        lit(b, ",\"http_method\":");
        opt_str(b, self.http_method);
        lit(b, ",\"http_status\":");
        opt_num(b, self.http_status);
        lit(b, ",\"in_flight_at_start\":");
        num(b, self.in_flight_at_start.into());
        lit(b, ",\"incomplete_messages\":");
        pair(b, &self.incomplete_messages);
        lit(b, ",\"message_bytes\":");
        pair(b, &self.message_bytes);
        lit(b, ",\"messages\":");
        pair(b, &self.messages);
        if let Some(p) = &self.messages_omitted {
            lit(b, ",\"messages_omitted\":");
            pair(b, p);
        }
        lit(b, ",\"method\":");
        string(b, self.method);
        lit(b, ",\"opened_bdp_round\":{\"client\":");
        bool(b, self.opened_bdp_round.client);
        lit(b, ",\"server\":");
        bool(b, self.opened_bdp_round.server);
        lit(b, "},\"ping_rtt_us\":");
        opt_f64(b, self.ping_rtt_us);
        lit(b, ",\"record\":");
        plain(b, self.record);
        list(b, ",\"request_messages\":", &self.request_messages);
        lit(b, ",\"reset\":");
        bool(b, self.reset);
        lit(b, ",\"reset_by\":");
        opt_str(b, self.reset_by);
        lit(b, ",\"reset_code\":");
        opt_str(b, self.reset_code.as_deref());
        list(b, ",\"response_messages\":", &self.response_messages);
        lit(b, ",\"server_time_us\":");
        opt_f64(b, self.server_time_us);
        lit(b, ",\"stalled_us\":{\"client\":");
        float(b, self.stalled_us.client);
        lit(b, ",\"server\":");
        float(b, self.stalled_us.server);
        lit(b, "},\"stalls\":{\"client\":");
        num(b, self.stalls.client.into());
        lit(b, ",\"server\":");
        num(b, self.stalls.server.into());
        lit(b, "},\"start\":");
        memo.float(b, self.start);
        lit(b, ",\"status\":");
        match self.status.0 {
            (text, Some(n)) => {
                debug_assert!(!crate::jsonw::needs_escape(text.as_bytes(), false));
                b.push(b'"');
                lit(b, text);
                lit(b, itoa::Buffer::new().format(n));
                b.push(b'"');
            }
            (text, None) => string(b, text),
        }
        lit(b, ",\"stream\":");
        num(b, self.stream.into());
        lit(b, ",\"type\":");
        plain(b, self.kind);
        lit(b, ",\"writes\":{\"client\":");
        num(b, self.writes.client.into());
        lit(b, ",\"server\":");
        num(b, self.writes.server.into());
        lit(b, "}}");
    }
}

/// The text of the last two times a writer printed (epoch seconds: a call's `start` and `end`,
/// a frame's `time`), whose shortest form costs some 300 instructions to find, where calls
/// started or ended by the same write, and frames of the same packet, share it. Exact: a time
/// is reused only for the same `f64` bits.
#[derive(Default)]
pub struct TimeMemo {
    last: [(u64, [u8; 32], u8); 2],
    next: usize,
}

impl TimeMemo {
    fn float(&mut self, b: &mut Vec<u8>, v: f64) {
        let bits = v.to_bits();
        for (k, text, n) in &self.last {
            if *n > 0 && *k == bits {
                b.extend_from_slice(text.get(..usize::from(*n)).unwrap_or_default());
                return;
            }
        }
        let start = b.len();
        crate::jsonw::float(b, v);
        let t = b.get(start..).unwrap_or_default();
        if let Some(e) = self.last.get_mut(self.next) {
            if let Some(slot) = e.1.get_mut(..t.len()) {
                slot.copy_from_slice(t);
                *e = (bits, e.1, t.len() as u8);
                self.next = (self.next + 1) % 2;
            }
        }
    }
}

/// Text copied as it is (keys and their punctuation, checked strings).
#[inline(always)]
fn lit(b: &mut Vec<u8>, s: &str) {
    b.extend_from_slice(s.as_bytes());
}

/// An unsigned integer, as serde_json writes it.
#[inline(always)]
fn num(b: &mut Vec<u8>, v: u64) {
    if v < 10 {
        // Most counts of a record are one digit.
        b.push(b'0' + v as u8);
    } else {
        lit(b, itoa::Buffer::new().format(v));
    }
}

/// The display filter (`-Y`) reads a call's record as jq reads its JSON line: the same keys,
/// the same values (`it::filter` compares the two on every capture).
impl h2ledger_filter::Record for CallLine<'_> {
    fn get(&self, key: &str) -> h2ledger_filter::Value<'_> {
        use h2ledger_filter::Value as V;
        use std::borrow::Cow;
        fn num<T: Into<f64>>(v: Option<T>) -> V<'static> {
            v.map_or(V::Null, |v| V::Num(v.into()))
        }
        fn side<T: Copy + Into<f64>>(p: &Option<Pair<T>>, server: bool) -> V<'static> {
            num(p.as_ref().map(|p| if server { p.server } else { p.client }))
        }
        fn text<'a>(v: Option<&'a str>) -> V<'a> {
            v.map_or(V::Null, |s| V::Str(Cow::Borrowed(s)))
        }
        let u64s = |p: &Option<Pair<u64>>, server: bool| {
            num(p
                .as_ref()
                .map(|p| (if server { p.server } else { p.client }) as f64))
        };
        // CALL_KINDS order: HEADERS, DATA, TRAILERS, other.
        let frames = |f: &CallFrames, kind: &str| {
            let i = match kind {
                "HEADERS" => 0,
                "DATA" => 1,
                "TRAILERS" => 2,
                _ => 3,
            };
            V::Num(f64::from(f.0[i]))
        };
        if let Some(k) = key.strip_prefix("frames.client.") {
            return frames(&self.frames.client, k);
        }
        if let Some(k) = key.strip_prefix("frames.server.") {
            return frames(&self.frames.server, k);
        }
        match key {
            "compressed.client" => side(&self.compressed, false),
            "compressed.server" => side(&self.compressed, true),
            "conn" => V::Num(self.conn.into()),
            "duration_us" => num(self.duration_us),
            "end" => num(self.end),
            "first_byte_us" => num(self.first_byte_us),
            "grpc_encoding.client" => text(self.grpc_encoding.client),
            "grpc_encoding.server" => text(self.grpc_encoding.server),
            "grpc_message" => text(self.grpc_message),
            "grpc_status" => num(self.grpc_status),
            "http_method" => text(self.http_method),
            "http_status" => num(self.http_status),
            "in_flight_at_start" => V::Num(self.in_flight_at_start.into()),
            "incomplete_messages.client" => side(&self.incomplete_messages, false),
            "incomplete_messages.server" => side(&self.incomplete_messages, true),
            "message_bytes.client" => u64s(&self.message_bytes, false),
            "message_bytes.server" => u64s(&self.message_bytes, true),
            "messages.client" => side(&self.messages, false),
            "messages.server" => side(&self.messages, true),
            "method" => V::Str(Cow::Borrowed(self.method)),
            "opened_bdp_round.client" => V::Bool(self.opened_bdp_round.client),
            "opened_bdp_round.server" => V::Bool(self.opened_bdp_round.server),
            "ping_rtt_us" => num(self.ping_rtt_us),
            "record" => V::Str(Cow::Borrowed(self.record)),
            "reset" => V::Bool(self.reset),
            "reset_by" => text(self.reset_by),
            "reset_code" => text(self.reset_code.as_deref()),
            "server_time_us" => num(self.server_time_us),
            "stalled_us.client" => V::Num(self.stalled_us.client),
            "stalled_us.server" => V::Num(self.stalled_us.server),
            "stalls.client" => V::Num(self.stalls.client.into()),
            "stalls.server" => V::Num(self.stalls.server.into()),
            "start" => V::Num(self.start),
            "status" => V::Str(match self.status.0 {
                (t, Some(n)) => Cow::Owned(format!("{t}{n}")),
                (t, None) => Cow::Borrowed(t),
            }),
            "stream" => V::Num(self.stream.into()),
            "type" => V::Str(Cow::Borrowed(self.kind)),
            "writes.client" => V::Num(self.writes.client.into()),
            "writes.server" => V::Num(self.writes.server.into()),
            _ => V::Null,
        }
    }
}

/// The display filter (`-Y`) reads a frame's record as jq reads its JSON line.
impl h2ledger_filter::Record for FrameLine<'_> {
    fn get(&self, key: &str) -> h2ledger_filter::Value<'_> {
        use h2ledger_filter::Value as V;
        use std::borrow::Cow;
        let num = |v: Option<u64>| v.map_or(V::Null, |v| V::Num(v as f64));
        fn text<'a>(v: Option<&'a str>) -> V<'a> {
            v.map_or(V::Null, |s| V::Str(Cow::Borrowed(s)))
        }
        match key {
            "class" => V::Str(Cow::Borrowed(self.class)),
            "conn" => V::Num(self.conn.into()),
            "debug" => text(self.debug.as_deref()),
            "dst" => V::Str(Cow::Borrowed(self.dst)),
            "error" => text(self.error.as_deref()),
            "flag_names" => V::Strs(self.flag_names.as_slice()),
            "flags" => V::Num(self.flags.into()),
            "increment" => num(self.increment.map(u64::from)),
            "last_stream_id" => num(self.last_stream_id.map(u64::from)),
            "length" => V::Num(self.length.into()),
            "ping" => match self.ping {
                Some(p) => V::Str(Cow::Owned(Hex(p).to_string())),
                None => V::Null,
            },
            "ping_label" => text(self.ping_label),
            "record" => V::Str(Cow::Borrowed(self.record)),
            "side" => V::Str(Cow::Borrowed(self.side)),
            "src" => V::Str(Cow::Borrowed(self.src)),
            "stream" => V::Num(self.stream.into()),
            "time" => V::Num(self.time),
            "type" => V::Str(Cow::Borrowed(self.kind)),
            "write" => num(self.write),
            _ => V::Null,
        }
    }
}

/// `--every` on `calls` and `frames`: one `tick` record per period with what it saw.
#[cfg(test)]
mod tests {
    use super::*;

    /// The header writer's fast path and its fallback give serde_json's bytes of `Escaped`.
    #[test]
    fn header_bytes_equal_serde() {
        let cases: [&[u8]; 9] = [
            b"",
            b"content-type",
            b"application/grpc+proto",
            b"a \"quoted\" value",
            b"back\\slash",
            b"tab\tnewline\n\x00\x1f",
            b"del \x7f",
            "caf\u{e9} \u{1f600}".as_bytes(),
            b"not utf-8 \xff\xfe\x80",
        ];
        for v in cases {
            let mut fast = Vec::new();
            escaped(&mut fast, v);
            let slow = serde_json::to_vec(&Escaped(v)).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&fast),
                String::from_utf8_lossy(&slow),
                "{v:?}"
            );
        }
    }
}
