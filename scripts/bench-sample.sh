#!/usr/bin/env bash
# Benchmark (not a test): how close sampled timing (--sample N, serve's
# default) keeps each hook's p50, p99 and mean to timing every call, on a
# steady workload in a guest (virtual ns): one boot per kernel, a trace of
# the same stat() and open()+close() loops for each N (fentry/fexit, the
# method serve's sampled default takes), hooks with at least MIN_CALLS calls.
#   scripts/bench-sample.sh [KERNEL...]      default: 6.1 7.3
#   SAMPLES="1 8 64 256" N=60000 scripts/bench-sample.sh 6.1
#   WINDOWS=1/4 WN=2000000 SAMPLES= scripts/bench-sample.sh 6.1 7.3
#                                          --timing-windows 1/4 against timing every call on
#                                          loops of WN stat() and WN/3 open()+close() (several
#                                          windows), each hook's time estimate too
#   DRAWS=5 [FIRST_DRAW=0] ...             each in DRAWS boots, draw d with the guest's clock at
#                                          2000-01-01 plus d s (another slab order and hash salt;
#                                          what a change of layout alone moves: BENCHMARKS.md,
#                                          'What a layout draw moves')
# Writes results/sample-<kernel>.json (-windows.json with WINDOWS) and prints a table. The
# per-call cost of each N is bench-probe.sh's (MODES="count sample64 windows5/120 default").
. "$(dirname "$0")/bench-common.sh"
N=${N:-60000}
SAMPLES=${SAMPLES-1 8 64 256}
WINDOWS=${WINDOWS:-}
WN=${WN:-2000000}
MIN_CALLS=${MIN_CALLS:-1000}
DRAWS=${DRAWS:-1}
FIRST_DRAW=${FIRST_DRAW:-0}

GUEST='
set -e
W=/usr/bin/workload; : > /tmp/x; N='"$N"'
sleep 5
for s in '"$SAMPLES"'; do
  lsmpmon trace --json --detach wait --method fentry-fexit --sample $s --comm workload -o /tmp/r.json -- \
    sh -c "$W stat $N /tmp/x; $W open_close $((N / 3)) /tmp/x" > /dev/null 2>&1
  echo "sample $s $(tr -d "\n" < /tmp/r.json)"
done
if [ -n "'"$WINDOWS"'" ]; then
  for t in full windows; do
    [ $t = full ] && T="--method fentry-fexit --sample 1" || T="--timing-windows '"$WINDOWS"'"
    lsmpmon trace --json --detach wait $T --comm workload -o /tmp/r.json -- \
      sh -c "$W stat '"$WN"' /tmp/x; $W open_close $(('"$WN"' / 3)) /tmp/x" > /dev/null 2>&1
    echo "$t 0 $(tr -d "\n" < /tmp/r.json)"
  done
fi
'

for k in ${@:-6.1 7.3}; do
  echo "bench-sample: kernel $k ..." >&2
  out=${OUT:-results/sample-$k${WINDOWS:+-windows}}
  raws=()
  for d in $(seq "$FIRST_DRAW" $((FIRST_DRAW + DRAWS - 1))); do
    [ "$DRAWS" = 1 ] || echo "bench-sample: kernel $k, draw $d ..." >&2
    rtc="clock=vm,base=2000-01-01T00:$(printf %02d $((d / 60))):$(printf %02d $((d % 60)))"
    "$LSMPMON" vm run --timeout 3600 --rtc "$rtc" --kernel "$k" --copy "$WORKLOAD" \
      -- sh -c "$GUEST" > "$out.$d.raw"
    raws+=("$out.$d.raw")
  done
  python3 scripts/sample_report.py "$k" "$(git rev-parse --short HEAD)" "$MIN_CALLS" "${raws[@]}" > "$out.json"
  rm -f "${raws[@]}"
  python3 scripts/sample_report.py --table "$out.json"
done
