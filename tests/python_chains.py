#!/usr/bin/env python3
"""Checks the Python frames of a folded profile of tests/workloads/python/chain.py against
the chains the program recorded itself.

usage: python_chains.py FOLDED CHAINS COMM

Every stack of COMM that holds a leaf (chain.spin, chain.hash_loop) must hold, from its
outermost Python frame (chain.<module> or threading.Thread._bootstrap) to its innermost
leaf, exactly one of the recorded chains, with no other frame between; every recorded
chain must be seen. Prints "judged N wrong N unseen N" and the first few wrong stacks;
exits 1 on any wrong or unseen chain."""
import sys

LEAVES = ("chain.spin", "chain.hash_loop")
# before 3.11 code objects have no qualname: threading._bootstrap
ROOTS = ("chain.<module>", "threading.Thread._bootstrap", "threading._bootstrap")


def main():
    folded, chains_path, comm = sys.argv[1:4]
    with open(chains_path) as f:
        chains = {line.strip() for line in f if line.strip()}
    judged = wrong = 0
    seen = set()
    bad = []
    with open(folded) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            frames = stack.split(";")
            if frames[0] != comm:
                continue
            leaf = max((i for i, fr in enumerate(frames) if fr in LEAVES), default=-1)
            if leaf < 0:
                continue
            root = next((i for i, fr in enumerate(frames) if fr in ROOTS), -1)
            judged += int(count)
            chain = ";".join(frames[root:leaf + 1]) if 0 <= root <= leaf else ""
            if chain in chains:
                seen.add(chain)
            else:
                wrong += int(count)
                bad.append(line.strip())
    unseen = chains - seen
    print("judged %d wrong %d unseen %d" % (judged, wrong, len(unseen)))
    for line in bad[:5]:
        print("wrong: " + line[:600])
    for chain in sorted(unseen)[:5]:
        print("unseen: " + chain)
    sys.exit(1 if wrong or unseen or judged == 0 else 0)


main()
