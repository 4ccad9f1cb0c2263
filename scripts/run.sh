#!/usr/bin/env bash
# The main job: install what is missing, build, then run the lab's default
# matrix: a real Debian 6.1 kernel in QEMU with each secure OS and an enforcing
# policy (proved by a denial, a measurement or the LSM list), the paper's
# operations untraced and under `trace --per-lsm`; prints the Table 3 and
# Table 4 forms, writes them with every cell's JSON under lab-results/, and
# draws them in lab-results/report.html (lsmpmon report).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
LSMPMON=target/x86_64-unknown-linux-gnu/release/lsmpmon
RESULTS=${RESULTS:-lab-results}
status=0
"$LSMPMON" lab --kernels "${KERNELS:-6.1}" --results "$RESULTS" "$@" || status=$?
# Whatever cells finished (a failed cell is marked, not drawn as a figure).
if [ -d "$RESULTS/cells" ] && "$LSMPMON" report "$RESULTS" --skip-invalid --format html \
    -o "$RESULTS/report.html" 2>/dev/null; then
  echo "run: the tables and charts: $RESULTS/report.html" >&2
fi
exit "$status"
