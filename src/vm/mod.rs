//! `lsmpmon vm`: run a command under a real Debian kernel, with the LSMs you
//! choose, in a throwaway QEMU guest. Reused by the lab.
pub mod build;
pub mod cache;
pub mod guest;
pub mod initramfs;
pub mod interrupt;
pub mod kernel;
pub mod lock;
pub mod mirror;
pub mod own;
pub mod qemu;

use std::{
    fs,
    path::{Path, PathBuf},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use anyhow::{Context, Result};
use clap::{Args, Subcommand};

use crate::base::error::usage;
use qemu::Accel;

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
    #[arg(long, value_parser = crate::base::parse::list)]
    pub lsm: Option<String>,
    /// Extra kernel command-line parameters.
    #[arg(long, default_value = "")]
    pub append: String,
    /// Wall-clock seconds before the guest is killed.
    #[arg(long, default_value_t = 900, value_parser = clap::value_parser!(u64).range(1..=604_800))]
    pub timeout: u64,
    /// Guest memory, MiB (at least 96: a guest does not boot with much less).
    #[arg(long, default_value_t = 1024, value_parser = memory_mb)]
    pub memory_mb: u32,
    /// tcg: deterministic virtual time (default). kvm only where it works.
    #[arg(long, value_enum, default_value = "tcg")]
    pub accel: Accel,
    /// QEMU -icount setting for tcg ("off" for none). See BENCHMARKS.md for what each part buys.
    #[arg(long, default_value = "shift=0,sleep=off")]
    pub icount: String,
    /// QEMU -rtc setting ("clock=vm": the guest's wall clock follows virtual time).
    #[arg(long, default_value = "clock=vm")]
    pub rtc: String,
    /// Guest CPUs (QEMU -smp). With tcg and -icount they take turns on one host thread.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=MAX_CPUS as i64))]
    pub cpus: u32,
    /// Keep kernel address-space randomisation (default: nokaslr, for repeatability).
    #[arg(long)]
    pub kaslr: bool,
    /// Copy a host file into the guest: HOST[:GUEST] (default GUEST: /usr/bin/NAME). Repeatable.
    #[arg(long = "copy", value_name = "HOST[:GUEST]")]
    pub copies: Vec<String>,
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
    #[arg(long, env = "LSMPMON_CACHE")]
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

#[derive(Args, Debug)]
pub struct CacheArgs {
    #[command(flatten)]
    pub cache: CacheDir,
    /// Remove guest run logs (and, with --all, kernels and apt lists too).
    #[arg(long)]
    pub clean: bool,
    #[arg(long, requires = "clean")]
    pub all: bool,
}

/// The least memory `vm run` accepts. Booting `vm run --kernel K --memory-mb N
/// -- true` (an 8 MiB initramfs): 80 MiB boots 5.10, 6.1 and 6.12 (twice each);
/// 6.1 and 6.12 fail at 76 and 72, 5.10 at 64 ("Initramfs unpacking failed",
/// then a panic). 16 MiB on top leave room for the initramfs to grow (`--copy`,
/// a bigger binary); below this a guest would end as a crash (124).
pub const MIN_MEMORY_MB: u32 = 96;
/// QEMU's `-m` above this is refused before booting.
pub const MAX_MEMORY_MB: u32 = 65_536;
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

pub fn main(cmd: VmCommand) -> Result<i32> {
    match cmd {
        VmCommand::Run(args) => run(&args),
        VmCommand::Cache(args) => cache(&args),
        VmCommand::GuestExec { spec } => guest::exec(&spec).map(|_| crate::base::error::EXIT_OK),
    }
}

/// How QEMU runs a guest: the `vm run` options the lab shares.
#[derive(Debug, Clone)]
pub struct Machine {
    pub memory_mb: u32,
    pub accel: Accel,
    pub icount: String,
    pub rtc: String,
    pub kaslr: bool,
    pub timeout: Duration,
    /// Guest CPUs (QEMU -smp). Under TCG with -icount they run one at a
    /// time, round-robin, on one host thread (see BENCHMARKS.md).
    pub cpus: u32,
}

impl Machine {
    /// The documented defaults: deterministic virtual time.
    pub fn deterministic(timeout: Duration) -> Self {
        Self {
            memory_mb: 1024,
            accel: Accel::Tcg,
            icount: "shift=0,sleep=off".into(),
            rtc: "clock=vm".into(),
            kaslr: false,
            timeout,
            cpus: 1,
        }
    }
}

/// One guest boot, as `vm run` and the lab need it.
pub struct Launch<'a> {
    pub kernel: &'a kernel::Kernel,
    pub lsm: Option<&'a str>,
    pub append: &'a str,
    pub extra: Vec<initramfs::Entry>,
    pub argv: Vec<String>,
    pub lsmpmon_bin: PathBuf,
    pub machine: &'a Machine,
    pub qemu_args: Vec<String>,
    pub run_dir: &'a Path,
    pub output: qemu::Output<'a>,
}

/// Why `--cpus N` needs `--icount off`: found by booting 6.1 with -smp 2.
pub const SMP_ICOUNT: &str = "QEMU 7.2 hangs bringing up a second vCPU under -icount \
     (\"x86: Booting SMP configuration:\", virtual time stops)";

pub fn run(args: &RunArgs) -> Result<i32> {
    if args.cpus > 1 && args.accel == Accel::Tcg && args.icount != "off" {
        return Err(usage(format!(
            "--cpus {}: {SMP_ICOUNT}; add --icount off (real, not deterministic, time)",
            args.cpus
        )));
    }
    let interrupt = interrupt::exit_now()?;
    let cache = args.cache.path();
    let extra = args
        .copies
        .iter()
        .map(|c| parse_copy(c).map(|(h, g)| initramfs::Entry::host(h, &g, 0o755)))
        .collect::<Result<Vec<_>>>()?;
    let kernel = kernel::ensure(&cache, &args.kernel, &args.flavour, args.mirror.as_deref())?;
    if own::runs_trace(&args.command) {
        own::check_trace(&kernel)?;
    }
    let bin = match &args.lsmpmon_bin {
        Some(p) => p.clone(),
        None => std::env::current_exe().context("locating the lsmpmon binary")?,
    };
    let machine = Machine {
        memory_mb: args.memory_mb,
        accel: args.accel,
        icount: args.icount.clone(),
        rtc: args.rtc.clone(),
        kaslr: args.kaslr,
        timeout: Duration::from_secs(args.timeout),
        cpus: args.cpus,
    };
    let stop = interrupt.into_stop_flag()?;
    let run_dir = RunDir(new_run_dir(&cache)?);
    launch(&Launch {
        kernel: &kernel,
        lsm: args.lsm.as_deref(),
        append: &args.append,
        extra,
        argv: args.command.clone(),
        lsmpmon_bin: bin,
        machine: &machine,
        qemu_args: Vec::new(),
        run_dir: &run_dir.0,
        output: qemu::Output::Terminal { cancel: &stop },
    })
}

/// A `vm run` directory, removed when nothing was logged in it (the run
/// failed before QEMU started: a `--copy` that cannot be read, say).
struct RunDir(PathBuf);

impl Drop for RunDir {
    fn drop(&mut self) {
        // Only an empty directory is removed: logs are kept.
        let _ = fs::remove_dir(&self.0);
    }
}

/// Boots the guest and runs `argv` in it; returns its exit status.
pub fn launch(l: &Launch) -> Result<i32> {
    let busybox = Path::new("/bin/busybox");
    if !busybox.exists() {
        return Err(usage(
            "/bin/busybox not found: apt-get install busybox-static (scripts/setup.sh does)",
        ));
    }
    let spec = guest::RunSpec {
        argv: l.argv.clone(),
        kernel: Some(l.kernel.reference()),
    };
    // Both in memory: QEMU reads what was built and checked, and nothing is
    // left on disk however lsmpmon ends.
    let initramfs = cache::memfd("lsmpmon-initramfs")?;
    initramfs::build(
        &mut &initramfs,
        busybox,
        &l.lsmpmon_bin,
        &l.extra,
        &serde_json::to_vec(&spec)?,
    )?;
    let vmlinuz = cache::verified_copy(&l.kernel.vmlinuz, &l.kernel.vmlinuz_sha256)?;
    qemu::boot(&qemu::Boot {
        vmlinuz: &vmlinuz,
        initramfs: &initramfs,
        cmdline: cmdline(l),
        machine: l.machine,
        extra_args: &l.qemu_args,
        run_dir: l.run_dir,
        output: &l.output,
    })
}

fn cmdline(l: &Launch) -> String {
    let m = l.machine;
    let mut cmdline = format!(
        "console=ttyS0 quiet panic=-1 oops=panic{} {}={}",
        if m.kaslr { "" } else { " nokaslr" },
        crate::model::provenance::VM_PARAM,
        // What the guest's clock is: virtual (tcg) or the emulation's real time.
        match (m.accel, m.icount.as_str()) {
            (Accel::Tcg, "off") => "tcg-real",
            (Accel::Tcg, _) => "tcg",
            (Accel::Kvm, _) => "kvm",
        }
    );
    if let Some(lsm) = l.lsm {
        cmdline += &format!(" lsm={lsm}");
    }
    if !l.append.is_empty() {
        cmdline += " ";
        cmdline += l.append;
    }
    cmdline
}

/// `HOST[:GUEST]` -> (host path, guest path without the leading '/').
fn parse_copy(spec: &str) -> Result<(PathBuf, String)> {
    let (host, guest) = match spec.split_once(':') {
        Some((h, g)) => (PathBuf::from(h), g.to_string()),
        None => {
            let name = Path::new(spec)
                .file_name()
                .ok_or_else(|| usage(format!("--copy {spec}: not a file name")))?;
            (
                PathBuf::from(spec),
                format!("/usr/bin/{}", name.to_string_lossy()),
            )
        }
    };
    if !host.is_file() {
        return Err(usage(format!(
            "--copy {spec}: {} is not a file",
            host.display()
        )));
    }
    let guest = guest.trim_start_matches('/').to_string();
    if guest.is_empty() || guest.split('/').any(|c| c == "..") {
        return Err(usage(format!("--copy {spec}: bad guest path")));
    }
    Ok((host, guest))
}

/// Guest logs kept in the cache; older ones are pruned at each run.
const RUNS_KEPT: usize = 50;

pub fn new_run_dir(cache: &Path) -> Result<PathBuf> {
    let runs = cache::real_dir(cache, Path::new("runs"))?;
    let mut old: Vec<PathBuf> = fs::read_dir(&runs)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    // Names start with a millisecond timestamp: sorting by name is by age.
    old.sort();
    if old.len() >= RUNS_KEPT {
        for p in &old[..=old.len() - RUNS_KEPT] {
            let _ = fs::remove_dir_all(p);
        }
    }
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis();
    let dir = runs.join(format!("{stamp}-{}", std::process::id()));
    // Made now, by us: nothing planted there beforehand is written through.
    fs::create_dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

fn cache(args: &CacheArgs) -> Result<i32> {
    let cache = args.cache.path();
    if args.clean {
        let targets: &[&str] = if args.all {
            &["runs", "kernels", "apt"]
        } else {
            &["runs"]
        };
        for t in targets {
            let _ = fs::remove_dir_all(cache.join(t));
        }
    }
    println!("{}", cache.display());
    for sub in ["kernels", "apt", "runs"] {
        let p = cache.join(sub);
        println!("  {sub:<8} {:>10}", human_bytes(dir_size(&p)));
        if sub == "kernels" {
            for k in fs::read_dir(&p).into_iter().flatten().flatten() {
                let name = k.file_name().to_string_lossy().into_owned();
                // Not the fetch lock.
                if !name.starts_with('.') {
                    println!("    {name}");
                }
            }
        }
    }
    println!("  total    {:>10}", human_bytes(dir_size(&cache)));
    Ok(0)
}

fn dir_size(p: &Path) -> u64 {
    let Ok(meta) = fs::symlink_metadata(p) else {
        return 0;
    };
    if !meta.is_dir() {
        return meta.len();
    }
    fs::read_dir(p)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| dir_size(&e.path()))
        .sum()
}

fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut v = n as f64;
    let mut i = 0;
    while v >= 1024.0 && i < UNITS.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    format!("{v:.1} {}", UNITS[i])
}
