#!/usr/bin/env bash
# Builds the Debian package target/debian/lsmpmon_<version>_amd64.deb with
# cargo-deb (its metadata: [package.metadata.deb] in Cargo.toml), checks it
# with lintian, and prints its path on standard output.
#
#   scripts/package.sh            # needs scripts/setup.sh --tests's packages (lintian)
#
# The man pages, shell completions and changelog are generated first from the
# clap definitions (examples/package_docs.rs). Dates come from the commit, so
# two builds of one commit give the same files.
# Exit codes: 0 built and lintian-clean, 1 a step failed (its message says which).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"

CARGO_DEB_VERSION=3.8.0
TARGET=x86_64-unknown-linux-gnu
OUT=target/debian

fail() { echo "package: error: $*" >&2; exit 1; }

if [ "$(cargo deb --version 2>/dev/null)" != "cargo-deb $CARGO_DEB_VERSION" ]; then
  echo "package: installing cargo-deb $CARGO_DEB_VERSION (cargo install, once)" >&2
  cargo install --locked --quiet "cargo-deb@$CARGO_DEB_VERSION" >&2 ||
    fail "cargo install cargo-deb@$CARGO_DEB_VERSION failed: see its output above"
fi
command -v lintian >/dev/null || fail "lintian not found: run scripts/setup.sh --tests (or apt-get install lintian)"

# The files' dates: the commit's (or SOURCE_DATE_EPOCH's). Given only to the
# packaging steps: cargo build would rebuild C dependencies for a new value.
if ! epoch_s=$(git log -1 --format=%ct 2>/dev/null); then
  epoch_s=${SOURCE_DATE_EPOCH:-$(date +%s)}
fi

cargo build --release --locked --target "$TARGET" >&2 || fail "cargo build failed: see above"
cargo run --release --locked --quiet --target "$TARGET" --example package_docs -- target/package \
  --man-date "$(date -u -d "@$epoch_s" +%Y-%m-%d)" \
  --changelog-date "$(date -u -R -d "@$epoch_s")" >&2 ||
  fail "generating the man pages and completions failed: see above"

rm -rf "$OUT"
mkdir -p "$OUT"
SOURCE_DATE_EPOCH=$epoch_s cargo deb --no-build --locked --target "$TARGET" --output "$OUT/" >&2 || fail "cargo deb failed: see above"
deb=$(ls "$OUT"/lsmpmon_*.deb)

# Errors fail the build; warnings and informational tags are shown (docs/install.md).
lintian --fail-on error --info "$deb" >&2 || fail "lintian found errors in $deb: see above"
echo "$deb"
