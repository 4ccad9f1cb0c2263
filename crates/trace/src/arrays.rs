//! Reading BPF array maps in batches (one syscall per few
//! thousand entries instead of one per entry).
use std::os::fd::{AsRawFd, BorrowedFd};

use anyhow::{bail, Result};

const BATCH: u32 = 4096;

pub fn possible_cpus() -> usize {
    libbpf_rs::num_possible_cpus().unwrap_or(1).max(1)
}

/// Calls `f(key, value)` for every key < `n_keys`.
pub fn for_each<T: Copy>(map: BorrowedFd, n_keys: u32, mut f: impl FnMut(u32, &T)) -> Result<()> {
    let fd = map.as_raw_fd();
    let stride = std::mem::size_of::<T>();
    let mut keys = vec![0u32; BATCH as usize];
    let mut values = vec![0u8; BATCH as usize * stride];
    let mut token = 0u32;
    let mut first = true;
    let mut seen = 0u32;
    while seen < n_keys {
        let mut count = BATCH;
        let in_batch = if first {
            std::ptr::null_mut()
        } else {
            &mut token as *mut u32 as *mut _
        };
        // SAFETY: buffers hold BATCH keys and BATCH * stride value bytes.
        let err = unsafe {
            libbpf_sys::bpf_map_lookup_batch(
                fd,
                in_batch,
                &mut token as *mut u32 as *mut _,
                keys.as_mut_ptr() as *mut _,
                values.as_mut_ptr() as *mut _,
                &mut count,
                std::ptr::null(),
            )
        };
        let done = err == -libc::ENOENT;
        if err != 0 && !done {
            bail!(
                "reading BPF map: {}",
                std::io::Error::from_raw_os_error(-err)
            );
        }
        for (i, key) in keys.iter().take(count as usize).enumerate() {
            if *key >= n_keys {
                continue;
            }
            let off = i * stride;
            // SAFETY: off + size_of::<T>() is within values; T is plain data.
            let v: T = unsafe { std::ptr::read_unaligned(values.as_ptr().add(off) as *const T) };
            f(*key, &v);
        }
        seen += count;
        first = false;
        if done || count == 0 {
            break;
        }
    }
    Ok(())
}
