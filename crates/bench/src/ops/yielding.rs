//! The pseudo multi-process paper's experiment (Table 3): two tasks on one CPU
//! switching with sched_yield, as two processes (two address spaces: a page-
//! table switch per switch) or as two threads of one address space (none).
//! `yield_rounds_*` is the paper's own program (both tasks yield in a loop; one
//! op = one round); `yield_*` hands an explicit turn back and forth (one op =
//! one hand-over, which needs a context switch).
use anyhow::{bail, Result};

use super::process::{pin, switches, this_cpu, unpin, PAGE};
use crate::op::{group, Bench, OpDef, Unit, Work, YIELD_GROUP};
use crate::op_names;
use crate::sys::child;

pub fn ops() -> Vec<OpDef> {
    group(
        YIELD_GROUP,
        Unit::NsPerOp,
        &[
            (op_names::YIELD_PROC, |_| {
                Ok(Box::new(Yield { threads: false }))
            }),
            (op_names::YIELD_THREAD, |_| {
                Ok(Box::new(Yield { threads: true }))
            }),
            (op_names::YIELD_ROUNDS_PROC, |_| {
                Ok(Box::new(Rounds { threads: false }))
            }),
            (op_names::YIELD_ROUNDS_THREAD, |_| {
                Ok(Box::new(Rounds { threads: true }))
            }),
        ],
    )
}

/// Runs `body(1, None)` in a second task (a forked process or a thread) and
/// `body(0, partner)` here, both pinned to this CPU; returns the context
/// switches the two made. `partner` is the forked process, which `body`
/// watches while it waits for it (false: it died); a thread cannot die alone.
fn two_tasks(
    threads: bool,
    body: impl Fn(u64, Option<libc::pid_t>) -> bool + Send + Sync + 'static,
) -> Result<u64> {
    let cpu = this_cpu();
    let old = pin(cpu)?;
    let body = std::sync::Arc::new(body);
    let result = if threads {
        let before = switches(libc::RUSAGE_SELF);
        let other = body.clone();
        let t = std::thread::spawn(move || {
            let _ = pin(cpu);
            other(1, None);
        });
        body(0, None);
        t.join()
            .map_err(|_| anyhow::anyhow!("yield thread panicked"))
            .map(|()| switches(libc::RUSAGE_SELF) - before)
    } else {
        let count = || switches(libc::RUSAGE_SELF) + switches(libc::RUSAGE_CHILDREN);
        let before = count();
        child::fork(|| {
            body(1, None);
        })
        .and_then(|child| {
            if !body(0, Some(child.pid())) {
                bail!("the yield partner process died (killed?) before the sample's end");
            }
            child.wait_ok("yield child")?;
            Ok(count() - before)
        })
    };
    unpin(&old);
    result
}

/// Whether process `pid` (our child) has ended, without reaping it.
fn ended(pid: libc::pid_t) -> bool {
    // SAFETY: zeroed out-buffer; WNOWAIT leaves the child to be reaped later.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    // SAFETY: filled in by waitid (0 when nothing has ended).
    r != 0 || unsafe { info.si_pid() } != 0
}

/// Waiting turns between two looks at whether the partner process lives:
/// a system call per this many sched_yield calls, outside any hand-over.
const CHECK_EVERY: u32 = 4096;

/// The paper's program: each task calls sched_yield once per round.
struct Rounds {
    threads: bool,
}

impl Bench for Rounds {
    fn run(&mut self, iters: u64) -> Result<Work> {
        let seen = two_tasks(self.threads, move |_, _| {
            for _ in 0..iters {
                // SAFETY: plain syscall.
                unsafe { libc::sched_yield() };
            }
            true
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

    /// Plays turns `me`, `me + 2`, … below `total`; false if `partner`
    /// ended before the last turn.
    fn play(&self, me: u64, total: u64, partner: Option<libc::pid_t>) -> bool {
        use std::sync::atomic::Ordering::SeqCst;
        // SAFETY: valid for the mapping's lifetime.
        let t = unsafe { &*self.0 };
        let mut waits = 0u32;
        loop {
            let now = t.load(SeqCst);
            if now >= total {
                return true;
            }
            if now % 2 == me {
                t.store(now + 1, SeqCst);
            } else {
                waits += 1;
                if waits % CHECK_EVERY == 0 && partner.is_some_and(ended) {
                    return false;
                }
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
        let seen = two_tasks(self.threads, move |me, partner| {
            turn.play(me, iters, partner)
        })?;
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
