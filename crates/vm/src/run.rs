//! `lsmpmon vm run`: COMMAND in a throwaway guest; its run directory.
use std::{
    fs,
    path::{Path, PathBuf},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use anyhow::{Context, Result};

use super::args::RunArgs;
use super::kernel::{self, trace_needs};
use super::launch::{launch, Launch};
use super::machine::Machine;
use super::{cache, elf, forward, initramfs, interrupt, qemu};
use base::error::usage;

pub fn run(args: &RunArgs) -> Result<i32> {
    let tty = args.tty.then(super::tty::host).transpose()?;
    let interrupt = interrupt::exit_now()?;
    let cache = args.cache.path();
    // Everything the user can get wrong is refused here, before the kernel
    // is fetched and the guest boots (exit 2, not a crash after the boot).
    let (bin, bin_bytes) = match &args.lsmpmon_bin {
        Some(p) => (p.clone(), elf::static_executable("--lsmpmon-bin", p)?),
        None => {
            let me = std::env::current_exe().context("locating the lsmpmon binary")?;
            let bytes = elf::static_executable("this lsmpmon", &me)?;
            (me, bytes)
        }
    };
    let mut extra = Vec::new();
    let mut copied_bytes = 0;
    for spec in &args.copies {
        let (host, guest, bytes) = parse_copy(spec)?;
        if extra.iter().any(|e: &initramfs::Entry| e.guest == guest) {
            return Err(usage(format!(
                "--copy {spec}: another --copy already goes to /{guest}: give each its own guest path"
            )));
        }
        extra.push(initramfs::Entry::host(host, &guest, 0o755));
        copied_bytes += bytes;
    }
    initramfs::check_fits(
        copied_bytes + initramfs::lsmpmon_slot(bin_bytes),
        args.memory_mb,
    )?;
    forward::check_free(&args.forwards)?;
    let mut qemu_args = Vec::new();
    let kernel = if args.forwards.is_empty() {
        kernel::ensure(&cache, &args.kernel, &args.flavour, args.mirror.as_deref())?
    } else {
        let k = kernel::ensure_net(&cache, &args.kernel, &args.flavour, args.mirror.as_deref())?;
        extra.extend(forward::guest_files(&k));
        qemu_args = forward::qemu_args(&args.forwards);
        k
    };
    if trace_needs::runs_trace(&args.command) {
        trace_needs::check_trace(&kernel)?;
    }
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
        qemu_args,
        run_dir: &run_dir.0,
        output: qemu::Output::Terminal { cancel: &stop },
        tty,
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

/// `HOST[:GUEST]` -> (host path, guest path without the leading '/', the
/// host file's size). Only stat: nothing is read before the size is checked.
fn parse_copy(spec: &str) -> Result<(PathBuf, String, u64)> {
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
    let size = fs::metadata(&host)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .ok_or_else(|| {
            usage(format!(
                "--copy {spec}: {} is not a regular file",
                host.display()
            ))
        })?;
    let Some(guest) = guest.strip_prefix('/') else {
        return Err(usage(format!(
            "--copy {spec}: the guest path must be absolute (HOST:/root/NAME, say)"
        )));
    };
    let guest = guest.trim_start_matches('/').to_string();
    if guest.is_empty() || guest.split('/').any(|c| matches!(c, "" | "." | "..")) {
        return Err(usage(format!(
            "--copy {spec}: bad guest path (give a file's absolute path, without . or ..)"
        )));
    }
    if let Some(why) = initramfs::reserved(&guest) {
        return Err(usage(format!(
            "--copy {spec}: {why}: copy it elsewhere (/root/NAME, or /usr/bin/NAME by default)"
        )));
    }
    let absolute = Path::new("/").join(&guest);
    if let Some(dir) = initramfs::mounted_over().find(|d| absolute.starts_with(d)) {
        return Err(usage(format!(
            "--copy {spec}: the guest mounts a fresh file system on {dir} at boot, which would hide \
             the copy: copy it elsewhere (/root/NAME, or /usr/bin/NAME by default)"
        )));
    }
    Ok((host, guest, size))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_under_a_directory_mounted_at_boot_are_refused() {
        let host = std::env::temp_dir().join(format!("copy-{}", std::process::id()));
        fs::write(&host, b"x").unwrap();
        let h = host.display();
        let default = parse_copy(&h.to_string()).unwrap();
        assert_eq!(
            default.1,
            format!("usr/bin/{}", host.file_name().unwrap().to_string_lossy())
        );
        assert_eq!(default.2, 1, "the host file's size");
        assert_eq!(parse_copy(&format!("{h}:/root/x")).unwrap().1, "root/x");
        // /tmpfoo is not under /tmp.
        assert_eq!(parse_copy(&format!("{h}:/tmpfoo")).unwrap().1, "tmpfoo");
        for guest in [
            "/tmp/x",
            "/run/a/b",
            "/proc/x",
            "/dev/pts/x",
            "/sys/fs/bpf/p",
        ] {
            let err = parse_copy(&format!("{h}:{guest}")).unwrap_err().to_string();
            assert!(err.contains("mounts a fresh file system"), "{guest}: {err}");
        }
        assert!(parse_copy(&format!("{h}:/a/../tmp/x")).is_err());
        fs::remove_file(&host).unwrap();
    }

    /// Issue 34 item 21: a copy onto /init panicked the guest, one into
    /// /lsmpmon silently replaced lsmpmon's own script, and a relative guest
    /// path was taken as one under /.
    #[test]
    fn copies_onto_lsmpmons_own_files_or_relative_paths_are_refused() {
        let host = std::env::temp_dir().join(format!("copy-own-{}", std::process::id()));
        fs::write(&host, b"x").unwrap();
        let h = host.display();
        for (guest, why) in [
            ("/init", "/init is lsmpmon's own file"),
            ("/lsmpmon/net.sh", "/lsmpmon is lsmpmon's own directory"),
            ("/lsmpmon/run.json", "/lsmpmon is lsmpmon's own directory"),
            ("/bin/lsmpmon", "--lsmpmon-bin"),
            ("/bin/busybox", "own file"),
            ("/usr/bin", "a directory every guest needs"),
            ("relative", "must be absolute"),
            ("tmp/x", "must be absolute"),
            ("", "must be absolute"),
            ("/", "bad guest path"),
            ("/root/", "bad guest path"),
            ("/root//x", "bad guest path"),
            ("/root/./x", "bad guest path"),
        ] {
            let err = parse_copy(&format!("{h}:{guest}")).unwrap_err();
            let text = err.to_string();
            assert!(text.contains(why), "{guest}: {text}");
            assert_eq!(base::error::exit_code(&err), 2, "{guest}");
        }
        fs::remove_file(&host).unwrap();
        let err = parse_copy("/dev/zero:/root/z").unwrap_err().to_string();
        assert!(err.contains("not a regular file"), "{err}");
    }
}
