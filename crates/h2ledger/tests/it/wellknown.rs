//! Issue 38 point 8: the schemas decoded without `--proto` (crates/h2ledger-proto/proto/), on
//! captures/proto-wellknown.pcap (grpc-go 1.33's health and reflection services and
//! `status.WithDetails`, scripts/make-wellknown-capture.sh): health Check and Watch and
//! reflection v1 and v1alpha decode by type with `--messages` alone; every call's
//! `grpc-status-details-bin` is a google.rpc.Status whose `message` equals the one the program
//! sent (its jsonpb text, as JSON values), in the JSON lines, the CSV and the table, with or
//! without `--messages`.

use serde_json::Value;

use crate::util::*;

const CAP: &str = "proto-wellknown.pcap";

fn calls(extra: &[&str]) -> Vec<Value> {
    let f = capture(CAP);
    let mut args = vec!["calls", f.to_str().unwrap(), "-T", "jsonl"];
    args.extend_from_slice(extra);
    let o = run(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    records(&o.stdout, "call")
}

fn types_and_messages(c: &Value, key: &str) -> Vec<(String, Value)> {
    c[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            assert!(m["anomaly"].is_null(), "{m}");
            (m["type"].as_str().unwrap().to_owned(), m["message"].clone())
        })
        .collect()
}

#[test]
fn health_and_reflection_decode_without_a_schema() {
    let calls = calls(&["--messages"]);
    let by_path = |p: &str| -> Vec<&Value> { calls.iter().filter(|c| c["method"] == p).collect() };
    let checks = by_path("/grpc.health.v1.Health/Check");
    assert_eq!(checks.len(), 2);
    assert_eq!(
        types_and_messages(checks[0], "response_messages"),
        [(
            "grpc.health.v1.HealthCheckResponse".into(),
            serde_json::json!({"status": "SERVING"})
        )]
    );
    assert_eq!(
        types_and_messages(checks[1], "request_messages"),
        [(
            "grpc.health.v1.HealthCheckRequest".into(),
            serde_json::json!({"service": "h2ledger.Missing"})
        )]
    );
    assert_eq!(checks[1]["grpc_status"], 5);
    let watch = by_path("/grpc.health.v1.Health/Watch");
    let statuses: Vec<Value> = types_and_messages(watch[0], "response_messages")
        .into_iter()
        .map(|(t, m)| {
            assert_eq!(t, "grpc.health.v1.HealthCheckResponse");
            m["status"].clone()
        })
        .collect();
    // What the client saw (proto-wellknown.workload.json): SERVING, then NOT_SERVING.
    let seen = read_json(&capture("proto-wellknown.workload.json"));
    assert_eq!(Value::from(statuses), seen["watch"]);
    for v in ["v1", "v1alpha"] {
        let path = format!("/grpc.reflection.{v}.ServerReflection/ServerReflectionInfo");
        let r = by_path(&path);
        assert_eq!(r.len(), 1, "{path}");
        let req = types_and_messages(r[0], "request_messages");
        let resp = types_and_messages(r[0], "response_messages");
        let ty = |m: &str| format!("grpc.reflection.{v}.{m}");
        assert_eq!(
            req,
            [
                (
                    ty("ServerReflectionRequest"),
                    serde_json::json!({"listServices": "*"})
                ),
                (
                    ty("ServerReflectionRequest"),
                    serde_json::json!({"fileContainingSymbol": "grpc.health.v1.Health"})
                ),
            ]
        );
        assert_eq!(resp.len(), 2);
        assert!(resp
            .iter()
            .all(|(t, _)| *t == ty("ServerReflectionResponse")));
        // The services the program's client counted: 3 (health, v1alpha, v1).
        let names: Vec<&str> = resp[0].1["listServicesResponse"]["service"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names.len() as u64,
            seen[path.as_str()][0].as_u64().unwrap(),
            "{names:?}"
        );
        assert!(names.contains(&"grpc.health.v1.Health"), "{names:?}");
        // One file descriptor, as bytes (base64) in canonical JSON.
        let fds = resp[1].1["fileDescriptorResponse"]["fileDescriptorProto"]
            .as_array()
            .unwrap();
        assert_eq!(fds.len(), 1);
        let fd = h2ledger_proto::base64_decode(fds[0].as_str().unwrap().as_bytes()).unwrap();
        assert!(
            fd.windows(14).any(|w| w == b"grpc.health.v1"),
            "the health file's descriptor"
        );
    }
}

#[test]
fn status_details_equal_what_the_server_sent() {
    let truth: Vec<Value> = std::fs::read_to_string(capture("proto-wellknown.truth.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(truth.len(), 3);
    for extra in [&[][..], &["--messages"][..]] {
        let calls = calls(extra);
        let with: Vec<&Value> = calls
            .iter()
            .filter(|c| !c["grpc_status_details"].is_null())
            .collect();
        assert_eq!(with.len(), truth.len(), "{extra:?}");
        for (c, t) in with.iter().zip(&truth) {
            assert_eq!(c["method"], t["method"]);
            let d = &c["grpc_status_details"];
            assert!(d["anomaly"].is_null(), "{d}");
            assert_eq!(d["type"], "google.rpc.Status");
            assert_eq!(d["message"], t["status"], "{}", c["method"]);
            assert_eq!(c["grpc_status"], t["status"]["code"]);
            assert_eq!(c["grpc_message"], t["status"]["message"]);
        }
        // Every standard error detail type is in the capture, decoded.
        let types: std::collections::BTreeSet<String> = with
            .iter()
            .flat_map(|c| {
                c["grpc_status_details"]["message"]["details"]
                    .as_array()
                    .unwrap()
            })
            .map(|d| {
                d["@type"]
                    .as_str()
                    .unwrap()
                    .rsplit('.')
                    .next()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        assert_eq!(
            types.into_iter().collect::<Vec<_>>(),
            [
                "BadRequest",
                "DebugInfo",
                "ErrorInfo",
                "Help",
                "LocalizedMessage",
                "PreconditionFailure",
                "QuotaFailure",
                "RequestInfo",
                "ResourceInfo",
                "RetryInfo"
            ]
        );
        assert!(calls
            .iter()
            .filter(|c| c["method"].as_str().unwrap().starts_with("/grpc."))
            .all(|c| c["grpc_status_details"].is_null()));
    }
}

#[test]
fn status_details_in_the_table_and_the_csv() {
    let f = capture(CAP);
    let o = run(&["calls", f.to_str().unwrap()]);
    assert!(o.status.success());
    let text = String::from_utf8(o.stdout).unwrap();
    assert_eq!(too_wide(&text), None, "{text}");
    let details: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("  ! details: "))
        .collect();
    assert_eq!(details.len(), 3, "{text}");
    assert!(details[0].starts_with("  ! details: ErrorInfo {"), "{text}");
    assert!(
        details[1].starts_with("  ! details: QuotaFailure {"),
        "{text}"
    );
    assert!(
        details[2].starts_with("  ! details: BadRequest {"),
        "{text}"
    );
    // Each under its own call's row.
    let lines: Vec<&str> = text.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        if l.starts_with("  ! details: ") {
            assert!(lines[i - 1].contains("/Fail"), "{text}");
        }
    }
    let wide = run(&["calls", f.to_str().unwrap(), "--wide"]);
    let wide = String::from_utf8(wide.stdout).unwrap();
    assert!(
        wide.contains(r#"RetryInfo {"retryDelay":"1.500s"}"#),
        "{wide}"
    );
    let csv = run(&["calls", f.to_str().unwrap(), "-T", "csv"]);
    assert!(csv.status.success());
    let csv = String::from_utf8(csv.stdout).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    assert!(header.contains(&"grpc_status_details"), "{header:?}");
    assert!(csv.contains("google.rpc.ErrorInfo"), "{csv}");
}
