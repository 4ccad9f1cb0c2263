#!/usr/bin/env python3
"""The reference MACs' scaling curves from scripts/mac-scaling.sh's results:
one Markdown table per curve and op, median virtual ns per op and, in
brackets, what each MAC adds over `none` measured at the same point.
Usage: scripts/mac_curves.py OUT   (OUT/depth-N/, OUT/rules-N/ lab results)"""
import glob
import json
import os
import re
import sys

CONFIGS = ["none", "mac-label", "mac-path", "mac-inode"]


def medians(results_dir):
    """{config: {op: median}} of the passed cells (the newest per config)."""
    cells = [json.load(open(f)) for f in glob.glob(os.path.join(results_dir, "cells", "*.json"))]
    out = {}
    for c in sorted(cells, key=lambda c: c["started_unix_s"]):
        if c["status"] == "passed":
            out[c["config"]["name"]] = {r["op"]: r["median"] for r in c["guest"]["bench"]["results"]}
    return out


def curve(base, kind):
    points = {}
    for d in glob.glob(os.path.join(base, f"{kind}-*")):
        m = re.fullmatch(rf"{kind}-(\d+)", os.path.basename(d))
        if m:
            points[int(m.group(1))] = medians(d)
    return dict(sorted(points.items()))


def table(kind, points, op):
    lines = [f"| {kind} | " + " | ".join(CONFIGS) + " |", "|---" * (len(CONFIGS) + 1) + "|"]
    for p, by_config in points.items():
        none = by_config.get("none", {}).get(op)
        cells = []
        for c in CONFIGS:
            v = by_config.get(c, {}).get(op)
            if v is None:
                cells.append("–")
            elif c == "none" or none is None:
                cells.append(f"{v:.0f}")
            else:
                cells.append(f"{v:.0f} (+{v - none:.0f})")
        lines.append(f"| {p} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: mac_curves.py OUT")
    for kind in ("depth", "rules"):
        points = curve(sys.argv[1], kind)
        ops = sorted({op for by in points.values() for m in by.values() for op in m})
        for op in ops:
            print(f"\n{kind} / {op} (median virtual ns per op; + over none)\n")
            print(table(kind, points, op))


main()
