# Sourced by scripts/bench.sh and scripts/soak.sh: h2load captures against nghttpd on loopback.
# Expects: BENCH_DIR (where captures live), WORK (scratch), REGEN (1 = remake), the array PIDS
# (background processes to kill on exit) and the functions say and die.
# shellcheck shell=bash

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# make_capture NAME REQUESTS [BYTES [H2LOAD_FLAGS]]: BENCH_DIR/NAME.pcap and NAME.port,
# NAME.meta. nghttpd serves a small file (or, with BYTES, that many random bytes) without TLS on
# a free loopback port; tcpdump records h2load's REQUESTS requests (10 connections x 10
# concurrent streams, or H2LOAD_FLAGS). Retried with a 4x larger buffer if the kernel dropped
# packets, and on a new port if nghttpd could not bind.
make_capture() {
    local name=$1 n=$2 bytes=${3:-} pcap="$BENCH_DIR/$1.pcap" buf=65536 attempt port srv td drops
    local -a flags
    read -r -a flags <<<"${4:--c 10 -m 10}"
    local docroot="$BENCH_DIR/docroot${bytes:+-$name}"
    mkdir -p "$docroot"
    if [ -n "$bytes" ]; then
        [ "$(stat -c %s "$docroot/file" 2>/dev/null)" = "$bytes" ] || head -c "$bytes" /dev/urandom >"$docroot/file"
    else
        printf 'h2ledger bench payload: %s\n' "$(printf 'x%.0s' {1..40})" >"$docroot/file"
    fi
    for attempt in 1 2 3 4; do
        port=$(free_port)
        nghttpd --no-tls -a 127.0.0.1 -d "$docroot" "$port" >"$WORK/nghttpd.log" 2>&1 &
        srv=$!
        PIDS+=("$srv")
        local up=0
        for _ in $(seq 50); do
            if ! kill -0 "$srv" 2>/dev/null; then break; fi
            if python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null; then
                up=1; break
            fi
            sleep 0.1
        done
        if [ "$up" = 0 ]; then
            say "nghttpd did not come up on port $port, retrying: $(tail -1 "$WORK/nghttpd.log")"
            kill "$srv" 2>/dev/null || true; wait "$srv" 2>/dev/null || true
            continue
        fi
        say "capturing $n requests on 127.0.0.1:$port (tcpdump -B $buf)"
        tcpdump -i lo -w "$pcap" -B "$buf" --immediate-mode "tcp port $port" 2>"$WORK/tcpdump.log" &
        td=$!
        PIDS+=("$td")
        for _ in $(seq 100); do grep -q "listening on" "$WORK/tcpdump.log" && break; sleep 0.1; done
        local t0 t1
        t0=$(date +%s.%N)
        h2load -n "$n" "${flags[@]}" "http://127.0.0.1:$port/file" >"$WORK/h2load.log" 2>&1 \
            || { cat "$WORK/h2load.log" >&2; die "h2load failed"; }
        t1=$(date +%s.%N)
        sleep 1
        kill -INT "$td"; wait "$td" || true
        kill "$srv" 2>/dev/null || true; wait "$srv" 2>/dev/null || true
        drops=$(sed -n 's/^\([0-9]*\) packets\{0,1\} dropped by kernel.*/\1/p' "$WORK/tcpdump.log")
        say "  $(grep -E '^requests:' "$WORK/h2load.log")"
        say "  tcpdump: $(tr '\n' ' ' <"$WORK/tcpdump.log" | sed 's/.*listening[^)]*)[^0-9]*//')"
        say "  dropped by kernel: ${drops:-?}"
        if [ "${drops:-1}" = 0 ] && grep -q "succeeded, 0 failed, 0 errored" "$WORK/h2load.log"; then
            echo "$port" >"$BENCH_DIR/$name.port"
            {
                echo "requests=$n"
                echo "payload_bytes=${bytes:-small}"
                echo "h2load_flags=\"${flags[*]}\""
                echo "port=$port"
                echo "tcpdump_buffer_kib=$buf"
                echo "drops=$drops"
                echo "h2load_seconds=$(echo "$t1 - $t0" | bc -l 2>/dev/null || python3 -c "print($t1 - $t0)")"
                echo "h2load_requests=\"$(grep -E '^requests:' "$WORK/h2load.log")\""
                echo "made=\"$(date -u +%FT%TZ)\""
            } >"$BENCH_DIR/$name.meta"
            return 0
        fi
        say "  retrying (drops or failed requests)"
        buf=$((buf * 4))
    done
    die "could not make $name without drops"
}

# ensure_capture NAME REQUESTS [BYTES [H2LOAD_FLAGS]]: make_capture unless it is already made.
ensure_capture() {
    local name=$1 n=$2
    if [ "$REGEN" = 1 ] || [ ! -s "$BENCH_DIR/$name.pcap" ] || [ ! -s "$BENCH_DIR/$name.port" ]; then
        make_capture "$@"
    else
        say "reusing $BENCH_DIR/$name.pcap (--regen to remake)"
    fi
}

