//! The tracer's BPF side (`src/bpf/lsmpmon.bpf.c`) into its libbpf skeleton,
//! the Rust view of `src/bpf/intf.h` (the one file its C and Rust share), and
//! the x86_64 syscall names.
use std::path::Path;

fn main() {
    lsmpmon_build::skeleton("src/bpf", "lsmpmon");
    lsmpmon_build::header("src/bpf", "intf", "lsmpmon");
    syscall_names(&lsmpmon_build::out_dir());
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
