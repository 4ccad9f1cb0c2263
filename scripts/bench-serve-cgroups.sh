#!/usr/bin/env bash
# Benchmark (not a test): what `lsmpmon serve --by cgroup` costs, in a guest
# (virtual ns under -icount):
#  - a scrape with 10, 100 and 1 000 cgroups that each made hook calls
#    (one short workload in each; --max-cgroups 1000 keeps them all): series,
#    bytes, the client's time (tests/helpers/scrape.c, 20 scrapes) and
#    serve's own (lsmpmon_scrape_duration_seconds);
#  - the per-call cost of a traced stat() loop under serve with and without
#    --by cgroup (the method of BENCHMARKS.md, 'Cost per traced call': added ns
#    per op x ops / calls the probes counted; the fastest of REPEAT loops).
#   scripts/bench-serve-cgroups.sh [KERNEL...]      default: 6.1 7.3
# Writes results/serve-cgroups-<kernel>.json and prints a table.
. "$(dirname "$0")/bench-common.sh"
N=${N:-300000}
REPEAT=${REPEAT:-3}
SCRAPE=target/scrape
cc -static -O2 -Wall -o "$SCRAPE" tests/helpers/scrape.c

GUEST='
set -e
W=/usr/bin/workload; : > /tmp/x; N='"$N"'; R='"$REPEAT"'
M=http://127.0.0.1:9464/metrics
calls() { wget -q -O - $M | awk "/^lsmpmon_hook_calls_total/ {s+=\$2} END {printf \"%d\", s}"; }
# Serve answers while it attaches: wait for every hook (and their series).
up() { until wget -q -O - $M 2>/dev/null | grep -q "^lsmpmon_hooks_attached [1-9]"; do sleep 1; done; }
sleep 5
i=0; while [ $i -lt $R ]; do echo "base $($W stat $N /tmp/x)"; i=$((i+1)); done
for by in none cgroup; do
  opt=; [ $by = cgroup ] && opt="--by cgroup"
  lsmpmon serve $opt 2> /tmp/serve.err & pid=$!
  up
  i=0; while [ $i -lt $R ]; do
    c0=$(calls); w=$($W stat $N /tmp/x); c1=$(calls)
    echo "loop $by $c0 $c1 $w"; i=$((i+1))
  done
  kill -INT $pid; wait $pid
done
mkdir -p /sys/fs/cgroup/bench
made=0
lsmpmon serve --by cgroup --max-cgroups 1000 2> /tmp/serve.err & pid=$!
up
for n in 10 100 1000; do
  while [ $made -lt $n ]; do
    d=/sys/fs/cgroup/bench/c$made; mkdir $d
    sh -c "echo \$\$ > $d/cgroup.procs; exec $W stat 10 /tmp/x" > /dev/null
    made=$((made+1))
  done
  wget -q -O /tmp/m $M
  echo "cgroups $n $(grep -c "^lsmpmon_cgroup_hook_calls_total{cgroup=\"/bench/" /tmp/m) $(grep -vc "^#" /tmp/m) $(awk "/^lsmpmon_scrape_duration_seconds/ {print \$2}" /tmp/m) $(scrape 9464 20)"
done
echo "method $(grep -o "method=\"[^\"]*\"" /tmp/m | head -1)"
kill -INT $pid; wait $pid
'

commit=$(git rev-parse --short HEAD)
for k in ${@:-6.1 7.3}; do
  echo "bench-serve-cgroups: kernel $k ..." >&2
  out=results/serve-cgroups-$k
  "$LSMPMON" vm run --timeout 3600 --kernel "$k" --copy "$WORKLOAD" --copy "$SCRAPE" \
    -- sh -c "$GUEST" > "$out.raw"
  python3 scripts/serve_cgroups_report.py "$k" "$out.raw" "$commit" > "$out.json"
  rm -f "$out.raw"
done
python3 scripts/serve_cgroups_report.py --table results/serve-cgroups-*.json
