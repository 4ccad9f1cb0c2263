#!/usr/bin/env bash
# Benchmark (not a test): how close sampled timing (--sample N, serve's
# default) keeps each hook's p50, p99 and mean to timing every call, on a
# steady workload in a guest (virtual ns): one boot per kernel, a trace of
# the same stat() and open()+close() loops for each N (fentry/fexit, the
# method serve's sampled default takes), hooks with at least MIN_CALLS calls.
#   scripts/bench-sample.sh [KERNEL...]      default: 6.1 7.3
#   SAMPLES="1 8 64 256" N=60000 scripts/bench-sample.sh 6.1
# Writes results/sample-<kernel>.json and prints a table. The per-call cost
# of each N is bench-probe.sh's (MODES="count sample64 default").
. "$(dirname "$0")/bench-common.sh"
N=${N:-60000}
SAMPLES=${SAMPLES:-1 8 64 256}
MIN_CALLS=${MIN_CALLS:-1000}

GUEST='
set -e
W=/usr/bin/workload; : > /tmp/x; N='"$N"'
sleep 5
for s in '"$SAMPLES"'; do
  lsmpmon trace --json --detach wait --method fentry-fexit --sample $s --comm workload -o /tmp/r.json -- \
    sh -c "$W stat $N /tmp/x; $W open_close $((N / 3)) /tmp/x" > /dev/null 2>&1
  echo "sample $s $(tr -d "\n" < /tmp/r.json)"
done
'

for k in ${@:-6.1 7.3}; do
  echo "bench-sample: kernel $k ..." >&2
  out=${OUT:-results/sample-$k}
  "$LSMPMON" vm run --timeout 3600 --kernel "$k" --copy "$WORKLOAD" -- sh -c "$GUEST" > "$out.raw"
  python3 scripts/sample_report.py "$k" "$out.raw" "$(git rev-parse --short HEAD)" "$MIN_CALLS" > "$out.json"
  rm -f "$out.raw"
  python3 scripts/sample_report.py --table "$out.json"
done
