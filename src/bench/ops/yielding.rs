//! The pseudo multi-process paper's experiment (Table 3): two tasks on one CPU
//! switching with sched_yield, as two processes (two address spaces: a page-
//! table switch per switch) or as two threads of one address space (none).
//! `yield_rounds_*` is the paper's own program (both tasks yield in a loop; one
//! op = one round); `yield_*` hands an explicit turn back and forth (one op =
//! one hand-over, which needs a context switch).
use anyhow::{bail, Result};

use super::process::{pin, switches, this_cpu, unpin, PAGE};
use crate::bench::op::{group, Bench, OpDef, Unit, Work, YIELD_GROUP};
use crate::bench::sys::child;

pub fn ops() -> Vec<OpDef> {
    group(
        YIELD_GROUP,
        Unit::NsPerOp,
        &[
            ("yield_proc", |_| Ok(Box::new(Yield { threads: false }))),
            ("yield_thread", |_| Ok(Box::new(Yield { threads: true }))),
            ("yield_rounds_proc", |_| {
                Ok(Box::new(Rounds { threads: false }))
            }),
            ("yield_rounds_thread", |_| {
                Ok(Box::new(Rounds { threads: true }))
            }),
        ],
    )
}

/// Runs `body(1)` in a second task (a forked process or a thread) and
/// `body(0)` here, both pinned to this CPU; returns the context switches the
/// two made.
fn two_tasks(threads: bool, body: impl Fn(u64) + Send + Sync + 'static) -> Result<u64> {
    let cpu = this_cpu();
    let old = pin(cpu)?;
    let body = std::sync::Arc::new(body);
    let result = if threads {
        let before = switches(libc::RUSAGE_SELF);
        let other = body.clone();
        let t = std::thread::spawn(move || {
            let _ = pin(cpu);
            other(1);
        });
        body(0);
        t.join()
            .map_err(|_| anyhow::anyhow!("yield thread panicked"))
            .map(|()| switches(libc::RUSAGE_SELF) - before)
    } else {
        let count = || switches(libc::RUSAGE_SELF) + switches(libc::RUSAGE_CHILDREN);
        let before = count();
        child::fork(|| body(1)).and_then(|child| {
            body(0);
            child.wait_ok("yield child")?;
            Ok(count() - before)
        })
    };
    unpin(&old);
    result
}

/// The paper's program: each task calls sched_yield once per round.
struct Rounds {
    threads: bool,
}

impl Bench for Rounds {
    fn run(&mut self, iters: u64) -> Result<Work> {
        let seen = two_tasks(self.threads, move |_| {
            for _ in 0..iters {
                // SAFETY: plain syscall.
                unsafe { libc::sched_yield() };
            }
        })?;
        // Two runnable tasks on one CPU: each yield gives the CPU to the other.
        if seen < iters {
            bail!("only {seen} context switches in {iters} rounds of sched_yield: were both tasks on one CPU?");
        }
        Ok(Work {
            ops: iters,
            bytes: 0,
        })
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
        let turn = Turn::new()?;
        let seen = two_tasks(self.threads, move |me| turn.play(me, iters))?;
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
