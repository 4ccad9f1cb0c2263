#!/usr/bin/env bash
# Benchmark (not a test): run-to-run spread of `lsmpmon bench` medians, on the
# host (real time, RUNS runs) and in a 6.1 guest (virtual time, BOOTS boots),
# and the lmbench group's wall time. Writes results/spread.json, prints a table.
. "$(dirname "$0")/bench-common.sh"
RUNS=${RUNS:-5}
BOOTS=${BOOTS:-3}
OPS=${OPS:-syscall,files}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for i in $(seq "$RUNS"); do
  echo "bench-spread: host run $i/$RUNS" >&2
  "$LSMPMON" bench --ops "$OPS" --json --dir "$tmp/work" > "$tmp/host-$i.json" 2>/dev/null
done
for i in $(seq "$BOOTS"); do
  echo "bench-spread: guest boot $i/$BOOTS" >&2
  "$LSMPMON" vm run --kernel 6.1 -- sh -c "sleep 3; lsmpmon bench --ops $OPS --json" > "$tmp/guest-$i.json" 2>/dev/null
done
echo "bench-spread: lmbench group, host and guest" >&2
"$LSMPMON" bench --ops lmbench --json --dir "$tmp/work" > "$tmp/lm-host.json" 2>/dev/null
"$LSMPMON" vm run --kernel 6.1 -- sh -c "sleep 3; lsmpmon bench --ops lmbench --json" > "$tmp/lm-guest.json" 2>/dev/null
python3 - "$tmp" "$RUNS" "$BOOTS" "$(git rev-parse --short HEAD)" > results/spread.json <<'PY'
import datetime, json, statistics, sys
tmp, runs, boots, commit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
def load(p): return json.load(open(p))
def spread(files):
    runs = [load(f) for f in files]
    ops = {}
    for r in runs:
        for o in r["results"]:
            ops.setdefault(o["op"], {"unit": o["unit"], "group": o["group"], "medians": []})["medians"].append(o["median"])
    for o in ops.values():
        m = statistics.mean(o["medians"])
        o["cov_pct"] = statistics.pstdev(o["medians"]) / m * 100
    return {"provenance": runs[0]["provenance"], "ops": ops}
out = {
    "benchmark": "bench-spread", "commit": commit, "date": datetime.date.today().isoformat(),
    "host": spread([f"{tmp}/host-{i}.json" for i in range(1, runs + 1)]),
    "guest": spread([f"{tmp}/guest-{i}.json" for i in range(1, boots + 1)]),
    "lmbench_wall_s": {"host": load(f"{tmp}/lm-host.json")["wall_s"], "guest": load(f"{tmp}/lm-guest.json")["wall_s"]},
}
print(json.dumps(out, indent=1))
PY
python3 - <<'PY'
import json
d = json.load(open("results/spread.json"))
print(f"{'op':<14} {'unit':<6} {'host median':>12} {'host CoV %':>10} {'guest median':>13} {'guest CoV %':>11}")
for op, h in d["host"]["ops"].items():
    g = d["guest"]["ops"].get(op, {})
    gm = sum(g["medians"]) / len(g["medians"]) if g else float("nan")
    print(f"{op:<14} {h['unit']:<6} {sum(h['medians'])/len(h['medians']):>12.1f} {h['cov_pct']:>10.2f} "
          f"{gm:>13.1f} {g.get('cov_pct', float('nan')):>11.3f}")
w = d["lmbench_wall_s"]
print(f"lmbench group wall time: host {w['host']:.1f} s (real), guest {w['guest']:.1f} s (virtual)")
PY
