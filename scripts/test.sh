#!/usr/bin/env bash
# The test suite: unit tests, host tests and guest tests (real kernels in QEMU).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
cargo fmt --all -- --check
cargo clippy --release --locked --all-targets -- -D warnings
# Guest tests boot QEMU; two at a time on a 2-core machine.
cargo test --release --locked -- --test-threads=2
