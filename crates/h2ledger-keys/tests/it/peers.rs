//! The Go test peers, built once per test run into the test's temporary directory.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub struct Peers {
    /// go-tls-keys with its symbol table.
    pub full: PathBuf,
    /// go-tls-keys built with -ldflags "-s -w".
    pub stripped: PathBuf,
    /// A Go program that does not link crypto/tls.
    pub no_tls: PathBuf,
}

/// Skips the calling test (prints why and returns `None`), or fails it under CI.
pub fn skip(why: &str) -> Option<Peers> {
    if std::env::var_os("CI").is_some() {
        panic!("under CI this test must run: {why}");
    }
    eprintln!("skipped: {why}");
    None
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

const NO_TLS: &str =
    "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"no tls here\") }\n";

fn build() -> Result<(PathBuf, PathBuf, PathBuf), String> {
    if Command::new("go").arg("version").output().is_err() {
        return Err("no `go` on PATH (apt-get install golang-go)".into());
    }
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("go-peers");
    let script = repo().join("scripts/build-go-tls-keys.sh");
    let r = Command::new(&script)
        .arg(&out)
        .output()
        .map_err(|e| format!("{}: {e}", script.display()))?;
    if !r.status.success() {
        return Err(format!(
            "{} failed: {}",
            script.display(),
            String::from_utf8_lossy(&r.stderr)
        ));
    }
    let src = out.join("no-tls.go");
    std::fs::write(&src, NO_TLS).map_err(|e| e.to_string())?;
    let no_tls = out.join("go-no-tls");
    let r = Command::new("go")
        .args(["build", "-o"])
        .arg(&no_tls)
        .arg(&src)
        .env("GO111MODULE", "off")
        .env("GOFLAGS", "")
        .env("GOCACHE", out.join(".gocache"))
        .output()
        .map_err(|e| e.to_string())?;
    if !r.status.success() {
        return Err(format!(
            "go build no-tls.go: {}",
            String::from_utf8_lossy(&r.stderr)
        ));
    }
    Ok((
        out.join("go-tls-keys"),
        out.join("go-tls-keys-stripped"),
        no_tls,
    ))
}

/// The peers, or `None` after printing why they cannot be built (failing under CI).
pub fn peers() -> Option<Peers> {
    static BUILT: OnceLock<Result<(PathBuf, PathBuf, PathBuf), String>> = OnceLock::new();
    match BUILT.get_or_init(build) {
        Ok((full, stripped, no_tls)) => Some(Peers {
            full: full.clone(),
            stripped: stripped.clone(),
            no_tls: no_tls.clone(),
        }),
        Err(why) => skip(why),
    }
}

/// grpcgo-tls (crates/h2ledger-keys/testdata/grpcgo-tls) built with -s -w against Debian's
/// grpc-go, or `None` after printing why (failing under CI).
pub fn grpc_peer() -> Option<PathBuf> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let built = BUILT.get_or_init(|| {
        if Command::new("go").arg("version").output().is_err() {
            return Err("no `go` on PATH (apt-get install golang-go)".into());
        }
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("go-peers");
        let script = repo().join("scripts/build-grpcgo-tls.sh");
        let r = Command::new(&script)
            .arg(&out)
            .output()
            .map_err(|e| format!("{}: {e}", script.display()))?;
        if !r.status.success() {
            return Err(format!(
                "{} failed: {}",
                script.display(),
                String::from_utf8_lossy(&r.stderr)
            ));
        }
        Ok(out.join("grpcgo-tls-stripped"))
    });
    match built {
        Ok(p) => Some(p.clone()),
        Err(why) => {
            skip(why);
            None
        }
    }
}
