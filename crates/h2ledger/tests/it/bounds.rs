//! Memory bounded by what is open, not by time or by what has passed (issue: a bounded run):
//! a clock jump costs two phases, not a day of them; `--every` of a nanosecond is capped and
//! says so; connections beyond the per-connection listing are counted, not listed.

use std::path::PathBuf;

use crate::util::*;

fn tmp(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = scratch("bounds");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// The record offsets of a little-endian pcap file.
fn records(f: &[u8]) -> Vec<usize> {
    let mut at = 24;
    let mut v = Vec::new();
    while at + 16 <= f.len() {
        v.push(at);
        let incl = u32::from_le_bytes(f[at + 8..at + 12].try_into().unwrap()) as usize;
        at += 16 + incl;
    }
    v
}

#[test]
fn a_clock_jump_costs_two_phases_not_a_day() {
    let mut f = std::fs::read(capture("grpcgo-article.pcap")).unwrap();
    let last = *records(&f).last().unwrap();
    let sec = u32::from_le_bytes(f[last..last + 4].try_into().unwrap());
    f[last..last + 4].copy_from_slice(&(sec + 86_400).to_le_bytes());
    let p = tmp("jump.pcap", &f);
    let plot = p.with_extension("svg");
    let out = run(&[
        "replay",
        p.to_str().unwrap(),
        "--every",
        "1s",
        "--format",
        "json",
        "--plot",
        plot.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Before: 86,407 phases and 472 MB of JSON.
    assert!(
        out.stdout.len() < 2_000_000,
        "{} bytes of JSON",
        out.stdout.len()
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let phases = v["phases"].as_array().unwrap();
    assert!(phases.len() <= 8, "{} phases", phases.len());
    assert_eq!(n(&v["anomalies"]["timestamp-jump"]), 1, "{}", v["warnings"]);
    // Every frame is in exactly one phase.
    let frames = |l: &serde_json::Value| -> u64 {
        ["client", "server"]
            .iter()
            .map(|s| {
                l["sides"][s]["frames"]
                    .as_object()
                    .unwrap()
                    .values()
                    .map(n)
                    .sum::<u64>()
            })
            .sum()
    };
    let in_phases: u64 = phases.iter().map(frames).sum();
    assert_eq!(in_phases, frames(&v));
    assert!(std::fs::metadata(&plot).unwrap().len() < 200_000);
}

#[test]
fn every_nanosecond_costs_a_phase_per_distinct_time_at_most() {
    // Before: 6 s / 1 ns = 6e9 phases, an allocation that never ends.
    let out = run(&[
        "replay",
        capture("grpcgo-article.pcap").to_str().unwrap(),
        "--every",
        "1ns",
        "--format",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let phases = v["phases"].as_array().unwrap().len() as u64;
    assert!(
        phases > 100 && phases <= n(&v["capture"]["packets"]),
        "{phases} phases"
    );
    assert!(v["anomalies"].get("phases-capped").is_none());
}

/// A raw-IP pcap of `n` connections opened and closed one after another, each with the client
/// preface and an empty SETTINGS, one second apart.
fn sequential_connections(n: u32) -> Vec<u8> {
    let mut f = Vec::new();
    for v in [0xa1b2c3d4u32, 0, 0, 0, 65535, 101] {
        f.extend_from_slice(&v.to_le_bytes());
    }
    f[4..8].copy_from_slice(&[2, 0, 4, 0]);
    let mut t = 1_700_000_000u32;
    let push = |f: &mut Vec<u8>, p: Vec<u8>, t: u32| {
        for v in [t, 0, p.len() as u32, p.len() as u32] {
            f.extend_from_slice(&v.to_le_bytes());
        }
        f.extend_from_slice(&p);
    };
    let mut h2 = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    h2.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
    for i in 0..n {
        let port = 20_000 + (i % 40_000) as u16;
        push(&mut f, tcp(port, 80, 1000, 0x02, &[]), t);
        push(&mut f, tcp(80, port, 5000, 0x12, &[]), t);
        push(&mut f, tcp(port, 80, 1001, 0x18, &h2), t);
        push(&mut f, tcp(port, 80, 1001 + h2.len() as u32, 0x11, &[]), t);
        push(&mut f, tcp(80, port, 5001, 0x11, &[]), t);
        t += 1;
    }
    f
}

#[test]
fn closed_connections_are_folded_and_counted() {
    let p = tmp("sequential.pcap", &sequential_connections(1_200));
    let v = replay_json(p.to_str().unwrap(), &["--analyze"]);
    assert_eq!(n(&v["connections"]), 1_200);
    assert_eq!(v["per_connection"].as_array().unwrap().len(), 1_000);
    assert_eq!(n(&v["per_connection_omitted"]), 200);
    assert_eq!(n(&v["sides"]["client"]["frames"]["SETTINGS"]), 1_200);
    assert_eq!(n(&v["sides"]["client"]["writes"]), 1_200);
    assert_eq!(
        n(&v["sides"]["client"]["frames_per_write"]["histogram"]["1"]),
        1_200
    );
    // Phases of a second each: every connection in its own phase.
    let v = replay_json(p.to_str().unwrap(), &["--every", "1s"]);
    let phases = v["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 1_000, "capped at 1000 phases");
    assert_eq!(
        n(&v["anomalies"]["phases-capped"]),
        200 * 2,
        "a write and a frame each"
    );
    assert_eq!(
        n(&v["limits"]["phase_events_dropped"]),
        200,
        "one write each"
    );
    assert_eq!(n(&phases[0]["connections"]), 1);
    assert_eq!(n(&phases[999]["sides"]["client"]["frames"]["SETTINGS"]), 1);
}

/// A table of more than 8 phases (`--every --wide`) comes in blocks of 8 (docs/decisions.md
/// 41): each phase's column once, the whole capture's column once, one line per phase under
/// the tables, and the same phases as the JSON.
#[test]
fn a_table_of_many_phases_comes_in_blocks_of_eight() {
    let f = capture("grpcgo-article.pcap");
    let f = f.to_str().unwrap();
    let v = replay_json(f, &["--every", "200ms"]);
    let phases = v["phases"].as_array().unwrap();
    assert!(phases.len() > 16, "{} phases", phases.len());
    let out = run(&["replay", f, "--every", "200ms", "--wide"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    // Blocks of at most 8 phases, fewer when 8 do not fit in 100 columns.
    let blocks = text.matches("│ HEADERS ").count();
    assert!(blocks >= phases.len().div_ceil(8), "{blocks} blocks");
    assert_eq!(crate::util::too_wide(&text), None);
    // The whole capture's column: in the first block only (as many tables as without blocks).
    // (A header cell `all`; the row "all frames per call" is not one.)
    let alls = |t: &str| {
        t.lines()
            .filter(|l| l.split('│').any(|c| c.trim() == "all"))
            .count()
    };
    let whole = alls(&text);
    let one_block = run(&["replay", f, "--every", "10s", "--wide"]);
    let one_block = String::from_utf8(one_block.stdout).unwrap();
    assert_eq!(whole, alls(&one_block));
    // Every phase: in one block's tables, as often as phase 1 (a block of phases without a
    // gRPC call has no gRPC table), and one line under the tables.
    let per = text.matches("│ phase 1 ").count();
    assert!(per > 0);
    for p in phases {
        let name = p["name"].as_str().unwrap();
        let k = text.matches(&format!("│ {name} ")).count();
        assert!(k >= 2 && k <= per, "{name}: {k} of {per}");
        assert_eq!(text.matches(&format!("\n{name}: ")).count(), 1, "{name}");
    }
}

/// A raw-IP pcap of `n` HTTP/2 connections open at once: all open (handshake, preface and
/// SETTINGS), then one call on each (a GET and its 200), then all close.
fn concurrent_connections(n: u32) -> Vec<u8> {
    let mut f = Vec::new();
    for v in [0xa1b2c3d4u32, 0, 0, 0, 65535, 101] {
        f.extend_from_slice(&v.to_le_bytes());
    }
    f[4..8].copy_from_slice(&[2, 0, 4, 0]);
    let push = |f: &mut Vec<u8>, p: Vec<u8>, t: u32| {
        for v in [t, 0, p.len() as u32, p.len() as u32] {
            f.extend_from_slice(&v.to_le_bytes());
        }
        f.extend_from_slice(&p);
    };
    let mut h2 = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    h2.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
    // HEADERS, END_STREAM | END_HEADERS, stream 1: GET http / ; then :status 200.
    let req = [0, 0, 3, 1, 5, 0, 0, 0, 1, 0x82, 0x86, 0x84];
    let resp = [0, 0, 1, 1, 5, 0, 0, 0, 1, 0x88];
    let port = |i: u32| 20_000 + i as u16;
    let t = 1_700_000_000u32;
    for i in 0..n {
        push(&mut f, tcp(port(i), 80, 1000, 0x02, &[]), t);
        push(&mut f, tcp(80, port(i), 5000, 0x12, &[]), t);
        push(&mut f, tcp(port(i), 80, 1001, 0x18, &h2), t);
    }
    let c = 1001 + h2.len() as u32;
    for i in 0..n {
        push(&mut f, tcp(port(i), 80, c, 0x18, &req), t + 1);
        push(&mut f, tcp(80, port(i), 5001, 0x18, &resp), t + 1);
    }
    for i in 0..n {
        push(
            &mut f,
            tcp(port(i), 80, c + req.len() as u32, 0x11, &[]),
            t + 2,
        );
        push(
            &mut f,
            tcp(80, port(i), 5001 + resp.len() as u32, 0x11, &[]),
            t + 2,
        );
    }
    f
}

/// More connections open at once than `--max-connections` tracks: each is evicted and comes
/// back, and is still one connection (issue 20: 10,000 concurrent connections were 20,000).
#[test]
fn concurrent_connections_beyond_the_cap_are_each_counted_once() {
    let p = tmp("concurrent.pcap", &concurrent_connections(3_000));
    let v = replay_json(p.to_str().unwrap(), &["--max-connections", "100"]);
    assert_eq!(n(&v["connections"]), 3_000, "{}", v["tcp"]);
    assert_eq!(n(&v["calls"]), 3_000);
    assert!(n(&v["tcp"]["evicted"]) >= 2_900, "{}", v["tcp"]);
    assert_eq!(n(&v["tcp"]["resumed"]), n(&v["tcp"]["evicted"]));
    assert_eq!(n(&v["tcp"]["evicted_forgotten"]), 0);
    assert_eq!(n(&v["sides"]["server"]["frames"]["HEADERS"]), 3_000);
    // The same with the analysis: calls counted once too.
    let v = replay_json(
        p.to_str().unwrap(),
        &["--max-connections", "100", "--analyze"],
    );
    assert_eq!(n(&v["connections"]), 3_000);
    assert_eq!(n(&v["concurrency"]["calls"]), 3_000);
}
