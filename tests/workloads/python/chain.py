"""A CPU-bound Python program whose Python stacks are known: each phase runs a leaf
(spin, or hash_loop with the GIL released in hashlib's C code) under a known chain, across
modules, with recursion, a class method, a generator, a lambda, a decorator, C code calling
back into Python (sorted's key, re.sub's replacement function) and threads. Each leaf writes
its own chain, as the interpreter's frames give it ("module.function", outermost first, one
line per chain), to the file named by the first argument, then spins.

usage: chain.py CHAINS_FILE SECONDS READY_FILE"""
import hashlib
import re
import sys
import threading
import time

import pyhelpers

CHAINS = set()
LOCK = threading.Lock()
SECONDS = float(sys.argv[2])


def record_chain():
    """The caller's chain, outermost first."""
    names = []
    frame = sys._getframe(1)
    while frame is not None:
        names.append(pyhelpers.frame_name(frame))
        frame = frame.f_back
    chain = ";".join(reversed(names))
    with LOCK:
        CHAINS.add(chain)


def spin(slice_end):
    record_chain()
    n = 0
    while time.monotonic() < slice_end:
        for i in range(200):
            n += i * i % 7
    return n


def hash_loop(slice_end):
    record_chain()
    data = b"x" * (1 << 20)
    while time.monotonic() < slice_end:
        hashlib.sha256(data).digest()  # releases the GIL for large inputs


def recurse(depth, slice_end):
    if depth:
        return recurse(depth - 1, slice_end)
    return spin(slice_end)


def generate(slice_end):
    yield spin(slice_end)


@pyhelpers.timed
def decorated(slice_end):
    return spin(slice_end)


def by_key(slice_end):
    return sorted([3, 1, 2], key=lambda x: spin(slice_end) + x)


def by_regex(slice_end):
    return re.sub("a", lambda m: str(spin(slice_end)), "a")


PHASES = [
    lambda end: recurse(4, end),
    lambda end: next(generate(end)),
    lambda end: decorated(end),
    lambda end: pyhelpers.Walker().step(lambda: spin(end), 2),
    by_key,
    by_regex,
]


def run_phases(total_end, slice_s):
    while time.monotonic() < total_end:
        for phase in PHASES:
            phase(time.monotonic() + slice_s)


def hasher(total_end):
    while time.monotonic() < total_end:
        hash_loop(time.monotonic() + 0.05)


def main():
    with open(sys.argv[3], "w") as ready:
        ready.write("ready\n")
    total_end = time.monotonic() + SECONDS
    threads = [threading.Thread(target=hasher, args=(total_end,)),
               threading.Thread(target=run_phases, args=(total_end, 0.01))]
    for t in threads:
        t.start()
    run_phases(total_end, 0.02)
    for t in threads:
        t.join()
    with open(sys.argv[1], "w") as out:
        for chain in sorted(CHAINS):
            out.write(chain + "\n")


main()
