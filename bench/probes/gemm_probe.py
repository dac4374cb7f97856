#!/usr/bin/env python3
"""What bounds the BERT points (bench/compare, docs/inference-benchmarks.md): one
BERT-shaped float matmul, 128x768 @ 768x3072 (the intermediate dense of one
sequence), on one thread, through torch 2.15's BLAS (MKL in PyPI's wheel),
through ONNX Runtime's MLAS (a one-node MatMul graph) and, when run with
Debian's Python, Debian's torch 1.13 (the libblas.so.3 alternative).
GFLOP/s, median of 20 calls. Run it with OMP_NUM_THREADS=1."""
import time

import numpy as np
import torch

torch.set_num_threads(1)
M,K,N=128,768,3072
a=torch.randn(M,K); b=torch.randn(K,N)
def bench(f, n=20):
    f(); ts=[]
    for _ in range(n):
        t=time.perf_counter(); f(); ts.append(time.perf_counter()-t)
    return 2*M*K*N/np.median(ts)/1e9
print(f"torch {torch.__version__} mm GFLOP/s {bench(lambda: torch.mm(a, b)):.1f}")
try:
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper
except ImportError:
    raise SystemExit(0)
g=helper.make_graph([helper.make_node("MatMul",["a","b"],["c"])],"g",[helper.make_tensor_value_info("a",TensorProto.FLOAT,[M,K])],[helper.make_tensor_value_info("c",TensorProto.FLOAT,[M,N])],[onnx.numpy_helper.from_array(b.numpy(),"b")])
mo=helper.make_model(g, opset_imports=[helper.make_opsetid("",17)]); mo.ir_version=8  # onnx 1.23 writes IR 14, ORT 1.31 reads up to 13
so=ort.SessionOptions(); so.intra_op_num_threads=1
s=ort.InferenceSession(mo.SerializeToString(), so, providers=["CPUExecutionProvider"])
an=a.numpy()
print(f"onnxruntime {ort.__version__} MatMul (MLAS) GFLOP/s {bench(lambda: s.run(None, {'a': an})):.1f}")
