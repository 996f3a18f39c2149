#!/usr/bin/env python3
"""Seed inputs for tests/fuzz from a real capture (hprof --raw).

  seeds.py capture CAPTURE OUT     a smaller capture: its first 4 samples, and the other
                                   records of their processes
  seeds.py unwind CAPTURE OUTDIR   fuzz_unwind inputs: from the first return address into
                                   libc on each sample's stack (a libc frame, as the walk
                                   meets it), libc's base, ip, sp, bp, copy base, the bytes
"""
import struct
import sys

SAMPLE_HDR = struct.Struct("<QQQQIIIIHHIBBHIQ16sQII")  # struct hprof_sample (104 bytes)
assert SAMPLE_HDR.size == 104


def records(data):
    assert data[:8] == b"HPROFCAP"
    pos = 16
    while pos < len(data):
        rtype, length = struct.unpack_from("<II", data, pos)
        payload = data[pos + 8:pos + 8 + length]
        yield rtype, payload, data[pos:pos + 8 + ((length + 7) & ~7)]
        pos += 8 + ((length + 7) & ~7)


def event_pid(rtype, payload):
    if rtype == 2:
        return struct.unpack_from("<I", payload)[0]
    if rtype == 5:
        return struct.unpack_from("<QII", payload)[2]
    return None


def shrink(path, out):
    data = open(path, "rb").read()
    pids = {SAMPLE_HDR.unpack_from(p)[4] for t, p, _ in records(data) if t == 3}
    kept, samples = [data[:16]], 0
    for rtype, payload, raw in records(data):
        if rtype == 3:
            samples += 1
            if samples > 4:
                continue
        pid = event_pid(rtype, payload)
        if pid is None or pid in pids:
            kept.append(raw)
    open(out, "wb").write(b"".join(kept))


def libc_bases(data):
    bases = {}
    for rtype, payload, _ in records(data):
        if rtype == 5:
            _, etype, pid, _, _, start, _, pgoff = struct.unpack_from("<QIIIIQQQ", payload)
            if etype == 1 and payload[104:].split(b"\0")[0].endswith(b"/libc.so.6"):
                bases[pid] = start - pgoff
        if rtype != 2:
            continue
        pid = struct.unpack_from("<I", payload)[0]
        for line in payload[8:].decode(errors="replace").splitlines():
            f = line.split()
            if len(f) >= 6 and f[5].endswith("/libc.so.6") and "x" in f[1]:
                start = int(f[0].split("-")[0], 16)
                bases[pid] = start - int(f[2], 16)
    return bases


def unwind(path, outdir):
    data = open(path, "rb").read()
    bases, n = libc_bases(data), 0
    for rtype, payload, _ in records(data):
        if rtype != 3:
            continue
        h = SAMPLE_HDR.unpack_from(payload)
        ip, sp, bp, pid, nr_user, nr_kernel, stack_len = h[1], h[2], h[3], h[4], h[8], h[9], h[10]
        base = bases.get(pid)
        if base is None or not stack_len:
            continue
        off = SAMPLE_HDR.size + (nr_user + nr_kernel) * 8
        stack = payload[off:off + stack_len]
        for k in range(0, len(stack) - 8, 8):
            ra = struct.unpack_from("<Q", stack, k)[0]
            if base <= ra < base + (2 << 20):
                break
        else:
            continue
        seed = struct.pack("<QQQQQ", base, ra, sp + k + 8, bp, sp) + stack
        open(f"{outdir}/sample{n}", "wb").write(seed)
        n += 1
        if n == 4:
            break


if __name__ == "__main__":
    {"capture": shrink, "unwind": unwind}[sys.argv[1]](sys.argv[2], sys.argv[3])
