//! Issue 23 items 3 and 4: h2ledger as a service. The systemd unit in dist/systemd passes
//! `systemd-analyze verify` and holds only what the issue allows (capabilities, a dynamic
//! user, no new privileges, a read-only system, settings from an environment file, restart on
//! failure); run as the unit runs it (a user with only CAP_NET_RAW and CAP_NET_ADMIN as ambient
//! capabilities and no_new_privs), `sniff --metrics` captures and serves. The Prometheus rules
//! in dist/prometheus pass `promtool check rules` and their unit tests.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};

use crate::util::*;

fn need(tool: &str, test: &str) -> bool {
    if have(tool) {
        return true;
    }
    assert!(
        std::env::var("CI").map_or(true, |v| v != "true"),
        "{test}: {tool} is missing under CI (just test installs it)"
    );
    crate::util::skipped(&format!("SKIPPED {test}: needs {tool}"));
    false
}

fn unit() -> String {
    std::fs::read_to_string(repo().join("dist/systemd/h2ledger.service")).unwrap()
}

#[test]
fn the_unit_holds_what_the_issue_asks() {
    let u = unit();
    let lines: Vec<&str> = u.lines().map(str::trim).collect();
    for want in [
        "AmbientCapabilities=CAP_NET_RAW CAP_NET_ADMIN",
        "CapabilityBoundingSet=CAP_NET_RAW CAP_NET_ADMIN",
        "DynamicUser=yes",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "Restart=on-failure",
        "EnvironmentFile=/etc/default/h2ledger",
        "ExecStart=/usr/local/bin/h2ledger sniff -q -i ${H2LEDGER_INTERFACE} --metrics ${H2LEDGER_METRICS} $H2LEDGER_ARGS",
    ] {
        assert!(lines.contains(&want), "the unit lacks {want}");
    }
    assert!(!u.contains("User=root") && !u.contains("\nUser="));
    let env = std::fs::read_to_string(repo().join("dist/systemd/h2ledger.env")).unwrap();
    for var in ["H2LEDGER_INTERFACE=", "H2LEDGER_METRICS=", "H2LEDGER_ARGS="] {
        assert!(
            env.lines().any(|l| l.starts_with(var)),
            "the env file lacks {var}"
        );
    }
}

#[test]
fn systemd_analyze_verifies_the_unit() {
    if !need("systemd-analyze", "systemd_analyze_verifies_the_unit") {
        return;
    }
    let dir = scratch("unit");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("h2ledger.service");
    // The unit as `just install` writes it, with this build's binary.
    std::fs::write(&path, unit().replace("/usr/local/bin/h2ledger", bin())).unwrap();
    // --man=no: the man page h2ledger-sniff(1) is `just install`'s, not this checkout's.
    let out = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&path)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && err.trim().is_empty(),
        "systemd-analyze verify: {err}"
    );
    // It does complain about a mistake (so the check above means something).
    std::fs::write(&path, unit().replace("NoNewPrivileges", "NoNewPrivilege")).unwrap();
    let out = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("Unknown key"));
}

/// The unit's privileges without systemd: `nobody`, CAP_NET_RAW and CAP_NET_ADMIN as ambient
/// capabilities, no_new_privs. The sniff captures, serves its metrics, and says it dropped
/// the capabilities.
#[test]
fn sniff_runs_with_the_units_privileges() {
    if crate::live::skip_unless_root("sniff_runs_with_the_units_privileges")
        || !need("setpriv", "sniff_runs_with_the_units_privileges")
    {
        return;
    }
    let b = bin_for_nobody();
    let mut child = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=+net_raw,+net_admin",
            "--ambient-caps=+net_raw,+net_admin",
            "--no-new-privs",
            "--",
        ])
        .arg(&b)
        .args([
            "sniff",
            "-q",
            "-i",
            "lo",
            "--metrics",
            "127.0.0.1:0",
            "--duration",
            "20s",
        ])
        .args(["tcp", "port", "9"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let (mut first, mut second) = (String::new(), String::new());
    err.read_line(&mut first).unwrap();
    err.read_line(&mut second).unwrap();
    let addr = first
        .trim()
        .strip_prefix("h2ledger: metrics on http://")
        .and_then(|s| s.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("{first}"))
        .to_string();
    assert!(second.contains("listening on lo"), "{second}");
    assert!(second.contains("capabilities dropped"), "{second}");
    let mut c = std::net::TcpStream::connect(&addr).unwrap();
    c.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
    let mut page = String::new();
    c.read_to_string(&mut page).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(page.starts_with("HTTP/1.1 200 OK"), "{page}");
    assert!(page.contains("\nh2ledger_build_info{version=\""), "{page}");
}

#[test]
fn promtool_checks_and_tests_the_rules() {
    if !need("promtool", "promtool_checks_and_tests_the_rules") {
        return;
    }
    let dir = repo().join("dist/prometheus");
    let runs: [&[&str]; 2] = [
        &["check", "rules", "h2ledger.rules.yml"],
        &["test", "rules", "h2ledger.rules.test.yml"],
    ];
    for args in runs {
        let out = Command::new("promtool")
            .args(args)
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "promtool {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
