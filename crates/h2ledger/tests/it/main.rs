//! Integration tests of the h2ledger binary, run as a user runs it.
//!
//! * `golden`: the real captures in captures/ against their golden ledgers, which were
//!   cross-checked with Wireshark's dissector (the command is in captures/README.md).
//! * `tshark`: the same comparison, with the reference recomputed from tshark now (when
//!   tshark is installed; CI installs it).
//! * `bounds`: a clock jump, `--every 1ns`, many connections: memory and output stay bounded,
//!   and every cap that is hit is said.
//! * `cli`: option values checked when parsed, options after the filter, `-f`, `-t` names.
//! * `bad_input`: broken, empty, foreign and truncated inputs: one clear line, never a panic.
//! * `hostile`: scripts/hostile.py's corpus of hostile captures (link types, fragments,
//!   tunnels, TCP edge cases, odd HTTP/2): survived, bounded, and equal to tshark.
//! * `analysis`: calls, writes per call, PING rounds, latency percentiles, phases, `frames`,
//!   against the workloads' own counts and tshark's per-frame timestamps.
//! * `grpcjs`: grpc-js from npm (captures/grpcjs): the ledger equals Wireshark's, each call's
//!   outcome the client's, the failures its own, the calls in the order they ended.
//! * `tls`: HTTP/2 over TLS decrypted with key logs (curl/nghttpd captures, the shared ones).
//! * `flow`: flow-control stalls and windows, gRPC messages (issue 11), against
//!   scripts/tshark-flow.py and the workloads' known answers.
//! * `formats`: issue 24, one capture rewritten as pcap (both byte orders, nanoseconds) and
//!   pcapng (both byte orders, two interfaces, secrets blocks), plain, gzip, zstd and piped:
//!   the same ledger and frame lines from each.
//! * `keys_from`: (root) `sniff --keys-from PID` on Go programs with no key log (HTTPS with
//!   TLS 1.3 and 1.2, with symbols and stripped; grpc-go over TLS): every request counted,
//!   every connection decrypted, the ledger equal to the program's own key log's, the
//!   pcapng's secrets blocks read back by `replay` and tshark, `--keys-out`.
//! * `live`: (root) `sniff` on real gRPC workloads (tonic; grpc-go when Go is installed),
//!   `sniff --write` then `replay`, and the demo's JSON.
//! * `snap`: insta snapshots of the table and JSON of `replay` (plain, `--analyze`,
//!   `--split-at`), `calls` and the head of `frames` for every capture in captures/ (rewrite them
//!   with `INSTA_UPDATE=always cargo test -p h2ledger --test it snap`).
//! * `doc_examples`: the `$ h2ledger ...` examples of README.md and docs/*.md, run and compared
//!   with the output the docs show (rewrite them with `H2LEDGER_BLESS_DOCS=1`).
//! * `schema`: docs/schema/*.json against the real output of every view.
//! * `internal_api`: docs/internal-api.md against crates/*/src: every path it names is
//!   defined and public, every signature it shows is the code's.
//! * `usage`: issue 12, the CLI as a tcpdump/tshark user runs it: `-r`, `-D`, `-c`, compressed
//!   captures, `--format table|json|jsonl` on every view, completions, the man page.
//! * `install`: issue 12 items 4 and 11: completions parsed by bash/zsh/fish, the man pages
//!   rendered by groff, `-D` listing lo (also as nobody), the progress bar on a pty and never
//!   without one.
//! * `views`: the `--plot` SVG and the live view of `sniff --every` (root), as a person sees
//!   them: rows per frame kind, round ticks, the legend, the header, no escapes without a tty.
//! * `findings`: issue 21, every finding id on a real capture where it must fire and one where
//!   it must not (captures/findings/, made by scripts/make-findings-captures.sh), no abuse id
//!   on any ordinary capture, the `finding` JSON line, the table and `--fail-on`.
//! * `messages`: issue 22, gRPC messages in `calls --messages` and `frames --messages`: the
//!   proto captures against the sending programs' ground truth, health and schema-less
//!   captures, schema errors, the bounds.
//! * `metrics`: issue 23, `replay -T prometheus` equal to the JSON on every capture, hostile
//!   paths, 10,000 paths under a fixed page size, and (root) Debian's prometheus scraping
//!   `sniff --metrics` while grpc-go runs, its API's figures equal to the final JSON.
//! * `service`: issue 23, the systemd unit (`systemd-analyze verify`, its privileges tried
//!   with setpriv as root) and the Prometheus rules (`promtool check rules`, `test rules`).
//! * `sql`: issue 23, `calls -T jsonl` into DuckDB and chDB (ClickHouse) with docs/sql.md's
//!   SQL, the answers checked against the lines.
//! * `filter`: issue 38, `calls -Y` and `frames -Y` equal to jq's `select(...)` over
//!   `-T jsonl` on every capture in captures/, their errors, and `-T csv` against the JSON.
//! * `users_saw`: issue 20, what a new user met: each point as the user runs it.
//! * `identity`: issue 36, what a connection is: other protocols beside HTTP/2 without
//!   `--port` (captures/not-http2/), connections evicted and back, more open streams than
//!   followed (the part of `just stress` that runs here).
//! * `split`: issue 39, `split` on every capture in captures/ (pcap, pcapng, secrets blocks):
//!   each connection in one shard, the shards' connections, calls, packets and frames adding
//!   up to the whole's; compressed and piped input; its errors.
//! * `merge`: issue 39, `merge` of the shards of every capture equal to its report, and of
//!   two captures equal to the report of the two merged by mergecap, byte for byte.
//! * `parquet`: issue 39, `calls`/`frames -T parquet` on every capture in captures/, read by
//!   DuckDB and chDB (ClickHouse): count, sums and distinct values equal jq's over `-T jsonl`.
//! * `workers`: issue 39, (root) `sniff --workers 2` on loopback under h2load with 100
//!   connections: every connection whole in one worker (its report and its `-w` file, read
//!   by tshark), the packets spread, the merged report equal to the replay of the files,
//!   each connection's processes looked up; `-c N` over two workers reads and saves exactly
//!   N packets; `--metrics` scraped after the traffic equal to the one-worker page of the
//!   same packets; `--every` rows adding up to every call; started under traffic, no
//!   connection in two workers' files (no copy from before a handle joined).
//! * `real_captures`: captures of other projects in ../shared/real-captures, read in place
//!   (skipped when absent): each difference and observation of issue 8.

mod util;

mod analysis;
mod bad_input;
mod bounds;
mod cli;
mod doc_examples;
mod filter;
mod findings;
mod flow;
mod formats;
mod golden;
mod grpcjs;
mod hostile;
mod identity;
mod install;
mod internal_api;
mod keys_from;
mod live;
mod merge;
mod messages;
mod metrics;
mod parquet;
mod real_captures;
mod schema;
mod servers;
mod service;
mod snap;
mod split;
mod sql;
mod tls;
mod tshark;
mod usage;
mod users_saw;
mod views;
mod wellknown;
mod workers;
