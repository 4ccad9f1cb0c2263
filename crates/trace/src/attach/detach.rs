//! Releasing the probes: every link closed (in threads, or by a child that
//! outlives lsmpmon), then what the method must undo after (kretprobe events).
use std::{
    os::fd::{AsRawFd, OwnedFd},
    thread,
    time::Instant,
};

use super::kretprobe::Removal;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DetachMode {
    /// Hand the links to a child process that releases them after lsmpmon
    /// exits (probes are already disabled by the gate).
    Background,
    /// Release every link before exiting, however long the kernel takes.
    Wait,
}

/// Closes `links`, then `progs`; returns how long lsmpmon waited, in milliseconds.
///
/// Each hook's trampoline is unregistered from ftrace when its last link goes,
/// and the kernel (6.1 and later) waits for two RCU-tasks grace periods under
/// a global mutex each time: about 125 ms per hook, in series, whatever we do.
/// `Background` therefore gives the links to a child that outlives us.
pub fn release(
    mut links: Vec<OwnedFd>,
    progs: Vec<OwnedFd>,
    removal: Option<Removal>,
    mode: DetachMode,
) -> f64 {
    let start = Instant::now();
    if mode == DetachMode::Background && release_in_child(&links, removal.as_ref()) {
        // Our copies only drop references; the child holds the links.
        drop(links);
        drop(progs);
        return start.elapsed().as_secs_f64() * 1e3;
    }
    let threads = links.len().clamp(1, 64);
    let chunk = links.len().div_ceil(threads).max(1);
    let mut handles = Vec::new();
    while !links.is_empty() {
        let part: Vec<OwnedFd> = links.drain(..chunk.min(links.len())).collect();
        handles.push(thread::spawn(move || drop(part)));
    }
    for h in handles {
        let _ = h.join();
    }
    if let Some(removal) = removal {
        removal.run();
    }
    drop(progs);
    start.elapsed().as_secs_f64() * 1e3
}

/// What `ps` shows for the release child, instead of the trace's command line.
const RELEASE_NAME: &[u8] = b"lsmpmon: releasing probes\0";

/// Names the release child (comm and command line). Raw syscalls only. The
/// kernel reads a command line from anonymous memory only, hence the page.
fn name_release_child() {
    // SAFETY: an anonymous page of our own, then prctl on it; failures leave the old name.
    unsafe {
        libc::prctl(libc::PR_SET_NAME, c"lsmpmon-release".as_ptr());
        let page = libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if page == libc::MAP_FAILED {
            return;
        }
        std::ptr::copy_nonoverlapping(RELEASE_NAME.as_ptr(), page as *mut u8, RELEASE_NAME.len());
        let start = page as libc::c_ulong;
        let end = start + RELEASE_NAME.len() as libc::c_ulong;
        // The kernel wants start <= end after each call: whichever order works.
        for (opt, addr) in [
            (libc::PR_SET_MM_ARG_END, end),
            (libc::PR_SET_MM_ARG_START, start),
            (libc::PR_SET_MM_ARG_END, end),
        ] {
            libc::prctl(libc::PR_SET_MM, opt, addr, 0, 0);
        }
    }
}

/// Forks a child that closes `links` one by one, runs `removal` and exits.
/// Returns false if the fork failed (the caller then detaches in the foreground).
fn release_in_child(links: &[OwnedFd], removal: Option<&Removal>) -> bool {
    let fds: Vec<i32> = links.iter().map(|l| l.as_raw_fd()).collect();
    // SAFETY: the child only calls async-signal-safe functions (open, dup2,
    // close, setsid, prctl, mmap, write, _exit) before exiting.
    unsafe {
        match libc::fork() {
            -1 => false,
            0 => {
                libc::setsid();
                super::super::guard::mark_release();
                name_release_child();
                let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
                for std_fd in 0..3 {
                    libc::dup2(null, std_fd);
                }
                for fd in fds {
                    libc::close(fd);
                }
                if let Some(r) = removal {
                    r.run();
                }
                libc::_exit(0)
            }
            _ => true,
        }
    }
}
