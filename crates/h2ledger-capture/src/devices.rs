//! `h2ledger -D` (`--list-interfaces`): the capture devices libpcap sees, numbered, with
//! tcpdump -D's flags (`1.lo [Up, Running, Loopback]`) and then their addresses. libpcap lists
//! devices without privileges on Linux; capturing on one is what needs them.

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::{anyhow, Result};
use pcap::{ConnectionStatus, Device};

/// One line per device, as tcpdump -D prints it, with the addresses appended.
pub fn line(n: usize, d: &Device) -> String {
    let mut s = format!("{n}.{}", d.name);
    if let Some(desc) = &d.desc {
        s.push_str(&format!(" ({desc})"));
    }
    let f = &d.flags;
    let mut flags = Vec::new();
    for (on, name) in [
        (f.is_up(), "Up"),
        (f.is_running(), "Running"),
        (f.is_loopback(), "Loopback"),
        (f.is_wireless(), "Wireless"),
    ] {
        if on {
            flags.push(name);
        }
    }
    // tcpdump's words: a wireless device is associated, a wired one connected.
    match (&f.connection_status, f.is_wireless()) {
        (ConnectionStatus::Connected, false) => flags.push("Connected"),
        (ConnectionStatus::Connected, true) => flags.push("Associated"),
        (ConnectionStatus::Disconnected, false) => flags.push("Disconnected"),
        (ConnectionStatus::Disconnected, true) => flags.push("Not associated"),
        _ => {}
    }
    if flags.is_empty() {
        flags.push("none");
    }
    s.push_str(&format!(" [{}]", flags.join(", ")));
    let addrs: Vec<String> = d.addresses.iter().map(|a| a.addr.to_string()).collect();
    if !addrs.is_empty() {
        s.push(' ');
        s.push_str(&addrs.join(", "));
    }
    s
}

pub fn list() -> Result<ExitCode> {
    let devices = Device::list().map_err(|e| {
        anyhow!(
            "cannot list capture devices: {}",
            super::file::pcap_reason(&e)
        )
    })?;
    if devices.is_empty() {
        return Err(anyhow!(
            "no capture devices visible (are you allowed to capture? run as root)"
        ));
    }
    let mut out = std::io::stdout().lock();
    for (i, d) in devices.iter().enumerate() {
        if writeln!(out, "{}", line(i + 1, d)).is_err() {
            break;
        }
    }
    let _ = out.flush();
    Ok(ExitCode::SUCCESS)
}

/// `-i N` as tcpdump takes it: the Nth device `-D` lists (from 1), unless a device has that
/// name. Any other name is returned as given (opening it says whether it exists).
pub fn resolve(name: &str) -> Result<String> {
    let Ok(n) = name.parse::<usize>() else {
        return Ok(name.to_string());
    };
    let devices = Device::list().map_err(|e| {
        anyhow!(
            "cannot list capture devices: {}",
            super::file::pcap_reason(&e)
        )
    })?;
    if devices.iter().any(|d| d.name == name) {
        return Ok(name.to_string());
    }
    match n.checked_sub(1).and_then(|i| devices.get(i)) {
        Some(d) => Ok(d.name.clone()),
        None => Err(anyhow!(
            "no capture device number {n}: `h2ledger -D` lists {} (numbered from 1)",
            devices.len()
        )),
    }
}
