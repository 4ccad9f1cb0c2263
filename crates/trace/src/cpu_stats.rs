//! The probes' per-CPU map (`cpus` in bpf/core.bpf.h), mmapped: each CPU's
//! value is a `lsmpmon_cpu` followed by the statistics of hooks 0..n
//! (n = the calibration probe). Reading and resetting it take no syscalls.
//! To save the probes work, `min_ns` starts at `u64::MAX`, and `count` is
//! kept only with `--lean` (otherwise it is the histogram's total).
use std::os::fd::{AsRawFd, BorrowedFd};

use anyhow::{bail, Result};

use crate::intf::{lsmpmon_cpu, lsmpmon_hook_stats};

/// The map's value size for `rows` statistics rows (hooks + calibration).
pub fn value_size(rows: u32) -> u32 {
    stats_offset(rows)
}

/// Where row `row`'s statistics start in a CPU's value.
pub fn stats_offset(row: u32) -> u32 {
    (std::mem::size_of::<lsmpmon_cpu>() + row as usize * std::mem::size_of::<lsmpmon_hook_stats>())
        as u32
}

pub struct CpuStats {
    base: *mut u8,
    len: usize,
    cpus: usize,
    rows: usize,
    lean: bool,
}

impl CpuStats {
    /// Maps the array `map` of `cpus` values holding `rows` statistics rows
    /// each, and makes every row empty.
    pub fn map(map: BorrowedFd, cpus: usize, rows: u32, lean: bool) -> Result<Self> {
        // SAFETY: plain query.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
        let len = (cpus * Self::elem_size(rows)).div_ceil(page) * page;
        // SAFETY: a shared mapping of a BPF_F_MMAPABLE array of `len` bytes.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                map.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            bail!(
                "mapping the probes' statistics: {}",
                std::io::Error::last_os_error()
            );
        }
        let stats = Self {
            base: base as *mut u8,
            len,
            cpus,
            rows: rows as usize,
            lean,
        };
        stats.clear();
        Ok(stats)
    }

    const EMPTY: lsmpmon_hook_stats = lsmpmon_hook_stats {
        count: 0,
        sum_ns: 0,
        min_ns: u64::MAX,
        max_ns: 0,
        cs_count: 0,
        deny: 0,
        error: 0,
        value: 0,
        dropped: 0,
        nested: 0,
        cgroup_lost_calls: 0,
        untimed: 0,
        pend_slot: 0,
        pad: 0,
        pend_count: 0,
        pend_sum_ns: 0,
        hist: [0; crate::hist::BUCKETS],
    };

    /// Array elements are 8-byte aligned.
    fn elem_size(rows: u32) -> usize {
        (value_size(rows) as usize).div_ceil(8) * 8
    }

    fn row(&self, cpu: usize, row: usize) -> *mut lsmpmon_hook_stats {
        let off = cpu * Self::elem_size(self.rows as u32) + stats_offset(row as u32) as usize;
        debug_assert!(off + std::mem::size_of::<lsmpmon_hook_stats>() <= self.len);
        // SAFETY: within the mapping (cpu < cpus, row < rows).
        unsafe { self.base.add(off) as *mut lsmpmon_hook_stats }
    }

    /// One CPU's rows, as the probes left them (`min_ns` 0 when empty).
    pub fn cpu_rows(&self, cpu: usize) -> Vec<lsmpmon_hook_stats> {
        (0..self.rows)
            .map(|row| {
                // SAFETY: plain data, written concurrently by the probes (torn
                // reads of single counters cannot happen on x86_64).
                let mut v = unsafe { std::ptr::read_volatile(self.row(cpu, row)) };
                if v.min_ns == u64::MAX {
                    v.min_ns = 0;
                }
                if !self.lean {
                    v.count = v.hist.iter().sum();
                }
                v
            })
            .collect()
    }

    /// The CPUs the map has a value for.
    pub fn cpus(&self) -> usize {
        self.cpus
    }

    /// Per row, summed over CPUs.
    pub fn sum(&self) -> Vec<lsmpmon_hook_stats> {
        let mut sums = vec![lsmpmon_hook_stats::default(); self.rows];
        for cpu in 0..self.cpus {
            for (acc, v) in sums.iter_mut().zip(self.cpu_rows(cpu)) {
                super::collect::add_stats(acc, &v);
            }
        }
        sums
    }

    /// Each CPU's timed calls of hook `row` in syscall slot `slot` not yet
    /// added to the shared per-syscall cells: `f(row, slot, count, sum_ns)`.
    pub fn pending(&self, mut f: impl FnMut(u32, u32, u64, u64)) {
        for cpu in 0..self.cpus {
            for row in 0..self.rows {
                // SAFETY: as in cpu_rows().
                let v = unsafe { std::ptr::read_volatile(self.row(cpu, row)) };
                if v.pend_count > 0 {
                    let slot = super::collect::cell_slot(v.pend_slot);
                    f(row as u32, slot, v.pend_count, v.pend_sum_ns);
                }
            }
        }
    }

    /// Restarts every row's min and max (`trace ctl reset`; the counters are
    /// never cleared, see session::Baseline).
    pub fn restart_extremes(&self) {
        for cpu in 0..self.cpus {
            for row in 0..self.rows {
                let r = self.row(cpu, row);
                // SAFETY: as in cpu_rows(); two aligned u64 stores.
                unsafe {
                    std::ptr::write_volatile(std::ptr::addr_of_mut!((*r).min_ns), u64::MAX);
                    std::ptr::write_volatile(std::ptr::addr_of_mut!((*r).max_ns), 0);
                }
            }
        }
    }

    /// Zeroes the statistics, leaving the CPUs' stacks of calls in progress alone.
    pub fn clear(&self) {
        for cpu in 0..self.cpus {
            for row in 0..self.rows {
                // SAFETY: as in cpu_rows().
                unsafe { std::ptr::write_volatile(self.row(cpu, row), Self::EMPTY) };
            }
        }
    }
}

impl Drop for CpuStats {
    fn drop(&mut self) {
        // SAFETY: the mapping made in map().
        unsafe { libc::munmap(self.base as *mut _, self.len) };
    }
}
