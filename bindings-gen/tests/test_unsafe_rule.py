"""The structural unsafe rule (plan.rule_unsafe): names that
say unsafe and `bool unsafe` arguments mark an operator unsafe unless a guard
covers it or it is listed as memory-safe; the guards of the guards_*.h headers
count (plan.guard_headers)."""
import os
import unittest

from ctorch_gen.model import parse_schema
from ctorch_gen.plan import apply_safety, guard_headers, guarded_names, plan_function

SRC = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def plan(schema):
    return plan_function(parse_schema(schema))


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


class UnsafeRule(unittest.TestCase):
    def test_names_and_switches(self):
        coo = plan("_sparse_coo_tensor_unsafe(Tensor indices, Tensor values, int[] size, *, ScalarType? dtype=None, "
                   "Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor")
        bsr = plan("_sparse_bsr_tensor_unsafe(Tensor crow_indices, Tensor col_indices, Tensor values, int[] size, *, "
                   "ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor")
        seg = plan("segment_reduce(Tensor data, str reduce, *, Tensor? lengths=None, Tensor? indices=None, "
                   "Tensor? offsets=None, int axis=0, bool unsafe=False, Scalar? initial=None) -> Tensor")
        view = plan("_unsafe_view(Tensor self, SymInt[] size) -> Tensor")
        split = plan("unsafe_split.Tensor(Tensor self, int split_size, int dim=0) -> Tensor[]")
        relu = plan("relu(Tensor self) -> Tensor")
        apply_safety([coo, bsr, seg, view, split, relu], {"_sparse_coo_tensor_unsafe"}, {})
        self.assertIsNone(coo.unsafe)          # guarded
        self.assertIn("name says unsafe", bsr.unsafe)  # not guarded in this call
        self.assertIn("'unsafe'", seg.unsafe)
        self.assertIsNone(view.unsafe)         # memory-safe on the evidence
        self.assertIsNone(split.unsafe)
        self.assertIsNone(relu.unsafe)

    def test_list_reason_wins_and_guards_include_their_headers(self):
        p = plan("_sparse_csr_tensor_unsafe(Tensor crow_indices, Tensor col_indices, Tensor values, int[] size, *, "
                 "ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor")
        apply_safety([p], set(), {"ctorch__sparse_csr_tensor_unsafe": "seen crashing"})
        self.assertEqual(p.unsafe, "seen crashing")
        names = guarded_names(guard_headers(os.path.join(SRC, "shim", "ops", "guards.h"), _read))
        for n in ("_sparse_coo_tensor_unsafe", "_sparse_csr_tensor_unsafe", "_convert_indices_from_coo_to_csr_out",
                  "_batch_norm_with_update_out", "native_batch_norm"):
            self.assertIn(n, names)


if __name__ == "__main__":
    unittest.main()
