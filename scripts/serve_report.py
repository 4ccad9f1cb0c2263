#!/usr/bin/env python3
"""bench-serve.sh's guest output as JSON, and the JSON files as a table.

  serve_report.py KERNEL RAW COMMIT   -> JSON on stdout
  serve_report.py --table FILE...     -> Markdown table
"""
import json
import sys


def fastest(runs):
    return min(runs, key=lambda r: r["ns_per_op"])


def parse(kernel, raw, commit):
    base, runs, out = [], {"quiet": [], "scraped": []}, {}
    for line in open(raw):
        word, _, rest = line.strip().partition(" ")
        if word == "base":
            base.append(json.loads(rest))
        elif word in runs:
            c0, c1, w = rest.split(" ", 2)
            r = json.loads(w)
            r["calls"] = int(c1) - int(c0)
            runs[word].append(r)
        elif word == "scrapes":
            out["client"] = json.loads(rest)
        elif word == "rss":
            out["rss_kib"] = {k.rstrip(":"): int(v) for k, v in
                              (f.split(":") for f in rest.split())}
        elif word in ("gauge", "series", "hooks"):
            out[word] = float(rest)
        elif word == "method":
            out["method"] = rest.split('"')[1]
    b = fastest(base)["ns_per_op"]
    out.update(kernel=kernel, commit=commit, mode="guest virtual ns (-icount shift=0)",
               base_ns_per_op=b)
    for mode, rs in runs.items():
        r = fastest(rs)
        calls_per_op = r["calls"] / r["n"]
        out[mode] = {
            "ns_per_op": r["ns_per_op"],
            "calls_per_op": round(calls_per_op, 3),
            "added_ns_per_call": round((r["ns_per_op"] - b) / calls_per_op, 1),
        }
    return out


def table(files):
    rows = ["| kernel | method | hooks | series | scrape, client median (fastest–slowest) ms | scrape, serve's gauge ms | RSS / peak MiB | stat ns/op: untraced | traced | traced + 1 s scrapes | **ns per call** | **with scrapes** |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for f in files:
        d = json.load(open(f))
        c, q, s = d["client"], d["quiet"], d["scraped"]
        rows.append(
            f"| {d['kernel']} | {d['method']} | {d['hooks']:.0f} | {d['series']:.0f} "
            f"| {c['median_ms']:.1f} ({c['fastest_ms']:.1f}–{c['slowest_ms']:.1f}) "
            f"| {d['gauge'] * 1e3:.1f} "
            f"| {d['rss_kib']['VmRSS'] / 1024:.1f} / {d['rss_kib']['VmHWM'] / 1024:.1f} "
            f"| {d['base_ns_per_op']:.0f} | {q['ns_per_op']:.0f} | {s['ns_per_op']:.0f} "
            f"| **{q['added_ns_per_call']:.0f}** | **{s['added_ns_per_call']:.0f}** |")
    print("\n".join(rows))


if __name__ == "__main__":
    if sys.argv[1] == "--table":
        table(sys.argv[2:])
    else:
        print(json.dumps(parse(*sys.argv[1:4]), indent=2))
