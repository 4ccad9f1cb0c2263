//! The guest's root file system: busybox, the static lsmpmon and an /init that
//! sets up the documented environment, as an uncompressed newc cpio archive.
use std::{fs, io::Write, path::Path};

use anyhow::{Context, Result};

use crate::model::bench::FORK_HELPER_INSTALLED;

/// What every guest has before COMMAND runs (also documented in the README).
pub const INIT_SCRIPT: &str = r#"#!/bin/busybox sh
/bin/busybox --install -s
export PATH=/bin:/sbin:/usr/bin:/usr/sbin HOME=/root
mount -t devtmpfs dev /dev
mkdir -p /dev/pts
mount -t devpts devpts /dev/pts
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t tmpfs -o mode=1777 tmp /tmp
mount -t tmpfs run /run
mount -t securityfs security /sys/kernel/security
mount -t tracefs tracefs /sys/kernel/tracing
mount -t debugfs debugfs /sys/kernel/debug
mount -t bpf bpf /sys/fs/bpf
mount -t cgroup2 cgroup2 /sys/fs/cgroup
ip link set lo up
hostname lsmpmon-guest
[ -x /lsmpmon/net.sh ] && /lsmpmon/net.sh
cd /root
exec /bin/lsmpmon vm guest-exec /lsmpmon/run.json
"#;

/// The directories /init mounts a file system on (read from [`INIT_SCRIPT`]):
/// whatever the initramfs holds under them is hidden at boot.
pub fn mounted_over() -> impl Iterator<Item = &'static str> {
    INIT_SCRIPT
        .lines()
        .filter(|l| l.starts_with("mount "))
        .filter_map(|l| l.split_whitespace().last())
}

/// Path in the guest of the run description written by `vm run`.
pub const RUN_FILE: &str = crate::model::provenance::GUEST_RUN_FILE;

/// The fork ops' helper (src/bench/forker.c, built by build.rs) that this
/// lsmpmon carries into its guests, at `FORK_HELPER_INSTALLED`.
const FORK_HELPER: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/lsmpmon-fork"));

pub struct Cpio {
    buf: Vec<u8>,
    ino: u32,
}

impl Default for Cpio {
    fn default() -> Self {
        Self::new()
    }
}

impl Cpio {
    pub fn new() -> Self {
        Self {
            buf: Vec::new(),
            ino: 1,
        }
    }

    fn entry(&mut self, name: &str, mode: u32, rdev: (u32, u32), data: &[u8]) {
        let name_z = format!("{name}\0");
        let header = format!(
            "070701{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}",
            self.ino,
            mode,
            0,
            0,
            1,
            0,
            data.len(),
            0,
            0,
            rdev.0,
            rdev.1,
            name_z.len(),
            0
        );
        self.ino += 1;
        self.buf.extend_from_slice(header.as_bytes());
        self.buf.extend_from_slice(name_z.as_bytes());
        self.pad();
        self.buf.extend_from_slice(data);
        self.pad();
    }

    fn pad(&mut self) {
        while self.buf.len() % 4 != 0 {
            self.buf.push(0);
        }
    }

    pub fn dir(&mut self, name: &str) {
        self.entry(name, 0o040755, (0, 0), &[]);
    }

    pub fn file(&mut self, name: &str, mode: u32, data: &[u8]) {
        self.entry(name, 0o100000 | mode, (0, 0), data);
    }

    pub fn symlink(&mut self, name: &str, target: &str) {
        self.entry(name, 0o120777, (0, 0), target.as_bytes());
    }

    pub fn char_dev(&mut self, name: &str, major: u32, minor: u32) {
        self.entry(name, 0o020600, (major, minor), &[]);
    }

    pub fn finish(mut self) -> Vec<u8> {
        self.entry("TRAILER!!!", 0, (0, 0), &[]);
        while self.buf.len() % 512 != 0 {
            self.buf.push(0);
        }
        self.buf
    }
}

/// A file to put in the guest: its path there (no leading '/'), mode and bytes.
pub struct Entry {
    pub guest: String,
    pub mode: u32,
    pub source: Source,
}

pub enum Source {
    Host(std::path::PathBuf),
    Bytes(Vec<u8>),
}

impl Entry {
    pub fn host(host: impl Into<std::path::PathBuf>, guest: &str, mode: u32) -> Self {
        Self {
            guest: guest.trim_start_matches('/').to_string(),
            mode,
            source: Source::Host(host.into()),
        }
    }

    pub fn bytes(guest: &str, mode: u32, data: Vec<u8>) -> Self {
        Self {
            guest: guest.trim_start_matches('/').to_string(),
            mode,
            source: Source::Bytes(data),
        }
    }
}

/// Writes the guest's initramfs: busybox, `lsmpmon_bin` as /bin/lsmpmon, the
/// fork ops' helper, /init, the run description and the `extra` files (parent
/// directories made as needed).
pub fn build(
    out: &mut dyn Write,
    busybox: &Path,
    lsmpmon_bin: &Path,
    extra: &[Entry],
    run_json: &[u8],
) -> Result<()> {
    let mut cpio = Cpio::new();
    let mut made: Vec<String> = Vec::new();
    for d in [
        "bin",
        "sbin",
        "usr",
        "usr/bin",
        "usr/sbin",
        "usr/libexec",
        "dev",
        "proc",
        "sys",
        "tmp",
        "run",
        "etc",
        "root",
        "lsmpmon",
        "mnt",
    ] {
        cpio.dir(d);
        made.push(d.to_string());
    }
    cpio.char_dev("dev/console", 5, 1);
    cpio.char_dev("dev/null", 1, 3);
    let busybox_bytes =
        fs::read(busybox).with_context(|| format!("reading {}", busybox.display()))?;
    cpio.file("bin/busybox", 0o755, &busybox_bytes);
    cpio.symlink("bin/sh", "busybox");
    let lsmpmon_bytes =
        fs::read(lsmpmon_bin).with_context(|| format!("reading {}", lsmpmon_bin.display()))?;
    cpio.file("bin/lsmpmon", 0o755, &lsmpmon_bytes);
    let helper = FORK_HELPER_INSTALLED.trim_start_matches('/');
    cpio.file(helper, 0o755, FORK_HELPER);
    cpio.file("init", 0o755, INIT_SCRIPT.as_bytes());
    cpio.file("etc/passwd", 0o644, b"root:x:0:0:root:/root:/bin/sh\n");
    cpio.file("etc/group", 0o644, b"root:x:0:\n");
    cpio.file(RUN_FILE, 0o644, run_json);
    for e in extra {
        // Parent directories first (cpio needs them before their files).
        let comps: Vec<&str> = e.guest.split('/').collect();
        for i in 1..comps.len() {
            let parent = comps[..i].join("/");
            if !made.contains(&parent) {
                cpio.dir(&parent);
                made.push(parent);
            }
        }
        match &e.source {
            Source::Host(host) => {
                let bytes =
                    fs::read(host).with_context(|| format!("reading {}", host.display()))?;
                cpio.file(&e.guest, e.mode, &bytes);
            }
            Source::Bytes(b) => cpio.file(&e.guest, e.mode, b),
        }
    }
    out.write_all(&cpio.finish())
        .context("writing the initramfs")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mounted_over_directories_are_inits_mount_points() {
        let dirs: Vec<&str> = mounted_over().collect();
        for d in [
            "/dev",
            "/dev/pts",
            "/proc",
            "/sys",
            "/tmp",
            "/run",
            "/sys/fs/bpf",
        ] {
            assert!(dirs.contains(&d), "{d}: {dirs:?}");
        }
        assert!(!dirs.contains(&"/root") && !dirs.contains(&"/usr/bin"));
    }

    #[test]
    fn newc_entries_are_aligned_and_terminated() {
        let mut c = Cpio::new();
        c.file("a", 0o644, b"hello");
        let bytes = c.finish();
        assert!(bytes.starts_with(b"070701"));
        assert_eq!(bytes.len() % 512, 0);
        let text = String::from_utf8_lossy(&bytes);
        assert!(text.contains("TRAILER!!!"));
        // name "a\0" after a 110-byte header, padded to 4, then the data.
        assert_eq!(&bytes[112..117], b"hello");
    }

    /// Every guest gets the fork ops' helper where bench looks for it: the
    /// static, non-PIE program build.rs made (ELF type EXEC, not DYN).
    #[test]
    fn the_guest_has_the_fork_helper_in_usr_libexec() {
        let dir = std::env::temp_dir().join(format!("initramfs-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let (busybox, lsmpmon) = (dir.join("busybox"), dir.join("lsmpmon"));
        fs::write(&busybox, b"bb").unwrap();
        fs::write(&lsmpmon, b"lm").unwrap();
        let mut out = Vec::new();
        build(&mut out, &busybox, &lsmpmon, &[], b"{}").unwrap();
        fs::remove_dir_all(&dir).unwrap();
        let name = b"usr/libexec/lsmpmon-fork\0";
        let at = out
            .windows(name.len())
            .position(|w| w == name)
            .expect("helper entry");
        let data = &out[(at + name.len()).next_multiple_of(4)..];
        assert_eq!(&data[..FORK_HELPER.len()], FORK_HELPER);
        assert_eq!(&FORK_HELPER[..4], b"\x7fELF");
        assert_eq!(
            u16::from_le_bytes([FORK_HELPER[16], FORK_HELPER[17]]),
            2,
            "ET_EXEC"
        );
    }
}
