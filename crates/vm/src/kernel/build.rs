//! Kernels lsmpmon builds itself because Debian ships none: `6.1-smack`
//! (Smack is off in every Debian kernel), `7.3-selinux` and
//! `7.3-selinux-avc14` (SELinux with its debugging code, which evaluates the
//! avtab itself; AVC hash bits 9 as Debian's, and 14), `7.3-selinux-avtab`
//! (`7.3-selinux` with `kernels/7.3-avtab-slots.patch`, whose boot parameter
//! fixes the avtab's slots), and the framework-less `6.1-nolsm`, `7.3-nolsm`.
//! Built from Debian's `linux-source-<series>` with `make tinyconfig` and the options in
//! `kernels/<name>.config` (kept in the repository, carried in the binary),
//! once, into the cache, only when asked for.
use std::{
    fs,
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Instant,
};

use anyhow::{bail, Context, Result};

use super::apt::PrivateApt;
use super::entry::{ensure_current_entry, Staging};
use super::manifest::Kernel;
use super::mirror::Mirrors;
use crate::cache::{read_no_follow, sha256_file, sha256_hex, write_atomic};
use base::{command, error::usage};
use model::PackageRef;

pub struct Recipe {
    /// The name `--kernel` takes.
    pub name: &'static str,
    pub flavour: &'static str,
    /// The Debian package holding the source, and its tarball's path in it.
    pub source_package: &'static str,
    pub tarball: &'static str,
    /// Where the package comes from: `None`, installed on the host from
    /// Debian 12 (scripts/setup.sh --tests); a suite, fetched with the private apt
    /// into the cache (the system's apt sources are never touched).
    pub suite: Option<&'static str>,
    pub fragment: &'static str,
    /// Options set to another value than the fragment's (`NAME=value`;
    /// `NAME=n`: not set). Those the fragment lacks are ignored.
    pub overrides: &'static [&'static str],
    /// A unified diff applied to the source with `patch -p1` before it is
    /// configured (`kernels/*.patch`: a description, then the diff).
    pub patch: Option<&'static str>,
}

const SMACK_61: &str = include_str!("../../../../kernels/6.1-smack.config");
const SELINUX_73: &str = include_str!("../../../../kernels/7.3-selinux.config");
/// `lsmpmon_avtab_slots=N` on the kernel command line fixes every avtab's
/// hash slots (the embedded-SELinux paper's Table 11).
const AVTAB_SLOTS_73: &str = include_str!("../../../../kernels/7.3-avtab-slots.patch");

/// What the no-LSM kernels turn off in the fragment they share with the
/// module's build: the framework (CONFIG_SECURITY) and what depends on it.
/// One source and every other option alike, so the two builds differ by the
/// framework and the module alone (the LSM framework paper's comparison; the
/// embedded-SELinux paper's A - B). On 6.1 fanotify's permission events
/// need the framework (they were called from its hooks until 6.8) and
/// CONFIG_LSM exists without it (nothing reads it then); on 7.3 the reverse.
const NO_LSM_61: &[&str] = &[
    "CONFIG_SECURITY=n",
    "CONFIG_SECURITY_NETWORK=n",
    "CONFIG_SECURITY_PATH=n",
    "CONFIG_SECURITY_SMACK=n",
    "CONFIG_BPF_LSM=n",
    "CONFIG_FANOTIFY_ACCESS_PERMISSIONS=n",
];
const NO_LSM_73: &[&str] = &[
    "CONFIG_SECURITY=n",
    "CONFIG_SECURITY_NETWORK=n",
    "CONFIG_SECURITY_SELINUX=n",
    "CONFIG_SECURITY_SELINUX_DEVELOP=n",
    "CONFIG_SECURITY_SELINUX_DEBUG=n",
    "CONFIG_SECURITY_SELINUX_AVC_HASH_BITS=n",
    "CONFIG_BPF_LSM=n",
    "CONFIG_LSM=n",
];

pub const RECIPES: &[Recipe] = &[
    Recipe {
        name: "6.1-smack",
        flavour: "smack",
        source_package: "linux-source-6.1",
        tarball: "/usr/src/linux-source-6.1.tar.xz",
        suite: None,
        fragment: SMACK_61,
        overrides: &[],
        patch: None,
    },
    Recipe {
        name: "6.1-nolsm",
        flavour: "nolsm",
        source_package: "linux-source-6.1",
        tarball: "/usr/src/linux-source-6.1.tar.xz",
        suite: None,
        fragment: SMACK_61,
        overrides: NO_LSM_61,
        patch: None,
    },
    Recipe {
        name: "7.3-selinux",
        flavour: "selinux",
        source_package: "linux-source-7.3",
        tarball: "/usr/src/linux-source-7.3.tar.xz",
        suite: Some("trixie-backports"),
        fragment: SELINUX_73,
        overrides: &[],
        patch: None,
    },
    Recipe {
        name: "7.3-selinux-avc14",
        flavour: "selinux-avc14",
        source_package: "linux-source-7.3",
        tarball: "/usr/src/linux-source-7.3.tar.xz",
        suite: Some("trixie-backports"),
        fragment: SELINUX_73,
        overrides: &["CONFIG_SECURITY_SELINUX_AVC_HASH_BITS=14"],
        patch: None,
    },
    Recipe {
        name: "7.3-nolsm",
        flavour: "nolsm",
        source_package: "linux-source-7.3",
        tarball: "/usr/src/linux-source-7.3.tar.xz",
        suite: Some("trixie-backports"),
        fragment: SELINUX_73,
        overrides: NO_LSM_73,
        patch: None,
    },
    Recipe {
        name: "7.3-selinux-avtab",
        flavour: "selinux-avtab",
        source_package: "linux-source-7.3",
        tarball: "/usr/src/linux-source-7.3.tar.xz",
        suite: Some("trixie-backports"),
        fragment: SELINUX_73,
        overrides: &[],
        patch: Some(AVTAB_SLOTS_73),
    },
];

impl Recipe {
    /// The fragment with the recipe's overrides in place of the lines they
    /// replace.
    pub fn options(&self) -> String {
        self.fragment
            .lines()
            .map(|line| {
                let name = line.split('=').next().unwrap_or("");
                match self
                    .overrides
                    .iter()
                    .find(|o| line.starts_with("CONFIG_") && o.split('=').next() == Some(name))
                {
                    Some(o) if o.ends_with("=n") => format!("# {name} is not set"),
                    Some(o) => o.to_string(),
                    None => line.to_string(),
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
            + "\n"
    }
}

/// Host programs the build runs, and the Debian 12 package of each.
const TOOLS: &[(&str, &str)] = &[
    ("make", "make"),
    ("gcc", "gcc"),
    ("flex", "flex"),
    ("bison", "bison"),
    ("bc", "bc"),
    ("pahole", "dwarves"),
    ("xz", "xz-utils"),
    ("size", "binutils"),
];

pub fn recipe(name: &str) -> Option<&'static Recipe> {
    RECIPES.iter().find(|r| r.name == name)
}

/// The built kernel, building it first if the cache has none. `mirror`: the
/// Debian archive a recipe of another suite fetches its source from
/// (default: the machine's own apt sources).
pub fn ensure(cache: &Path, r: &Recipe, mirror: Option<&str>) -> Result<Kernel> {
    let cache = std::path::absolute(cache)?;
    let rel = Path::new("kernels").join(r.name);
    ensure_current_entry(
        &cache,
        &rel,
        |k| stale(k, r),
        |dir| build(r, &cache, mirror, dir),
    )
}

/// Why a cached build (its files already checked) is out of date: it lacks
/// an option the recipe asks for (6.1-smack before CONFIG_SLUB); it is then
/// built again.
fn stale(k: &Kernel, r: &Recipe) -> Option<String> {
    let config = read_no_follow(&k.config)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    if k.image
        .as_ref()
        .is_none_or(|i| i.fragment_sha256.is_empty())
    {
        return Some(format!(
            "the cached {} kernel was built before lsmpmon recorded its sizes: building it again (ccache makes this quicker)",
            r.name
        ));
    }
    let patch = r.patch.map(|p| sha256_hex(p.as_bytes()));
    if k.image
        .as_ref()
        .is_some_and(|i| i.source_patch_sha256 != patch)
    {
        return Some(format!(
            "the cached {} kernel was built from another patch than kernels/ holds now: building it again",
            r.name
        ));
    }
    let lost = lost_options(&r.options(), &config);
    (!lost.is_empty()).then(|| {
        format!(
            "the cached {} kernel was built without {} that kernels/{}.config now asks for: building it again",
            r.name,
            lost.join(", "),
            r.name
        )
    })
}

fn check_tools(r: &Recipe) -> Result<()> {
    let patch = r.patch.map(|_| ("patch", "patch"));
    let mut missing: Vec<&str> = TOOLS
        .iter()
        .chain(patch.iter())
        .filter(|(prog, _)| command::which(prog).is_none())
        .map(|(_, pkg)| *pkg)
        .collect();
    if r.suite.is_none() && !Path::new(r.tarball).is_file() {
        missing.insert(0, r.source_package);
    }
    if missing.is_empty() {
        return Ok(());
    }
    Err(usage(format!(
        "building the {} kernel needs {}: apt-get install {} (scripts/setup.sh --tests does)",
        r.name,
        missing.join(", "),
        missing.join(" ")
    )))
}

fn installed_version(package: &str) -> Result<String> {
    let version =
        command::output(Command::new("dpkg-query").args(["-W", "-f=${Version}", package]))
            .with_context(|| format!("{package} is not installed"))?;
    Ok(version.trim().to_string())
}

/// The source tarball a build unpacks, and the package it came from.
struct Source {
    tarball: PathBuf,
    package: PackageRef,
}

/// The recipe's source: the host's installed package, or one fetched from
/// its suite into `tree` with the private apt.
fn source(r: &Recipe, cache: &Path, mirror: Option<&str>, tree: &Path) -> Result<Source> {
    let Some(suite) = r.suite else {
        let tarball = PathBuf::from(r.tarball);
        return Ok(Source {
            package: PackageRef {
                name: r.source_package.into(),
                version: installed_version(r.source_package)?,
                sha256: sha256_file(&tarball)?,
            },
            tarball,
        });
    };
    let mirrors = match mirror {
        Some(m) => Mirrors::given(m)?,
        None => Mirrors::from_system()?,
    };
    let apt = PrivateApt::new(cache, suite, &mirrors)?;
    apt.update()?;
    let deb = apt
        .download(r.source_package, tree)
        .with_context(|| format!("fetching {} from {suite}", r.source_package))?;
    let version = command::output(Command::new("dpkg-deb").arg("-f").arg(&deb).arg("Version"))?;
    let unpacked = tree.join("package");
    command::run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&unpacked))
        .with_context(|| format!("unpacking {}", deb.display()))?;
    Ok(Source {
        tarball: unpacked.join(r.tarball.trim_start_matches('/')),
        package: PackageRef {
            name: r.source_package.into(),
            version: version.trim().to_string(),
            sha256: sha256_file(&deb)?,
        },
    })
}

/// The options the fragment asks for that the final config does not have
/// (a dependency the fragment forgot turns them off silently), and those it
/// turns off that the config still sets (another option selects them).
fn lost_options(fragment: &str, config: &str) -> Vec<String> {
    fragment
        .lines()
        .map(str::trim)
        .filter(|want| match not_set(want) {
            Some(name) => config.lines().any(|l| {
                l.trim()
                    .strip_prefix(name)
                    .is_some_and(|v| v.starts_with('='))
            }),
            None => want.starts_with("CONFIG_") && !config.lines().any(|l| l.trim() == *want),
        })
        .map(String::from)
        .collect()
}

/// `NAME` of a `# NAME is not set` line.
fn not_set(line: &str) -> Option<&str> {
    line.strip_prefix("# ")?
        .strip_suffix(" is not set")
        .filter(|n| n.starts_with("CONFIG_"))
}

fn build(r: &Recipe, cache: &Path, mirror: Option<&str>, dir: &Path) -> Result<Kernel> {
    check_tools(r)?;
    // Removed however the build ends: a failed one leaves no source tree.
    let tree = Staging::new(dir, ".build")?;
    let source = source(r, cache, mirror, tree.path())?;
    let started = Instant::now();
    base::say!(
        "lsmpmon: building the {} kernel from {} {} in {} (once; about 20 minutes on 2 cores)",
        r.name,
        r.source_package,
        source.package.version,
        tree.path().display()
    );
    let src = unpack_source(&source.tarball, tree.path())?;
    if let Some(patch) = r.patch {
        apply_patch(r, patch, &src)?;
    }
    let config = configure(r, &src, tree.path())?;
    make_bzimage(&src, &cache.join(crate::cache::CCACHE))?;
    let mut sizes = super::image_size::measure(&src, sha256_hex(r.fragment.as_bytes()))?;
    sizes.source_patch_sha256 = r.patch.map(|p| sha256_hex(p.as_bytes()));
    let image = fs::read(src.join("arch/x86/boot/bzImage")).context("reading the bzImage")?;
    let release = fs::read_to_string(src.join("include/config/kernel.release"))?
        .trim()
        .to_string();
    let boot = dir.join("boot");
    fs::create_dir_all(&boot)?;
    let vmlinuz = boot.join(format!("vmlinuz-{release}"));
    let config_path = boot.join(format!("config-{release}"));
    // Whole or not at all: another lsmpmon may be booting the build this replaces.
    write_atomic(&vmlinuz, &image)?;
    write_atomic(&config_path, config.as_bytes())?;
    drop(tree);
    base::say!(
        "lsmpmon: built {} ({release}) in {:.1} min",
        r.name,
        started.elapsed().as_secs_f64() / 60.0
    );
    Ok(Kernel {
        series: r.name.into(),
        flavour: r.flavour.into(),
        package: r.source_package.into(),
        package_version: source.package.version.clone(),
        deb_sha256: source.package.sha256.clone(),
        packages: vec![source.package],
        release,
        vmlinuz_sha256: sha256_hex(&image),
        config_sha256: sha256_hex(config.as_bytes()),
        vmlinuz,
        config: config_path,
        path: None,
        net_modules: Vec::new(),
        test_module: crate::kernel::test_module::TestModule::Absent,
        image: Some(sizes),
    })
}

/// The source tarball unpacked in `tree`; its top directory.
fn unpack_source(tarball: &Path, tree: &Path) -> Result<PathBuf> {
    command::run(
        Command::new("tar")
            .arg("-xJf")
            .arg(tarball)
            .arg("-C")
            .arg(tree),
    )
    .context("unpacking the kernel source")?;
    fs::read_dir(tree)?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir() && p.file_name().is_some_and(|n| n != "package"))
        .context("the source tarball holds no directory")
}

/// The recipe's patch applied to the unpacked source, refused whole if any
/// part of it does not apply (another release of the source moved the code).
fn apply_patch(r: &Recipe, patch: &str, src: &Path) -> Result<()> {
    let mut child = Command::new("patch")
        .args([
            "-p1",
            "--forward",
            "--batch",
            "--fuzz=0",
            "--no-backup-if-mismatch",
        ])
        .current_dir(src)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("running patch")?;
    let mut stdin = child.stdin.take().context("patch's standard input")?;
    std::io::Write::write_all(&mut stdin, patch.as_bytes())?;
    drop(stdin);
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!(
            "the {} kernel's patch does not apply to this source: {}",
            r.name,
            String::from_utf8_lossy(&out.stdout).trim()
        );
    }
    Ok(())
}

/// `make tinyconfig` with the recipe's options merged in; the final config,
/// refused if it lost any of them.
fn configure(r: &Recipe, src: &Path, tree: &Path) -> Result<String> {
    let fragment = tree.join("lsmpmon.config");
    let options = r.options();
    fs::write(&fragment, &options)?;
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
    let lost = lost_options(&options, &config);
    if !lost.is_empty() {
        bail!(
            "the kernel config dropped {} (a dependency is missing from kernels/{}.config)",
            lost.join(", "),
            r.name
        );
    }
    Ok(config)
}

/// `make bzImage` on every CPU, its progress as a line every 30 s. Through
/// ccache where the host has it (in `ccache_dir`, with paths made relative to
/// the tree): recipes that differ in one option, as the SELinux pair, then
/// compile only what that option touches.
fn make_bzimage(src: &Path, ccache_dir: &Path) -> Result<()> {
    let jobs = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut cmd = Command::new("make");
    command::dies_with_parent(&mut cmd);
    // What the kernel stamps into its image (uname -v, the banner): fixed,
    // so a build of the same recipe and toolchain is the same image.
    cmd.env("KBUILD_BUILD_TIMESTAMP", "2000-01-01 00:00:00 UTC")
        .env("KBUILD_BUILD_USER", "lsmpmon")
        .env("KBUILD_BUILD_HOST", "lsmpmon")
        .env("KBUILD_BUILD_VERSION", "1");
    if command::which("ccache").is_some() {
        cmd.arg("CC=ccache gcc")
            .env("CCACHE_DIR", ccache_dir)
            .env("CCACHE_BASEDIR", src)
            .env("CCACHE_NOHASHDIR", "1")
            .env("CCACHE_MAXSIZE", "5G");
    }
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
            base::say!(
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
    fn a_build_from_an_older_recipe_is_made_again_and_a_current_one_kept() {
        let r = recipe("6.1-smack").unwrap();
        let dir = std::env::temp_dir().join(format!("lsmpmon-recipe-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let entry = Entry(dir);
        fs::create_dir_all(entry.path()).unwrap();
        let config = entry.path().join("config-6.1");
        let k = Kernel {
            series: r.name.into(),
            flavour: r.flavour.into(),
            package: r.source_package.into(),
            package_version: "1".into(),
            deb_sha256: "x".into(),
            packages: Vec::new(),
            release: "6.1".into(),
            vmlinuz: entry.path().join("vmlinuz-6.1"),
            config: config.clone(),
            vmlinuz_sha256: "x".into(),
            config_sha256: "x".into(),
            path: None,
            net_modules: Vec::new(),
            test_module: crate::kernel::test_module::TestModule::Absent,
            image: Some(model::ImageSizes {
                fragment_sha256: "f".into(),
                source_patch_sha256: None,
                bzimage_bytes: 1,
                vmlinux: Default::default(),
                parts: Default::default(),
            }),
        };
        // Everything the recipe asks for, as a config lists it.
        fs::write(&config, r.options()).unwrap();
        assert_eq!(stale(&k, r), None, "a current build is made again");
        // The SLOB build of before: the recipe's SLUB line is not in it.
        fs::write(
            &config,
            r.options().replace("CONFIG_SLUB=y", "CONFIG_SLOB=y"),
        )
        .unwrap();
        let why = stale(&k, r).expect("a stale build is kept");
        assert!(why.contains("CONFIG_SLUB=y"), "{why}");
        // A config that is a symlink is not followed: made again.
        fs::remove_file(&config).unwrap();
        let real = entry.path().join("elsewhere");
        fs::write(&real, r.options()).unwrap();
        std::os::unix::fs::symlink(&real, &config).unwrap();
        assert!(stale(&k, r).is_some(), "read through a symlink");
        // A build from before lsmpmon recorded sizes is made again.
        fs::remove_file(&config).unwrap();
        fs::write(&config, r.options()).unwrap();
        let old = Kernel { image: None, ..k };
        assert!(stale(&old, r).unwrap().contains("sizes"));
    }

    #[test]
    fn a_no_lsm_kernel_turns_off_the_framework_and_keeps_every_other_option() {
        for (nolsm, with) in [("6.1-nolsm", "6.1-smack"), ("7.3-nolsm", "7.3-selinux")] {
            let (n, w) = (recipe(nolsm).unwrap(), recipe(with).unwrap());
            assert_eq!(n.source_package, w.source_package);
            let (no, wo) = (n.options(), w.options());
            assert!(
                no.lines().any(|l| l == "# CONFIG_SECURITY is not set"),
                "{nolsm}"
            );
            assert!(!no.contains("CONFIG_BPF_LSM=y"));
            // Line for line the same but for what the framework holds.
            assert_eq!(no.lines().count(), wo.lines().count());
            for (a, b) in no.lines().zip(wo.lines()).filter(|(a, b)| a != b) {
                let name = not_set(a).unwrap_or_else(|| panic!("{nolsm}: {a} changed"));
                assert!(b.starts_with(name), "{a} / {b}");
                assert!(
                    name.contains("SECURITY")
                        || name.contains("LSM")
                        || name.contains("FANOTIFY_ACCESS"),
                    "{name}"
                );
            }
        }
        // A config that still sets an option the recipe turns off is refused,
        // one that lacks it is not.
        let frag = "# CONFIG_SECURITY is not set\nCONFIG_A=y\n";
        assert_eq!(
            lost_options(frag, "CONFIG_A=y\nCONFIG_SECURITY=y\n"),
            vec!["# CONFIG_SECURITY is not set"]
        );
        assert!(lost_options(frag, "CONFIG_A=y\nCONFIG_SECURITYFS=y\n").is_empty());
    }

    /// A scratch directory, removed however the test ends.
    struct Entry(PathBuf);

    impl Entry {
        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Entry {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn the_smack_recipe_asks_for_smack_and_what_trace_needs() {
        let r = recipe("6.1-smack").unwrap();
        for opt in [
            "CONFIG_SECURITY_SMACK=y",
            "CONFIG_DEBUG_INFO_BTF=y",
            "CONFIG_BPF_LSM=y",
            "CONFIG_SLUB=y",
        ] {
            assert!(r.fragment.lines().any(|l| l == opt), "{opt}");
        }
        // What `trace` refuses a kernel without must all be asked for.
        let missing = super::super::trace_needs::trace_missing(r.fragment);
        assert!(missing.is_empty(), "{missing:?}");
    }

    #[test]
    fn the_selinux_recipes_differ_only_in_the_avc_slots() {
        let nine = recipe("7.3-selinux").unwrap().options();
        let fourteen = recipe("7.3-selinux-avc14").unwrap().options();
        for (opts, bits) in [(&nine, "9"), (&fourteen, "14")] {
            for opt in [
                "CONFIG_SECURITY_SELINUX=y",
                "CONFIG_SECURITY_SELINUX_DEBUG=y",
                "CONFIG_DYNAMIC_DEBUG=y",
            ] {
                assert!(opts.lines().any(|l| l == opt), "{opt}");
            }
            let want = format!("CONFIG_SECURITY_SELINUX_AVC_HASH_BITS={bits}");
            assert_eq!(
                opts.lines()
                    .filter(|l| l.contains("AVC_HASH_BITS="))
                    .count(),
                1
            );
            assert!(opts.lines().any(|l| l == want), "{want}");
            assert!(super::super::trace_needs::trace_missing(opts).is_empty());
        }
        let differ = nine
            .lines()
            .zip(fourteen.lines())
            .filter(|(a, b)| a != b)
            .count();
        assert_eq!(differ, 1);
        // Fetched from their suite, never from the host's apt sources.
        assert_eq!(
            recipe("7.3-selinux").unwrap().suite,
            Some("trixie-backports")
        );
    }
}
