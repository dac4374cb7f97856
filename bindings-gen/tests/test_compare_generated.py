"""compare_generated.py's reading of two output trees (the rest, generating
from two git trees, is what the script is run for: see its docstring)."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import compare_generated  # noqa: E402


def _write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


class Changed(unittest.TestCase):
    def test_names_every_kind_of_difference(self):
        with tempfile.TemporaryDirectory() as d:
            a, b = os.path.join(d, "a"), os.path.join(d, "b")
            for side in (a, b):  # the same on both sides
                for rel in ("1.13/generated/api.json", "2.15/generated/api.json", "2.15/bindings/node/index.js",
                            "2.15/bindings/rust/ctorch/src/lib.rs"):
                    _write(side, rel, "same")
            _write(a, "1.13/bindings/go/ops_gen.go", "package ctorch\n")
            _write(b, "1.13/bindings/go/ops_gen.go", "package ctorch // changed\n")
            _write(b, "2.15/bindings/rust/ctorch/src/readme_doctests.rs", "")  # new in b
            _write(a, "2.15/generated/old.c", "")  # gone from b
            _write(b, "2.15/bindings/node/new/x.js", "")  # a new folder
            self.assertEqual(compare_generated._changed(a, b), [
                "1.13/bindings/go/ops_gen.go", "2.15/bindings/node/new", "2.15/bindings/rust/ctorch/src/readme_doctests.rs",
                "2.15/generated/old.c"])
            self.assertEqual(compare_generated._changed(a, a), [])


if __name__ == "__main__":
    unittest.main()
