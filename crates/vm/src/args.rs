//! `lsmpmon vm`'s command line: its subcommands, options and their bounds.
use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::machine::Accel;
pub use super::machine::{MAX_MEMORY_MB, MIN_MEMORY_MB};

#[derive(Subcommand, Debug)]
pub enum VmCommand {
    /// Boot a Debian kernel and run COMMAND inside as root; exits with its status.
    Run(Box<RunArgs>),
    /// Show what the cache holds and its size, or clean it.
    Cache(CacheArgs),
    /// (inside the guest) run the command of the guest's run file.
    #[command(hide = true)]
    GuestExec { spec: PathBuf },
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Kernel series: 5.10 (bullseye), 6.1 (bookworm), 6.12 (trixie), 7.3 (trixie-backports);
    /// or a PATH: a bzImage with its config beside it (config-<release> or config), or a
    /// Debian kernel package (.deb; for 7.x linux-binary-*, its linux-base-* beside it).
    #[arg(long, default_value = "6.1")]
    pub kernel: String,
    /// Debian kernel flavour.
    #[arg(long, default_value = "cloud")]
    pub flavour: String,
    /// LSMs to activate, in order (the kernel's lsm= parameter). Default: the kernel's own.
    #[arg(long, value_parser = base::parse::list)]
    pub lsm: Option<String>,
    /// Extra kernel command-line parameters.
    #[arg(long, default_value = "")]
    pub append: String,
    /// Wall-clock seconds before the guest is killed.
    #[arg(long, default_value_t = 900, value_parser = clap::value_parser!(u64).range(1..=604_800))]
    pub timeout: u64,
    /// Guest memory, MiB (at least 128: the kernel and twice the initramfs, which holds lsmpmon padded to 24 MiB).
    #[arg(long, default_value_t = 1024, value_parser = memory_mb)]
    pub memory_mb: u32,
    /// tcg: deterministic virtual time (default). kvm only where it works.
    #[arg(long, value_enum, default_value = "tcg")]
    pub accel: Accel,
    /// QEMU -icount setting for tcg ("off" for none). See BENCHMARKS.md for what each part buys.
    #[arg(long, default_value = "shift=0,sleep=off", value_parser = super::machine::icount)]
    pub icount: String,
    /// QEMU -rtc setting ("clock=vm": the guest's wall clock follows virtual time;
    /// "base=2000-01-01": it starts at the same date every boot, so that the kernel's
    /// random seeds and with them the figures repeat).
    #[arg(long, default_value = super::machine::RTC_DEFAULT, value_parser = super::machine::rtc)]
    pub rtc: String,
    /// Guest CPUs (QEMU -smp). With tcg and -icount they take turns on one host thread, and
    /// the guest boots on one (maxcpus=1) and brings the others online before COMMAND.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=MAX_CPUS as i64))]
    pub cpus: u32,
    /// Keep kernel address-space randomisation (default: nokaslr, for repeatability).
    #[arg(long)]
    pub kaslr: bool,
    /// Copy a host file into the guest: HOST[:GUEST] (default GUEST: /usr/bin/NAME; not under /tmp, /run, /dev, /proc or /sys, which the guest mounts afresh at boot). Repeatable.
    #[arg(long = "copy", value_name = "HOST[:GUEST]")]
    pub copies: Vec<String>,
    /// Forward a guest TCP port to 127.0.0.1:HOST (QEMU user network, a
    /// virtio-net card; the guest reaches nothing else). Repeatable.
    #[arg(long = "forward", value_name = "HOST:GUEST", value_parser = super::forward::parse)]
    pub forwards: Vec<super::forward::Forward>,
    /// Give COMMAND this terminal (the guest's console port, raw; its size
    /// and TERM): for `lsmpmon top` in a guest. Kernel messages show there too.
    #[arg(long)]
    pub tty: bool,
    /// lsmpmon binary to put in the guest (must be static). Default: this one.
    #[arg(long)]
    pub lsmpmon_bin: Option<PathBuf>,
    #[command(flatten)]
    pub cache: CacheDir,
    /// Debian archive to fetch kernels from. Default: this machine's apt sources.
    #[arg(long, env = "LSMPMON_MIRROR", value_name = "URL")]
    pub mirror: Option<String>,
    /// The command and its arguments, passed exactly.
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

#[derive(Args, Debug, Clone)]
pub struct CacheDir {
    /// Where kernels, apt lists and guest run logs are kept.
    #[arg(long, env = "LSMPMON_CACHE", value_parser = cache_dir)]
    pub cache_dir: Option<PathBuf>,
}

impl CacheDir {
    pub fn path(&self) -> PathBuf {
        self.cache_dir.clone().unwrap_or_else(|| {
            std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
                .unwrap_or_else(|| PathBuf::from("/var/cache"))
                .join("lsmpmon")
        })
    }
}

/// `--cache-dir`: a directory, or a path where one can be made.
fn cache_dir(s: &str) -> Result<PathBuf, String> {
    if s.is_empty() {
        return Err("an empty path".into());
    }
    match std::fs::metadata(s) {
        Ok(m) if !m.is_dir() => Err("not a directory".into()),
        _ => Ok(PathBuf::from(s)),
    }
}

#[derive(Args, Debug)]
pub struct CacheArgs {
    #[command(flatten)]
    pub cache: CacheDir,
    /// Remove guest run logs (and, with --all, kernels and apt lists too).
    #[arg(long)]
    pub clean: bool,
    /// With --clean: remove the kernels and apt lists too (fetched again when needed).
    #[arg(long, requires = "clean")]
    pub all: bool,
}

/// Guest CPUs accepted by `--cpus`.
pub const MAX_CPUS: u32 = 8;

/// `--memory-mb`: enough for the guest to boot, at most MAX_MEMORY_MB.
pub fn memory_mb(s: &str) -> Result<u32, String> {
    let mb: u32 = s
        .parse()
        .map_err(|_| format!("'{s}' is not a number of MiB"))?;
    if !(MIN_MEMORY_MB..=MAX_MEMORY_MB).contains(&mb) {
        return Err(format!(
            "the guest needs {MIN_MEMORY_MB} to {MAX_MEMORY_MB} MiB (it does not boot with less)"
        ));
    }
    Ok(mb)
}
