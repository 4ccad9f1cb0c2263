//! LMbench lat_pipe, lat_unix, lat_tcp, lat_udp (1-byte round trips between
//! two processes over loopback), lat_connect and lat_select.
use std::{
    io::Read,
    net::{TcpListener, TcpStream, UdpSocket},
    os::fd::AsRawFd,
};

use anyhow::{bail, Context, Result};

use super::{check, fork_child, group, reap, Bench, Ctx, OpDef, Unit, Work};

pub fn ops() -> Vec<OpDef> {
    group(
        "ipc",
        Unit::NsPerOp,
        &[
            ("pipe", |_| Ok(Box::new(PingPong::new(Kind::Pipe)?))),
            ("unix", |_| Ok(Box::new(PingPong::new(Kind::Unix)?))),
            ("tcp", |_| Ok(Box::new(PingPong::new(Kind::Tcp)?))),
            ("udp", |_| Ok(Box::new(PingPong::new(Kind::Udp)?))),
            ("tcp_connect", |_| Ok(Box::new(Connect::new()?))),
            ("select_file", |c| Ok(Box::new(Select::files(c)?))),
            ("select_tcp", |c| Ok(Box::new(Select::tcp(c)?))),
        ],
    )
}

/// One byte there and back between two processes, as lmbench's lat_pipe,
/// lat_unix, lat_tcp and lat_udp. The echo process is created afresh before
/// each sample (untimed, with one round trip, as lmbench's initialize) and
/// ended after it. With one echo process for the whole run, the figure
/// depended on which other ops were sampled in between (a 6.1 guest: pipe
/// 13.0 us alone, 10.5 us next to any other op; unix 17.3 / 20.2): the
/// scheduler keeps the two tasks in one of two wake-up patterns, set by
/// their history. A fresh pair per sample always starts the same way.
struct PingPong {
    kind: Kind,
    peer: Option<Peer>,
}

#[derive(Clone, Copy)]
enum Kind {
    Pipe,
    Unix,
    Tcp,
    Udp,
}

/// A running echo process and our ends.
struct Peer {
    rd: i32,
    wr: i32,
    child: libc::pid_t,
    _keep: Vec<Box<dyn std::any::Any>>,
}

fn echo_loop(rd: i32, wr: i32) {
    let mut b = [0u8; 1];
    loop {
        // SAFETY: one-byte buffer; fds owned by this child.
        let n = unsafe { libc::read(rd, b.as_mut_ptr().cast(), 1) };
        if n != 1 || unsafe { libc::write(wr, b.as_ptr().cast(), 1) } != 1 {
            return;
        }
    }
}

fn close_fds(fds: &[i32]) {
    for fd in fds {
        // SAFETY: our own fds, not used after.
        unsafe { libc::close(*fd) };
    }
}

impl Peer {
    fn pipe() -> Result<Self> {
        let (mut a, mut b) = ([0i32; 2], [0i32; 2]);
        // SAFETY: arrays of two fds.
        check(unsafe { libc::pipe(a.as_mut_ptr()) } as i64, "pipe")?;
        check(unsafe { libc::pipe(b.as_mut_ptr()) } as i64, "pipe")?;
        let child = fork_child(|| echo_loop(a[0], b[1]));
        close_fds(&[a[0], b[1]]);
        Ok(Self {
            rd: b[0],
            wr: a[1],
            child: child?,
            _keep: vec![Box::new(Fds(vec![a[1], b[0]]))],
        })
    }

    fn unix() -> Result<Self> {
        let mut sv = [0i32; 2];
        // SAFETY: array of two fds.
        check(
            unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, sv.as_mut_ptr()) }
                as i64,
            "socketpair",
        )?;
        let child = fork_child(|| echo_loop(sv[1], sv[1]));
        close_fds(&[sv[1]]);
        Ok(Self {
            rd: sv[0],
            wr: sv[0],
            child: child?,
            _keep: vec![Box::new(Fds(vec![sv[0]]))],
        })
    }

    fn tcp() -> Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").context("tcp listen on loopback")?;
        let addr = listener.local_addr()?;
        let child = fork_child(|| {
            if let Ok((s, _)) = listener.accept() {
                let _ = s.set_nodelay(true);
                echo_loop(s.as_raw_fd(), s.as_raw_fd());
            }
        })?;
        let s = TcpStream::connect(addr).context("tcp connect on loopback")?;
        s.set_nodelay(true)?;
        let fd = s.as_raw_fd();
        Ok(Self {
            rd: fd,
            wr: fd,
            child,
            _keep: vec![Box::new(s), Box::new(listener)],
        })
    }

    fn udp() -> Result<Self> {
        let server = UdpSocket::bind("127.0.0.1:0").context("udp bind on loopback")?;
        let client = UdpSocket::bind("127.0.0.1:0")?;
        client.connect(server.local_addr()?)?;
        server.connect(client.local_addr()?)?;
        let child = fork_child(|| echo_loop(server.as_raw_fd(), server.as_raw_fd()))?;
        let fd = client.as_raw_fd();
        Ok(Self {
            rd: fd,
            wr: fd,
            child,
            _keep: vec![Box::new(client), Box::new(server)],
        })
    }

    fn round_trips(&self, n: u64) -> Result<()> {
        let mut b = [b'x'; 1];
        for _ in 0..n {
            // SAFETY: one-byte buffer; our fds.
            if unsafe { libc::write(self.wr, b.as_ptr().cast(), 1) } != 1 {
                bail!("ping write failed: {}", std::io::Error::last_os_error());
            }
            if unsafe { libc::read(self.rd, b.as_mut_ptr().cast(), 1) } != 1 {
                bail!("pong read failed: {}", std::io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

/// Descriptors closed when dropped.
struct Fds(Vec<i32>);

impl Drop for Fds {
    fn drop(&mut self) {
        close_fds(&self.0);
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        reap(self.child);
    }
}

impl PingPong {
    fn new(kind: Kind) -> Result<Self> {
        let mut me = Self { kind, peer: None };
        me.prepare(0)?; // fails now, not at the first sample, if it cannot work
        Ok(me)
    }
}

impl Bench for PingPong {
    fn prepare(&mut self, _iters: u64) -> Result<()> {
        self.peer = None;
        let peer = match self.kind {
            Kind::Pipe => Peer::pipe()?,
            Kind::Unix => Peer::unix()?,
            Kind::Tcp => Peer::tcp()?,
            Kind::Udp => Peer::udp()?,
        };
        peer.round_trips(1)?;
        self.peer = Some(peer);
        Ok(())
    }

    fn run(&mut self, iters: u64) -> Result<Work> {
        self.peer
            .as_ref()
            .context("no echo process")?
            .round_trips(iters)?;
        Ok(Work {
            ops: iters,
            bytes: 2 * iters,
        })
    }

    fn finish(&mut self) -> Result<()> {
        self.peer = None;
        Ok(())
    }
}

/// connect() + close() to a loopback server that accepts and closes.
struct Connect {
    addr: std::net::SocketAddr,
    child: libc::pid_t,
}

impl Connect {
    fn new() -> Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").context("tcp listen on loopback")?;
        let addr = listener.local_addr()?;
        // As lat_connect: the server waits for the client's close (EOF), so the
        // client closes first and its ports cycle through TIME_WAIT.
        let child = fork_child(move || {
            for s in listener.incoming() {
                let Ok(mut s) = s else { return };
                let mut b = [0u8; 1];
                let _ = s.read(&mut b);
            }
        })?;
        Ok(Self { addr, child })
    }
}

impl Bench for Connect {
    fn run(&mut self, iters: u64) -> Result<Work> {
        for _ in 0..iters {
            TcpStream::connect(self.addr).context("connect to loopback server")?;
        }
        Ok(Work {
            ops: iters,
            bytes: 0,
        })
    }
}

impl Drop for Connect {
    fn drop(&mut self) {
        reap(self.child);
    }
}

/// select() over N descriptors, all ready for writing (regular files) or
/// all idle (connected TCP sockets, checked for reading).
struct Select {
    fds: Vec<i32>,
    write: bool,
    _keep: Vec<Box<dyn std::any::Any>>,
}

impl Select {
    fn files(c: &Ctx) -> Result<Self> {
        // Kept as files: an error half-way (EMFILE) closes those made so far.
        let mut fds = Vec::new();
        let mut keep: Vec<Box<dyn std::any::Any>> = Vec::new();
        for i in 0..c.select_fds {
            let f = super::create_new(&c.dir.join(format!("sel{i}")))?;
            fds.push(f.as_raw_fd());
            keep.push(Box::new(f));
        }
        Ok(Self {
            fds,
            write: true,
            _keep: keep,
        })
    }

    fn tcp(c: &Ctx) -> Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let mut keep: Vec<Box<dyn std::any::Any>> = Vec::new();
        let mut fds = Vec::new();
        for _ in 0..c.select_fds {
            let s = TcpStream::connect(addr)?;
            let (peer, _) = listener.accept()?;
            fds.push(s.as_raw_fd());
            keep.push(Box::new(s));
            keep.push(Box::new(peer));
        }
        keep.push(Box::new(listener));
        Ok(Self {
            fds,
            write: false,
            _keep: keep,
        })
    }
}

impl Bench for Select {
    fn run(&mut self, iters: u64) -> Result<Work> {
        let max = self.fds.iter().copied().max().unwrap_or(0);
        if max >= libc::FD_SETSIZE as i32 {
            bail!("descriptor {max} is beyond FD_SETSIZE: use fewer --select-fds");
        }
        for _ in 0..iters {
            // SAFETY: fd_set manipulation of valid descriptors below FD_SETSIZE.
            let ready = unsafe {
                let mut set: libc::fd_set = std::mem::zeroed();
                for fd in &self.fds {
                    libc::FD_SET(*fd, &mut set);
                }
                let mut tv = libc::timeval {
                    tv_sec: 0,
                    tv_usec: 0,
                };
                let (r, w) = if self.write {
                    (std::ptr::null_mut(), &mut set as *mut _)
                } else {
                    (&mut set as *mut _, std::ptr::null_mut())
                };
                libc::select(max + 1, r, w, std::ptr::null_mut(), &mut tv)
            };
            let expected = if self.write { self.fds.len() as i32 } else { 0 };
            if ready != expected {
                bail!("select returned {ready}, expected {expected}");
            }
        }
        Ok(Work {
            ops: iters,
            bytes: 0,
        })
    }
}
