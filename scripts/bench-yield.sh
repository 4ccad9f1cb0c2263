#!/usr/bin/env bash
# Benchmark (not a test): the pseudo multi-process paper's Table 3 — two
# processes vs two threads of one address space switching with sched_yield,
# 100 000 and 1 000 000 rounds.
#   scripts/bench-yield.sh host          # real time, pinned to CPU ${CPU:-0}, ${SAMPLES:-11} samples
#   scripts/bench-yield.sh 6.1 [CONFIGS] # virtual time, one lab cell per configuration, traced
# Writes results/yield-host-<rounds>.json or results/lab-yield-<kernel>/ and prints the report.
. "$(dirname "$0")/bench-common.sh"
WHERE=${1:-host}
if [ "$WHERE" = host ]; then
  files=()
  for rounds in 100000 1000000; do
    out=results/yield-host-$rounds.json
    "$LSMPMON" bench --ops yield --iterations "$rounds" --samples "${SAMPLES:-11}" \
      --cpu "${CPU:-0}" --json > "$out"
    files+=("$out")
  done
  "$LSMPMON" report "${files[@]}"
else
  dir=results/lab-yield-$WHERE
  "$LSMPMON" lab run --kernels "$WHERE" --configs "${2:-none,selinux-mini,apparmor,tomoyo}" \
    --ops yield --iterations 100000 --samples "${SAMPLES:-3}" --trace --jobs 1 --results "$dir"
  "$LSMPMON" report "$dir"
fi
