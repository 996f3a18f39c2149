#!/usr/bin/env python3
"""Checks the source tree's layering (run by `make check-deps`, tests/t_deps.sh). A module is a .c file and its .h;
an include of another module's header is an edge. Prints one 'ok'/'not ok' line per check:
- no include circle between modules;
- no circle between the stage folders under user/ (a sample's path goes down the tree);
- flamegraph/ includes nothing from user/;
- user/python/'s readers of CPython (layouts, line tables, code objects) include only user/python/,
  user/util/ and common/: they are fed process memory and fuzzed alone; its stage files
  (process.c: which processes run a CPython; stack.c: mixed stacks) may use proc/ and binary/;
- the sample record's data is decoded only in common/sample.h (no '->data' outside it).
"""
import collections
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else "."
INCLUDE = re.compile(r'\s*#\s*include\s+"([^"]+)"')


def sources(top):
    for d, _, files in os.walk(os.path.join(ROOT, top)):
        for f in sorted(files):
            if f.endswith((".c", ".h")):
                yield os.path.join(d, f)


def module(path, top):
    return os.path.splitext(os.path.relpath(path, os.path.join(ROOT, top)))[0]


def includes(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = INCLUDE.match(line)
            if m:
                yield os.path.splitext(m.group(1))[0]


def find_cycle(graph):
    """One circle of the graph as a list of nodes, or None."""
    state, stack = {}, []

    def visit(u):
        state[u] = 1
        stack.append(u)
        for v in sorted(graph.get(u, ())):
            if state.get(v) == 1:
                return stack[stack.index(v):] + [v]
            if not state.get(v):
                found = visit(v)
                if found:
                    return found
        stack.pop()
        state[u] = 2
        return None

    for u in sorted(graph):
        if not state.get(u):
            found = visit(u)
            if found:
                return found
    return None


def folder(mod):
    return mod.split("/")[0] if "/" in mod else "(user/)"


results = []


def check(ok, what, detail=""):
    results.append(ok)
    print(("ok - " if ok else "not ok - ") + what + (f": {detail}" if detail and not ok else ""))


user_files = list(sources("user"))
mods = {module(p, "user") for p in user_files}
graph = collections.defaultdict(set)
for p in user_files:
    me = module(p, "user")
    for target in includes(p):
        if target in mods and target != me:
            graph[me].add(target)
cycle = find_cycle(graph)
check(cycle is None, "no include circle between modules of user/", " -> ".join(cycle or []))

folders = collections.defaultdict(set)
for a, bs in graph.items():
    for b in bs:
        if folder(a) != folder(b):
            folders[folder(a)].add(folder(b))
cycle = find_cycle(folders)
check(cycle is None, "no circle between the stage folders of user/", " -> ".join(cycle or []))

leaks = [f"{os.path.relpath(p, ROOT)} includes {t}" for p in sources("flamegraph")
         for t in includes(p) if t in mods]
check(not leaks, "flamegraph/ includes nothing from user/", "; ".join(leaks))

PY_STAGE = ("process", "stack")
py_leaks = [f"{os.path.relpath(p, ROOT)} includes {t}" for p in sources("user/python")
            if os.path.splitext(os.path.basename(p))[0] not in PY_STAGE
            for t in includes(p) if t in mods and folder(t) not in ("python", "util")]
check(not py_leaks, "user/python/'s readers include only user/python/, user/util/ and common/",
      "; ".join(py_leaks))

decoders = []
for top in ("user", "tests/tools", "bench"):
    for p in sources(top):
        with open(p, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                if re.search(r"\b(sample|smp|s)->data\b", line):
                    decoders.append(f"{os.path.relpath(p, ROOT)}:{n}")
check(not decoders, "the sample record is decoded only in common/sample.h", ", ".join(decoders))

sys.exit(0 if all(results) else 1)
