"""A CPU-bound program measured by itself: a thread reads sys._current_frames() about every
millisecond and counts the innermost function of the main thread among light, medium and
heavy, which the main thread calls in turn (each doing a different amount of work a call).
Writes "function count" lines to the file named by the first argument.

usage: shares.py OUT SECONDS"""
import random
import sys
import threading
import time

WORK = ("light", "medium", "heavy")


def spin(n):
    s = 0
    for i in range(n):
        s += i * i % 7
    return s


def light():
    return spin(100000)


def medium():
    return spin(200000)


def heavy():
    return spin(400000)


def sampler(main_id, stop, counts):
    while not stop.is_set():
        frame = sys._current_frames().get(main_id)
        while frame is not None:
            name = frame.f_code.co_name
            if name in counts:
                counts[name] += 1
                break
            frame = frame.f_back
        # a period of its own each time: a fixed one locks onto the main loop's
        time.sleep(random.uniform(0.0005, 0.0015))


def main():
    # the sampler gets the interpreter's lock within 0.1 ms of asking, not 5 ms: its
    # samples land where the main thread is, not where it next lets go
    sys.setswitchinterval(0.0001)
    counts = dict.fromkeys(WORK, 0)
    stop = threading.Event()
    t = threading.Thread(target=sampler, args=(threading.get_ident(), stop, counts))
    t.start()
    end = time.monotonic() + float(sys.argv[2])
    while time.monotonic() < end:
        light()
        medium()
        heavy()
    stop.set()
    t.join()
    with open(sys.argv[1], "w") as out:
        for name in WORK:
            out.write("%s %d\n" % (name, counts[name]))


main()
