//! The fields a filter names, per view: the keys of the view's JSON lines (a nested key as its
//! jq path without the dot: `writes.client`), and tshark's names where tshark has a field that
//! means the same (tshark 4.0's `http2.*`, from `tshark -G fields`), as aliases of those keys.

/// The record a filter is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// `calls`: one record per call (HTTP/2 stream).
    Calls,
    /// `frames`: one record per frame.
    Frames,
}

impl View {
    /// `calls` or `frames`.
    pub fn name(self) -> &'static str {
        match self {
            View::Calls => "calls",
            View::Frames => "frames",
        }
    }

    /// The fields a filter of this view may name.
    pub fn fields(self) -> &'static [Field] {
        match self {
            View::Calls => CALLS,
            View::Frames => FRAMES,
        }
    }

    fn other(self) -> View {
        match self {
            View::Calls => View::Frames,
            View::Frames => View::Calls,
        }
    }
}

/// What a field holds, and so which values and operators it takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// A number (JSON number or null).
    Num,
    /// A duration in microseconds (a `_us` key). `bare`: a number without a unit is taken as
    /// microseconds (the `_us` keys); otherwise a unit is required (`call.duration > 10ms`).
    Dur {
        /// A number without a unit is microseconds.
        bare: bool,
    },
    /// Text (JSON string or null).
    Str,
    /// true or false.
    Bool,
    /// A list of names (`flag_names`).
    List,
    /// tshark's `http2.type`: the frame type by its number (or name), over the JSON's `type`.
    TypeCode,
    /// tshark's `http2.rst_stream.error` and `http2.goaway.error`: an error code by its number
    /// (or name), over the JSON's `error`.
    ErrorCode,
}

impl Ty {
    /// How the type is named in errors.
    pub fn describe(self) -> &'static str {
        match self {
            Ty::Num => "a number",
            Ty::Dur { .. } => "a duration",
            Ty::Str => "text",
            Ty::Bool => "true or false",
            Ty::List => "a list of names",
            Ty::TypeCode => "a frame type (a number or a name)",
            Ty::ErrorCode => "an error code (a number or a name)",
        }
    }
}

/// Where a field's value comes from in the record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Src {
    /// The JSON key (a nested one as `a.b`).
    Key(&'static str),
    /// The key `error` of a frame of this `type` (null for other frames).
    ErrorOf(&'static str),
    /// This name is in `flag_names` (of a frame of this `type` when given).
    Flag(&'static str, Option<&'static str>),
}

/// A field a filter may name.
#[derive(Clone, Copy, Debug)]
pub struct Field {
    /// What the filter says.
    pub name: &'static str,
    /// Where the value comes from.
    pub src: Src,
    /// What it holds.
    pub ty: Ty,
    /// tshark's own name for the same thing (an alias).
    pub tshark: bool,
}

const fn f(name: &'static str, ty: Ty) -> Field {
    Field {
        name,
        src: Src::Key(name),
        ty,
        tshark: false,
    }
}

/// Another name of `key`.
const fn alias(name: &'static str, key: &'static str, ty: Ty) -> Field {
    Field {
        name,
        src: Src::Key(key),
        ty,
        tshark: false,
    }
}

/// tshark's name of `key`.
const fn ts(name: &'static str, key: &'static str, ty: Ty) -> Field {
    Field {
        name,
        src: Src::Key(key),
        ty,
        tshark: true,
    }
}

const US: Ty = Ty::Dur { bare: true };
const DUR: Ty = Ty::Dur { bare: false };
use Ty::{Bool, List, Num, Str};

/// `calls`: every key of a call's JSON line but the message lists (`--messages`).
pub static CALLS: &[Field] = &[
    f("compressed.client", Num),
    f("compressed.server", Num),
    f("conn", Num),
    f("duration_us", US),
    alias("call.duration", "duration_us", DUR),
    alias("duration", "duration_us", DUR),
    f("end", Num),
    f("first_byte_us", US),
    alias("call.first_byte", "first_byte_us", DUR),
    alias("first_byte", "first_byte_us", DUR),
    f("frames.client.DATA", Num),
    f("frames.client.HEADERS", Num),
    f("frames.client.TRAILERS", Num),
    f("frames.client.other", Num),
    f("frames.server.DATA", Num),
    f("frames.server.HEADERS", Num),
    f("frames.server.TRAILERS", Num),
    f("frames.server.other", Num),
    f("grpc_encoding.client", Str),
    f("grpc_encoding.server", Str),
    f("grpc_message", Str),
    alias("grpc.message", "grpc_message", Str),
    f("grpc_status", Num),
    alias("grpc.status", "grpc_status", Num),
    f("http_method", Str),
    ts("http2.headers.method", "http_method", Str),
    f("http_status", Num),
    ts("http2.headers.status", "http_status", Num),
    f("in_flight_at_start", Num),
    f("incomplete_messages.client", Num),
    f("incomplete_messages.server", Num),
    f("message_bytes.client", Num),
    f("message_bytes.server", Num),
    f("messages.client", Num),
    f("messages.server", Num),
    f("method", Str),
    alias("path", "method", Str),
    ts("http2.headers.path", "method", Str),
    f("opened_bdp_round.client", Bool),
    f("opened_bdp_round.server", Bool),
    f("ping_rtt_us", US),
    alias("call.ping_rtt", "ping_rtt_us", DUR),
    alias("ping_rtt", "ping_rtt_us", DUR),
    f("record", Str),
    f("reset", Bool),
    f("reset_by", Str),
    f("reset_code", Str),
    f("server_time_us", US),
    alias("call.server_time", "server_time_us", DUR),
    alias("server_time", "server_time_us", DUR),
    f("stalled_us.client", US),
    f("stalled_us.server", US),
    f("stalls.client", Num),
    f("stalls.server", Num),
    f("start", Num),
    f("status", Str),
    f("stream", Num),
    ts("http2.streamid", "stream", Num),
    f("type", Str),
    f("writes.client", Num),
    f("writes.server", Num),
];

/// `frames`: every key of a frame's JSON line but the lists of pairs (`headers`, `settings`,
/// `grpc_messages`), and tshark's names of the same.
pub static FRAMES: &[Field] = &[
    f("class", Str),
    f("conn", Num),
    f("debug", Str),
    f("dst", Str),
    f("error", Str),
    Field {
        name: "http2.rst_stream.error",
        src: Src::ErrorOf("RST_STREAM"),
        ty: Ty::ErrorCode,
        tshark: true,
    },
    Field {
        name: "http2.goaway.error",
        src: Src::ErrorOf("GOAWAY"),
        ty: Ty::ErrorCode,
        tshark: true,
    },
    f("flag_names", List),
    f("flags", Num),
    ts("http2.flags", "flags", Num),
    flag("http2.flags.end_stream", "END_STREAM", None),
    flag("http2.flags.eh", "END_HEADERS", None),
    flag("http2.flags.padded", "PADDED", None),
    flag("http2.flags.priority", "PRIORITY", Some("HEADERS")),
    flag("http2.flags.ack.ping", "ACK", Some("PING")),
    flag("http2.flags.ack.settings", "ACK", Some("SETTINGS")),
    f("increment", Num),
    ts(
        "http2.window_update.window_size_increment",
        "increment",
        Num,
    ),
    f("last_stream_id", Num),
    ts("http2.goaway.last_stream_id", "last_stream_id", Num),
    f("length", Num),
    ts("http2.length", "length", Num),
    f("ping", Str),
    f("ping_label", Str),
    f("record", Str),
    f("side", Str),
    f("src", Str),
    f("stream", Num),
    ts("http2.streamid", "stream", Num),
    f("time", Num),
    f("type", Str),
    ts("http2.type", "type", Ty::TypeCode),
    f("write", Num),
];

const fn flag(name: &'static str, flag: &'static str, kind: Option<&'static str>) -> Field {
    Field {
        name,
        src: Src::Flag(flag, kind),
        ty: Ty::Bool,
        tshark: true,
    }
}

/// HTTP/2 frame types by number (RFC 9113, section 11.2), as the JSON's `type` names them;
/// 10 and above are `UNKNOWN` there.
pub const TYPES: [&str; 10] = [
    "DATA",
    "HEADERS",
    "PRIORITY",
    "RST_STREAM",
    "SETTINGS",
    "PUSH_PROMISE",
    "PING",
    "GOAWAY",
    "WINDOW_UPDATE",
    "CONTINUATION",
];

/// HTTP/2 error codes by number (RFC 9113, section 7), as the JSON's `error` names them; other
/// codes are written `0x..` there.
pub const ERRORS: [&str; 14] = [
    "NO_ERROR",
    "PROTOCOL_ERROR",
    "INTERNAL_ERROR",
    "FLOW_CONTROL_ERROR",
    "SETTINGS_TIMEOUT",
    "STREAM_CLOSED",
    "FRAME_SIZE_ERROR",
    "REFUSED_STREAM",
    "CANCEL",
    "COMPRESSION_ERROR",
    "CONNECT_ERROR",
    "ENHANCE_YOUR_CALM",
    "INADEQUATE_SECURITY",
    "HTTP_1_1_REQUIRED",
];

/// The field `name` of `view`.
pub fn find(view: View, name: &str) -> Option<&'static Field> {
    view.fields().iter().find(|f| f.name == name)
}

/// Whether `name` is a field of the other view (for the error).
pub fn in_other(view: View, name: &str) -> bool {
    find(view.other(), name).is_some()
}

/// Up to six names of `view` close to `name`: a small edit distance, one containing the other,
/// or the same last part (`grpc.status_code` and `grpc_status`).
pub fn close(view: View, name: &str) -> Vec<&'static str> {
    // Field names are short: a long word is compared by its first 64 characters.
    let typed: Vec<char> = name.chars().take(64).collect();
    let low = name.to_ascii_lowercase();
    let last = |s: &str| -> String {
        s.rsplit(['.', '_'])
            .next()
            .unwrap_or(s)
            .to_ascii_lowercase()
    };
    let first =
        |s: &str| -> String { s.split(['.', '_']).next().unwrap_or(s).to_ascii_lowercase() };
    let mut scored: Vec<(usize, &'static str)> = Vec::new();
    for fl in view.fields() {
        let n = fl.name;
        let d = distance(&typed, n);
        let nl = n.to_ascii_lowercase();
        let limit = (typed.len() / 3).max(2);
        let score = if d <= limit {
            d
        } else if low.len() >= 3 && (nl.contains(&low) || low.contains(&nl)) {
            limit + 1
        } else if last(n) == last(name) && last(name).len() >= 3 {
            limit + 2
        } else if first(n) == first(name) && first(name).len() >= 3 {
            limit + 3
        } else {
            continue;
        };
        scored.push((score, n));
    }
    scored.sort();
    scored.into_iter().take(6).map(|(_, n)| n).collect()
}

/// Levenshtein distance between `a` and `b`, by characters.
fn distance(a: &[char], b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}
