#!/usr/bin/env bash
# Installs what lsmpmon needs from the machine's own Debian release (never
# another suite), checks the Rust toolchain and builds the static binary.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(clang llvm libbpf-dev libelf-dev zlib1g-dev libzstd-dev linux-libc-dev
          pkg-config make bpftool qemu-system-x86 busybox-static
          debian-archive-keyring ca-certificates python3-jsonschema
          # the lab's secure OSes: their real tools go into the guests
          checkpolicy policycoreutils semodule-utils selinux-policy-default selinux-policy-dev
          apparmor tomoyo-tools swtpm swtpm-tools
          # report's HTML page is checked in a real browser
          chromium
          # lsmpmon's own kernels are built from Debian's source (7.3-selinux-avtab patched); the smack config labels files
          linux-source-6.1 dwarves ccache flex bison bc attr patch
          # the build op's C library headers and start files (its tcc comes by apt-get download)
          libc6-dev
          # tests/slurm.rs: a one-node Slurm cluster for `lab submit --slurm`
          slurm-wlm munge
          # tests/serve.rs and serve's unit tests: a real Prometheus server and promtool,
          # curl for its HTTP API; kmod's depmod for the modules lsmpmon keeps from a kernel package
          # (the IMA module ops' module; the network driver of vm run --forward)
          prometheus curl kmod
          # scripts/package.sh checks the package with lintian; tests/package.rs
          # installs it into a Debian 12 root made by mmdebstrap
          lintian mmdebstrap)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
fi

# Rust: rustup's toolchain where present; otherwise Debian 12's own rustc-web
# and cargo-web (1.96, in bookworm's security suite), installed as rustc/cargo.
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
rust_minor() { rustc --version 2>/dev/null | sed -E 's/^rustc 1\.([0-9]+).*/\1/'; }
if ! command -v cargo >/dev/null || [ "$(rust_minor)" -lt 82 ] 2>/dev/null || [ -z "$(rust_minor)" ]; then
  echo "setup: no Rust >= 1.82 (rustup's or Debian's): installing Debian's rustc-web cargo-web" >&2
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends rustc-web cargo-web >&2
fi
if [ "$(rust_minor)" -lt 82 ] 2>/dev/null || [ -z "$(rust_minor)" ]; then
  echo "setup: error: $(rustc --version 2>/dev/null || echo no rustc) is too old or missing (need >= 1.82): install rustc-web/cargo-web or Rust with rustup, then rerun" >&2
  exit 2
fi

cargo build --release --locked >&2
echo "setup: built target/x86_64-unknown-linux-gnu/release/lsmpmon" >&2
