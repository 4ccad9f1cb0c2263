//! Kernels lsmpmon builds itself because Debian ships none: `6.1-smack`
//! (Smack is off in every Debian kernel). Built from Debian's
//! `linux-source-6.1` with `make tinyconfig` and the options in
//! `kernels/<name>.config` (kept in the repository, carried in the binary),
//! once, into the cache, only when asked for.
use std::{
    fs,
    io::{BufRead, BufReader},
    path::Path,
    process::{Command, Stdio},
    time::Instant,
};

use anyhow::{bail, Context, Result};

use super::entry::{ensure_entry, Staging};
use super::manifest::Kernel;
use crate::base::{command, error::usage};
use crate::model::PackageRef;
use crate::vm::cache::{sha256_file, sha256_hex};

pub struct Recipe {
    /// The name `--kernel` takes.
    pub name: &'static str,
    pub flavour: &'static str,
    /// The Debian package holding the source, and its tarball.
    pub source_package: &'static str,
    pub tarball: &'static str,
    pub fragment: &'static str,
}

pub const RECIPES: &[Recipe] = &[Recipe {
    name: "6.1-smack",
    flavour: "smack",
    source_package: "linux-source-6.1",
    tarball: "/usr/src/linux-source-6.1.tar.xz",
    fragment: include_str!("../../../kernels/6.1-smack.config"),
}];

/// Host programs the build runs, and the Debian 12 package of each.
const TOOLS: &[(&str, &str)] = &[
    ("make", "make"),
    ("gcc", "gcc"),
    ("flex", "flex"),
    ("bison", "bison"),
    ("bc", "bc"),
    ("pahole", "dwarves"),
    ("xz", "xz-utils"),
];

pub fn recipe(name: &str) -> Option<&'static Recipe> {
    RECIPES.iter().find(|r| r.name == name)
}

/// The built kernel, building it first if the cache has none.
pub fn ensure(cache: &Path, r: &Recipe) -> Result<Kernel> {
    let cache = std::path::absolute(cache)?;
    ensure_entry(&cache, &Path::new("kernels").join(r.name), |dir| {
        build(r, dir)
    })
}

fn check_tools(r: &Recipe) -> Result<()> {
    let missing: Vec<&str> = TOOLS
        .iter()
        .filter(|(prog, _)| command::which(prog).is_none())
        .map(|(_, pkg)| *pkg)
        .collect();
    let tarball = Path::new(r.tarball);
    if !missing.is_empty() || !tarball.is_file() {
        let mut pkgs = missing;
        if !tarball.is_file() {
            pkgs.insert(0, r.source_package);
        }
        return Err(usage(format!(
            "building the {} kernel needs {}: apt-get install {} (scripts/setup.sh does)",
            r.name,
            pkgs.join(", "),
            pkgs.join(" ")
        )));
    }
    Ok(())
}

fn installed_version(package: &str) -> Result<String> {
    let version =
        command::output(Command::new("dpkg-query").args(["-W", "-f=${Version}", package]))
            .with_context(|| format!("{package} is not installed"))?;
    Ok(version.trim().to_string())
}

/// The options the fragment asks for that the final config does not have
/// (a dependency the fragment forgot turns them off silently).
fn lost_options(fragment: &str, config: &str) -> Vec<String> {
    fragment
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("CONFIG_"))
        .filter(|want| !config.lines().any(|l| l.trim() == *want))
        .map(String::from)
        .collect()
}

fn build(r: &Recipe, dir: &Path) -> Result<Kernel> {
    check_tools(r)?;
    let version = installed_version(r.source_package)?;
    // Removed however the build ends: a failed one leaves no source tree.
    let tree = Staging::new(dir, ".build")?;
    let started = Instant::now();
    crate::say!(
        "lsmpmon: building the {} kernel from {} {version} in {} (once; about 20 minutes on 2 cores)",
        r.name,
        r.source_package,
        tree.path().display()
    );
    let src = unpack_source(r, tree.path())?;
    let config = configure(r, &src, tree.path())?;
    make_bzimage(&src)?;
    let image = fs::read(src.join("arch/x86/boot/bzImage")).context("reading the bzImage")?;
    let release = fs::read_to_string(src.join("include/config/kernel.release"))?
        .trim()
        .to_string();
    let boot = dir.join("boot");
    fs::create_dir_all(&boot)?;
    let vmlinuz = boot.join(format!("vmlinuz-{release}"));
    let config_path = boot.join(format!("config-{release}"));
    fs::write(&vmlinuz, &image)?;
    fs::write(&config_path, &config)?;
    drop(tree);
    let source_sha = sha256_file(Path::new(r.tarball))?;
    crate::say!(
        "lsmpmon: built {} ({release}) in {:.1} min",
        r.name,
        started.elapsed().as_secs_f64() / 60.0
    );
    Ok(Kernel {
        series: r.name.into(),
        flavour: r.flavour.into(),
        package: r.source_package.into(),
        package_version: version.clone(),
        deb_sha256: source_sha.clone(),
        packages: vec![PackageRef {
            name: r.source_package.into(),
            version,
            sha256: source_sha,
        }],
        release,
        vmlinuz_sha256: sha256_hex(&image),
        config_sha256: sha256_hex(config.as_bytes()),
        vmlinuz,
        config: config_path,
        path: None,
        net_modules: Vec::new(),
    })
}

/// The recipe's source tarball unpacked in `tree`; its top directory.
fn unpack_source(r: &Recipe, tree: &Path) -> Result<std::path::PathBuf> {
    command::run(
        Command::new("tar")
            .arg("-xJf")
            .arg(r.tarball)
            .arg("-C")
            .arg(tree),
    )
    .context("unpacking the kernel source")?;
    fs::read_dir(tree)?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .context("the source tarball holds no directory")
}

/// `make tinyconfig` with the recipe's options merged in; the final config,
/// refused if it lost any of them.
fn configure(r: &Recipe, src: &Path, tree: &Path) -> Result<String> {
    let fragment = tree.join("lsmpmon.config");
    fs::write(&fragment, r.fragment)?;
    command::run(Command::new("make").arg("-C").arg(src).arg("tinyconfig"))
        .context("make tinyconfig")?;
    command::run(
        Command::new("scripts/kconfig/merge_config.sh")
            .current_dir(src)
            .args(["-m", ".config"])
            .arg(&fragment),
    )
    .context("merging lsmpmon's options")?;
    command::run(Command::new("make").arg("-C").arg(src).arg("olddefconfig"))
        .context("make olddefconfig")?;
    let config = fs::read_to_string(src.join(".config"))?;
    let lost = lost_options(r.fragment, &config);
    if !lost.is_empty() {
        bail!(
            "the kernel config dropped {} (a dependency is missing from kernels/{}.config)",
            lost.join(", "),
            r.name
        );
    }
    Ok(config)
}

/// `make bzImage` on every CPU, its progress as a line every 30 s.
fn make_bzimage(src: &Path) -> Result<()> {
    let jobs = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut cmd = Command::new("make");
    command::dies_with_parent(&mut cmd);
    let mut child = cmd
        .arg("-C")
        .arg(src)
        .arg(format!("-j{jobs}"))
        .arg("bzImage")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("running make bzImage")?;
    let stderr = child.stderr.take().context("make's stderr")?;
    let errors = std::thread::spawn(move || {
        BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
            .filter(|l| l.contains("error"))
            .last()
    });
    let started = Instant::now();
    let mut last = Instant::now();
    let mut compiled = 0u64;
    for line in BufReader::new(child.stdout.take().context("make's stdout")?)
        .lines()
        .map_while(Result::ok)
    {
        if line.trim_start().starts_with("CC ") {
            compiled += 1;
        }
        if last.elapsed().as_secs() >= 30 {
            last = Instant::now();
            crate::say!(
                "lsmpmon: kernel build: {compiled} files compiled, {:.0} s, at {}",
                started.elapsed().as_secs_f64(),
                line.trim()
            );
        }
    }
    let status = child.wait()?;
    if !status.success() {
        let why = errors.join().ok().flatten().unwrap_or_default();
        bail!("make bzImage failed ({status}): {why}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_option_is_named() {
        let fragment = "# c\nCONFIG_A=y\nCONFIG_B=\"x\"\nCONFIG_C=y\n";
        let config = "CONFIG_A=y\nCONFIG_B=\"x\"\n# CONFIG_C is not set\n";
        assert_eq!(lost_options(fragment, config), vec!["CONFIG_C=y"]);
    }

    #[test]
    fn the_smack_recipe_asks_for_smack_and_what_trace_needs() {
        let r = recipe("6.1-smack").unwrap();
        for opt in [
            "CONFIG_SECURITY_SMACK=y",
            "CONFIG_DEBUG_INFO_BTF=y",
            "CONFIG_BPF_LSM=y",
        ] {
            assert!(r.fragment.lines().any(|l| l == opt), "{opt}");
        }
        // What `trace` refuses a kernel without must all be asked for.
        let missing = super::super::trace_needs::trace_missing(r.fragment);
        assert!(missing.is_empty(), "{missing:?}");
    }
}
