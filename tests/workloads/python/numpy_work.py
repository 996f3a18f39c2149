"""numpy's array work called from Python functions (bench/b_python_real.sh): each step
multiplies two 160x160 matrices (matmul_block), takes the spectrum of 65,536 samples
(spectrum: rfft) and sorts 65,536 values (rank: a stable argsort), for SECONDS.

usage: numpy_work.py SECONDS"""
import sys
import time

import numpy as np

rng = np.random.default_rng(0)


def matmul_block(a, b):
    return a @ b


def spectrum(signal):
    return np.abs(np.fft.rfft(signal))


def rank(values):
    return np.argsort(values, kind="stable")


def step(a, b, signal, values):
    c = matmul_block(a, b)
    s = spectrum(signal + c[0, 0])
    r = rank(values * s[1])
    return float(c[1, 1] + s[2] + r[3])


def run(seconds):
    a = rng.standard_normal((160, 160))
    b = rng.standard_normal((160, 160))
    signal = rng.standard_normal(1 << 16)
    values = rng.standard_normal(1 << 16)
    end = time.monotonic() + seconds
    steps = 0
    while time.monotonic() < end:
        step(a, b, signal, values)
        steps += 1
    return steps


if __name__ == "__main__":
    print(run(float(sys.argv[1])))
