//! `scripts/setup.sh`: the main job installs what the main job uses, and
//! `--tests` adds what only the tests use. Reads the lists (`--list`), never
//! installs anything.
use std::{collections::BTreeSet, path::Path, process::Command};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The packages `scripts/setup.sh --list ARGS` names.
fn listed(args: &[&str]) -> BTreeSet<String> {
    let out = Command::new(Path::new(ROOT).join("scripts/setup.sh"))
        .arg("--list")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let names: BTreeSet<String> = text.lines().map(str::to_string).collect();
    for n in &names {
        assert!(
            !n.is_empty()
                && n.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "+-.".contains(c)),
            "not a package name: {n:?}"
        );
    }
    names
}

/// What only the tests use: never in the main job's list, always in --tests'.
const TESTS_ONLY: &[&str] = &[
    "chromium",
    "python3-jsonschema",
    "linux-source-6.1",
    "dwarves",
    "ccache",
    "slurm-wlm",
    "munge",
    "prometheus",
    "curl",
    "lintian",
    "mmdebstrap",
];

/// The host packages every configuration Debian's kernels can run names
/// (all but Smack, which needs lsmpmon's own kernel), with the
/// configuration's name.
fn configuration_packages() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(Path::new(ROOT).join("configs")).unwrap() {
        let spec = e.unwrap().path().join("spec.toml");
        let Ok(text) = std::fs::read_to_string(&spec) else {
            continue;
        };
        let v: toml::Value = toml::from_str(&text).unwrap();
        let needs = |opt: &str| {
            v.get("requires")
                .and_then(|r| r.as_array())
                .is_some_and(|r| r.iter().any(|o| o.as_str() == Some(opt)))
        };
        if needs("CONFIG_SECURITY_SMACK") {
            continue;
        }
        let name = spec.parent().unwrap().file_name().unwrap();
        for p in v
            .get("host_packages")
            .and_then(|p| p.as_array())
            .into_iter()
            .flatten()
        {
            out.push((
                name.to_string_lossy().into_owned(),
                p.as_str().unwrap().to_string(),
            ));
        }
    }
    assert!(out.len() >= 10, "{out:?}");
    out
}

#[test]
fn the_main_job_installs_what_it_uses_and_the_tests_add_theirs() {
    let main = listed(&[]);
    let tests = listed(&["--tests"]);
    for p in TESTS_ONLY {
        assert!(!main.contains(*p), "{p} is the tests', not the main job's");
        assert!(tests.contains(*p), "--tests lacks {p}");
    }
    assert!(
        main.is_subset(&tests),
        "--tests drops {:?}",
        main.difference(&tests)
    );
    // The lab on Debian's kernels: QEMU, the guest's busybox, every
    // configuration's own tools (ima-tpm's swtpm included).
    for p in ["qemu-system-x86", "busybox-static", "kmod", "xz-utils"] {
        assert!(main.contains(p), "the main job lacks {p}");
    }
    for (config, p) in configuration_packages() {
        assert!(main.contains(&p), "the main job lacks {p} ({config})");
    }
}

#[test]
fn an_unknown_option_is_refused_before_anything_is_installed() {
    let out = Command::new(Path::new(ROOT).join("scripts/setup.sh"))
        .arg("--test")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("unknown option '--test'"), "{err}");
}
