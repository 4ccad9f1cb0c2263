//! lsmpmon runs as root against the user's cache: what it boots must be what
//! it fetched, from inside the cache, and it never writes through a symlink.
//! Every test but the two that boot fails before booting anything (no guest,
//! no network); `vm cache` says what it could not do (issue 27, item 7).
mod common;
#[path = "common/vmcache.rs"]
mod vmcache;

use std::{
    fs,
    os::unix::{
        fs::{symlink, PermissionsExt},
        process::CommandExt,
    },
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
};

use common::{one_error_line, LSMPMON};

/// `vm run -- true` with `cache`; an unreachable mirror, so nothing is fetched.
fn vm_run(cache: &Path) -> Output {
    Command::new(LSMPMON)
        .args(["vm", "run", "--kernel", "6.1", "--timeout", "60"])
        .args(["--mirror", "file:/nonexistent/lsmpmon-test"])
        .env("LSMPMON_CACHE", cache)
        .args(["--", "true"])
        .output()
        .unwrap()
}

fn refused(out: &Output, cache: &Path, words: &[&str]) {
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let line = one_error_line(out);
    for w in words {
        assert!(line.contains(w), "'{w}' not in: {line}");
    }
    assert!(vmcache::run_dirs(cache).is_empty(), "a guest was started");
}

#[test]
fn a_tampered_kernel_image_is_not_booted() {
    let cache = vmcache::with_kernel("6.1", "cache-tampered");
    let image = vmcache::image(&cache, "6.1");
    let mut bytes = fs::read(&image).unwrap();
    bytes[4096] ^= 0xff;
    fs::write(&image, bytes).unwrap();
    let name = image.file_name().unwrap().to_string_lossy().into_owned();
    refused(
        &vm_run(&cache),
        &cache,
        &[&name, "sha256", "vm cache --clean"],
    );
}

#[test]
fn a_manifest_path_outside_the_cache_is_refused() {
    let cache = vmcache::with_kernel("6.1", "cache-outside");
    // The very image, with its recorded sha256, but outside the cache.
    let outside = cache.with_file_name("cache-outside-image");
    fs::copy(vmcache::image(&cache, "6.1"), &outside).unwrap();
    let manifest = cache.join("kernels/6.1-cloud/kernel.json");
    let original: serde_json::Value =
        serde_json::from_slice(&fs::read(&manifest).unwrap()).unwrap();
    let escapes = [
        outside.display().to_string(),
        "root/../../../../cache-outside-image".to_string(),
    ];
    for path in escapes {
        let mut m = original.clone();
        m["vmlinuz"] = path.clone().into();
        fs::write(&manifest, serde_json::to_vec(&m).unwrap()).unwrap();
        refused(&vm_run(&cache), &cache, &[&path, "outside"]);
    }
}

#[test]
fn symlinks_planted_in_the_cache_are_not_followed() {
    let cache = vmcache::with_kernel("6.1", "cache-symlink");
    let victim = cache.with_file_name("cache-symlink-victim");
    let _ = fs::remove_dir_all(&victim);
    fs::create_dir(&victim).unwrap();
    // Guest logs would be written through `runs`.
    symlink(&victim, cache.join("runs")).unwrap();
    refused(&vm_run(&cache), &cache, &["runs", "symlink"]);
    assert_eq!(fs::read_dir(&victim).unwrap().count(), 0, "written through");
    fs::remove_file(cache.join("runs")).unwrap();
    // A manifest that is a link to one elsewhere is not read.
    let manifest = cache.join("kernels/6.1-cloud/kernel.json");
    fs::rename(&manifest, victim.join("kernel.json")).unwrap();
    symlink(victim.join("kernel.json"), &manifest).unwrap();
    refused(&vm_run(&cache), &cache, &["kernel.json", "symlink"]);
}

/// A command that stops right after the kernel is in the cache: `lab plan`
/// fetches each kernel of its matrix and boots nothing (`vm run` refuses a
/// missing --lsmpmon-bin before fetching now, issue 34 item 9).
fn fetch_only(cache: &Path) -> std::process::Child {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let plan = cache.with_file_name(format!("cache-cold-plan-{n}.json"));
    let results = cache.with_file_name(format!("cache-cold-results-{n}"));
    let _ = fs::remove_dir_all(&results);
    Command::new(LSMPMON)
        .args(["lab", "plan", "--kernels", "6.1", "--configs", "none", "-o"])
        .arg(&plan)
        .arg("--results")
        .arg(&results)
        .env("LSMPMON_CACHE", cache)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Two runs on a cold cache (as the guest tests start them): one fetches,
/// the other waits and uses its kernel, which then boots. Uses the network
/// (this machine's apt sources), ~20 s, and one guest.
#[test]
fn two_cold_fetches_make_one_entry_that_boots() {
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cache-cold");
    let _ = fs::remove_dir_all(&cache);
    let runs = [fetch_only(&cache), fetch_only(&cache)];
    let outs: Vec<std::process::Output> = runs
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    let errs: Vec<String> = outs
        .iter()
        .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
        .collect();
    let all = errs.concat();
    let count = |what: &str| all.lines().filter(|l| l.contains(what)).count();
    assert_eq!(count("lsmpmon: fetching Debian 6.1"), 1, "{all}");
    assert_eq!(
        count("waiting for another lsmpmon fetching or building"),
        1,
        "{all}"
    );
    // Both got past the fetch and made their plans.
    assert!(outs.iter().all(|o| o.status.success()), "{all}");
    let entry = cache.join("kernels/6.1-cloud");
    let names: Vec<String> = fs::read_dir(&entry)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "kernel.json and root only: {names:?}");
    let m: serde_json::Value =
        serde_json::from_slice(&fs::read(entry.join("kernel.json")).unwrap()).unwrap();
    let image = Path::new(m["vmlinuz"].as_str().unwrap());
    assert_eq!(
        vmcache::sha256(image),
        m["vmlinuz_sha256"].as_str().unwrap()
    );
    let out = Command::new(LSMPMON)
        .args(["vm", "run", "--kernel", "6.1", "--", "uname", "-r"])
        .env("LSMPMON_CACHE", &cache)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        m["release"].as_str().unwrap()
    );
}

/// A deb of `files` (path in the package, source) named like Debian's.
fn build_deb(dir: &Path, package: &str, files: &[(String, &Path)]) -> std::path::PathBuf {
    let tree = dir.join(format!("tree-{package}"));
    fs::create_dir_all(tree.join("DEBIAN")).unwrap();
    fs::write(
        tree.join("DEBIAN/control"),
        format!(
            "Package: {package}\nVersion: 7.3.4-1~test1\nArchitecture: amd64\n\
             Maintainer: lsmpmon tests <tests@lsmpmon.invalid>\nDescription: test\n"
        ),
    )
    .unwrap();
    for (inside, src) in files {
        let to = tree.join(inside);
        fs::create_dir_all(to.parent().unwrap()).unwrap();
        fs::copy(src, to).unwrap();
    }
    let deb = dir.join(format!("{package}_7.3.4-1~test1_amd64.deb"));
    let st = Command::new("dpkg-deb")
        .args(["-Zgzip", "-b"])
        .arg(&tree)
        .arg(&deb)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    fs::remove_dir_all(&tree).unwrap();
    deb
}

/// `--kernel PATH`: a bzImage with its config beside it, and a 7.x-style
/// `linux-binary-unsigned` package with its `linux-base` beside it, boot and
/// trace; the result names the file and the sha256 of what was booted.
#[test]
fn own_bzimage_and_debian_packages_boot_with_their_sha256() {
    let cache = vmcache::with_kernel("7.3", "own-kernels");
    let image = vmcache::image(&cache, "7.3");
    let name = image.file_name().unwrap().to_string_lossy().into_owned();
    let release = name.trim_start_matches("vmlinuz-").to_string();
    let config = image.with_file_name(format!("config-{release}"));
    let own = cache.join("own");
    fs::create_dir_all(&own).unwrap();
    fs::copy(&image, own.join("bzImage")).unwrap();
    fs::copy(&config, own.join("config")).unwrap();
    let modules = format!("usr/lib/modules/{release}");
    let binary = build_deb(
        &own,
        &format!("linux-binary-unsigned-{release}"),
        &[(format!("{modules}/vmlinuz.unsigned"), &image)],
    );
    let base = build_deb(
        &own,
        &format!("linux-base-{release}"),
        &[(format!("{modules}/config"), &config)],
    );
    let trace = |kernel: &Path| {
        let out = Command::new(LSMPMON)
            .args(["vm", "run", "--kernel"])
            .arg(kernel)
            .args(["--", "sh", "-c"])
            .arg(
                "lsmpmon trace --json --hooks inode_create -- \
                 sh -c 'for i in $(seq 30); do touch /tmp/f$i; done'",
            )
            .env("LSMPMON_CACHE", &cache)
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        common::validate("trace.schema.json", &text);
        let r = common::json(&text);
        assert_eq!(common::calls(&r, "inode_create"), 30);
        assert_eq!(r["provenance"]["kernel_release"], release.as_str());
        r["provenance"]["kernel"].clone()
    };
    let k = trace(&own.join("bzImage"));
    assert_eq!(k["series"], "path");
    assert_eq!(k["path"], own.join("bzImage").display().to_string());
    assert_eq!(k["image_sha256"], vmcache::sha256(&image));
    assert_eq!(k["packages"], serde_json::json!([]));

    let k = trace(&binary);
    assert_eq!(k["path"], binary.display().to_string());
    assert_eq!(k["image_sha256"], vmcache::sha256(&image));
    let packages: Vec<(String, String)> = k["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            assert_eq!(p["version"], "7.3.4-1~test1");
            (
                p["name"].as_str().unwrap().to_string(),
                p["sha256"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        packages,
        [
            (
                format!("linux-binary-unsigned-{release}"),
                vmcache::sha256(&binary)
            ),
            (format!("linux-base-{release}"), vmcache::sha256(&base)),
        ]
    );
    fs::remove_dir_all(&cache).unwrap();
}

/// A cache `name` holding guest logs, a kernel entry and apt lists: `bytes`
/// in the entry's image, every directory 0755 and file 0644 (root's, as a
/// root lsmpmon leaves it).
fn filled_cache(name: &str, bytes: usize) -> PathBuf {
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = fs::remove_dir_all(&cache);
    let files = [
        ("runs/1-1/console.log", 10),
        ("kernels/6.1-cloud/root/boot/vmlinuz-6.1", bytes),
        ("apt/bookworm/sources.list", 10),
    ];
    for (file, len) in files {
        let path = cache.join(file);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, vec![b'x'; len]).unwrap();
    }
    for d in ["", "runs", "runs/1-1", "kernels", "apt"] {
        fs::set_permissions(cache.join(d), fs::Permissions::from_mode(0o755)).unwrap();
    }
    cache
}

/// `lsmpmon vm cache ARGS` on `cache`, as `uid` (root: None).
fn vm_cache(cache: &Path, uid: Option<u32>, args: &[&str]) -> Output {
    let mut cmd = Command::new(LSMPMON);
    cmd.args(["vm", "cache"])
        .args(args)
        .env("LSMPMON_CACHE", cache);
    if let Some(uid) = uid {
        cmd.uid(uid).gid(uid);
    }
    cmd.output().unwrap()
}

/// Another user, if the tests run as root (as CI does); None otherwise.
fn nobody() -> Option<u32> {
    // SAFETY: plain query.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root to act as another user");
        return None;
    }
    Some(65534)
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn cleaning_another_users_cache_says_what_it_could_not_remove() {
    let Some(uid) = nobody() else { return };
    let cache = filled_cache("cache-other-user", 10);
    let out = vm_cache(&cache, Some(uid), &["--clean", "--all"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let line = one_error_line(&out);
    for sub in ["runs", "kernels", "apt"] {
        let path = cache.join(sub).display().to_string();
        assert!(line.contains(&path), "{path} not in: {line}");
        assert!(cache.join(sub).exists(), "{sub} removed");
    }
    assert!(
        line.contains("could not remove") && line.contains("uid 0"),
        "{line}"
    );
    // Only the guest logs: what it could not remove is all it names.
    let out = vm_cache(&cache, Some(uid), &["--clean"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(!one_error_line(&out).contains("kernels"));
    // Its owner can.
    let out = vm_cache(&cache, None, &["--clean", "--all"]);
    assert!(out.status.success(), "{out:?}");
    for sub in ["runs", "kernels", "apt"] {
        assert!(!cache.join(sub).exists(), "{sub} left");
    }
}

#[test]
fn unreadable_directories_are_said_not_counted_as_nothing() {
    let Some(uid) = nobody() else { return };
    let cache = filled_cache("cache-unreadable", 1 << 20);
    let entry = cache.join("kernels/6.1-cloud");
    fs::set_permissions(&entry, fs::Permissions::from_mode(0o700)).unwrap();
    let out = vm_cache(&cache, Some(uid), &[]);
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    let kernels = text.lines().find(|l| l.starts_with("  kernels")).unwrap();
    assert!(
        kernels.contains("or more: cannot read") && kernels.contains(&entry.display().to_string()),
        "{text}"
    );
    let total = text.lines().find(|l| l.starts_with("  total")).unwrap();
    assert!(total.contains("cannot read"), "{text}");
    // Its owner reads it all.
    let text = stdout(&vm_cache(&cache, None, &[]));
    assert!(text.contains("  kernels     1.0 MiB\n"), "{text}");
}

#[test]
fn a_symlinked_cache_is_measured_through_the_link() {
    let cache = filled_cache("cache-linked-target", 3 << 20);
    let link = cache.with_file_name("cache-linked");
    let _ = fs::remove_file(&link);
    symlink(&cache, &link).unwrap();
    let out = vm_cache(&link, None, &[]);
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    assert!(text.contains("  total       3.0 MiB\n"), "{text}");
    assert!(text.contains("    6.1-cloud (incomplete"), "{text}");
}

#[test]
fn a_cache_dir_that_is_not_a_directory_is_refused() {
    for args in [
        &["vm", "cache", "--cache-dir", "/etc/hostname"][..],
        &["vm", "run", "--cache-dir", "/etc/hostname", "--", "true"],
    ] {
        let out = Command::new(LSMPMON).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        let line = one_error_line(&out);
        assert!(
            line.contains("/etc/hostname") && line.contains("not a directory"),
            "{line}"
        );
        assert!(out.stdout.is_empty(), "{out:?}");
    }
    let out = Command::new(LSMPMON)
        .args(["vm", "cache"])
        .env("LSMPMON_CACHE", "/etc/hostname")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

#[test]
fn a_failed_fetch_leaves_nothing_that_looks_cached() {
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cache-failed-fetch");
    let _ = fs::remove_dir_all(&cache);
    fs::create_dir_all(&cache).unwrap();
    let out = vm_run(&cache);
    assert!(!out.status.success(), "{out:?}");
    // A package that dpkg-deb cannot read fails after its staging directory is made.
    let bad = cache.with_file_name("cache-failed-fetch.deb");
    fs::write(&bad, b"!<arch>\ndebian-binary   truncated").unwrap();
    let out = Command::new(LSMPMON)
        .args(["vm", "run", "--kernel"])
        .arg(&bad)
        .env("LSMPMON_CACHE", &cache)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(one_error_line(&out).contains("dpkg-deb"), "{out:?}");
    let left: Vec<_> = fs::read_dir(cache.join("kernels"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        // Lock files stay (removing a file another process waits on to
        // lock would let a third lock a new one beside it); none looks cached.
        .filter(|n| !(n.starts_with('.') && n.ends_with(".lock")))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    let text = stdout(&vm_cache(&cache, None, &[]));
    let listed: Vec<&str> = text.lines().filter(|l| l.starts_with("    ")).collect();
    assert!(listed.is_empty(), "{text}");
}

#[test]
fn a_closed_or_full_stdout_is_one_line_not_a_panic() {
    let cache = filled_cache("cache-stdout", 10);
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(LSMPMON)
        .args(["vm", "cache"])
        .env("LSMPMON_CACHE", &cache)
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(out.stderr.is_empty(), "{out:?}");
    let full = fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = Command::new(LSMPMON)
        .args(["vm", "cache"])
        .env("LSMPMON_CACHE", &cache)
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let line = one_error_line(&out);
    assert!(line.contains("cannot write to standard output"), "{line}");
}

/// `--cache-dir` at a directory that is not lsmpmon's cache (a source tree,
/// `/`): neither listed (walking all of it) nor cleaned (its `kernels/`
/// would go), one line and exit 2.
#[test]
fn a_directory_that_is_not_a_cache_is_neither_listed_nor_cleaned() {
    let dir = filled_cache("not-a-cache", 10);
    fs::create_dir_all(dir.join("src")).unwrap();
    fs::write(dir.join("src/main.rs"), b"fn main() {}").unwrap();
    let out = vm_cache(&dir, None, &["--clean", "--all"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        one_error_line(&out).contains("holds src"),
        "{}",
        one_error_line(&out)
    );
    assert!(dir.join("kernels/6.1-cloud").is_dir() && dir.join("src/main.rs").is_file());
    let out = vm_cache(Path::new("/"), None, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    fs::remove_dir_all(&dir).unwrap();
}
