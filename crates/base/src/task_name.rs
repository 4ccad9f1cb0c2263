//! The calling thread's name (comm), as the kernel keeps it: 15 bytes and
//! a NUL. What `bpf_get_current_comm` compares, and what a trace's `--comm`
//! and the comm-matching policies (bpf-lsm, mac-path, mac-inode) see.

/// The kernel keeps 15 bytes of a task's name.
pub const MAX_LEN: usize = 15;

pub type Comm = [u8; 16];

/// `name`'s first 15 bytes and a NUL.
pub fn comm(name: &str) -> Comm {
    let mut c = [0u8; 16];
    for (o, b) in c.iter_mut().zip(name.bytes().take(MAX_LEN)) {
        *o = b;
    }
    c
}

/// The name an exec of `path` gives a task (its file name, cut to 15 bytes).
pub fn of_exec(path: &str) -> String {
    let base = path.rsplit('/').next().unwrap_or(path);
    base.chars().take(MAX_LEN).collect()
}

pub fn get() -> Comm {
    let mut c = [0u8; 16];
    // SAFETY: PR_GET_NAME writes at most 16 bytes.
    unsafe { libc::prctl(libc::PR_GET_NAME, c.as_mut_ptr()) };
    c
}

/// Async-signal-safe (one prctl): a new child may call it before exec.
pub fn set(c: &Comm) {
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes.
    unsafe { libc::prctl(libc::PR_SET_NAME, c.as_ptr()) };
}

/// The thread's name set for a scope and restored on drop.
pub struct Scoped(Comm);

impl Scoped {
    pub fn set(name: &Comm) -> Self {
        let old = get();
        set(name);
        Self(old)
    }
}

impl Drop for Scoped {
    fn drop(&mut self) {
        set(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scoped_name_is_the_threads_until_dropped() {
        std::thread::spawn(|| {
            let own = get();
            {
                let _n = Scoped::set(&comm("a-name-longer-than-fifteen"));
                assert_eq!(&get(), &comm("a-name-longer-t"));
            }
            assert_eq!(get(), own);
        })
        .join()
        .unwrap();
        assert_eq!(of_exec("/usr/libexec/lsmpmon-workload"), "lsmpmon-workloa");
    }
}
