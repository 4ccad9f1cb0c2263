//! Compiles the BPF sides (CO-RE, clang), generates their libbpf skeletons
//! and the Rust view of each side's header, the one file its C and Rust
//! share: the tracer's `intf.h` and the reference MACs' `mac_intf.h`.
use std::{env, path::Path, path::PathBuf};

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
