"""Helpers of tests/workloads/python/chain.py in a module of their own: the stacks cross
modules."""
import time


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
