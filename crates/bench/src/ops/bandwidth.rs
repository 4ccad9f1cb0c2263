//! LMbench bandwidths (“Performance Analysis with LSM and SELinux”): pipe, AF_UNIX, TCP, file reread, mmap
//! reread, bcopy, memory read and write. One op moves CHUNK bytes (the IPC
//! ones) or the whole buffer; the unit is MB/s (10^6 bytes per second).
use std::{
    net::{TcpListener, TcpStream},
    os::fd::{AsRawFd, OwnedFd, RawFd},
};

use anyhow::{bail, Context, Result};

use crate::op::{group, Bench, Ctx, OpDef, Unit, Work};
use crate::sys::{
    child::{self, WithEnds},
    fd::{check, close_in_child, pipe, socketpair},
    file::{open_nofollow, write_new},
};

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
            ("bw_bcopy", |_| Ok(Box::new(Mem::new(MemOp::Copy)?))),
            ("bw_mem_rd", |_| Ok(Box::new(Mem::new(MemOp::Read)?))),
            ("bw_mem_wr", |_| Ok(Box::new(Mem::new(MemOp::Write)?))),
        ],
    )
}

const CHUNK: usize = 64 * 1024;
const BUF: usize = 8 << 20;

/// As lmbench's bw_pipe/bw_unix/bw_tcp: for each sample the reader tells a
/// writer child over a control pipe how many bytes to send, and the child
/// writes them in CHUNK-sized blocks, which the reader reads CHUNK at a time.
/// Nothing is sent between samples, so a sample never starts with data
/// already waiting in the buffers.
///
/// For pipes and AF_UNIX the writer is forked afresh before each sample
/// (untimed), as bw_pipe and bw_unix fork theirs just before reading: the
/// kernel's fair scheduler starts a new child a slice ahead, so the reader
/// runs as soon as data arrives, which is the pattern lmbench measures (6.1
/// guest: the writer is preempted twice per AF_UNIX block). A long-lived
/// writer, idle while other ops ran, woke behind the reader and preempted it
/// instead (bw_unix +26 % over lmbench's figure).
struct Stream {
    kind: StreamKind,
    buf: PageBuf,
    writer: Option<Writer>,
}

#[derive(Clone, Copy, PartialEq)]
enum StreamKind {
    Pipe,
    Unix,
    Tcp,
}

/// A writer child, its data channel (our read end, owned by `_child`) and
/// control pipe. Dropped in this order: the control pipe closed, the child
/// killed and reaped, then our end closed.
struct Writer {
    fd: RawFd,
    control: OwnedFd,
    _child: WithEnds,
}

/// The child's side: one ready byte, then `todo` bytes per request read from
/// `control`.
fn writer(control: RawFd, fd: RawFd) {
    let data = vec![DATA; CHUNK];
    let mut todo = [0u8; 8];
    // SAFETY: our buffers and fds.
    if unsafe { libc::write(fd, data.as_ptr().cast(), 1) } != 1 {
        return;
    }
    // SAFETY: as above.
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

const DATA: u8 = 0x42;

impl Writer {
    /// Forks a writer on `send` (its end, made in the child for TCP), waits
    /// for its ready byte on `fd`. The child closes our ends; we close its
    /// end (`theirs`) once it has it.
    fn spawn(
        fd: RawFd,
        send: impl FnOnce() -> RawFd,
        theirs: Option<OwnedFd>,
        keep: Vec<Box<dyn std::any::Any>>,
    ) -> Result<Self> {
        let (requests, control) = pipe()?;
        let (requests_fd, control_fd) = (requests.as_raw_fd(), control.as_raw_fd());
        let child = child::fork(|| {
            close_in_child([control_fd, fd]);
            writer(requests_fd, send())
        })?;
        drop((requests, theirs));
        let me = Self {
            fd,
            control,
            _child: WithEnds::new(child, keep),
        };
        let mut ready = [0u8; 1];
        // SAFETY: reading one byte into our buffer.
        if unsafe { libc::read(fd, ready.as_mut_ptr().cast(), 1) } != 1 || ready[0] != DATA {
            bail!("the stream writer did not start");
        }
        Ok(me)
    }

    fn new(kind: StreamKind) -> Result<Self> {
        match kind {
            StreamKind::Pipe => {
                let (rd, wr) = pipe()?;
                let (fd, send) = (rd.as_raw_fd(), wr.as_raw_fd());
                Self::spawn(fd, || send, Some(wr), vec![Box::new(rd)])
            }
            StreamKind::Unix => {
                let (mine, theirs) = socketpair()?;
                let (fd, send) = (mine.as_raw_fd(), theirs.as_raw_fd());
                Self::spawn(fd, || send, Some(theirs), vec![Box::new(mine)])
            }
            StreamKind::Tcp => {
                let listener =
                    TcpListener::bind("127.0.0.1:0").context("tcp listen on loopback")?;
                let addr = listener.local_addr()?;
                let s = TcpStream::connect(addr)?;
                let fd = s.as_raw_fd();
                let server = listener.try_clone()?;
                Self::spawn(
                    fd,
                    move || match server.accept() {
                        Ok((s, _)) => {
                            let fd = s.as_raw_fd();
                            std::mem::forget(s);
                            fd
                        }
                        Err(_) => -1,
                    },
                    None,
                    vec![Box::new(s), Box::new(listener)],
                )
            }
        }
    }
}

/// A page-aligned anonymous buffer (as lmbench's valloc'd ones), touched
/// once, and not inherited by children (MADV_DONTFORK). Every fork of the
/// measuring process (the per-sample stream writers, other ops' helpers)
/// write-protects its pages, and the next write to each took a copy-on-write
/// fault: next to bw_unix, bw_mem_wr and bw_bcopy measured 5.7 % and 5.4 %
/// below the same loops run alone (6.1 guest), which matched lmbench.
struct PageBuf {
    ptr: *mut u8,
    len: usize,
}

impl PageBuf {
    fn new(len: usize) -> Result<Self> {
        // SAFETY: a fresh private anonymous mapping of len bytes.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            bail!("mmap: {}", std::io::Error::last_os_error());
        }
        let mut me = Self { ptr: p.cast(), len };
        // SAFETY: advice on our own mapping.
        check(
            unsafe { libc::madvise(p, len, libc::MADV_DONTFORK) } as i64,
            "madvise",
        )?;
        me.bytes_mut().fill(0);
        Ok(me)
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: our mapping of len bytes, borrowed mutably once.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    fn ints(&self) -> &[u32] {
        // SAFETY: page-aligned, len bytes (a multiple of 4).
        unsafe { std::slice::from_raw_parts(self.ptr.cast(), self.len / 4) }
    }

    fn ints_mut(&mut self) -> &mut [u32] {
        // SAFETY: as above, borrowed mutably once.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.cast(), self.len / 4) }
    }
}

impl Drop for PageBuf {
    fn drop(&mut self) {
        // SAFETY: our mapping.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

impl Stream {
    fn new(kind: StreamKind) -> Result<Self> {
        // A writer now: fails here, not at the first sample, if it cannot work.
        Ok(Self {
            kind,
            buf: PageBuf::new(CHUNK)?,
            writer: Some(Writer::new(kind)?),
        })
    }

    fn pipe() -> Result<Self> {
        Self::new(StreamKind::Pipe)
    }

    fn unix() -> Result<Self> {
        Self::new(StreamKind::Unix)
    }

    fn tcp() -> Result<Self> {
        Self::new(StreamKind::Tcp)
    }

    /// bw_tcp's server lives for the whole run; pipe and AF_UNIX writers are
    /// forked per sample.
    fn per_sample(&self) -> bool {
        self.kind != StreamKind::Tcp
    }
}

impl Bench for Stream {
    fn prepare(&mut self, _iters: u64) -> Result<()> {
        if self.per_sample() || self.writer.is_none() {
            self.writer = None;
            self.writer = Some(Writer::new(self.kind)?);
        }
        Ok(())
    }

    fn run(&mut self, iters: u64) -> Result<Work> {
        let w = self.writer.as_ref().context("no stream writer")?;
        let (fd, control) = (w.fd, w.control.as_raw_fd());
        let want = iters * CHUNK as u64;
        // SAFETY: writing the request from our own buffer.
        let n = unsafe { libc::write(control, want.to_ne_bytes().as_ptr().cast(), 8) };
        if n != 8 {
            bail!(
                "the stream writer died before the sample: {}",
                std::io::Error::last_os_error()
            );
        }
        let mut got = 0u64;
        while got < want {
            let n = ((want - got) as usize).min(CHUNK);
            let buf = &mut self.buf.bytes_mut()[..n];
            // SAFETY: reading into our buffer.
            let r = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
            if r == 0 {
                bail!("the stream writer died (end of stream after {got} of {want} bytes)");
            }
            if r < 0 {
                bail!(
                    "stream read failed after {got} bytes: {}",
                    std::io::Error::last_os_error()
                );
            }
            if !sampled_bytes_are(&buf[..r as usize], DATA) {
                bail!("stream data corrupted");
            }
            got += r as u64;
        }
        Ok(Work {
            ops: iters,
            bytes: got,
        })
    }

    fn finish(&mut self) -> Result<()> {
        if self.per_sample() {
            self.writer = None;
        }
        Ok(())
    }
}

/// One byte per page and the last one are `want`: proof that data came,
/// at a cost that does not drown the transfer (a byte-by-byte check cost
/// more than the copy itself: bw_pipe read 172 MB/s instead of lmbench's 1315).
fn sampled_bytes_are(data: &[u8], want: u8) -> bool {
    data.iter().step_by(4096).all(|b| *b == want) && data.last().is_none_or(|b| *b == want)
}

/// Rereads an 8 MiB file from the page cache: read() or a kept mapping.
struct Reread {
    fd: OwnedFd,
    map: *const u64,
    buf: PageBuf,
}

impl Reread {
    fn new(c: &Ctx, mmap: bool) -> Result<Self> {
        let path = c.dir.join("reread");
        write_new(&path, &vec![1u8; BUF])?;
        let fd = open_nofollow(&path, libc::O_RDONLY)?;
        let map = if mmap {
            let m = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    BUF,
                    libc::PROT_READ,
                    libc::MAP_SHARED,
                    fd.as_raw_fd(),
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
            buf: PageBuf::new(CHUNK)?,
        })
    }
}

impl Bench for Reread {
    fn run(&mut self, iters: u64) -> Result<Work> {
        let (fd, mut sum) = (self.fd.as_raw_fd(), 0u64);
        for _ in 0..iters {
            if self.map.is_null() {
                let mut off = 0usize;
                while off < BUF {
                    // SAFETY: our buffer and fd.
                    let r = unsafe { libc::pread(fd, self.buf.ptr.cast(), CHUNK, off as i64) };
                    if r != CHUNK as isize {
                        bail!("short reread at {off}");
                    }
                    sum += u64::from(self.buf.bytes_mut()[0]);
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
        if !self.map.is_null() {
            // SAFETY: our mapping.
            unsafe { libc::munmap(self.map as *mut _, BUF) };
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
    src: PageBuf,
    dst: PageBuf,
}

impl Mem {
    fn new(op: MemOp) -> Result<Self> {
        let mut src = PageBuf::new(BUF)?;
        src.ints_mut().fill(1);
        Ok(Self {
            op,
            src,
            dst: PageBuf::new(BUF)?,
        })
    }
}

/// The ints of a block that bw_mem's rd and wr touch: one in four of 128.
const STRIDE: usize = 4;
const BLOCK: usize = 128;

/// bw_mem's `rd`: per 512-byte block, sums one int in four; all bytes count.
/// On x86-64 the loop is the one gcc makes of bw_mem's C: per block one load
/// and 31 adds in ascending address order, the block's sum added to the
/// total, 36 instructions. Left to itself LLVM summed each block from its
/// end (one instruction fewer: +2.7 % over lmbench in guest virtual time),
/// descending inside an ascending walk, which this host's prefetchers serve
/// far worse (52-58 GB/s against lmbench's 90-103).
#[cfg(target_arch = "x86_64")]
fn read_ints(buf: &[u32]) -> u32 {
    let blocks = buf.len() / BLOCK;
    let mut total = 0u32;
    if blocks == 0 {
        return total;
    }
    // SAFETY: reads whole BLOCK-int blocks inside `buf`; registers only.
    unsafe {
        std::arch::asm!(
            "2:",
            "mov {s:e}, dword ptr [{p}]",
            "add {s:e}, dword ptr [{p} + 0x10]",
            "add {s:e}, dword ptr [{p} + 0x20]",
            "add {s:e}, dword ptr [{p} + 0x30]",
            "add {s:e}, dword ptr [{p} + 0x40]",
            "add {s:e}, dword ptr [{p} + 0x50]",
            "add {s:e}, dword ptr [{p} + 0x60]",
            "add {s:e}, dword ptr [{p} + 0x70]",
            "add {s:e}, dword ptr [{p} + 0x80]",
            "add {s:e}, dword ptr [{p} + 0x90]",
            "add {s:e}, dword ptr [{p} + 0xa0]",
            "add {s:e}, dword ptr [{p} + 0xb0]",
            "add {s:e}, dword ptr [{p} + 0xc0]",
            "add {s:e}, dword ptr [{p} + 0xd0]",
            "add {s:e}, dword ptr [{p} + 0xe0]",
            "add {s:e}, dword ptr [{p} + 0xf0]",
            "add {s:e}, dword ptr [{p} + 0x100]",
            "add {s:e}, dword ptr [{p} + 0x110]",
            "add {s:e}, dword ptr [{p} + 0x120]",
            "add {s:e}, dword ptr [{p} + 0x130]",
            "add {s:e}, dword ptr [{p} + 0x140]",
            "add {s:e}, dword ptr [{p} + 0x150]",
            "add {s:e}, dword ptr [{p} + 0x160]",
            "add {s:e}, dword ptr [{p} + 0x170]",
            "add {s:e}, dword ptr [{p} + 0x180]",
            "add {s:e}, dword ptr [{p} + 0x190]",
            "add {s:e}, dword ptr [{p} + 0x1a0]",
            "add {s:e}, dword ptr [{p} + 0x1b0]",
            "add {s:e}, dword ptr [{p} + 0x1c0]",
            "add {s:e}, dword ptr [{p} + 0x1d0]",
            "add {s:e}, dword ptr [{p} + 0x1e0]",
            "add {s:e}, dword ptr [{p} + 0x1f0]",
            "add {t:e}, {s:e}",
            "add {p}, 0x200",
            "cmp {p}, {end}",
            "jb 2b",
            p = inout(reg) buf.as_ptr() => _,
            end = in(reg) buf.as_ptr().add(blocks * BLOCK),
            s = out(reg) _,
            t = inout(reg) total,
            options(nostack, readonly),
        );
    }
    total
}

#[cfg(not(target_arch = "x86_64"))]
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
                    let dst = self.dst.ints_mut();
                    dst.copy_from_slice(std::hint::black_box(self.src.ints()));
                    sum += u64::from(dst[(i as usize * 4099) % dst.len()]);
                }
                MemOp::Read => {
                    sum += u64::from(read_ints(std::hint::black_box(self.src.ints())));
                }
                MemOp::Write => {
                    let dst = self.dst.ints_mut();
                    write_ints(std::hint::black_box(&mut *dst), i as u32 | 1);
                    sum += u64::from(dst[BLOCK * (i as usize % 64)]);
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
    fn each_sample_has_a_fresh_writer_and_a_dead_writer_fails_the_sample() {
        let mut s = Stream::unix().unwrap();
        let mut pids = Vec::new();
        for _ in 0..2 {
            s.prepare(3).unwrap();
            pids.push(s.writer.as_ref().unwrap()._child.pid());
            let work = s.run(3).unwrap();
            assert_eq!(work.bytes, 3 * CHUNK as u64);
            s.finish().unwrap();
            assert!(s.writer.is_none());
        }
        assert_ne!(pids[0], pids[1], "one writer for two samples");
        s.prepare(3).unwrap();
        s.writer.as_mut().unwrap()._child.kill();
        let err = s.run(3).expect_err("a sample without its writer passed");
        assert!(err.to_string().contains("writer died"), "{err}");
    }

    #[test]
    fn a_page_buffer_is_aligned_and_not_inherited_by_a_child() {
        let mut b = PageBuf::new(2 * 4096).unwrap();
        assert_eq!(b.ptr as usize % 4096, 0);
        assert!(b.bytes_mut().iter().all(|x| *x == 0));
        b.bytes_mut()[4096] = 7;
        let addr = b.ptr as usize;
        // SAFETY: advice on a range we own: mapped here, so it succeeds.
        let mapped = |a: usize| unsafe { libc::madvise(a as *mut _, 4096, libc::MADV_NORMAL) } == 0;
        assert!(mapped(addr));
        child::fork(|| {
            if mapped(addr) {
                // SAFETY: ending the child with a failure status.
                unsafe { libc::_exit(1) };
            }
        })
        .unwrap()
        .wait_ok("child saw the parent's buffer")
        .unwrap();
        assert_eq!(b.bytes_mut()[4096], 7);
    }

    #[test]
    fn rd_and_wr_touch_one_int_in_four() {
        let mut buf = vec![0u32; 2 * BLOCK];
        write_ints(&mut buf, 3);
        assert_eq!(buf.iter().filter(|v| **v == 3).count(), 2 * BLOCK / STRIDE);
        assert_eq!(buf[0], 3);
        assert_eq!(buf[1], 0);
        assert_eq!(read_ints(&buf), 3 * (2 * BLOCK / STRIDE) as u32);
        // Ints between the sampled ones, and a partial last block, are not read.
        buf[1] = 1000;
        buf[BLOCK + 127] = 1000;
        buf.extend([5u32; BLOCK - 1]);
        assert_eq!(read_ints(&buf), 3 * (2 * BLOCK / STRIDE) as u32);
        assert_eq!(read_ints(&buf[..BLOCK - 1]), 0);
    }
}
