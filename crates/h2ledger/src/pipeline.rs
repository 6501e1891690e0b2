//! Packets in, ledger out: link decode, TCP reassembly, TLS decryption, the ledger.

use h2ledger_core::{Ledger, Observer};
use h2ledger_tcp::{link, Config, Nanos, Reassembler};
use h2ledger_tls::Tls;
use serde::Serialize;

use crate::keys::KeyLogFile;

/// Packet-level counts of one run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CaptureStats {
    pub packets: u64,
    pub tcp_segments: u64,
    pub not_tcp: u64,
    pub undecodable: u64,
    /// First and last packet time (seconds since the epoch).
    pub first: Option<f64>,
    pub last: Option<f64>,
}

pub struct Pipeline<O> {
    pub reasm: Reassembler,
    pub ledger: Ledger<O>,
    pub stats: CaptureStats,
    /// Between reassembly and the ledger: TLS connections decrypted, the rest passed through.
    pub tls: Tls,
    keylog_file: Option<KeyLogFile>,
    first: Option<Nanos>,
    last: Nanos,
}

impl<O: Observer> Pipeline<O> {
    pub fn new(observer: O) -> Self {
        Pipeline {
            reasm: Reassembler::new(Config::default()),
            ledger: Ledger::new(observer),
            stats: CaptureStats::default(),
            tls: Tls::new(Default::default(), Default::default()),
            keylog_file: None,
            first: None,
            last: 0,
        }
    }

    /// TLS keys from [`crate::keys::load`].
    pub fn with_keys(mut self, (tls, file): (Tls, Option<KeyLogFile>)) -> Self {
        self.tls = tls;
        self.keylog_file = file;
        self
    }

    /// TLS warnings into the ledger's; live, what the key log file gained.
    fn tls_housekeeping(&mut self) {
        if self.tls.waiting_for_keys() {
            if let Some(text) = self.keylog_file.as_mut().and_then(|f| f.poll()) {
                self.tls.layer(&mut self.ledger).add_keys(&text);
            }
        }
        if self.tls.has_warnings() {
            for (kind, msg) in self.tls.take_warnings() {
                self.ledger.warnings.add(kind, || msg);
            }
        }
    }

    pub fn packet(&mut self, linktype: i32, ts: Nanos, data: &[u8]) {
        self.stats.packets += 1;
        if self.first.is_none() {
            self.first = Some(ts);
        }
        self.last = self.last.max(ts);
        match link::decode(linktype, data) {
            Ok(Some(seg)) => {
                self.stats.tcp_segments += 1;
                self.reasm
                    .push(ts, &seg, &mut self.tls.layer(&mut self.ledger));
                self.tls_housekeeping();
            }
            Ok(None) => self.stats.not_tcp += 1,
            Err(e) => {
                self.stats.undecodable += 1;
                let n = self.stats.packets;
                self.ledger.warnings.add("undecodable-packet", || {
                    format!("packet {n}: cannot decode (link type {linktype}): {e}")
                });
            }
        }
    }

    /// End of input: flush reassembly (declaring what never arrived as gaps).
    pub fn finish(&mut self) {
        self.tls_housekeeping();
        self.reasm
            .finish(self.last, &mut self.tls.layer(&mut self.ledger));
        self.tls_housekeeping();
        self.stats.first = self.first.map(secs);
        self.stats.last = self.first.map(|_| secs(self.last));
    }

    pub fn first_ts(&self) -> Option<Nanos> {
        self.first
    }
}

/// A libpcap timestamp in nanoseconds. Captures are opened with nanosecond precision, so
/// `tv_usec` holds nanoseconds.
pub fn ts_nanos(ts: &libc::timeval) -> Nanos {
    ts.tv_sec * 1_000_000_000 + ts.tv_usec
}

pub fn secs(ns: Nanos) -> f64 {
    ns as f64 / 1e9
}
