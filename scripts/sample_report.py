#!/usr/bin/env python3
"""bench-sample.sh's report: each hook's p50, p99 and mean under --sample N
against timing every call (N = 1), from the traces' JSON lines."""
import json
import sys


def parse(kernel, raw_path, commit, min_calls):
    traces, windowed = {}, {}
    for line in open(raw_path):
        tag, n, text = line.split(" ", 2)
        if tag == "sample":
            traces[int(n)] = json.loads(text)
        elif tag in ("full", "windows"):
            windowed[tag] = json.loads(text)
    rows = compare(traces, min_calls) if traces else []
    if windowed:
        rows += compare({1: windowed["full"], "windows": windowed["windows"]}, min_calls)
    first = traces.get(1) or windowed["full"]
    return {
        "benchmark": "sampled-timing", "kernel": kernel, "commit": commit,
        "mode": "guest, QEMU TCG -icount shift=0 (virtual ns)",
        "min_calls": min_calls, "rows": rows,
        "timing_windows": windowed.get("windows", {}).get("options", {}).get("timing_windows"),
        "provenance": first["provenance"],
    }


def compare(traces, min_calls):
    """Each trace's hooks against the one that timed every call (key 1)."""
    full = {h["hook"]: h for h in traces[1]["hooks"] if h["calls"] >= min_calls}
    rows = []
    for n, t in sorted(traces.items(), key=lambda kv: str(kv[0])):
        for h in t["hooks"]:
            ref = full.get(h["hook"])
            if ref is None:
                continue
            off = lambda k: (h[k] / ref[k] - 1) * 100 if h[k] and ref[k] else None
            rows.append({
                "sample_every": n, "hook": h["hook"], "calls": h["calls"],
                "timed": h["count"], "untimed": h.get("untimed", 0),
                "p50_ns": h["p50_ns"], "p99_ns": h["p99_ns"], "ave_ns": round(h["ave_ns"], 1),
                "p50_off_pct": off("p50_ns"), "p99_off_pct": off("p99_ns"),
                "ave_off_pct": off("ave_ns"),
                # --timing-windows: every call's estimated time against the
                # time of every call timed.
                "estimate_off_pct": ((h["time_estimate_ns"] / ref["sum_ns"] - 1) * 100
                                     if h.get("time_estimate_ns") and ref["sum_ns"] else None),
                "method": t["probe"]["method"],
            })
    return rows


def table(path):
    d = json.load(open(path))
    print(f"{'kernel':<7} {'N':>4} {'hook':<16} {'calls':>7} {'timed':>7} "
          f"{'p50':>6} {'off %':>6} {'p99':>6} {'off %':>6} {'ave':>7} {'off %':>6} {'est off %':>9}")
    pct = lambda v: f"{v:+.1f}" if v is not None else "-"
    for r in d["rows"]:
        print(f"{d['kernel']:<7} {str(r['sample_every']):>4} {r['hook']:<16} {r['calls']:>7} "
              f"{r['timed']:>7} {r['p50_ns'] or '-':>6} {pct(r['p50_off_pct']):>6} "
              f"{r['p99_ns'] or '-':>6} {pct(r['p99_off_pct']):>6} {r['ave_ns']:>7} "
              f"{pct(r['ave_off_pct']):>6} {pct(r.get('estimate_off_pct')):>9}")


if __name__ == "__main__":
    if sys.argv[1] == "--table":
        table(sys.argv[2])
    else:
        print(json.dumps(parse(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])), indent=1))
