//! Compiles the BPF side (CO-RE, clang), generates its libbpf skeleton and the
//! Rust view of `intf.h`, the one header the C and Rust sides share.
use std::{env, path::PathBuf};

use libbpf_cargo::SkeletonBuilder;

const BPF_DIR: &str = "src/trace/bpf";
const MAC_DIR: &str = "src/mac/bpf";

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR is set by cargo"));

    SkeletonBuilder::new()
        .source(format!("{BPF_DIR}/lsmpmon.bpf.c"))
        .clang_args([
            "-I/usr/include/x86_64-linux-gnu",
            "-I",
            BPF_DIR,
            "-D__TARGET_ARCH_x86",
            // 32-bit ALU and jumps: no zero-extending shift pairs around u32s.
            "-mcpu=v3",
        ])
        .build_and_generate(out.join("lsmpmon.skel.rs"))
        .expect("compiling src/trace/bpf/lsmpmon.bpf.c (needs clang and libbpf headers)");

    bindgen::Builder::default()
        .header(format!("{BPF_DIR}/intf.h"))
        .clang_arg("-I/usr/include/x86_64-linux-gnu")
        .allowlist_type("lsmpmon_.*")
        .allowlist_var("LSMPMON_.*")
        .constified_enum_module("lsmpmon_.*")
        .derive_default(true)
        .generate()
        .expect("bindgen on intf.h (needs libclang)")
        .write_to_file(out.join("intf.rs"))
        .expect("writing intf.rs");

    mac(&out);
    syscall_names(&out);
    println!("cargo:rerun-if-changed={BPF_DIR}");
}

/// The reference MACs' object and the Rust view of their `mac_intf.h`.
fn mac(out: &std::path::Path) {
    SkeletonBuilder::new()
        .source(format!("{MAC_DIR}/mac.bpf.c"))
        .clang_args([
            "-I/usr/include/x86_64-linux-gnu",
            "-I",
            MAC_DIR,
            "-D__TARGET_ARCH_x86",
            "-mcpu=v3",
        ])
        .build_and_generate(out.join("mac.skel.rs"))
        .expect("compiling src/mac/bpf/mac.bpf.c (needs clang and libbpf headers)");
    bindgen::Builder::default()
        .header(format!("{MAC_DIR}/mac_intf.h"))
        .clang_arg("-I/usr/include/x86_64-linux-gnu")
        .allowlist_type("mac_.*")
        .allowlist_var("MAC_.*")
        .constified_enum_module("mac_.*")
        .derive_default(true)
        .generate()
        .expect("bindgen on mac_intf.h (needs libclang)")
        .write_to_file(out.join("mac_intf.rs"))
        .expect("writing mac_intf.rs");
    println!("cargo:rerun-if-changed={MAC_DIR}");
}

/// x86_64 syscall numbers -> names, from the kernel's uapi header (linux-libc-dev).
fn syscall_names(out: &std::path::Path) {
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
