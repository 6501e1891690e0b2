//! Issue 12 items 4 and 11: what an install puts in place and what a person sees at a terminal.
//! The completion scripts parse in their shells and name every subcommand, the man pages render,
//! `-D` lists the loopback device (also unprivileged), and the progress display is drawn on a
//! terminal (a pty from `script`) and never without one.

use std::process::{Command, Output};

use crate::util::*;

const F: &str = "grpcgo-article.pcap";
const SUBCOMMANDS: [&str; 7] = [
    "replay",
    "sniff",
    "calls",
    "frames",
    "demo",
    "completions",
    "man",
];

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "failed ({:?}): {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).expect("utf-8")
}

fn tmp(name: &str) -> std::path::PathBuf {
    let d = scratch("install");
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// `SHELL -n FILE`: the script parses (fish: `--no-execute`).
fn parses(shell: &str, script: &str) {
    let path = tmp(&format!("completions.{shell}"));
    std::fs::write(&path, script).unwrap();
    let flag = if shell == "fish" {
        "--no-execute"
    } else {
        "-n"
    };
    let o = Command::new(shell).arg(flag).arg(&path).output().unwrap();
    assert!(
        o.status.success() && o.stderr.is_empty(),
        "{shell} {flag}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn completions_parse_and_name_every_subcommand() {
    for shell in ["bash", "zsh", "fish"] {
        let script = ok(&run(&["completions", shell]));
        for sub in SUBCOMMANDS {
            assert!(script.contains(sub), "{shell}: no {sub}");
        }
        // Options of a subcommand, not only the names.
        assert!(script.contains("split-at"), "{shell}: no --split-at");
        if have(shell) {
            parses(shell, &script);
        } else {
            eprintln!("install: {shell} is not installed, its script is not parsed (apt-get install {shell})");
            assert!(shell != "bash", "bash is needed");
        }
    }
    let o = run(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn man_pages_are_roff_that_renders() {
    assert!(
        have("groff"),
        "groff is needed (apt-get install groff-base)"
    );
    let render = |roff: &str| {
        let mut c = Command::new("groff")
            .args(["-man", "-Tutf8", "-ww"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write as _;
        c.stdin.take().unwrap().write_all(roff.as_bytes()).unwrap();
        let o = c.wait_with_output().unwrap();
        let text = ok(&o);
        assert!(
            o.stderr.is_empty(),
            "groff warns: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        // groff's overstriking for bold, removed.
        let mut plain = String::new();
        for c in text.chars() {
            if c == '\u{8}' {
                plain.pop();
            } else {
                plain.push(c);
            }
        }
        plain
    };
    let main = ok(&run(&["man"]));
    assert!(
        main.starts_with(".ie") || main.contains(".TH h2ledger 1"),
        "{main}"
    );
    let page = render(&main);
    for want in [
        "NAME",
        "SYNOPSIS",
        "--list-interfaces",
        "h2ledger-replay(1)",
    ] {
        assert!(page.contains(want), "no {want} in:\n{page}");
    }
    let replay = render(&ok(&run(&["man", "replay"])));
    // man justifies lines: words may be two spaces apart.
    let words = replay.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("h2ledger replay"), "{replay}");
    assert!(replay.contains("--split-at"), "{replay}");
    let o = run(&["man", "nope"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("one of replay, sniff"));
    // --dir: every page, as `just install` puts them in man1.
    let dir = tmp("man1");
    let o = run(&["man", "--dir", dir.to_str().unwrap()]);
    ok(&o);
    for name in std::iter::once("h2ledger.1".to_string())
        .chain(SUBCOMMANDS.iter().map(|s| format!("h2ledger-{s}.1")))
    {
        let roff =
            std::fs::read_to_string(dir.join(&name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        render(&roff);
    }
}

/// `1.lo [Up, Running, Loopback] 127.0.0.1, ::1`, as tcpdump -D says it (plus addresses).
fn lists_lo(out: &str) {
    let lo = out
        .lines()
        .find(|l| {
            l.split_once('.')
                .is_some_and(|(_, rest)| rest.starts_with("lo "))
        })
        .unwrap_or_else(|| panic!("no lo in:\n{out}"));
    let (n, _) = lo.split_once('.').unwrap();
    assert!(n.parse::<u32>().is_ok_and(|n| n >= 1), "{lo}");
    assert!(lo.contains("Loopback]"), "{lo}");
    assert!(lo.contains("127.0.0.1"), "{lo}");
}

#[test]
fn list_interfaces_names_lo_without_a_subcommand() {
    lists_lo(&ok(&run(&["-D"])));
    lists_lo(&ok(&run(&["--list-interfaces"])));
    // Unprivileged: libpcap lists the devices of Linux without capture rights.
    if is_root() && have("setpriv") {
        let o = Command::new("setpriv")
            .args([
                "--reuid=nobody",
                "--regid=nogroup",
                "--clear-groups",
                "--inh-caps=-all",
            ])
            .arg(bin_for_nobody())
            .arg("-D")
            .output()
            .unwrap();
        lists_lo(&ok(&o));
    }
    // Neither -D nor a subcommand: the usage, exit 2.
    let o = run(&["-q"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("give a subcommand"));
}

/// `sh -c CMD` with stderr (and whatever CMD does not redirect) on a pty; what the pty showed.
fn on_a_pty(cmd: &str, term: &str) -> String {
    assert!(have("script"), "script is needed (util-linux)");
    let o = Command::new("script")
        .args(["-qec", cmd, "/dev/null"])
        .env("TERM", term)
        .output()
        .unwrap();
    assert!(o.status.success(), "{cmd}: {:?}", o.status);
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A size as the bar prints it (indicatif's binary bytes).
fn binary(n: u64) -> String {
    match n {
        0..1024 => format!("{n} B"),
        1024..1_048_576 => format!("{:.2} KiB", n as f64 / 1024.0),
        _ => format!("{:.2} MiB", n as f64 / 1_048_576.0),
    }
}

fn quoted(p: &std::path::Path) -> String {
    format!("'{}'", p.display())
}

#[test]
fn progress_on_a_terminal_only() {
    let (b, f) = (quoted(std::path::Path::new(bin())), quoted(&capture(F)));
    let size = std::fs::metadata(capture(F)).unwrap().len();
    // A file: bytes of the size, an ETA, the counts; cleared at the end (erase-line).
    let shown = on_a_pty(&format!("{b} replay {f} > /dev/null"), "xterm");
    assert!(shown.contains("ETA"), "{shown:?}");
    assert!(shown.contains(" packets, "), "{shown:?}");
    assert!(shown.contains(" frames"), "{shown:?}");
    let total = binary(size);
    assert!(shown.contains(&total), "no {total} in {shown:?}");
    assert!(shown.contains("\u{1b}[2K"), "not cleared: {shown:?}");
    // Compressed: the compressed bytes of the file's size.
    if have("gzip") {
        let gz = tmp("article.pcap.gz");
        let o = Command::new("sh")
            .args(["-c", &format!("gzip -c {f} > {}", quoted(&gz))])
            .status()
            .unwrap();
        assert!(o.success());
        let gz_size = std::fs::metadata(&gz).unwrap().len();
        let shown = on_a_pty(&format!("{b} calls {} > /dev/null", quoted(&gz)), "xterm");
        let total = binary(gz_size);
        assert!(shown.contains(&total), "no {total} in {shown:?}");
    }
    // Standard input has no size: a spinner with what was read.
    let shown = on_a_pty(&format!("{b} frames - < {f} > /dev/null"), "xterm");
    assert!(
        shown.contains(" read ") && shown.contains(" packets, "),
        "{shown:?}"
    );
    assert!(!shown.contains("ETA"), "{shown:?}");
    // Nothing with -q, with TERM=dumb, or when the records go to the same terminal.
    for (cmd, term) in [
        (format!("{b} -q replay {f} > /dev/null"), "xterm"),
        (format!("{b} replay -q {f} > /dev/null"), "xterm"),
        (format!("{b} replay {f} > /dev/null"), "dumb"),
        (format!("{b} frames {f} --max-frames 3"), "xterm"),
    ] {
        let shown = on_a_pty(&cmd, term);
        assert!(!shown.contains(" packets, "), "{cmd}: {shown:?}");
        assert!(!shown.contains("\u{1b}["), "{cmd}: {shown:?}");
    }
    // No terminal: not a byte of it on stderr.
    for args in [
        vec!["replay", capture(F).to_str().unwrap()],
        vec!["calls", capture(F).to_str().unwrap()],
    ] {
        let o = run(&args);
        ok(&o);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !err.contains('\u{1b}') && !err.contains(" packets, "),
            "{err:?}"
        );
    }
}

/// On a terminal the frames table fits 100 columns: a wider frame goes on, on lines that start
/// with its time, connection, side and stream, then `+` and its class (decision 100).
#[test]
fn frames_fit_a_terminal() {
    let b = bin();
    for f in [
        "grpcgo-article.pcap",
        "tonic-small-window.pcap",
        "hyper-h2.pcap",
    ] {
        let shown = on_a_pty(&format!("{b} frames {}", quoted(&capture(f))), "xterm");
        let lines: Vec<&str> = shown.lines().map(|l| l.trim_end_matches('\r')).collect();
        assert!(lines.len() > 10, "{f}: {shown}");
        let widest = lines.iter().map(|l| l.chars().count()).max().unwrap_or(0);
        assert!(widest <= 100, "{f}: {widest} columns");
        assert!(
            lines.iter().any(|l| l.contains("+HEADERS ")),
            "{f}: nothing wrapped"
        );
    }
    let article = quoted(&capture("grpcgo-article.pcap"));
    let shown = on_a_pty(&format!("{b} frames {article} --stream 0"), "xterm");
    let acks: Vec<&str> = shown.lines().filter(|l| l.contains("+PING_ACK ")).collect();
    assert!(!acks.is_empty(), "{shown}");
    assert!(
        acks.iter()
            .all(|l| l.contains("opaque_data=02 04 10 10 09 0e 07 07")),
        "{acks:?}"
    );
}
