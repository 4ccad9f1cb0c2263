#!/usr/bin/env bash
# The main job: install what is missing, build, then run the lab's default
# matrix: a real Debian 6.1 kernel in QEMU with each secure OS and an enforcing
# policy (proved by a denial, a measurement or the LSM list), the paper's
# operations untraced and under `trace --per-lsm`; prints the Table 3 and
# Table 4 forms, writes them with every cell's JSON under lab-results/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
LSMPMON=target/x86_64-unknown-linux-gnu/release/lsmpmon
exec "$LSMPMON" lab --kernels "${KERNELS:-6.1}" --results "${RESULTS:-lab-results}" "$@"
