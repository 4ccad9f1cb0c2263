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

/// Calls `f(key, per-CPU values)` for every entry of a per-CPU hash map.
pub fn for_each_percpu_hash<K: Copy, V: Copy>(
    map: BorrowedFd,
    mut f: impl FnMut(&K, &[V]),
) -> Result<()> {
    let fd = map.as_raw_fd();
    // The kernel writes a value for every possible CPU: a guess could overrun.
    let cpus = libbpf_rs::num_possible_cpus()?;
    let (key_size, value_size) = (std::mem::size_of::<K>(), std::mem::size_of::<V>());
    // The kernel lays each CPU's value out at a multiple of 8 bytes.
    let stride = value_size.next_multiple_of(8);
    let mut keys = vec![0u8; BATCH as usize * key_size];
    let mut values = vec![0u8; BATCH as usize * stride * cpus];
    let (mut token, mut first) = (0u32, true);
    loop {
        let mut count = BATCH;
        let in_batch = match first {
            true => std::ptr::null_mut(),
            false => &mut token as *mut u32 as *mut _,
        };
        // SAFETY: buffers hold BATCH keys and BATCH per-CPU value sets; a
        // hash map's batch token is a u32 bucket index.
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
        for i in 0..count as usize {
            // SAFETY: within the buffers; K and V are plain data.
            let key: K =
                unsafe { std::ptr::read_unaligned(keys.as_ptr().add(i * key_size) as *const K) };
            let per_cpu: Vec<V> = (0..cpus)
                .map(|c| {
                    let off = (i * cpus + c) * stride;
                    // SAFETY: as above.
                    unsafe { std::ptr::read_unaligned(values.as_ptr().add(off) as *const V) }
                })
                .collect();
            f(&key, &per_cpu);
        }
        first = false;
        if done || count == 0 {
            return Ok(());
        }
    }
}
