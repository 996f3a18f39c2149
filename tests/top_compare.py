#!/usr/bin/env python3
"""Reads hprof's --top table and checks it (tests/t_top.sh).

Usage:
  top_compare.py check TABLE N      the header, N rows (fewer when the profile has fewer
                                    functions), rows sorted by self samples then name then
                                    module, inclusive >= self, shares = samples / total
  top_compare.py pprof TABLE TOP    every row's self and inclusive share against
                                    `go tool pprof -top -sample_index=samples` (flat%, cum%),
                                    an inlined function's "f_[i]" as pprof's "f (inline)"
  top_compare.py diff TABLE JSON    every row's shares against `hprof diff --json`'s
                                    new_self_percent and new_inclusive_percent
  top_compare.py share TABLE NAME   prints NAME's "self incl" percentages
TABLE may hold lines before the table (the profiled command's own output) and after it
(hprof's summary, when the table went to stderr). Shares agree
when they differ by at most 0.01 points. Prints a "# ..." line per disagreement and exits 1
when there is any.
"""
import json
import re
import sys

TOLERANCE = 0.01 + 1e-9
HEADER = re.compile(r"^top (\d+) of (\d+) functions by self samples, of (\d+) samples$")


def parse_table(path):
    lines = open(path).read().splitlines()
    start = next((i for i, l in enumerate(lines) if HEADER.match(l)), None)
    if start is None or start + 1 >= len(lines):
        sys.exit(f"# {path}: no table header")
    shown, functions, total = (int(g) for g in HEADER.match(lines[start]).groups())
    columns = lines[start + 1]
    if columns.split() != ["self", "incl", "samples", "module", "function"]:
        sys.exit(f"# {path}: column header is {columns!r}")
    # by the header's columns: a module ("name +2") or a function may hold blanks
    at_module, at_function = columns.index("module"), columns.index("function")
    rows = []
    for line in lines[start + 2:]:
        if not re.match(r"^ *[0-9.]+% ", line):
            break
        self_pct, incl_pct, samples = line[:at_module].split()
        rows.append({
            "self_pct": float(self_pct.rstrip("%")),
            "incl_pct": float(incl_pct.rstrip("%")),
            "samples": int(samples),
            "module": line[at_module:at_function].rstrip(),
            "function": line[at_function:],
        })
    return {"shown": shown, "functions": functions, "total": total, "rows": rows}


def check(table, want, problems):
    rows = table["rows"]
    if table["shown"] != len(rows) or len(rows) != min(want, table["functions"]):
        problems.append(f"{len(rows)} rows, header says {table['shown']} of "
                        f"{table['functions']}, asked for {want}")
    keys = [(-r["samples"], r["function"], r["module"]) for r in rows]
    if keys != sorted(keys):
        problems.append("rows not sorted by self samples, then name, then module")
    for r in rows:
        if r["incl_pct"] < r["self_pct"]:
            problems.append(f"{r['function']}: inclusive {r['incl_pct']} < self {r['self_pct']}")
        share = 100.0 * r["samples"] / table["total"]
        if abs(share - r["self_pct"]) > 0.005 + 1e-9:
            problems.append(f"{r['function']}: self {r['self_pct']}% is not "
                            f"{r['samples']}/{table['total']}")


def pprof_top(path):
    """flat%, cum% and inline label ("", "(inline)", "(partial-inline)") by function name
    from go tool pprof -top."""
    shares = {}
    row = re.compile(r"^\s*\S+\s+([0-9.]+)%\s+[0-9.]+%\s+\S+\s+([0-9.]+)%\s+(.*?)"
                     r"(?: (\((?:partial-)?inline\)))?$")
    for line in open(path):
        m = row.match(line.rstrip("\n"))
        if m:
            shares[m.group(3)] = (float(m.group(1)), float(m.group(2)), m.group(4) or "")
    return shares


def diff_shares(path):
    data = json.load(open(path))
    return {f["function"]: (f["new_self_percent"], f["new_inclusive_percent"])
            for f in data["functions"]}


def compare(table, theirs, what, problems):
    compared = 0
    for r in table["rows"]:
        name = r["function"]
        label = ""
        # an inlined function, counted as itself wherever it was inlined: "f_[i]" here,
        # "f (inline)" in go tool pprof -top
        if what == "pprof -top" and name.endswith("_[i]"):
            name, label = name[:-4], "(inline)"
        if name not in theirs:
            problems.append(f"{name} {label}: not in {what}")
            continue
        self_pct, incl_pct = theirs[name][:2]
        if what == "pprof -top" and theirs[name][2] != label:
            # pprof -top makes one node of a name, its label from the calls into it: a
            # function both inlined somewhere and called out of line elsewhere (here "f_[i]"
            # and "f", two rows) is one "f (partial-inline)" there, its shares the union's
            print(f"# {r['function']}: pprof -top counts its inlined and out-of-line calls "
                  f"as one node ({name} {theirs[name][2] or '(out of line)'}): not compared")
            continue
        compared += 1
        if abs(self_pct - r["self_pct"]) > TOLERANCE or abs(incl_pct - r["incl_pct"]) > TOLERANCE:
            problems.append(f"{name} {label}: self {r['self_pct']}% incl {r['incl_pct']}% here, "
                            f"{self_pct}% and {incl_pct}% in {what}")
    if compared == 0:
        problems.append(f"no row compared with {what}")


def main():
    mode, path = sys.argv[1], sys.argv[2]
    table = parse_table(path)
    problems = []
    if mode == "check":
        check(table, int(sys.argv[3]), problems)
    elif mode == "pprof":
        compare(table, pprof_top(sys.argv[3]), "pprof -top", problems)
    elif mode == "diff":
        compare(table, diff_shares(sys.argv[3]), "hprof diff", problems)
    elif mode == "share":
        row = next((r for r in table["rows"] if r["function"] == sys.argv[3]), None)
        if not row:
            sys.exit(f"# {sys.argv[3]}: not in the table")
        print(f"{row['self_pct']:.2f} {row['incl_pct']:.2f}")
    else:
        sys.exit(f"# unknown mode {mode}")
    for p in problems:
        print(f"# {p}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
