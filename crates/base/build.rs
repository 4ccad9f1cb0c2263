//! The git commit a build from a checkout is made from.
use std::{env, path::Path, path::PathBuf, process::Command};

fn main() {
    git_commit();
}
/// `LSMPMON_GIT_COMMIT`: the commit checked out when lsmpmon is built from a
/// git checkout of its own (empty otherwise, e.g. from a source tarball);
/// `LSMPMON_VERSION_LONG`: Cargo.toml's version, with that commit.
fn git_commit() {
    let crate_dir = env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR is set by cargo");
    // This crate is crates/base of lsmpmon's workspace.
    let manifest = Path::new(&crate_dir).join("../..");
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(&manifest)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    // A source tree inside someone else's repository is no checkout of lsmpmon.
    let top = git(&["rev-parse", "--show-toplevel"]).map(PathBuf::from);
    let ours = top.is_some_and(|t| t.canonicalize().ok() == manifest.canonicalize().ok());
    let commit = ours
        .then(|| git(&["rev-parse", "--verify", "HEAD"]))
        .flatten()
        .unwrap_or_default();
    let version = env::var("CARGO_PKG_VERSION").expect("CARGO_PKG_VERSION is set by cargo");
    let long = match commit.get(..12) {
        Some(short) => format!("{version} (commit {short})"),
        None => version,
    };
    println!("cargo:rustc-env=LSMPMON_GIT_COMMIT={commit}");
    println!("cargo:rustc-env=LSMPMON_VERSION_LONG={long}");
    if !ours {
        return;
    }
    // Moving HEAD (a commit, a checkout) changes HEAD or the branch it names.
    let branch = git(&["symbolic-ref", "-q", "HEAD"]);
    for name in ["HEAD", "packed-refs"].into_iter().chain(branch.as_deref()) {
        if let Some(path) = git(&["rev-parse", "--git-path", name]) {
            let path = manifest.join(path);
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
}
