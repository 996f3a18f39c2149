"""Writes a directory of small pure-Python wheels over which pip's resolver backtracks
(bench/b_python_real.sh), offline: `pip download --no-index --find-links DIR top`.
top needs pkg_a, pkg_b and util_d; pkg_a N needs shared_c == N and util_d >= N/2 + 1;
every pkg_b needs shared_c <= 2, so the resolver, trying the newest first, works down
pkg_a's versions one by one to 2, reading each one's metadata from its wheel. Each
wheel is what `pip wheel` makes of a one-module project: the module, METADATA with its
Requires-Dist, WHEEL and RECORD.

usage: pip_wheels.py DIR VERSIONS"""
import base64
import hashlib
import os
import sys
import zipfile


def wheel(out, name, version, requires):
    dist = "%s-%s" % (name, version)
    files = {
        "%s/__init__.py" % name: "VERSION = %r\n" % version,
        "%s.dist-info/METADATA" % dist: "Metadata-Version: 2.1\nName: %s\nVersion: %s\n%s" % (
            name, version, "".join("Requires-Dist: %s\n" % r for r in requires)),
        "%s.dist-info/WHEEL" % dist:
            "Wheel-Version: 1.0\nGenerator: hprof-bench\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    with zipfile.ZipFile(os.path.join(out, "%s-py3-none-any.whl" % dist), "w") as z:
        for path, text in files.items():
            data = text.encode()
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record.append("%s,sha256=%s,%d" % (path, digest.decode(), len(data)))
            z.writestr(path, data)
        record.append("%s.dist-info/RECORD,," % dist)
        z.writestr("%s.dist-info/RECORD" % dist, "\n".join(record) + "\n")


def main(out, versions):
    os.makedirs(out, exist_ok=True)
    wheel(out, "top", "1.0", ["pkg_a", "pkg_b", "util_d"])
    for v in range(1, versions + 1):
        wheel(out, "shared_c", "%d.0" % v, ["util_d>=1.0"])
        wheel(out, "util_d", "%d.0" % v, [])
        wheel(out, "pkg_a", "%d.0" % v, ["shared_c==%d.0" % v, "util_d>=%d.0" % (v // 2 + 1)])
        wheel(out, "pkg_b", "%d.0" % v, ["shared_c<=2.0"])


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
