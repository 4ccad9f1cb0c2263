//! LMbench lat_pipe, lat_unix, lat_tcp, lat_udp (1-byte round trips between
//! two processes over loopback), lat_connect and lat_select.
use std::{
    io::Read,
    net::{TcpListener, TcpStream, UdpSocket},
    os::fd::{AsRawFd, OwnedFd, RawFd},
};

use anyhow::{anyhow, bail, Context, Result};

use crate::op::{group, Bench, Ctx, OpDef, Unit, Work};
use crate::op_names;
use crate::sys::{
    child::{self, Child, WithEnds},
    fd::{close_in_child, pipe, read_full, socketpair, write_full},
    fd_limit::{self, Raised},
    file::create_new,
};

pub fn ops() -> Vec<OpDef> {
    group(
        "ipc",
        Unit::NsPerOp,
        &[
            ("pipe", |_| Ok(Box::new(PingPong::new(Kind::Pipe)?))),
            (op_names::UNIX, |_| Ok(Box::new(PingPong::new(Kind::Unix)?))),
            ("tcp", |_| Ok(Box::new(PingPong::new(Kind::Tcp)?))),
            ("udp", |_| Ok(Box::new(PingPong::new(Kind::Udp)?))),
            ("tcp_connect", |_| Ok(Box::new(Connect::new()?))),
            ("select_file", |c| Ok(Box::new(Select::files(c)?))),
            ("select_tcp", |c| Ok(Box::new(Select::tcp(c)?))),
        ],
    )
}

/// One byte there and back between two processes, as lmbench's lat_pipe,
/// lat_unix, lat_tcp and lat_udp, and in lmbench's arrangement: a timing
/// process (forked once, as benchmp's child) creates the echo process, makes
/// one round trip (lat_pipe's initialize), and then makes and times each
/// sample's round trips when the measuring process asks over a pipe.
///
/// Why a timing process: on one CPU, the kernel's fair scheduler decides at
/// each wake-up, from how far apart the two tasks' virtual runtimes are,
/// whether the woken task preempts the waker, and the pair keeps the pattern
/// it starts in. lat_pipe measures the pattern where each side blocks in
/// read() and neither preempts the other (6.1 guest: one voluntary switch
/// per round trip on each side; pipe 13.0 µs, AF_UNIX 17.3). The measuring
/// process, busy with other ops between its samples, left a long-lived echo
/// process far behind, which then preempted it at every wake-up (10.6 /
/// 19.3 µs); a freshly forked echo process starts a slice ahead and is
/// preempted at every wake-up (10.6 / 19.1 µs). A timing process and its
/// echo are both idle while other ops run, so both wake at the same point
/// and every sample starts level; after creating them the measuring process
/// runs LEVEL_CPU_NS of its own work so that the first samples do too.
struct PingPong {
    control: OwnedFd,
    reply: OwnedFd,
    /// Killed and reaped after our ends are closed.
    _timer: Child,
    last_ns: Option<f64>,
}

/// CPU time the measuring process spends after creating a timing process and
/// its echo (both idle): more than the scheduler's sleeper credit (half of
/// its 6 ms latency on one CPU) plus the slice a new child starts ahead, so
/// that both are placed at the same point when the first sample wakes them.
const LEVEL_CPU_NS: u64 = 20_000_000;

#[derive(Clone, Copy)]
enum Kind {
    Pipe,
    Unix,
    Tcp,
    Udp,
}

/// A running echo process and our ends (owned by `_echo`).
struct Peer {
    rd: RawFd,
    wr: RawFd,
    _echo: WithEnds,
}

fn echo_loop(rd: RawFd, wr: RawFd) {
    let mut b = [0u8; 1];
    loop {
        // SAFETY: one-byte buffer; fds owned by this child.
        let n = unsafe { libc::read(rd, b.as_mut_ptr().cast(), 1) };
        if n != 1 || unsafe { libc::write(wr, b.as_ptr().cast(), 1) } != 1 {
            return;
        }
    }
}

impl Peer {
    fn new(kind: Kind) -> Result<Self> {
        match kind {
            Kind::Pipe => Self::pipe(),
            Kind::Unix => Self::unix(),
            Kind::Tcp => Self::tcp(),
            Kind::Udp => Self::udp(),
        }
    }

    /// Two pipes: ours to write (`to`) and ours to read (`back`).
    fn pipe() -> Result<Self> {
        let ((to_rd, to_wr), (back_rd, back_wr)) = (pipe()?, pipe()?);
        let (mine, theirs) = (
            [to_wr.as_raw_fd(), back_rd.as_raw_fd()],
            [to_rd.as_raw_fd(), back_wr.as_raw_fd()],
        );
        let child = child::fork(|| {
            close_in_child(mine);
            echo_loop(theirs[0], theirs[1]);
        })?;
        Ok(Self {
            rd: mine[1],
            wr: mine[0],
            _echo: WithEnds::new(child, vec![Box::new(to_wr), Box::new(back_rd)]),
        })
    }

    fn unix() -> Result<Self> {
        let (mine, theirs) = socketpair()?;
        let (fd, their_fd) = (mine.as_raw_fd(), theirs.as_raw_fd());
        let child = child::fork(|| {
            close_in_child([fd]);
            echo_loop(their_fd, their_fd);
        })?;
        Ok(Self {
            rd: fd,
            wr: fd,
            _echo: WithEnds::new(child, vec![Box::new(mine)]),
        })
    }

    fn tcp() -> Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").context("tcp listen on loopback")?;
        let addr = listener.local_addr()?;
        let child = child::fork(|| {
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
            _echo: WithEnds::new(child, vec![Box::new(s), Box::new(listener)]),
        })
    }

    fn udp() -> Result<Self> {
        let server = UdpSocket::bind("127.0.0.1:0").context("udp bind on loopback")?;
        let client = UdpSocket::bind("127.0.0.1:0")?;
        client.connect(server.local_addr()?)?;
        server.connect(client.local_addr()?)?;
        let child = child::fork(|| echo_loop(server.as_raw_fd(), server.as_raw_fd()))?;
        let fd = client.as_raw_fd();
        Ok(Self {
            rd: fd,
            wr: fd,
            _echo: WithEnds::new(child, vec![Box::new(client), Box::new(server)]),
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

/// The timing process: creates the echo process, one round trip, a ready
/// reply, then per request `n`: n round trips, replies (ns taken, n done).
fn timing_process(kind: Kind, control: RawFd, reply: RawFd) {
    let Ok(peer) = Peer::new(kind) else { return };
    if peer.round_trips(1).is_err() || !write_full(reply, &[0u8; 16]) {
        return;
    }
    let mut req = [0u8; 8];
    while read_full(control, &mut req) {
        let n = u64::from_ne_bytes(req);
        let start = std::time::Instant::now();
        let done = if peer.round_trips(n).is_ok() { n } else { 0 };
        let ns = start.elapsed().as_nanos() as u64;
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&ns.to_ne_bytes());
        out[8..].copy_from_slice(&done.to_ne_bytes());
        if !write_full(reply, &out) || done == 0 {
            return;
        }
    }
}

/// Busy for `ns` of this thread's CPU time.
fn spin_cpu(ns: u64) {
    let now = || {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: reading a clock into our struct.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
        t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
    };
    let start = now();
    while now() - start < ns {
        std::hint::spin_loop();
    }
}

impl PingPong {
    fn new(kind: Kind) -> Result<Self> {
        let ((control_rd, control), (reply, reply_wr)) = (pipe()?, pipe()?);
        let mine = [control.as_raw_fd(), reply.as_raw_fd()];
        let theirs = [control_rd.as_raw_fd(), reply_wr.as_raw_fd()];
        let timer = child::fork(|| {
            close_in_child(mine);
            timing_process(kind, theirs[0], theirs[1]);
        })?;
        let me = Self {
            control,
            reply,
            _timer: timer,
            last_ns: None,
        };
        // Fails now, not at the first sample, if it cannot work.
        if !read_full(me.reply.as_raw_fd(), &mut [0u8; 16]) {
            bail!("the timing process could not set up its echo process");
        }
        spin_cpu(LEVEL_CPU_NS);
        Ok(me)
    }
}

impl Bench for PingPong {
    fn run(&mut self, iters: u64) -> Result<Work> {
        self.last_ns = None;
        let mut out = [0u8; 16];
        if !write_full(self.control.as_raw_fd(), &iters.to_ne_bytes())
            || !read_full(self.reply.as_raw_fd(), &mut out)
        {
            bail!("the timing process died");
        }
        let (ns, done) = out.split_at(8);
        let done = u64::from_ne_bytes(done.try_into()?);
        if done != iters {
            bail!("the echo round trips failed");
        }
        self.last_ns = Some(u64::from_ne_bytes(ns.try_into()?) as f64);
        Ok(Work {
            ops: done,
            bytes: 2 * done,
        })
    }

    fn child_timed_ns(&self) -> Option<f64> {
        self.last_ns
    }
}

/// connect() + close() to a loopback server that accepts and closes.
struct Connect {
    addr: std::net::SocketAddr,
    _server: Child,
}

impl Connect {
    fn new() -> Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").context("tcp listen on loopback")?;
        let addr = listener.local_addr()?;
        // As lat_connect: the server waits for the client's close (EOF), so the
        // client closes first and its ports cycle through TIME_WAIT.
        let server = child::fork(move || {
            for s in listener.incoming() {
                let Ok(mut s) = s else { return };
                let mut b = [0u8; 1];
                let _ = s.read(&mut b);
            }
        })?;
        Ok(Self {
            addr,
            _server: server,
        })
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

/// select() over N descriptors, all ready for writing (regular files) or
/// all idle (connected TCP sockets, checked for reading).
struct Select {
    fds: Vec<i32>,
    write: bool,
    _keep: Vec<Box<dyn std::any::Any>>,
    /// Declared last: put back after the descriptors are closed.
    _raised: Option<Raised>,
}

/// Room for the `need` descriptors `--select-fds` asks for, held as long
/// as the op lives: the soft limit raised toward the hard one if it must be.
fn select_room(c: &Ctx, need: u64) -> Result<Option<Raised>> {
    fd_limit::fit(need).map_err(|e| {
        anyhow!(
            "--select-fds {} needs {need} descriptors: {e}: lower --select-fds",
            c.select_fds
        )
    })
}

impl Select {
    fn files(c: &Ctx) -> Result<Self> {
        let raised = select_room(c, c.select_fds as u64)?;
        // Kept as files: an error half-way (EMFILE) closes those made so far.
        let mut fds = Vec::new();
        let mut keep: Vec<Box<dyn std::any::Any>> = Vec::new();
        for i in 0..c.select_fds {
            let f = create_new(&c.dir.join(format!("sel{i}")))?;
            fds.push(f.as_raw_fd());
            keep.push(Box::new(f));
        }
        Ok(Self {
            fds,
            write: true,
            _keep: keep,
            _raised: raised,
        })
    }

    fn tcp(c: &Ctx) -> Result<Self> {
        // Both ends of each connection, and the listener.
        let raised = select_room(c, 2 * c.select_fds as u64 + 1)?;
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
            _raised: raised,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_trip_sample_is_timed_by_the_timing_process_and_fails_without_it() {
        let mut p = PingPong::new(Kind::Pipe).unwrap();
        let work = p.run(50).unwrap();
        assert_eq!((work.ops, work.bytes), (50, 100));
        assert!(p.child_timed_ns().unwrap() > 0.0);
        p._timer.kill();
        let err = p.run(50).unwrap_err().to_string();
        assert!(err.contains("timing process died"), "{err}");
        assert_eq!(p.child_timed_ns(), None);
    }

    #[test]
    fn the_echo_process_dies_with_its_timing_process() {
        let (ours, theirs) = socketpair().unwrap();
        // A timing process that reports its echo's pid, then waits.
        let timer = child::fork(|| {
            let Ok(peer) = Peer::unix() else { return };
            let _ = write_full(theirs.as_raw_fd(), &peer._echo.pid().to_ne_bytes());
            std::mem::forget(peer);
            // SAFETY: waiting to be killed.
            unsafe { libc::pause() };
        })
        .unwrap();
        let mut b = [0u8; 4];
        assert!(read_full(ours.as_raw_fd(), &mut b));
        let echo = libc::pid_t::from_ne_bytes(b);
        // SAFETY: probing a process we made.
        assert_eq!(unsafe { libc::kill(echo, 0) }, 0);
        drop(timer);
        // The echo (a child of the timing process) gets SIGKILL: gone, or a
        // zombie until its new parent reaps it, within a second.
        let dead = || match std::fs::read_to_string(format!("/proc/{echo}/stat")) {
            Ok(stat) => stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z'),
            Err(_) => true,
        };
        let gone = (0..100).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(10));
            dead()
        });
        assert!(gone, "echo {echo} outlived its timing process");
    }
}
