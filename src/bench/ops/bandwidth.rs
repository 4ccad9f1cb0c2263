//! LMbench bandwidths (“Performance Analysis with LSM and SELinux”): pipe, AF_UNIX, TCP, file reread, mmap
//! reread, bcopy, memory read and write. One op moves CHUNK bytes (the IPC
//! ones) or the whole buffer; the unit is MB/s (10^6 bytes per second).
use std::{
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

/// As lmbench's bw_pipe/bw_unix/bw_tcp: for each sample the reader tells a
/// child over a control pipe how many bytes to send, and the child writes
/// them in CHUNK-sized blocks. Nothing is sent between samples, so a sample
/// never starts with data already waiting in the buffers.
struct Stream {
    fd: i32,
    control: i32,
    child: libc::pid_t,
    buf: Vec<u8>,
    _keep: Vec<Box<dyn std::any::Any>>,
}

/// The child's side: `todo` bytes per request read from `control`.
fn writer(control: i32, fd: i32) {
    let data = vec![0x42u8; CHUNK];
    let mut todo = [0u8; 8];
    // SAFETY: our buffers and fds.
    while unsafe { libc::read(control, todo.as_mut_ptr().cast(), 8) } == 8 {
        let mut left = u64::from_ne_bytes(todo);
        while left > 0 {
            let n = (left as usize).min(CHUNK);
            // SAFETY: as above.
            let w = unsafe { libc::write(fd, data.as_ptr().cast(), n) };
            if w <= 0 {
                return;
            }
            left -= w as u64;
        }
    }
}

/// A control pipe and a writer child sending on `send`; returns (control, child).
fn spawn_writer(send: impl FnOnce() -> i32) -> Result<(i32, libc::pid_t)> {
    let mut c = [0i32; 2];
    // SAFETY: array of two fds.
    check(unsafe { libc::pipe(c.as_mut_ptr()) } as i64, "pipe")?;
    let child = fork_child(|| writer(c[0], send()))?;
    // SAFETY: the parent only writes requests.
    unsafe { libc::close(c[0]) };
    Ok((c[1], child))
}

impl Stream {
    fn new(
        fd: i32,
        (control, child): (i32, libc::pid_t),
        keep: Vec<Box<dyn std::any::Any>>,
    ) -> Self {
        Self {
            fd,
            control,
            child,
            buf: vec![0; CHUNK],
            _keep: keep,
        }
    }

    fn pipe() -> Result<Self> {
        let mut p = [0i32; 2];
        // SAFETY: array of two fds.
        check(unsafe { libc::pipe(p.as_mut_ptr()) } as i64, "pipe")?;
        let w = spawn_writer(|| p[1])?;
        // SAFETY: the parent only reads.
        unsafe { libc::close(p[1]) };
        Ok(Self::new(p[0], w, Vec::new()))
    }

    fn unix() -> Result<Self> {
        let mut sv = [0i32; 2];
        // SAFETY: array of two fds.
        check(
            unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, sv.as_mut_ptr()) }
                as i64,
            "socketpair",
        )?;
        let w = spawn_writer(|| sv[1])?;
        Ok(Self::new(sv[0], w, Vec::new()))
    }

    fn tcp() -> Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").context("tcp listen on loopback")?;
        let addr = listener.local_addr()?;
        let w = spawn_writer(|| match listener.accept() {
            Ok((s, _)) => {
                let fd = s.as_raw_fd();
                std::mem::forget(s);
                fd
            }
            Err(_) => -1,
        })?;
        let s = TcpStream::connect(addr)?;
        Ok(Self::new(
            s.as_raw_fd(),
            w,
            vec![Box::new(s), Box::new(listener)],
        ))
    }
}

impl Bench for Stream {
    fn run(&mut self, iters: u64) -> Result<Work> {
        let want = iters * CHUNK as u64;
        // SAFETY: writing the request from our own buffer.
        let w = unsafe { libc::write(self.control, want.to_ne_bytes().as_ptr().cast(), 8) };
        if w != 8 {
            bail!("stream writer gone: {}", std::io::Error::last_os_error());
        }
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
            if !sampled_bytes_are(&self.buf[..r as usize], 0x42) {
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

/// One byte per page and the last one are `want`: proof that data came,
/// at a cost that does not drown the transfer (a byte-by-byte check cost
/// more than the copy itself: bw_pipe read 172 MB/s instead of lmbench's 1315).
fn sampled_bytes_are(data: &[u8], want: u8) -> bool {
    data.iter().step_by(4096).all(|b| *b == want) && data.last().is_none_or(|b| *b == want)
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: our control pipe.
        unsafe { libc::close(self.control) };
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
    src: Vec<u32>,
    dst: Vec<u32>,
}

impl Mem {
    fn new(op: MemOp) -> Self {
        Self {
            op,
            src: vec![1; BUF / 4],
            dst: vec![0; BUF / 4],
        }
    }
}

/// The ints of a block that bw_mem's rd and wr touch: one in four of 128.
const STRIDE: usize = 4;
const BLOCK: usize = 128;

/// bw_mem's `rd`: per 512-byte block, sums one int in four; all bytes count.
fn read_ints(buf: &[u32]) -> u32 {
    buf.chunks_exact(BLOCK).fold(0u32, |sum, block| {
        let mut s = 0u32;
        for i in (0..BLOCK).step_by(STRIDE) {
            s = s.wrapping_add(block[i]);
        }
        sum.wrapping_add(s)
    })
}

/// bw_mem's `wr`: per 512-byte block, stores to one int in four.
fn write_ints(buf: &mut [u32], v: u32) {
    for block in buf.chunks_exact_mut(BLOCK) {
        for i in (0..BLOCK).step_by(STRIDE) {
            block[i] = v;
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
                    sum += u64::from(self.dst[(i as usize * 4099) % self.dst.len()]);
                }
                MemOp::Read => {
                    sum += u64::from(read_ints(std::hint::black_box(&self.src)));
                }
                MemOp::Write => {
                    write_ints(std::hint::black_box(&mut self.dst), i as u32 | 1);
                    sum += u64::from(self.dst[BLOCK * (i as usize % 64)]);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrong_byte_at_a_page_start_or_the_end_fails_the_proof() {
        let mut data = vec![0x42u8; CHUNK];
        assert!(sampled_bytes_are(&data, 0x42));
        data[8192] = 0;
        assert!(!sampled_bytes_are(&data, 0x42));
        data[8192] = 0x42;
        data[CHUNK - 1] = 0;
        assert!(!sampled_bytes_are(&data, 0x42));
        assert!(!sampled_bytes_are(&[0u8; 10], 0x42));
    }

    #[test]
    fn rd_and_wr_touch_one_int_in_four() {
        let mut buf = vec![0u32; 2 * BLOCK];
        write_ints(&mut buf, 3);
        assert_eq!(buf.iter().filter(|v| **v == 3).count(), 2 * BLOCK / STRIDE);
        assert_eq!(buf[0], 3);
        assert_eq!(buf[1], 0);
        assert_eq!(read_ints(&buf), 3 * (2 * BLOCK / STRIDE) as u32);
    }
}
