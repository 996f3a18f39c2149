"""Frames made and freed all the time (tests/t_python_hostile.sh): recursions of random
depth through rec_a -> rec_b -> rec_c -> rec_a ..., each returning at once, and functions
compiled afresh each round (outer_N calling inner_N, from one template, so that their code
objects have the same size and first line and are freed and made again at the same
addresses), each called a few times and dropped. A profiler that names a frame after
a code object freed under it, or reads a frame being popped, shows a chain this program
never makes: rec_a under rec_a, inner_N under outer_M.

usage: churn.py NAMES_FILE SECONDS
Writes the names of the functions it made ("module.qualname", the module "<gen>" for the
compiled ones) to NAMES_FILE as it ends."""
import random
import sys
import time

TEMPLATE = """
def outer_{n}(k):
    return inner_{n}(k) + 1

def inner_{n}(k):
    s = 0
    for i in range(k):
        s += i * i % 7
    return s
"""


def leaf(k):
    s = 0
    for i in range(k):
        s += i % 3
    return s


def rec_a(depth, k):
    return leaf(k) if depth == 0 else rec_b(depth - 1, k)


def rec_b(depth, k):
    return leaf(k) if depth == 0 else rec_c(depth - 1, k)


def rec_c(depth, k):
    return leaf(k) if depth == 0 else rec_a(depth - 1, k)


def run_gen(n):
    space = {}
    exec(compile(TEMPLATE.format(n=n), "<gen>", "exec"), space)
    outer = space["outer_%d" % n]
    total = 0
    for _ in range(3):
        total += outer(300)
    return total


def main():
    names_file, seconds = sys.argv[1], float(sys.argv[2])
    rng = random.Random(7)
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        for _ in range(20):
            rec_a(rng.randrange(0, 150), rng.randrange(1, 200))
        run_gen(n)
        n += 1
    names = ["churn.<module>", "churn.main", "churn.leaf", "churn.rec_a", "churn.rec_b",
             "churn.rec_c", "churn.run_gen", "<gen>.<module>"]
    for i in range(n):
        names += ["<gen>.outer_%d" % i, "<gen>.inner_%d" % i]
    with open(names_file, "w") as f:
        f.write("\n".join(names) + "\n")


main()
