#!/usr/bin/env bash
# Installs what lsmpmon needs from the machine's own Debian release (never
# another suite), checks the Rust toolchain and builds the static binary.
#   scripts/setup.sh          what the main job (scripts/run.sh) uses: the build, and `lsmpmon lab`
#                             on Debian's kernels with every configuration they can run
#   scripts/setup.sh --tests  adds what only the tests use (scripts/test.sh calls it so)
#   scripts/setup.sh --list [--tests]  prints those Debian packages, one a line; installs nothing
set -euo pipefail
cd "$(dirname "$0")/.."

tests=false
list=false
for arg in "$@"; do
  case "$arg" in
    --tests) tests=true ;;
    --list) list=true ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup: error: unknown option '$arg' (use --tests, --list, or nothing for the main job's packages)" >&2; exit 2 ;;
  esac
done

PACKAGES=(# the build: Rust's linker and C library (static), the BPF side (clang, libbpf, CO-RE),
          # libbpf-sys's own build of libbpf (make, pkg-config, libelf, zlib, zstd)
          gcc libc6-dev clang llvm libbpf-dev libelf-dev zlib1g-dev libzstd-dev linux-libc-dev
          pkg-config make bpftool
          # the lab: Debian's kernels in QEMU with a busybox guest, fetched from signed archives;
          # a kernel package's modules are indexed (depmod) and unpacked (xz) for the guest
          qemu-system-x86 busybox-static debian-archive-keyring ca-certificates kmod xz-utils
          # every configuration Debian's kernels run, with its real tools (configs/*/spec.toml
          # host_packages): SELinux (mini, avc, avtab, refpolicy), AppArmor, TOMOYO, IMA with a
          # TPM (swtpm); the BPF LSM's compiler and bpftool are the build's
          checkpolicy policycoreutils coreutils semodule-utils selinux-policy-default
          selinux-policy-dev apparmor tomoyo-tools swtpm swtpm-tools)
TEST_PACKAGES=(# results are checked against the JSON schemas
          python3-jsonschema
          # report's HTML page is checked in a real browser
          chromium
          # lsmpmon's own kernels are built from Debian's source (7.3-selinux-avtab patched); the
          # smack configuration (on its own kernel) labels files; the build op compiles the
          # kernel's host programs from the same source
          linux-source-6.1 dwarves ccache flex bison bc binutils attr patch
          # tests/slurm.rs: a one-node Slurm cluster for `lab submit --slurm`
          slurm-wlm munge iproute2
          # tests/serve.rs and serve's unit tests: a real Prometheus server and promtool, curl
          # for its HTTP API
          prometheus curl
          # scripts/package.sh checks the package with lintian; tests/package.rs
          # installs it into a Debian 12 root made by mmdebstrap
          lintian mmdebstrap)
if $tests; then PACKAGES+=("${TEST_PACKAGES[@]}"); fi
if $list; then printf '%s\n' "${PACKAGES[@]}"; exit 0; fi

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
