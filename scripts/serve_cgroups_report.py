#!/usr/bin/env python3
"""bench-serve-cgroups.sh's guest output as JSON, and the JSON files as a table.

  serve_cgroups_report.py KERNEL RAW COMMIT   -> JSON on stdout
  serve_cgroups_report.py --table FILE...     -> Markdown table
"""
import json
import sys


def parse(kernel, raw, commit):
    base, loops, scale, out = [], {"none": [], "cgroup": []}, [], {}
    for line in open(raw):
        word, _, rest = line.strip().partition(" ")
        if word == "base":
            base.append(json.loads(rest))
        elif word == "loop":
            by, c0, c1, w = rest.split(" ", 3)
            r = json.loads(w)
            r["calls"] = int(c1) - int(c0)
            loops[by].append(r)
        elif word == "cgroups":
            n, rows, series, gauge, client = rest.split(" ", 4)
            scale.append({"cgroups": int(n), "cgroup_hook_rows": int(rows),
                          "series": int(series), "serve_ms": float(gauge) * 1e3,
                          "client": json.loads(client)})
        elif word == "method":
            out["method"] = rest.split('"')[1]
    b = min(r["ns_per_op"] for r in base)
    out.update(kernel=kernel, commit=commit, mode="guest virtual ns (-icount shift=0)",
               base_ns_per_op=b, scale=scale)
    for by, rs in loops.items():
        r = min(rs, key=lambda r: r["ns_per_op"])
        per_op = r["calls"] / r["n"]
        out[by] = {"ns_per_op": r["ns_per_op"], "calls_per_op": round(per_op, 3),
                   "added_ns_per_call": round((r["ns_per_op"] - b) / per_op, 1)}
    return out


def table(files):
    rows = ["| kernel | method | cgroups | their cgroup × hook series | series in all | scrape, client median (fastest–slowest) ms | serve's own ms | bytes |",
            "|---|---|---|---|---|---|---|---|"]
    cost = ["| kernel | stat ns/op untraced | serve | serve --by cgroup | **ns per call** | **with --by cgroup** | **added by --by cgroup** |",
            "|---|---|---|---|---|---|---|"]
    for f in files:
        d = json.load(open(f))
        for s in d["scale"]:
            c = s["client"]
            rows.append(f"| {d['kernel']} | {d['method']} | {s['cgroups']} | {s['cgroup_hook_rows']} | {s['series']} "
                        f"| {c['median_ms']:.1f} ({c['fastest_ms']:.1f}–{c['slowest_ms']:.1f}) "
                        f"| {s['serve_ms']:.1f} | {c.get('bytes', 0)} |")
        n, g = d["none"], d["cgroup"]
        cost.append(f"| {d['kernel']} | {d['base_ns_per_op']:.0f} | {n['ns_per_op']:.0f} | {g['ns_per_op']:.0f} "
                    f"| **{n['added_ns_per_call']:.0f}** | **{g['added_ns_per_call']:.0f}** "
                    f"| **{g['added_ns_per_call'] - n['added_ns_per_call']:+.0f}** |")
    print("\n".join(rows + [""] + cost))


if __name__ == "__main__":
    if sys.argv[1] == "--table":
        table(sys.argv[2:])
    else:
        print(json.dumps(parse(*sys.argv[1:4]), indent=2))
