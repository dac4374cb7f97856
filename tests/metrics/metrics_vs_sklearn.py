"""shim/metrics against scikit-learn on the same seeded data.

Writes cases (labels and [N, C] scores of float32/float64, classes missing
from the predictions, from the targets or from both, ties in the scores, one
sample, one class) with torch.save, runs metrics_dump on them and compares
its results with sklearn.metrics: accuracy_score, top_k_accuracy_score
(labels=range(C)), confusion_matrix (labels=range(C)) and
precision_recall_fscore_support (labels=range(C), average micro, macro,
weighted and None, zero_division 0, 1 and NaN). Counts must be equal and
every float bit-identical (ctorch sums means as numpy does, pairwise).
Usage: metrics_vs_sklearn.py METRICS_DUMP. Exits 77 (skipped) without sklearn.
"""
import math
import os
import subprocess
import sys
import tempfile
import warnings

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/optional_deps.py
from optional_deps import need  # noqa: E402

np = need("numpy")
sklearn = need("sklearn")
skm = need("sklearn.metrics")

warnings.filterwarnings("ignore")


def make_cases():
    rng = np.random.default_rng(20261123)
    cases = []
    for idx in range(60):
        c = int(rng.integers(3, 12))
        n = int(rng.choice([1, 2, 5, 17, 100, 1000]))
        kind = idx % 6
        target = rng.integers(0, c, n)
        if kind == 0:    # labels, a class missing from the predictions
            pred = rng.integers(0, c, n)
            pred[pred == 0] = 1
            cases.append((pred, target, c, 0))
        elif kind == 1:  # labels, classes missing from the targets (and the last from both)
            t2 = rng.integers(0, max(1, c - 2), n)
            pred = rng.integers(0, c - 1, n)
            cases.append((pred, t2, c, 0))
        elif kind == 2:  # mostly right labels
            pred = np.where(rng.random(n) < 0.7, target, rng.integers(0, c, n))
            cases.append((pred, target, c, 0))
        else:            # scores; kind 3 float64, 4 float32, 5 with ties (few distinct values)
            if kind == 5:
                scores = rng.integers(0, 3, (n, c)).astype(np.float32)
            else:
                scores = rng.standard_normal((n, c)).astype(np.float64 if kind == 3 else np.float32)
            k = int(rng.integers(1, c + 2))
            cases.append((scores, target, c, k))
    # one sample, one class
    cases.append((np.array([0]), np.array([0]), 1, 0))
    cases.append((np.array([[0.5]], dtype=np.float32), np.array([0]), 1, 0))  # sklearn has no top-k for one class
    return cases


def sk_prf(t, p, c, avg, zd):
    return skm.precision_recall_fscore_support(t, p, labels=list(range(c)), average=avg, zero_division=zd)


def main():
    dump = sys.argv[1]
    cases = make_cases()
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "in.pt"), os.path.join(tmp, "out.pt")
        d = {}
        for i, (pred, target, c, k) in enumerate(cases):
            d[f"{i}.pred"] = torch.from_numpy(np.ascontiguousarray(pred))
            d[f"{i}.target"] = torch.from_numpy(target.astype(np.int64))
            d[f"{i}.meta"] = torch.tensor([c, k], dtype=torch.int64)
        torch.save(d, src)
        subprocess.run([dump, src, dst], check=True)
        got = torch.load(dst)
    failures = []
    exact = close = 0
    zds = [0.0, 1.0, np.nan]

    def same(what, a, b, tol):
        nonlocal exact, close
        a = np.asarray(a, dtype=np.float64)
        b = np.asarray(b, dtype=np.float64)
        if a.shape != b.shape:
            failures.append(f"{what}: shape {a.shape} vs {b.shape}")
        elif np.array_equal(a, b, equal_nan=True):
            exact += 1
        elif tol and np.allclose(a, b, rtol=0, atol=tol, equal_nan=True):
            close += 1
        else:
            failures.append(f"{what}: ctorch {a.tolist()} sklearn {b.tolist()}")

    for i, (pred, target, c, k) in enumerate(cases):
        p = pred.argmax(1) if pred.ndim == 2 else pred
        same(f"{i} accuracy", got[f"{i}.acc"].numpy()[0], skm.accuracy_score(target, p), 0)
        if k:
            same(f"{i} top-{k}", got[f"{i}.topk"].numpy()[0],
                 skm.top_k_accuracy_score(target, pred, k=k, labels=list(range(c))), 0)
        cm = skm.confusion_matrix(target, p, labels=list(range(c)))
        if not np.array_equal(got[f"{i}.cm"].numpy(), cm) or got[f"{i}.cm"].dtype != torch.int64:
            failures.append(f"{i} confusion matrix differs")
        prf = got[f"{i}.prf"].numpy().reshape(3, 3, 3)
        for z, zd in enumerate(zds):
            for a, avg in enumerate(["micro", "macro", "weighted"]):
                ref = sk_prf(target, p, c, avg, zd)[:3]
                same(f"{i} {avg} zero_division={zd}", prf[z, a], ref, 0)
            ref = sk_prf(target, p, c, None, zd)
            for j, key in enumerate("prf"):
                same(f"{i} per-class {key} zero_division={zd}", got[f"{i}.pc.{z}.{key}"].numpy(), ref[j], 0)
            if z == 0 and not np.array_equal(got[f"{i}.support"].numpy(), ref[3]):
                failures.append(f"{i} support differs")
    print(f"torch {torch.__version__}, numpy {np.__version__}, scikit-learn {sklearn.__version__}, "
          f"python {sys.version.split()[0]}: {len(cases)} cases, {exact} comparisons bit-identical, "
          f"{len(failures)} failures")
    for f in failures[:20]:
        print("FAIL", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
