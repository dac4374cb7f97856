#!/usr/bin/env python3
"""Three models, several ways, same weights, outputs compared.

Run through bench/compare/run, which finds the torch 2.15.0 venv (with
transformers, onnxruntime, torchvision from scripts/torch-env), builds the C
program and the candle program, then calls

    compare.py run --work DIR --build-dir BUILD [--candle BIN] [--models bert,gpt2,resnet50]
                   [--threads 1,2] [--iters N] [--rounds N] [--aoti-options "K=V,...;K=V,..."]
                   [--ways WORDS] [--batches 1,8] [--setup-only] [--device cuda[:N]] [--amp-ways bf16,fp16]
                   [--precisions fp32,bf16,int8] [--profile-behind]

Everything made before timing (models, inputs, ONNX graphs, TorchScript
files, AOTInductor packages) is cached in --work by file name; --setup-only
makes it and stops, so the compiles can run before the quiet measurement.

Ways, each in its own process (threads set before anything runs):
  ctorch eager (C)   bench/compare/model_bench.c: the model from C modules
  ctorch eager, BN folded + channels-last (C)   ResNet-50 only: model_bench.c's
                     resnet50-fold (resnet_fold.c), the same weights with each
                     BatchNorm folded into its convolution, channels-last
  ctorch AOTI (C)    the same model_bench.c running an AOTInductor package
                     compiled here by torch._inductor.aoti_compile_and_package
                     (one package per model and batch size)
  ctorch AOTI frozen (C)   the same, the package compiled from C
                     (aoti_package.c: ctorch_py_aoti_compile_options on the
                     TorchScript file below) with --aoti-options, by default
                     "freezing=1": weights constant, BatchNorm folded, Linear
                     and convolution on prepacked oneDNN with fused activations
                     (each ';'-separated option set a way of its own)
  ctorch TorchScript optimised (C)   model_bench.c jit-optimized: a TorchScript
                     file of the same model (ResNet-50 scripted, BERT traced per
                     batch size) loaded from C and put through
                     ctorch_module_optimize_for_inference (freeze +
                     optimize_for_inference)
  ctorch module optimised (C)   model_bench.c bert-optimized / resnet50-optimized:
                     the C module tree of "ctorch eager (C)" put through
                     ctorch_nn_module_optimize_for_inference
  ctorch module optimised, oneDNN plan (C)   ResNet-50 on the CPU: the same with
                     MODEL_BENCH_OPTIONS=onednn_resnet=1 (convolutions by oneDNN's
                     own primitives, weights laid out once, post-ops fused)
  ctorch module optimised bf16 / int8-dynamic / int8-static (C)   the same
                     with MODEL_BENCH_OPTIONS=precision=bf16 (where the CPU has
                     AVX512_BF16 or AMX_BF16), precision=int8-dynamic (BERT) or
                     precision=int8-static (ResNet-50, calibrated on cal.safetensors:
                     MODEL_BENCH_CALIBRATION); "int8-static, oneDNN plan" both
                     options (the oneDNN plan with int8 convolutions); "int8-dynamic,
                     x86 engine" with int8_engine=x86 (every call on fbgemm's
                     kernels: int8-dynamic's auto takes oneDNN's from 256 rows)
  torch eager        Python, inference_mode (transformers' default attention, SDPA)
  torch.compile      Python, default mode (first calls excluded: warm-up)
  ONNX Runtime       onnxruntime's Python API on torch.onnx.export(dynamo=False)'s
                     graph of the same model, ORT_ENABLE_ALL, intra-op threads set
  ONNX Runtime int8-dynamic   BERT: onnxruntime.quantization.quantize_dynamic
                     (int8 weights) of the same graph, run as above
  ONNX Runtime int8-static    ResNet-50: onnxruntime.quantization's
                     quant_pre_process (constants folded, every shape inferred)
                     then quantize_static of the same graph (QDQ, uint8
                     activations, int8 weights per channel, MinMax calibration
                     on the same cal.safetensors batches; ORT_ENABLE_ALL turns
                     it into QLinearConv): ORT's own recipe, its fastest int8
--precisions fp32,bf16,int8 keeps the ways of those precisions (AMP ways count
as their dtype; int8: int8-dynamic and int8-static). Every ctorch way runs with
CTORCH_HEAP=keep (docs/modules.md, "Memory between calls": glibc keeps freed
activations for the next call, as ONNX Runtime's arena does by default);
--ctorch-heap default runs them on glibc's own policy.
  candle             bench/compare/candle (candle-transformers' BertModel / resnet50
                     on the same safetensors)
GPT-2: examples/generate.c (as it is, the reference of the ratio column: the model
through ctorch_nn_module_optimize_for_inference, one-row Linears split across the
intra-op threads, oneDNN for the prompt's rows where libtorch has it; with
--no-optimize the plain Linears) against
examples/generate.py (transformers' generate, eager and SDPA attention) and
bench/compare/gpt2_ort.py (ONNX Runtime running an exported prefill graph and
a one-step graph with the KV cache as inputs): tok/s of 128 new greedy ids,
ids compared.

Every way reads the same inputs (a safetensors file in0, in1, ...) and writes
its first output; the table gives max |difference| against torch eager
(float32), that over the largest |output|, and for ResNet-50 the share of
images whose top-1 class agrees; the CPU's flags head the table. Per
point: p50 and p99 of the per-call wall times (with few calls p99 is about
the max), throughput (items/s from the mean), and each as a ratio to ctorch's
best path (p50 ratio > 1: slower than ctorch; throughput ratio < 1: slower).
On a GPU (--device cuda) every way runs there: the C
program with MODEL_BENCH_DEVICE set, Python with the model and inputs
moved, each call synchronised before its time is taken; the AOTInductor
packages are compiled for the device; ONNX Runtime runs only if its wheel has
the CUDA execution provider (else the reason is logged and the way left out);
the AOTI-from-C packages (compiled from TorchScript on the CPU) are left out.
--amp-ways adds, per autocast dtype, the model under autocast: "ctorch eager
AMP fp16 (C)" (MODEL_BENCH_AMP) beside "torch eager AMP fp16 (Python)", and
for ResNet-50 the channels-last forms ("ctorch eager, BN folded +
channels-last, AMP fp16 (C)" beside "torch eager, channels-last AMP fp16
(Python)"). GPT-2's two programs take --device too.
--profile-behind: where ctorch's fastest way of a precision is more than 3%
slower than ONNX Runtime's way of that precision (its float32 for bf16) at a
point, both run once more after the timed rounds, each under its own
profiler (model_bench.c's MODEL_BENCH_PROFILE, a Chrome trace; ORT's
enable_profiling), and the results gain "profiles": the top operators by
self time of each side (traces under WORK/profiles/). GPT-2's points are
listed unprofiled: examples/generate.c has no profiler switch; an AOTI
way's profile is one AOTIModelContainerRunner::run (compiled kernels).
A measurement, not a test: nothing here asserts a time.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import profiles  # (bench/compare/profiles.py: --profile-behind)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SEQ = 128


def sh(cmd, env=None, timeout=1800):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}")
    return p.stdout


def load_avg():
    return open("/proc/loadavg").read().split()[0]


# ---------------------------------------------------------------- setup


def bert_setup(work):
    import torch
    from safetensors.torch import save_file
    from transformers import BertConfig, BertModel
    d = os.path.join(work, "bert")
    if not os.path.exists(os.path.join(d, "model.safetensors")):
        torch.manual_seed(0)
        BertModel(BertConfig()).eval().save_pretrained(d, safe_serialization=True)  # BERT-base shape
    for b in (1, 8):
        p = os.path.join(d, f"in_b{b}.safetensors")
        if not os.path.exists(p):
            g = torch.Generator().manual_seed(b)
            ids = torch.randint(1000, 30000, (b, SEQ), generator=g)
            ids[:, 0], ids[:, -1] = 101, 102  # [CLS] ... [SEP]
            save_file({"in0": ids, "in1": torch.ones_like(ids), "in2": torch.zeros_like(ids)}, p)
    return d


def bert_model(d):
    import torch
    from transformers import BertModel

    class Wrap(torch.nn.Module):  # positional (ids, mask, types) -> last_hidden_state
        def __init__(self):
            super().__init__()
            self.m = BertModel.from_pretrained(d).eval()

        def forward(self, ids, mask, types):
            return self.m(input_ids=ids, attention_mask=mask, token_type_ids=types).last_hidden_state
    return Wrap().eval()


def resnet_setup(work):
    import torch
    import torchvision
    from safetensors.torch import save_file
    d = os.path.join(work, "resnet50")
    os.makedirs(d, exist_ok=True)
    f = os.path.join(d, "model.safetensors")
    if not os.path.exists(f):
        torch.manual_seed(0)
        m = torchvision.models.resnet50(weights=None).eval()
        save_file({k: v.contiguous() for k, v in m.state_dict().items()}, f)
    for b in (1, 16):
        p = os.path.join(d, f"in_b{b}.safetensors")
        if not os.path.exists(p):
            g = torch.Generator().manual_seed(b)
            save_file({"in0": torch.randn(b, 3, 224, 224, generator=g)}, p)
    p = os.path.join(d, "cal.safetensors")
    if not os.path.exists(p):  # int8-static's calibration batches (ctorch's and ORT's): 4 of 4, not the timed inputs
        g = torch.Generator().manual_seed(100)
        save_file({f"cal{k}": torch.randn(4, 3, 224, 224, generator=g) for k in range(4)}, p)
    return d


def resnet_model(d):
    import torchvision
    from safetensors.torch import load_file
    m = torchvision.models.resnet50(weights=None)
    m.load_state_dict(load_file(os.path.join(d, "model.safetensors")))
    return m.eval()


MODELS = {"bert": (bert_setup, bert_model, (1, 8)), "resnet50": (resnet_setup, resnet_model, (1, 16))}


def inputs(d, b):
    from safetensors.torch import load_file
    t = load_file(os.path.join(d, f"in_b{b}.safetensors"))
    return [t[f"in{i}"] for i in range(len(t))]


def export_onnx(name, d):
    import torch
    f = os.path.join(d, "model.onnx")
    if not os.path.exists(f):
        args = tuple(inputs(d, 1))
        names = [f"in{i}" for i in range(len(args))]
        with torch.no_grad():
            torch.onnx.export(MODELS[name][1](d), args, f, dynamo=False, opset_version=17, input_names=names,
                              output_names=["out"], dynamic_axes={n: {0: "batch"} for n in names + ["out"]})
    return f


def export_onnx_int8(name, d):
    """ONNX Runtime's own dynamic quantisation of model.onnx (int8 weights,
    activations quantised per call: MatMulInteger / DynamicQuantizeMatMul
    on MLAS's u8s8 kernels), the usual first step of an ORT service.
    Without quant_pre_process: on BERT (and GPT-2's two graphs) it quantises
    the same MatMuls (72 MatMulInteger either way) and the graphs ran alike,
    since ORT_ENABLE_ALL folds what it folds at session creation."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    f = os.path.join(d, "model_int8.onnx")
    if not os.path.exists(f):
        quantize_dynamic(export_onnx(name, d), f + ".tmp.onnx", weight_type=QuantType.QInt8)
        os.replace(f + ".tmp.onnx", f)
    return f


ORT_INT8_STATIC = "model_int8s_pre.onnx"  # (model_int8s.onnx: an older graph made without quant_pre_process)


def export_onnx_int8_static(name, d):
    """ONNX Runtime's own static quantisation of model.onnx as its guide
    prescribes it (the module docstring's "ONNX Runtime int8-static"):
    quant_pre_process first, because the export reaches 47 of the 53
    convolution weights through an Identity node that quantize_static does
    not look through (they would stay float32, never QLinearConv); then
    quantize_static on cal.safetensors, ctorch's calibration batches."""
    from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType,
                                          quantize_static)
    from onnxruntime.quantization.shape_inference import quant_pre_process
    from safetensors.torch import load_file
    f = os.path.join(d, ORT_INT8_STATIC)
    if not os.path.exists(f):
        pre = os.path.join(d, "model_pre.onnx")
        if not os.path.exists(pre):
            quant_pre_process(export_onnx(name, d), pre + ".tmp.onnx")
            os.replace(pre + ".tmp.onnx", pre)
        cal = load_file(os.path.join(d, "cal.safetensors"))

        class Reader(CalibrationDataReader):
            def __init__(self):
                self.it = iter([{"in0": cal[f"cal{k}"].numpy()} for k in range(len(cal))])

            def get_next(self):
                return next(self.it, None)
        quantize_static(pre, f + ".tmp.onnx", Reader(), quant_format=QuantFormat.QDQ,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, per_channel=True,
                        calibrate_method=CalibrationMethod.MinMax)
        os.replace(f + ".tmp.onnx", f)
    return f


def cpu_flags():
    """The flags of /proc/cpuinfo that decide the CPU paths of every way."""
    want = ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "avx_vnni", "amx_tile", "amx_bf16", "amx_int8")
    have = set()
    for ln in open("/proc/cpuinfo"):
        if ln.startswith("flags"):
            have = set(ln.split(":", 1)[1].split())
            break
    return [f for f in want if f in have]


def export_aoti(name, d, b, device="cpu"):
    """One package per batch size: a dynamic batch dimension exported from a
    batch-8 example still refuses batch 1 (export specialises 0/1 sizes)."""
    import torch
    f = os.path.join(d, f"model_b{b}{aoti_suffix(device)}.pt2")
    if not os.path.exists(f):
        with torch.no_grad():
            ep = torch.export.export(MODELS[name][1](d).to(device), tuple(x.to(device) for x in inputs(d, b)))
            torch._inductor.aoti_compile_and_package(ep, package_path=f + ".tmp.pt2")
        os.replace(f + ".tmp.pt2", f)
    return f


def aoti_suffix(device):
    """"" on the CPU (the packages' names before --device), "_cuda" on a GPU."""
    return "" if device == "cpu" else "_" + device.split(":")[0]


def export_torchscript(name, d, b, device="cpu"):
    """The TorchScript file of the ways "ctorch TorchScript optimised (C)" and
    "ctorch AOTI frozen (C)" (whose C compile starts from TorchScript):
    torchvision's ResNet-50 scripted (one file for every batch size); BERT
    traced at batch b (transformers' models do not script; a trace keeps
    the example's shapes where the model's Python turns sizes into ints)."""
    import torch
    # a trace keeps the devices it saw (BERT's attention bias): traced on the device it will run on
    f = os.path.join(d, "model.ts" if name == "resnet50" else f"model_b{b}{aoti_suffix(device)}.ts")
    if not os.path.exists(f):
        m = MODELS[name][1](d)
        with torch.no_grad():
            if name == "resnet50":
                ts = torch.jit.script(m)
            else:
                import warnings
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # the tracer's warnings about Python ints
                    ts = torch.jit.trace(m.to(device), tuple(x.to(device) for x in inputs(d, b)), check_trace=False)
        ts.save(f + ".tmp")
        os.replace(f + ".tmp", f)
    return f


def aoti_c_way(opts):
    """The way's name for one --aoti-options set."""
    short = {"freezing=1": "frozen", "freezing=1,max_autotune=1": "frozen + max_autotune"}
    return f"ctorch AOTI {short.get(opts.replace(' ', ''), opts)} (C)"


def aoti_c_package(a, name, d, b, opts, log):
    """A package of "ctorch AOTI frozen (C)" (or another --aoti-options set),
    compiled from C by aoti_package.c; cached in the work folder per options
    (the file name carries them), like export_aoti's."""
    tag = "".join(ch if ch.isalnum() else "_" for ch in opts)
    f = os.path.join(d, f"model_b{b}_c_{tag}.pt2")
    if not os.path.exists(f):
        t0 = time.time()
        bin_ = os.path.join(a.build_dir, "bench", "compare", "compare_aoti_package")
        out = sh([bin_, export_torchscript(name, d, b), f"{d}/in_b{b}.safetensors", f + ".tmp.pt2", opts],
                 timeout=7200)
        os.replace(f + ".tmp.pt2", f)
        log(f"{name}: AOTI compile from C ({opts}) batch {b} {time.time() - t0:.0f} s "
            f"({out.strip().splitlines()[-1]}; load {load_avg()})")
    return f


# ---------------------------------------------------------------- Python ways (worker)


def worker(a):
    import torch
    from safetensors.torch import save_file
    torch.set_num_threads(a.threads)
    d = os.path.join(a.work, a.model)
    xs = inputs(d, a.batch)
    cuda = a.device != "cpu"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    if a.way == "ort":
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.intra_op_num_threads, so.inter_op_num_threads = a.threads, 1
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        graph = ORT_INT8_STATIC if a.int8_static else "model_int8.onnx" if a.int8 else "model.onnx"
        if a.profile:  # (the whole session is recorded; profiles.top_ops keeps the last run's nodes)
            so.enable_profiling = True
            so.profile_file_prefix = a.profile + ".ort"
        s = ort.InferenceSession(os.path.join(d, graph), so,
                                 providers=["CUDAExecutionProvider" if cuda else "CPUExecutionProvider"])
        feed = {f"in{i}": x.numpy() for i, x in enumerate(xs)}
        f = lambda: torch.from_numpy(s.run(None, feed)[0])  # noqa: E731
    else:
        m = MODELS[a.model][1](d).to(a.device)
        xs = [x.to(a.device) for x in xs]
        if a.channels_last:
            m = m.to(memory_format=torch.channels_last)
            xs = [x.contiguous(memory_format=torch.channels_last) for x in xs]
        if a.way == "compile":
            m = torch.compile(m)
        f = lambda: m(*xs)  # noqa: E731
    if a.amp:
        amp_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[a.amp]
        plain = f
        f = lambda: autocast_call(torch, a.device, amp_dtype, plain)  # noqa: E731
    ms = []
    with torch.inference_mode():
        out = f()
        if a.way == "compile":
            out = f()  # a second warm-up: compile may specialise again on the second call
        sync()
        for _ in range(a.iters):
            t0 = time.perf_counter()
            out = f()
            sync()
            ms.append((time.perf_counter() - t0) * 1e3)
        if a.profile and a.way == "ort":  # one more call, after the timed ones, under ORT's profiler
            f()
            os.replace(s.end_profiling(), a.profile)
    save_file({"out": out.cpu().contiguous()}, a.out)
    print("ms=" + ",".join(f"{v:.3f}" for v in ms))


def autocast_call(torch, device, dtype, f):
    with torch.autocast(device_type=device.split(":")[0], dtype=dtype):
        return f()


def ort_has_cuda():
    import onnxruntime as ort
    return "CUDAExecutionProvider" in ort.get_available_providers(), ort.get_available_providers()


# ---------------------------------------------------------------- driver


def timed_ways(a, name, d):
    c_bin = a.c_bin or os.path.join(a.build_dir, "bench", "compare", "compare_model_bench")
    weights = d if name == "bert" else os.path.join(d, "model.safetensors")
    me = [sys.executable, os.path.abspath(__file__), "worker", "--work", a.work, "--model", name, "--device", a.device]
    ways = {"ctorch eager (C)": lambda b, t, it, o: [c_bin, name, weights, f"{d}/in_b{b}.safetensors", str(it),
                                                     str(t), o]}
    if name == "resnet50":  # what a C user can do today: BatchNorms folded, channels-last (resnet_fold.c)
        ways["ctorch eager, BN folded + channels-last (C)"] = lambda b, t, it, o: [
            c_bin, "resnet50-fold", weights, f"{d}/in_b{b}.safetensors", str(it), str(t), o]
    if name == "resnet50" and a.device != "cpu":  # channels-last alone (cuDNN's NHWC kernels), BatchNorms kept
        ways["ctorch eager, channels-last (C)"] = lambda b, t, it, o: [
            c_bin, "resnet50-cl", weights, f"{d}/in_b{b}.safetensors", str(it), str(t), o]
    for amp in [x for x in a.amp_ways.split(",") if x]:  # autocast, C beside Python (MODEL_BENCH_AMP)
        env = ["env", f"MODEL_BENCH_AMP={amp}"]
        ways[f"ctorch eager AMP {amp} (C)"] = lambda b, t, it, o, env=env: env + [
            c_bin, name, weights, f"{d}/in_b{b}.safetensors", str(it), str(t), o]
        ways[f"torch eager AMP {amp} (Python)"] = lambda b, t, it, o, amp=amp: me + [
            "--way", "eager", "--amp", amp, "--batch", str(b), "--threads", str(t), "--iters", str(it), "--out", o]
        if name == "resnet50":
            ways[f"ctorch eager, BN folded + channels-last, AMP {amp} (C)"] = lambda b, t, it, o, env=env: env + [
                c_bin, "resnet50-fold", weights, f"{d}/in_b{b}.safetensors", str(it), str(t), o]
            ways[f"torch eager, channels-last AMP {amp} (Python)"] = lambda b, t, it, o, amp=amp: me + [
                "--way", "eager", "--amp", amp, "--channels-last", "--batch", str(b), "--threads", str(t), "--iters",
                str(it), "--out", o]
    if name == "resnet50" and a.device != "cpu":
        ways["torch eager, channels-last (Python)"] = lambda b, t, it, o: me + [
            "--way", "eager", "--channels-last", "--batch", str(b), "--threads", str(t), "--iters", str(it), "--out", o]
    if a.aoti:
        ways["ctorch AOTI (C)"] = lambda b, t, it, o: [c_bin, "aoti", f"{d}/model_b{b}{aoti_suffix(a.device)}.pt2",
                                                       f"{d}/in_b{b}.safetensors", str(it), str(t), o]
    for opts in a.aoti_c:  # AOTInductor options from C
        ways[aoti_c_way(opts)] = lambda b, t, it, o, opts=opts: [
            c_bin, "aoti", a.aoti_c[opts][b], f"{d}/in_b{b}.safetensors", str(it), str(t), o]
    # The two inference optimisers, each way timed alone
    ways["ctorch TorchScript optimised (C)"] = lambda b, t, it, o: [
        c_bin, "jit-optimized", export_torchscript(name, d, b, a.device), f"{d}/in_b{b}.safetensors", str(it), str(t), o]
    ways["ctorch module optimised (C)"] = lambda b, t, it, o: [
        c_bin, f"{name}-optimized", weights, f"{d}/in_b{b}.safetensors", str(it), str(t), o]
    if name == "resnet50" and a.device == "cpu":  # the optimiser's oneDNN plan (shim/infer/onednn/)
        ways["ctorch module optimised, oneDNN plan (C)"] = lambda b, t, it, o: [
            "env", "MODEL_BENCH_OPTIONS=onednn_resnet=1", c_bin, f"{name}-optimized", weights,
            f"{d}/in_b{b}.safetensors", str(it), str(t), o]
    # The optimiser's reduced precisions (MODEL_BENCH_OPTIONS), on the CPU:
    # int8-dynamic for BERT (ResNet-50's only Linear is its head), bf16
    # where the CPU has bf16 instructions (the optimiser refuses it elsewhere).
    # int8-static for ResNet-50, calibrated on cal.safetensors.
    precisions = (["int8-dynamic"] if name == "bert" else ["int8-static"]) + (
        ["bf16"] if {"avx512_bf16", "amx_bf16"} & set(cpu_flags()) else [])
    opts = {f" {p}": f"precision={p}" for p in (precisions if a.device == "cpu" else [])}
    if name == "resnet50" and a.device == "cpu":  # int8-static through the oneDNN plan's int8 twin
        opts[" int8-static, oneDNN plan"] = "precision=int8-static,onednn_resnet=1"
    if name == "bert" and a.device == "cpu":  # int8-dynamic with one engine for every call (auto: by row count)
        opts[" int8-dynamic, x86 engine"] = "precision=int8-dynamic,int8_engine=x86"
    for suffix, opt in opts.items():
        cal = [f"MODEL_BENCH_CALIBRATION={d}/cal.safetensors"] if "int8-static" in opt else []
        ways[f"ctorch module optimised{suffix} (C)"] = lambda b, t, it, o, opt=opt, cal=cal: [
            "env", f"MODEL_BENCH_OPTIONS={opt}"] + cal + [c_bin, f"{name}-optimized", weights,
                                                         f"{d}/in_b{b}.safetensors", str(it), str(t), o]
    ways["torch eager (Python)"] = lambda b, t, it, o: me + ["--way", "eager", "--batch", str(b), "--threads", str(t),
                                                             "--iters", str(it), "--out", o]
    ways["torch.compile (Python)"] = lambda b, t, it, o: me + ["--way", "compile", "--batch", str(b), "--threads",
                                                               str(t), "--iters", str(it), "--out", o]
    if a.ort:
        ways["ONNX Runtime (Python API)"] = lambda b, t, it, o: me + ["--way", "ort", "--batch", str(b), "--threads",
                                                                      str(t), "--iters", str(it), "--out", o]
    if a.ort and name == "bert" and a.device == "cpu":
        ways["ONNX Runtime int8-dynamic (Python API)"] = lambda b, t, it, o: me + [
            "--way", "ort", "--int8", "--batch", str(b), "--threads", str(t), "--iters", str(it), "--out", o]
    if a.ort and name == "resnet50" and a.device == "cpu":
        ways["ONNX Runtime int8-static (Python API)"] = lambda b, t, it, o: me + [
            "--way", "ort", "--int8-static", "--batch", str(b), "--threads", str(t), "--iters", str(it), "--out", o]
    if a.candle:
        ways["candle"] = lambda b, t, it, o: [a.candle, "bert" if name == "bert" else "resnet", weights,
                                              f"{d}/in_b{b}.safetensors", str(it), o]
    return {k: v for k, v in ways.items() if wanted(a, k)}


def precision_of(way):
    """fp32, bf16 or int8: the arithmetic a way runs (--precisions)."""
    return "int8" if "int8" in way else "bf16" if "bf16" in way else "fp16" if "fp16" in way else "fp32"


def wanted(a, way):
    # torch eager (float32) stays: the reference of every accuracy column
    if a.precisions and way != "torch eager (Python)" and precision_of(way) not in a.precisions.split(","):
        return False
    return not a.ways or any(w in way for w in a.ways.split(","))


def run_model(a, name, rows, log):
    import torch
    from safetensors.torch import load_file
    setup, _, batches = MODELS[name]
    batches = [b for b in batches if not a.batches or str(b) in a.batches.split(",")]
    d = setup(a.work)
    # (the float graph also where only a quantised ORT way is wanted: it is
    # what ORT's quantisation starts from)
    if a.ort and any(wanted(a, w) for w in ("ONNX Runtime", "ONNX Runtime int8-dynamic", "ONNX Runtime int8-static")):
        t0 = time.time()
        export_onnx(name, d)
        log(f"{name}: ONNX export {time.time() - t0:.0f} s")
        if name == "bert" and a.device == "cpu" and wanted(a, "ONNX Runtime int8-dynamic"):
            t0 = time.time()
            export_onnx_int8(name, d)
            log(f"{name}: ONNX Runtime quantize_dynamic {time.time() - t0:.0f} s")
        if name == "resnet50" and a.device == "cpu" and wanted(a, "ONNX Runtime int8-static"):
            t0 = time.time()
            export_onnx_int8_static(name, d)
            log(f"{name}: ONNX Runtime quantize_static {time.time() - t0:.0f} s")
    if a.aoti and wanted(a, "ctorch AOTI (C)"):
        for b in batches:
            t0 = time.time()
            export_aoti(name, d, b, a.device)
            log(f"{name}: AOTI compile batch {b} on {a.device} {time.time() - t0:.0f} s (load {load_avg()})")
    a.aoti_c = {}  # options -> batch -> package
    for b in batches:
        if wanted(a, "ctorch TorchScript optimised (C)"):
            export_torchscript(name, d, b, a.device)
        for opts in ([o.strip() for o in a.aoti_options.split(";") if o.strip()] if a.aoti and a.device == "cpu"
                     else []):  # (compiled from TorchScript with CPU inputs: not on a GPU)
            if not wanted(a, aoti_c_way(opts)):
                continue
            a.aoti_c.setdefault(opts, {})
            try:
                a.aoti_c[opts][b] = aoti_c_package(a, name, d, b, opts, log)
            except Exception as e:  # reported, not fatal: the other ways still run
                log(f"{name}: AOTI compile from C ({opts}) batch {b} FAILED {str(e)[-600:]}")
    if a.setup_only:
        return
    ways = timed_ways(a, name, d)
    for t in a.threads:
        env = dict(os.environ, OMP_NUM_THREADS=str(t), MKL_NUM_THREADS=str(t), RAYON_NUM_THREADS=str(t))
        for b in batches:
            iters = max(3, a.iters // b) if name == "bert" else max(3, a.iters // max(1, b // 4))
            if a.device != "cpu":
                iters = a.iters  # a GPU call is milliseconds at every batch
            res = {}
            for r in range(a.rounds):  # interleaved rounds: the load of other jobs hits every way alike
                for w, cmd in ways.items():
                    if r > 0 and "compile" in w:
                        continue  # each torch.compile process recompiles (40-60 s here): one round only
                    o = os.path.join(a.work, f"out_{name}_{b}_{t}_{len(res)}.safetensors")
                    la = load_avg()
                    try:
                        out = sh(cmd(b, t, iters, o), env=env)
                    except Exception as e:  # a way that fails is reported, not fatal
                        log(f"{name} b{b} t{t} {w}: FAILED {str(e)[-600:]}")
                        continue
                    ms = [float(v) for v in out.strip().splitlines()[-1].split("=", 1)[1].split(",")]
                    prev = res.get(w, dict(ms=[], loads=[]))
                    res[w] = dict(ms=prev["ms"] + ms, out=load_file(o)["out"], loads=prev["loads"] + [la])
                    lo = sorted(res[w]["loads"], key=float)
                    res[w]["load"] = lo[0] if lo[0] == lo[-1] else f"{lo[0]}-{lo[-1]}"
                    log(f"{name} b{b} t{t} round {r + 1} {w}: p50 {statistics.median(ms):.1f} ms (load {la})")
            ref = res.get("torch eager (Python)")
            best = min((v for k, v in res.items() if k.startswith("ctorch")), default=None,
                       key=lambda v: statistics.median(v["ms"]))
            for w, v in res.items():
                ms = sorted(v["ms"])
                p50, p99 = statistics.median(ms), ms[min(len(ms) - 1, int(round(0.99 * (len(ms) - 1))))]
                thr = b * 1e3 / statistics.mean(ms)
                row = dict(model=name, batch=b, threads=t, way=w, n=len(ms), p50=p50, p99=p99, thr=thr,
                           load=v["load"], ms=v["ms"])
                if best:
                    bms = best["ms"]
                    row["r50"] = p50 / statistics.median(bms)
                    row["rthr"] = thr / (b * 1e3 / statistics.mean(bms))
                if ref is not None and ref["out"].shape == v["out"].shape:
                    got, want = v["out"].float(), ref["out"].float()
                    row["diff"] = (got - want).abs().max().item()
                    row["rel"] = row["diff"] / want.abs().max().item()
                    if name == "resnet50":  # the classes' agreement over the batch's images
                        row["top1"] = (got.argmax(-1) == want.argmax(-1)).float().mean().item()
                rows.append(row)
            if a.profile_behind:
                profile_behind(a, name, b, t, ways, res, env, log)


def run_gpt2(a, rows, log):
    """examples/generate.c against examples/generate.py, as bench/generate_bench.py does."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel
    d = os.path.join(a.work, "gpt2")
    if not os.path.exists(os.path.join(d, "model.safetensors")):
        torch.manual_seed(0)
        cfg = GPT2Config(n_layer=12, n_embd=768, n_head=12, vocab_size=50257, n_positions=1024, bos_token_id=None,
                         eos_token_id=None)
        GPT2LMHeadModel(cfg).save_pretrained(d, safe_serialization=True)
    g = torch.Generator().manual_seed(1)
    prompt = ",".join(str(v) for v in torch.randint(0, 50257, (32,), generator=g).tolist())
    ways = {"ctorch generate.c (C)": [os.path.join(a.build_dir, "examples", "generate")],  # optimised for inference
            "ctorch generate.c --no-optimize (C)": [os.path.join(a.build_dir, "examples", "generate"), "--no-optimize"],
            "transformers generate, eager attn": [sys.executable, os.path.join(ROOT, "examples", "generate.py"),
                                                  "--attn", "eager"],
            "transformers generate, sdpa": [sys.executable, os.path.join(ROOT, "examples", "generate.py"),
                                            "--attn", "sdpa"],
            "ONNX Runtime (Python API), prefill + step graphs": [sys.executable, os.path.join(HERE, "gpt2_ort.py")]}
    if a.device == "cpu":  # the reduced precisions: ctorch's optimiser beside ORT's quantize_dynamic
        gen = os.path.join(a.build_dir, "examples", "generate")
        ways["ctorch generate.c int8-dynamic (C)"] = [gen, "--precision", "int8-dynamic"]
        if {"avx512_bf16", "amx_bf16"} & set(cpu_flags()):
            ways["ctorch generate.c bf16 (C)"] = [gen, "--precision", "bf16"]
        ways["ONNX Runtime int8-dynamic (Python API), prefill + step graphs"] = [
            sys.executable, os.path.join(HERE, "gpt2_ort.py"), "--int8"]
    if a.device != "cpu":  # on a GPU generate.c runs the plain Linears (its optimiser is for CPU threads)
        del ways["ctorch generate.c --no-optimize (C)"]
        del ways["ONNX Runtime (Python API), prefill + step graphs"]  # (gpt2_ort.py runs on the CPU)
        for w in ways.values():
            w += ["--device", a.device]
    if a.ways:
        ways = {k: v for k, v in ways.items() if k.startswith("ctorch") or any(w in k for w in a.ways.split(","))}
    if a.precisions:  # (generate.c's float32 way stays: the reference of the ids and ratios)
        ways = {k: v for k, v in ways.items()
                if k == "ctorch generate.c (C)" or precision_of(k) in a.precisions.split(",")}
    for t in a.threads:
        env = dict(os.environ, OMP_NUM_THREADS=str(t), MKL_NUM_THREADS=str(t))
        res = {w: [] for w in ways}
        ids = {}
        for r in range(a.gpt2_rounds):  # interleaved rounds: load hits every way alike
            for w, cmd in ways.items():
                la = load_avg()
                out = sh(cmd + ["--model", d, "--prompt", prompt, "--new", "128", "--threads", str(t)], env=env)
                f = dict(kv.split("=", 1) for kv in out.strip().splitlines()[-1].split())
                res[w].append(float(f["tok_per_s"]))
                ids[w] = f["ids"]
                log(f"gpt2 t{t} round {r + 1} {w}: {float(f['tok_per_s']):.2f} tok/s (load {la})")
        c = statistics.median(res["ctorch generate.c (C)"])
        for w, v in res.items():
            m = statistics.median(v)
            mine, ref_ids = ids[w].split(","), ids["ctorch generate.c (C)"].split(",")
            first = next((i for i, (x, y) in enumerate(zip(mine, ref_ids)) if x != y), None)
            rows.append(dict(model="gpt2", batch=1, threads=t, way=w, n=len(v), thr=m, rthr=m / c,
                             p50=128e3 / m, same_ids=first is None, first_diff=first, load=la))
        if a.profile_behind:  # listed, not profiled: generate.c has no profiler switch
            ms = {w: 128e3 / statistics.median(v) for w, v in res.items()}  # (whole generate)
            a.profiles += [dict(model="gpt2", batch=1, threads=t, precision=prec, ctorch_way=best, ort_way=ort_w,
                                ctorch_p50=ms[best], ort_p50=ms[ort_w], load=la,
                                error="examples/generate.c has no profiler switch (ms: whole generate)")
                           for prec, best, ort_w in profiles.behind(ms, precision_of)]


def profile_behind(a, name, b, t, ways, res, env, log):
    """--profile-behind at one point: where profiles.behind finds ctorch's
    fastest way of a precision behind ONNX Runtime's, run both once more,
    each under its own profiler after its timed calls (model_bench.c's
    MODEL_BENCH_PROFILE, ORT's enable_profiling), and keep their top
    operators by self time."""
    p50 = {w: statistics.median(v["ms"]) for w, v in res.items()}
    for prec, best, ort_w in profiles.behind(p50, precision_of):
        pdir = os.path.join(a.work, "profiles")
        os.makedirs(pdir, exist_ok=True)
        stem = os.path.join(pdir, f"{name}_b{b}_t{t}_{prec}")
        o = os.path.join(a.work, "profile_out.safetensors")
        entry = dict(model=name, batch=b, threads=t, precision=prec, ctorch_way=best, ort_way=ort_w,
                     ctorch_p50=p50[best], ort_p50=p50[ort_w], load=load_avg())
        try:
            sh(ways[best](b, t, 1, o), env=dict(env, MODEL_BENCH_PROFILE=stem + "_ctorch.json"))
            sh(ways[ort_w](b, t, 1, o) + ["--profile", stem + "_ort.json"], env=env)
            entry["ctorch_ops"] = profiles.top_ops(stem + "_ctorch.json")
            entry["ort_ops"] = profiles.top_ops(stem + "_ort.json")
            entry["ctorch_trace"], entry["ort_trace"] = stem + "_ctorch.json", stem + "_ort.json"
        except Exception as e:  # reported, not fatal
            entry["error"] = str(e)[-600:]
        log(f"{name} b{b} t{t} {prec}: {best} {p50[best]:.1f} ms behind {ort_w} {p50[ort_w]:.1f} ms: profiled"
            + (f" (FAILED {entry['error']})" if "error" in entry else ""))
        a.profiles.append(entry)


def table(rows):
    out = ["| model | batch | threads | way | calls | p50 ms | p99 ms | items/s | p50 / ctorch best | items/s / "
           "ctorch best | max abs diff vs torch eager (/ max abs; top-1 agreement) | load |", "|" + "---|" * 12]
    for r in rows:
        if r["model"] == "gpt2":
            same = "same" if r["same_ids"] else f"differ from new id {r['first_diff']}"
            out.append(f"| gpt2 (32 + 128 greedy) | 1 | {r['threads']} | {r['way']} | {r['n']} rounds | "
                       f"{r['p50']:.0f} (whole generate) | | {r['thr']:.2f} tok/s | {1 / r['rthr']:.3f} | "
                       f"{r['rthr']:.3f} | ids {same} | {r['load']} |")
            continue
        diff = f"{r['diff']:.2e} ({r['rel']:.1e}" + (f"; {r['top1']:.2f})" if "top1" in r else ")") if "diff" in r else "n/a"
        out.append(f"| {r['model']} | {r['batch']} | {r['threads']} | {r['way']} | {r['n']} | {r['p50']:.1f} | "
                   f"{r['p99']:.1f} | {r['thr']:.2f} | {r.get('r50', float('nan')):.3f} | "
                   f"{r.get('rthr', float('nan')):.3f} | {diff} | {r['load']} |")
    return "\n".join(out)


def versions(a):
    import onnxruntime
    import torch
    import transformers
    v = dict(torch=torch.__version__, transformers=transformers.__version__, onnxruntime=onnxruntime.__version__)
    try:
        import torchvision
        v["torchvision"] = torchvision.__version__
    except ImportError:
        pass
    lock = os.path.join(HERE, "candle", "Cargo.lock")
    if os.path.exists(lock):
        txt = open(lock).read()
        i = txt.find('name = "candle-core"')
        if i >= 0:
            v["candle"] = txt[i:].split('version = "', 1)[1].split('"', 1)[0]
    v["cpu"] = [ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")][0]
    v["cpu_flags"] = " ".join(cpu_flags())
    if a.device != "cpu":
        v["gpu"] = torch.cuda.get_device_name(torch.device(a.device))
        v["cuda"] = torch.version.cuda
        v["onnxruntime_providers"] = a.ort_providers
    v["cores"] = os.cpu_count()
    return v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["run", "worker"])
    ap.add_argument("--work", required=True)
    ap.add_argument("--c-bin", help="model_bench's path (default: BUILD/bench/compare/compare_model_bench)")
    ap.add_argument("--build-dir")
    ap.add_argument("--candle")
    ap.add_argument("--models", default="bert,gpt2,resnet50")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--iters", type=int, default=10, help="timed calls at batch 1 (fewer at larger batches)")
    ap.add_argument("--gpt2-rounds", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2, help="interleaved rounds per point (torch.compile: one)")
    ap.add_argument("--no-aoti", dest="aoti", action="store_false")
    ap.add_argument("--aoti-options", default="freezing=1",
                    help="ctorch_py_aoti_compile_options' KEY=VALUE lists, separated by ';', one way each (default: "
                         "\"ctorch AOTI frozen (C)\"; \"\": none)")
    ap.add_argument("--setup-only", action="store_true",
                    help="make the models, inputs, ONNX graphs, TorchScript files and packages in --work, time nothing "
                         "(a later run reuses them: compile on a busy machine, measure on a quiet one)")
    ap.add_argument("--batches", help="only these of the model's batch sizes (comma-separated)")
    ap.add_argument("--ways", help="only the ways whose name contains one of these comma-separated words")
    ap.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N: where every way runs (see the top)")
    ap.add_argument("--amp-ways", default="", help="autocast dtypes (bf16,fp16): a ctorch and a torch way each")
    ap.add_argument("--precisions", default="", help="only the ways of these precisions (fp32,bf16,int8; default all)")
    ap.add_argument("--profile-behind", action="store_true",
                    help="where ctorch's best way of a precision is >3%% slower than ORT's, profile both once more "
                         "(BERT, ResNet-50 on the CPU) and add their top operators by self time to the results")
    ap.add_argument("--ctorch-heap", default="keep", choices=["keep", "default"],
                    help="CTORCH_HEAP for the ctorch ways: keep (the default: glibc keeps freed activations, the "
                         "documented setting for a service, as ONNX Runtime's arena is its default) or default "
                         "(glibc's own policy)")
    ap.add_argument("--profile", help=argparse.SUPPRESS)
    # worker
    ap.add_argument("--amp", help=argparse.SUPPRESS)
    ap.add_argument("--channels-last", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--int8", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--int8-static", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--model")
    ap.add_argument("--way")
    ap.add_argument("--batch", type=int)
    ap.add_argument("--out")
    a = ap.parse_args()
    if a.cmd == "worker":
        a.threads = int(a.threads)
        return worker(a)
    a.threads = [int(t) for t in a.threads.split(",")]
    a.work = os.path.abspath(a.work)
    if a.ctorch_heap == "keep":  # read by libctorch when it loads: the ctorch ways' processes only
        os.environ["CTORCH_HEAP"] = "keep"
    else:
        os.environ.pop("CTORCH_HEAP", None)
    a.ort = True
    if a.device != "cpu":
        os.environ["MODEL_BENCH_DEVICE"] = a.device  # the C program's device (model_bench.c)
        a.ort, a.ort_providers = ort_has_cuda()
    os.makedirs(a.work, exist_ok=True)
    logf = open(os.path.join(a.work, "log.txt"), "a")

    def log(msg):
        line = f"{time.strftime('%H:%M:%S')} {msg}"
        print(line, flush=True)
        logf.write(line + "\n")
        logf.flush()
    v = versions(a)
    log(f"versions {json.dumps(v)}; uptime: {sh(['uptime']).strip()}")
    if not a.ort:
        log(f"ONNX Runtime left out: its wheel has no CUDAExecutionProvider (providers: {', '.join(a.ort_providers)})")
    rows = []
    a.profiles = []  # --profile-behind's entries
    tag = a.models + (f"-{a.ways}" if a.ways else "") + (f"-{a.precisions}" if a.precisions else "") + \
        f"-t{','.join(map(str, a.threads))}"
    tag = "".join(ch if ch.isalnum() or ch in ",.-" else "_" for ch in tag)
    for name in a.models.split(","):
        if name == "gpt2":
            if not a.setup_only:  # (its model is saved by run_gpt2 itself)
                run_gpt2(a, rows, log)
        else:
            run_model(a, name, rows, log)
        with open(os.path.join(a.work, f"results-{tag}.json"), "w") as f:
            json.dump(dict(versions=v, rows=rows, **({"profiles": a.profiles} if a.profile_behind else {})), f,
                      indent=1)
        log(f"after {name}: uptime: {sh(['uptime']).strip()}")
    t = f"CPU: {v['cpu']}, {v['cores']} cores; flags: {v['cpu_flags']}\n\n" + table(rows)
    if a.profile_behind:
        t += "\n\n## Profiles of the points behind ONNX Runtime (top operators by self time, one call each)\n" + (
            profiles.tables(a.profiles) if a.profiles else "\nNone: no point more than 3% behind.")
    open(os.path.join(a.work, f"results-{tag}.md"), "w").write(t + "\n")
    print(t)


if __name__ == "__main__":
    main()
