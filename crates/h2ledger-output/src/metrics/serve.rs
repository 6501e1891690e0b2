//! `sniff --metrics ADDR:PORT`: the run's metrics ([`crate::metrics`]) served over HTTP on
//! their own thread, while the capture loop runs on its own.
//!
//! The port is bound before the capture opens (so before privileges are given up: a port
//! below 1024 works as root). The serving thread answers one request at a time (a 5 s read
//! and write timeout each): `GET /metrics` gets the exposition, in OpenMetrics when the
//! `Accept` header asks for it and in the Prometheus text format otherwise; `GET /` a line
//! that points there; anything else 404 or 405. Before it encodes, a scrape asks the capture
//! loop for fresh figures ([`Exporter::wants_sync`], and the wake-up given to [`Exporter::serve`]
//! for its idle wait) and waits
//! for them at most [`SYNC_WAIT`]; a run that is busy elsewhere (draining at its end) is
//! served what it last had. So figures are made only when a scraper asks, and a scrape sees
//! the run as it is (docs/decisions.md #161).

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use super::{Exposition, Metrics};

/// What wakes the capture loop's idle wait when a scrape comes.
pub type Wake = Box<dyn Fn() + Send + Sync>;

/// How long a scrape waits for the capture loop's fresh figures.
pub const SYNC_WAIT: Duration = Duration::from_secs(1);
/// The longest request head read.
const MAX_HEAD: usize = 8 * 1024;
/// Read and write timeout of a scraper's connection.
const IO_TIMEOUT: Duration = Duration::from_secs(5);

/// What the serving thread and the capture loop share.
struct Shared {
    metrics: Metrics,
    /// A scrape waits for fresh figures.
    want: AtomicBool,
    /// Scrapes that asked for fresh figures so far (each part of [`super::Parts`] answers
    /// up to this one).
    asked: AtomicU64,
    /// Wakes the capture loop's idle wait when a scrape comes.
    wake: Wake,
    /// Figures made so far (a scrape waits for this to move) and whether the run is over.
    synced: Mutex<(u64, bool)>,
    cv: Condvar,
}

/// The run's metrics, and (live) the thread that serves them.
pub struct Exporter {
    shared: Arc<Shared>,
    /// Where they are served (the port the system chose for port 0).
    pub addr: Option<SocketAddr>,
}

impl Exporter {
    /// Metrics printed once (`-T prometheus`), not served.
    pub fn offline(max_paths: usize) -> Exporter {
        Exporter {
            shared: Arc::new(shared(max_paths, Box::new(|| {}))),
            addr: None,
        }
    }

    /// Binds `addr` (`ADDR:PORT`; a name is resolved, its first address taken) and starts
    /// serving; `wake` is called when a scrape wants fresh figures. An address in use, or not
    /// this machine's, is a one-line error.
    pub fn serve(addr: &str, max_paths: usize, wake: Wake) -> Result<Exporter, String> {
        let listener =
            TcpListener::bind(addr).map_err(|e| format!("--metrics {addr}: cannot listen: {e}"))?;
        let local = listener
            .local_addr()
            .map_err(|e| format!("--metrics {addr}: {e}"))?;
        let shared = Arc::new(shared(max_paths, wake));
        let s = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || {
                // A failed accept (the peer gone already) is skipped.
                for c in listener.incoming().flatten() {
                    let _ = answer(c, &s);
                }
            })
            .map_err(|e| format!("--metrics: cannot start the serving thread: {e}"))?;
        Ok(Exporter {
            shared,
            addr: Some(local),
        })
    }

    /// The metrics, to feed.
    pub fn metrics(&self) -> &Metrics {
        &self.shared.metrics
    }

    /// A scrape waits for fresh figures (checked by the capture loop after each packet).
    pub fn wants_sync(&self) -> bool {
        self.shared.want.load(Ordering::Relaxed)
    }

    /// How many scrapes asked for fresh figures so far.
    pub fn asked(&self) -> u64 {
        self.shared.asked.load(Ordering::Relaxed)
    }

    /// Fresh figures are in the metrics (`last`: the run's final ones; scrapes no longer wait).
    pub fn synced(&self, last: bool) {
        self.shared.want.store(false, Ordering::Relaxed);
        let mut g = self.shared.synced.lock().unwrap_or_else(|e| e.into_inner());
        g.0 += 1;
        g.1 |= last;
        self.shared.cv.notify_all();
    }
}

fn shared(max_paths: usize, wake: Wake) -> Shared {
    Shared {
        metrics: Metrics::new(max_paths, env!("CARGO_PKG_VERSION")),
        want: AtomicBool::new(false),
        asked: AtomicU64::new(0),
        wake,
        synced: Mutex::new((0, false)),
        cv: Condvar::new(),
    }
}

/// Asks the capture loop for fresh figures and waits for them, at most [`SYNC_WAIT`].
fn fresh(s: &Shared) {
    let g = s.synced.lock().unwrap_or_else(|e| e.into_inner());
    if g.1 {
        return;
    }
    let seen = g.0;
    s.asked.fetch_add(1, Ordering::Relaxed);
    s.want.store(true, Ordering::Relaxed);
    (s.wake)();
    let _ =
        s.cv.wait_timeout_while(g, SYNC_WAIT, |g| g.0 == seen && !g.1);
}

/// One request: read its head, answer, close.
fn answer(mut c: TcpStream, s: &Shared) -> std::io::Result<()> {
    c.set_read_timeout(Some(IO_TIMEOUT))?;
    c.set_write_timeout(Some(IO_TIMEOUT))?;
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = c.read(&mut buf)?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
        if head.len() > MAX_HEAD {
            return respond(
                &mut c,
                "431 Request Header Fields Too Large",
                "text/plain",
                b"",
            );
        }
    }
    let (status, ctype, body) = route(&head, s);
    respond(&mut c, status, ctype, &body)
}

/// The answer to a request head: status line, content type, body.
fn route(head: &[u8], s: &Shared) -> (&'static str, &'static str, Vec<u8>) {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.split("\r\n");
    let mut first = lines.next().unwrap_or("").split(' ');
    let (method, target) = (first.next().unwrap_or(""), first.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let accept = lines.find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case("accept").then(|| v.trim())
    });
    let get = matches!(method, "GET" | "HEAD");
    let plain = "text/plain; charset=utf-8";
    match (get, path) {
        (true, "/metrics") => {
            fresh(s);
            let e = Exposition::from_accept(accept);
            let mut body = s.metrics.encode(e).into_bytes();
            if method == "HEAD" {
                body.clear();
            }
            ("200 OK", e.content_type(), body)
        }
        (true, "/") => ("200 OK", plain, b"h2ledger: metrics at /metrics\n".to_vec()),
        (false, "/metrics" | "/") => ("405 Method Not Allowed", plain, b"GET or HEAD\n".to_vec()),
        _ => (
            "404 Not Found",
            plain,
            b"not found: metrics at /metrics\n".to_vec(),
        ),
    }
}

fn respond(c: &mut TcpStream, status: &str, ctype: &str, body: &[u8]) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    c.write_all(head.as_bytes())?;
    c.write_all(body)?;
    c.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(addr: SocketAddr, req: &str) -> String {
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(req.as_bytes()).unwrap();
        let mut out = String::new();
        c.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn serves_both_formats_and_refuses_the_rest() {
        let e = Exporter::serve("127.0.0.1:0", 200, Box::new(|| {})).unwrap();
        e.synced(true);
        let a = e.addr.unwrap();
        let r = get(a, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
        assert!(r.contains("Content-Type: text/plain; version=0.0.4"));
        assert!(r.contains("\r\n\r\n# HELP h2ledger_"));
        assert!(!r.contains("# EOF"));
        let r = get(
            a,
            "GET /metrics?x=1 HTTP/1.1\r\nACCEPT: application/openmetrics-text;version=1.0.0\r\n\r\n",
        );
        assert!(r.contains("Content-Type: application/openmetrics-text"));
        assert!(r.ends_with("# EOF\n"));
        assert!(get(a, "POST /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
        assert!(get(a, "GET /x HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
        assert!(get(a, "GET / HTTP/1.0\r\n\r\n").ends_with("at /metrics\n"));
    }

    #[test]
    fn an_address_in_use_is_one_line() {
        let e = Exporter::serve("127.0.0.1:0", 200, Box::new(|| {})).unwrap();
        let addr = e.addr.unwrap().to_string();
        let err = Exporter::serve(&addr, 200, Box::new(|| {})).err().unwrap();
        assert!(
            err.starts_with(&format!("--metrics {addr}: cannot listen: ")),
            "{err}"
        );
        assert!(!err.contains('\n'));
    }

    /// A scrape waits for the loop's figures, and without a loop gives up after SYNC_WAIT.
    #[test]
    fn a_scrape_asks_for_fresh_figures() {
        let e = Exporter::serve("127.0.0.1:0", 200, Box::new(|| {})).unwrap();
        let a = e.addr.unwrap();
        let t = std::thread::spawn(move || get(a, "GET /metrics HTTP/1.1\r\n\r\n"));
        let t0 = std::time::Instant::now();
        while !e.wants_sync() {
            assert!(t0.elapsed() < Duration::from_secs(5));
            std::thread::sleep(Duration::from_millis(1));
        }
        let f = crate::metrics::Figures {
            packets: 42,
            ..Default::default()
        };
        e.metrics().set(&f);
        e.synced(false);
        let page = t.join().unwrap();
        assert!(page.contains("\nh2ledger_packets_total 42\n"), "{page}");
        assert!(!e.wants_sync());
    }
}
