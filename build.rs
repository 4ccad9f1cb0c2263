//! Compiles the BPF sides (CO-RE, clang), generates their libbpf skeletons
//! and the Rust view of each side's header, the one file its C and Rust
//! share: the tracer's `intf.h` and the reference MACs' `mac_intf.h`; the
//! fork ops' small C helper; and the git commit a build from a checkout is
//! made from.
use std::{env, path::Path, path::PathBuf, process::Command};

use libbpf_cargo::SkeletonBuilder;

/// One BPF side: `DIR/NAME.bpf.c` -> `NAME.skel.rs`, and `DIR/HEADER.h`
/// -> `HEADER.rs` with the types `PREFIX_*` and constants `PREFIX_*` (upper
/// case) it defines.
struct Side {
    dir: &'static str,
    name: &'static str,
    header: &'static str,
    prefix: &'static str,
}

const SIDES: &[Side] = &[
    Side {
        dir: "src/trace/bpf",
        name: "lsmpmon",
        header: "intf",
        prefix: "lsmpmon",
    },
    Side {
        dir: "src/mac/bpf",
        name: "mac",
        header: "mac_intf",
        prefix: "mac",
    },
];

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR is set by cargo"));
    for side in SIDES {
        bpf(&out, side);
    }
    syscall_names(&out);
    fork_helper(&out);
    git_commit();
}

/// `lsmpmon-fork` (src/bench/forker.c), the program the fork ops create
/// processes from: static and not position-independent, as lmbench's
/// lat_proc, compiled by the C compiler Rust links with. Into OUT_DIR (lsmpmon
/// carries it into its guests) and beside the binary, where bench finds it.
fn fork_helper(out: &Path) {
    const SOURCE: &str = "src/bench/forker.c";
    let exe = out.join("lsmpmon-fork");
    let cc = env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args([
            "-O2", "-static", "-no-pie", "-s", "-Wall", "-Wextra", "-Werror",
        ])
        .arg("-o")
        .arg(&exe)
        .arg(SOURCE)
        .status()
        .unwrap_or_else(|e| panic!("running {cc} for {SOURCE} (needs a C compiler): {e}"));
    assert!(status.success(), "compiling {SOURCE} with {cc} failed");
    // OUT_DIR is <target dir>/<profile>/build/lsmpmon-<hash>/out.
    let profile_dir = out
        .ancestors()
        .nth(3)
        .expect("OUT_DIR is 3 levels below the profile");
    std::fs::copy(&exe, profile_dir.join("lsmpmon-fork"))
        .unwrap_or_else(|e| panic!("copying lsmpmon-fork to {}: {e}", profile_dir.display()));
    println!("cargo:rerun-if-changed={SOURCE}");
    println!("cargo:rerun-if-env-changed=CC");
}

/// `LSMPMON_GIT_COMMIT`: the commit checked out when lsmpmon is built from a
/// git checkout of its own (empty otherwise, e.g. from a source tarball);
/// `LSMPMON_VERSION_LONG`: Cargo.toml's version, with that commit.
fn git_commit() {
    let manifest = env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR is set by cargo");
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
    let ours =
        top.is_some_and(|t| t.canonicalize().ok() == Path::new(&manifest).canonicalize().ok());
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
            let path = Path::new(&manifest).join(path);
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
}

fn bpf(out: &Path, side: &Side) {
    let Side {
        dir,
        name,
        header,
        prefix,
    } = side;
    SkeletonBuilder::new()
        .source(format!("{dir}/{name}.bpf.c"))
        .clang_args([
            "-I/usr/include/x86_64-linux-gnu",
            "-I",
            dir,
            "-D__TARGET_ARCH_x86",
            // 32-bit ALU and jumps: no zero-extending shift pairs around u32s.
            "-mcpu=v3",
        ])
        .build_and_generate(out.join(format!("{name}.skel.rs")))
        .unwrap_or_else(|e| {
            panic!("compiling {dir}/{name}.bpf.c (needs clang and libbpf headers): {e}")
        });
    bindgen::Builder::default()
        .header(format!("{dir}/{header}.h"))
        .clang_arg("-I/usr/include/x86_64-linux-gnu")
        .allowlist_type(format!("{prefix}_.*"))
        .allowlist_var(format!("{}_.*", prefix.to_uppercase()))
        .constified_enum_module(format!("{prefix}_.*"))
        .derive_default(true)
        .generate()
        .unwrap_or_else(|e| panic!("bindgen on {header}.h (needs libclang): {e}"))
        .write_to_file(out.join(format!("{header}.rs")))
        .unwrap_or_else(|e| panic!("writing {header}.rs: {e}"));
    println!("cargo:rerun-if-changed={dir}");
}

/// x86_64 syscall numbers -> names, from the kernel's uapi header (linux-libc-dev).
fn syscall_names(out: &Path) {
    const HEADER: &str = "/usr/include/x86_64-linux-gnu/asm/unistd_64.h";
    let text = std::fs::read_to_string(HEADER).expect("reading asm/unistd_64.h (linux-libc-dev)");
    let mut rows = String::from("pub const SYSCALL_NAMES: &[(u32, &str)] = &[\n");
    for line in text.lines() {
        let mut parts = line.split_whitespace();
        if let (Some("#define"), Some(name), Some(nr)) = (parts.next(), parts.next(), parts.next())
        {
            if let (Some(name), Ok(nr)) = (name.strip_prefix("__NR_"), nr.parse::<u32>()) {
                rows += &format!("    ({nr}, \"{name}\"),\n");
            }
        }
    }
    rows += "];\n";
    std::fs::write(out.join("syscall_names.rs"), rows).expect("writing syscall_names.rs");
    println!("cargo:rerun-if-changed={HEADER}");
}
