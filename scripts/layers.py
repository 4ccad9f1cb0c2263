#!/usr/bin/env python3
"""The import graph of lsmpmon's source files, checked against its layers.

Reads every `use` line and every inline `crate::`/`super::`/`self::` path of
src/**/*.rs, resolves each to the file that defines the module it names, and
prints the graph between top-level modules with each one's layer. Exits 1 if
any import points up a layer or any cycle exists (between files or between
top-level modules); `--dot` prints the module graph in Graphviz form instead.

    scripts/layers.py            # check; the graph as text (docs/layers.txt)
    scripts/layers.py --dot      # the same graph for `dot -Tsvg`
"""
import os
import re
import sys

ROOT = os.environ.get("LAYERS_SRC") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")

# Bottom to top: each layer may import only its own and the ones before it.
LAYERS = [
    ("base", ["base"]),
    ("model", ["model"]),
    ("engines", ["vm", "trace", "bench", "mac", "serve", "top"]),
    ("lab", ["lab"]),
    ("report", ["report"]),
    ("cli", ["cli"]),
]
LAYER_OF = {m: i for i, (_, mods) in enumerate(LAYERS) for m in mods}

# A path in code; one that opens a `{…}` group is a `use`, read by USE_RE.
PATH_RE = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)(?![A-Za-z0-9_]|::[{A-Za-z_])")
USE_RE = re.compile(r"\buse\s+([^;]+);", re.S)


def module_files():
    """{module path tuple: file} for every source file under src/."""
    files = {}
    for dirpath, _, names in os.walk(ROOT):
        for name in names:
            if not name.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, name), ROOT)
            parts = rel[:-3].split(os.sep)
            if parts[-1] in ("mod", "lib", "main"):
                parts = parts[:-1]
            if rel == "main.rs":
                continue  # the binary: it imports the library by name
            files[tuple(parts)] = rel
    return files


# One pass, left to right: a string (its escapes include a backslash before
# a newline), a char literal, a line or a block comment, whichever starts
# first — so "http://…" is no comment and `'"'` opens no string.
TOKEN_RE = re.compile(
    r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\\n])\'|//[^\n]*|/\*.*?\*/', re.S
)


def strip_comments(text):
    return TOKEN_RE.sub(lambda m: '""' if m.group(0)[0] in "\"'" else "", text)


def expand_use(tree):
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e]."""
    tree = re.sub(r"\s+as\s+[A-Za-z_][A-Za-z0-9_]*", "", tree)
    tree = re.sub(r"\s+", "", tree)
    out = []

    def walk(prefix, s):
        i = s.find("{")
        if i < 0:
            out.append(prefix + s)
            return
        head, body = s[:i], s[i + 1 : s.rindex("}")]
        depth, start = 0, 0
        for j, ch in enumerate(body + ","):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                part = body[start:j]
                if part:
                    walk(prefix + head, part)
                start = j + 1

    walk("", tree)
    return out


def resolve(mod, path, files, depth=0):
    """The file a path names, from module `mod`, or None (an outside crate)."""
    parts = path.split("::")
    if parts[0] == "crate":
        base, rest = [], parts[1:]
    elif parts[0] == "super":
        base, rest = list(mod), parts
        while rest and rest[0] == "super":
            base, rest = base[:-1], rest[1:]
    elif parts[0] == "self":
        base, rest = list(mod), parts[1:]
    else:
        return None
    rest = [p for p in rest if p not in ("*", "self")]
    for n in range(len(rest), -1, -1):
        key = tuple(base + rest[:n])
        if key in files:
            # An item the module only re-exports (`pub use child::Item`) is
            # imported from where it is defined.
            again = REEXPORTS.get(files[key], {}).get(rest[n]) if n < len(rest) else None
            if again and depth < 8:
                return resolve(key, again, files, depth + 1) or files[key]
            return files[key]
    return None


REEXPORTS = {}


def reexports(files):
    """{file: {name: path}} for every `pub use path::Name;` of each file."""
    for mod, rel in files.items():
        with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
            text = strip_comments(f.read())
        names = {}
        for m in re.finditer(r"\bpub(?:\([a-z]+\))?\s+use\s+([^;]+);", text):
            for p in expand_use(m.group(1)):
                if not p.startswith(("crate::", "super::", "self::")):
                    p = "self::" + p
                names[p.rsplit("::", 1)[-1]] = p
        REEXPORTS[rel] = names


def edges(files):
    found = set()
    for mod, rel in files.items():
        with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
            text = strip_comments(f.read())
        # `mod tests { use super::*; }` lives in the same file: a self-edge.
        spans = inline_modules(text)
        paths = []
        for m in USE_RE.finditer(text):
            paths += [(m.start(), p) for p in expand_use(m.group(1)) if "::" in p]
        paths += [(m.start(), m.group(1) + m.group(2)) for m in PATH_RE.finditer(text)]
        # A bare `child::item` names a module this file declares (`mod child;`).
        for child in re.findall(r"\bmod\s+([A-Za-z_][A-Za-z0-9_]*)\s*;", text):
            bare = re.compile(r"(?<![A-Za-z0-9_:])" + child + r"((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
            paths += [(m.start(), "self::" + child + m.group(1)) for m in bare.finditer(text)]
        for pos, p in paths:
            inner = [name for (a, b, name) in spans if a <= pos < b]
            target = resolve(mod + tuple(inner), p, files)
            # The crate root holds only `mod` lines and exported macros (`say!`).
            if target and target != rel and target != "lib.rs":
                found.add((rel, target))
    return found


def inline_modules(text):
    """(start, end, name) of each `mod name { … }` block, outermost first."""
    spans = []
    for m in re.finditer(r"\bmod\s+([A-Za-z_][A-Za-z0-9_]*)\s*\{", text):
        depth, i = 0, m.end() - 1
        while i < len(text):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            if depth == 0:
                break
            i += 1
        spans.append((m.start(), i, m.group(1)))
    return spans


def top(rel):
    first = rel.split(os.sep)[0]
    return first[:-3] if first.endswith(".rs") else first


def cycles(nodes, adj):
    """Strongly connected components with more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in adj.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def main():
    files = module_files()
    reexports(files)
    file_edges = edges(files)
    problems = []
    unknown = sorted({top(r) for r in files.values()} - set(LAYER_OF) - {"lib"})
    for m in unknown:
        problems.append(f"module {m} is in no layer (add it to LAYERS)")

    mod_edges = {}
    for a, b in sorted(file_edges):
        ta, tb = top(a), top(b)
        if ta != tb and ta != "lib":
            mod_edges.setdefault((ta, tb), []).append((a, b))
    for (ta, tb), pairs in sorted(mod_edges.items()):
        if LAYER_OF.get(tb, -1) > LAYER_OF.get(ta, 99):
            for a, b in pairs:
                problems.append(f"upward import: {a} -> {b} ({ta} is below {tb})")

    file_adj = {}
    for a, b in file_edges:
        file_adj.setdefault(a, []).append(b)
    for comp in cycles(files.values(), file_adj):
        problems.append("file cycle: " + " <-> ".join(comp))
    mod_adj = {}
    for ta, tb in mod_edges:
        mod_adj.setdefault(ta, []).append(tb)
    for comp in cycles({top(r) for r in files.values()}, mod_adj):
        problems.append("module cycle: " + " <-> ".join(comp))

    if "--dot" in sys.argv:
        print("digraph lsmpmon {\n  rankdir=BT;")
        for i, (name, mods) in enumerate(LAYERS):
            print(f'  subgraph cluster_{i} {{ label="{name}"; ' + " ".join(mods) + "; }")
        for ta, tb in sorted(mod_edges):
            print(f"  {ta} -> {tb};")
        print("}")
    else:
        print(f"# lsmpmon's import graph (scripts/layers.py): {len(files)} files, "
              f"{len(mod_edges)} module edges")
        for i, (name, mods) in reversed(list(enumerate(LAYERS))):
            print(f"\nlayer {i} {name}")
            for m in mods:
                deps = sorted(tb for (ta, tb) in mod_edges if ta == m)
                n = sum(1 for r in files.values() if top(r) == m)
                print(f"  {m:<8} ({n} files) -> {', '.join(deps) if deps else '-'}")
        print(f"\ncycles: {sum(1 for p in problems if 'cycle' in p)}, "
              f"upward imports: {sum(1 for p in problems if 'upward' in p)}")
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
