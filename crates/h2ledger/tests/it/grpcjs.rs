//! grpc-js (npm @grpc/grpc-js 1.14.7 on Node 20, captures/grpcjs, scripts/make-grpcjs-capture.sh):
//! server and client in one process. The ledger is Wireshark's; each call's outcome is what the
//! client saw; the failures are the ones it got; and `calls` lists each call in the order it
//! ended, the connection's first call too on a peer without BDP PINGs (decision 472).

use serde_json::Value;

use crate::util::{assert_ledger_eq, capture, n, read_json, records, replay_json, run};

fn file() -> String {
    capture("grpcjs/grpcjs.pcap").to_string_lossy().into_owned()
}

fn truth() -> Value {
    read_json(&capture("grpcjs/grpcjs.truth.json"))
}

/// The ledger equals Wireshark's (`grpcjs.tshark.json`), with and without `--port`.
#[test]
fn grpcjs_ledger_equals_tsharks() {
    let want = read_json(&capture("grpcjs/grpcjs.tshark.json"));
    let port = truth()["port"].as_u64().unwrap().to_string();
    assert_ledger_eq("grpcjs", &want, &replay_json(&file(), &[]));
    assert_ledger_eq("grpcjs", &want, &replay_json(&file(), &["--port", &port]));
}

/// Every call, in the order it ended at the client (the workload awaits each before the
/// next), with the outcome the client saw: its grpc-status, or for the two calls the client
/// gave up on (its deadline: DEADLINE_EXCEEDED; `cancel()`: CANCELLED) a RST_STREAM CANCEL of
/// the client's. The first call of each connection comes first: no BDP PING ever names it, so
/// nothing holds it back (decision 472).
#[test]
fn grpcjs_calls_are_what_the_client_saw_in_the_order_they_ended() {
    let out = run(&["calls", &file(), "-T", "jsonl"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let calls = records(&out.stdout, "call");
    let t = truth();
    let saw = t["calls"].as_array().unwrap();
    assert_eq!(calls.len() as u64, n(&t["calls_made"]));
    assert_eq!(calls.len(), saw.len());
    let order: Vec<(u64, u64)> = calls
        .iter()
        .map(|c| (n(&c["conn"]), n(&c["stream"])))
        .collect();
    let mut by_start = order.clone();
    by_start.sort_unstable();
    assert_eq!(order, by_start, "each call in the order it ended");
    for (c, s) in calls.iter().zip(saw) {
        assert_eq!(c["method"], s["method"], "{c}");
        match n(&s["status"]) {
            1 | 4 => {
                assert_eq!(c["reset_by"], "client", "{c}");
                assert_eq!(c["reset_code"], "CANCEL", "{c}");
            }
            code => assert_eq!(n(&c["grpc_status"]), code, "{c}"),
        }
    }
    // The second channel's calls were compressed with gzip by the client.
    for c in calls.iter().filter(|c| n(&c["conn"]) == 1) {
        assert_eq!(c["grpc_encoding"]["client"], "gzip", "{c}");
        assert_eq!(n(&c["compressed"]["client"]), 1, "{c}");
    }
}

/// `call-errors` counts the four calls that failed, each as the client saw it: NOT_FOUND,
/// INTERNAL, the deadline and the cancel (both RST_STREAM CANCEL, one at its grpc-timeout).
#[test]
fn grpcjs_failures_are_the_clients() {
    let v = replay_json(&file(), &[]);
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "call-errors")
        .expect("call-errors");
    let e = &f["evidence"];
    assert_eq!(n(&e["failed"]), 4, "{e}");
    assert_eq!(n(&e["grpc_not_found"]), 1, "{e}");
    assert_eq!(n(&e["grpc_internal"]), 1, "{e}");
    assert_eq!(n(&e["client_cancels"]), 2, "{e}");
    assert_eq!(n(&e["client_deadline_cancels"]), 1, "{e}");
}
