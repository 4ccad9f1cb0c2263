//! Webstone's measure: C concurrent clients, each opening a new connection
//! per request, fetching a static file mix from a real web server on the
//! loopback (nginx in the lab: `lab web-server`). One op = one connection,
//! request and whole response; every response's status, length and bytes
//! are checked, and any mismatch or refused connection fails the op.
//!
//! Written here rather than taken from wrk or ab: the lab's policies confine
//! the lsmpmon binary (the workload), so the client must be that binary;
//! wrk keeps connections alive unless told otherwise and checks no body;
//! ab checks only that lengths agree with the first response and prints
//! whole milliseconds, coarser than one request in virtual time.
use std::{
    io::{Read, Write},
    net::TcpStream,
    sync::{
        atomic::{AtomicUsize, Ordering},
        mpsc, Arc,
    },
    thread::JoinHandle,
    time::Instant,
};

use anyhow::{anyhow, bail, Context, Result};

use crate::op::{group, Bench, OpDef, Unit, Work};
use crate::op_names;

/// Where the server listens (loopback only).
pub const ADDR: &str = "127.0.0.1:8080";

/// Webstone's file mix, scaled to what a TCG guest fetches in seconds: name,
/// size and share of requests (per cent). Webstone 2's standard mix also has
/// a 5 MB file at 0.1 %: left out (one request would outweigh a sample).
pub const FILES: &[(&str, usize, usize)] = &[
    ("f500b", 500, 35),
    ("f5k", 5 * 1024, 50),
    ("f50k", 50 * 1024, 14),
    ("f500k", 500 * 1024, 1),
];

pub fn ops() -> Vec<OpDef> {
    group(
        "web",
        Unit::NsPerOp,
        &[
            (op_names::WEB_C8, |_| Ok(Box::new(Web::new(8)?))),
            (op_names::WEB_C16, |_| Ok(Box::new(Web::new(16)?))),
            (op_names::WEB_C24, |_| Ok(Box::new(Web::new(24)?))),
            (op_names::WEB_C32, |_| Ok(Box::new(Web::new(32)?))),
        ],
    )
}

/// The bytes of a file of the mix: a pattern that differs at every offset
/// modulo 251 (a prime), so a shifted, truncated or swapped body never
/// matches. The server's files are written from this, and the client
/// compares every response with it.
pub fn content(size: usize) -> Vec<u8> {
    (0..size)
        .map(|i| ((i * 7 + size) % 251) as u8 + 1)
        .collect()
}

/// The order in which requests go through the mix: 100 slots, each file
/// occupying its share, interleaved so that a short run still mixes sizes.
fn schedule() -> Vec<usize> {
    let mut slots: Vec<(usize, usize)> = Vec::new();
    for (f, &(_, _, share)) in FILES.iter().enumerate() {
        // Spread each file's slots evenly over 0..100 (by their midpoints).
        for k in 0..share {
            slots.push(((2 * k + 1) * 1000 / (2 * share), f));
        }
    }
    slots.sort();
    slots.into_iter().map(|(_, f)| f).collect()
}

struct Mix {
    bodies: Vec<Vec<u8>>,
    schedule: Vec<usize>,
    /// The run's next place in the schedule, shared by its clients and
    /// reset at each run: a run of N requests fetches exactly the files of
    /// schedule[0..N] (cyclically), whichever client takes which.
    next: AtomicUsize,
}

/// One client's work for one sample: `requests` fetches.
struct Job {
    requests: u64,
}

/// What a client did: each request's latency, bytes received.
type Done = Result<(Vec<f64>, u64)>;

struct Web {
    mix: Arc<Mix>,
    jobs: Vec<mpsc::Sender<Job>>,
    done: mpsc::Receiver<Done>,
    threads: Vec<JoinHandle<()>>,
    latencies_ns: Vec<f64>,
}

impl Web {
    fn new(clients: usize) -> Result<Self> {
        let mix = Arc::new(Mix {
            bodies: FILES.iter().map(|&(_, size, _)| content(size)).collect(),
            schedule: schedule(),
            next: AtomicUsize::new(0),
        });
        // One request first: a server that is not there fails here, clearly.
        fetch(&mix, 0, &mut Vec::new())?;
        let (done_tx, done) = mpsc::channel();
        let mut jobs = Vec::new();
        let mut threads = Vec::new();
        for id in 0..clients {
            let (tx, rx) = mpsc::channel::<Job>();
            let (mix, done_tx) = (Arc::clone(&mix), done_tx.clone());
            let t = std::thread::Builder::new()
                .name(format!("web-client-{id}"))
                .spawn(move || client(&mix, &rx, &done_tx))
                .context("starting a client thread")?;
            jobs.push(tx);
            threads.push(t);
        }
        Ok(Self {
            mix,
            jobs,
            done,
            threads,
            latencies_ns: Vec::new(),
        })
    }
}

/// A client thread: for each job, its requests one after the other, each on
/// a new connection, each for the run's next file of the mix.
fn client(mix: &Mix, jobs: &mpsc::Receiver<Job>, done: &mpsc::Sender<Done>) {
    let mut buf = Vec::with_capacity(1 << 20);
    while let Ok(job) = jobs.recv() {
        let mut lat = Vec::with_capacity(job.requests as usize);
        let mut bytes = 0u64;
        let mut outcome = Ok(());
        for _ in 0..job.requests {
            let slot = mix.next.fetch_add(1, Ordering::Relaxed);
            let t = Instant::now();
            match fetch(mix, slot, &mut buf) {
                Ok(n) => bytes += n,
                Err(e) => {
                    outcome = Err(e);
                    break;
                }
            }
            lat.push(t.elapsed().as_nanos() as f64);
        }
        if done.send(outcome.map(|_| (lat, bytes))).is_err() {
            return;
        }
    }
}

/// One connection, one GET, the whole response checked; returns its bytes.
fn fetch(mix: &Mix, slot: usize, buf: &mut Vec<u8>) -> Result<u64> {
    let f = mix.schedule[slot % mix.schedule.len()];
    let name = FILES[f].0;
    let expected = &mix.bodies[f];
    let mut s = TcpStream::connect(ADDR).map_err(|e| {
        anyhow!("connecting to {ADDR}: {e} (is the web server running? `lsmpmon lab web-server` starts it)")
    })?;
    let request = format!("GET /{name} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    s.write_all(request.as_bytes())
        .with_context(|| format!("GET /{name}: sending the request"))?;
    buf.clear();
    s.read_to_end(buf)
        .with_context(|| format!("GET /{name}: reading the response"))?;
    check_response(name, buf, expected)?;
    Ok(buf.len() as u64)
}

/// Status 200, a Content-Length equal to the file's size, and exactly the
/// file's bytes after the headers.
pub fn check_response(name: &str, response: &[u8], expected: &[u8]) -> Result<()> {
    let Some(end) = response.windows(4).position(|w| w == b"\r\n\r\n") else {
        bail!(
            "GET /{name}: no complete response header ({} bytes received)",
            response.len()
        );
    };
    let head = String::from_utf8_lossy(&response[..end]);
    let status = head.lines().next().unwrap_or("");
    if !status.starts_with("HTTP/1.1 200 ") {
        bail!("GET /{name}: server answered '{status}'");
    }
    let length: Option<usize> = head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case("content-length")
            .then(|| v.trim().parse().ok())?
    });
    if length != Some(expected.len()) {
        bail!(
            "GET /{name}: Content-Length {} but the file has {} bytes",
            length.map_or("missing".to_string(), |n| n.to_string()),
            expected.len()
        );
    }
    let body = &response[end + 4..];
    if body.len() != expected.len() {
        bail!(
            "GET /{name}: {} body bytes received of {} (connection closed early?)",
            body.len(),
            expected.len()
        );
    }
    if let Some(at) = body.iter().zip(expected).position(|(a, b)| a != b) {
        bail!("GET /{name}: body differs from the file at byte {at}");
    }
    Ok(())
}

impl Bench for Web {
    fn run(&mut self, iters: u64) -> Result<Work> {
        // Whole mixes, shared equally (whole_iterations made iters so).
        let per_client = iters.div_ceil(self.jobs.len() as u64);
        self.mix.next.store(0, Ordering::Relaxed);
        for tx in &self.jobs {
            tx.send(Job {
                requests: per_client,
            })
            .map_err(|_| anyhow!("a client thread has stopped"))?;
        }
        let mut work = Work::default();
        let mut first_err = None;
        for _ in 0..self.jobs.len() {
            match self.done.recv() {
                Ok(Ok((lat, bytes))) => {
                    work.ops += lat.len() as u64;
                    work.bytes += bytes;
                    self.latencies_ns.extend(lat);
                }
                Ok(Err(e)) => {
                    first_err.get_or_insert(e);
                }
                Err(_) => bail!("a client thread has stopped"),
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(work),
        }
    }

    fn take_latencies_ns(&mut self) -> Vec<f64> {
        std::mem::take(&mut self.latencies_ns)
    }

    /// A multiple of both the mix (every file exactly its share) and the
    /// clients (each makes the same number of requests): however many
    /// requests calibration asks, every configuration fetches the same mix.
    fn whole_iterations(&self, iters: u64) -> u64 {
        let step = lcm(self.mix.schedule.len() as u64, self.jobs.len() as u64);
        iters.div_ceil(step).max(1) * step
    }
}

fn lcm(a: u64, b: u64) -> u64 {
    let gcd = |mut a: u64, mut b: u64| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    a / gcd(a, b) * b
}

impl Drop for Web {
    fn drop(&mut self) {
        self.jobs.clear();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(status: &str, length: usize, body: &[u8]) -> Vec<u8> {
        let mut r = format!("HTTP/1.1 {status}\r\nServer: x\r\nContent-Length: {length}\r\n\r\n")
            .into_bytes();
        r.extend_from_slice(body);
        r
    }

    #[test]
    fn schedule_gives_each_file_its_share() {
        let s = schedule();
        assert_eq!(s.len(), 100);
        for (f, &(_, _, share)) in FILES.iter().enumerate() {
            assert_eq!(s.iter().filter(|&&x| x == f).count(), share);
        }
        // Interleaved: the first ten requests already hold both small sizes.
        assert!(s[..10].contains(&0) && s[..10].contains(&1));
    }

    #[test]
    fn only_the_exact_file_passes() {
        let body = content(5120);
        assert!(check_response("f5k", &response("200 OK", 5120, &body), &body).is_ok());
        let short = check_response("f5k", &response("200 OK", 5120, &body[..4000]), &body);
        assert!(format!("{:#}", short.unwrap_err()).contains("4000 body bytes received of 5120"));
        let mut wrong = body.clone();
        wrong[77] ^= 1;
        let e = check_response("f5k", &response("200 OK", 5120, &wrong), &body).unwrap_err();
        assert!(e.to_string().contains("at byte 77"), "{e}");
        let e = check_response("f5k", &response("404 Not Found", 5120, &body), &body).unwrap_err();
        assert!(e.to_string().contains("404"), "{e}");
        let e = check_response("f5k", &response("200 OK", 5000, &body), &body).unwrap_err();
        assert!(e.to_string().contains("Content-Length 5000"), "{e}");
        assert!(check_response("f5k", b"HTTP/1.1 200 OK\r\n", &body).is_err());
    }

    #[test]
    fn lcm_of_mix_and_clients() {
        assert_eq!([8, 16, 24, 32].map(|c| lcm(100, c)), [200, 400, 600, 800]);
    }

    #[test]
    fn content_differs_when_shifted_or_resized() {
        let a = content(1000);
        assert_ne!(&a[1..], &a[..999]);
        assert_ne!(&content(999)[..], &a[..999]);
        assert!(a.iter().all(|&b| b != 0));
    }
}
