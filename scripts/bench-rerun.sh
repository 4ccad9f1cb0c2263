#!/usr/bin/env bash
# Benchmark (not a test): how far two boots of the same guest disagree on the
# `paper` ops, per boot choice. BOOTS boots of 6.1 per configuration, each
# running `lsmpmon bench --ops paper`; prints every op's medians and spread
# ((max - min) / min) and writes results/rerun-6.1.json (ONLY=NAME: that
# configuration alone, into results/rerun-6.1-NAME.json).
. "$(dirname "$0")/bench-common.sh"
BOOTS=${BOOTS:-4}
ONLY=${ONLY:-}
out=results/rerun-6.1${ONLY:+-$ONLY}.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
configs=()
while IFS='|' read -r name args; do
  [ -z "$ONLY" ] || [ "$ONLY" = "$name" ] || continue
  configs+=("$name")
  for i in $(seq "$BOOTS"); do
    echo "bench-rerun: $name, boot $i/$BOOTS" >&2
    # shellcheck disable=SC2086  # args: several vm run options
    "$LSMPMON" vm run --kernel 6.1 $args -- lsmpmon bench --ops paper --json \
      > "$tmp/$name.$i.json" 2>/dev/null
  done
done <<'CFG'
host-date|--rtc clock=vm
fixed-date|--rtc clock=vm,base=2000-01-01
two-cpus|--cpus 2
four-cpus|--cpus 4
CFG
python3 - "$tmp" "$BOOTS" "$(git rev-parse --short HEAD)" "${configs[@]}" > "$out" <<'PY'
import datetime, json, sys
tmp, boots, commit, *configs = sys.argv[1], int(sys.argv[2]), sys.argv[3], *sys.argv[4:]
out = {"benchmark": "rerun", "kernel": "6.1", "commit": commit,
       "date": datetime.date.today().isoformat(), "boots": boots, "configs": []}
for name in configs:
    runs = [json.load(open(f"{tmp}/{name}.{i}.json")) for i in range(1, boots + 1)]
    ops = []
    for o in runs[0]["results"]:
        v = [next(r["median"] for r in run["results"] if r["op"] == o["op"]) for run in runs]
        ops.append({"op": o["op"], "medians_ns": v, "spread_pct": (max(v) - min(v)) / min(v) * 100})
    out["configs"].append({"config": name, "ops": ops})
print(json.dumps(out, indent=1))
PY
python3 - "$out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for c in d["configs"]:
    print(f"== {c['config']} ({d['boots']} boots)")
    for o in c["ops"]:
        print(f"  {o['op']:<12} {' '.join(f'{x:9.1f}' for x in o['medians_ns'])}  {o['spread_pct']:6.3f} %")
    print(f"  worst {max(o['spread_pct'] for o in c['ops']):.3f} %")
PY
