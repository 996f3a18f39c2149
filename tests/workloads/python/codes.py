"""Code objects for tests/t_python_code.sh to read from outside (CPython 3.8+): prints what
CPython says of some of them, then blocks on stdin in waiter() (main thread) and in
Event.wait (a second thread) until a line comes.

Lines: "runtime ADDR", "codetype ADDR", "code ADDR:OFFSET QUALNAME MODULE FILENAME
FIRSTLINENO LINE" (OFFSET an instruction in bytes before 3.10, code units from 3.10, LINE
CPython's line of it), "thread IDENT NAMES..." (the frames expected innermost first,
with the line of the innermost), then "ready"."""
import ctypes
import dis
import sys
import threading

NEW = sys.version_info >= (3, 11)


def outer():
    return waiter()


class Klass:
    def method(self, a,
               b=2):
        x = [a *
             b for _ in range(3)]
        return x

    class Inner:
        def deep(self):
            return lambda v: (v +
                              1)


def café_名():
    return "non-ASCII name"


made = compile("def made_here():\n    return 1\n", "<string>", "exec")
exec(made)


def last_line_start(code):
    """An instruction with a line, and that line, as CPython says."""
    if sys.version_info >= (3, 10):
        ranges = [(s, ln) for s, e, ln in code.co_lines() if ln is not None and e > s]
        start, line = ranges[-1]
        return start // 2, line
    return list(dis.findlinestarts(code))[-1]


def qualname(code, fallback):
    return code.co_qualname if NEW else fallback


def module_of(filename):
    if filename.startswith("<"):
        return filename
    base = filename.rsplit("/", 1)[-1]
    return base[:-3] if base.endswith(".py") else base


def report(code, fallback):
    offset, line = last_line_start(code)
    print("code 0x%x:%d %s %s %s %d %d" % (id(code), offset, qualname(code, fallback),
                                            module_of(code.co_filename), code.co_filename,
                                            code.co_firstlineno, line))


def worker_loop(event):
    event.wait()


def waiter():
    runtime = ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, "_PyRuntime"))
    print("runtime 0x%x" % runtime)
    print("codetype 0x%x" % id(type(outer.__code__)))
    report(outer.__code__, "outer")
    report(Klass.method.__code__, "method")
    report(Klass.Inner.deep.__code__, "deep")
    report(Klass.Inner().deep().__code__, "<lambda>")
    report(globals()["caf\u00e9_\u540d"].__code__, "caf\u00e9_\u540d")
    report(made_here.__code__, "made_here")
    report(sys._getframe(2).f_code, "<module>")
    with open(__file__, encoding="utf-8") as f:
        blocked = f.read().splitlines().index("    sys.stdin.readline()") + 1
    print("thread %d waiter:%d outer <module>" % (threading.get_ident(), blocked))
    print("thread %d worker_loop" % worker.ident)
    print("ready")
    sys.stdout.flush()
    sys.stdin.readline()


event = threading.Event()
worker = threading.Thread(target=worker_loop, args=(event,))
worker.start()
outer()
event.set()
worker.join()
