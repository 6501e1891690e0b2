//! Test helpers: a ledger with the analysis attached, fed frame by frame.

use h2ledger_tcp::{ConnId, ConnMeta, Dir, Nanos, Sink, Write};

use crate::analysis::Analysis;
use crate::ledger::Ledger;

/// One frame's bytes.
pub fn fr(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let n = payload.len() as u32;
    let mut v = vec![(n >> 16) as u8, (n >> 8) as u8, n as u8, kind, flags];
    v.extend_from_slice(&stream.to_be_bytes());
    v.extend_from_slice(payload);
    v
}

pub fn data(stream: u32, end: bool, len: usize) -> Vec<u8> {
    fr(0, u8::from(end), stream, &vec![0u8; len])
}

pub fn wu(stream: u32, inc: u32) -> Vec<u8> {
    fr(8, 0, stream, &inc.to_be_bytes())
}

pub fn settings(params: &[(u16, u32)]) -> Vec<u8> {
    let mut p = Vec::new();
    for (id, v) in params {
        p.extend_from_slice(&id.to_be_bytes());
        p.extend_from_slice(&v.to_be_bytes());
    }
    fr(4, 0, 0, &p)
}

pub fn settings_ack() -> Vec<u8> {
    fr(4, 1, 0, &[])
}

/// A literal header field without indexing, new name (RFC 7541 §6.2.2).
pub fn lit(name: &str, value: &str) -> Vec<u8> {
    let mut v = vec![0, name.len() as u8];
    v.extend_from_slice(name.as_bytes());
    v.push(value.len() as u8);
    v.extend_from_slice(value.as_bytes());
    v
}

/// A POST request HEADERS (END_HEADERS) for `path`, gRPC when `grpc`.
pub fn request(stream: u32, path: &str, grpc: bool) -> Vec<u8> {
    let mut b = vec![0x83, 0x86]; // :method POST, :scheme http
    b.extend(lit(":path", path));
    if grpc {
        b.extend(lit("content-type", "application/grpc"));
    }
    fr(1, 4, stream, &b)
}

/// A response HEADERS (:status 200), with extra fields.
pub fn response(stream: u32, end: bool, extra: &[(&str, &str)]) -> Vec<u8> {
    let mut b = vec![0x88];
    for (n, v) in extra {
        b.extend(lit(n, v));
    }
    fr(1, 4 | u8::from(end), stream, &b)
}

pub fn trailers(stream: u32, fields: &[(&str, &str)]) -> Vec<u8> {
    let mut b = Vec::new();
    for (n, v) in fields {
        b.extend(lit(n, v));
    }
    fr(1, 5, stream, &b)
}

/// Connection 0 from 127.0.0.1:50000 to 127.0.0.1:50051, its SYN sent by `syn` (if seen).
pub fn meta(syn: Option<Dir>) -> ConnMeta {
    ConnMeta {
        id: ConnId(0),
        first_src: "127.0.0.1:50000".parse().unwrap(),
        first_dst: "127.0.0.1:50051".parse().unwrap(),
        syn_sender: syn,
        start: 0,
        resumes: None,
    }
}

/// A connection between a client (Fwd) and a server, starting with the SYN (or not).
pub struct Conn {
    pub ledger: Ledger<Analysis>,
    idx: [u64; 2],
    pub t: Nanos,
}

pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

impl Conn {
    pub fn new(syn: bool) -> Conn {
        Conn::with(Analysis::new(None).keep_finished(), syn)
    }

    /// A connection observed by `analysis`.
    pub fn with(analysis: Analysis, syn: bool) -> Conn {
        let mut ledger = Ledger::new(analysis);
        ledger.open(&meta(syn.then_some(Dir::Fwd)));
        Conn {
            ledger,
            idx: [0; 2],
            t: 1_000_000_000,
        }
    }

    /// Client preface and both SETTINGS exchanged (with `server` as the server's SETTINGS).
    pub fn started(server: &[(u16, u32)]) -> Conn {
        Conn::started_with(Analysis::new(None).keep_finished(), server)
    }

    /// [`Conn::started`] observed by `analysis`.
    pub fn started_with(analysis: Analysis, server: &[(u16, u32)]) -> Conn {
        let mut c = Conn::with(analysis, true);
        let mut p = PREFACE.to_vec();
        p.extend(settings(&[]));
        c.client(&p);
        c.server(&[settings(server), settings_ack()].concat());
        c.client(&settings_ack());
        c
    }

    /// One write of `bytes` in `dir`, 1 ms after the previous one.
    pub fn send(&mut self, dir: Dir, bytes: &[u8]) {
        self.t += 1_000_000;
        let d = usize::from(dir == Dir::Rev);
        let w = Write {
            index: self.idx[d],
            ts: self.t,
            len: bytes.len() as u32,
        };
        self.idx[d] += 1;
        self.ledger.write(ConnId(0), dir, &w);
        self.ledger.data(ConnId(0), dir, &w, bytes);
    }

    pub fn client(&mut self, bytes: &[u8]) {
        self.send(Dir::Fwd, bytes);
    }

    pub fn server(&mut self, bytes: &[u8]) {
        self.send(Dir::Rev, bytes);
    }

    pub fn gap(&mut self, dir: Dir, len: u64) {
        self.ledger.gap(ConnId(0), dir, self.t, len);
    }

    /// The gRPC records of the calls folded so far, by stream.
    pub fn folded_grpc(&mut self) -> std::collections::BTreeMap<u32, crate::grpc::CallGrpc> {
        let mut m = std::collections::BTreeMap::new();
        self.ledger.observer.drain_finished(|v| {
            if let Some(g) = v.grpc {
                m.insert(v.rec.stream, g.clone());
            }
        });
        m
    }

    pub fn close(&mut self) {
        self.ledger
            .close(ConnId(0), self.t, h2ledger_tcp::CloseKind::EndOfCapture);
        self.ledger.observer.flush();
    }
}
