"""Helpers of tests/workloads/python/chain.py in a module of their own: the stacks cross
modules. frame_name names a frame as hprof does, for the workloads that write down their
own chains (chain.py, blocked.py)."""
import os
import time


def frame_name(frame):
    code = frame.f_code
    path = code.co_filename
    base = os.path.basename(path)
    module = base[:-3] if base.endswith(".py") else base
    if module == "__init__":
        module = os.path.basename(os.path.dirname(path))
    return module + "." + getattr(code, "co_qualname", code.co_name)


def timed(fn):
    """A decorator: its wrapper is a frame of its own (pyhelpers.timed.<locals>.wrapper)."""
    def wrapper(*args):
        return fn(*args)
    return wrapper


class Walker:
    def step(self, spin, depth):
        if depth:
            return self.step(spin, depth - 1)
        return spin()


def deadline_passed(end):
    return time.monotonic() > end
