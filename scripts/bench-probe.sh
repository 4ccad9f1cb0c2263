#!/usr/bin/env bash
# Benchmark (not a test): what lsmpmon's probe adds per traced call, and how
# long attaching and detaching every hook takes, in a guest (virtual ns).
#   scripts/bench-probe.sh [KERNEL...]      default: 6.1 6.12
# Writes bench/probe-<kernel>.json and prints a table.
. "$(dirname "$0")/bench-common.sh"
N=${N:-20000}

# In the guest: baseline loops, then each loop under one hook and under all
# hooks, default options and --lean. Each trace is its own JSON line. Traces
# release their probes before the next starts (--detach wait): background
# releases would overlap the next measurement. The guest first settles (6.12
# keeps a CPU busy for about 2 s of virtual time after boot).
GUEST='
set -e
W=/usr/bin/workload; : > /tmp/x; N='"$N"'
sleep 5
echo "base stat $($W stat $N /tmp/x)"
echo "base open_close $($W open_close $N /tmp/x)"
for mode in default lean; do
  [ $mode = lean ] && L=--lean || L=
  for op in stat open_close; do
    [ $op = stat ] && H=inode_getattr || H=file_open
    for scope in one all; do
      [ $scope = one ] && HOOKS="--hooks $H" || HOOKS=
      lsmpmon trace --json --detach wait $L $HOOKS -o /tmp/r.json -- sh -c "$W $op $N /tmp/x > /tmp/w.json" 2>/dev/null
      echo "run $mode $op $scope $(cat /tmp/w.json) $(tr -d "\n" < /tmp/r.json)"
    done
  done
done
lsmpmon trace --json -o /tmp/r.json -- true 2>/dev/null
echo "detachbg $(tr -d "\n" < /tmp/r.json)"
'

for kernel in "${@:-6.1 6.12}"; do
  for k in $kernel; do
    echo "bench-probe: kernel $k ..." >&2
    "$LSMPMON" vm run --kernel "$k" --copy "$WORKLOAD" -- sh -c "$GUEST" > "bench/probe-$k.raw"
    python3 scripts/probe_report.py "$k" "bench/probe-$k.raw" "$(git rev-parse --short HEAD)" > "bench/probe-$k.json"
    rm -f "bench/probe-$k.raw"
  done
done
python3 scripts/probe_report.py --table bench/probe-*.json
