//! The reference MACs' BPF side into its libbpf skeleton, and the Rust view
//! of `src/bpf/mac_intf.h`, the one file its C and Rust share.
fn main() {
    lsmpmon_build::skeleton("src/bpf", "mac");
    lsmpmon_build::header("src/bpf", "mac_intf", "mac");
}
