//! `--kernel PATH`: the user's own kernel. Either a bzImage with its config
//! beside it (`config-<release>`, as in /boot, or `config`, as in
//! /usr/lib/modules/<release>/), or a Debian kernel package file (.deb),
//! unpacked into the cache under its sha256.
use std::{
    fs,
    io::Read,
    path::{Path, PathBuf},
};

use anyhow::{Context, Result};

use super::deb;
use super::entry::{ensure_entry, Staging};
use super::manifest::Kernel;
use crate::cache::{sha256_file, sha256_hex};
use base::{error::usage, secure_fs::read_regular};

/// What `--kernel` accepts besides the series (for error messages).
pub const ACCEPTED: &str =
    "a bzImage with its config beside it (config-<release> or config) or a Debian kernel package (.deb)";

/// A bzImage is some 10 MiB; one far larger is not a kernel to boot.
const MAX_IMAGE_BYTES: u64 = 256 << 20;

/// `series` of a kernel given by path.
pub const SERIES: &str = "path";

/// Whether `--kernel VALUE` names a file rather than a series.
pub fn is_path(value: &str) -> bool {
    value.contains('/') || value.ends_with(".deb") || Path::new(value).exists()
}

/// The kernel at `path`: checked, described, and (for a .deb) unpacked into the cache.
pub fn ensure(cache: &Path, path: &Path) -> Result<Kernel> {
    let shown = path.display();
    let meta = fs::metadata(path).map_err(|e| {
        usage(format!(
            "--kernel {shown}: {e}: give a series or {ACCEPTED}"
        ))
    })?;
    if !meta.is_file() {
        return Err(usage(format!(
            "--kernel {shown}: not a file: give a series or {ACCEPTED}"
        )));
    }
    let path = std::path::absolute(path)?;
    let mut head = vec![0u8; 0x400];
    let n = fs::File::open(&path)
        .and_then(|mut f| f.read(&mut head))
        .map_err(|e| usage(format!("--kernel {shown}: {e}")))?;
    head.truncate(n);
    if head.starts_with(b"!<arch>\ndebian-binary") {
        from_deb(cache, &path)
    } else if head.get(0x202..0x206) == Some(b"HdrS") {
        from_bzimage(&path)
    } else {
        Err(usage(format!(
            "--kernel {shown} is neither a bzImage (no HdrS boot header) nor a Debian package: give {ACCEPTED}"
        )))
    }
}

/// `uname -r` of a bzImage: the first word of the version string its boot
/// header points to (x86 boot protocol: `kernel_version` at 0x20e, + 0x200).
fn bzimage_release(image: &[u8]) -> Option<String> {
    let ptr = u16::from_le_bytes(image.get(0x20e..0x210)?.try_into().ok()?) as usize;
    let text = image.get(ptr + 0x200..)?;
    let end = text.iter().position(|b| *b == 0 || *b == b' ')?;
    let release = std::str::from_utf8(&text[..end]).ok()?;
    (!release.is_empty() && release.chars().all(|c| c.is_ascii_graphic()))
        .then(|| release.to_string())
}

fn from_bzimage(path: &Path) -> Result<Kernel> {
    let shown = path.display();
    let image = read_regular("--kernel", path, MAX_IMAGE_BYTES)?;
    let release = bzimage_release(&image).ok_or_else(|| {
        usage(format!(
            "--kernel {shown}: no kernel version in its boot header: not a bzImage lsmpmon can boot"
        ))
    })?;
    let dir = path.parent().unwrap_or(Path::new("/"));
    let config = [format!("config-{release}"), "config".into()]
        .iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            usage(format!(
                "--kernel {shown}: no config-{release} or config beside it: put the kernel's \
                 build config there (lsmpmon reads what trace needs from it)"
            ))
        })?;
    let sha = sha256_hex(&image);
    Ok(Kernel {
        series: SERIES.into(),
        flavour: String::new(),
        package: file_name(path),
        package_version: String::new(),
        deb_sha256: sha.clone(),
        packages: Vec::new(),
        release,
        vmlinuz: path.to_path_buf(),
        config_sha256: sha256_file(&config)?,
        config,
        vmlinuz_sha256: sha,
        path: Some(path.to_path_buf()),
        net_modules: Vec::new(),
        test_module: crate::kernel::test_module::TestModule::Absent,
        image: None,
    })
}

/// A Debian kernel package: unpacked once into `<cache>/kernels/deb-<sha256>`.
/// A 7.x `linux-binary-*` package holds no config: its `linux-base-<release>`
/// package is taken from the same directory.
fn from_deb(cache: &Path, path: &Path) -> Result<Kernel> {
    let sha = sha256_file(path)?;
    let cache = std::path::absolute(cache)?;
    let rel = Path::new("kernels").join(format!("deb-{}", &sha[..16]));
    let mut k = ensure_entry(&cache, &rel, |dir| {
        let mut debs = vec![path.to_path_buf()];
        debs.extend(base_beside(path)?);
        let staging = Staging::new(dir, ".fetch")?;
        let mut k = deb::unpack(&debs, &staging.path().join("root"), false)?;
        k.series = SERIES.into();
        deb::move_in(staging.path(), dir, &mut k)?;
        Ok(k)
    })?;
    k.path = Some(path.to_path_buf());
    Ok(k)
}

/// For `linux-binary[-unsigned]-<release>_….deb`, the `linux-base-<release>_….deb`
/// beside it (none for other packages).
fn base_beside(deb: &Path) -> Result<Option<PathBuf>> {
    let name = file_name(deb);
    let Some(release) = ["linux-binary-unsigned-", "linux-binary-"]
        .iter()
        .find_map(|p| name.strip_prefix(p))
        .and_then(|rest| rest.split('_').next())
    else {
        return Ok(None);
    };
    let prefix = format!("linux-base-{release}_");
    let dir = deb.parent().unwrap_or(Path::new("/"));
    let found = fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .find(|p| file_name(p).starts_with(&prefix) && file_name(p).ends_with(".deb"));
    match found {
        Some(p) => Ok(Some(p)),
        None => Err(usage(format!(
            "--kernel {}: its config is in {prefix}*.deb, which is not beside it: \
             download it there (apt-get download linux-base-{release})",
            deb.display()
        ))),
    }
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_from_the_boot_header() {
        let mut image = vec![0u8; 0x1000];
        image[0x202..0x206].copy_from_slice(b"HdrS");
        image[0x20e..0x210].copy_from_slice(&0x0c00u16.to_le_bytes());
        let version = b"7.3.4+deb13-cloud-amd64 (debian-kernel@lists) #1 SMP\0";
        image[0xe00..0xe00 + version.len()].copy_from_slice(version);
        assert_eq!(
            bzimage_release(&image).as_deref(),
            Some("7.3.4+deb13-cloud-amd64")
        );
        image[0x20e..0x210].copy_from_slice(&0xffffu16.to_le_bytes());
        assert_eq!(bzimage_release(&image), None);
    }
}
