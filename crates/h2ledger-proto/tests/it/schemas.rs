use std::path::PathBuf;

use h2ledger_proto::Schemas;

use crate::capture::repo;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("h2ledger-proto-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn a_syntax_error_is_one_line_with_file_line_and_column() {
    let d = tmp("syntax");
    std::fs::write(
        d.join("bad.proto"),
        "syntax = \"proto3\";\n\nmessage M {\n  int32 a = 1\n}\n",
    )
    .unwrap();
    let e = Schemas::builder()
        .proto(d.join("bad.proto"))
        .build()
        .unwrap_err();
    let s = e.to_string();
    assert!(!s.contains('\n'), "{s}");
    assert!(s.starts_with("bad.proto:5:1: "), "{s}");
    assert_eq!(e.line_col, Some((5, 1)));
}

#[test]
fn an_unknown_type_names_its_place() {
    let d = tmp("type");
    std::fs::write(
        d.join("t.proto"),
        "syntax = \"proto3\";\nmessage M {\n    Nope a = 1;\n}\n",
    )
    .unwrap();
    let s = Schemas::builder()
        .proto(d.join("t.proto"))
        .build()
        .unwrap_err()
        .to_string();
    assert!(s.starts_with("t.proto:3:5: "), "{s}");
    assert!(s.contains("Nope"), "{s}");
}

#[test]
fn a_missing_import_names_the_importing_line() {
    let d = tmp("import");
    std::fs::write(
        d.join("a.proto"),
        "syntax = \"proto3\";\nimport \"missing/b.proto\";\n",
    )
    .unwrap();
    let s = Schemas::builder()
        .proto(d.join("a.proto"))
        .build()
        .unwrap_err()
        .to_string();
    assert!(s.starts_with("a.proto:2:1: "), "{s}");
    assert!(s.contains("missing/b.proto"), "{s}");
}

#[test]
fn a_missing_file_and_a_bad_descriptor_set_are_one_line() {
    let s = Schemas::builder()
        .proto("/nonexistent/x.proto")
        .build()
        .unwrap_err()
        .to_string();
    assert!(s.starts_with("/nonexistent/x.proto: "), "{s}");
    let d = tmp("set");
    std::fs::write(d.join("set.pb"), b"\x0a\x05hello").unwrap();
    let s = Schemas::builder()
        .descriptor_set(d.join("set.pb"))
        .build()
        .unwrap_err()
        .to_string();
    assert!(s.contains("set.pb: not a usable FileDescriptorSet"), "{s}");
    assert!(!s.contains('\n'));
}

#[test]
fn directories_and_import_roots() {
    let d = tmp("dirs");
    std::fs::create_dir_all(d.join("api/v1")).unwrap();
    std::fs::create_dir_all(d.join("common")).unwrap();
    std::fs::write(
        d.join("common/c.proto"),
        "syntax = \"proto3\";\npackage common;\nmessage C { int32 x = 1; }\n",
    )
    .unwrap();
    std::fs::write(
        d.join("api/v1/s.proto"),
        "syntax = \"proto3\";\npackage api.v1;\nimport \"common/c.proto\";\nimport \"google/protobuf/timestamp.proto\";\n\
         message R { common.C c = 1; google.protobuf.Timestamp t = 2; }\n\
         service S { rpc Get(R) returns (common.C); rpc Watch(stream R) returns (stream R); }\n",
    )
    .unwrap();
    let s = Schemas::builder()
        .import_root(&d)
        .proto(d.join("api"))
        .build()
        .unwrap();
    let m = s.method("/api.v1.S/Get").unwrap();
    assert_eq!(
        (m.full_name, m.input, m.output),
        ("api.v1.S.Get", "api.v1.R", "common.C")
    );
    assert!(!m.client_streaming && !m.server_streaming);
    let w = s.method("/api.v1.S/Watch").unwrap();
    assert!(w.client_streaming && w.server_streaming);
    assert!(s.method("/api.v1.S/Nope").is_none());
    assert!(s.method("api.v1.S/Get").is_none());
    // Its 2, and the built-in health (2) and reflection v1 and v1alpha (1 each).
    assert_eq!(s.methods_len(), 2 + 4);
}

#[test]
fn descriptor_set_and_proto_together() {
    let data = repo().join("crates/h2ledger-proto/tests/data");
    let s = Schemas::builder()
        .descriptor_set(data.join("health.pb"))
        .proto(repo().join("captures/src/proto-everything/everything.proto"))
        .build()
        .unwrap();
    assert!(
        s.method("/grpc.health.v1.Health/Watch")
            .unwrap()
            .server_streaming
    );
    assert!(s.method("/h2ledger.test.v1.TestService/Bidi").is_some());
}
