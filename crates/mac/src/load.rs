//! Loads one reference MAC: the object with its method and subject set
//! before load, the rules entered in the method's map (and, for labels, every
//! labelled file's label cached in inode storage), then each program attached
//! and its link pinned so the MAC outlives this process. Unloading removes
//! the pins: the links go with them.
use std::{
    collections::BTreeMap,
    ffi::CString,
    mem::MaybeUninit,
    os::fd::AsRawFd,
    os::unix::{ffi::OsStrExt, fs::MetadataExt, fs::OpenOptionsExt},
    path::{Path, PathBuf},
};

use anyhow::{Context, Result};
use libbpf_rs::{
    skel::{OpenSkel, Skel, SkelBuilder},
    MapCore, MapFlags,
};

use super::method::Method;
use super::policy::{self, Rule};
use crate::intf::{mac_inode_key, mac_limits, mac_path_key};
use base::error::usage;

mod bpf {
    #![allow(clippy::all, dead_code, non_camel_case_types, non_snake_case)]
    include!(concat!(env!("OUT_DIR"), "/mac.skel.rs"));
}
use bpf::{MacSkel, MacSkelBuilder};

/// Where the links are pinned; its existence means a MAC is loaded.
pub const PIN_DIR: &str = "/sys/fs/bpf/lsmpmon-mac";
/// The label method's xattr (security.*: only root may set it).
pub const XATTR: &str = "security.lsmpmon";
/// Trees never scanned for labels: no policy labels kernel pseudo-files.
const SCAN_SKIP: [&str; 3] = ["/proc", "/sys", "/dev"];

pub struct Loaded {
    pub programs: Vec<String>,
    pub rule_keys: usize,
    /// Label method: labelled files whose label was cached.
    pub labelled_files: usize,
}

pub fn load(method: Method, rules: &[Rule], subject: &str) -> Result<Loaded> {
    check_bpf_lsm()?;
    check_bpf_loop()?;
    if Path::new(PIN_DIR).exists() {
        return Err(usage(format!(
            "a reference MAC is already loaded ({PIN_DIR} exists): run `lsmpmon mac unload` first"
        )));
    }
    let mut open_object = MaybeUninit::uninit();
    let mut open = MacSkelBuilder::default()
        .open(&mut open_object)
        .context("opening the reference MACs' BPF object")?;
    let ro = open
        .maps
        .rodata_data
        .as_deref_mut()
        .context("the BPF object has no .rodata")?;
    ro.method = method.id();
    ro.subject_comm = comm_words(subject);
    let keys = rules.len().max(1) as u32;
    match method {
        Method::Label => open.maps.rules_label.set_max_entries(keys)?,
        Method::Path => open.maps.rules_path.set_max_entries(keys)?,
        Method::Inode => open.maps.rules_inode.set_max_entries(keys)?,
    }
    let skel = open
        .load()
        .context("loading the reference MAC into the kernel (needs root and BTF)")?;
    let (rule_keys, labelled_files) = fill(&skel, method, rules)?;
    let programs = attach_and_pin(&skel).inspect_err(|_| {
        let _ = unpin_all();
    })?;
    Ok(Loaded {
        programs,
        rule_keys,
        labelled_files,
    })
}

fn check_bpf_lsm() -> Result<()> {
    if let Ok(lsms) = std::fs::read_to_string("/sys/kernel/security/lsm") {
        if !lsms.split(',').any(|l| l.trim() == "bpf") {
            return Err(usage(format!(
                "the BPF LSM is not active (active: {}): boot with lsm=...,bpf",
                lsms.trim()
            )));
        }
    }
    Ok(())
}

/// The path walk calls bpf_loop (Linux 5.17); without it the verifier only
/// says EINVAL, so look for the helper in the kernel's BTF first.
fn check_bpf_loop() -> Result<()> {
    // SAFETY: libbpf returns an owned BTF object or NULL; freed below.
    let btf = unsafe { libbpf_sys::btf__load_vmlinux_btf() };
    if btf.is_null() {
        return Ok(()); // the load itself will say what is missing
    }
    // SAFETY: btf is valid; the name is NUL-terminated.
    let id = unsafe {
        libbpf_sys::btf__find_by_name_kind(btf, c"bpf_loop".as_ptr(), libbpf_sys::BTF_KIND_FUNC)
    };
    // SAFETY: btf came from btf__load_vmlinux_btf and is not used after this.
    unsafe { libbpf_sys::btf__free(btf) };
    if id < 0 {
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        return Err(usage(format!(
            "this kernel ({}) has no bpf_loop helper, which the reference MACs need (Linux 5.17 or later)",
            release.trim()
        )));
    }
    Ok(())
}

/// The first 15 bytes of `comm` and a NUL, as bpf_get_current_comm gives them.
fn comm_words(comm: &str) -> [u64; 2] {
    let mut bytes = [0u8; mac_limits::MAC_COMM_LEN as usize];
    for (b, c) in bytes.iter_mut().zip(comm.bytes().take(15)) {
        *b = c;
    }
    [
        u64::from_le_bytes(bytes[..8].try_into().unwrap()),
        u64::from_le_bytes(bytes[8..].try_into().unwrap()),
    ]
}

/// Enters the rules in the method's map: (rule keys, labelled files).
fn fill(skel: &MacSkel, method: Method, rules: &[Rule]) -> Result<(usize, usize)> {
    let mut keys: BTreeMap<Vec<u8>, u32> = BTreeMap::new();
    let labels = policy::labels(rules);
    for r in rules {
        let key = match method {
            Method::Label => label_id(&labels, &r.label).to_ne_bytes().to_vec(),
            Method::Path => path_key(&r.path),
            Method::Inode => inode_key(&r.path)?,
        };
        *keys.entry(key).or_default() |= r.deny;
    }
    let map = match method {
        Method::Label => &skel.maps.rules_label,
        Method::Path => &skel.maps.rules_path,
        Method::Inode => &skel.maps.rules_inode,
    };
    for (key, bits) in &keys {
        map.update(key, &bits.to_ne_bytes(), MapFlags::ANY)
            .context("entering a rule in the rules map")?;
    }
    let labelled = match method {
        Method::Label => cache_labels(skel, &labels)?,
        _ => 0,
    };
    Ok((keys.len(), labelled))
}

fn label_id(labels: &[&str], label: &str) -> u32 {
    labels.iter().position(|l| *l == label).unwrap_or(0) as u32 + 1
}

fn path_key(path: &str) -> Vec<u8> {
    let mut key = vec![0u8; std::mem::size_of::<mac_path_key>()];
    key[..path.len()].copy_from_slice(path.as_bytes());
    key
}

/// (i_ino, s_dev) as the kernel sees them: s_dev is MAJOR << 20 | MINOR.
fn inode_key(path: &str) -> Result<Vec<u8>> {
    let st = std::fs::symlink_metadata(path).map_err(|e| {
        usage(format!(
            "rule for {path}: {e}: the inode method needs the file to exist at load"
        ))
    })?;
    let (major, minor) = (libc::major(st.dev()), libc::minor(st.dev()));
    let key = mac_inode_key {
        ino: st.ino(),
        dev: (major << 20) | minor,
        pad: 0,
    };
    let bytes = [
        &key.ino.to_ne_bytes()[..],
        &key.dev.to_ne_bytes(),
        &key.pad.to_ne_bytes(),
    ]
    .concat();
    debug_assert_eq!(bytes.len(), std::mem::size_of::<mac_inode_key>());
    Ok(bytes)
}

/// Scans the file tree for the label xattr and caches each policy label's
/// id in inode storage, as SELinux reads a file's label when its inode is
/// first instantiated. Every policy label must be on at least one file.
fn cache_labels(skel: &MacSkel, labels: &[&str]) -> Result<usize> {
    let mut found = vec![0usize; labels.len()];
    let mut stack = vec![PathBuf::from("/")];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() && !SCAN_SKIP.iter().any(|s| path == Path::new(s)) {
                stack.push(path.clone());
            }
            if ft.is_symlink() {
                continue;
            }
            if let Some(label) = read_label(&path) {
                if let Some(i) = labels.iter().position(|l| *l == label) {
                    store_label(skel, &path, i as u32 + 1)?;
                    found[i] += 1;
                }
            }
        }
    }
    if let Some(i) = found.iter().position(|n| *n == 0) {
        return Err(usage(format!(
            "label {} is on no file: label the files first (`lsmpmon mac label --policy FILE`)",
            labels[i]
        )));
    }
    Ok(found.iter().sum())
}

fn read_label(path: &Path) -> Option<String> {
    let c = CString::new(path.as_os_str().as_bytes()).ok()?;
    let name = CString::new(XATTR).ok()?;
    let mut buf = [0u8; 80];
    // SAFETY: both strings are NUL-terminated; buf's length is passed.
    let n = unsafe {
        libc::lgetxattr(
            c.as_ptr(),
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    (n > 0).then(|| String::from_utf8_lossy(&buf[..n as usize]).into_owned())
}

/// The file's label id into inode storage, keyed by an O_PATH descriptor.
fn store_label(skel: &MacSkel, path: &Path, id: u32) -> Result<()> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_NOFOLLOW)
        .open(path)
        .with_context(|| format!("opening {} to cache its label", path.display()))?;
    skel.maps
        .labels
        .update(
            &file.as_raw_fd().to_ne_bytes(),
            &id.to_ne_bytes(),
            MapFlags::ANY,
        )
        .with_context(|| format!("caching the label of {}", path.display()))
}

fn attach_and_pin(skel: &MacSkel) -> Result<Vec<String>> {
    std::fs::create_dir_all(PIN_DIR)
        .with_context(|| format!("creating {PIN_DIR} (is bpffs mounted on /sys/fs/bpf?)"))?;
    let mut names = Vec::new();
    for prog in skel.object().progs_mut() {
        let name = prog.name().to_string_lossy().into_owned();
        let mut link = prog
            .attach_lsm()
            .with_context(|| format!("attaching {name} to its LSM hook"))?;
        link.pin(Path::new(PIN_DIR).join(&name))
            .with_context(|| format!("pinning the link of {name}"))?;
        names.push(name);
    }
    Ok(names)
}

/// Removes every pinned link (detaching its program): how many there were.
pub fn unpin_all() -> Result<usize> {
    let entries = match std::fs::read_dir(PIN_DIR) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(usage(format!(
                "no reference MAC is loaded ({PIN_DIR} does not exist)"
            )))
        }
        Err(e) => return Err(e).with_context(|| format!("reading {PIN_DIR}")),
    };
    let mut n = 0;
    for e in entries.flatten() {
        std::fs::remove_file(e.path())
            .with_context(|| format!("removing the pinned link {}", e.path().display()))?;
        n += 1;
    }
    std::fs::remove_dir(PIN_DIR).with_context(|| format!("removing {PIN_DIR}"))?;
    Ok(n)
}

/// The reference MACs' programs attached in the kernel right now, by name:
/// every LSM link, whoever holds it, whose program is one of ours.
pub fn attached() -> Result<Vec<String>> {
    use libbpf_rs::query::{LinkInfoIter, LinkTypeInfo, ProgInfoIter};
    let ours: BTreeMap<u32, String> = ProgInfoIter::default()
        .filter(|p| p.name.to_string_lossy().starts_with("mac_"))
        .map(|p| (p.id, p.name.to_string_lossy().into_owned()))
        .collect();
    Ok(LinkInfoIter::default()
        .filter(|l| matches!(l.info, LinkTypeInfo::Tracing(_)))
        .filter_map(|l| ours.get(&l.prog_id).cloned())
        .collect())
}

/// Writes each rule's label into its file's xattr (what setfiles does).
pub fn label(rules: &[Rule]) -> Result<usize> {
    let name = CString::new(XATTR)?;
    for r in rules {
        let c = CString::new(r.path.as_str())?;
        // SAFETY: all strings are NUL-terminated; the value's length is passed.
        let rc = unsafe {
            libc::lsetxattr(
                c.as_ptr(),
                name.as_ptr(),
                r.label.as_ptr().cast(),
                r.label.len(),
                0,
            )
        };
        if rc != 0 {
            let e = std::io::Error::last_os_error();
            return Err(usage(format!(
                "labelling {} with {XATTR}={}: {e} (needs root and a filesystem with xattrs)",
                r.path, r.label
            )));
        }
    }
    Ok(rules.len())
}
