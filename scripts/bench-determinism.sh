#!/usr/bin/env bash
# Benchmark (not a test): how repeatable guest measurements are under each
# QEMU timing option. Boots the 6.1 guest BOOTS times per configuration and
# runs the same stat loop; prints the spread of ns/op across boots.
. "$(dirname "$0")/bench-common.sh"
BOOTS=${BOOTS:-3}
out=results/determinism-6.1.json
echo '{"benchmark":"determinism","kernel":"6.1","commit":"'"$(git rev-parse --short HEAD)"'","date":"'"$(date -I)"'","configs":[' > "$out"
first=1
while IFS='|' read -r name icount rtc kaslr; do
  vals=()
  for i in $(seq "$BOOTS"); do
    args=(vm run --kernel 6.1 --icount "$icount" --rtc "$rtc" --copy "$WORKLOAD")
    [ "$kaslr" = yes ] && args+=(--kaslr)
    v=$("$LSMPMON" "${args[@]}" -- sh -c ': > /tmp/x; sleep 2; workload stat 20000 /tmp/x' | sed -E 's/.*"ns_per_op":([0-9.]+).*/\1/')
    vals+=("$v")
  done
  [ $first = 1 ] || echo ',' >> "$out"; first=0
  python3 - "$name" "$icount" "$rtc" "$kaslr" "${vals[@]}" >> "$out" <<'PY'
import json, statistics, sys
name, icount, rtc, kaslr, *vals = sys.argv[1:]
v = [float(x) for x in vals]
m = statistics.mean(v)
print(json.dumps({"config": name, "icount": icount, "rtc": rtc, "kaslr": kaslr == "yes",
                  "stat_ns_per_op": v, "mean": m,
                  "spread_pct": (max(v) - min(v)) / m * 100}), end="")
PY
  echo "determinism: $name: ${vals[*]}" >&2
done <<'CFG'
lsmpmon default|shift=0,sleep=off|clock=vm|no
sleep=on (QEMU default)|shift=0|clock=vm|no
rtc host clock|shift=0,sleep=off|base=utc|no
kaslr on|shift=0,sleep=off|clock=vm|yes
no icount (host time)|off|clock=vm|no
CFG
echo ']}' >> "$out"
python3 -c "
import json; d=json.load(open('$out'))
print(f\"{'configuration':<28} {'stat ns/op per boot':<36} {'spread %':>8}\")
for c in d['configs']:
    print(f\"{c['config']:<28} {' '.join(f'{x:.1f}' for x in c['stat_ns_per_op']):<36} {c['spread_pct']:>8.3f}\")"
