#!/usr/bin/env bash
# Benchmark (not a test): lsmpmon bench next to lmbench 3, in ONE guest boot.
#   LMBENCH_BIN=/path/to/lmbench/bin scripts/bench-lmbench.sh [KERNEL]   (default 6.1)
#   LMBENCH_BIN=/path/to/lmbench/bin RUNS=3 scripts/bench-lmbench.sh host
#   LMBENCH_BIN=/path/to/lmbench/bin ONLY=fork_exit RUNS=3 scripts/bench-lmbench.sh 6.1
# ONLY: a comma-separated subset of the ops below (default all). RUNS: how
# many times both run, alternating (in the guest: all in the same boot).
# LMBENCH_BIN holds lmbench binaries you built yourself from its public
# source (statically: they are copied into the guest); this script never
# downloads or commits them. Writes results/lmbench-<kernel>.json (or
# results/lmbench-host.json: real time on this machine; with RUNS > 1 each
# op's figures from every run and their spread) and prints the comparison table.
. "$(dirname "$0")/bench-common.sh"
: "${LMBENCH_BIN:?set LMBENCH_BIN to a directory of statically built lmbench binaries}"
KERNEL=${1:-6.1}
N=${N:-11}
ALL=null,stat,pipe,unix,fork_exit,ctx,bw_pipe,bw_unix,bw_mem_rd,bw_mem_wr,bw_bcopy
ONLY=${ONLY:-$ALL}
RUNS=${RUNS:-1}
# A subset's results go to a file of their own: lmbench-<kernel>-<ops>.json.
OUT=results/lmbench-$KERNEL$([ "$ONLY" = "$ALL" ] || echo "-${ONLY//,/-}").json
COPY=()
for b in lat_syscall lat_pipe lat_unix lat_ctx lat_proc bw_pipe bw_unix bw_mem; do
  [ -x "$LMBENCH_BIN/$b" ] || { echo "bench-lmbench: $LMBENCH_BIN/$b missing" >&2; exit 2; }
  COPY+=(--copy "$LMBENCH_BIN/$b:/usr/bin/$b")
done
# The stat file is as deep as lsmpmon's ($T/lsmb/stat.XXXXXX/file): depth changes LSM costs.
# Each lmbench line: "LMB <op> <value> [overhead]", lmbench's units (us or MB/s).
GUEST='
set -e
T=${T:-/tmp}
cd $T; mkdir -p $T/d/x $T/lsmb; : > $T/d/x/f
lm() { case ",'"$ONLY"'," in *",$1,"*) echo "LMB $1 $($2)";; esac; }
for run in $(seq '"$RUNS"'); do
m_null() { lat_syscall -N '"$N"' null 2>&1 | awk "{print \$(NF-1)}"; }; lm null m_null
m_stat() { lat_syscall -N '"$N"' stat $T/d/x/f 2>&1 | awk "{print \$(NF-1)}"; }; lm stat m_stat
m_pipe() { lat_pipe -N '"$N"' 2>&1 | awk "{print \$(NF-1)}"; }; lm pipe m_pipe
m_unix() { lat_unix -N '"$N"' 2>&1 | awk "{print \$(NF-1)}"; }; lm unix m_unix
m_fork_exit() { lat_proc -N '"$N"' fork 2>&1 | awk "{print \$(NF-1)}"; }; lm fork_exit m_fork_exit
m_ctx() { lat_ctx -N '"$N"' -s 0 2 2>&1 | awk "/^2 /{print \$2} /ovr=/{split(\$2,a,\"=\"); o=a[2]} END{print o}" | tr "\n" " "; }; lm ctx m_ctx
m_bw_pipe() { bw_pipe -N '"$N"' 2>&1 | awk "{print \$(NF-1)}"; }; lm bw_pipe m_bw_pipe
m_bw_unix() { bw_unix -N '"$N"' 2>&1 | awk "{print \$(NF-1)}"; }; lm bw_unix m_bw_unix
m_bw_mem_rd() { bw_mem -N '"$N"' 8m rd 2>&1 | awk "{print \$2}"; }; lm bw_mem_rd m_bw_mem_rd
m_bw_mem_wr() { bw_mem -N '"$N"' 8m wr 2>&1 | awk "{print \$2}"; }; lm bw_mem_wr m_bw_mem_wr
m_bw_bcopy() { bw_mem -N '"$N"' 8m bcopy 2>&1 | awk "{print \$2}"; }; lm bw_bcopy m_bw_bcopy
echo "LSM $(lsmpmon bench --json --dir $T/lsmb --samples '"$N"' --ops '"$ONLY"' 2>/dev/null | tr -d "\n")"
done
'
RAW="results/lmbench-$KERNEL.raw"
: > "$RAW"
if [ "$KERNEL" = host ]; then
  # Real time on this machine, RUNS times: the host is noisy, so its noise
  # is measured rather than assumed. lmbench and lsmpmon run by their paths.
  T=$(mktemp -d)
  trap 'rm -rf "$T"' EXIT
  mkdir "$T/bin"
  for b in "$LMBENCH_BIN"/*; do ln -s "$b" "$T/bin/"; done
  ln -s "$PWD/$LSMPMON" "$T/bin/lsmpmon"
  echo "bench-lmbench: host, $RUNS runs ..." >&2
  T=$T PATH="$T/bin:$PATH" sh -c "$GUEST" >> "$RAW"
  MODE="host, real time"
else
  echo "bench-lmbench: kernel $KERNEL ..." >&2
  "$LSMPMON" vm run --timeout 3600 --kernel "$KERNEL" "${COPY[@]}" -- sh -c "$GUEST" > "$RAW"
  MODE="guest, virtual time"
fi
python3 - "$KERNEL" "$RAW" "$(git rev-parse --short HEAD)" "$MODE" > "$OUT" <<'PY'
import json, statistics, sys
kernel, raw, commit, mode = sys.argv[1:]
lmb, lsm = {}, []
for line in open(raw):
    if line.startswith("LMB "):
        parts = line.split()
        lmb.setdefault(parts[1], []).append([float(x) for x in parts[2:]])
    elif line.startswith("LSM "):
        lsm.append(json.loads(line[4:]))
rows = []
for op in lsm[0]["results"]:
    name = op["op"]
    theirs = lmb.get(name, [])
    if not theirs:
        continue
    # lmbench latencies are microseconds; lsmpmon's ns.
    scale = 1000 if op["unit"] == "ns/op" else 1
    refs = [t[0] * scale for t in theirs]
    ours = [r["median"] for run in lsm for r in run["results"] if r["op"] == name]
    ref, mine = statistics.median(refs), statistics.median(ours)
    row = {"op": name, "unit": op["unit"], "lmbench": ref, "lsmpmon": mine,
           "diff_pct": 100 * (mine - ref) / ref,
           "lmbench_overhead": theirs[0][1] * 1000 if len(theirs[0]) > 1 else None,
           "lsmpmon_overhead": op.get("overhead_ns"),
           "helper_rss_kb": op.get("helper_rss_kb"), "helper": op.get("helper")}
    if len(refs) > 1:
        # Each run's figure, and the spread of runs: the host's noise.
        row.update({"lmbench_runs": refs, "lsmpmon_runs": ours,
                    "lmbench_spread_pct": 100 * (max(refs) - min(refs)) / ref,
                    "lsmpmon_spread_pct": 100 * (max(ours) - min(ours)) / mine})
    rows.append(row)
json.dump({"benchmark": "lmbench-comparison", "kernel": kernel, "commit": commit,
           "mode": mode, "runs": len(lsm), "rows": rows,
           "provenance": lsm[0]["provenance"]}, sys.stdout, indent=1)
PY
rm -f "$RAW"
python3 - "$OUT" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
many = d["runs"] > 1
print("| op | unit | lmbench | lsmpmon | difference |" + (" lmbench runs' spread | lsmpmon runs' spread |" if many else ""))
print("|---|---|---|---|---|" + ("---|---|" if many else ""))
for r in d["rows"]:
    extra = f" {r['lmbench_spread_pct']:.1f} % | {r['lsmpmon_spread_pct']:.1f} % |" if many else ""
    print(f"| {r['op']} | {r['unit']} | {r['lmbench']:.1f} | {r['lsmpmon']:.1f} | {r['diff_pct']:+.1f} % |" + extra)
PY
