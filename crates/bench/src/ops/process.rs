//! Memory mapping and processes: LMbench lat_mmap, lat_pagefault, lat_proc
//! (fork/exit, fork/exec, fork/sh) and lat_ctx.
use std::{
    os::fd::{AsRawFd, OwnedFd, RawFd},
    path::PathBuf,
};

use anyhow::{bail, Context, Result};

use crate::forker::Forker;
use crate::op::{group, Bench, Ctx, OpDef, Unit, Work};
use crate::sys::{
    child::{self, Child},
    fd::{check, close_in_child, pipe},
    file::{open_nofollow, write_new},
};

pub fn ops() -> Vec<OpDef> {
    group(
        "proc",
        Unit::NsPerOp,
        &[
            ("mmap", |c| Ok(Box::new(Mmap::new(c)?))),
            ("pagefault", |c| Ok(Box::new(PageFault::new(c)?))),
            ("fork_exit", |_| Ok(Box::new(Fork::new(None)?))),
            ("fork_exec", |_| {
                Ok(Box::new(Fork::new(Some(&["/bin/true"]))?))
            }),
            ("fork_sh", |_| {
                Ok(Box::new(Fork::new(Some(&["/bin/sh", "-c", "exit 0"]))?))
            }),
            ("ctx", |c| Ok(Box::new(CtxRing::new(c)?))),
        ],
    )
}

pub(super) const PAGE: usize = 4096;

fn data_file(c: &Ctx, name: &str, bytes: usize) -> Result<(OwnedFd, PathBuf)> {
    let path = c.dir.join(name);
    let data: Vec<u8> = (0..bytes).map(|i| (i % 251) as u8).collect();
    write_new(&path, &data)?;
    let fd = open_nofollow(&path, libc::O_RDONLY)?;
    Ok((fd, path))
}

/// Map a file, read one byte per page, unmap. `--prot-exec` maps it
/// executable (what IMA's MMAP_CHECK measures).
struct Mmap {
    fd: OwnedFd,
    bytes: usize,
    prot: i32,
}

impl Mmap {
    fn new(c: &Ctx) -> Result<Self> {
        let (fd, _) = data_file(c, "mmap", c.mmap_bytes)?;
        let prot = libc::PROT_READ | if c.prot_exec { libc::PROT_EXEC } else { 0 };
        Ok(Self {
            fd,
            bytes: c.mmap_bytes,
            prot,
        })
    }
}

impl Bench for Mmap {
    fn run(&mut self, iters: u64) -> Result<Work> {
        let (fd, mut sum) = (self.fd.as_raw_fd(), 0u64);
        for _ in 0..iters {
            // SAFETY: mapping our file read-only, reading inside it, unmapping it.
            unsafe {
                let p = libc::mmap(
                    std::ptr::null_mut(),
                    self.bytes,
                    self.prot,
                    libc::MAP_SHARED,
                    fd,
                    0,
                );
                if p == libc::MAP_FAILED {
                    bail!("mmap: {}", std::io::Error::last_os_error());
                }
                for off in (0..self.bytes).step_by(PAGE) {
                    sum += u64::from(*(p as *const u8).add(off));
                }
                libc::munmap(p, self.bytes);
            }
        }
        // Proof: bytes at page starts of the (i % 251) pattern.
        let per_map: u64 = (0..self.bytes)
            .step_by(PAGE)
            .map(|o| (o % 251) as u64)
            .sum();
        if sum != per_map * iters {
            bail!("mapped data does not match the file");
        }
        Ok(Work {
            ops: iters,
            bytes: 0,
        })
    }
}

/// One page fault per op on a file mapping (MADV_RANDOM: no fault-around).
struct PageFault {
    fd: OwnedFd,
    map: *mut libc::c_void,
    next: usize,
}

const FAULT_FILE: usize = 16 << 20;

impl PageFault {
    fn new(c: &Ctx) -> Result<Self> {
        let (fd, _) = data_file(c, "pagefault", FAULT_FILE)?;
        Ok(Self {
            fd,
            map: std::ptr::null_mut(),
            next: FAULT_FILE,
        })
    }

    fn remap(&mut self) -> Result<()> {
        // SAFETY: (re)mapping our own file.
        unsafe {
            if !self.map.is_null() {
                libc::munmap(self.map, FAULT_FILE);
            }
            let p = libc::mmap(
                std::ptr::null_mut(),
                FAULT_FILE,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                self.fd.as_raw_fd(),
                0,
            );
            if p == libc::MAP_FAILED {
                bail!("mmap: {}", std::io::Error::last_os_error());
            }
            libc::madvise(p, FAULT_FILE, libc::MADV_RANDOM);
            self.map = p;
        }
        self.next = 0;
        Ok(())
    }
}

impl Bench for PageFault {
    fn prepare(&mut self, _iters: u64) -> Result<()> {
        self.remap()
    }

    fn run(&mut self, iters: u64) -> Result<Work> {
        let mut sum = 0u64;
        for _ in 0..iters {
            if self.next >= FAULT_FILE {
                self.remap()?;
            }
            // SAFETY: inside the mapping.
            sum += u64::from(unsafe { *(self.map as *const u8).add(self.next) });
            self.next += PAGE;
        }
        std::hint::black_box(sum);
        Ok(Work {
            ops: iters,
            bytes: 0,
        })
    }
}

impl Drop for PageFault {
    fn drop(&mut self) {
        if !self.map.is_null() {
            // SAFETY: our mapping.
            unsafe { libc::munmap(self.map, FAULT_FILE) };
        }
    }
}

/// lat_proc: fork and exit, fork and exec, fork and sh, created by the small
/// C helper `lsmpmon-fork` (bench/forker.rs), not by the measuring process.
struct Fork {
    helper: Forker,
}

impl Fork {
    fn new(argv: Option<&[&str]>) -> Result<Self> {
        if let Some(a) = argv {
            if !std::path::Path::new(a[0]).exists() {
                bail!("{} not found", a[0]);
            }
        }
        Ok(Self {
            helper: Forker::spawn(argv)?,
        })
    }
}

impl Bench for Fork {
    fn run(&mut self, iters: u64) -> Result<Work> {
        self.helper.run(iters)?;
        Ok(Work {
            ops: iters,
            bytes: 0,
        })
    }

    fn helper_rss_kb(&self) -> Option<u64> {
        self.helper.rss_kb()
    }

    fn helper(&self) -> Option<String> {
        Some(self.helper.program().display().to_string())
    }
}

/// Pins the calling thread to `cpu`; returns the previous mask.
pub(super) fn pin(cpu: usize) -> Result<libc::cpu_set_t> {
    // SAFETY: cpu_set_t manipulation and affinity syscalls on this thread.
    unsafe {
        let mut old: libc::cpu_set_t = std::mem::zeroed();
        libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut old);
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        check(
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) as i64,
            "sched_setaffinity",
        )?;
        Ok(old)
    }
}

pub(super) fn unpin(old: &libc::cpu_set_t) {
    // SAFETY: restoring this thread's mask.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), old) };
}

pub(super) fn this_cpu() -> usize {
    // SAFETY: plain query.
    unsafe { libc::sched_getcpu() }.max(0) as usize
}

pub(super) fn switches(who: i32) -> u64 {
    // SAFETY: zeroed rusage out-buffer.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(who, &mut ru) };
    (ru.ru_nvcsw + ru.ru_nivcsw) as u64
}

/// lmbench's bread(): every word of a process's working set (lat_ctx -s).
fn sum_words(data: &[u64]) -> u64 {
    data.iter().fold(0u64, |a, w| a.wrapping_add(*w))
}

fn token(fd: RawFd, write: bool) -> bool {
    let mut t = [1u8; 4];
    // SAFETY: a 4-byte token through our own pipe.
    let n = unsafe {
        if write {
            libc::write(fd, t.as_ptr().cast(), 4)
        } else {
            libc::read(fd, t.as_mut_ptr().cast(), 4)
        }
    };
    n == 4
}

/// `n` pipes: (read end, write end).
fn pipes(n: usize) -> Result<Vec<(OwnedFd, OwnedFd)>> {
    (0..n).map(|_| pipe()).collect()
}

/// lat_ctx: --ctx-procs processes (lsmpmon and procs - 1 children, started
/// once, all on one CPU) pass a token around a ring of pipes, each summing
/// its own --ctx-size KiB per hop. One op = one hop = one context switch,
/// less lat_ctx's overhead: the same pipe writes, reads and sums done in one
/// process (`overhead_ns` in the result).
struct CtxRing {
    cpu: usize,
    procs: usize,
    /// The write end of the first pipe and the read end of the last: the
    /// only ring descriptors kept here, so that a ring process that dies
    /// closes the ring (its successors see EOF, and so do we).
    first: OwnedFd,
    last: OwnedFd,
    _daemons: Vec<Child>,
    data: Vec<u64>,
}

impl CtxRing {
    fn new(c: &Ctx) -> Result<Self> {
        let words = c.ctx_size_kib * 1024 / 8;
        let cpu = this_cpu();
        let old = pin(cpu)?;
        let made = pipes(c.ctx_procs).and_then(|ring| {
            let daemons = (1..c.ctx_procs)
                .map(|i| Self::daemon(&ring, i, words))
                .collect::<Result<Vec<_>>>()?;
            // Every other end is the ring processes' own: dropped here.
            let mut ends = ring.into_iter();
            let (_, first) = ends.next().context("an empty ring")?;
            let (last, _) = ends.last().context("a ring of one process")?;
            Ok(Self {
                cpu,
                procs: c.ctx_procs,
                first,
                last,
                _daemons: daemons,
                data: vec![1; words],
            })
        });
        unpin(&old);
        made
    }

    /// Ring process `i`: reads the token from pipe i - 1, writes it to pipe
    /// i. It closes every other ring descriptor it inherited, so that it
    /// sees EOF (and leaves) when its neighbours go.
    fn daemon(ring: &[(OwnedFd, OwnedFd)], i: usize, words: usize) -> Result<Child> {
        let (rd, wr) = (ring[i - 1].0.as_raw_fd(), ring[i].1.as_raw_fd());
        let others: Vec<RawFd> = ring
            .iter()
            .flat_map(|(r, w)| [r.as_raw_fd(), w.as_raw_fd()])
            .filter(|fd| *fd != rd && *fd != wr)
            .collect();
        child::fork(|| {
            close_in_child(others);
            let data = vec![1u64; words];
            while token(rd, false) {
                std::hint::black_box(sum_words(&data));
                if !token(wr, true) {
                    break;
                }
            }
        })
    }
}

impl Bench for CtxRing {
    fn run(&mut self, iters: u64) -> Result<Work> {
        let procs = self.procs as u64;
        let rounds = iters.div_ceil(procs);
        let (first, last) = (self.first.as_raw_fd(), self.last.as_raw_fd());
        let old = pin(self.cpu)?;
        let before = switches(libc::RUSAGE_SELF);
        let mut lost = false;
        for _ in 0..rounds {
            if !token(first, true) || !token(last, false) {
                lost = true;
                break;
            }
            std::hint::black_box(sum_words(&self.data));
        }
        let mine = switches(libc::RUSAGE_SELF) - before;
        unpin(&old);
        if lost {
            bail!("the ring lost a process: a pipe of the ring was closed");
        }
        if mine < rounds / 2 {
            bail!("only {mine} context switches in {rounds} rounds: the ring did not switch");
        }
        Ok(Work {
            ops: rounds * procs,
            bytes: 0,
        })
    }

    /// lat_ctx's overhead: a token written to and read back from each pipe
    /// in turn, and the sum, in one process (the median of 7 runs).
    fn overhead_ns(&mut self) -> Result<Option<f64>> {
        const PASSES: usize = 1000;
        let ring = pipes(self.procs)?;
        let mut runs = Vec::new();
        for _ in 0..7 {
            let start = std::time::Instant::now();
            for k in 0..PASSES {
                let (rd, wr) = &ring[k % ring.len()];
                if !token(wr.as_raw_fd(), true) || !token(rd.as_raw_fd(), false) {
                    bail!("overhead pipe: {}", std::io::Error::last_os_error());
                }
                std::hint::black_box(sum_words(&self.data));
            }
            runs.push(start.elapsed().as_nanos() as f64 / PASSES as f64);
        }
        runs.sort_by(f64::total_cmp);
        Ok(Some(runs[runs.len() / 2]))
    }
}
