#!/usr/bin/env python3
"""Seed inputs for tests/fuzz from a real capture (hprof --raw).

  seeds.py capture CAPTURE OUT     a smaller capture: its first 4 samples, and the other
                                   records of their processes
  seeds.py unwind CAPTURE OUTDIR   fuzz_unwind inputs: from the first return address into
                                   libc on each sample's stack (a libc frame, as the walk
                                   meets it), libc's base, ip, sp, bp, copy base, the bytes
  seeds.py stackdelta - OUTDIR     fuzz_stackdelta inputs: runs of delta records made as the
                                   BPF program makes them (common/sample.h)
"""
import struct
import sys

SAMPLE_HDR = struct.Struct("<QQQQQQIIIIHHIBBHIQ16sQII")  # struct hprof_sample (120 bytes)
assert SAMPLE_HDR.size == 120


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
    pids = {SAMPLE_HDR.unpack_from(p)[6] for t, p, _ in records(data) if t == 3}
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
        ip, sp, bp, pid, nr_user, nr_kernel, stack_len = h[1], h[2], h[3], h[6], h[10], h[11], h[12]
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


SAMPLE_STACK_DELTA = 1 << 7
DELTA_HDR = struct.Struct("<QQIHH")  # struct hprof_stack_delta (24 bytes)
CHUNK, MAX_CHUNKS = 64, 256


def nr_chunks(full_len):
    return min((full_len + CHUNK - 1) // CHUNK, MAX_CHUNKS)


def chunk(full_len, i):
    hi = full_len - i * CHUNK
    return (hi - CHUNK if hi > CHUNK else 0), hi


def delta_record(tid, seq, base_seq, now, prev):
    """A ring buffer record: now's stack as a delta against prev (None: every chunk sent),
    with two user frames and no tail."""
    n = nr_chunks(len(now))
    untracked = max(len(now) - MAX_CHUNKS * CHUNK, 0)
    sent, payload = 0, now[:untracked]
    for i in reversed(range(n)):
        lo, hi = chunk(len(now), i)
        if prev is not None and i < nr_chunks(len(prev)):
            plo, phi = chunk(len(prev), i)
            if phi - plo == hi - lo and prev[plo:phi] == now[lo:hi]:
                continue
        sent |= 1 << i
        payload += now[lo:hi]
    words = (n + 63) // 64 if base_seq else 0
    region = DELTA_HDR.pack(seq, base_seq, len(now), n, 0)
    region += b"".join(struct.pack("<Q", (sent >> (64 * w)) & (2**64 - 1)) for w in range(words))
    region += payload
    hdr = SAMPLE_HDR.pack(1, 0x401000, 0x7ffd0000, 0, 0, 0, 100, tid, 0, SAMPLE_STACK_DELTA | 10,
                          2, 0, len(region), 0, 0, 0, 0, 0, b"seed", 0, 0, 0)
    return hdr + struct.pack("<QQ", 0x401000, 0x401100) + region


def stackdelta(_, outdir):
    a = bytes(range(256)) * 2 + bytes(40)
    b = bytearray(a)
    b[3] ^= 1
    b = bytes(b)
    runs = {
        "sequence": [delta_record(1, 10, 0, a, None), delta_record(1, 11, 10, b, a),
                     delta_record(1, 12, 11, b, b)],
        "gap": [delta_record(1, 10, 0, a, None), delta_record(1, 13, 12, b, a)],
        "threads": [delta_record(t, 5, 0, a, None) for t in range(1, 6)] +
                   [delta_record(1, 6, 5, b, a)],
        "deep": [delta_record(2, 7, 0, bytes(20000), None),
                 delta_record(2, 8, 7, bytes(19992), bytes(20000))],
    }
    for name, recs in runs.items():
        with open(f"{outdir}/{name}", "wb") as f:
            for r in recs:
                f.write(struct.pack("<H", len(r) & 0xffff) + r)


if __name__ == "__main__":
    {"capture": shrink, "unwind": unwind, "stackdelta": stackdelta}[sys.argv[1]](sys.argv[2], sys.argv[3])
