#!/usr/bin/env python3
"""Checks the Python frames of hprof's outputs for tests/workloads/python/chain.py.

usage: python_outputs.py pprof PPROF WORKLOAD
       python_outputs.py svg SVG

pprof: every location of a function of the workload ("chain.*") is in the mapping
"[python]" without an address, with one line; its function names the workload's file and
starts on the line of its def (or its lambda); its line is at or after that one, and each
of chain.spin's lines lies in its body (after its def, before the next def), on at least
two lines. Decoded here, with no protobuf library: the test needs none.

svg: every frame named "chain.*" is drawn green (the interpreted family), chain.spin's
tooltip names the workload's file, and native frames are not green.

Prints what it judged; exits 1 on any fault."""
import gzip
import os
import re
import sys


def varint(buf, i):
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, i


def fields(buf):
    """(field number, value) of a message: ints for varints, bytes for the rest."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            value, i = varint(buf, i)
        elif wire == 2:
            n, i = varint(buf, i)
            value, i = buf[i:i + n], i + n
        elif wire == 1:
            value, i = int.from_bytes(buf[i:i + 8], "little"), i + 8
        elif wire == 5:
            value, i = int.from_bytes(buf[i:i + 4], "little"), i + 4
        else:
            raise ValueError("wire type %d" % wire)
        yield num, value


def message(buf, repeated=()):
    out = {}
    for num, value in fields(buf):
        if num in repeated:
            out.setdefault(num, []).append(value)
        else:
            out[num] = value
    return out


def read_pprof(path):
    with open(path, "rb") as f:
        top = list(fields(gzip.decompress(f.read())))
    strings = [v.decode() for n, v in top if n == 6]
    mappings = {}
    for n, v in top:
        if n == 3:
            m = message(v)
            mappings[m.get(1, 0)] = strings[m.get(5, 0)]
    functions = {}
    for n, v in top:
        if n == 5:
            fn = message(v)
            functions[fn.get(1, 0)] = (strings[fn.get(2, 0)], strings[fn.get(4, 0)],
                                       fn.get(5, 0))
    locations = []
    for n, v in top:
        if n == 4:
            loc = message(v, repeated=(4,))
            lines = [message(ln) for ln in loc.get(4, [])]
            locations.append((mappings.get(loc.get(2, 0), ""), loc.get(3, 0),
                              [(functions[ln.get(1, 0)], ln.get(2, 0)) for ln in lines]))
    return locations


def def_lines(workload):
    """Each top-level function's def line, and the line of the next def (or the end)."""
    with open(workload) as f:
        src = f.read().split("\n")
    starts = [i + 1 for i, line in enumerate(src) if re.match(r"(def |@)", line)]
    bounds = {}
    for k, start in enumerate(starts):
        m = re.match(r"def (\w+)", src[start - 1])
        if m:
            bounds[m.group(1)] = (start, starts[k + 1] if k + 1 < len(starts) else len(src))
    return bounds


def check_pprof(path, workload):
    faults = []
    bounds = def_lines(workload)
    spin_lines = set()
    judged = 0
    real = os.path.realpath(workload)
    for mapping, address, lines in read_pprof(path):
        names = [fn[0] for fn, _ in lines]
        if not any(n.startswith("chain.") for n in names):
            continue
        judged += 1
        if mapping != "[python]" or address != 0 or len(lines) != 1:
            faults.append("location of %s: mapping %r, address %#x, %d lines"
                          % (names, mapping, address, len(lines)))
            continue
        (name, filename, start), line = lines[0]
        if os.path.realpath(filename) != real:
            faults.append("%s: file %s" % (name, filename))
        if not start or line < start:
            faults.append("%s: line %d before its start %d" % (name, line, start))
        if name == "chain.spin":
            spin_lines.add(line)
            first, end = bounds["spin"]
            if start != first or not first < line < end:
                faults.append("chain.spin: line %d, start %d: not in its body (%d, %d)"
                              % (line, start, first, end))
    if len(spin_lines) < 2:
        faults.append("chain.spin on %d lines, not apart" % len(spin_lines))
    print("pprof: %d locations of chain.*, chain.spin on lines %s"
          % (judged, sorted(spin_lines)))
    return faults


FRAME = re.compile(r'<title>([^<]*?) \(([^<]*)\)</title><rect [^>]*fill="rgb\((\d+),(\d+),(\d+)\)"')


def check_svg(path):
    faults = []
    with open(path) as f:
        svg = f.read()
    python = native = 0
    spin_files = set()
    for name, tip, r, g, b in FRAME.findall(svg):
        green = int(g) >= 180 and int(r) <= 110 and int(b) <= 160
        if name.startswith("chain."):
            python += 1
            if not green:
                faults.append("%s drawn rgb(%s,%s,%s)" % (name, r, g, b))
            if name == "chain.spin":
                spin_files.update(re.findall(r", ([^,]*chain\.py)(?::\d+)?$", tip))
        elif name.startswith("_PyEval") or name.endswith("_[k]"):
            native += 1
            if green:
                faults.append("native %s drawn green" % name)
    if not python or not native:
        faults.append("%d Python frames, %d native ones" % (python, native))
    if not spin_files:
        faults.append("no chain.spin tooltip names chain.py")
    print("svg: %d Python frames green, %d native ones not; chain.spin in %s"
          % (python, native, sorted(spin_files)))
    return faults


def main():
    faults = check_pprof(sys.argv[2], sys.argv[3]) if sys.argv[1] == "pprof" else \
        check_svg(sys.argv[2])
    for fault in faults[:10]:
        print("  " + fault)
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main())
