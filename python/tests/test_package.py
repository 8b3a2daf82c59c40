"""The package itself: the in-tree build backend's wheel and sdist, and the
label helper."""

import base64
import hashlib
import importlib.util
import json
import os
import sys
import tarfile
import tempfile
import unittest
import zipfile

import serve
from rlpost import label

BACKEND = os.path.join(serve.PYROOT, "_build", "rlpost_build.py")


def backend():
    spec = importlib.util.spec_from_file_location("rlpost_build_under_test", BACKEND)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


class BackendTest(unittest.TestCase):
    def test_fallback_metadata_is_pyproject(self):
        try:
            import tomllib
        except ImportError:
            self.skipTest("tomllib needs Python 3.11")
        with open(os.path.join(serve.PYROOT, "pyproject.toml"), "rb") as f:
            project = tomllib.load(f)["project"]
        self.assertEqual(backend().FALLBACK, project)

    def test_wheel(self):
        b = backend()
        self.assertEqual(b.get_requires_for_build_wheel(), [])
        with tempfile.TemporaryDirectory() as d:
            name = b.build_wheel(d)
            self.assertEqual(name, "rlpost-0.1.0-py3-none-any.whl")
            with zipfile.ZipFile(os.path.join(d, name)) as z:
                names = set(z.namelist())
                for want in ("rlpost/__init__.py", "rlpost/client.py", "rlpost/verl_reward.py", "rlpost/trl.py",
                             "rlpost-0.1.0.dist-info/METADATA", "rlpost-0.1.0.dist-info/RECORD"):
                    self.assertIn(want, names)
                self.assertFalse([n for n in names if "__pycache__" in n or n.endswith(".pyc")])
                record = z.read("rlpost-0.1.0.dist-info/RECORD").decode().splitlines()
                self.assertEqual(len(record), len(names))
                for line in record:
                    path, digest, size = line.rsplit(",", 2)
                    if path.endswith("RECORD"):
                        continue
                    data = z.read(path)
                    want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                    self.assertEqual((digest, int(size)), (want, len(data)), path)
                meta = z.read("rlpost-0.1.0.dist-info/METADATA").decode()
                self.assertIn("Requires-Python: >=3.9", meta)
                self.assertIn('Requires-Dist: aiohttp; extra == "async"', meta)

    def test_wheel_is_reproducible(self):
        b = backend()
        with tempfile.TemporaryDirectory() as d1, tempfile.TemporaryDirectory() as d2:
            n1, n2 = b.build_wheel(d1), b.build_wheel(d2)
            with open(os.path.join(d1, n1), "rb") as f1, open(os.path.join(d2, n2), "rb") as f2:
                self.assertEqual(f1.read(), f2.read())

    def test_sdist_builds_again(self):
        b = backend()
        with tempfile.TemporaryDirectory() as d:
            name = b.build_sdist(d)
            with tarfile.open(os.path.join(d, name)) as t:
                names = set(t.getnames())
            for want in ("pyproject.toml", "_build/rlpost_build.py", "rlpost/verl_reward.py", "PKG-INFO"):
                self.assertIn("rlpost-0.1.0/" + want, names)

    def test_editable_points_at_the_checkout(self):
        b = backend()
        with tempfile.TemporaryDirectory() as d:
            with zipfile.ZipFile(os.path.join(d, b.build_editable(d))) as z:
                self.assertEqual(z.read("_rlpost_editable.pth").decode().strip(), serve.PYROOT)

    def test_verl_file_imports_nothing_beside_it(self):
        # The verl file is loaded alone: it may import the standard library
        # (and aiohttp, optionally) only.
        self.assertEqual(self.outside_imports(serve.VERL_FILE), ["aiohttp"])

    def test_client_file_imports_nothing_beside_it(self):
        # client.py also works as a single file (examples/serve/rlpost_client.py links to it).
        self.assertEqual(self.outside_imports(os.path.join(os.path.dirname(serve.VERL_FILE), "client.py")),
                         ["aiohttp"])

    def outside_imports(self, path):
        import ast
        with open(path) as f:
            tree = ast.parse(f.read())
        mods = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                mods.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                self.assertEqual(node.level, 0, "relative import in the verl file")
                mods.add(node.module.split(".")[0])
        stdlib = getattr(sys, "stdlib_module_names", None)
        if stdlib is None:
            self.skipTest("sys.stdlib_module_names needs Python 3.10")
        return sorted(m for m in mods if m not in stdlib)


class LabelTest(unittest.TestCase):
    def test_plain_gold_is_itself(self):
        for g in ("42", "\\frac{1}{2}", 42, 1.5, [0, 0, 10, 10], "{1, 2}", '{"a": 1}'):
            self.assertEqual(label(g), g)

    def test_named_verifier_round_trips(self):
        for g in ("B", 42, [1, 2], '{"verifier": "x"}'):
            for params in (None, {"k": 3}):
                s = label(g, verifier="choice", params=params)
                obj = json.loads(s)
                self.assertEqual(obj["verifier"], "choice")
                self.assertEqual(obj["gold"], g)
                self.assertEqual(obj.get("params"), params)
                self.assertEqual(label(g, verifier="choice", params=params, as_string=False), obj)

    def test_a_gold_that_looks_like_an_object_label_is_wrapped(self):
        g = '{"verifier": "choice", "gold": "B"}'
        self.assertEqual(json.loads(label(g)), {"gold": g})

    def test_bad_arguments(self):
        for kw in ({"gold": True}, {"gold": "1", "verifier": ""}, {"gold": "1", "verifier": 3},
                   {"gold": "1", "params": [1]}):
            with self.subTest(**{k: repr(v) for k, v in kw.items()}):
                with self.assertRaises(ValueError):
                    label(**kw)


if __name__ == "__main__":
    unittest.main()
