#!/usr/bin/env bash
# The test suite, in two tiers.
#   scripts/test.sh          unit, host and guest tests on Debian's kernels (boots QEMU guests);
#                            about 40 minutes on a 2-core machine from an empty cache
#   scripts/test.sh --full   adds the tests on lsmpmon's own kernels (built from Debian's source
#                            on first use: each 13 minutes or more cold); CI runs this
# A test of the full tier is named own_kernel_*: the quick tier skips exactly those and says so.
set -euo pipefail
cd "$(dirname "$0")/.."

full=false
for arg in "$@"; do
  case "$arg" in
    --full) full=true ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test: error: unknown option '$arg' (use --full, or nothing for the quick tier)" >&2; exit 2 ;;
  esac
done

scripts/setup.sh --tests
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
if $full; then
  cargo test --release --locked -- --test-threads=2
else
  echo "test: quick tier: the own_kernel_* tests are skipped (scripts/test.sh --full runs them)" >&2
  cargo test --release --locked -- --test-threads=2 --skip own_kernel_
fi
