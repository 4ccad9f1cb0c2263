//! One guest boot, as `vm run` and the lab need it: the initramfs built in
//! memory, the checked kernel image, the kernel command line.
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::machine::{Accel, Machine};
use super::{cache, guest, initramfs, kernel, qemu};
use base::error::usage;

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
    /// COMMAND gets the user's terminal (`vm run --tty`).
    pub tty: Option<super::tty::Tty>,
}

/// Boots the guest and runs `argv` in it; returns its exit status.
pub fn launch(l: &Launch) -> Result<i32> {
    let busybox = Path::new(initramfs::BUSYBOX);
    if !busybox.exists() {
        return Err(usage(
            "/bin/busybox not found: apt-get install busybox-static (scripts/setup.sh does)",
        ));
    }
    let spec = guest::RunSpec {
        argv: l.argv.clone(),
        kernel: Some(l.kernel.reference()),
        tty: l.tty.clone(),
        host_unix_s: Some(model::provenance::unix_now_s()),
        hotplug_cpus: l.machine.hotplugs_cpus().then_some(l.machine.cpus),
    };
    // Both in memory: QEMU reads what was built and checked, and nothing is
    // left on disk however lsmpmon ends.
    let initramfs = cache::memfd("lsmpmon-initramfs")?;
    let module = test_module(l.kernel);
    initramfs::build(
        &mut &initramfs,
        busybox,
        &l.lsmpmon_bin,
        l.extra.iter().chain(&module),
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
        tty: l.tty.is_some(),
    })
}

/// The kernel's test module for the guest, where its entry kept one (an
/// entry whose file went missing gives none: only the module ops fail).
fn test_module(kernel: &kernel::Kernel) -> Option<initramfs::Entry> {
    let module = kernel.test_module_path().filter(|p| p.is_file())?;
    let name = module.file_name()?.to_string_lossy().into_owned();
    let guest = format!("{}/{name}", model::provenance::TEST_MODULE_DIR);
    Some(initramfs::Entry::host(module, &guest, 0o644))
}

fn cmdline(l: &Launch) -> String {
    let m = l.machine;
    let mut cmdline = format!(
        "console=ttyS0 quiet panic=-1 oops=panic{} {}={}",
        if m.kaslr { "" } else { " nokaslr" },
        model::provenance::VM_PARAM,
        // What the guest's clock is: virtual (tcg) or the emulation's real time.
        match (m.accel, m.icount.as_str()) {
            (Accel::Tcg, "off") => "tcg-real",
            (Accel::Tcg, _) => "tcg",
            (Accel::Kvm, _) => "kvm",
        }
    );
    if m.hotplugs_cpus() {
        // The others come online by hotplug (guest::RunSpec::hotplug_cpus).
        cmdline += " maxcpus=1";
    }
    if let Some(lsm) = l.lsm {
        cmdline += &format!(" lsm={lsm}");
    }
    if !l.append.is_empty() {
        cmdline += " ";
        cmdline += l.append;
    }
    cmdline
}
