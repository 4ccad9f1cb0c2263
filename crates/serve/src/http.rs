//! The HTTP side of `serve` (hyper on a one-thread tokio runtime): `/metrics`
//! and a one-line `/`, nothing else, no control action. Every client is
//! bounded: a connection slot among `max_connections` (more are closed at
//! once), a request head of at most `max_head_bytes` read within
//! `head_timeout` (else 431 or closed), and the whole connection within
//! `connection_timeout` (a client that never reads is dropped). Scrapes that
//! arrive together share one reading of the probes (`Scrapes`).
use std::{
    convert::Infallible,
    net::TcpListener,
    sync::{mpsc, Arc},
    time::Duration,
};

use anyhow::{Context, Result};
use http_body_util::Full;
use hyper::{
    body::Bytes, header, server::conn::http1, service::service_fn, Method, Request, Response,
    StatusCode,
};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::{oneshot, Semaphore};

use super::exposition::Format;

/// What a scrape gets: the exposition, or why there is none (500).
pub type Exposition = std::result::Result<Bytes, String>;

/// A scrape waiting for the thread that owns the probes, in the format its
/// `Accept` header chose.
pub struct Ask {
    pub format: Format,
    pub reply: oneshot::Sender<Exposition>,
}

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_connections: usize,
    pub max_head_bytes: usize,
    pub head_timeout: Duration,
    pub connection_timeout: Duration,
}

const INDEX: &str = "lsmpmon serve: Prometheus metrics at /metrics\n";

/// The server thread; dropping it stops the server.
pub struct Server {
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Serves on `listener` until dropped; scrapes are sent to `asks`.
pub fn start(listener: TcpListener, limits: Limits, asks: mpsc::Sender<Ask>) -> Result<Server> {
    listener.set_nonblocking(true)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the HTTP runtime")?;
    let (stop, stopped) = oneshot::channel();
    let thread = std::thread::Builder::new()
        .name("serve-http".into())
        .spawn(move || {
            runtime.block_on(async move {
                let listener = match tokio::net::TcpListener::from_std(listener) {
                    Ok(l) => l,
                    Err(e) => {
                        base::say!("lsmpmon: error: the HTTP listener: {e}");
                        return;
                    }
                };
                tokio::select! {
                    _ = accept_loop(listener, limits, asks) => {}
                    _ = stopped => {}
                }
            })
        })
        .context("starting the HTTP thread")?;
    Ok(Server {
        stop: Some(stop),
        thread: Some(thread),
    })
}

async fn accept_loop(listener: tokio::net::TcpListener, limits: Limits, asks: mpsc::Sender<Ask>) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            // Out of fds or a connection reset before accept: try again shortly.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        // Over the limit: closed at once (dropping the stream).
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            continue;
        };
        let asks = asks.clone();
        tokio::spawn(async move {
            let _ =
                tokio::time::timeout(limits.connection_timeout, connection(stream, limits, asks))
                    .await;
            drop(slot);
        });
    }
}

/// One client: HTTP/1 through hyper. A request followed by a half-close
/// (`shutdown(SHUT_WR)`, as `nc -N` does) is still answered; HTTP/2 with
/// prior knowledge, which hyper's HTTP/1 server drops without a word, gets
/// a 505.
async fn connection(stream: tokio::net::TcpStream, limits: Limits, asks: mpsc::Sender<Ask>) {
    let preface = tokio::time::timeout(limits.head_timeout, http2_preface(&stream)).await;
    if preface == Ok(true) {
        if let Ok(stream) = stream.into_std() {
            let _ = tokio::task::spawn_blocking(move || refuse_http2(stream)).await;
        }
        return;
    }
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.head_timeout)
        .max_buf_size(limits.max_head_bytes)
        .half_close(true);
    let service = service_fn(move |req| answer(req, asks.clone()));
    let _ = builder
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

/// What HTTP/2 with prior knowledge gets: an HTTP/1.1 505, then the close.
const HTTP2_REFUSED: &str = "HTTP/1.1 505 HTTP Version Not Supported\r\n\
    content-type: text/plain; charset=utf-8\r\ncontent-length: 41\r\nconnection: close\r\n\r\n\
    lsmpmon serve speaks HTTP/1.1: use that.\n";

/// The 505, then the end of what the client sends, read and dropped within
/// a second (closing with bytes unread would reset the connection, and a
/// reset can discard the reply before the client reads it).
fn refuse_http2(mut stream: std::net::TcpStream) {
    use std::io::{Read, Write};
    let second = Some(Duration::from_secs(1));
    let ready = stream.set_nonblocking(false).is_ok()
        && stream.set_write_timeout(second).is_ok()
        && stream.set_read_timeout(second).is_ok();
    if !ready || stream.write_all(HTTP2_REFUSED.as_bytes()).is_err() {
        return;
    }
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let mut sink = [0u8; 4096];
    let mut read_bytes = 0;
    while read_bytes < 64 * 1024 {
        match stream.read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(n) => read_bytes += n,
        }
    }
}

/// Whether the client opens with HTTP/2's connection preface (RFC 9113
/// 3.4: "PRI * HTTP/2.0"; no HTTP/1 request starts so). Only peeked at:
/// hyper reads everything else.
async fn http2_preface(stream: &tokio::net::TcpStream) -> bool {
    const PRI: &[u8] = b"PRI * HTTP/2.0";
    let mut buf = [0u8; PRI.len()];
    loop {
        match stream.peek(&mut buf).await {
            Ok(n) if n > 0 && PRI.starts_with(&buf[..n]) => {
                if n == PRI.len() {
                    return true;
                }
                // The start of it so far: peek again when more may have come.
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            _ => return false,
        }
    }
}

fn reply(status: StatusCode, content_type: &str, body: Bytes) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(body));
    *r.status_mut() = status;
    if let Ok(v) = header::HeaderValue::from_str(content_type) {
        r.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    r
}

async fn answer(
    req: Request<hyper::body::Incoming>,
    asks: mpsc::Sender<Ask>,
) -> std::result::Result<Response<Full<Bytes>>, Infallible> {
    const TEXT: &str = "text/plain; charset=utf-8";
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return Ok(reply(
            StatusCode::METHOD_NOT_ALLOWED,
            TEXT,
            Bytes::from_static(b"GET only\n"),
        ));
    }
    Ok(match req.uri().path() {
        "/" => reply(StatusCode::OK, TEXT, Bytes::from_static(INDEX.as_bytes())),
        "/metrics" => {
            let accept = req.headers().get(header::ACCEPT);
            let format = Format::negotiate(accept.and_then(|v| v.to_str().ok()));
            let (reply_to, rx) = oneshot::channel();
            let ask = Ask {
                format,
                reply: reply_to,
            };
            let got = match asks.send(ask) {
                Ok(()) => rx
                    .await
                    .unwrap_or_else(|_| Err("lsmpmon is stopping".into())),
                Err(_) => Err("lsmpmon is stopping".into()),
            };
            match got {
                Ok(body) => reply(StatusCode::OK, format.content_type(), body),
                Err(why) => reply(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    TEXT,
                    Bytes::from(why + "\n"),
                ),
            }
        }
        _ => reply(
            StatusCode::NOT_FOUND,
            TEXT,
            Bytes::from_static(b"not found: see /metrics\n"),
        ),
    })
}

/// The limits every client gets.
pub fn limits(max_connections: usize) -> Limits {
    Limits {
        max_connections,
        max_head_bytes: 16 * 1024,
        head_timeout: Duration::from_secs(5),
        connection_timeout: Duration::from_secs(30),
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::time::Instant;

    use super::*;

    const BODY: &str = "# TYPE up gauge\nup 1\n";

    /// The server on a free loopback port, answered by a thread standing in
    /// for the one that owns the probes: (server, port).
    fn serving(limits: Limits) -> (Server, u16) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (asks, scrapes) = mpsc::channel::<Ask>();
        std::thread::spawn(move || {
            for ask in scrapes {
                let _ = ask.reply.send(Ok(Bytes::from_static(BODY.as_bytes())));
            }
        });
        (start(listener, limits, asks).unwrap(), port)
    }

    /// A scrape as Prometheus makes one (curl): status and body, or None.
    fn scrape(port: u16, path: &str, max_s: f64) -> Option<(u16, String)> {
        let out = std::process::Command::new("curl")
            .args(["-s", "-m", &max_s.to_string(), "-w", "\n%{http_code}"])
            .arg(format!("http://127.0.0.1:{port}{path}"))
            .output()
            .expect("curl (scripts/setup.sh --tests installs it)");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let (body, code) = text.rsplit_once('\n')?;
        Some((code.parse().ok().filter(|c| *c != 0)?, body.to_string()))
    }

    fn rss_kib() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    fn raise_nofile() {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: valid pointers.
        unsafe {
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
            lim.rlim_cur = lim.rlim_max.min(65536);
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }

    #[test]
    fn metrics_and_a_one_line_index_only() {
        let (_server, port) = serving(super::limits(16));
        assert_eq!(scrape(port, "/metrics", 5.0), Some((200, BODY.into())));
        let (code, index) = scrape(port, "/", 5.0).unwrap();
        assert_eq!((code, index.lines().count()), (200, 1));
        assert_eq!(scrape(port, "/reset", 5.0).map(|r| r.0), Some(404));
    }

    /// 1 000 idle connections, a head that never ends, a 10 MB header and a
    /// non-HTTP byte stream at once: a normal scrape is still answered
    /// within 1 s, the bad clients are closed, memory stays bounded.
    #[test]
    fn hostile_clients_cannot_stall_a_scrape() {
        raise_nofile();
        let limits = Limits {
            head_timeout: Duration::from_secs(2),
            ..super::limits(1024)
        };
        let (_server, port) = serving(limits);
        let addr = ("127.0.0.1", port);
        assert!(scrape(port, "/metrics", 5.0).is_some());
        let rss_before_kib = rss_kib();
        let idle: Vec<TcpStream> = (0..1000)
            .map(|_| TcpStream::connect(addr).unwrap())
            .collect();
        let mut endless = TcpStream::connect(addr).unwrap();
        endless
            .write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            .unwrap();
        let huge = std::thread::spawn(move || {
            let mut s = TcpStream::connect(addr).unwrap();
            let _ = s.write_all(b"GET /metrics HTTP/1.1\r\nX-Big: ");
            let chunk = vec![b'a'; 1 << 20];
            let sent_mib = (0..10).take_while(|_| s.write_all(&chunk).is_ok()).count();
            let mut reply = Vec::new();
            let _ = s.read_to_end(&mut reply);
            (sent_mib, String::from_utf8_lossy(&reply).into_owned())
        });
        let mut garbage = TcpStream::connect(addr).unwrap();
        garbage
            .write_all(&[0xff, 0x00, 0x13, 0x37, b'\n', b'\n', 0xfe])
            .unwrap();

        let started = Instant::now();
        assert_eq!(scrape(port, "/metrics", 1.0), Some((200, BODY.into())));
        assert!(started.elapsed() < Duration::from_secs(1));

        let mut reply = Vec::new();
        garbage
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let _ = garbage.read_to_end(&mut reply);
        assert!(
            String::from_utf8_lossy(&reply).starts_with("HTTP/1.1 400"),
            "{reply:?}"
        );
        let (sent_mib, huge_reply) = huge.join().unwrap();
        assert!(
            sent_mib < 10 || huge_reply.starts_with("HTTP/1.1 431"),
            "a 10 MB header was read whole: {huge_reply}"
        );
        // The head that never ends is dropped after head_timeout.
        endless
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let t = Instant::now();
        let mut rest = Vec::new();
        let _ = endless.read_to_end(&mut rest);
        assert!(
            t.elapsed() < Duration::from_secs(8),
            "the endless head was kept"
        );
        let grown_kib = rss_kib().saturating_sub(rss_before_kib);
        assert!(grown_kib < 64 * 1024, "RSS grew {grown_kib} KiB");
        drop(idle);
        assert_eq!(scrape(port, "/metrics", 1.0), Some((200, BODY.into())));
    }

    /// What a raw client gets for `request`, written then half-closed
    /// (`shutdown(SHUT_WR)`, as `nc -N` sends a request): within 5 s.
    fn half_closed(port: u16, request: &[u8]) -> String {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(request).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        let mut reply = Vec::new();
        let _ = s.read_to_end(&mut reply);
        String::from_utf8_lossy(&reply).into_owned()
    }

    /// Issue 34 item 11: a request followed by a half-close got 0 bytes
    /// (3 times of 3), and HTTP/2 with prior knowledge was dropped unanswered.
    #[test]
    fn a_half_closed_request_is_answered_and_http2_gets_505() {
        let (_server, port) = serving(super::limits(16));
        for _ in 0..3 {
            let reply = half_closed(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
            assert!(reply.starts_with("HTTP/1.1 200"), "{reply:?}");
            assert!(reply.ends_with(BODY), "{reply:?}");
        }
        let reply = half_closed(port, b"GET / HTTP/1.0\r\n\r\n");
        assert!(
            reply.starts_with("HTTP/1.0 200") || reply.starts_with("HTTP/1.1 200"),
            "{reply:?}"
        );
        // The preface and an empty SETTINGS frame, as curl --http2-prior-knowledge sends.
        let mut h2 = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        h2.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
        let reply = half_closed(port, &h2);
        assert!(reply.starts_with("HTTP/1.1 505 "), "{reply:?}");
        let (head, body) = reply.split_once("\r\n\r\n").unwrap();
        assert!(
            head.contains(&format!("content-length: {}", body.len())),
            "{reply:?}"
        );
        // A client that stays open after the preface gets it too.
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(&h2).unwrap();
        let mut reply = Vec::new();
        let _ = s.read_to_end(&mut reply);
        assert!(reply.starts_with(b"HTTP/1.1 505 "), "{reply:?}");
        // And a normal client after them all.
        assert_eq!(scrape(port, "/metrics", 5.0), Some((200, BODY.into())));
    }

    /// Beyond max_connections a connection is closed at once; the slots
    /// come back as clients leave.
    #[test]
    fn connections_beyond_the_limit_are_closed() {
        let (_server, port) = serving(super::limits(4));
        let held: Vec<TcpStream> = (0..4)
            .map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap())
            .collect();
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(scrape(port, "/metrics", 2.0), None);
        drop(held);
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(scrape(port, "/metrics", 2.0), Some((200, BODY.into())));
    }
}
