//! The Debian package: `scripts/package.sh` builds it, `apt-get install`
//! installs it into a fresh Debian 12 root made by mmdebstrap (never into the
//! machine that runs the test), and inside that root (chroot) lsmpmon, its
//! man pages, its bash completion and its configurations are where a user
//! looks for them; removing it leaves no file behind.
//!
//! The root comes from this machine's own apt sources (LSMPMON_MIRROR
//! overrides, as for kernels) and is cached as a tarball under the lsmpmon
//! cache (`packages/debian-root/`), so only the first run downloads it.
mod common;
#[path = "common/tarcache.rs"]
mod tarcache;

use std::{
    collections::BTreeSet,
    fs,
    path::{Path, PathBuf},
    process::{Command, Output},
};

use lsmpmon::vm::{kernel::mirror::Mirrors, CacheDir};
use sha2::{Digest, Sha256};

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// A cache entry left as a directory with a tarball's name (what the test
/// made before 2026-11-27) or as a file tar cannot read is made again, and the
/// maker is given a name ending in `.tar`.
#[test]
fn a_bad_root_cache_entry_heals_itself() {
    let dir = common::fresh_dir("lsmpmon-tarcache", "heal");
    let entry = dir.join("bookworm-abc.tar");
    fs::create_dir_all(entry.join("etc")).unwrap();
    fs::write(entry.join("etc/os-release"), "x").unwrap();
    let make = |p: &Path| {
        assert!(p.to_string_lossy().ends_with(".tar"), "{}", p.display());
        let src = dir.join("src");
        fs::create_dir_all(&src).unwrap();
        fs::write(src.join("f"), "payload").unwrap();
        let st = Command::new("tar")
            .arg("-cf")
            .arg(p)
            .arg("-C")
            .arg(&src)
            .arg("f")
            .status();
        assert!(st.unwrap().success());
    };
    let got = tarcache::cached_tarball(&entry, make);
    assert!(
        fs::metadata(&got).unwrap().is_file(),
        "a directory is still the entry"
    );
    // Nor is a file that tar cannot read.
    let len = fs::metadata(&entry).unwrap().len();
    fs::write(&entry, vec![b'x'; (len / 3) as usize]).unwrap();
    let mut remade = false;
    tarcache::cached_tarball(&entry, |p| {
        remade = true;
        make(p)
    });
    assert!(remade, "an unreadable tarball was kept");
    // A good one is kept without calling the maker.
    tarcache::cached_tarball(&entry, |_| panic!("a good tarball was made again"));
    let leftovers: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("partial"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn the_package_installs_into_a_fresh_root_works_there_and_leaves_nothing_behind() {
    let deb = build_package();
    let root = fresh_root();
    let in_root_deb = format!("/tmp/{}", deb.file_name().unwrap().to_string_lossy());
    fs::copy(&deb, root.join(in_root_deb.trim_start_matches('/'))).unwrap();
    let before = files(&root);

    recommends_are_installable(&root, &deb, &in_root_deb);
    run_in(
        &root,
        &format!("apt-get install -y -q --no-install-recommends {in_root_deb}"),
    );
    version_everywhere(&root);
    man_pages(&root);
    bash_completion(&root);
    packaged_configurations(&root);
    packaged_fork_helper(&root);

    run_in(&root, "apt-get remove -y -q lsmpmon");
    let status = run_in(
        &root,
        "dpkg-query -W -f='${Status}' lsmpmon 2>/dev/null || true",
    );
    assert!(!status.contains("installed"), "after remove: {status}");
    let after = files(&root);
    let left: Vec<&PathBuf> = after.difference(&before).collect();
    assert!(left.is_empty(), "left behind by apt-get remove: {left:?}");
    let gone: Vec<&PathBuf> = before.difference(&after).collect();
    assert!(gone.is_empty(), "removed with lsmpmon: {gone:?}");
    run_in(
        &root,
        &format!("apt-get purge -y -q lsmpmon; rm {in_root_deb}"),
    );
    let named = run_in(&root, "find / -xdev -name '*lsmpmon*' 2>/dev/null");
    assert_eq!(named.trim(), "", "paths named lsmpmon after purge");
    let _ = fs::remove_dir_all(&root);
}

/// What every configuration's `host_packages` names (an Essential package
/// aside) and what lab's own checks need is Recommended, so `apt install`
/// brings it.
#[test]
fn the_packages_every_feature_needs_are_recommended() {
    let manifest: toml::Value = toml::from_str(
        &fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).unwrap(),
    )
    .unwrap();
    let deb = &manifest["package"]["metadata"]["deb"];
    let recommends: BTreeSet<&str> = deb["recommends"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    // lab's preflight, vm run's QEMU and the build op (crates/lab/src/host/preflight.rs, buildkit.rs)
    let mut needed: BTreeSet<String> = ["qemu-system-x86", "busybox-static", "swtpm"]
        .into_iter()
        .chain(["linux-source-6.1", "libc6-dev", "clang"])
        .map(String::from)
        .collect();
    let configs = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs");
    for dir in fs::read_dir(&configs).unwrap().flatten() {
        let Ok(text) = fs::read_to_string(dir.path().join("spec.toml")) else {
            continue;
        };
        let spec: toml::Value = toml::from_str(&text).unwrap();
        for p in spec
            .get("host_packages")
            .and_then(|p| p.as_array())
            .into_iter()
            .flatten()
        {
            needed.insert(p.as_str().unwrap().to_string());
        }
    }
    let missing: Vec<&String> = needed
        .iter()
        .filter(|p| !recommends.contains(p.as_str()) && !essential(p))
        .collect();
    assert!(
        missing.is_empty(),
        "not in Cargo.toml's recommends: {missing:?}"
    );
}

/// An Essential package (always installed), as this Debian machine knows it.
fn essential(package: &str) -> bool {
    let out = Command::new("dpkg-query")
        .args(["-W", "-f=${Essential}", package])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim() == "yes"
}

/// `scripts/package.sh`: the .deb it built (lintian-clean: it fails otherwise).
fn build_package() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(dir.join("scripts/package.sh"))
        .current_dir(dir)
        .output()
        .expect("running scripts/package.sh");
    let err = String::from_utf8_lossy(&out.stderr);
    eprintln!("--- scripts/package.sh ---\n{err}");
    assert!(out.status.success(), "scripts/package.sh failed");
    let deb = dir.join(String::from_utf8(out.stdout).unwrap().trim());
    assert_eq!(
        deb.file_name().unwrap().to_string_lossy(),
        format!("lsmpmon_{VERSION}_amd64.deb")
    );
    assert!(!err.contains("\nE: "), "lintian errors");
    deb
}

/// With Recommends, apt would install every package the control file
/// recommends (each exists in Debian 12), and each Suggested one exists.
fn recommends_are_installable(root: &Path, deb: &Path, in_root_deb: &str) {
    let field = |name: &str| {
        let out = Command::new("dpkg-deb")
            .arg("-f")
            .arg(deb)
            .arg(name)
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let names = |list: String| -> Vec<String> {
        list.split(',')
            .map(|p| p.trim().to_string())
            .filter(|p| !p.is_empty())
            .collect()
    };
    let (recommends, suggests) = (names(field("Recommends")), names(field("Suggests")));
    assert!(
        recommends.iter().any(|p| p == "qemu-system-x86"),
        "{recommends:?}"
    );
    let sim = run_in(
        root,
        &format!("apt-get install -s -o APT::Install-Recommends=true {in_root_deb}"),
    );
    let installed = run_in(root, "dpkg-query -W -f='${Package}\\n'");
    let would: BTreeSet<&str> = sim
        .lines()
        .filter_map(|l| l.strip_prefix("Inst "))
        .filter_map(|l| l.split_whitespace().next())
        .chain(installed.lines())
        .collect();
    let left_out: Vec<&String> = recommends
        .iter()
        .filter(|p| !would.contains(p.as_str()))
        .collect();
    assert!(
        left_out.is_empty(),
        "apt would not install {left_out:?}:\n{sim}"
    );
    let unknown = run_in(
        root,
        &format!(
            "for p in {}; do apt-cache show --no-all-versions $p >/dev/null 2>&1 || echo $p; done",
            suggests.join(" ")
        ),
    );
    assert_eq!(
        unknown.trim(),
        "",
        "suggested packages Debian 12 does not have"
    );
}

/// `--version`, the package and the man page say Cargo.toml's version; a
/// build from this checkout adds its commit.
fn version_everywhere(root: &Path) {
    let host = Command::new(common::LSMPMON)
        .arg("--version")
        .output()
        .unwrap();
    let host = String::from_utf8(host.stdout).unwrap();
    let packaged = run_in(root, "lsmpmon --version");
    assert_eq!(packaged, host);
    assert!(
        packaged.starts_with(&format!("lsmpmon {VERSION}")),
        "{packaged}"
    );
    if let Some(commit) = lsmpmon::base::version::commit() {
        assert!(packaged.contains(&commit[..12]), "{packaged}");
    }
    let version = run_in(root, "dpkg-query -W -f='${Version}' lsmpmon");
    assert_eq!(version, VERSION);
}

/// `man -w lsmpmon-lab` finds the page; it renders, and names the version.
fn man_pages(root: &Path) {
    let path = run_in(root, "man -w lsmpmon-lab");
    assert_eq!(path.trim(), "/usr/share/man/man1/lsmpmon-lab.1.gz");
    let page = run_in(root, "MANWIDTH=100 man -P cat lsmpmon-lab-run 2>/dev/null");
    assert!(page.contains("lsmpmon-lab-run"), "{page}");
    assert!(page.contains("--configs"), "{page}");
    assert!(page.contains(&format!("lsmpmon {VERSION}")), "{page}");
    for sub in [
        "trace", "serve", "top", "bench", "report", "compare", "vm-run", "lab",
    ] {
        run_in(root, &format!("man -w lsmpmon-{sub}"));
    }
    // The README's guides are beside it, as its links name them.
    let guides = run_in(root, "ls /usr/share/doc/lsmpmon/docs");
    for guide in ["lab.md", "trace.md", "results.md", "install.md"] {
        assert!(guides.lines().any(|l| l == guide), "{guide}: {guides}");
    }
}

/// bash-completion loads lsmpmon's completion on demand, from where the
/// package put it, and `lsmpmon l<TAB>` offers `lab`.
fn bash_completion(root: &Path) {
    let script = r#"
        . /usr/share/bash-completion/bash_completion
        __load_completion lsmpmon || { echo "no completion for lsmpmon"; exit 1; }
        f=$(complete -p lsmpmon | sed -E 's/.* -F ([^ ]+) .*/\1/')
        COMP_WORDS=(lsmpmon l); COMP_CWORD=1; COMP_LINE="lsmpmon l"; COMP_POINT=${#COMP_LINE}
        "$f" lsmpmon l lsmpmon
        printf '%s\n' "${COMPREPLY[@]}"
    "#;
    let out = run_in(
        root,
        &format!("bash -c '{}'", script.replace('\'', r"'\''")),
    );
    let offered: Vec<&str> = out.lines().map(str::trim).collect();
    assert!(offered.contains(&"lab"), "offered: {offered:?}");
    assert!(!offered.contains(&"trace"), "offered: {offered:?}");
    for file in [
        "/usr/share/zsh/vendor-completions/_lsmpmon",
        "/usr/share/fish/vendor_completions.d/lsmpmon.fish",
    ] {
        assert!(root.join(&file[1..]).is_file(), "{file}");
    }
}

/// Outside a checkout, lab's help names the configurations installed in
/// /usr/share/lsmpmon/configs.
fn packaged_configurations(root: &Path) {
    let help = run_in(root, "lsmpmon lab run --help");
    assert!(
        help.contains("the shipped ones (in /usr/share/lsmpmon/configs: apparmor, bpf-lsm,"),
        "{help}"
    );
    assert!(help.contains("selinux-mini"), "{help}");
    assert!(root
        .join("usr/share/lsmpmon/configs/access-matrix.toml")
        .is_file());
}

/// The fork ops find their helper where the package put it
/// (/usr/libexec/lsmpmon-fork: nothing lies beside /usr/bin/lsmpmon).
fn packaged_fork_helper(root: &Path) {
    let out = run_in(
        root,
        "lsmpmon bench --ops fork_exit --samples 2 --sample-ms 1 --json --dir /tmp/fork 2>/dev/null",
    );
    let result: serde_json::Value = serde_json::from_str(&out).expect("bench's JSON");
    assert_eq!(
        result["results"][0]["helper"], "/usr/libexec/lsmpmon-fork",
        "{out}"
    );
}

/// `script` run by sh as root inside the root, with its own /proc (a pid and
/// mount namespace, gone when it ends); it must succeed: its standard output.
fn run_in(root: &Path, script: &str) -> String {
    let out: Output = Command::new("unshare")
        .args(["--fork", "--pid", "--mount"])
        .arg(format!("--mount-proc={}", root.join("proc").display()))
        .arg("chroot")
        .arg(root)
        .args(["/usr/bin/env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin"])
        .args([
            "HOME=/root",
            "DEBIAN_FRONTEND=noninteractive",
            "/bin/sh",
            "-c",
            script,
        ])
        .output()
        .expect("running unshare chroot");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "in the root: {script}\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Every path of the root but apt's and dpkg's own records, caches and logs.
fn files(root: &Path) -> BTreeSet<PathBuf> {
    const NOT: &[&str] = &[
        "proc",
        "tmp",
        "var/lib/dpkg",
        "var/lib/apt",
        "var/cache",
        "var/log",
    ];
    let mut out = BTreeSet::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for e in fs::read_dir(&dir).unwrap().flatten() {
            let rel = e.path().strip_prefix(root).unwrap().to_path_buf();
            if NOT.iter().any(|n| rel == Path::new(n)) {
                continue;
            }
            if e.file_type().unwrap().is_dir() {
                todo.push(e.path());
            }
            out.insert(rel);
        }
    }
    out
}

/// The cached base root unpacked into the test's temporary directory.
fn fresh_root() -> PathBuf {
    let tar = base_root();
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("package-root");
    let _ = fs::remove_dir_all(&root);
    fs::create_dir_all(&root).unwrap();
    let st = Command::new("tar")
        .args(["--numeric-owner", "-xpf"])
        .arg(&tar)
        .arg("-C")
        .arg(&root)
        .status()
        .unwrap();
    assert!(st.success(), "unpacking {}", tar.display());
    root
}

/// A Debian 12 root (apt, man-db, bash-completion) as a tarball in the
/// cache, made by mmdebstrap on first use; one per archive.
fn base_root() -> PathBuf {
    let mirrors = match std::env::var("LSMPMON_MIRROR") {
        Ok(url) => Mirrors::given(&url),
        Err(_) => Mirrors::from_system(),
    }
    .unwrap_or_else(|e| panic!("no Debian archive: {e}"));
    let cache = CacheDir {
        cache_dir: std::env::var_os("LSMPMON_CACHE").map(PathBuf::from),
    }
    .path();
    let id = Sha256::digest(format!("{}\n{}", mirrors.main, mirrors.security));
    let tar = cache
        .join("packages/debian-root")
        .join(format!("bookworm-{}.tar", &format!("{id:x}")[..12]));
    tarcache::cached_tarball(&tar, |partial| mmdebstrap(&mirrors, partial))
}

fn mmdebstrap(mirrors: &Mirrors, partial: &Path) {
    let (main, security) = (&mirrors.main, &mirrors.security);
    let out = Command::new("mmdebstrap")
        .args(["--variant=apt", "--include=man-db,bash-completion"])
        // apt's lists stay: the test asks apt about Recommends offline.
        .args(["--skip=cleanup/apt/lists", "--format=tar", "bookworm"])
        .arg(partial)
        .arg(format!("deb {main} bookworm main"))
        .arg(format!("deb {main} bookworm-updates main"))
        .arg(format!("deb {security} bookworm-security main"))
        .output()
        .expect("running mmdebstrap (scripts/setup.sh --tests installs it)");
    assert!(
        out.status.success(),
        "mmdebstrap failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
