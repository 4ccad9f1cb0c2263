//! Where a measurement runs: kernel, active LSMs, host or guest, real or
//! virtual time. Read from the running system, never assumed.
use std::{fmt, fs, time::SystemTime};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use base::version;

/// How and where a figure was obtained.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Provenance {
    /// "lsmpmon".
    pub tool: String,
    /// The lsmpmon version that measured.
    pub version: String,
    /// The git commit that lsmpmon was built from (a build from a checkout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// The SHA-256 of the executable that measured: the build itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executable_sha256: Option<String>,
    pub kernel_release: String,
    /// From securityfs `lsm`, in the kernel's order.
    pub active_lsms: Vec<String>,
    pub environment: Environment,
    pub time: TimeMode,
    pub hostname: String,
    /// Seconds since the Unix epoch when the measurement started.
    pub started_unix_s: u64,
    /// In a `vm run` guest: the kernel it booted, as the host fetched or was given it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<KernelRef>,
}

/// The host itself, or a QEMU guest started by `lsmpmon vm run` or `lab`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Environment {
    Host,
    Guest,
}

/// How time was measured: the host's clock, or QEMU's -icount (1 ns is
/// about one guest instruction, deterministic).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum TimeMode {
    Real,
    Virtual,
}

impl TimeMode {
    pub fn name(self) -> &'static str {
        match self {
            TimeMode::Real => "real",
            TimeMode::Virtual => "virtual",
        }
    }
}

impl fmt::Display for TimeMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Environment {
    pub fn name(self) -> &'static str {
        match self {
            Environment::Host => "host",
            Environment::Guest => "guest",
        }
    }
}

impl fmt::Display for Environment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A kernel a guest booted: the Debian packages it came from (or the user's
/// file), with their sha256.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct KernelRef {
    /// A Debian series (`5.10` … `7.3`), or `path` for a kernel given by path.
    pub series: String,
    pub flavour: String,
    /// The package (or file name) holding the image.
    pub package: String,
    pub package_version: String,
    /// sha256 of that package file (of the image, for a bzImage given by path).
    pub deb_sha256: String,
    /// `uname -r` of the kernel.
    pub release: String,
    /// Every package file used (7.x: the image's and the config's), in order.
    #[serde(default)]
    pub packages: Vec<PackageRef>,
    /// sha256 of the kernel image booted.
    #[serde(default)]
    pub image_sha256: String,
    /// The file given with `--kernel PATH`, absolute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The sizes of a kernel lsmpmon built (absent for Debian's and older builds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<ImageSizes>,
}

/// What a built kernel weighs: its compressed image, the whole `vmlinux`, and
/// the parts of it the security options bring (`security` for the objects in
/// `security/` itself: the framework, capabilities, securityfs; `security/<module>`
/// for each module's directory; `kernel/bpf/bpf_lsm.o`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct ImageSizes {
    /// sha256 of the recipe's fragment before its overrides: two builds
    /// of one source with equal fragments differ by their overrides alone.
    #[serde(default)]
    pub fragment_sha256: String,
    /// sha256 of the patch applied to the source (absent: none was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_patch_sha256: Option<String>,
    pub bzimage_bytes: u64,
    pub vmlinux: SectionSizes,
    #[serde(default)]
    pub parts: std::collections::BTreeMap<String, SectionSizes>,
}

/// `size`'s Berkeley figures: text (code and read-only data), data, bss.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
pub struct SectionSizes {
    pub text_bytes: u64,
    pub data_bytes: u64,
    pub bss_bytes: u64,
}

impl SectionSizes {
    pub fn total_bytes(&self) -> u64 {
        self.text_bytes + self.data_bytes + self.bss_bytes
    }
}

/// One package file: name, version and sha256 of the .deb.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct PackageRef {
    pub name: String,
    pub version: String,
    pub sha256: String,
}

/// Kernel parameter `vm run` adds so the guest knows how its clock runs.
pub const VM_PARAM: &str = "lsmpmon.vm";

/// Where every guest finds its kernel's test module (a small module of the
/// kernel's own package, when it has one): the one `.ko` file there.
pub const TEST_MODULE_DIR: &str = "/lib/lsmpmon/modules";

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
        Some("tcg") => (Environment::Guest, TimeMode::Virtual),
        // Without -icount, TCG guest time follows the host's clock.
        Some(_) => (Environment::Guest, TimeMode::Real),
        None => (Environment::Host, TimeMode::Real),
    };
    Provenance {
        tool: "lsmpmon".into(),
        version: version::VERSION.into(),
        commit: version::commit().map(String::from),
        executable_sha256: version::executable_sha256().map(String::from),
        kernel_release: field(&uts.release),
        active_lsms: active_lsms(),
        environment,
        time,
        hostname: field(&uts.nodename),
        started_unix_s: match vm {
            Some(_) => guest_started_unix_s().unwrap_or_else(unix_now_s),
            None => unix_now_s(),
        },
        kernel: vm.and_then(|_| booted_kernel()),
    }
}

/// Where `vm run` puts the guest's run description (argv, the kernel it
/// booted) in the initramfs, relative to `/`.
pub const GUEST_RUN_FILE: &str = "lsmpmon/run.json";

/// This machine's clock, seconds since the epoch.
pub fn unix_now_s() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// In a guest: the host's clock when it built the guest plus the guest's
/// seconds since boot (its own clock starts at a fixed date, for repeatable
/// random seeds). None without the host's time in the run file.
fn guest_started_unix_s() -> Option<u64> {
    #[derive(serde::Deserialize)]
    struct Booted {
        host_unix_s: Option<u64>,
    }
    let bytes = fs::read(std::path::Path::new("/").join(GUEST_RUN_FILE)).ok()?;
    let host = serde_json::from_slice::<Booted>(&bytes).ok()?.host_unix_s?;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec for the call's duration.
    let up_s = match unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) } {
        0 => u64::try_from(ts.tv_sec).unwrap_or(0),
        _ => 0,
    };
    Some(host + up_s)
}

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
