# h2ledger tasks. `just` comes from `cargo install just`.
# Every recipe installs the Debian packages it needs: as root through apt-get, otherwise it
# prints the exact command to run.

set shell := ["bash", "-euo", "pipefail", "-c"]

# Packages by purpose.
build_pkgs := "libpcap-dev"
demo_pkgs := "libpcap-dev golang-go golang-google-grpc-dev python3-grpcio"
test_pkgs := "libpcap-dev tshark jq tcpdump nghttp2-client nghttp2-server iproute2 python3-venv python3-grpcio golang-go golang-google-grpc-dev golang-golang-x-net-dev nodejs python3-h2 curl openssl zsh fish groff-base prometheus systemd nginx-light"
bench_pkgs := "libpcap-dev tshark tcpdump nghttp2-client nghttp2-server curl openssl zstd jq"
spark_pkgs := "libpcap-dev tcpdump nghttp2-client nghttp2-server wireshark-common openjdk-17-jre-headless python3-venv"
soak_pkgs := "libpcap-dev tcpdump nghttp2-client nghttp2-server time"

default:
    @just --list

# Builds what is missing and reuses it afterwards: h2ledger, the grpc-go workload (GOPATH build
# against Debian's grpc-go), the tonic workload only for --impl tonic/all; the workloads land
# next to the binary, where `h2ledger demo` looks for them.
# The main job: the article's grpc-go program sniffed live (--impl all: also grpcio and tonic).
demo *ARGS: (deps demo_pkgs)
    #!/usr/bin/env bash
    set -euo pipefail
    out=${CARGO_TARGET_DIR:-target}/release
    say() { echo "just demo: $*" >&2; }
    go_src=crates/h2ledger-workload/grpcgo/main.go
    go_pid=
    if [ ! -x "$out/h2ledger-grpcgo" ] || [ "$go_src" -nt "$out/h2ledger-grpcgo" ]; then
        say "building the grpc-go workload in the background (go build, GOPATH mode, Debian's golang-google-grpc-dev; under 1.5 minutes the first time)"
        go_log=$(mktemp)
        scripts/build-grpcgo-demo.sh "$out" >"$go_log" 2>&1 &
        go_pid=$!
    fi
    say "building h2ledger (cargo build --release: 2 to 6 minutes from scratch on 2 cores, a second when up to date)"
    cargo build --release --bin h2ledger
    if [[ " {{ARGS}} " =~ [[:space:]=](tonic|all)[[:space:]] ]]; then
        say "building the tonic workload (cargo build --release -p h2ledger-workload)"
        cargo build --release -p h2ledger-workload
    fi
    if [ -n "$go_pid" ]; then
        wait "$go_pid" || { cat "$go_log" >&2; exit 1; }
        rm -f "$go_log"
        say "built $out/h2ledger-grpcgo"
    fi
    install -m 755 crates/h2ledger-workload/grpcio/h2ledger-grpcio.py "$out/"
    scripts/run-privileged.sh "$out/h2ledger" demo {{ARGS}}

# Every test: unit, HPACK stories, golden captures, tshark differential, live capture (as root).
test: (deps test_pkgs)
    #!/usr/bin/env bash
    set -euo pipefail
    log=$(mktemp)
    # Tests that cannot run here (not root, a tool missing) write why to this file; under
    # CI=true a skip fails its test instead.
    export H2LEDGER_SKIPS=$(mktemp)
    trap 'rm -f "$log" "$H2LEDGER_SKIPS"' EXIT
    # it::sql and it::parquet load calls into DuckDB and chDB (ClickHouse), both from PyPI.
    if ! python3 -c 'import duckdb, chdb' 2>/dev/null; then
        echo "installing from PyPI: duckdb chdb" >&2
        # Debian's own python3 refuses pip installs (PEP 668) unless told.
        { python3 -m pip install --quiet duckdb chdb 2>/dev/null ||
          python3 -m pip install --quiet --break-system-packages duckdb chdb; } || true
    fi
    # crates/h2ledger-keys' BoringSSL peer: PyPI's grpcio wheel in a venv (issue 37).
    if [ "$(id -u)" = 0 ]; then scripts/grpcio-wheel.sh || echo "grpcio wheel: not installed" >&2; fi
    # Every test binary runs (--no-fail-fast), and the summary line is printed even when one fails.
    set +e
    ( cargo test --workspace --all-targets --no-fail-fast; a=$?
      cargo test --workspace --doc --no-fail-fast; b=$?
      exit $(( a | b )) ) 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    set -e
    # One closing line for all the test binaries above, with the tests that skipped.
    skips=$(grep -c . "$H2LEDGER_SKIPS" || true)
    if [ "$skips" -gt 0 ]; then
        echo "skipped here (they run under CI=true, as root with every package):" >&2
        sed 's/^/  /' "$H2LEDGER_SKIPS" >&2
    fi
    awk -v s="$skips" '/^test result:/ { p += $4; f += $6 } END { printf "summary: %d passed, %d failed, %d skipped\n", p, f, s }' "$log"
    exit "$rc"

# fmt, clippy, the docs and the module graph, as CI runs them.
lint: (deps build_pkgs)
    cargo fmt --all -- --check
    cargo clippy --workspace --all-targets -- -D warnings
    RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
    python3 scripts/module-cycles.py

# Replay a capture: just replay captures/grpcgo-article.pcap --format json
replay *ARGS: (deps build_pkgs)
    cargo run --release --quiet --bin h2ledger -- replay {{ARGS}}

# Remake every capture in captures/ (root: tcpdump and network namespaces).
captures: (deps test_pkgs)
    scripts/make-captures.sh

# Speed against tcpdump's read floor and tshark, on a generated ~1M-request capture.
bench: (deps bench_pkgs)
    scripts/bench.sh
    scripts/bench-tls.sh
    scripts/bench-probe.sh
    scripts/bench-parquet.sh
    scripts/bench-jobs.sh
    scripts/bench-workers.sh
    scripts/bench-files.sh

# TLS decryption cost: replay of 100k tonic calls over TLS 1.3 (with the key log) vs the same over h2c.
bench-tls N="100000": (deps bench_pkgs)
    scripts/bench-tls.sh {{N}}

# The Spark job of dist/spark/ in local mode (local[2], PyPI's pyspark in a venv, Java 17) over
# 50 captures cut by `split` from a real 200-connection capture: its merged report against the
# one-machine replay, its Parquet and p99 SQL against the JSON lines (docs/spark.md; minutes).
spark: (deps spark_pkgs)
    scripts/spark-test.sh

# Remake the TLS captures (curl/openssl s_client against nghttpd, with key logs).
tls-captures: (deps test_pkgs)
    scripts/make-tls-captures.sh

# Peak memory of every view on growing inputs (1M/3M SYNs, 100k/300k connections, 1M/3M
# h2load requests), garbage cost per byte, and a live sniff of SECONDS (0 skips it).
soak SECONDS="600" *ARGS: (deps soak_pkgs)
    scripts/soak.sh --live {{SECONDS}} {{ARGS}}

# Every bound pushed (issue 36): 10,000 and 100,000 connections open at once (IPv4, IPv6,
# closed), 2^17 and 2^20 open streams, 1M unanswered PINGs, 1M RST_STREAM, a real nghttpd's
# window held until the close; every view, exact counts and peak RSS (scripts/stress.py;
# --quick for the small cases only). `just test` runs the small ones (tests/it/identity.rs).
# Then the hostile corpus against tshark (scripts/hostile.py: ~100 small captures; its quick
# cases run in `just test`, tests/it/hostile.rs).
stress *ARGS: (deps soak_pkgs)
    cargo build --release --bin h2ledger
    python3 scripts/stress.py {{ARGS}}
    python3 scripts/hostile.py

# Run each fuzz target (those matching TARGET if given) for SECONDS or until RUNS executions
# (cargo-fuzz, no sanitizer, stable Rust via RUSTC_BOOTSTRAP; scripts/fuzz.sh says more).
fuzz SECONDS="60" RUNS="0" TARGET="":
    scripts/fuzz.sh {{SECONDS}} {{RUNS}} {{TARGET}}

# Build the release binary and install it with its completions (bash, zsh, fish) and man pages
# under PREFIX (/usr/local as root, ~/.local otherwise), then grant capture permission
# (setcap cap_net_raw,cap_net_admin=eip; one sudo prompt when not root). Prints what went where.
# `KEYS_FROM=1 just install` also grants cap_sys_admin,cap_sys_ptrace, what `--keys-from PID`
# needs without root (a broad grant, hence asked for by name: docs/decisions.md #150).
install: (deps "libpcap-dev libcap2-bin")
    scripts/install.sh install

# Remove what `just install` put under PREFIX (the same default).
uninstall:
    scripts/install.sh uninstall

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
