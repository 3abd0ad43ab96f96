#!/usr/bin/env python3
"""Lists the pairs of sibling modules of src/ that import each other (a cycle in the
layout's arrows): for every `crate::…` or `super::…` path in a file, both ends are
lifted to the children of their nearest common module, so `serve::cdx` naming
`serve::wayback::x` is an arrow cdx → wayback, and `index::columns::sketches` naming
`shard::read` is an arrow index → shard. A module and its own submodules are not
siblings (a parent re-exporting its children, or a child using its parent's items, is
no cycle). Doc comments and `#[cfg(test)]` modules are ignored.

usage: python3 tools/module_cycles.py [SRC_DIR]     exit 1 when any pair exists
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
    for a, b in pairs:
        name = lambda m: "::".join(m)
        print(f"{name(a)} <-> {name(b)}")
        for d in ((a, b), (b, a)):
            for x, y in sorted(arrows[d])[:4]:
                print(f"    {x} -> {y}")
    print(f"module_cycles: {len(known)} modules, {len(pairs)} pairs importing each other",
          file=sys.stderr)
    sys.exit(1 if pairs else 0)


if __name__ == "__main__":
    main()
