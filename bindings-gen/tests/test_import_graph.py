"""The generator's import graph: no module of ctorch_gen imports,
directly or through others, a module that imports it, counting imports made
inside functions too (a circle hidden in a function body is still a circle:
the parts depend on the whole). And the layers of the bindings: a language's
package (go, java, node, py, rust) imports no other language's, and its names
module none of its emitters."""
import ast
import functools
import os
import unittest

PKG_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "ctorch_gen")
LANGS = ("go", "java", "node", "py", "rust")


def modules() -> dict:
    """Module name (ctorch_gen.go.ops) -> file, for every .py file under ctorch_gen."""
    out = {}
    for root, _dirs, files in os.walk(PKG_DIR):
        for fn in files:
            if fn.endswith(".py"):
                rel = os.path.relpath(os.path.join(root, fn), os.path.dirname(PKG_DIR))[:-3]
                name = rel.replace(os.sep, ".")
                out[name[:-len(".__init__")] if name.endswith(".__init__") else name] = os.path.join(root, fn)
    return out


def imports(name: str, path: str, mods: dict) -> set:
    """The ctorch_gen modules that module `name` imports (anywhere in its file)."""
    is_pkg = path.endswith("__init__.py")
    base = name.split(".") if is_pkg else name.split(".")[:-1]
    out = set()
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in mods)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = base[:len(base) - node.level + 1]
                target = ".".join(parts + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for a in node.names:  # `from . import capi` names a module, `from .names import x` a value
                if f"{target}.{a.name}" in mods:
                    out.add(f"{target}.{a.name}")
                elif target in mods:
                    out.add(target)
    out.discard(name)
    return out


@functools.lru_cache(maxsize=None)
def graph() -> dict:
    mods = modules()
    return {n: imports(n, p, mods) for n, p in mods.items()}


def find_cycle(g: dict):
    """A list of modules forming a circle, or None."""
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(g.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                c = visit(m)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None
    for n in sorted(g):
        if n not in state:
            c = visit(n)
            if c:
                return c
    return None


class ImportGraph(unittest.TestCase):
    def test_finds_a_planted_cycle(self):
        # The checker itself can fail: a -> b -> c -> a is reported.
        self.assertEqual(find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}), ["a", "b", "c", "a"])
        self.assertIsNone(find_cycle({"a": {"b"}, "b": set()}))

    def test_reads_relative_imports(self):
        g = graph()
        self.assertIn("ctorch_gen.go.names", g["ctorch_gen.go.ops"])
        self.assertIn("ctorch_gen.hplan", g["ctorch_gen.go.hfuncs"])
        self.assertIn("ctorch_gen.py.capi", g["ctorch_gen.py.package"])  # `from . import capi`

    def test_no_import_cycle(self):
        self.assertIsNone(find_cycle(graph()), "ctorch_gen has an import circle")

    def test_language_layers(self):
        g = graph()
        for n, deps in g.items():
            parts = n.split(".")
            if len(parts) < 3 or parts[1] not in LANGS:
                continue
            for d in deps:
                dp = d.split(".")
                if len(dp) > 1 and dp[1] in LANGS:
                    self.assertEqual(dp[1], parts[1], f"{n} imports another language's {d}")
                    if parts[2] == "names":
                        self.fail(f"{n} (shared names) imports the emitter {d}")
            if parts[2] != "package":
                self.assertNotIn(f"ctorch_gen.{parts[1]}.package", deps, f"{n} imports its package's writer")


if __name__ == "__main__":
    unittest.main()
