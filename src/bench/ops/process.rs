//! Memory mapping and processes: LMbench lat_mmap, lat_pagefault, lat_proc
//! (fork/exit, fork/exec, fork/sh), lat_ctx, and the pseudo-multi-process paper's sched_yield
//! ping-pong between two processes vs. two threads of one address space.
use std::{ffi::CString, path::PathBuf};

use anyhow::{bail, Result};

use super::{check, fork_child, group, wait_ok, Bench, Ctx, OpDef, Unit, Work};

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
            ("ctx", |_| Ok(Box::new(CtxRing))),
            ("yield_proc", |_| Ok(Box::new(Yield { threads: false }))),
            ("yield_thread", |_| Ok(Box::new(Yield { threads: true }))),
        ],
    )
}

const PAGE: usize = 4096;

fn data_file(c: &Ctx, name: &str, bytes: usize) -> Result<(i32, PathBuf)> {
    let path = c.dir.join(name);
    let data: Vec<u8> = (0..bytes).map(|i| (i % 251) as u8).collect();
    super::write_new(&path, &data)?;
    let fd = super::open_nofollow(&path, libc::O_RDONLY)?;
    Ok((fd, path))
}

/// Map a file, read one byte per page, unmap. `--prot-exec` maps it
/// executable (what IMA's MMAP_CHECK measures).
struct Mmap {
    fd: i32,
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
        let mut sum = 0u64;
        for _ in 0..iters {
            // SAFETY: mapping our file read-only, reading inside it, unmapping it.
            unsafe {
                let p = libc::mmap(
                    std::ptr::null_mut(),
                    self.bytes,
                    self.prot,
                    libc::MAP_SHARED,
                    self.fd,
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

impl Drop for Mmap {
    fn drop(&mut self) {
        // SAFETY: our fd.
        unsafe { libc::close(self.fd) };
    }
}

/// One page fault per op on a file mapping (MADV_RANDOM: no fault-around).
struct PageFault {
    fd: i32,
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
                self.fd,
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
        // SAFETY: our mapping and fd.
        unsafe {
            if !self.map.is_null() {
                libc::munmap(self.map, FAULT_FILE);
            }
            libc::close(self.fd);
        }
    }
}

struct Fork {
    argv: Option<Vec<CString>>,
}

impl Fork {
    fn new(argv: Option<&[&str]>) -> Result<Self> {
        let argv = match argv {
            Some(a) => {
                if !std::path::Path::new(a[0]).exists() {
                    bail!("{} not found", a[0]);
                }
                Some(
                    a.iter()
                        .map(|s| CString::new(*s))
                        .collect::<Result<_, _>>()?,
                )
            }
            None => None,
        };
        Ok(Self { argv })
    }
}

impl Bench for Fork {
    fn run(&mut self, iters: u64) -> Result<Work> {
        let ptrs: Option<Vec<*const libc::c_char>> = self.argv.as_ref().map(|a| {
            a.iter()
                .map(|s| s.as_ptr())
                .chain(std::iter::once(std::ptr::null()))
                .collect()
        });
        let env: [*const libc::c_char; 1] = [std::ptr::null()];
        for _ in 0..iters {
            let pid = fork_child(|| {
                if let Some(p) = &ptrs {
                    // SAFETY: NULL-terminated argv and envp.
                    unsafe { libc::execve(p[0], p.as_ptr(), env.as_ptr()) };
                    // SAFETY: exec failed: leave with an error status.
                    unsafe { libc::_exit(127) };
                }
            })?;
            wait_ok(pid, "fork child")?;
        }
        Ok(Work {
            ops: iters,
            bytes: 0,
        })
    }
}

/// Pins the calling thread to `cpu`; returns the previous mask.
fn pin(cpu: usize) -> Result<libc::cpu_set_t> {
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

fn unpin(old: &libc::cpu_set_t) {
    // SAFETY: restoring this thread's mask.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), old) };
}

fn this_cpu() -> usize {
    // SAFETY: plain query.
    unsafe { libc::sched_getcpu() }.max(0) as usize
}

fn switches(who: i32) -> u64 {
    // SAFETY: zeroed rusage out-buffer.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(who, &mut ru) };
    (ru.ru_nvcsw + ru.ru_nivcsw) as u64
}

/// lat_ctx with 2 processes and no working set: a token around a ring of
/// pipes, both on one CPU, so every hop is a context switch. One op = one hop.
struct CtxRing;

impl Bench for CtxRing {
    fn run(&mut self, iters: u64) -> Result<Work> {
        let old = pin(this_cpu())?;
        let result = (|| {
            let (mut a, mut b) = ([0i32; 2], [0i32; 2]);
            // SAFETY: arrays of two fds.
            check(unsafe { libc::pipe(a.as_mut_ptr()) } as i64, "pipe")?;
            check(unsafe { libc::pipe(b.as_mut_ptr()) } as i64, "pipe")?;
            let rounds = iters.div_ceil(2);
            let child = fork_child(|| {
                let mut t = [0u8; 1];
                for _ in 0..rounds {
                    // SAFETY: one-byte token over our pipes.
                    unsafe {
                        if libc::read(a[0], t.as_mut_ptr().cast(), 1) != 1
                            || libc::write(b[1], t.as_ptr().cast(), 1) != 1
                        {
                            libc::_exit(1);
                        }
                    }
                }
            })?;
            let before = switches(libc::RUSAGE_SELF);
            let mut t = [0u8; 1];
            for _ in 0..rounds {
                // SAFETY: as above.
                unsafe {
                    if libc::write(a[1], t.as_ptr().cast(), 1) != 1
                        || libc::read(b[0], t.as_mut_ptr().cast(), 1) != 1
                    {
                        bail!("token lost: {}", std::io::Error::last_os_error());
                    }
                }
            }
            let mine = switches(libc::RUSAGE_SELF) - before;
            wait_ok(child, "ctx ring child")?;
            for fd in a.iter().chain(b.iter()) {
                // SAFETY: our fds.
                unsafe { libc::close(*fd) };
            }
            if mine < rounds / 2 {
                bail!("only {mine} context switches in {rounds} rounds: the ring did not switch");
            }
            Ok(Work {
                ops: 2 * rounds,
                bytes: 0,
            })
        })();
        unpin(&old);
        result
    }
}

/// Two tasks on one CPU hand a turn back and forth, calling sched_yield until
/// it is theirs (the pseudo-multi-process paper): processes sharing one page, or two threads of one
/// address space. One op = one hand-over, which needs a context switch.
struct Yield {
    threads: bool,
}

/// A shared, page-aligned turn counter that survives fork.
struct Turn(*mut std::sync::atomic::AtomicU64);

// SAFETY: the counter is an atomic in a shared mapping.
unsafe impl Send for Turn {}
unsafe impl Sync for Turn {}

impl Turn {
    fn new() -> Result<Self> {
        // SAFETY: an anonymous shared page, zero-filled.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            bail!("mmap: {}", std::io::Error::last_os_error());
        }
        Ok(Self(p.cast()))
    }

    fn play(&self, me: u64, total: u64) {
        use std::sync::atomic::Ordering::SeqCst;
        // SAFETY: valid for the mapping's lifetime.
        let t = unsafe { &*self.0 };
        loop {
            let now = t.load(SeqCst);
            if now >= total {
                return;
            }
            if now % 2 == me {
                t.store(now + 1, SeqCst);
            } else {
                // SAFETY: plain syscall.
                unsafe { libc::sched_yield() };
            }
        }
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        // SAFETY: our mapping.
        unsafe { libc::munmap(self.0.cast(), PAGE) };
    }
}

impl Bench for Yield {
    fn run(&mut self, iters: u64) -> Result<Work> {
        let cpu = this_cpu();
        let old = pin(cpu)?;
        let turn = std::sync::Arc::new(Turn::new()?);
        let result: Result<u64> = if self.threads {
            let before = switches(libc::RUSAGE_SELF);
            let other = turn.clone();
            let t = std::thread::spawn(move || {
                let _ = pin(cpu);
                other.play(1, iters);
            });
            turn.play(0, iters);
            t.join()
                .map_err(|_| anyhow::anyhow!("yield thread panicked"))?;
            Ok(switches(libc::RUSAGE_SELF) - before)
        } else {
            let before = switches(libc::RUSAGE_SELF) + switches(libc::RUSAGE_CHILDREN);
            let child = fork_child(|| turn.play(1, iters))?;
            turn.play(0, iters);
            wait_ok(child, "yield child")?;
            Ok(switches(libc::RUSAGE_SELF) + switches(libc::RUSAGE_CHILDREN) - before)
        };
        unpin(&old);
        let seen = result?;
        if seen < iters / 2 {
            bail!(
                "only {seen} context switches for {iters} hand-overs: were both tasks on one CPU?"
            );
        }
        Ok(Work {
            ops: iters,
            bytes: 0,
        })
    }
}
