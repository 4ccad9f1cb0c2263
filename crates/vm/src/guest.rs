//! The guest side of `vm run`: PID 1 after /init. Runs COMMAND with its output
//! on the result ports, reaps orphans, reports the status and powers off.
use std::{
    fs::{self, File, OpenOptions},
    io::Write,
    os::fd::AsRawFd,
    os::unix::process::ExitStatusExt,
    path::Path,
    process::{Command, Stdio},
};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::qemu::{GUEST_STATUS, GUEST_STDERR, GUEST_STDOUT};

/// What the host asks the guest to run, written into the initramfs.
#[derive(Debug, Serialize, Deserialize)]
pub struct RunSpec {
    pub argv: Vec<String>,
    /// The kernel the guest boots, for the provenance of what runs in it.
    #[serde(default)]
    pub kernel: Option<model::KernelRef>,
    /// COMMAND gets the console port as its terminal (`vm run --tty`).
    #[serde(default)]
    pub tty: Option<super::tty::Tty>,
    /// The host's clock when it built the guest: the guest's own starts at
    /// a fixed date (`machine::RTC_FIXED_BASE`).
    #[serde(default)]
    pub host_unix_s: Option<u64>,
    /// Booted with `maxcpus=1`: bring CPUs 1..N online before COMMAND
    /// (`Machine::hotplugs_cpus`).
    #[serde(default)]
    pub hotplug_cpus: Option<u32>,
}

fn open_raw(path: &str) -> Result<File> {
    let f = OpenOptions::new()
        .write(true)
        .open(path)
        .with_context(|| format!("opening {path}"))?;
    // SAFETY: termios is plain data; the fd is open for the call's duration.
    unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(f.as_raw_fd(), &mut t) == 0 {
            libc::cfmakeraw(&mut t);
            libc::tcsetattr(f.as_raw_fd(), libc::TCSANOW, &t);
        }
    }
    Ok(f)
}

pub fn exec(spec_path: &Path) -> Result<()> {
    let code = run_command(spec_path).unwrap_or_else(|e| {
        if let Ok(mut err) = open_raw(GUEST_STDERR) {
            let _ = writeln!(err, "lsmpmon: error: guest: {}", base::error::one_line(&e));
        }
        base::error::EXIT_USAGE
    });
    if let Ok(mut st) = open_raw(GUEST_STATUS) {
        let _ = writeln!(st, "status {code}");
        let _ = st.flush();
    }
    // SAFETY: plain syscalls; we are PID 1 in a throwaway guest.
    unsafe {
        libc::sync();
        libc::reboot(libc::RB_POWER_OFF);
    }
    Ok(())
}

fn run_command(spec_path: &Path) -> Result<i32> {
    let spec: RunSpec = serde_json::from_slice(&fs::read(spec_path)?)?;
    let (program, args) = spec.argv.split_first().context("empty command")?;
    for cpu in 1..spec.hotplug_cpus.unwrap_or(1) {
        let online = format!("/sys/devices/system/cpu/cpu{cpu}/online");
        fs::write(&online, "1").with_context(|| format!("bringing CPU {cpu} online ({online})"))?;
    }
    let mut cmd = Command::new(program);
    cmd.args(args);
    match &spec.tty {
        Some(tty) => super::tty::attach(&mut cmd, tty)?,
        None => {
            cmd.stdin(Stdio::null())
                .stdout(open_raw(GUEST_STDOUT)?)
                .stderr(open_raw(GUEST_STDERR)?);
        }
    }
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let mut err = open_raw(GUEST_STDERR)?;
            writeln!(err, "lsmpmon: error: guest: cannot run {program}: {e}")?;
            return Ok(127);
        }
    };
    let pid = child.id() as i32;
    // As PID 1 we also reap whatever COMMAND leaves behind.
    loop {
        let mut status = 0;
        // SAFETY: waitpid with a valid pointer.
        let reaped = unsafe { libc::waitpid(-1, &mut status, 0) };
        if reaped == pid {
            let st = std::process::ExitStatus::from_raw(status);
            return Ok(st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0)));
        }
        if reaped < 0 {
            anyhow::bail!("waitpid failed: {}", std::io::Error::last_os_error());
        }
    }
}
