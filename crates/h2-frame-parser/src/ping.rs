//! Known PING payloads.
//!
//! PING payloads are opaque, but implementations use fixed ones, which tells a capture's
//! reader *why* a PING was sent: a BDP (bandwidth-delay product) probe for flow-control
//! window tuning, a keepalive, or a graceful-shutdown round trip. This table names every
//! fingerprint we know, with the place in the sending project where the constant lives.
//!
//! Verified against the projects' sources (via a code search of public repositories):
//! grpc-go `bdpPing` and `goAwayPing`, grpc-go's keepalive `&ping{data: [8]byte{}}`, h2's
//! `USER_PAYLOAD` and `SHUTDOWN_PAYLOAD` (found in `src/frame/ping.rs`, exposed as
//! `Ping::USER`/`Ping::SHUTDOWN` and used by `src/proto/ping_pong.rs`; hyper's HTTP/2 keepalive
//! tests expect the same bytes in their PONGs), and grpc-java's `BDP_MEASUREMENT_PING = 1234`
//! (`AbstractNettyHandler`), `USER_PING_PAYLOAD = 1111` (`NettyClientHandler`),
//! `KEEPALIVE_PING = 0xDEAD` and `GRACEFUL_SHUTDOWN_PING = 0x97ACEF001` (`NettyServerHandler`),
//! each written as a big-endian `long`. Not verified: that nghttp2 and Kestrel send zeros.

/// One known PING payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KnownPing {
    /// Short stable label for reports, e.g. `"grpc-go-bdp"`.
    pub label: &'static str,
    /// The 8-octet payload.
    pub payload: [u8; 8],
    /// Where the constant lives: project and file (and constant name).
    pub source: &'static str,
    /// Whether the payload is used for BDP / flow-control window estimation.
    pub bdp: bool,
}

/// grpc-go's BDP estimator ping, `internal/transport/bdp_estimator.go` `bdpPing`.
pub const GRPC_GO_BDP: [u8; 8] = [0x02, 0x04, 0x10, 0x10, 0x09, 0x0e, 0x07, 0x07];

const fn be(v: u64) -> [u8; 8] {
    v.to_be_bytes()
}

/// Every known payload. Payloads are unique, so [`classify`] is unambiguous.
pub static KNOWN_PINGS: &[KnownPing] = &[
    KnownPing {
        label: "grpc-go-bdp",
        payload: GRPC_GO_BDP,
        source: "grpc-go internal/transport/bdp_estimator.go (bdpPing)",
        bdp: true,
    },
    KnownPing {
        label: "zero",
        payload: [0; 8],
        source: "grpc-go keepalive / nghttp2 / Kestrel",
        bdp: false,
    },
    KnownPing {
        label: "grpc-go-goaway",
        payload: [0x01, 0x06, 0x01, 0x08, 0x00, 0x03, 0x03, 0x09],
        source: "grpc-go internal/transport/http2_server.go (goAwayPing)",
        bdp: false,
    },
    // Shared between hyper's BDP estimator and its keepalive: both go through h2's single
    // user-ping slot, so this payload alone cannot tell the two apart.
    KnownPing {
        label: "h2-user",
        payload: [0x3b, 0x7c, 0xdb, 0x7a, 0x0b, 0x87, 0x16, 0xb4],
        source: "h2 src/frame/ping.rs (USER_PAYLOAD, used by src/proto/ping_pong.rs; \
                 hyper BDP estimator and keepalive)",
        bdp: true,
    },
    KnownPing {
        label: "h2-shutdown",
        payload: [0x0b, 0x7b, 0xa2, 0xf0, 0x8b, 0x9b, 0xfe, 0x54],
        source: "h2 src/frame/ping.rs (SHUTDOWN_PAYLOAD)",
        bdp: false,
    },
    KnownPing {
        label: "grpc-java-bdp",
        payload: be(1234),
        source: "grpc-java netty AbstractNettyHandler.java (BDP_MEASUREMENT_PING = 1234)",
        bdp: true,
    },
    KnownPing {
        label: "grpc-java-user",
        payload: be(1111),
        source: "grpc-java netty NettyClientHandler.java (USER_PING_PAYLOAD = 1111)",
        bdp: false,
    },
    KnownPing {
        label: "grpc-java-keepalive",
        payload: be(0xdead),
        source: "grpc-java netty NettyServerHandler.java (KEEPALIVE_PING = 0xDEAD)",
        bdp: false,
    },
    KnownPing {
        label: "grpc-java-shutdown",
        payload: be(0x9_7ace_f001),
        source: "grpc-java netty NettyServerHandler.java (GRACEFUL_SHUTDOWN_PING)",
        bdp: false,
    },
];

/// The known payload equal to `payload`, if any.
pub fn classify(payload: &[u8; 8]) -> Option<&'static KnownPing> {
    KNOWN_PINGS.iter().find(|k| &k.payload == payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classify_known() {
        assert_eq!(classify(&GRPC_GO_BDP).map(|k| k.label), Some("grpc-go-bdp"));
        assert!(classify(&GRPC_GO_BDP).unwrap().bdp);
        assert_eq!(classify(&[0; 8]).map(|k| k.label), Some("zero"));
        let java_bdp = [0, 0, 0, 0, 0, 0, 0x04, 0xd2];
        assert_eq!(
            classify(&java_bdp).map(|k| (k.label, k.bdp)),
            Some(("grpc-java-bdp", true))
        );
        let h2_user = [0x3b, 0x7c, 0xdb, 0x7a, 0x0b, 0x87, 0x16, 0xb4];
        assert_eq!(classify(&h2_user).map(|k| k.label), Some("h2-user"));
        assert_eq!(classify(&[1, 2, 3, 4, 5, 6, 7, 8]), None);
    }

    #[test]
    fn payloads_and_labels_unique() {
        for (i, a) in KNOWN_PINGS.iter().enumerate() {
            for b in &KNOWN_PINGS[i + 1..] {
                assert_ne!(a.payload, b.payload, "{} / {}", a.label, b.label);
                assert_ne!(a.label, b.label);
            }
        }
    }
}
