#!/usr/bin/env python3
"""GEMM paths inside libtorch against ONNX Runtime.
Shapes: 128x768x3072 (BERT FFN), 1x768x2304 (GPT-2 QKV, decode), 1x768x50257 (GPT-2 head).
Paths: aten::addmm (the wheel's BLAS), mkl::_mkl_linear (packed), mkldnn::_linear_pointwise
(plain weight and prepacked by mkldnn::_reorder_linear_weight), ONNX Runtime Gemm.
Per thread count: best of ROUNDS rounds of the median of N calls. GFLOP/s.
Runs under PyPI's torch 2.x (MKL) and Debian's python3-torch 1.13.1 (OpenBLAS: addmm and
linear only, the others absent there). Environment: ROUNDS (5), THREADS ("1,2"), OUT (the
JSON, default gemm.json here; it also records the torch, its BLAS, the CPU and its flags,
and the load). State the rates against bench/probes/peak_fma.c's figure."""
import os, re, sys, time, json
import numpy as np
import torch
ROUNDS=int(os.environ.get("ROUNDS", 5))
shapes=[(128,768,3072),(1,768,2304),(1,768,50257)]
threads=[int(t) for t in os.environ.get("THREADS","1,2").split(",")]
def timeit(f, flops):
    f(); f()
    best=0
    for r in range(ROUNDS):
        n=20 if flops>1e8 else 200
        ts=[]
        for _ in range(n):
            t=time.perf_counter(); f(); ts.append(time.perf_counter()-t)
        best=max(best, flops/np.median(ts)/1e9)
    return best
res={}
try:
    import onnx, onnxruntime as ort
    from onnx import TensorProto, helper
except ImportError:
    ort=None
for th in threads:
    torch.set_num_threads(th)
    for (M,K,N) in shapes:
        torch.manual_seed(0)
        x=torch.randn(M,K); w=torch.randn(N,K); b=torch.randn(N)
        fl=2*M*K*N
        ref=torch.addmm(b,x,w.t())
        row={}
        with torch.inference_mode():
            row["addmm"]=timeit(lambda: torch.addmm(b,x,w.t()), fl)
            row["linear"]=timeit(lambda: torch.nn.functional.linear(x,w,b), fl)
            if hasattr(torch.ops, "mkl") and hasattr(torch.ops.mkl, "_mkl_linear"):
                pk=torch.ops.mkl._mkl_reorder_linear_weight(w, M)
                y=torch.ops.mkl._mkl_linear(x,pk,w,b,M); assert (y-ref).abs().max()<1e-2*ref.abs().max()
                row["mkl_linear_packed"]=timeit(lambda: torch.ops.mkl._mkl_linear(x,pk,w,b,M), fl)
            if hasattr(torch.ops.mkldnn, "_linear_pointwise"):
                y=torch.ops.mkldnn._linear_pointwise(x,w,b,"none",[],""); assert (y-ref).abs().max()<1e-2*ref.abs().max()
                row["mkldnn_plain"]=timeit(lambda: torch.ops.mkldnn._linear_pointwise(x,w,b,"none",[],""), fl)
                wp=torch.ops.mkldnn._reorder_linear_weight(w, M)
                y=torch.ops.mkldnn._linear_pointwise(x,wp,b,"none",[],""); assert (y-ref).abs().max()<1e-2*ref.abs().max()
                row["mkldnn_prepacked"]=timeit(lambda: torch.ops.mkldnn._linear_pointwise(x,wp,b,"none",[],""), fl)
        if ort is not None:
            g=helper.make_graph([helper.make_node("Gemm",["a","w","b"],["c"],transB=1)],"g",
              [helper.make_tensor_value_info("a",TensorProto.FLOAT,[M,K])],[helper.make_tensor_value_info("c",TensorProto.FLOAT,[M,N])],
              [onnx.numpy_helper.from_array(w.numpy(),"w"), onnx.numpy_helper.from_array(b.numpy(),"b")])
            mo=helper.make_model(g, opset_imports=[helper.make_opsetid("",17)]); mo.ir_version=8
            so=ort.SessionOptions(); so.intra_op_num_threads=th; so.inter_op_num_threads=1
            s=ort.InferenceSession(mo.SerializeToString(), so, providers=["CPUExecutionProvider"])
            xn=x.numpy(); y=s.run(None,{"a":xn})[0]; assert np.abs(y-ref.numpy()).max()<1e-2*np.abs(ref.numpy()).max()
            row["ort_gemm"]=timeit(lambda: s.run(None,{"a":xn}), fl)
        res[f"{M}x{K}x{N} t{th}"]=row
        print(f"{M}x{K}x{N} threads={th}: " + ", ".join(f"{k} {v:.1f}" for k,v in row.items()), flush=True)
blas=re.search(r"BLAS_INFO=(\w+)", torch.__config__.show())
cpu=open("/proc/cpuinfo").read()
flags=sorted(f for f in re.search(r"^flags\s*:(.*)$", cpu, re.M).group(1).split() if re.match(r"(avx|fma|amx)", f))
res["meta"]=dict(torch=torch.__version__, blas=blas.group(1) if blas else "?", threads=threads, rounds=ROUNDS,
                 cpu=re.search(r"^model name\s*:(.*)$", cpu, re.M).group(1).strip(), flags=flags,
                 load=open("/proc/loadavg").read().split()[:3], ort=ort.__version__ if ort else None)
print("torch", torch.__version__, "BLAS", res["meta"]["blas"], "cpu", res["meta"]["cpu"], " ".join(flags),
      "load", *res["meta"]["load"])
out=os.path.abspath(os.environ.get("OUT", "gemm.json"))
os.makedirs(os.path.dirname(out), exist_ok=True)
json.dump(res, open(out,"w"), indent=1)
