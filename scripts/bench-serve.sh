#!/usr/bin/env bash
# Benchmark (not a test): what `lsmpmon serve` costs, in a guest (virtual ns
# under -icount): a scrape of every hook (20 in a row, timed by the client,
# tests/helpers/scrape.c, and by serve's own lsmpmon_scrape_duration_seconds),
# the per-call cost of a traced stat() with and without a scrape every
# second (as BENCHMARKS.md, 'Cost per traced call', computes it: added ns per op × ops / calls the
# probes counted), the series count and serve's resident memory.
#   scripts/bench-serve.sh [KERNEL...]      default: 6.1 7.3
# Writes results/serve-<kernel>.json and prints a table.
. "$(dirname "$0")/bench-common.sh"
N=${N:-600000}
REPEAT=${REPEAT:-3}
SCRAPE=target/scrape
cc -static -O2 -Wall -o "$SCRAPE" tests/helpers/scrape.c

# Every loop runs REPEAT times; the report takes the fastest (a kernel
# thread waking up in the middle can only add time). A loop of N stat()s
# lasts about 3 s of virtual time: the scrape loop runs 3 times in it.
GUEST='
set -e
W=/usr/bin/workload; : > /tmp/x; N='"$N"'; R='"$REPEAT"'
M=http://127.0.0.1:9464/metrics
calls() { wget -q -O - $M | awk "/^lsmpmon_hook_calls_total/ {s+=\$2} END {printf \"%d\", s}"; }
sleep 5
i=0; while [ $i -lt $R ]; do echo "base $($W stat $N /tmp/x)"; i=$((i+1)); done
lsmpmon serve 2> /tmp/serve.err & pid=$!
until scrape 9464 1 > /dev/null 2>&1; do sleep 1; done
echo "scrapes $(scrape 9464 20)"
for mode in quiet scraped; do
  [ $mode = scraped ] && { scrape 9464 loop 1000 & loop=$!; }
  i=0; while [ $i -lt $R ]; do
    c0=$(calls); w=$($W stat $N /tmp/x); c1=$(calls)
    echo "$mode $c0 $c1 $w"; i=$((i+1))
  done
  [ $mode = scraped ] && kill $loop
done
echo "rss $(awk "/VmRSS|VmHWM/ {printf \"%s%s \", \$1, \$2}" /proc/$pid/status)"
wget -q -O /tmp/m $M
echo "gauge $(awk "/^lsmpmon_scrape_duration_seconds/ {print \$2}" /tmp/m)"
echo "series $(grep -vc "^#" /tmp/m)"
echo "hooks $(awk "/^lsmpmon_hooks_attached/ {print \$2}" /tmp/m)"
echo "method $(grep -o "method=\"[^\"]*\"" /tmp/m | head -1)"
kill -INT $pid; wait $pid
'

# The commit of the binary built above (not of whatever HEAD is when a run ends).
commit=$(git rev-parse --short HEAD)
for k in ${@:-6.1 7.3}; do
  echo "bench-serve: kernel $k ..." >&2
  out=results/serve-$k
  "$LSMPMON" vm run --timeout 3600 --kernel "$k" --copy "$WORKLOAD" --copy "$SCRAPE" \
    -- sh -c "$GUEST" > "$out.raw"
  python3 scripts/serve_report.py "$k" "$out.raw" "$commit" > "$out.json"
  rm -f "$out.raw"
done
python3 scripts/serve_report.py --table results/serve-[0-9]*.json
