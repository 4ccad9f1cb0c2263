//! (host) What the `build` op needs in the guest: Debian's tcc (fetched as a
//! package, see `nginx.rs`), the kernel's host-program sources from Debian's
//! `linux-source-6.1` tarball, the C library headers they include (as the
//! host's `clang -M` lists them) and what tcc links against.
use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{bail, Context, Result};
use base::command;

use super::nginx::{self, PackageRef};
use bench::build::{COMPILER, PROGRAMS, SOURCE_DIR, TREE_INCLUDE};
use vm::cache;

const TARBALL: &str = "/usr/src/linux-source-6.1.tar.xz";
const TREE: &str = "linux-source-6.1";
/// What tcc links a program with (glibc's start files and linker script).
const LINK_FILES: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu/crt1.o",
    "/usr/lib/x86_64-linux-gnu/crti.o",
    "/usr/lib/x86_64-linux-gnu/crtn.o",
    "/usr/lib/x86_64-linux-gnu/libc.so",
    "/usr/lib/x86_64-linux-gnu/libc_nonshared.a",
    "/lib/x86_64-linux-gnu/libc.so.6",
    "/lib64/ld-linux-x86-64.so.2",
    // tcc looks libc.so.6's DT_NEEDED loader up in its library directories.
    "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
];

pub struct BuildKit {
    /// (host path, guest path)
    pub files: Vec<(PathBuf, String)>,
    pub compiler: PackageRef,
}

/// Fetches and unpacks what is missing; lists every file for the guest.
pub fn ensure(cache_dir: &Path) -> Result<BuildKit> {
    let (tcc_root, compiler) = nginx::unpacked(cache_dir, "tcc", COMPILER)?;
    let tree = sources(cache_dir)?;
    let mut files = Vec::new();
    walk(&tcc_root, &tcc_root, &mut files)?;
    let mut files: Vec<(PathBuf, String)> = files
        .into_iter()
        .filter(|rel| !rel.starts_with("usr/share"))
        .map(|rel| (tcc_root.join(&rel), format!("/{}", rel.display())))
        .collect();
    let tcc = tcc_root.join(COMPILER.trim_start_matches('/'));
    for lib in super::libs::with_libraries(&tcc)?.into_iter().skip(1) {
        files.push((lib.clone(), lib.display().to_string()));
    }
    for f in LINK_FILES.iter().map(PathBuf::from).chain(headers(&tree)?) {
        if !f.is_file() {
            bail!(
                "{} is missing: apt-get install libc6-dev (scripts/setup.sh does)",
                f.display()
            );
        }
        files.push((f.clone(), f.display().to_string()));
    }
    let mut tree_files = Vec::new();
    walk(&tree, &tree, &mut tree_files)?;
    for rel in tree_files {
        files.push((tree.join(&rel), format!("{SOURCE_DIR}/{}", rel.display())));
    }
    files.sort_by(|a, b| a.1.cmp(&b.1));
    files.dedup_by(|a, b| a.1 == b.1);
    Ok(BuildKit { files, compiler })
}

/// The programs' sources and the tree headers they use, unpacked once into
/// `<cache>/packages/kernel-scripts/linux-source-6.1`.
fn sources(cache_dir: &Path) -> Result<PathBuf> {
    let dir = cache::real_dir(cache_dir, Path::new("packages/kernel-scripts"))?;
    let tree = dir.join(TREE);
    if PROGRAMS.iter().all(|(_, s)| tree.join(s).is_file()) {
        return Ok(tree);
    }
    if !Path::new(TARBALL).is_file() {
        return Err(base::error::usage(format!(
            "{TARBALL} is missing: apt-get install linux-source-6.1 (scripts/setup.sh --tests does)"
        )));
    }
    let _ = fs::remove_dir_all(&tree);
    let mut members: Vec<String> = PROGRAMS
        .iter()
        .map(|(_, s)| format!("{TREE}/{s}"))
        .collect();
    members.push(format!("{TREE}/scripts/sorttable.h"));
    members.push(format!("{TREE}/{TREE_INCLUDE}/tools"));
    command::run(
        Command::new("tar")
            .arg("-xJf")
            .arg(TARBALL)
            .arg("-C")
            .arg(&dir)
            .args(&members),
    )
    .with_context(|| format!("unpacking {TARBALL}"))?;
    Ok(tree)
}

/// The C library headers the sources include, as `clang -M` finds them on
/// this machine (tcc brings its own stddef.h, stdarg.h, …).
fn headers(tree: &Path) -> Result<Vec<PathBuf>> {
    let deps = command::output(
        Command::new("clang")
            .args(["-M", "-I", TREE_INCLUDE])
            .args(PROGRAMS.iter().map(|(_, s)| s))
            .current_dir(tree),
    )
    .context("clang -M on the kernel's host programs")?;
    let mut v: Vec<PathBuf> = deps
        .split(|c: char| c.is_whitespace() || c == '\\')
        .filter(|w| w.starts_with("/usr/include/"))
        .map(PathBuf::from)
        .collect();
    v.sort();
    v.dedup();
    Ok(v)
}

/// Regular files under `dir`, relative to `base`.
fn walk(base: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for e in fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let e = e?;
        let ty = e.file_type()?;
        if ty.is_dir() {
            walk(base, &e.path(), out)?;
        } else if ty.is_file() {
            out.push(e.path().strip_prefix(base)?.to_path_buf());
        }
    }
    Ok(())
}
