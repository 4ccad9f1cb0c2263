//! Where a measurement runs: kernel, active LSMs, host or guest, real or
//! virtual time. Read from the running system, never assumed.
use std::{fs, time::SystemTime};

use crate::model::{KernelRef, Provenance};

/// Kernel parameter `vm run` adds so the guest knows how its clock runs.
pub const VM_PARAM: &str = "lsmpmon.vm";

pub fn collect() -> Provenance {
    // SAFETY: uname fills a zeroed struct.
    let uts = unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        libc::uname(&mut u);
        u
    };
    let field = |f: &[libc::c_char]| {
        // SAFETY: utsname fields are NUL-terminated.
        unsafe { std::ffi::CStr::from_ptr(f.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    };
    let cmdline = fs::read_to_string("/proc/cmdline").unwrap_or_default();
    let vm = cmdline
        .split_whitespace()
        .find_map(|p| p.strip_prefix(&format!("{VM_PARAM}=")).map(String::from));
    let (environment, time) = match vm.as_deref() {
        Some("tcg") => ("guest", "virtual"),
        // Without -icount, TCG guest time follows the host's clock.
        Some(_) => ("guest", "real"),
        None => ("host", "real"),
    };
    Provenance {
        tool: "lsmpmon",
        version: env!("CARGO_PKG_VERSION"),
        kernel_release: field(&uts.release),
        active_lsms: active_lsms(),
        environment: environment.into(),
        time: time.into(),
        hostname: field(&uts.nodename),
        started_unix_s: SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        kernel: vm.and_then(|_| booted_kernel()),
    }
}

/// Where `vm run` puts the guest's run description (argv, the kernel it
/// booted) in the initramfs, relative to `/`.
pub const GUEST_RUN_FILE: &str = "lsmpmon/run.json";

/// The kernel `vm run` booted this guest with (None on a host).
pub fn booted_kernel() -> Option<KernelRef> {
    #[derive(serde::Deserialize)]
    struct Booted {
        #[serde(default)]
        kernel: Option<KernelRef>,
    }
    let bytes = fs::read(std::path::Path::new("/").join(GUEST_RUN_FILE)).ok()?;
    serde_json::from_slice::<Booted>(&bytes).ok()?.kernel
}

/// Active LSMs in order, from securityfs (empty if securityfs is not mounted).
pub fn active_lsms() -> Vec<String> {
    fs::read_to_string("/sys/kernel/security/lsm")
        .unwrap_or_default()
        .trim()
        .split(',')
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}
