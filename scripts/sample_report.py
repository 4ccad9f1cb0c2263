#!/usr/bin/env python3
"""bench-sample.sh's report: each hook's p50, p99 and mean under --sample N
against timing every call (N = 1), from the traces' JSON lines."""
import json
import sys


def parse(kernel, commit, min_calls, raw_paths):
    """One report; rows of each draw (boot) carry its number."""
    runs = [parse_draw(p, min_calls) for p in raw_paths]
    draw_of = lambda p: int(p.rsplit(".", 2)[-2])  # <out>.<draw>.raw
    rows = [dict(r, draw=draw_of(p)) for p, (rs, _, _) in zip(raw_paths, runs) for r in rs]
    first, windows = runs[0][1], runs[0][2]
    return {
        "benchmark": "sampled-timing", "kernel": kernel, "commit": commit,
        "mode": "guest, QEMU TCG -icount shift=0 (virtual ns)",
        "min_calls": min_calls, "draws": len(runs), "rows": rows,
        "across_draws": across(rows) if len(runs) > 1 else [],
        "timing_windows": windows,
        "provenance": first["provenance"],
    }


def across(rows):
    """Per N and hook: the smallest and largest offsets over the draws."""
    groups = {}
    for r in rows:
        if r["sample_every"] != 1:
            groups.setdefault((str(r["sample_every"]), r["hook"]), []).append(r)
    out = []
    for (n, hook), rs in sorted(groups.items()):
        row = {"sample_every": n, "hook": hook, "draws": len(rs)}
        for k in ("p50_off_pct", "p99_off_pct", "ave_off_pct", "estimate_off_pct"):
            vals = [r[k] for r in rs if r[k] is not None]
            row[k] = [min(vals), max(vals)] if vals else None
        out.append(row)
    return out


def parse_draw(raw_path, min_calls):
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
    windows = windowed.get("windows", {}).get("options", {}).get("timing_windows")
    return rows, first, windows


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
    if d.get("across_draws"):
        across_table(d)
        return
    print(f"{'kernel':<7} {'N':>4} {'hook':<16} {'calls':>7} {'timed':>7} "
          f"{'p50':>6} {'off %':>6} {'p99':>6} {'off %':>6} {'ave':>7} {'off %':>6} {'est off %':>9}")
    pct = lambda v: f"{v:+.1f}" if v is not None else "-"
    for r in d["rows"]:
        print(f"{d['kernel']:<7} {str(r['sample_every']):>4} {r['hook']:<16} {r['calls']:>7} "
              f"{r['timed']:>7} {r['p50_ns'] or '-':>6} {pct(r['p50_off_pct']):>6} "
              f"{r['p99_ns'] or '-':>6} {pct(r['p99_off_pct']):>6} {r['ave_ns']:>7} "
              f"{pct(r['ave_off_pct']):>6} {pct(r.get('estimate_off_pct')):>9}")


def across_table(d):
    span = lambda v: f"{v[0]:+.1f} … {v[1]:+.1f}" if v else "-"
    print(f"{d['kernel']}, {d['draws']} draws: offsets against timing every call in the same boot, "
          "smallest … largest (%)")
    print(f"{'N':>8} {'hook':<24} {'p50':>14} {'p99':>14} {'mean':>14} {'estimate':>14}")
    for r in d["across_draws"]:
        print(f"{r['sample_every']:>8} {r['hook']:<24} {span(r['p50_off_pct']):>14} "
              f"{span(r['p99_off_pct']):>14} {span(r['ave_off_pct']):>14} "
              f"{span(r['estimate_off_pct']):>14}")


if __name__ == "__main__":
    if sys.argv[1] == "--table":
        table(sys.argv[2])
    else:
        kernel, commit, min_calls, *raws = sys.argv[1:]
        print(json.dumps(parse(kernel, commit, int(min_calls), raws), indent=1))
