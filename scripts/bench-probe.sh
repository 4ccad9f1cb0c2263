#!/usr/bin/env bash
# Benchmark (not a test): what lsmpmon's probe adds per traced call, and how
# long attaching and detaching every hook takes, in a guest (virtual ns).
#   scripts/bench-probe.sh [KERNEL...]      default: 6.1 6.12 (7.3: multi session, session, fentry/fexit;
#                                          6.12: kprobe session, fentry/fexit)
#   METHODS=multi-session scripts/bench-probe.sh 7.3     only these methods
#                                          (-> results/probe-7.3-multi-session.json)
#   MODES="default count" OPS=stat SCOPES=one OUT=bench/x scripts/bench-probe.sh 6.1
#                                          a smaller run of the same loops (modes: default
#                                          lean count empty sampleN windowsON/EVERY; OUT: the
#                                          JSON's path without .json)
#   METHODS=auto MODES="count windows5/120" OPS=stat SCOPES=all N=60000000 REPEAT=1 \
#     OUT=results/probe-6.1-windows scripts/bench-probe.sh 6.1
#                                          serve's default timing windows against count-only,
#                                          over loops long enough for two windows (about 4 min)
# Writes results/probe-<kernel>.json and prints a table.
. "$(dirname "$0")/bench-common.sh"
N=${N:-20000}
REPEAT=${REPEAT:-3}
MODES=${MODES:-default lean count empty}
OPS=${OPS:-stat open_close}
SCOPES=${SCOPES:-one all}

# In the guest: baseline loops, then each loop under one hook and under all
# hooks, default options, --lean and --empty-probes (programs that return at
# once: what the attach method itself costs), with every attach method the
# kernel offers (session and fentry/fexit on 7.x; elsewhere the default).
# Each trace is its own JSON line. Every loop runs REPEAT times and the
# report takes the fastest: a kernel thread waking up in the middle can only
# add time. Traces release their probes before the next starts (--detach
# wait): background releases would overlap the next measurement. The guest
# first settles (6.12 keeps a CPU busy for about 2 s of virtual time after boot).
GUEST='
set -e
W=/usr/bin/workload; : > /tmp/x; N='"$N"'; R='"$REPEAT"'
loops() { i=0; while [ $i -lt $R ]; do $W $1 $N /tmp/x; i=$((i+1)); done | tr -d "\n"; }
sleep 5
echo "base stat $(loops stat)"
echo "base open_close $(loops open_close)"
METHODS="'"${METHODS:-}"'"
if [ -n "$METHODS" ]; then :
elif lsmpmon trace --method multi-session --hooks inode_getattr -o /dev/null -- true 2>/dev/null; then
  METHODS="multi-session session fentry-fexit"
elif lsmpmon trace --method session --hooks inode_getattr -o /dev/null -- true 2>/dev/null; then
  METHODS="session fentry-fexit"
elif lsmpmon trace --method kprobe-session --hooks inode_getattr -o /dev/null -- true 2>/dev/null; then
  METHODS="kprobe-session fentry-fexit"
else
  METHODS=auto
fi
for method in $METHODS; do
  for mode in '"$MODES"'; do
    case $mode in lean) L=--lean ;; count) L=--count-only ;; empty) L=--empty-probes ;; sample*) L="--sample ${mode#sample}" ;;
      windows*) L="--timing-windows ${mode#windows}" ;; *) L= ;; esac
    for op in '"$OPS"'; do
      [ $op = stat ] && H=inode_getattr || H=file_open
      for scope in '"$SCOPES"'; do
        [ $scope = one ] && HOOKS="--hooks $H" || HOOKS=
        lsmpmon trace --json --detach wait --method $method $L $HOOKS -o /tmp/r.json -- \
          sh -c "i=0; while [ \$i -lt $R ]; do $W $op $N /tmp/x; i=\$((i+1)); done > /tmp/w.json" 2>/dev/null
        echo "run $mode $op $scope $(tr -d "\n" < /tmp/w.json) $(tr -d "\n" < /tmp/r.json)"
      done
    done
  done
done
lsmpmon trace --json -o /tmp/r.json -- true 2>/dev/null
echo "detachbg $(tr -d "\n" < /tmp/r.json)"
'

for kernel in "${@:-6.1 6.12}"; do
  for k in $kernel; do
    echo "bench-probe: kernel $k ..." >&2
    out=${OUT:-results/probe-$k${METHODS:+-${METHODS// /-}}}
    "$LSMPMON" vm run --timeout 3600 --kernel "$k" --copy "$WORKLOAD" -- sh -c "$GUEST" > "$out.raw"
    python3 scripts/probe_report.py "$k" "$out.raw" "$(git rev-parse --short HEAD)" > "$out.json"
    rm -f "$out.raw"
  done
done
if [ -n "${OUT:-}" ]; then python3 scripts/probe_report.py --table "$OUT.json"; else python3 scripts/probe_report.py --table results/probe-*.json; fi
