"""A PEP 517 build backend for the rlpost Python package, standard library only.

Why not setuptools or flit: pip builds a package in an isolated environment
and first installs the backend named in pyproject.toml from an index. Where
there is no index (CI, air-gapped clusters) that step fails before any code
is looked at. This backend needs nothing (``requires = []``), so
``pip install ./python`` and ``pip install "git+URL#subdirectory=python"``
work offline, with build isolation on.

It builds one kind of thing: a pure-Python wheel of the ``rlpost`` folder
(PEP 427), an sdist of this directory (PEP 517), and an editable wheel that
puts this directory on sys.path through a .pth file (PEP 660). The metadata
(name, version, summary, Python requirement, optional dependencies) is read
from pyproject.toml's [project] table with tomllib (Python 3.11+) or, on
older Pythons, from the fixed values below, which a test keeps equal.
"""

import base64
import hashlib
import io
import os
import tarfile
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "rlpost"

# Used when tomllib is missing (Python < 3.11); tests/test_package.py checks
# that these equal pyproject.toml's [project] table.
FALLBACK = {
    "name": "rlpost",
    "version": "0.1.0",
    "description": "Clients and trainer adapters (verl, TRL, OpenRLHF, slime) for the rlpost reward service",
    "requires-python": ">=3.9",
    "optional-dependencies": {"async": ["aiohttp"]},
}

# A fixed timestamp keeps the archives byte-for-byte reproducible.
_EPOCH = (1980, 1, 1, 0, 0, 0)


def _project():
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        return dict(FALLBACK)
    with open(os.path.join(HERE, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]


def _metadata():
    p = _project()
    lines = [
        "Metadata-Version: 2.1",
        "Name: " + p["name"],
        "Version: " + p["version"],
        "Summary: " + p["description"],
        "Requires-Python: " + p["requires-python"],
    ]
    for extra, reqs in sorted(p.get("optional-dependencies", {}).items()):
        lines.append("Provides-Extra: " + extra)
        lines.extend('Requires-Dist: %s; extra == "%s"' % (r, extra) for r in reqs)
    return p, "\n".join(lines) + "\n"


def _dist_info(p):
    return "%s-%s.dist-info" % (p["name"], p["version"])


def _wheel_name(p):
    return "%s-%s-py3-none-any.whl" % (p["name"], p["version"])


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(data))


def _package_files():
    root = os.path.join(HERE, PACKAGE)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for fn in sorted(filenames):
            if fn.endswith((".pyc", ".pyo")):
                continue
            full = os.path.join(dirpath, fn)
            yield os.path.relpath(full, HERE).replace(os.sep, "/"), full


def _write_wheel(wheel_directory, members):
    p, meta = _metadata()
    info = _dist_info(p)
    members = list(members) + [
        (info + "/METADATA", meta.encode()),
        (info + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: rlpost_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
    ]
    record = [_record_line(n, d) for n, d in members] + [info + "/RECORD,,"]
    members.append((info + "/RECORD", ("\n".join(record) + "\n").encode()))
    name = _wheel_name(p)
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in members:
            zi = zipfile.ZipInfo(n, _EPOCH)
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, d)
    return name


# -- PEP 517 hooks -----------------------------------------------------------


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    members = []
    for arc, full in _package_files():
        with open(full, "rb") as f:
            members.append((arc, f.read()))
    return _write_wheel(wheel_directory, members)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, [("_rlpost_editable.pth", (HERE + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    p, meta = _metadata()
    base = "%s-%s" % (p["name"], p["version"])
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as t:
        files = [("pyproject.toml", os.path.join(HERE, "pyproject.toml")),
                 ("_build/rlpost_build.py", os.path.abspath(__file__))]
        readme = os.path.join(HERE, "README.md")
        if os.path.exists(readme):
            files.append(("README.md", readme))
        files.extend(_package_files())
        for arc, full in files:
            with open(full, "rb") as f:
                data = f.read()
            ti = tarfile.TarInfo(base + "/" + arc)
            ti.size, ti.mode, ti.mtime = len(data), 0o644, 315532800
            t.addfile(ti, io.BytesIO(data))
        pkg = meta.encode()
        ti = tarfile.TarInfo(base + "/PKG-INFO")
        ti.size, ti.mode, ti.mtime = len(pkg), 0o644, 315532800
        t.addfile(ti, io.BytesIO(pkg))
    return name
