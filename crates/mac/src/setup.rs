//! `lsmpmon mac setup`: what each mac-* lab configuration does in its guest,
//! in one place: mount the file systems the MAC needs, add the scaling runs'
//! unmatched rules, label the policy's files (every method, so the guests
//! stay alike), load and pin the programs, turn tracing on for the denial
//! records.
use std::path::Path;

use anyhow::{Context, Result};

use super::method::Method;
use super::{load, policy};
use base::error::usage;

const BPF_FS: &str = "/sys/fs/bpf";
const TRACING: &str = "/sys/kernel/tracing";
/// Where the scaling runs' unmatched rules point.
const PAD_DIR: &str = "/srv/lsmpmon-mac-pad";

pub fn run(
    method: Method,
    policy_file: &Path,
    pad_rules: Option<&Path>,
    subject: &str,
) -> Result<load::Loaded> {
    mount_once("bpf", BPF_FS)?;
    mount_once("tracefs", TRACING)?;
    let mut rules = policy::read(policy_file)?;
    if let Some(n) = pad_count(pad_rules)? {
        rules.extend(pad(n)?);
    }
    load::label(&rules)?;
    let loaded = load::load(method, &rules, subject)?;
    std::fs::write(format!("{TRACING}/tracing_on"), "1").context("turning tracing on")?;
    Ok(loaded)
}

/// The number in the pad-rules file, if it is there and not empty.
fn pad_count(file: Option<&Path>) -> Result<Option<usize>> {
    let Some(text) = file.and_then(|f| std::fs::read_to_string(f).ok()) else {
        return Ok(None);
    };
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    text.parse::<usize>().map(Some).map_err(|_| {
        usage(format!(
            "pad rules: '{text}' is not a number of rules (the file holds one count)"
        ))
    })
}

/// The scaling runs' `n` unmatched rules, each naming its own new file and label.
fn pad(n: usize) -> Result<Vec<policy::Rule>> {
    std::fs::create_dir_all(PAD_DIR).with_context(|| format!("creating {PAD_DIR}"))?;
    for i in 0..n {
        std::fs::write(format!("{PAD_DIR}/f{i}"), "")
            .with_context(|| format!("creating {PAD_DIR}/f{i}"))?;
    }
    policy::parse(&pad_text(n)).map_err(|e| anyhow::anyhow!("pad rules: {e}"))
}

fn pad_text(n: usize) -> String {
    (0..n)
        .map(|i| format!("deny open {PAD_DIR}/f{i} pad_{i}\n"))
        .collect()
}

/// Mounts `fstype` on `dir` unless it is mounted there already.
fn mount_once(fstype: &str, dir: &str) -> Result<()> {
    let mounts = std::fs::read_to_string("/proc/mounts").context("reading /proc/mounts")?;
    let mounted = mounts.lines().any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.get(1) == Some(&dir) && f.get(2) == Some(&fstype)
    });
    if mounted {
        return Ok(());
    }
    let c = |s: &str| std::ffi::CString::new(s).expect("no NUL in a constant");
    let (src, target, ty) = (c(fstype), c(dir), c(fstype));
    // SAFETY: NUL-terminated strings that outlive the call; no data argument.
    let rc = unsafe {
        libc::mount(
            src.as_ptr(),
            target.as_ptr(),
            ty.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        anyhow::bail!(
            "mounting {fstype} on {dir}: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pad_rules_parse_as_the_policy_format_each_with_its_own_label() {
        let rules = policy::parse(&pad_text(3)).unwrap();
        assert_eq!(rules.len(), 3);
        let labels = policy::labels(&rules);
        assert_eq!(labels, ["pad_0", "pad_1", "pad_2"]);
    }

    #[test]
    fn the_pad_count_is_one_number_or_nothing() {
        let dir = std::env::temp_dir().join(format!("lsmpmon-pad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("pad_rules");
        assert_eq!(pad_count(Some(&f)).unwrap(), None, "no file");
        std::fs::write(&f, "\n").unwrap();
        assert_eq!(pad_count(Some(&f)).unwrap(), None, "empty");
        std::fs::write(&f, "100\n").unwrap();
        assert_eq!(pad_count(Some(&f)).unwrap(), Some(100));
        std::fs::write(&f, "ten").unwrap();
        assert!(pad_count(Some(&f)).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
