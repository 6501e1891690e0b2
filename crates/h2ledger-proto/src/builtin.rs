//! Schemas every run knows without `--proto`: gRPC's health checking (`grpc.health.v1`), server
//! reflection (`grpc.reflection.v1` and `v1alpha`) and the rich error model
//! (`google.rpc.Status` and the `error_details.proto` types its `details` carry in the
//! `grpc-status-details-bin` trailer).
//!
//! The `.proto` texts are shipped under `proto/` as published, Apache-2.0 (proto/README.md
//! says where each comes from), embedded here and compiled by protox once per process, on
//! first use. A user's schema wins: a built-in file is left out when the pool already has a
//! file of its name or any of its messages, enums or services.

use std::sync::OnceLock;

use prost_reflect::DescriptorPool;
use protox::file::{ChainFileResolver, File, FileResolver, GoogleFileResolver};

/// The built-in files: import name and text.
const FILES: &[(&str, &str)] = &[
    (
        "grpc/health/v1/health.proto",
        include_str!("../proto/grpc/health/v1/health.proto"),
    ),
    (
        "grpc/reflection/v1/reflection.proto",
        include_str!("../proto/grpc/reflection/v1/reflection.proto"),
    ),
    (
        "grpc/reflection/v1alpha/reflection.proto",
        include_str!("../proto/grpc/reflection/v1alpha/reflection.proto"),
    ),
    (
        "google/rpc/status.proto",
        include_str!("../proto/google/rpc/status.proto"),
    ),
    (
        "google/rpc/error_details.proto",
        include_str!("../proto/google/rpc/error_details.proto"),
    ),
];

/// The import names of the built-in files.
pub fn builtin_files() -> impl Iterator<Item = &'static str> {
    FILES.iter().map(|(n, _)| *n)
}

struct Embedded;

impl FileResolver for Embedded {
    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        match FILES.iter().find(|(n, _)| *n == name) {
            Some((n, text)) => File::from_source(n, text),
            None => Err(protox::Error::file_not_found(name)),
        }
    }
}

/// The built-in files compiled, with the well-known types they import, once per process.
fn compiled() -> &'static DescriptorPool {
    static POOL: OnceLock<DescriptorPool> = OnceLock::new();
    POOL.get_or_init(|| {
        let mut chain = ChainFileResolver::new();
        chain.add(Embedded);
        chain.add(GoogleFileResolver::new());
        let mut c = protox::Compiler::with_file_resolver(chain);
        c.include_imports(true);
        for (name, _) in FILES {
            // The texts are fixed and tested (tests below): a failure is a build defect.
            c.open_file(name).expect("built-in .proto compiles");
        }
        c.descriptor_pool()
    })
}

/// Adds the built-in files (and the well-known types they import) that `pool` lacks and
/// whose names do not clash with what is already there.
pub(crate) fn add_to(pool: &mut DescriptorPool) {
    for file in compiled().files() {
        if pool.get_file_by_name(file.name()).is_some() {
            continue;
        }
        let clash = file
            .messages()
            .any(|m| pool.get_message_by_name(m.full_name()).is_some())
            || file
                .enums()
                .any(|e| pool.get_enum_by_name(e.full_name()).is_some())
            || file
                .services()
                .any(|s| pool.get_service_by_name(s.full_name()).is_some());
        let deps_there = file
            .dependencies()
            .all(|d| pool.get_file_by_name(d.name()).is_some());
        if clash || !deps_there {
            continue;
        }
        // Checked above; prost-reflect refuses anything else without changing the pool.
        let _ = pool.add_file_descriptor_proto(file.file_descriptor_proto().clone());
    }
}
