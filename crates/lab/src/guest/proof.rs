//! Proof that a configuration is what it claims, in the guest, before
//! anything is measured: a denial with the kernel's record of it, IMA's
//! measurement list (and PCR 10), or the exact list of active LSMs.
use std::{
    fs::{self, OpenOptions},
    io::Read,
    os::unix::fs::OpenOptionsExt,
};

use anyhow::{Context, Result};

use crate::{
    guest::access::Outcome,
    guest_plan::{GuestPlan, PUBLIC, WORKLOAD},
    spec::{Proof, ProofKind},
};
pub use model::cell::ProofReport;

/// The workload's command name: the first 15 bytes of its file name.
const WORKLOAD_COMM: &str = "lsmpmon-workloa";
const IMA_LIST: &str = "/sys/kernel/security/ima/ascii_runtime_measurements";
const PCR10: &str = "/sys/class/tpm/tpm0/pcr-sha256/10";

/// What the kernel had recorded before the confined check ran.
pub struct Marks {
    record_before: Vec<String>,
    pcr10: Option<String>,
}

impl Marks {
    pub fn take(p: &Proof) -> Result<Self> {
        Ok(Self {
            record_before: match &p.record {
                Some(r) if p.kind == ProofKind::Deny => read_record(r)?,
                _ => Vec::new(),
            },
            pcr10: p.tpm.then(|| read_trim(PCR10)).flatten(),
        })
    }
}

/// Judges the configuration: `unconfined` is the matrix tried before any
/// policy; `confined_check` tries it again as the confined workload, and only
/// what the kernel records from then on counts.
pub fn prove(
    plan: &GuestPlan,
    unconfined: &[Outcome],
    confined_check: impl FnOnce() -> Result<Vec<Outcome>>,
) -> Result<ProofReport> {
    let spec = &plan.spec;
    let mut r = ProofReport {
        kind: spec.proof.kind,
        passed: false,
        summary: String::new(),
        unconfined: unconfined.to_vec(),
        confined: Vec::new(),
        not_expressed: spec.cannot_express.clone(),
        record: None,
        measurements: Vec::new(),
        pcr10_before: None,
        pcr10_after: None,
        active_lsms: model::provenance::active_lsms(),
        expected_lsms: plan.expected_lsms.clone(),
    };
    if let Some(o) = unconfined.iter().find(|o| !o.allowed()) {
        r.summary = format!(
            "row {} ({} {}) fails without any policy ({}): the guest is not as the matrix assumes",
            o.row, o.op, o.path, o.result
        );
        return Ok(r);
    }
    let marks = Marks::take(&spec.proof)?;
    r.pcr10_before = marks.pcr10.clone();
    r.confined = confined_check()?;
    let verdict = match spec.proof.kind {
        ProofKind::Deny => deny(&mut r, &spec.proof, &marks),
        ProofKind::Measure => measure(&mut r, spec.proof.tpm),
        ProofKind::Baseline => baseline(&r),
    };
    match verdict {
        Ok(s) => {
            r.passed = true;
            r.summary = s;
        }
        Err(why) => r.summary = why,
    }
    Ok(r)
}

fn deny(r: &mut ProofReport, p: &Proof, marks: &Marks) -> Result<String, String> {
    let judged: Vec<&Outcome> = r
        .confined
        .iter()
        .filter(|o| !r.not_expressed.contains(&o.row))
        .collect();
    if let Some(o) = judged.iter().find(|o| !o.as_expected()) {
        return Err(format!(
            "row {} ({} {}) expected {}, got {}",
            o.row, o.op, o.path, o.expect, o.result
        ));
    }
    let denied: Vec<&&Outcome> = judged.iter().filter(|o| o.denied()).collect();
    let Some(first) = denied.first() else {
        return Err("no row was denied: the policy does not confine the workload".into());
    };
    if let Some(why) = &p.no_record {
        return Ok(format!(
            "{} of {} rows as the matrix says ({} denied, e.g. {} {}: {}); no kernel record: {why}",
            judged.len(),
            r.confined.len(),
            denied.len(),
            first.row,
            first.path,
            first.result
        ));
    }
    let record = p.record.as_deref().unwrap_or("kmsg");
    let pattern = p.pattern.as_deref().unwrap_or("");
    // The record must be of this check: it names the workload (its command
    // name) or a path the check was denied.
    let lines = p.record_lines.max(1);
    let ours = |text: &str| {
        text.contains(WORKLOAD_COMM) || denied.iter().any(|o| text.contains(o.path.as_str()))
    };
    let find = || -> Result<Option<String>, String> {
        let after = read_record(record).map_err(|e| format!("reading {record}: {e}"))?;
        let new = new_lines(&marks.record_before, &after);
        Ok((0..new.len())
            .filter(|&i| new[i].contains(pattern))
            .map(|i| new[i..(i + lines).min(new.len())].join(" / "))
            .find(|text| ours(text)))
    };
    // Audit records reach the kernel log from the kauditd thread, after the
    // denied call has returned: give it up to a second to run.
    let mut line = find()?;
    for _ in 0..20 {
        if line.is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        line = find()?;
    }
    let Some(line) = line else {
        return Err(format!(
            "{} row(s) denied, but no new line containing '{pattern}' and naming the workload in {record}",
            denied.len()
        ));
    };
    r.record = Some(line.clone());
    Ok(format!(
        "{} of {} rows as the matrix says ({} denied, e.g. {} {}: {}); {record}: {}",
        judged.len(),
        r.confined.len(),
        denied.len(),
        first.row,
        first.path,
        first.result,
        clip(&line, 200)
    ))
}

fn measure(r: &mut ProofReport, tpm: bool) -> Result<String, String> {
    if let Some(o) = r.confined.iter().find(|o| !o.allowed()) {
        return Err(format!(
            "row {} fails under a measure-only policy: {}",
            o.row, o.result
        ));
    }
    let list = fs::read_to_string(IMA_LIST).map_err(|e| format!("reading {IMA_LIST}: {e}"))?;
    for file in [PUBLIC, WORKLOAD] {
        // "PCR template-hash template file-hash path [signature]"
        match list
            .lines()
            .find(|l| l.split_whitespace().nth(4) == Some(file))
        {
            Some(l) => r.measurements.push(l.to_string()),
            None => return Err(format!("{file} is not in IMA's measurement list")),
        }
    }
    let mut s = format!(
        "{} and {} measured ({} entries in the list)",
        PUBLIC,
        WORKLOAD,
        list.lines().count()
    );
    if tpm {
        r.pcr10_after = read_trim(PCR10);
        match (&r.pcr10_before, &r.pcr10_after) {
            (Some(a), Some(b)) if a != b => {
                s += &format!("; PCR 10 extended {}… -> {}…", clip(a, 12), clip(b, 12))
            }
            (Some(_), Some(_)) => return Err("PCR 10 did not change".into()),
            _ => return Err(format!("no TPM PCR 10 at {PCR10}")),
        }
    }
    Ok(s)
}

fn baseline(r: &ProofReport) -> Result<String, String> {
    if r.active_lsms != r.expected_lsms {
        return Err(format!(
            "active LSMs are {}, expected exactly {}",
            r.active_lsms.join(","),
            r.expected_lsms.join(",")
        ));
    }
    if r.expected_lsms.is_empty() {
        return no_framework();
    }
    Ok(format!("active LSMs exactly {}", r.active_lsms.join(",")))
}

/// A kernel built without CONFIG_SECURITY: the framework's functions are
/// not in the kernel (its symbol table has the capability checks but no
/// security_file_open), and where securityfs exists without the framework
/// (6.1; from 7.x the framework registers it) it is mounted and lists no
/// module. Either alone could pass by accident: a securityfs /init failed
/// to mount, a symbol table that hides names.
fn no_framework() -> Result<String, String> {
    let filesystems = fs::read_to_string("/proc/filesystems").unwrap_or_default();
    let has_securityfs = filesystems
        .lines()
        .any(|l| l.trim_end().ends_with("\tsecurityfs"));
    let mounts = fs::read_to_string("/proc/mounts").unwrap_or_default();
    let mounted = mounts
        .lines()
        .any(|l| l.split_whitespace().nth(2) == Some("securityfs"));
    if has_securityfs && !mounted {
        return Err(
            "securityfs is not mounted: the absence of /sys/kernel/security/lsm proves nothing"
                .into(),
        );
    }
    if std::path::Path::new("/sys/kernel/security/lsm").exists() {
        return Err(
            "the kernel is built without CONFIG_SECURITY but /sys/kernel/security/lsm exists"
                .into(),
        );
    }
    let syms = fs::read_to_string("/proc/kallsyms").unwrap_or_default();
    if !syms.lines().any(|l| l.ends_with(" cap_capable")) {
        return Err("/proc/kallsyms lists no cap_capable: the symbol table cannot show the framework's absence".into());
    }
    if syms.lines().any(|l| l.ends_with(" security_file_open")) {
        return Err("the kernel has security_file_open: it is built with the LSM framework".into());
    }
    let fs_part = if has_securityfs {
        "no /sys/kernel/security/lsm on securityfs"
    } else {
        "no securityfs"
    };
    Ok(format!(
        "no LSM framework: no security_file_open in the kernel, {fs_part}"
    ))
}

fn clip(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// After the measurements of a TPM cell: the TPM must still answer (swtpm
/// on the host can go away while the guest runs on).
pub fn tpm_still_answers() -> Result<()> {
    if read_trim(PCR10).is_none() {
        anyhow::bail!(
            "PCR 10 could not be read after the benchmark: the TPM (swtpm) stopped answering during the cell"
        );
    }
    Ok(())
}

fn read_trim(path: &str) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// The kernel log (each record's text) or a file's lines.
pub fn read_record(record: &str) -> Result<Vec<String>> {
    if record != "kmsg" {
        let mut f = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(record)
            .with_context(|| format!("opening {record}"))?;
        let mut text = String::new();
        match f.read_to_string(&mut text) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e).with_context(|| format!("reading {record}")),
        }
        return Ok(text.lines().map(String::from).collect());
    }
    let mut f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open("/dev/kmsg")
        .context("opening /dev/kmsg")?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 8192];
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let rec = String::from_utf8_lossy(&buf[..n]);
                // "prio,seq,ts,flags;text\n"
                if let Some((_, text)) = rec.split_once(';') {
                    out.push(text.lines().next().unwrap_or("").to_string());
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            // A record overwritten while we read: go on with the next.
            Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
            Err(e) => return Err(e).context("reading /dev/kmsg"),
        }
    }
    Ok(out)
}

/// Lines of `after` beyond those already in `before` (as a multiset).
pub fn new_lines<'a>(before: &[String], after: &'a [String]) -> Vec<&'a str> {
    let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for l in before {
        *seen.entry(l).or_default() += 1;
    }
    after
        .iter()
        .filter(|l| match seen.get_mut(l.as_str()) {
            Some(n) if *n > 0 => {
                *n -= 1;
                false
            }
            _ => true,
        })
        .map(String::as_str)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_records_made_after_the_mark_count() {
        let before = vec!["avc: denied a".to_string(), "x".to_string()];
        let after = vec![
            "avc: denied a".to_string(),
            "x".to_string(),
            "x".to_string(),
            "avc: denied b".to_string(),
        ];
        assert_eq!(new_lines(&before, &after), vec!["x", "avc: denied b"]);
        assert!(new_lines(&after, &before).is_empty());
    }
}
