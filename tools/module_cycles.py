#!/usr/bin/env python3
"""Lists the circles in the layout's arrows between sibling modules of src/: pairs that
import each other, and longer circles (a → b → c → a). For every `crate::…` or
`super::…` path in a file, both ends are lifted to the children of their nearest common
module, so `serve::cdx` naming `serve::wayback::x` is an arrow cdx → wayback, and
`index::columns::sketches` naming `shard::read` is an arrow index → shard. A module and
its own submodules are not siblings (a parent re-exporting its children, or a child
using its parent's items, is no circle). Doc comments and `#[cfg(test)]` modules are
ignored.

usage: python3 tools/module_cycles.py [SRC_DIR]     exit 1 when any circle exists
"""
import os
import re
import sys


def modules(src):
    """Module path (tuple) -> file, for every .rs file under src (lib.rs is the root)."""
    out = {}
    for root, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(root, f), src)[:-3].split(os.sep)
            if rel[-1] == "mod":
                rel = rel[:-1]
            if rel in (["lib"], ["main"]):
                rel = []
            out[tuple(rel)] = os.path.join(root, f)
    return out


def code_of(path):
    text = open(path, encoding="utf-8").read()
    # Tests may reach anywhere; comments say anything.
    cut = re.search(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", text)
    if cut:
        text = text[: cut.start()]
    text = re.sub(r"//[^\n]*", "", text)
    return text


PATH = re.compile(r"\b((?:crate|super)(?:::(?:\{[^}]*\}|\w+))+)")


def targets(mod, text, known):
    """Module paths that `mod`'s code names."""
    found = set()
    for m in PATH.finditer(text):
        parts = m.group(1).split("::")
        groups = [parts]
        # `crate::a::{b, c::d}`: each alternative of a brace group.
        if "{" in m.group(1):
            head, _, body = m.group(1).partition("{")
            head = [p for p in head.split("::") if p]
            groups = [head + [p for p in alt.strip().split("::") if p]
                      for alt in body.rstrip("}").split(",") if alt.strip()]
        for g in groups:
            if g[0] == "crate":
                base, rest = [], g[1:]
            else:
                base = list(mod)
                rest = g
                while rest and rest[0] == "super":
                    base = base[:-1]
                    rest = rest[1:]
            path = base + [p for p in rest if re.fullmatch(r"\w+", p)]
            # The longest prefix that is a module.
            while path and tuple(path) not in known:
                path = path[:-1]
            found.add(tuple(path))
    return found


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "src"
    known = modules(src)
    arrows = {}
    for mod, path in known.items():
        for t in targets(mod, code_of(path), known):
            k = 0
            while k < min(len(mod), len(t)) and mod[k] == t[k]:
                k += 1
            if k == len(mod) or k == len(t):
                continue  # one is the other's ancestor
            a, b = mod[: k + 1], t[: k + 1]
            arrows.setdefault((a, b), set()).add(("::".join(mod), "::".join(t)))
    pairs = sorted({tuple(sorted(p)) for p in arrows if (p[1], p[0]) in arrows})
    name = lambda m: "::".join(m)
    for a, b in pairs:
        print(f"{name(a)} <-> {name(b)}")
        for d in ((a, b), (b, a)):
            for x, y in sorted(arrows[d])[:4]:
                print(f"    {x} -> {y}")
    # Longer circles: the strongly connected components of more than two modules, and
    # those of two whose modules are not a pair above (none: a circle of two is a pair).
    circles = [c for c in components(arrows) if len(c) > 2]
    for c in circles:
        print(" -> ".join(name(m) for m in c) + f" -> {name(c[0])}")
        for a, b in zip(c, c[1:] + c[:1]):
            for x, y in sorted(arrows.get((a, b), ()))[:2]:
                print(f"    {x} -> {y}")
    print(f"module_cycles: {len(known)} modules, {len(pairs)} pairs importing each other, "
          f"{len(circles)} longer circles", file=sys.stderr)
    sys.exit(1 if pairs or circles else 0)


def components(arrows):
    """The strongly connected components of the arrows' graph, each as one circle
    through all its modules when one exists (else in a path order), smallest first."""
    succ = {}
    for a, b in arrows:
        succ.setdefault(a, set()).add(b)
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(succ.get(v, ())):
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
                out.append(order(comp, succ))

    for v in sorted(succ):
        if v not in index:
            visit(v)
    return sorted(out, key=len)


def order(comp, succ):
    """A circle through the component's modules, following the arrows (depth first)."""
    members = set(comp)
    start = min(comp)
    path = [start]

    def walk():
        if len(path) == len(members):
            return start in succ.get(path[-1], ())
        for w in sorted(succ.get(path[-1], ()) & members):
            if w not in path:
                path.append(w)
                if walk():
                    return True
                path.pop()
        return False

    return path if len(members) <= 12 and walk() else sorted(comp)


if __name__ == "__main__":
    main()
