#!/usr/bin/env bash
# The LSM framework alone (issue 36 items 1, 4 and 6): for 6.1 and 7.3,
# `none` on lsmpmon's build without CONFIG_SECURITY (<release>-nolsm), on
# its build of the same source with the framework (6.1-smack, 7.3-selinux,
# booted with lsm=capability) and on Debian's build; on one CPU, and for
# 6.1 on four. 7.3-selinux-avc14 differs from 7.3-selinux only in an
# option of the inactive SELinux: what a rebuild alone moves. Then the framework, framework-releases and image-growth
# pages of OUT (Markdown and HTML), made by `lsmpmon report`.
#
#   scripts/framework.sh [OUT]     (default OUT: results/framework; run as root)
#
# Environment: FRAMEWORK_DRAWS (default 3), FRAMEWORK_SAMPLES (default 5),
# FRAMEWORK_OPS (one CPU, default paper,bw), FRAMEWORK_OPS_4CPU (default
# the LMbench set but its yield group, whose ops fail their own check on
# four CPUs: syscall,files,ipc,proc,bw).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-results/framework}
draws=${FRAMEWORK_DRAWS:-3}
samples=${FRAMEWORK_SAMPLES:-5}
ops=${FRAMEWORK_OPS:-paper,bw}
ops4=${FRAMEWORK_OPS_4CPU:-syscall,files,ipc,proc,bw}

[ "$(id -u)" = 0 ] || { echo "framework: run as root (the lab boots guests)" >&2; exit 2; }
[ ! -e "$out/cells" ] || { echo "framework: $out already holds cells: move it away first" >&2; exit 2; }
cargo build --release --quiet
bin=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
bin=$(find "$bin" -path '*/release/lsmpmon' -type f -printf '%T@ %p\n' | sort -n | tail -1 | cut -d' ' -f2)
# The run uses this copy: rebuilding the tree meanwhile changes nothing.
work=$(mktemp -d /tmp/lsmpmon-framework.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp "$bin" "$work/lsmpmon"

"$work/lsmpmon" lab run --kernels 6.1-nolsm,6.1-smack,6.1,7.3-nolsm,7.3-selinux,7.3-selinux-avc14,7.3 \
  --configs none --cpus 1 --ops "$ops" --draws "$draws" --samples "$samples" --results "$out"
"$work/lsmpmon" lab run --kernels 6.1-nolsm,6.1-smack,6.1 \
  --configs none --cpus 4 --ops "$ops4" --draws "$draws" --samples "$samples" --results "$out"
# Committed results name no machine path: the lab's own table files go.
rm -f "$out/tables.json" "$out/tables.md"
"$work/lsmpmon" report "$out" --format markdown -o "$out/README.md"
"$work/lsmpmon" report "$out" --format html -o "$out/report.html"
