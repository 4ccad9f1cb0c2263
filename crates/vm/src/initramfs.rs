//! The guest's root file system: busybox, the static lsmpmon and an /init that
//! sets up the documented environment, as an uncompressed newc cpio archive.
use std::{fs, io::Write, path::Path};

use anyhow::{Context, Result};

use base::{error::usage, secure_fs::read_regular};
use model::bench::FORK_HELPER_INSTALLED;

/// What every guest has before COMMAND runs (also documented in docs/vm.md).
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

/// The guest's busybox (Debian's busybox-static).
pub const BUSYBOX: &str = "/bin/busybox";

/// The directories every initramfs has (no leading '/').
const DIRS: [&str; 15] = [
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
    OWN_DIR,
    "mnt",
];

/// lsmpmon's own directory in the guest: the run file, the network script
/// and its modules.
pub const OWN_DIR: &str = "lsmpmon";

/// The files `build` writes itself outside [`OWN_DIR`] (no leading '/').
fn own_files() -> [&'static str; 9] {
    [
        "init",
        "bin/busybox",
        "bin/sh",
        "bin/lsmpmon",
        FORK_HELPER_INSTALLED.trim_start_matches('/'),
        "etc/passwd",
        "etc/group",
        "dev/console",
        "dev/null",
    ]
}

/// Why a user's file cannot be put at `guest` (no leading '/'): it would
/// replace, or turn into a directory, what the initramfs writes itself.
pub fn reserved(guest: &str) -> Option<String> {
    let path = Path::new(guest);
    let modules = model::provenance::TEST_MODULE_DIR.trim_start_matches('/');
    if path.starts_with(modules) {
        return Some(format!(
            "/{modules} holds the kernel's module for the IMA module ops"
        ));
    }
    if path.starts_with(OWN_DIR) {
        return Some(format!(
            "/{OWN_DIR} is lsmpmon's own directory in the guest (its run file and scripts)"
        ));
    }
    if let Some(own) = own_files().into_iter().find(|f| path.starts_with(f)) {
        let instead = if own == "bin/lsmpmon" {
            " (--lsmpmon-bin puts another lsmpmon there)"
        } else {
            ""
        };
        return Some(format!(
            "/{own} is lsmpmon's own file in the guest{instead}"
        ));
    }
    DIRS.contains(&guest)
        .then(|| format!("/{guest} is a directory every guest needs"))
}

/// The most QEMU loads as an x86 initrd: below the 2 GiB a kernel's boot
/// header allows (`initrd_addr_max`), and below the guest's memory.
pub const QEMU_MAX_BYTES: u64 = (2 << 30) - 1;
/// Guest memory the kernel boots in beside its initramfs (an 8 MiB
/// initramfs booted in 80 MiB and not in 76; see `machine::MIN_MEMORY_MB`).
const BOOT_MB: u64 = 64;
/// The archive's headers, /init and the run file: far less than this.
const OWN_BYTES: u64 = 1 << 20;

/// The largest initramfs a guest of `memory_mb` can unpack: while it is
/// unpacked the archive and its files are both in memory, beside what the
/// kernel boots in, and QEMU loads at most [`QEMU_MAX_BYTES`]. (With this
/// lsmpmon, 27 MiB: 112 MiB panicked unpacking it, 128 booted.)
pub fn max_bytes(memory_mb: u32) -> u64 {
    ((u64::from(memory_mb).saturating_sub(BOOT_MB) << 20) / 2).min(QEMU_MAX_BYTES)
}

/// Refuses, before anything is read, an initramfs holding `files_bytes`
/// (`vm run`'s copies and lsmpmon, by their sizes) beside busybox that a
/// guest of `memory_mb` cannot unpack: QEMU would refuse it after the
/// kernel was fetched ("initrd is too large", 124), or the guest would panic.
pub fn check_fits(files_bytes: u64, memory_mb: u32) -> Result<()> {
    let busybox = fs::metadata(BUSYBOX).map_or(0, |m| m.len());
    let total = files_bytes + busybox + FORK_HELPER.len() as u64 + OWN_BYTES;
    let max = max_bytes(memory_mb);
    if total <= max {
        return Ok(());
    }
    let mib = |b: u64| b.div_ceil(1 << 20);
    let need_mb = BOOT_MB + 2 * mib(total);
    let todo = if total <= QEMU_MAX_BYTES && need_mb <= u64::from(super::machine::MAX_MEMORY_MB) {
        format!("give --memory-mb {need_mb} or more (it holds the archive and its files at once while unpacking), or copy less")
    } else {
        "copy less (QEMU loads an initramfs of at most 2 GiB)".to_string()
    };
    Err(usage(format!(
        "--copy: the guest's initramfs would be {} MiB (the copies, lsmpmon and busybox), more \
         than a guest of --memory-mb {memory_mb} unpacks beside the {BOOT_MB} MiB its kernel boots \
         in ({} MiB): {todo}",
        mib(total),
        max >> 20
    )))
}

/// Each copy of lsmpmon in the initramfs is padded with zeros after its
/// ELF image (which the loader ignores) to the next multiple of this. Its
/// pages move every allocation the guest makes after them, so a build's
/// size alone was a draw of the guest's layout: 300 000 bytes more moved
/// 6.1's open_close by +0.6 % and creat by -9 % (BENCHMARKS.md, 'What a build moves').
/// (`machine::MIN_MEMORY_MB` holds a build of up to 24 MiB, 3 slots.)
pub const LSMPMON_SLOT_BYTES: u64 = 8 << 20;

/// The initramfs bytes a copy of an lsmpmon of `bytes` takes.
pub fn lsmpmon_slot(bytes: u64) -> u64 {
    bytes.max(1).next_multiple_of(LSMPMON_SLOT_BYTES)
}

/// Path in the guest of the run description written by `vm run`.
pub const RUN_FILE: &str = model::provenance::GUEST_RUN_FILE;

/// The fork ops' helper (crates/bench/src/forker.c, built by build.rs) that this
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
    /// This guest's lsmpmon again, in its slot (see [`LSMPMON_SLOT_BYTES`]).
    Lsmpmon,
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

    /// Another copy of the guest's lsmpmon, at `guest` (mode 0755).
    pub fn lsmpmon(guest: &str) -> Self {
        Self {
            guest: guest.trim_start_matches('/').to_string(),
            mode: 0o755,
            source: Source::Lsmpmon,
        }
    }
}

/// Writes the guest's initramfs: busybox, `lsmpmon_bin` as /bin/lsmpmon, the
/// fork ops' helper, /init, the run description and the `extra` files (parent
/// directories made as needed).
pub fn build<'a>(
    out: &mut dyn Write,
    busybox: &Path,
    lsmpmon_bin: &Path,
    extra: impl IntoIterator<Item = &'a Entry>,
    run_json: &[u8],
) -> Result<()> {
    let mut cpio = Cpio::new();
    let mut made: Vec<String> = Vec::new();
    for d in DIRS {
        cpio.dir(d);
        made.push(d.to_string());
    }
    cpio.char_dev("dev/console", 5, 1);
    cpio.char_dev("dev/null", 1, 3);
    let busybox_bytes = read_regular("the guest's busybox", busybox, QEMU_MAX_BYTES)?;
    cpio.file("bin/busybox", 0o755, &busybox_bytes);
    cpio.symlink("bin/sh", "busybox");
    let mut lsmpmon_bytes = read_regular("the guest's lsmpmon", lsmpmon_bin, QEMU_MAX_BYTES)?;
    lsmpmon_bytes.resize(lsmpmon_slot(lsmpmon_bytes.len() as u64) as usize, 0);
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
                let bytes = read_regular("a file for the guest", host, QEMU_MAX_BYTES)?;
                cpio.file(&e.guest, e.mode, &bytes);
            }
            Source::Bytes(b) => cpio.file(&e.guest, e.mode, b),
            Source::Lsmpmon => cpio.file(&e.guest, e.mode, &lsmpmon_bytes),
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

    /// The names in a newc archive, in order.
    fn names(archive: &[u8]) -> Vec<String> {
        layout(archive)
            .into_iter()
            .map(|e| e.0)
            .take_while(|n| n != "TRAILER!!!")
            .collect()
    }

    /// (name, offset, size) of each entry in a newc archive, in order.
    fn layout(archive: &[u8]) -> Vec<(String, usize, usize)> {
        let (mut at, mut out) = (0, Vec::new());
        let field = |b: &[u8]| usize::from_str_radix(std::str::from_utf8(b).unwrap(), 16).unwrap();
        while archive[at..].starts_with(b"070701") {
            let h = &archive[at..at + 110];
            let (size, name_len) = (field(&h[54..62]), field(&h[94..102]));
            let name = String::from_utf8(archive[at + 110..at + 109 + name_len].to_vec()).unwrap();
            out.push((name, at, size));
            at = (at + 110 + name_len).next_multiple_of(4);
            at = (at + size).next_multiple_of(4);
        }
        out
    }

    /// Two builds of lsmpmon of other sizes within one slot make archives
    /// alike but for their bytes: each copy the slot's size, every entry at
    /// the same offset, the archive as long. Past the slot it grows by one.
    #[test]
    fn lsmpmon_takes_its_slot_whatever_its_size() {
        let dir = std::env::temp_dir().join(format!("initramfs-slot-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let busybox = dir.join("busybox");
        fs::write(&busybox, b"bb").unwrap();
        let archive = |len: usize| {
            let bin = dir.join(format!("lsmpmon-{len}"));
            fs::write(&bin, vec![0x7f; len]).unwrap();
            let copy = Entry::lsmpmon("usr/libexec/workload");
            let after = Entry::bytes("root/after", 0o644, b"x".to_vec());
            let mut out = Vec::new();
            build(&mut out, &busybox, &bin, &[copy, after], b"{}").unwrap();
            out
        };
        let slot = LSMPMON_SLOT_BYTES as usize;
        let (small, large, over) = (archive(1000), archive(slot - 3), archive(slot + 1));
        fs::remove_dir_all(&dir).unwrap();
        let (ls, ll, lo) = (layout(&small), layout(&large), layout(&over));
        assert_eq!(ls, ll);
        assert_eq!(small.len(), large.len());
        let sizes = |l: &[(String, usize, usize)]| -> Vec<usize> {
            l.iter()
                .filter(|(n, ..)| n == "bin/lsmpmon" || n == "usr/libexec/workload")
                .map(|e| e.2)
                .collect()
        };
        assert_eq!(sizes(&ls), [slot, slot]);
        assert_eq!(sizes(&lo), [2 * slot, 2 * slot]);
        assert_eq!(lo.len(), ls.len());
        let at = |l: &[(String, usize, usize)]| {
            l.iter().find(|e| e.0 == "usr/libexec/workload").unwrap().1
        };
        let body = |a: &[u8], l: &[(String, usize, usize)]| {
            let start = (at(l) + 110 + "usr/libexec/workload".len() + 1).next_multiple_of(4);
            a[start..start + 1001].to_vec()
        };
        let mut want = vec![0x7f; 1000];
        want.push(0);
        assert_eq!(body(&small, &ls), want, "the copy is lsmpmon, then zeros");
    }

    /// A user's copy can replace nothing the initramfs writes itself: every
    /// entry of an archive without copies is reserved (lsmpmon's own files,
    /// its directory, the directories every guest needs), and paths beside
    /// them are not.
    #[test]
    fn what_the_initramfs_writes_itself_is_reserved() {
        let dir = std::env::temp_dir().join(format!("initramfs-own-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let (busybox, lsmpmon) = (dir.join("busybox"), dir.join("lsmpmon"));
        fs::write(&busybox, b"bb").unwrap();
        fs::write(&lsmpmon, b"lm").unwrap();
        let mut out = Vec::new();
        let net = Entry::bytes("lsmpmon/net.sh", 0o755, b"x".to_vec());
        build(&mut out, &busybox, &lsmpmon, &[net], b"{}").unwrap();
        fs::remove_dir_all(&dir).unwrap();
        let names = names(&out);
        assert!(names.contains(&"init".to_string()), "{names:?}");
        for name in &names {
            assert!(reserved(name).is_some(), "{name} is not reserved");
        }
        for (guest, why) in [
            ("init", "/init is lsmpmon's own file"),
            ("init/x", "/init is lsmpmon's own file"),
            ("lsmpmon/net.sh", "/lsmpmon is lsmpmon's own directory"),
            ("bin/lsmpmon", "--lsmpmon-bin"),
            ("usr/bin", "a directory every guest needs"),
        ] {
            let r = reserved(guest).unwrap();
            assert!(r.contains(why), "{guest}: {r}");
        }
        for free in [
            "usr/bin/x",
            "root/init",
            "lsmpmonx",
            "initrd",
            "bin/lsmpmon2",
        ] {
            assert_eq!(reserved(free), None, "{free}");
        }
    }

    #[test]
    fn an_initramfs_a_guest_cannot_unpack_is_refused_with_the_memory_it_needs() {
        assert_eq!(max_bytes(1024), 480 << 20);
        assert_eq!(max_bytes(128), 32 << 20);
        assert_eq!(max_bytes(65_536), QEMU_MAX_BYTES);
        check_fits(100 << 20, 1024).unwrap();
        // This lsmpmon in its slot, in the smallest guest vm run accepts.
        check_fits(LSMPMON_SLOT_BYTES * 3, super::super::machine::MIN_MEMORY_MB).unwrap();
        let err = check_fits(1_500 << 20, 1024).unwrap_err();
        let text = err.to_string();
        assert_eq!(base::error::exit_code(&err), 2);
        assert!(
            text.contains(
                "--memory-mb 1024 unpacks beside the 64 MiB its kernel boots in (480 MiB)"
            ),
            "{text}"
        );
        let need: u64 = text
            .split("give --memory-mb ")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{text}"));
        check_fits(1_500 << 20, need as u32).unwrap();
        let err = check_fits(3 << 30, 65_536).unwrap_err().to_string();
        assert!(
            err.contains("copy less (QEMU loads an initramfs of at most 2 GiB)"),
            "{err}"
        );
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
