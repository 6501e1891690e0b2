use std::time::Duration;

use h2ledger_workload::{run_phases, serve, Options, Phase};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_short_phase_all_calls_ok() {
    for adaptive in [true, false] {
        let opts = Options {
            adaptive_window: adaptive,
            ..Options::default()
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server = serve(listener, &opts).await;
        let phases = [Phase::new("short", 2, 20.0, 0.5)];
        let results = tokio::time::timeout(
            Duration::from_secs(20),
            run_phases(server.local_addr, &phases, &opts),
        )
        .await
        .expect("workload finished in time");
        server.shutdown().await.unwrap();
        assert_eq!(results.len(), 1);
        let r = &results[0];
        assert_eq!(r.name, "short");
        assert!(r.calls_made > 0, "no calls made: {r:?}");
        assert_eq!(r.calls_ok, r.calls_made, "failed calls: {r:?}");
        assert!(r.end >= r.start);
    }
}

#[test]
fn phase_parse() {
    let p = Phase::parse("fanout:8:3:2.5").unwrap();
    assert_eq!(p, Phase::new("fanout", 8, 3.0, 2.5));
    assert!(Phase::parse("x:1:0:1").is_err());
    assert!(Phase::parse("x:1:1").is_err());
}

/// `--tls`: the same calls over TLS (rustls, a fresh self-signed certificate), and `--calls`
/// ends the phase after exactly that many calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_and_a_call_budget() {
    let opts = Options {
        tls: Some(h2ledger_workload::Tls::self_signed().unwrap()),
        max_calls: Some(25),
        ..Options::default()
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = serve(listener, &opts).await;
    let phases = [Phase::new("budget", 4, 1_000_000.0, 10.0)];
    let results = tokio::time::timeout(
        Duration::from_secs(20),
        run_phases(server.local_addr, &phases, &opts),
    )
    .await
    .expect("workload finished in time");
    server.shutdown().await.unwrap();
    assert_eq!((results[0].calls_made, results[0].calls_ok), (25, 25));
}

#[test]
fn a_certificate_that_is_not_pem_is_an_error() {
    let e = h2ledger_workload::Tls::from_pem("nope".into(), "nope".into()).unwrap_err();
    assert!(e.contains("TLS certificate or key"), "{e}");
}
