use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use h2_frame_parser::{Frame, StreamId};
use h2ledger_core::{FrameEvent, Observer, Side};
use h2ledger_proto::{Assembler, Direction};
use h2ledger_run::{Options, Session, View};
use h2ledger_tcp::{ConnId, LinkType};

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Packets of a classic pcap file: (linktype, ts in ns, bytes).
pub fn read_pcap(path: &Path) -> Vec<(i32, i64, Vec<u8>)> {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let magic = u32::from_le_bytes(b[0..4].try_into().unwrap());
    let (le, nanos) = match magic {
        0xa1b2c3d4 => (true, false),
        0xa1b23c4d => (true, true),
        0xd4c3b2a1 => (false, false),
        0x4d3cb2a1 => (false, true),
        m => panic!("{}: not a classic pcap (magic {m:#x})", path.display()),
    };
    let u32_at = |o: usize| {
        let a: [u8; 4] = b[o..o + 4].try_into().unwrap();
        if le {
            u32::from_le_bytes(a)
        } else {
            u32::from_be_bytes(a)
        }
    };
    let linktype = u32_at(20) as i32;
    let mut out = Vec::new();
    let mut o = 24;
    while o + 16 <= b.len() {
        let (s, f, incl) = (
            u32_at(o) as i64,
            u32_at(o + 4) as i64,
            u32_at(o + 8) as usize,
        );
        let ts = s * 1_000_000_000 + if nanos { f } else { f * 1000 };
        out.push((linktype, ts, b[o + 16..o + 16 + incl].to_vec()));
        o += 16 + incl;
    }
    out
}

/// One gRPC message as cut from the capture.
#[derive(Debug, Clone)]
pub struct Msg {
    pub dir: Direction,
    pub flag: u8,
    pub bytes: Vec<u8>,
    pub wire_len: u32,
    pub cut: bool,
}

/// One call: its path, each direction's grpc-encoding, its messages in wire order per direction.
#[derive(Debug, Default)]
pub struct Call {
    pub path: String,
    pub encoding: [Option<String>; 2],
    pub requests: Vec<Msg>,
    pub responses: Vec<Msg>,
}

#[derive(Default)]
struct Collect {
    max: usize,
    calls: BTreeMap<(u32, u32), Call>,
    asm: BTreeMap<(u32, u32, bool), Assembler>,
}

impl View for Collect {
    fn frames(&self) -> u64 {
        0
    }
}

impl Observer for Collect {
    fn wants_data(&self, _conn: ConnId, _stream: StreamId) -> bool {
        true
    }

    fn frame(&mut self, ev: &FrameEvent<'_>) {
        let stream = ev.head.stream_id.0;
        if stream == 0 {
            return;
        }
        let key = (ev.conn.0, stream);
        let req = ev.side == Side::Client;
        if let Some(h) = ev.headers {
            let call = self.calls.entry(key).or_default();
            if let Some(p) = h.get(b":path") {
                call.path = String::from_utf8_lossy(p).into_owned();
            }
            if let Some(e) = h.get(b"grpc-encoding") {
                call.encoding[usize::from(!req)] = Some(String::from_utf8_lossy(e).into_owned());
            }
        }
        if let Some(Frame::Data(d)) = ev.frame {
            let max = self.max;
            let asm = self
                .asm
                .entry((key.0, key.1, req))
                .or_insert_with(|| Assembler::new(max));
            let call = self.calls.entry(key).or_default();
            let dir = if req {
                Direction::Request
            } else {
                Direction::Response
            };
            asm.feed(d.data, |e| {
                let m = Msg {
                    dir,
                    flag: e.flag,
                    bytes: e.bytes.to_vec(),
                    wire_len: e.wire_len,
                    cut: e.cut,
                };
                if req {
                    call.requests.push(m)
                } else {
                    call.responses.push(m)
                }
            });
        }
    }
}

/// Every call of a capture, by (connection, stream), with its messages.
pub fn calls(path: &Path, max_message_bytes: usize) -> Vec<Call> {
    let collect = Collect {
        max: max_message_bytes,
        ..Default::default()
    };
    let mut s = Session::new(collect, Options::default());
    for (lt, ts, b) in read_pcap(path) {
        let _ = s.feed(LinkType(lt), ts, &b);
    }
    s.end();
    std::mem::take(&mut s.view_mut().calls)
        .into_values()
        .collect()
}
