#!/usr/bin/env python3
"""Checks the Python frames of a folded profile of tests/workloads/python/churn.py: every
frame of its own modules (churn.*, <gen>.*) is one it made, its recursion goes
rec_a -> rec_b -> rec_c -> rec_a ..., and each <gen>.inner_N is called by <gen>.outer_N of
the same N. A frame whose code object was freed before hprof read it is shown as
[python: code unreadable]: it names nothing, so the frame under it is not judged by it.

usage: python_churn.py FOLDED NAMES COMM

Prints "samples N with Python frames N judged-frames N wrong N" and the first few wrong
stacks; exits 1 on any wrong stack, or when no sample had a frame of the program."""
import re
import sys

NEXT = {"churn.rec_a": "churn.rec_b", "churn.rec_b": "churn.rec_c", "churn.rec_c": "churn.rec_a"}
GEN = re.compile(r"^<gen>\.(outer|inner)_(\d+)$")
UNREADABLE = "[python: code unreadable]"


def wrong_in(frames, names):
    """Why the stack (outermost first) is wrong, or None."""
    for i, fr in enumerate(frames):
        if not (fr.startswith("churn.") or fr.startswith("<gen>.")):
            continue
        if fr not in names:
            return "unknown frame " + fr
        prev = frames[i - 1] if i > 0 else ""
        # a caller whose code was freed before it was read is shown as unknown: no claim
        if prev == UNREADABLE:
            continue
        if fr in NEXT and prev in NEXT and NEXT[prev] != fr:
            return "%s under %s" % (fr, prev)
        m = GEN.match(fr)
        if m and m.group(1) == "inner" and prev != "<gen>.outer_" + m.group(2):
            return "%s under %s" % (fr, prev)
    return None


def main():
    folded, names_path, comm = sys.argv[1:4]
    with open(names_path) as f:
        names = {line.strip() for line in f if line.strip()}
    samples = with_py = frames_judged = wrong = 0
    bad = []
    with open(folded) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            frames = stack.split(";")
            if frames[0] != comm:
                continue
            samples += int(count)
            own = [fr for fr in frames if fr.startswith(("churn.", "<gen>."))]
            if not own:
                continue
            with_py += int(count)
            frames_judged += len(own) * int(count)
            why = wrong_in(frames, names)
            if why:
                wrong += int(count)
                if len(bad) < 5:
                    bad.append("%s: %s" % (why, line.strip()[-300:]))
    print("samples %d with Python frames %d judged-frames %d wrong %d"
          % (samples, with_py, frames_judged, wrong))
    for b in bad:
        print("  " + b)
    sys.exit(1 if wrong or not with_py else 0)


main()
