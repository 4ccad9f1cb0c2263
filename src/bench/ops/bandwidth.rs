//! LMbench bandwidths (“Performance Analysis with LSM and SELinux”): pipe, AF_UNIX, TCP, file reread, mmap
//! reread, bcopy, memory read and write. One op moves CHUNK bytes (the IPC
//! ones) or the whole buffer; the unit is MB/s (10^6 bytes per second).
use std::{
    io::Write,
    net::{TcpListener, TcpStream},
    os::fd::AsRawFd,
};

use anyhow::{bail, Context, Result};

use super::{check, fork_child, group, reap, Bench, Ctx, OpDef, Unit, Work};

pub fn ops() -> Vec<OpDef> {
    group(
        "bw",
        Unit::MBps,
        &[
            ("bw_pipe", |_| Ok(Box::new(Stream::pipe()?))),
            ("bw_unix", |_| Ok(Box::new(Stream::unix()?))),
            ("bw_tcp", |_| Ok(Box::new(Stream::tcp()?))),
            ("bw_file_reread", |c| Ok(Box::new(Reread::new(c, false)?))),
            ("bw_mmap_reread", |c| Ok(Box::new(Reread::new(c, true)?))),
            ("bw_bcopy", |_| Ok(Box::new(Mem::new(MemOp::Copy)))),
            ("bw_mem_rd", |_| Ok(Box::new(Mem::new(MemOp::Read)))),
            ("bw_mem_wr", |_| Ok(Box::new(Mem::new(MemOp::Write)))),
        ],
    )
}

const CHUNK: usize = 64 * 1024;
const BUF: usize = 8 << 20;

/// A child writes CHUNK-sized blocks forever; we read `iters` of them.
struct Stream {
    fd: i32,
    child: libc::pid_t,
    buf: Vec<u8>,
    _keep: Vec<Box<dyn std::any::Any>>,
}

fn writer(fd: i32) {
    let data = vec![0x42u8; CHUNK];
    loop {
        // SAFETY: our buffer and fd.
        if unsafe { libc::write(fd, data.as_ptr().cast(), CHUNK) } <= 0 {
            return;
        }
    }
}

impl Stream {
    fn pipe() -> Result<Self> {
        let mut p = [0i32; 2];
        // SAFETY: array of two fds.
        check(unsafe { libc::pipe(p.as_mut_ptr()) } as i64, "pipe")?;
        let child = fork_child(|| writer(p[1]))?;
        // SAFETY: the parent only reads.
        unsafe { libc::close(p[1]) };
        Ok(Self {
            fd: p[0],
            child,
            buf: vec![0; CHUNK],
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
        let child = fork_child(|| writer(sv[1]))?;
        Ok(Self {
            fd: sv[0],
            child,
            buf: vec![0; CHUNK],
            _keep: Vec::new(),
        })
    }

    fn tcp() -> Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").context("tcp listen on loopback")?;
        let addr = listener.local_addr()?;
        let child = fork_child(|| {
            if let Ok((mut s, _)) = listener.accept() {
                let data = vec![0x42u8; CHUNK];
                while s.write_all(&data).is_ok() {}
            }
        })?;
        let s = TcpStream::connect(addr)?;
        Ok(Self {
            fd: s.as_raw_fd(),
            child,
            buf: vec![0; CHUNK],
            _keep: vec![Box::new(s), Box::new(listener)],
        })
    }
}

impl Bench for Stream {
    fn run(&mut self, iters: u64) -> Result<Work> {
        let want = iters * CHUNK as u64;
        let mut got = 0u64;
        while got < want {
            let n = ((want - got) as usize).min(CHUNK);
            // SAFETY: reading into our buffer.
            let r = unsafe { libc::read(self.fd, self.buf.as_mut_ptr().cast(), n) };
            if r <= 0 {
                bail!(
                    "stream read failed after {got} bytes: {}",
                    std::io::Error::last_os_error()
                );
            }
            if self.buf[..r as usize].iter().any(|b| *b != 0x42) {
                bail!("stream data corrupted");
            }
            got += r as u64;
        }
        Ok(Work {
            ops: iters,
            bytes: got,
        })
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        reap(self.child);
    }
}

/// Rereads an 8 MiB file from the page cache: read() or a kept mapping.
struct Reread {
    fd: i32,
    map: *const u64,
    buf: Vec<u8>,
}

impl Reread {
    fn new(c: &Ctx, mmap: bool) -> Result<Self> {
        let path = c.dir.join("reread");
        super::write_new(&path, &vec![1u8; BUF])?;
        let fd = super::open_nofollow(&path, libc::O_RDONLY)?;
        let map = if mmap {
            let m = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    BUF,
                    libc::PROT_READ,
                    libc::MAP_SHARED,
                    fd,
                    0,
                )
            };
            if m == libc::MAP_FAILED {
                bail!("mmap: {}", std::io::Error::last_os_error());
            }
            m as *const u64
        } else {
            std::ptr::null()
        };
        Ok(Self {
            fd,
            map,
            buf: vec![0; CHUNK],
        })
    }
}

impl Bench for Reread {
    fn run(&mut self, iters: u64) -> Result<Work> {
        let mut sum = 0u64;
        for _ in 0..iters {
            if self.map.is_null() {
                let mut off = 0usize;
                while off < BUF {
                    // SAFETY: our buffer and fd.
                    let r = unsafe {
                        libc::pread(self.fd, self.buf.as_mut_ptr().cast(), CHUNK, off as i64)
                    };
                    if r != CHUNK as isize {
                        bail!("short reread at {off}");
                    }
                    sum += u64::from(self.buf[0]);
                    off += CHUNK;
                }
            } else {
                // SAFETY: inside the mapping of BUF bytes.
                let words = unsafe { std::slice::from_raw_parts(self.map, BUF / 8) };
                sum = sum.wrapping_add(words.iter().fold(0u64, |a, w| a.wrapping_add(*w)));
            }
        }
        if std::hint::black_box(sum) == 0 {
            bail!("reread saw no data");
        }
        Ok(Work {
            ops: iters,
            bytes: iters * BUF as u64,
        })
    }
}

impl Drop for Reread {
    fn drop(&mut self) {
        // SAFETY: our mapping and fd.
        unsafe {
            if !self.map.is_null() {
                libc::munmap(self.map as *mut _, BUF);
            }
            libc::close(self.fd);
        }
    }
}

enum MemOp {
    Copy,
    Read,
    Write,
}

struct Mem {
    op: MemOp,
    src: Vec<u64>,
    dst: Vec<u64>,
}

impl Mem {
    fn new(op: MemOp) -> Self {
        Self {
            op,
            src: vec![1; BUF / 8],
            dst: vec![0; BUF / 8],
        }
    }
}

impl Bench for Mem {
    fn run(&mut self, iters: u64) -> Result<Work> {
        let mut sum = 0u64;
        for i in 0..iters {
            match self.op {
                MemOp::Copy => {
                    self.dst.copy_from_slice(std::hint::black_box(&self.src));
                    sum += self.dst[(i as usize * 4099) % self.dst.len()];
                }
                MemOp::Read => {
                    sum += std::hint::black_box(&self.src)
                        .iter()
                        .fold(0u64, |a, w| a.wrapping_add(*w));
                }
                MemOp::Write => {
                    std::hint::black_box(&mut self.dst).fill(i);
                    sum += 1;
                }
            }
        }
        if std::hint::black_box(sum) == 0 {
            bail!("memory benchmark did no work");
        }
        Ok(Work {
            ops: iters,
            bytes: iters * BUF as u64,
        })
    }
}
