# h2ledger tasks. `just` comes from `cargo install just`.
# Every recipe installs the Debian packages it needs: as root through apt-get, otherwise it
# prints the exact command to run.

set shell := ["bash", "-euo", "pipefail", "-c"]

# Packages by purpose.
build_pkgs := "libpcap-dev"
test_pkgs := "libpcap-dev tshark tcpdump nghttp2-client nghttp2-server python3-grpcio golang-go golang-google-grpc-dev golang-golang-x-net-dev nodejs python3-h2"
bench_pkgs := "libpcap-dev tshark tcpdump nghttp2-client nghttp2-server"

default:
    @just --list

# The main job: the embedded demo (a tonic health server and client, sniffed live).
demo *ARGS: (deps build_pkgs)
    cargo build --release --bin h2ledger
    scripts/run-privileged.sh target/release/h2ledger demo {{ARGS}}

# Every test: unit, HPACK stories, golden captures, tshark differential, live capture (as root).
test: (deps test_pkgs)
    #!/usr/bin/env bash
    set -euo pipefail
    log=$(mktemp)
    trap 'rm -f "$log"' EXIT
    { cargo test --workspace --all-targets && cargo test --workspace --doc; } 2>&1 | tee "$log"
    # One closing line for all the test binaries above.
    awk '/^test result:/ { p += $4; f += $6 } END { printf "summary: %d passed, %d failed\n", p, f }' "$log"

# fmt and clippy, as CI runs them.
lint: (deps build_pkgs)
    cargo fmt --all -- --check
    cargo clippy --workspace --all-targets -- -D warnings

# Replay a capture: just replay captures/grpcgo-article.pcap --format json
replay *ARGS: (deps build_pkgs)
    cargo run --release --quiet --bin h2ledger -- replay {{ARGS}}

# Remake every capture in captures/ (root: tcpdump and network namespaces).
captures: (deps test_pkgs)
    scripts/make-captures.sh

# Speed against tcpdump's read floor and tshark, on a generated ~1M-request capture.
bench: (deps bench_pkgs)
    scripts/bench.sh

# Run each fuzz target for SECONDS (needs `cargo install cargo-fuzz`; stable Rust via RUSTC_BOOTSTRAP).
fuzz SECONDS="60":
    scripts/fuzz.sh {{SECONDS}}

# Install missing Debian packages (root), or print the command to do it.
deps PKGS:
    #!/usr/bin/env bash
    set -euo pipefail
    missing=()
    for p in {{PKGS}}; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && exit 0
    if [ "$(id -u)" -eq 0 ]; then
        echo "installing: ${missing[*]}" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    else
        echo "missing Debian packages: ${missing[*]}" >&2
        echo "install them with:  sudo apt-get install -y ${missing[*]}" >&2
        exit 1
    fi
