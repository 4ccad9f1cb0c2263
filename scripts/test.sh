#!/usr/bin/env bash
# The test suite: unit tests, host tests and guest tests (real kernels in QEMU).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
# rustfmt and clippy come with rustup's toolchain (Debian's rustc-web has neither).
if cargo fmt --version >/dev/null 2>&1 && cargo clippy --version >/dev/null 2>&1; then
  cargo fmt --all -- --check
  cargo clippy --release --locked --all-targets -- -D warnings
elif [ "${CI:-}" = true ]; then
  echo "test: error: CI needs rustfmt and clippy (rustup's toolchain)" >&2
  exit 2
else
  echo "test: rustfmt/clippy not installed (Debian's rustc-web): style checks skipped" >&2
fi
# Guest tests boot QEMU; two at a time on a 2-core machine.
cargo test --release --locked -- --test-threads=2
