//! What lsmpmon's build scripts share: compiling a BPF side into its libbpf
//! skeleton, and the Rust view of the one header a side's C and Rust share.
use std::{env, path::PathBuf};

use libbpf_cargo::SkeletonBuilder;

/// Cargo's OUT_DIR for the build script that calls this.
pub fn out_dir() -> PathBuf {
    PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR is set by cargo"))
}

/// `DIR/NAME.bpf.c` -> `OUT_DIR/NAME.skel.rs`, CO-RE with clang.
pub fn skeleton(dir: &str, name: &str) {
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
        .build_and_generate(out_dir().join(format!("{name}.skel.rs")))
        .unwrap_or_else(|e| {
            panic!("compiling {dir}/{name}.bpf.c (needs clang and libbpf headers): {e}")
        });
    println!("cargo:rerun-if-changed={dir}");
}

/// `DIR/HEADER.h` -> `OUT_DIR/HEADER.rs` with the types `PREFIX_*` and the
/// constants `PREFIX_*` (upper case) it defines.
pub fn header(dir: &str, header: &str, prefix: &str) {
    bindgen::Builder::default()
        .header(format!("{dir}/{header}.h"))
        .clang_arg("-I/usr/include/x86_64-linux-gnu")
        .allowlist_type(format!("{prefix}_.*"))
        .allowlist_var(format!("{}_.*", prefix.to_uppercase()))
        .constified_enum_module(format!("{prefix}_.*"))
        .derive_default(true)
        .generate()
        .unwrap_or_else(|e| panic!("bindgen on {header}.h (needs libclang): {e}"))
        .write_to_file(out_dir().join(format!("{header}.rs")))
        .unwrap_or_else(|e| panic!("writing {header}.rs: {e}"));
    println!("cargo:rerun-if-changed={dir}/{header}.h");
}

/// `lsmpmon-fork` (crates/bench/src/forker.c, given as `source`), the program
/// the fork ops create processes from: static and not position-independent,
/// as lmbench's lat_proc, compiled by the C compiler Rust links with. Into
/// OUT_DIR (vm carries it into its guests, bench's tests run it) and beside
/// the binary, where bench finds it.
pub fn fork_helper(source: &str) {
    let out = out_dir();
    let exe = out.join("lsmpmon-fork");
    let cc = env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = std::process::Command::new(&cc)
        .args([
            "-O2", "-static", "-no-pie", "-s", "-Wall", "-Wextra", "-Werror",
        ])
        .arg("-o")
        .arg(&exe)
        .arg(source)
        .status()
        .unwrap_or_else(|e| panic!("running {cc} for {source} (needs a C compiler): {e}"));
    assert!(status.success(), "compiling {source} with {cc} failed");
    // OUT_DIR is <target dir>/<profile>/build/<crate>-<hash>/out.
    let profile_dir = out
        .ancestors()
        .nth(3)
        .expect("OUT_DIR is 3 levels below the profile");
    std::fs::copy(&exe, profile_dir.join("lsmpmon-fork"))
        .unwrap_or_else(|e| panic!("copying lsmpmon-fork to {}: {e}", profile_dir.display()));
    println!("cargo:rerun-if-changed={source}");
    println!("cargo:rerun-if-env-changed=CC");
}
