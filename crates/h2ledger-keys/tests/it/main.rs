//! Integration tests of h2ledger-keys, one test binary.
//!
//! * `peers`: builds the Go test peers (captures/src/go-tls-keys, with and without symbols; a
//!   Go program without crypto/tls) once per run, with Debian's Go. Without `go` the tests
//!   that need them print why and pass, except under CI (`CI` set), where they fail.
//! * `binaries`: finding the probe point in those real binaries (symbol table and
//!   .gopclntab agree, the Go version, the one-line errors).
//! * `live`: attaching to the running peer (root only; skipped with a reason otherwise, failed
//!   under CI): every secret it wrote to its own key log is delivered, TLS 1.3 and 1.2,
//!   stripped and not; grpc-go over TLS (testdata/grpcgo-tls, Debian's grpc-go), stripped.
//! * `openssl`: OpenSSL and BoringSSL (issue 37): the probe points of Debian's libssl.so.3,
//!   node's static OpenSSL and grpcio's BoringSSL; call sites made to disagree are refused;
//!   live, curl/openssl s_server, Node http2 and grpcio, against their own key logs.

mod binaries;
mod live;
mod openssl;
mod peers;
