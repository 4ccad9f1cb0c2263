# Sourced by the bench-*.sh scripts: set up, build, and name the binaries.
# LSMPMON=path: that binary, frozen (a run beside ongoing work): no setup or build.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${LSMPMON:-}" ] || scripts/setup.sh
LSMPMON=${LSMPMON:-target/x86_64-unknown-linux-gnu/release/lsmpmon}
WORKLOAD=target/workload
mkdir -p target
cc -static -O2 -Wall -o "$WORKLOAD" tests/helpers/workload.c
mkdir -p bench
