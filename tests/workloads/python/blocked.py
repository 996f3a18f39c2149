"""Threads blocked in known Python chains, for `hprof stack` (tests/t_python_stack.sh): the
main thread in a recursion, a method and C code calling back into Python (sorted's key);
a second thread under threading's bootstrap, in a closure. Each thread, just before it
blocks, appends its chain as the interpreter's frames give it to CHAINS_FILE, one line
"TID module.function:line;..." (outermost first, named by pyhelpers.frame_name), then blocks in os.write of a MiB to its FIFO (FIFO_DIR/main, FIFO_DIR/worker),
which the test holds open: the first byte it reads says the thread is in that write, and
there it stays.

usage: blocked.py CHAINS_FILE FIFO_DIR"""
import os
import sys
import threading

import pyhelpers

CHAINS, FIFOS = sys.argv[1], sys.argv[2]
DATA = b"x" * (1 << 20)  # more than a pipe holds: the write blocks
LOCK = threading.Lock()


def marked_line(marker):
    with open(__file__) as f:
        for number, text in enumerate(f, 1):
            if text.rstrip().endswith("# " + marker):
                return number
    raise SystemExit("no line marked " + marker)


def block(name):
    """Writes this thread's chain, then blocks on the line marked below."""
    leaf = sys._getframe()
    names = []
    frame = leaf
    while frame is not None:
        line = BLOCK_LINE if frame is leaf else frame.f_lineno
        names.append("%s:%d" % (pyhelpers.frame_name(frame), line))
        frame = frame.f_back
    with LOCK, open(CHAINS, "a") as out:
        out.write("%d %s\n" % (threading.get_native_id(), ";".join(reversed(names))))
    fd = os.open(os.path.join(FIFOS, name), os.O_WRONLY)
    os.write(fd, DATA)  # blocks here


BLOCK_LINE = marked_line("blocks here")


def recurse(depth):
    if depth:
        return recurse(depth - 1)
    return Holder().method()


class Holder:
    def method(self):
        return sorted([1], key=lambda x: block("main"))


def worker():
    def inner():
        block("worker")
    inner()


def main():
    threading.Thread(target=worker).start()
    recurse(3)


main()
