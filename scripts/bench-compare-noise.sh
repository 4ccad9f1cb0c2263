#!/usr/bin/env bash
# Benchmark (not a test): how often `lsmpmon compare` calls noise a change in
# real time. PAIRS times: RUNS runs a side of the same binary on the host,
# interleaved A B B A …, compared as two directories at ALPHA (the verdict on
# run medians), and the first run of each side compared alone (one run a
# side: "cannot tell"; its within-run p is what compare used to judge by).
# With LANDLOCK=1, side B runs inside a Landlock ruleset: a real change.
# Writes results/compare-noise-<RUNS>runs-a<ALPHA>[-landlock].json, prints a table.
. "$(dirname "$0")/bench-common.sh"
PAIRS=${PAIRS:-20}
RUNS=${RUNS:-7}
ALPHA=${ALPHA:-0.001}
OPS=${OPS:-null,stat,open_close}
SAMPLES=${SAMPLES:-5}
SAMPLE_MS=${SAMPLE_MS:-2}
LANDLOCK=${LANDLOCK:-0}
B_EXTRA=()
name=compare-noise-${RUNS}runs-a$ALPHA
if [ "$LANDLOCK" = 1 ]; then B_EXTRA=(--landlock); name=$name-landlock; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
one() { # one DIR FILE [extra…]
  local dir=$1 file=$2
  shift 2
  "$LSMPMON" bench --ops "$OPS" --samples "$SAMPLES" --sample-ms "$SAMPLE_MS" \
    --dir "$tmp/work" --json "$@" > "$dir/$file.json" 2>/dev/null
}
for p in $(seq "$PAIRS"); do
  echo "bench-compare-noise: pair $p/$PAIRS" >&2
  mkdir -p "$tmp/$p/a" "$tmp/$p/b"
  for i in $(seq "$RUNS"); do
    f=$(printf %02d "$i")
    if ((i % 2)); then
      one "$tmp/$p/a" "$f"; one "$tmp/$p/b" "$f" "${B_EXTRA[@]}"
    else
      one "$tmp/$p/b" "$f" "${B_EXTRA[@]}"; one "$tmp/$p/a" "$f"
    fi
  done
  "$LSMPMON" compare "$tmp/$p/a" "$tmp/$p/b" --alpha "$ALPHA" --format json > "$tmp/$p/runs.json"
  "$LSMPMON" compare "$tmp/$p/a/01.json" "$tmp/$p/b/01.json" --alpha "$ALPHA" --format json > "$tmp/$p/one.json"
done
python3 - "$tmp" "$PAIRS" "$RUNS" "$ALPHA" "$OPS" "$SAMPLES" "$SAMPLE_MS" "$LANDLOCK" "$(git rev-parse --short HEAD)" \
  > "results/$name.json" <<'PY'
import datetime, json, re, sys
tmp, pairs, runs, alpha, ops, samples, sample_ms, landlock, commit = sys.argv[1:]
pairs, runs, alpha = int(pairs), int(runs), float(alpha)
per_op = {}
for p in range(1, pairs + 1):
    for kind in ("runs", "one"):
        for c in json.load(open(f"{tmp}/{p}/{kind}.json"))["changes"]:
            o = per_op.setdefault(c["figure"], {"runs": {}, "one": {}, "within_run_below_alpha": 0, "change_pct": []})
            o[kind][c["verdict"]] = o[kind].get(c["verdict"], 0) + 1
            if kind == "runs":
                o["change_pct"].append(round(c["overhead_pct"], 2))
            m = re.search(r"within-run p=([0-9.e+-]+)", c["test"])
            if m and float(m.group(1)) < alpha:
                o["within_run_below_alpha"] += 1
print(json.dumps({
    "benchmark": "bench-compare-noise", "commit": commit, "date": datetime.date.today().isoformat(),
    "pairs": pairs, "runs_a_side": runs, "alpha": alpha, "ops": ops, "samples": int(samples),
    "sample_ms": float(sample_ms), "landlock_on_b": landlock == "1",
    "per_op": per_op,
}, indent=1))
PY
python3 - "results/$name.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
n = d["pairs"]
print(f"{n} pairs, {d['runs_a_side']} runs a side of {d['samples']} samples of >= {d['sample_ms']} ms, "
      f"alpha {d['alpha']}, Landlock on B: {d['landlock_on_b']}")
print(f"{'figure':<18} {'runs: slower':>12} {'faster':>7} {'within noise':>12} {'one run: within-run p < alpha':>30} {'change % (min..max)':>22}")
for fig, o in d["per_op"].items():
    r = o["runs"]
    ch = o["change_pct"]
    print(f"{fig:<18} {r.get('slower', 0):>12} {r.get('faster', 0):>7} {r.get('within_noise', 0):>12} "
          f"{o['within_run_below_alpha']:>30} {min(ch):>10.1f}..{max(ch):<10.1f}")
PY
