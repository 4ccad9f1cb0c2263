#!/usr/bin/env python3
"""Turns bench-probe.sh's guest output into JSON, or JSON files into a table."""
import datetime
import json
import sys


def objects(text):
    """The JSON objects written one after another in `text`."""
    dec, out, i = json.JSONDecoder(), [], 0
    text = text.strip()
    while i < len(text):
        obj, end = dec.raw_decode(text, i)
        out.append(obj)
        i = end
        while i < len(text) and text[i].isspace():
            i += 1
    return out


def parse(kernel, raw_path, commit):
    """Each loop runs REPEAT times; the fastest run counts (background work in
    the guest can only add time)."""
    base, runs, background = {}, [], None
    for line in open(raw_path):
        parts = line.split(" ", 4)
        if parts[0] == "base":
            base[parts[1]] = min(o["ns_per_op"] for o in objects(line.split(" ", 2)[2]))
        elif parts[0] == "run":
            mode, op, scope = parts[1], parts[2], parts[3]
            *works, trace = objects(parts[4])
            work = min(works, key=lambda w: w["ns_per_op"])
            method = trace["probe"]["method"]
            calls = sum(h["calls"] for h in trace["hooks"]) / len(works)
            if mode == "empty":
                # Empty probes count nothing: the calls are those the same
                # loop made under another mode's probes (they count every call).
                calls = next(r["traced_calls_per_op"] * work["n"] for r in runs
                             if (r["op"], r["hooks"]) == (op, scope)
                             and r["mode"] != "empty")
            n = work["n"]
            added = work["ns_per_op"] - base[op]
            runs.append({
                "method": method,
                "mode": mode, "op": op, "hooks": scope, "repeats": len(works),
                "base_ns_per_op": base[op], "traced_ns_per_op": work["ns_per_op"],
                "traced_ns_per_op_all": [w["ns_per_op"] for w in works],
                "traced_calls_per_op": calls / n,
                "added_ns_per_traced_call": added * n / calls if calls else None,
                "attach_ms": trace["probe"]["attach_ms"],
                "detach_ms": trace["probe"]["detach_ms"],
                "hooks_attached": trace["probe"]["hooks_attached"],
                "floor_ns": trace["probe"]["floor_ns"],
                "timing_windows": trace["options"].get("timing_windows"),
                "timed_share": (sum(h["count"] for h in trace["hooks"]) / sum(h["calls"] for h in trace["hooks"])
                                if sum(h["calls"] for h in trace["hooks"]) else None),
                "provenance": trace["provenance"],
            })
        elif parts[0] == "detachbg":
            t = json.loads(line.split(" ", 1)[1])
            background = {"hooks": t["probe"]["hooks_attached"], "detach_ms": t["probe"]["detach_ms"]}
    return {
        "benchmark": "probe-cost", "kernel": kernel, "commit": commit,
        "date": datetime.date.today().isoformat(),
        "mode": "guest, QEMU TCG -icount shift=0 (virtual ns)",
        "target_ns_per_traced_call": 600,
        "runs": runs, "detach_background": background,
    }


def table(paths):
    print(f"{'kernel':<7} {'method':<12} {'mode':<8} {'loop':<11} {'hooks':<5} {'calls/op':>8} "
          f"{'base ns':>8} {'traced ns':>9} {'ns/call':>8} {'attach ms':>9} {'detach ms':>9}")
    print("(detach ms: --detach wait, the kernel releasing every probe in series)")
    for p in paths:
        d = json.load(open(p))
        for r in d["runs"]:
            print(f"{d['kernel']:<7} {r.get('method', 'fentry/fexit'):<12} {r['mode']:<8} "
                  f"{r['op']:<11} {r['hooks']:<5} "
                  f"{r['traced_calls_per_op']:>8.2f} {r['base_ns_per_op']:>8.0f} "
                  f"{r['traced_ns_per_op']:>9.0f} {r['added_ns_per_traced_call']:>8.0f} "
                  f"{r['attach_ms']:>9.0f} {r['detach_ms']:>9.1f}")
        b = d["detach_background"]
        if b:
            print(f"{d['kernel']:<7} --detach background (default): {b['hooks']} hooks, "
                  f"lsmpmon returned after {b['detach_ms']:.1f} ms")


if __name__ == "__main__":
    if sys.argv[1] == "--table":
        table(sys.argv[2:])
    else:
        print(json.dumps(parse(sys.argv[1], sys.argv[2], sys.argv[3]), indent=1))
