#!/usr/bin/env python3
"""Checks hprof's inline chains and source lines against elfutils' eu-addr2line.

usage: inline_compare.py pprof [--symbols PCS] PPROF BINARY REFERENCE [FUNC|FUNC...]
       inline_compare.py tool CHAINS REFERENCE ADDR...
       inline_compare.py stack STACK MAPS BINARY

pprof: every location of PPROF in BINARY's mapping (every pc the run sampled there) has
the Lines eu-addr2line -i -f -C gives on REFERENCE (BINARY itself, or an unstripped copy
with the same addresses) at its pc: the location's address for a leaf, the byte before
it for a return address. Functions, files and lines, innermost first; columns are not
compared. Each FUNC ('|' between them) must be among the inlined functions seen. With
--symbols, the outermost function's name is not compared (hprof names it by its symbol,
which may be a clone's "f.part.0" or an alias), and the pcs go to the file PCS, one a line,
for the tool's check of the whole chain.

tool: CHAINS is tests/tools/inline_chain's output for ADDR..., compared the same way.

stack: STACK is hprof stack's output for a process running BINARY, MAPS its
/proc/PID/maps: each of BINARY's frames, with the "[inlined]" frames printed before it,
has the chain eu-addr2line gives at its pc (frame #0's exact, the others' the byte before
their return address), names and "at file:line"; at least one frame has inlined calls.

Where eu-addr2line's chain differs, binutils' addr2line (on the same file) decides: elfutils
0.188 misses the inline chains of LTO units and, for a few pcs of Debian's libc, names
scopes its own first line contradicts; such pcs are counted apart ("N where binutils'
addr2line does").

Decoded here, with no protobuf library. Prints what it judged; exits 1 on any fault."""
import gzip
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from python_outputs import fields, message, varint  # noqa: E402


def packed(value):
    if isinstance(value, int):
        return [value]
    out, i = [], 0
    while i < len(value):
        v, i = varint(value, i)
        out.append(v)
    return out


def read_profile(path):
    """Locations as (mapping file, address, [(function, file, line)...]) by id, and the
    ids that are some sample's user leaf: its innermost location outside the kernel (the
    interrupted pc, exact, where the others are return addresses)."""
    with open(path, "rb") as f:
        top = list(fields(gzip.decompress(f.read())))
    strings = [v.decode() for n, v in top if n == 6]
    mappings, functions, locations, leaves, samples = {}, {}, {}, set(), []
    for n, v in top:
        if n == 3:
            m = message(v)
            mappings[m.get(1, 0)] = strings[m.get(5, 0)]
        elif n == 5:
            fn = message(v)
            functions[fn.get(1, 0)] = (strings[fn.get(2, 0)], strings[fn.get(4, 0)])
    for n, v in top:
        if n == 4:
            loc = message(v, repeated=(4,))
            lines = []
            for ln in loc.get(4, []):
                ln = message(ln)
                name, file = functions[ln.get(1, 0)]
                lines.append((name, file, ln.get(2, 0)))
            locations[loc.get(1, 0)] = (mappings.get(loc.get(2, 0), ""), loc.get(3, 0), lines)
        elif n == 2:
            ids = []
            for num, val in fields(v):
                if num == 1:
                    ids += packed(val)
            samples.append(ids)
    for ids in samples:
        user = [lid for lid in ids if locations.get(lid, ("",))[0] != "[kernel.kallsyms]"]
        if user:
            leaves.add(user[0])
    return locations, leaves


def addr2line(binary, pcs, tool="eu-addr2line"):
    """eu-addr2line's (or binutils' addr2line's) chain of each pc, innermost first,
    (function, file, line) each."""
    out = subprocess.run([tool, "-a", "-i", "-f", "-C", "-e", binary] +
                         ["0x%x" % pc for pc in pcs], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    chains, cur, i = {}, None, 0
    while i < len(out):
        line = out[i]
        if re.fullmatch(r"0x[0-9a-f]+", line):
            cur = int(line, 16)
            chains[cur] = []
            i += 1
            continue
        if cur is None or not line:
            i += 1
            continue
        name = re.sub(r" inlined at .* in .*$", "", line)
        place = out[i + 1] if i + 1 < len(out) else "??:0"
        m = re.fullmatch(r"(.*?):(\d+)(?::\d+)?(?: \(discriminator \d+\))?", place)
        file, lineno = (m.group(1), int(m.group(2))) if m else ("??", 0)
        chains[cur].append((name, "" if file == "??" else file, lineno))
        i += 2
    return chains


def normal(got, want):
    """Both chains as compared: a frame without a line names no file (pprof's Function then
    has its binary's path); code no DWARF function covers is named by its symbol."""
    got = [(name, file if line else "", line) for name, file, line in got]
    want = [(name, file if line else "", line) for name, file, line in want or []]
    if got and want and got[-1][0] == "??":
        got[-1] = (want[-1][0],) + got[-1][1:]
    return got, want


# pcs where eu-addr2line's chain is not hprof's but binutils' addr2line's is: elfutils
# 0.188's -i walks the DIE that dwarf_getscopes found by its offset again, and misses the
# chains of LTO units; binutils reads the same DWARF as hprof does. Counted apart.
SECOND_OPINION = []


def compare(label, got, want, reference=None, pc=None):
    got, want_n = normal(got, want)
    if got == want_n:
        return True
    if reference and pc is not None:
        binutils = addr2line(reference, [pc], "addr2line").get(pc)
        b_got, b_want = normal([g for g in got], binutils)
        if b_got == b_want:
            SECOND_OPINION.append(pc)
            print("  %s: eu-addr2line %s; binutils' addr2line agrees with hprof %s"
                  % (label, want_n, got))
            return True
    want = want_n
    print("  %s: hprof %s" % (label, got))
    print("  %s: eu-addr2line %s" % (label, want))
    return False


def check_pprof(pprof, binary, reference, funcs, pcs_out=None):
    locations, leaves = read_profile(pprof)
    mine = {lid: loc for lid, loc in locations.items() if loc[0] == binary}
    pcs = {lid: loc[1] if lid in leaves else loc[1] - 1 for lid, loc in mine.items()}
    want = addr2line(reference, sorted(set(pcs.values())))
    if pcs_out:
        with open(pcs_out, "w") as f:
            f.write("".join("0x%x\n" % pc for pc in sorted(set(pcs.values()))))
        for pc, chain in want.items():
            if chain:
                chain[-1] = ("",) + chain[-1][1:]
    good = seen = deep = 0
    inlined = set()
    for lid, (_, addr, lines) in sorted(mine.items()):
        if pcs_out and lines:
            lines = lines[:-1] + [("",) + lines[-1][1:]]
        seen += 1
        deep += len(lines) > 1
        inlined.update(name for name, _, _ in lines[:-1])
        good += compare("0x%x (pc 0x%x)" % (addr, pcs[lid]), lines, want.get(pcs[lid]),
                        reference, pcs[lid])
    print("# %d of %d sampled pcs of %s as eu-addr2line says (%d where binutils' "
          "addr2line does and eu-addr2line not), %d with inline frames; inlined: %s"
          % (good, seen, os.path.basename(binary), len(SECOND_OPINION), deep,
             ", ".join(sorted(inlined))))
    missing = [f for f in funcs if f not in inlined]
    if missing:
        print("  inlined functions not seen: %s" % ", ".join(missing))
    return seen > 0 and deep > 0 and good == seen and not missing


def check_tool(chains, reference, addrs):
    pcs = [int(a, 0) for a in addrs]
    want = addr2line(reference, pcs)
    with open(chains) as f:
        blocks = f.read().split("\n\n")
    good = 0
    for pc, block in zip(pcs, blocks):
        got = []
        for line in block.strip("\n").split("\n"):
            name, place = line.split("\t")
            file, _, lineno = place.rpartition(":")
            got.append((name, "" if file == "??" else file, int(lineno)))
        good += compare("0x%x" % pc, got, want.get(pc), reference, pc)
    print("# %d of %d pcs as eu-addr2line says (%d where binutils' addr2line does "
          "and eu-addr2line not)" % (good, len(pcs), len(SECOND_OPINION)))
    return len(pcs) > 0 and good == len(pcs)


def check_stack(stack, maps, binary):
    base = None
    for line in open(maps):
        parts = line.split()
        if len(parts) >= 6 and parts[5] == binary and int(parts[2], 16) == 0:
            base = int(parts[0].split("-")[0], 16)
    frames, pending, good, deep = [], [], 0, 0
    for line in open(stack):
        m = re.match(r"#(\d+)\s+(\[inlined\]|0x[0-9a-f]+)\s+(.*?) \((\S+)\)(?: at (.*):(\d+))?$", line)
        if not m:
            continue
        name, place = m.group(3), (m.group(5) or "", int(m.group(6) or 0))
        if m.group(2) == "[inlined]":
            pending.append((name,) + place)
            continue
        if m.group(4) == os.path.basename(binary):
            pc = int(m.group(2), 16) - base - (0 if m.group(1) == "0" else 1)
            frames.append((pc, pending + [(name,) + place]))
        pending = []
    want = addr2line(binary, [pc for pc, _ in frames]) if frames and base is not None else {}
    for pc, chain in frames:
        deep += len(chain) > 1
        good += compare("0x%x" % pc, chain, want.get(pc))
    print("# %d of %d frames of %s as eu-addr2line says, %d with inlined calls" %
          (good, len(frames), os.path.basename(binary), deep))
    return frames and good == len(frames) and deep > 0


def main():
    if len(sys.argv) >= 7 and sys.argv[1:3] == ["pprof", "--symbols"]:
        funcs = [f for arg in sys.argv[7:] for f in arg.split("|") if f]
        return 0 if check_pprof(sys.argv[4], sys.argv[5], sys.argv[6], funcs, sys.argv[3]) else 1
    if len(sys.argv) >= 5 and sys.argv[1] == "pprof":
        funcs = [f for arg in sys.argv[5:] for f in arg.split("|") if f]
        return 0 if check_pprof(sys.argv[2], sys.argv[3], sys.argv[4], funcs) else 1
    if len(sys.argv) >= 4 and sys.argv[1] == "tool":
        return 0 if check_tool(sys.argv[2], sys.argv[3], sys.argv[4:]) else 1
    if len(sys.argv) == 5 and sys.argv[1] == "stack":
        return 0 if check_stack(sys.argv[2], sys.argv[3], sys.argv[4]) else 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
