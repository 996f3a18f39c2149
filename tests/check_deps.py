#!/usr/bin/env python3
"""Checks that the files of a stage folder under user/ depend on each other one way only.

usage: check_deps.py [--build DIR] [--public HEADER]... FOLDER...

For each FOLDER (e.g. user/cfi) it builds two graphs over the folder's files, a node per
stem (x.c and x.h are one node), and fails on a circle in either:
  - includes: x.c or x.h includes "folder/y.h" (or "y.h") of the same folder;
  - calls: x.o leaves a symbol undefined (nm) that y.o of the same folder defines, from the
    objects of the normal build (DIR/obj/FOLDER/*.o, DIR defaults to build).
With --public, files outside the folder (user/, tests/, bench/) may include only the named
headers of it. Prints each graph as "x -> y, z" lines. Exit status 1 on any violation.
"""
import argparse
import os
import re
import subprocess
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SCANNED = ("user", "tests", "bench")


def stem(path):
    return os.path.splitext(os.path.basename(path))[0]


def folder_files(folder):
    return sorted(os.path.join(folder, f) for f in os.listdir(folder)
                  if f.endswith((".c", ".h")))


def includes(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return INCLUDE.findall(f.read())


def include_graph(folder):
    """Edges between stems of folder: "cfi/x.h" from anywhere, "x.h" from inside."""
    short = os.path.relpath(folder, "user")  # "cfi": how user/ files name it
    names = {os.path.basename(p) for p in folder_files(folder)}
    graph = {}
    for path in folder_files(folder):
        edges = graph.setdefault(stem(path), set())
        for inc in includes(path):
            head, base = os.path.split(inc)
            if base in names and head in (short, ""):
                if stem(base) != stem(path):
                    edges.add(stem(base))
    return graph


def nm_symbols(obj, undefined):
    args = ["nm", "--undefined-only" if undefined else "--defined-only", obj]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    syms = set()
    for line in out.splitlines():
        parts = line.split()
        # defined: "ADDR T name"; only global definitions can be called from elsewhere
        if undefined and len(parts) == 2:
            syms.add(parts[1])
        elif not undefined and len(parts) == 3 and parts[1].isupper():
            syms.add(parts[2])
    return syms


def call_graph(folder, build):
    objdir = os.path.join(build, "obj", folder)
    objs = {stem(p): os.path.join(objdir, stem(p) + ".o")
            for p in folder_files(folder) if p.endswith(".c")}
    missing = [o for o in objs.values() if not os.path.exists(o)]
    if missing:
        sys.exit("check_deps: no object %s (run make first)" % missing[0])
    defined_in = {}
    for name, obj in objs.items():
        for sym in nm_symbols(obj, undefined=False):
            defined_in[sym] = name
    graph = {}
    for name, obj in objs.items():
        edges = graph.setdefault(name, set())
        for sym in nm_symbols(obj, undefined=True):
            if sym in defined_in and defined_in[sym] != name:
                edges.add(defined_in[sym])
    return graph


def find_circle(graph):
    """A list of nodes forming a circle, or None."""
    state = {}  # node -> 1 while on the DFS path, 2 when done
    path = []

    def visit(node):
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def outside_includes(folder, public):
    """(file, header) pairs where a file outside folder includes a non-public header of it."""
    short = os.path.relpath(folder, "user")
    names = {os.path.basename(p) for p in folder_files(folder) if p.endswith(".h")}
    allowed = {os.path.basename(p) for p in public}
    bad = []
    for top in SCANNED:
        for root, _, files in os.walk(top):
            if os.path.abspath(root) == os.path.abspath(folder):
                continue
            for f in files:
                if not f.endswith((".c", ".h", ".cc")):
                    continue
                path = os.path.join(root, f)
                for inc in includes(path):
                    head, base = os.path.split(inc)
                    if head == short and base in names and base not in allowed:
                        bad.append((path, inc))
    return bad


def print_graph(title, graph):
    print(title)
    for node in sorted(graph):
        print("  %s -> %s" % (node, ", ".join(sorted(graph[node])) or "(nothing)"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--public", action="append", default=[])
    ap.add_argument("folders", nargs="+")
    args = ap.parse_args()
    failed = False
    for folder in args.folders:
        folder = os.path.normpath(folder)
        for kind, graph in (("includes", include_graph(folder)),
                            ("calls", call_graph(folder, args.build))):
            print_graph("%s %s:" % (folder, kind), graph)
            circle = find_circle(graph)
            if circle:
                print("%s: %s circle: %s" % (folder, kind, " -> ".join(circle)))
                failed = True
        public = [p for p in args.public if os.path.dirname(os.path.normpath(p)) == folder]
        if public:
            for path, inc in outside_includes(folder, public):
                print('%s: includes "%s", internal to %s' % (path, inc, folder))
                failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
