#!/usr/bin/env bash
# The main job: install what is missing, build, then trace every LSM hook of a
# real Debian 6.1 kernel while a workload runs, inside a QEMU guest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
LSMPMON=target/x86_64-unknown-linux-gnu/release/lsmpmon
exec "$LSMPMON" vm run --kernel "${KERNEL:-6.1}" -- \
  lsmpmon trace --per-lsm --top 20 -- sh -c 'for i in $(seq 200); do touch /tmp/f$i; cat /tmp/f$i; done; rm /tmp/f*'
