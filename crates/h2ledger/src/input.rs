//! Reading packets: saved captures through libpcap's offline reader.

use std::path::Path;

use anyhow::{anyhow, Result};
use h2ledger_tcp::Nanos;
use pcap::{Capture, Offline, Precision};

/// The BPF program for `--port` and a tcpdump-style expression.
pub fn bpf(ports: &[u16], expr: &[String]) -> Option<String> {
    let ports = ports
        .iter()
        .map(|p| format!("tcp port {p}"))
        .collect::<Vec<_>>()
        .join(" or ");
    let expr = expr.join(" ");
    match (ports.is_empty(), expr.trim().is_empty()) {
        (true, true) => None,
        (false, true) => Some(ports),
        (true, false) => Some(expr),
        (false, false) => Some(format!("({ports}) and ({expr})")),
    }
}

/// An open saved capture (pcap or pcapng; `-` is standard input).
pub struct SavedCapture {
    cap: Capture<Offline>,
    pub name: String,
    pub linktype: i32,
}

impl SavedCapture {
    pub fn open(path: &str, filter: Option<&str>) -> Result<SavedCapture> {
        let name = if path == "-" {
            "standard input".to_string()
        } else {
            path.to_string()
        };
        if path != "-" {
            let p = Path::new(path);
            match std::fs::metadata(p) {
                Err(e) => return Err(anyhow!("{name}: cannot open: {}", io_reason(&e))),
                Ok(m) if m.is_dir() => {
                    return Err(anyhow!("{name}: is a directory, not a capture file"))
                }
                Ok(m) if m.len() == 0 => {
                    return Err(anyhow!(
                        "{name}: empty file, not a capture (make one with: tcpdump -i lo -w FILE)"
                    ))
                }
                Ok(_) => {}
            }
            if let Err(e) = std::fs::File::open(p) {
                return Err(anyhow!("{name}: cannot open: {}", io_reason(&e)));
            }
        }
        let mut cap = Capture::from_file_with_precision(path, Precision::Nano)
            .map_err(|e| anyhow!("{name}: not a pcap or pcapng capture ({})", pcap_reason(&e)))?;
        if let Some(f) = filter {
            cap.filter(f, true)
                .map_err(|e| anyhow!("bad filter expression \"{f}\": {}", pcap_reason(&e)))?;
        }
        let linktype = cap.get_datalink().0;
        Ok(SavedCapture {
            cap,
            name,
            linktype,
        })
    }

    /// Calls `f(ts, data)` for every packet. A damaged or truncated file stops the loop with an
    /// error after the packets before the damage were delivered.
    pub fn for_each(&mut self, mut f: impl FnMut(Nanos, &[u8])) -> Result<()> {
        loop {
            match self.cap.next_packet() {
                Ok(p) => {
                    f(crate::pipeline::ts_nanos(&p.header.ts), p.data);
                }
                Err(pcap::Error::NoMorePackets) => return Ok(()),
                Err(e) => return Err(anyhow!("{}: {}", self.name, pcap_reason(&e))),
            }
        }
    }
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".to_string(),
        std::io::ErrorKind::PermissionDenied => {
            "permission denied (check the file's mode, or run as its owner)".to_string()
        }
        _ => e.to_string(),
    }
}

pub fn pcap_reason(e: &pcap::Error) -> String {
    match e {
        pcap::Error::PcapError(s) => s.trim().to_string(),
        other => other.to_string(),
    }
}
