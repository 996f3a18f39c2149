#!/usr/bin/env python3
"""Seed inputs for tests/fuzz from a real capture (hprof --raw).

  seeds.py capture CAPTURE OUT     a smaller capture: its first 4 samples (the 4th the first
                                   with an interrupted stack, if the 3 before have none), and
                                   the other records of their processes
  seeds.py unwind CAPTURE OUTDIR   fuzz_unwind inputs: from the first return address into
                                   libc on each sample's stack (a libc frame, as the walk
                                   meets it), libc's base, ip, sp, bp, copy base, the bytes
  seeds.py stackdelta - OUTDIR     fuzz_stackdelta inputs: runs of delta records made as the
                                   BPF program makes them (common/sample.h)
  seeds.py jitdump - OUTDIR        fuzz_jitdump inputs: jitdump files laid out as CPython and
                                   V8 write them, and one with bad records
  seeds.py jitdump FILE OUTDIR     the same from a real jitdump file: its first records, up to
                                   4 KiB, then each code load with an .eh_frame and its
                                   unwinding info, up to 8 KiB, as OUTDIR/real_NAME (NAME:
                                   FILE's without .dump)
  seeds.py pylines DIR OUTDIR      fuzz_pylines inputs: every line table of DIR's
                                   lines-3.X.txt (tests/fixtures/python)
  seeds.py pycode - OUTDIR         fuzz_pycode inputs: code objects laid out as CPython 3.8,
                                   3.10, 3.11, 3.12 and 3.13 make them (user/python/layout.c)
  seeds.py pythreads - OUTDIR      fuzz_pythreads inputs: a runtime, two thread states and a
                                   frame chain laid out as CPython 3.8-3.13 lay them out
"""
import struct
import sys

# struct hprof_sample (176 bytes): timestamp, ip, sp, bp, bx, di, r10, r12-r15, pid, tid, ...,
# r8 (capture version 7)
SAMPLE_HDR = struct.Struct("<QQQQQQQQQQQIIIIHHIBBHIQQ16sQQQ")
assert SAMPLE_HDR.size == 176
PID, NR_USER, NR_KERNEL, STACK_LEN = 11, 15, 16, 17


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


INTERRUPTED_LEN = 21


def shrink(path, out):
    data = open(path, "rb").read()
    pids = {SAMPLE_HDR.unpack_from(p)[PID] for t, p, _ in records(data) if t == 3}
    interrupted = [i for i, (t, p, _) in enumerate(r for r in records(data) if r[0] == 3)
                   if SAMPLE_HDR.unpack_from(p)[INTERRUPTED_LEN]]
    # the first 4 samples, the last of them the first with an interrupted stack if none of
    # them has one
    keep = {0, 1, 2, interrupted[0] if interrupted and interrupted[0] > 3 else 3}
    kept, samples = [data[:16]], 0
    for rtype, payload, raw in records(data):
        if rtype == 3:
            samples += 1
            if samples - 1 not in keep:
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
        ip, sp, bp = h[1], h[2], h[3]
        pid, nr_user, nr_kernel, stack_len = h[PID], h[NR_USER], h[NR_KERNEL], h[STACK_LEN]
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
    hdr = SAMPLE_HDR.pack(1, 0x401000, 0x7ffd0000, 0, 0, 0, 0, 0, 0, 0, 0, 100, tid, 0,
                          SAMPLE_STACK_DELTA | 10,
                          2, 0, len(region), 0, 0, 0, 0, 0, 0, b"seed", 0, 0, 0)
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


JIT_LOAD, JIT_MOVE, JIT_DEBUG_INFO, JIT_CLOSE, JIT_UNWINDING_INFO = range(5)
EM_X86_64 = 62


def jit_header(total=40, flags=0):
    return struct.pack("<IIIIIIQQ", 0x4A695444, 1, total, EM_X86_64, 0, 1234, 0, flags) + \
        bytes(total - 40)


def jit_record(rid, body, pad=False):
    size = 16 + len(body)
    padding = (-size) % 8 if pad else 0
    return struct.pack("<IIQ", rid, size + padding, 0) + body + bytes(padding)


def jit_load(name, addr, size, index, vma=None):
    code = bytes((addr + i) & 0xff for i in range(size))
    body = struct.pack("<IIQQQQ", 1234, 1235, addr if vma is None else vma, addr, size, index)
    return jit_record(JIT_LOAD, body + name.encode() + b"\0" + code)


def jit_move(index, old, new, size):
    return jit_record(JIT_MOVE, struct.pack("<IIQQQQQ", 1234, 1235, new, old, new, size, index))


def tramp_eh_frame(code_size, terminate):
    """A CIE and an FDE for push %rbp; mov %rsp,%rbp; call; pop %rbp; ret (CPython's
    trampoline), the FDE's pc_begin pointing back code_size rounded to 8 bytes."""
    cie = struct.pack("<II", 20, 0) + bytes([1]) + b"zR\0" + bytes([1, 0x78, 16, 1, 0x1b,
                                                                    0x0c, 7, 8, 0x90, 1, 0, 0])
    pc_begin = -(((code_size + 7) & ~7) + len(cie) + 8)
    fde = struct.pack("<IIiI", 28, len(cie) + 4, pc_begin, code_size) + \
        bytes([0, 0x41, 0x0e, 16, 0x86, 2, 0x43, 0x0d, 6, 0x43, 0x0c, 7, 8, 0, 0, 0])
    return cie + fde + (bytes(4) if terminate else b"")


def jit_unwind(code_size, terminate=False, hdr_only=False):
    eh = b"" if hdr_only else tramp_eh_frame(code_size, terminate)
    hdr = struct.pack("<BBBBiIii", 1, 0x1b, 0x03, 0x3b, -(len(eh) + 4), 0 if hdr_only else 1,
                      -(((code_size + 7) & ~7) + len(eh)), -(len(eh) - 24))
    data = eh + hdr
    mapped = 0 if hdr_only else (len(data) + 15) & ~15
    return jit_record(JIT_UNWINDING_INFO, struct.pack("<QQQ", len(data), len(hdr), mapped) + data,
                      pad=True)


def jitdump(path, outdir):
    if path != "-":
        data = open(path, "rb").read()
        pos = struct.unpack_from("<I", data, 8)[0]
        kept, unwind = [data[:pos]], None
        while pos + 16 <= len(data):
            rid, size = struct.unpack_from("<II", data, pos)
            rec = data[pos:pos + size]
            if size < 16 or pos + size > len(data):
                break
            pos += size
            has_eh = unwind is not None and struct.unpack_from("<QQ", unwind, 16) != (20, 20)
            if sum(map(len, kept)) + len(rec) <= 4096:
                kept.append(rec)
            elif rid == JIT_LOAD and has_eh and sum(map(len, kept)) + len(unwind + rec) <= 8192:
                kept += [unwind, rec]
            unwind = rec if rid == JIT_UNWINDING_INFO else None
        name = path.rsplit("/", 1)[-1].removesuffix(".dump")
        open(f"{outdir}/real_{name}", "wb").write(bytes([0]) + b"".join(kept))
        return
    base = 0x7f3a1c000000
    cpython = jit_header()
    for i in range(3):
        cpython += jit_unwind(16) + jit_load(f"py::f{i}:/app/m.py", base + 0x60 * i, 16, i + 1)
    v8 = jit_header() + jit_load("Builtin:ArgumentsAdaptorTrampoline", base, 0x40, 0, vma=0)
    v8 += jit_record(JIT_DEBUG_INFO, struct.pack("<QQ", base + 0x100, 1) +
                     struct.pack("<QII", base + 0x140, 3, 1) + b"/app/a.js\0", pad=True)
    v8 += jit_unwind(16, terminate=True) + jit_load("JS:~f /app/a.js:1", base + 0x100, 16, 1, vma=0)
    v8 += jit_unwind(24, hdr_only=True) + jit_load("JS:*g /app/a.js:5", base + 0x200, 24, 2, vma=0)
    v8 += jit_move(1, base + 0x100, base + 0x1000, 16) + jit_record(JIT_CLOSE, b"")
    bad = jit_header(total=48, flags=1) + jit_record(JIT_LOAD, bytes(10))
    bad += jit_record(JIT_UNWINDING_INFO, struct.pack("<QQQ", 4096, 20, 0))
    bad += jit_load("wraps", 2**64 - 8, 16, 1) + jit_move(77, 0, 0x1000, 16)
    bad += jit_record(99, bytes(8)) + jit_load("ok", 0x5000, 8, 2) + struct.pack("<II", 0, 8)
    for name, data, step in (("cpython", cpython, 0), ("cpython_pieces", cpython, 7),
                             ("v8", v8, 0), ("v8_pieces", v8, 13), ("bad_records", bad, 0)):
        open(f"{outdir}/{name}", "wb").write(bytes([step]) + data)


PY_MINORS = [8, 9, 10, 11, 12, 13]  # fuzz_pycode/fuzz_pylines: version = PY_MINORS[byte 0 % 6]


def pylines(fixtures, outdir):
    import glob
    for path in sorted(glob.glob(f"{fixtures}/lines-3.*.txt")):
        minor = int(path.rsplit(".", 2)[-2])
        for line in open(path):
            f = line.split()
            if f[0] != "code" or f[4] == "-":
                continue
            head = bytes([PY_MINORS.index(minor)]) + struct.pack("<ii", int(f[2]), 3)
            name = "".join(c if c.isalnum() else "_" for c in f[1])
            open(f"{outdir}/3.{minor}_{name}", "wb").write(head + bytes.fromhex(f[4]))


# per version: co_name, co_qualname, co_filename, co_firstlineno, the line table,
# co_code_adaptive (0: none), sizeof(PyASCIIObject), and the str ready bit's use
PY_CODE = {8: (112, 0, 104, 40, 120, 0, 48, True),
           10: (112, 0, 104, 40, 120, 0, 48, True),
           11: (120, 128, 112, 72, 136, 184, 48, True),
           12: (120, 128, 112, 68, 136, 192, 40, False),
           13: (120, 128, 112, 68, 136, 200, 40, False)}
CODE_TYPE = 0xc0de00c0de00


def py_ptr(off):
    return struct.pack("<Q", 0xa5 << 56 | off)


def py_str(minor, text):
    ascii_size, ready = PY_CODE[minor][6], PY_CODE[minor][7]
    cps = [ord(c) for c in text]
    kind = 1 if max(cps, default=0) < 256 else 2 if max(cps) < 65536 else 4
    is_ascii = max(cps, default=0) < 128
    state = 1 << 5 | kind << 2 | (1 << 6 if is_ascii else 0) | (1 << 7 if ready else 0)
    # PyCompactUnicodeObject adds utf8_length, utf8 and (before 3.12) wstr_length
    head = bytearray(ascii_size if is_ascii else ascii_size + (16 if minor >= 12 else 24))
    struct.pack_into("<QQqqI", head, 0, 1, 0, len(cps), -1, state)
    data = b"".join(c.to_bytes(kind, "little") for c in cps) + bytes(kind)
    return bytes(head) + data


def pycode(_, outdir):
    tables = {8: bytes([0, 1, 6, 2, 4, 0xff]), 10: bytes([4, 1, 6, 1, 2, 0x80]),
              11: bytes([0x80 | 13 << 3 | 1, 2, 0x80 | 11 << 3 | 2, 4, 9, 0xf8])}
    for minor, (name, qual, fname, first, table, adaptive, _, _) in PY_CODE.items():
        for variant, (qualname, filename) in enumerate((("K.method", "/srv/app/mod.py"),
                                                       ("caf\xe9_\u540d", "/x/pkg/__init__.py"),
                                                       ("\U0001d523", "<string>"))):
            size = max(adaptive + 16, 160)
            code = bytearray(size)
            objs = bytearray()

            def place(blob):
                off = size + len(objs)
                objs.extend(blob + bytes(-len(blob) % 8))
                return off
            struct.pack_into("<QQ", code, 0, 1, CODE_TYPE)
            if adaptive:
                struct.pack_into("<q", code, 16, 8)  # ob_size: code units
            struct.pack_into("<ii", code, first & ~7, *((33, 5) if first % 8 == 0 else (5, 33)))
            code[name:name + 8] = py_ptr(place(py_str(minor, qualname.split(".")[-1])))
            if qual:
                code[qual:qual + 8] = py_ptr(place(py_str(minor, qualname)))
            code[fname:fname + 8] = py_ptr(place(py_str(minor, filename)))
            t = tables[min(minor, 11)]
            code[table:table + 8] = py_ptr(place(struct.pack("<QQqq", 1, 0, len(t), -1) + t))
            instr = adaptive + 4 if adaptive else 4
            head = bytes([PY_MINORS.index(minor)]) + struct.pack("<I", instr) + bytes(5)
            head += struct.pack("<H", 0) + bytes(4)
            open(f"{outdir}/3.{minor}_{variant}", "wb").write(head + bytes(code) + bytes(objs))


# per version (user/python/layout.c; 3.13 from tests/unit/python_debug_offsets.h):
# runtime_interp, interp_threads, tstate_next, tstate_thread_id, tstate_frame, cframe_frame
# (None: none), frame_code, frame_previous, frame_instr, frame_entry, code_check
PY_THREADS = {8: (32, 8, 8, 176, 24, None, 32, 24, 104, None, 40),
              9: (32, 8, 8, 176, 24, None, 32, 24, 104, None, 40),
              10: (32, 8, 8, 176, 24, None, 32, 24, 96, None, 40),
              11: (40, 16, 8, 152, 56, 8, 32, 48, 56, 68, 72),
              12: (40, 72, 8, 136, 56, 0, 0, 8, 56, 70, 64),
              13: (632, 7344, 8, 152, 72, None, 0, 8, 56, 70, 64)}
FUZZ_FS_BASE = 0x7f00f5000740  # fuzz_pythreads.c's


def pythreads(_, outdir):
    for minor, (r_interp, i_threads, t_next, t_id, t_frame, cf_frame, f_code, f_prev, f_instr,
                f_entry, c_check) in PY_THREADS.items():
        for variant in ("chain", "loop", "idle"):
            arena = bytearray()

            def alloc(n):
                off = len(arena)
                arena.extend(bytes(n + (-n % 16)))
                return off

            def put(off, value, size=8):
                arena[off:off + size] = value if isinstance(value, bytes) else \
                    struct.pack("<Q" if size == 8 else "<I", value)
            runtime, interp = alloc(r_interp + 8), alloc(i_threads + 8)
            other, tstate = alloc(256), alloc(256)
            put(runtime + r_interp, py_ptr(interp))
            put(interp + i_threads, py_ptr(other))
            put(other + t_id, 0x7f00f5100740)
            put(other + t_next, py_ptr(tstate))
            put(tstate + t_id, FUZZ_FS_BASE)
            slot = tstate + t_frame
            if cf_frame is not None:
                cframe = alloc(64)
                put(tstate + t_frame, py_ptr(cframe))
                put(other + t_frame, py_ptr(alloc(64)))
                slot = cframe + cf_frame

            def frame(code, unit, entry, previous):
                f = alloc(128)
                put(f + f_code, py_ptr(code) if code is not None else 0)
                put(f + f_prev, py_ptr(previous) if previous is not None else 0)
                if f_entry is None:
                    put(f + f_instr, unit, 4)
                else:
                    put(f + f_instr, py_ptr(code + unit) if code is not None else 0)
                    arena[f + f_entry] = entry
                return f
            codes = []
            for word in (0x1111, 0x2222, 0x3333):
                codes.append(alloc(128))
                put(codes[-1] + c_check, word)
            shim = minor >= 12
            outer = frame(codes[2], 96, 0 if shim else 1, frame(None, 0, 3, None) if shim else None)
            if shim:
                outer = frame(None, 0, 3, outer)
            inner = frame(codes[0], 32, 0, frame(codes[1], 64, 0 if shim else 1, outer))
            if variant == "loop":
                put(outer + f_prev, py_ptr(inner))
            if variant != "idle":
                put(slot, py_ptr(inner))
            arena.extend(struct.pack("<Q", 0x7f00f5100740))  # the other thread's, searched second
            head = bytes([PY_MINORS.index(minor)]) + struct.pack("<H", 0) + bytes(5)
            open(f"{outdir}/3.{minor}_{variant}", "wb").write(head + bytes(arena))


if __name__ == "__main__":
    {"capture": shrink, "unwind": unwind, "stackdelta": stackdelta, "jitdump": jitdump,
     "pylines": pylines, "pycode": pycode, "pythreads": pythreads}[sys.argv[1]](sys.argv[2], sys.argv[3])
