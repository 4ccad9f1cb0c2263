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

/// What a scrape gets: the exposition, or why there is none (500).
pub type Exposition = std::result::Result<Bytes, String>;

/// A scrape waiting for the thread that owns the probes.
pub type Ask = oneshot::Sender<Exposition>;

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_connections: usize,
    pub max_head_bytes: usize,
    pub head_timeout: Duration,
    pub connection_timeout: Duration,
}

/// The content type of the text exposition format 0.0.4.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";
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
                        crate::say!("lsmpmon: error: the HTTP listener: {e}");
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
            let mut builder = http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(limits.head_timeout)
                .max_buf_size(limits.max_head_bytes);
            let service = service_fn(move |req| answer(req, asks.clone()));
            let conn = builder.serve_connection(TokioIo::new(stream), service);
            let _ = tokio::time::timeout(limits.connection_timeout, conn).await;
            drop(slot);
        });
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
            let (tx, rx) = oneshot::channel();
            let got = match asks.send(tx) {
                Ok(()) => rx
                    .await
                    .unwrap_or_else(|_| Err("lsmpmon is stopping".into())),
                Err(_) => Err("lsmpmon is stopping".into()),
            };
            match got {
                Ok(body) => reply(StatusCode::OK, CONTENT_TYPE, body),
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
