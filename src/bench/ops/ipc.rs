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
            ("pipe", |_| Ok(Box::new(PingPong::pipe()?))),
            ("unix", |_| Ok(Box::new(PingPong::unix()?))),
            ("tcp", |_| Ok(Box::new(PingPong::tcp()?))),
            ("udp", |_| Ok(Box::new(PingPong::udp()?))),
            ("tcp_connect", |_| Ok(Box::new(Connect::new()?))),
            ("select_file", |c| Ok(Box::new(Select::files(c)?))),
            ("select_tcp", |c| Ok(Box::new(Select::tcp(c)?))),
        ],
    )
}

/// One byte there and back; the child echoes until its end closes.
struct PingPong {
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

impl PingPong {
    fn pipe() -> Result<Self> {
        let (mut a, mut b) = ([0i32; 2], [0i32; 2]);
        // SAFETY: arrays of two fds.
        check(unsafe { libc::pipe(a.as_mut_ptr()) } as i64, "pipe")?;
        check(unsafe { libc::pipe(b.as_mut_ptr()) } as i64, "pipe")?;
        let child = fork_child(|| echo_loop(a[0], b[1]))?;
        Ok(Self {
            rd: b[0],
            wr: a[1],
            child,
            _keep: Vec::new(),
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
        let child = fork_child(|| echo_loop(sv[1], sv[1]))?;
        Ok(Self {
            rd: sv[0],
            wr: sv[0],
            child,
            _keep: Vec::new(),
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
}

impl Bench for PingPong {
    fn run(&mut self, iters: u64) -> Result<Work> {
        let mut b = [b'x'; 1];
        for _ in 0..iters {
            // SAFETY: one-byte buffer; our fds.
            if unsafe { libc::write(self.wr, b.as_ptr().cast(), 1) } != 1 {
                bail!("ping write failed: {}", std::io::Error::last_os_error());
            }
            if unsafe { libc::read(self.rd, b.as_mut_ptr().cast(), 1) } != 1 {
                bail!("pong read failed: {}", std::io::Error::last_os_error());
            }
        }
        Ok(Work {
            ops: iters,
            bytes: 2 * iters,
        })
    }
}

impl Drop for PingPong {
    fn drop(&mut self) {
        reap(self.child);
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
