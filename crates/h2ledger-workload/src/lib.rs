//! gRPC health-check workload used to generate captures and to drive the live demo.
//!
//! One server ([`serve`]) exposing the stock `grpc.health.v1.Health` service
//! (tonic-health), and a client driver ([`run_phases`]) that issues
//! `Health/Check` calls over **one** HTTP/2 connection (a single tonic
//! `Channel`) from N concurrent callers per phase, each paced at a fixed rate.
//!
//! With [`Options::tls`] both ends speak TLS (rustls on ring through tonic, ALPN `h2`) and the
//! client writes its secrets to the key log named by `SSLKEYLOGFILE` (rustls' `KeyLogFile`), so
//! h2ledger and Wireshark can decrypt the capture. Everything else is unchanged: the same
//! calls, the same windows, the same connection.
#![warn(missing_docs)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::{Instant, MissedTickBehavior};
use tokio_stream::wrappers::TcpListenerStream;
use tonic::transport::{
    Certificate, Channel, ClientTlsConfig, Endpoint, Identity, Server, ServerTlsConfig,
};
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::HealthCheckRequest;

/// One phase of the client workload: `callers` concurrent callers, each
/// issuing `rate_per_caller` calls per second for `seconds` seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    /// The phase's name, as printed.
    pub name: String,
    /// Concurrent callers, released together.
    pub callers: usize,
    /// Calls per second of each caller.
    pub rate_per_caller: f64,
    /// How long the phase lasts.
    pub seconds: f64,
}

impl Phase {
    /// A phase of `callers` callers making `rate_per_caller` calls per second each for `seconds`.
    pub fn new(
        name: impl Into<String>,
        callers: usize,
        rate_per_caller: f64,
        seconds: f64,
    ) -> Self {
        Phase {
            name: name.into(),
            callers,
            rate_per_caller,
            seconds,
        }
    }

    /// Parse `name:callers:rate:seconds`.
    pub fn parse(s: &str) -> Result<Phase, String> {
        let parts: Vec<&str> = s.split(':').collect();
        if parts.len() != 4 {
            return Err(format!("phase {s:?}: expected name:callers:rate:seconds"));
        }
        let callers = parts[1]
            .parse::<usize>()
            .map_err(|e| format!("phase {s:?}: callers: {e}"))?;
        let rate = parts[2]
            .parse::<f64>()
            .map_err(|e| format!("phase {s:?}: rate: {e}"))?;
        let seconds = parts[3]
            .parse::<f64>()
            .map_err(|e| format!("phase {s:?}: seconds: {e}"))?;
        let valid = rate.is_finite() && seconds.is_finite() && rate > 0.0 && seconds >= 0.0;
        if !valid {
            return Err(format!("phase {s:?}: rate must be > 0 and seconds >= 0"));
        }
        Ok(Phase::new(parts[0], callers, rate, seconds))
    }
}

/// Options shared by server and client.
#[derive(Debug, Clone)]
pub struct Options {
    /// hyper/h2 adaptive flow-control window (BDP estimation with PINGs).
    pub adaptive_window: bool,
    /// The `service` field of each `HealthCheckRequest` ("" = overall server health).
    pub service: String,
    /// Per-call timeout.
    pub call_timeout: Duration,
    /// Fixed initial stream and connection windows on both ends (with the adaptive window
    /// off: no BDP pings); `None` keeps hyper's defaults.
    pub static_window: Option<u32>,
    /// SETTINGS_INITIAL_WINDOW_SIZE of both sides (`None`: hyper's default); meant with
    /// `adaptive_window` off.
    pub stream_window: Option<u32>,
    /// Each phase ends after this many calls (or its seconds, whichever comes first).
    pub max_calls: Option<u64>,
    /// TLS on both ends (`None`: h2c, cleartext HTTP/2 with prior knowledge).
    pub tls: Option<Tls>,
}

/// The certificate both ends use: the server presents it, the client trusts it (and only it)
/// for the name `localhost`.
#[derive(Clone)]
pub struct Tls {
    cert_pem: String,
    key_pem: String,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tls { .. }")
    }
}

/// The name in the certificate and the one the client checks.
pub(crate) const TLS_NAME: &str = "localhost";

impl Tls {
    /// A fresh self-signed certificate for `localhost` (rcgen, ECDSA P-256).
    pub fn self_signed() -> Result<Tls, String> {
        let ck = rcgen::generate_simple_self_signed(vec![TLS_NAME.to_string()])
            .map_err(|e| format!("self-signed certificate: {e}"))?;
        Tls::from_pem(ck.cert.pem(), ck.signing_key.serialize_pem())
    }

    /// A PEM certificate (for `localhost`) and its PEM private key; the key may be empty on a
    /// client, which only needs the certificate.
    pub fn from_pem(cert_pem: String, key_pem: String) -> Result<Tls, String> {
        let tls = Tls { cert_pem, key_pem };
        if !tls.key_pem.is_empty() {
            // tonic reads the PEM here; a bad file fails now rather than in the server task.
            Server::builder()
                .tls_config(tls.server_config())
                .map_err(|e| format!("TLS certificate or key: {e}"))?;
        }
        Ok(tls)
    }

    /// The certificate in PEM.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The private key in PEM ("" when only the certificate is known).
    pub fn key_pem(&self) -> &str {
        &self.key_pem
    }

    fn server_config(&self) -> ServerTlsConfig {
        ServerTlsConfig::new().identity(Identity::from_pem(&self.cert_pem, &self.key_pem))
    }

    /// The client writes the key log (`SSLKEYLOGFILE`), the server does not: one line per
    /// secret, as curl's.
    fn client_config(&self) -> ClientTlsConfig {
        ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(&self.cert_pem))
            .domain_name(TLS_NAME)
            .use_key_log()
    }
}

/// The windows `--static-window` sets (1 MiB, as the Go and Python workloads).
pub const STATIC_WINDOW: u32 = 1 << 20;

/// The tonic version this workload was built with (from Cargo.lock).
pub const TONIC_VERSION: &str = env!("H2LEDGER_TONIC_VERSION");

impl Default for Options {
    fn default() -> Self {
        Options {
            adaptive_window: true,
            service: String::new(),
            call_timeout: Duration::from_secs(5),
            static_window: None,
            stream_window: None,
            max_calls: None,
            tls: None,
        }
    }
}

/// Result of one phase.
#[derive(Debug, Clone)]
pub struct PhaseResult {
    /// The phase's name.
    pub name: String,
    /// Its callers.
    pub callers: usize,
    /// Calls per second of each caller.
    pub rate_per_caller: f64,
    /// `Health/Check` calls started.
    pub calls_made: u64,
    /// Of those, calls that succeeded (gRPC status OK).
    pub calls_ok: u64,
    /// When the phase began (wall clock, as the capture's timestamps).
    pub start: SystemTime,
    /// When its last call was over.
    pub end: SystemTime,
}

impl PhaseResult {
    /// Compact JSON object (no serde dependency needed).
    pub fn to_json(&self) -> String {
        format!(
            "{{\"name\":{},\"callers\":{},\"rate_per_caller\":{},\"calls_made\":{},\"calls_ok\":{},\"start\":{:.6},\"end\":{:.6},\"start_ns\":{},\"end_ns\":{}}}",
            json_str(&self.name),
            self.callers,
            self.rate_per_caller,
            self.calls_made,
            self.calls_ok,
            epoch(self.start),
            epoch(self.end),
            epoch_ns(self.start),
            epoch_ns(self.end)
        )
    }
}

fn epoch(t: SystemTime) -> f64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

fn epoch_ns(t: SystemTime) -> u128 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// Minimal JSON string escaping.
pub fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A running server. Dropping it does not stop the server; call [`ServerHandle::shutdown`].
pub struct ServerHandle {
    /// The address the server listens on.
    pub local_addr: SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<(), tonic::transport::Error>>,
}

impl ServerHandle {
    /// Graceful shutdown (GOAWAY to connected clients), then wait for the server task.
    pub async fn shutdown(mut self) -> Result<(), String> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        match self.task.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(format!("server error: {e}")),
            Err(e) => Err(format!("server task: {e}")),
        }
    }

    /// Wait for the server to end on its own (e.g. never, for `--listen`).
    pub async fn wait(mut self) -> Result<(), String> {
        let _keep = self.shutdown.take();
        match self.task.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(format!("server error: {e}")),
            Err(e) => Err(format!("server task: {e}")),
        }
    }
}

/// Serve the stock health service on a listener the caller already bound.
pub async fn serve(listener: TcpListener, opts: &Options) -> ServerHandle {
    let local_addr = listener.local_addr().expect("listener local_addr");
    let (reporter, health_service) = tonic_health::server::health_reporter();
    // The overall ("") service is SERVING by default; also register a named one.
    reporter
        .set_service_status("h2ledger.Workload", tonic_health::ServingStatus::Serving)
        .await;
    let (tx, rx) = oneshot::channel::<()>();
    let mut builder = Server::builder()
        .http2_adaptive_window(Some(opts.adaptive_window))
        .initial_stream_window_size(opts.stream_window);
    if let Some(w) = opts.static_window {
        builder = builder
            .http2_adaptive_window(Some(false))
            .initial_stream_window_size(w)
            .initial_connection_window_size(w);
    }
    if let Some(tls) = &opts.tls {
        // Checked by `Tls::from_pem`.
        builder = builder
            .tls_config(tls.server_config())
            .expect("TLS config checked when made");
    }
    let task = tokio::spawn(async move {
        let _reporter = reporter; // keep statuses alive while serving
        builder
            .add_service(health_service)
            .serve_with_incoming_shutdown(TcpListenerStream::new(listener), async {
                let _ = rx.await;
            })
            .await
    });
    ServerHandle {
        local_addr,
        shutdown: Some(tx),
        task,
    }
}

/// Connect one channel (= one HTTP/2 connection) to `addr`.
pub(crate) async fn connect(
    addr: SocketAddr,
    opts: &Options,
) -> Result<Channel, tonic::transport::Error> {
    let scheme = if opts.tls.is_some() { "https" } else { "http" };
    let mut e = Endpoint::from_shared(format!("{scheme}://{addr}"))
        .expect("valid uri")
        .http2_adaptive_window(opts.adaptive_window)
        .initial_stream_window_size(opts.stream_window)
        .tcp_nodelay(true);
    if let Some(w) = opts.static_window {
        e = e
            .http2_adaptive_window(false)
            .initial_stream_window_size(w)
            .initial_connection_window_size(w);
    }
    if let Some(tls) = &opts.tls {
        e = e.tls_config(tls.client_config())?;
    }
    e.connect().await
}

/// Run the phases one after the other over a single connection.
///
/// Each caller of a phase owns a clone of the one `Channel` (clones share the
/// connection) and issues `Check` on a `tokio::time::interval` of
/// `1/rate_per_caller` seconds with `MissedTickBehavior::Delay` (paced, no
/// burst catch-up). All callers of a phase start at the same instant, so with
/// several callers the calls arrive in waves. A phase ends after `seconds` (or
/// [`Options::max_calls`] calls); calls still in flight then are awaited (and
/// counted in that phase).
///
/// If the connection cannot be established, every phase reports 0 calls.
pub async fn run_phases(addr: SocketAddr, phases: &[Phase], opts: &Options) -> Vec<PhaseResult> {
    let channel = match connect(addr, opts).await {
        Ok(c) => Some(c),
        Err(e) => {
            eprintln!("h2ledger-workload: connect {addr}: {e}");
            None
        }
    };
    let mut results = Vec::with_capacity(phases.len());
    for phase in phases {
        let start = SystemTime::now();
        let made = Arc::new(AtomicU64::new(0));
        let ok = Arc::new(AtomicU64::new(0));
        if let Some(channel) = &channel {
            let t0 = Instant::now();
            let deadline = t0 + Duration::from_secs_f64(phase.seconds);
            let period = Duration::from_secs_f64(1.0 / phase.rate_per_caller);
            let mut tasks = Vec::with_capacity(phase.callers);
            for _ in 0..phase.callers {
                let mut client = HealthClient::new(channel.clone());
                let made = made.clone();
                let ok = ok.clone();
                let service = opts.service.clone();
                let timeout = opts.call_timeout;
                let max_calls = opts.max_calls;
                tasks.push(tokio::spawn(async move {
                    let mut tick = tokio::time::interval_at(t0, period);
                    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
                    loop {
                        let at = tick.tick().await;
                        if at >= deadline || Instant::now() >= deadline {
                            break;
                        }
                        let before = made.fetch_add(1, Ordering::Relaxed);
                        if max_calls.is_some_and(|m| before >= m) {
                            made.fetch_sub(1, Ordering::Relaxed);
                            break;
                        }
                        let mut req = tonic::Request::new(HealthCheckRequest {
                            service: service.clone(),
                        });
                        req.set_timeout(timeout);
                        if client.check(req).await.is_ok() {
                            ok.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }));
            }
            for t in tasks {
                let _ = t.await;
            }
        }
        results.push(PhaseResult {
            name: phase.name.clone(),
            callers: phase.callers,
            rate_per_caller: phase.rate_per_caller,
            calls_made: made.load(Ordering::Relaxed),
            calls_ok: ok.load(Ordering::Relaxed),
            start,
            end: SystemTime::now(),
        });
    }
    results
}
