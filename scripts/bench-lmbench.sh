#!/usr/bin/env bash
# Benchmark (not a test): lsmpmon bench next to lmbench 3, in ONE guest boot.
#   LMBENCH_BIN=/path/to/lmbench/bin scripts/bench-lmbench.sh [KERNEL]   (default 6.1)
# LMBENCH_BIN holds lmbench binaries you built yourself from its public
# source (statically: they are copied into the guest); this script never
# downloads or commits them. Writes bench/lmbench-<kernel>.json and prints
# the comparison table.
. "$(dirname "$0")/bench-common.sh"
: "${LMBENCH_BIN:?set LMBENCH_BIN to a directory of statically built lmbench binaries}"
KERNEL=${1:-6.1}
N=${N:-11}
COPY=()
for b in lat_syscall lat_pipe lat_unix lat_ctx lat_proc bw_pipe bw_unix bw_mem; do
  [ -x "$LMBENCH_BIN/$b" ] || { echo "bench-lmbench: $LMBENCH_BIN/$b missing" >&2; exit 2; }
  COPY+=(--copy "$LMBENCH_BIN/$b:/usr/bin/$b")
done
# The stat file is as deep as lsmpmon's (/tmp/lsmb/stat.XXXXXX/file): depth changes LSM costs.
# Each lmbench line: "LMB <op> <value> [overhead]", lmbench's units (us or MB/s).
GUEST='
set -e
cd /tmp; mkdir -p /tmp/d/x; : > /tmp/d/x/f
lm() { echo "LMB $1 $2"; }
lm null "$(lat_syscall -N '"$N"' null 2>&1 | awk "{print \$(NF-1)}")"
lm stat "$(lat_syscall -N '"$N"' stat /tmp/d/x/f 2>&1 | awk "{print \$(NF-1)}")"
lm pipe "$(lat_pipe -N '"$N"' 2>&1 | awk "{print \$(NF-1)}")"
lm unix "$(lat_unix -N '"$N"' 2>&1 | awk "{print \$(NF-1)}")"
lm fork_exit "$(lat_proc -N '"$N"' fork 2>&1 | awk "{print \$(NF-1)}")"
lm ctx "$(lat_ctx -N '"$N"' -s 0 2 2>&1 | awk "/^2 /{print \$2} /ovr=/{split(\$2,a,\"=\"); o=a[2]} END{print o}" | tr "\n" " ")"
lm bw_pipe "$(bw_pipe -N '"$N"' 2>&1 | awk "{print \$(NF-1)}")"
lm bw_unix "$(bw_unix -N '"$N"' 2>&1 | awk "{print \$(NF-1)}")"
lm bw_mem_rd "$(bw_mem -N '"$N"' 8m rd 2>&1 | awk "{print \$2}")"
lm bw_mem_wr "$(bw_mem -N '"$N"' 8m wr 2>&1 | awk "{print \$2}")"
lm bw_bcopy "$(bw_mem -N '"$N"' 8m bcopy 2>&1 | awk "{print \$2}")"
echo "LSM $(lsmpmon bench --json --dir /tmp/lsmb --samples '"$N"' \
  --ops null,stat,pipe,unix,fork_exit,ctx,bw_pipe,bw_unix,bw_mem_rd,bw_mem_wr,bw_bcopy 2>/dev/null | tr -d "\n")"
'
echo "bench-lmbench: kernel $KERNEL ..." >&2
"$LSMPMON" vm run --timeout 3600 --kernel "$KERNEL" "${COPY[@]}" -- sh -c "$GUEST" > "bench/lmbench-$KERNEL.raw"
python3 - "$KERNEL" "bench/lmbench-$KERNEL.raw" "$(git rev-parse --short HEAD)" > "bench/lmbench-$KERNEL.json" <<'PY'
import json, sys
kernel, raw, commit = sys.argv[1:]
lmb, lsm = {}, None
for line in open(raw):
    if line.startswith("LMB "):
        parts = line.split()
        lmb[parts[1]] = [float(x) for x in parts[2:]]
    elif line.startswith("LSM "):
        lsm = json.loads(line[4:])
rows = []
for op in lsm["results"]:
    name = op["op"]
    theirs = lmb.get(name, [])
    if not theirs:
        continue
    # lmbench latencies are microseconds; lsmpmon's ns.
    ref = theirs[0] * (1000 if op["unit"] == "ns/op" else 1)
    rows.append({"op": name, "unit": op["unit"], "lmbench": ref, "lsmpmon": op["median"],
                 "diff_pct": 100 * (op["median"] - ref) / ref,
                 "lmbench_overhead": theirs[1] * 1000 if len(theirs) > 1 else None,
                 "lsmpmon_overhead": op.get("overhead_ns"),
                 "helper_rss_kb": op.get("helper_rss_kb")})
json.dump({"benchmark": "lmbench-comparison", "kernel": kernel, "commit": commit,
           "mode": "guest, virtual time", "rows": rows,
           "provenance": lsm["provenance"]}, sys.stdout, indent=1)
PY
rm -f "bench/lmbench-$KERNEL.raw"
python3 - "bench/lmbench-$KERNEL.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"| op | unit | lmbench | lsmpmon | difference |")
print("|---|---|---|---|---|")
for r in d["rows"]:
    print(f"| {r['op']} | {r['unit']} | {r['lmbench']:.1f} | {r['lsmpmon']:.1f} | {r['diff_pct']:+.1f} % |")
PY
