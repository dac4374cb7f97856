// The bridge's Python half, run once by ctorch_py_start into the module
// "_ctorch_bridge" (after the torch check: it imports torch). Kept in Python
// because each step is one call of PyTorch's own API; the C++ side
// (bridge.cpp, values.cpp, uses.cpp) calls these functions by name.
#pragma once

// Runs before torch is imported: where the interpreter's torch is and which
// version it is, read from torch/version.py (plain assignments) so that a
// mismatched torch is refused before its libtorch is loaded into a process
// that already has another.
static const char kProbeSource[] = R"PY(
import os, sys, importlib.util
def probe():
    mod = sys.modules.get("torch")
    if mod is not None:
        d, ver = os.path.dirname(mod.__file__), mod.__version__
    else:
        spec = importlib.util.find_spec("torch")
        if spec is None or not spec.submodule_search_locations:
            return (sys.executable or "", os.pathsep.join(sys.path))
        d = list(spec.submodule_search_locations)[0]
        vf = os.path.join(d, "version.py")
        ns = {}
        with open(vf, encoding="utf-8") as f:
            exec(compile(f.read(), vf, "exec"), ns)
        ver = ns.get("__version__")
    lib = os.path.join(d, "lib", "libtorch_cpu.so")
    return (str(ver), os.path.realpath(lib) if os.path.exists(lib) else "", d, sys.executable or "")
)PY";

static const char kHelperSource[] = R"PY(
import importlib, inspect, os, re, warnings
import torch
import torch.utils.dlpack as _dl

Tensor = torch.Tensor

def tensor_from_capsule(cap, is_bool):
    t = _dl.from_dlpack(cap)
    return t.view(torch.bool) if is_bool else t

def tensor_to_capsule(t):
    if not isinstance(t, torch.Tensor):
        if not hasattr(t, "__dlpack__"):
            raise TypeError(f"expected a torch.Tensor (or an object with __dlpack__), got {type(t).__name__}")
        t = _dl.from_dlpack(t)
    t = t.detach()
    is_bool = t.dtype == torch.bool
    if is_bool:
        t = t.view(torch.uint8)
    return _dl.to_dlpack(t), is_bool

def module_to_file(model, inputs, path):
    if not isinstance(model, torch.jit.ScriptModule):
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"expected a torch.nn.Module, got {type(model).__name__}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = torch.jit.trace(model, tuple(inputs))
    torch.jit.save(model, path)

def module_from_file(path):
    return torch.jit.load(path)

def _outputs(m, inputs):
    with torch.no_grad():
        out = m(*inputs)
    if isinstance(out, torch.Tensor):
        return 1
    if isinstance(out, (tuple, list)) and all(isinstance(o, torch.Tensor) for o in out):
        return len(out)
    raise TypeError(f"the module must return a tensor or a tuple of tensors, got {type(out).__name__}")

def onnx_export(ts_path, inputs, path, opset, dynamic):
    m = torch.jit.load(ts_path)
    m.eval()
    inputs = tuple(inputs)
    ins = [f"input{i}" for i in range(len(inputs))]
    outs = [f"output{i}" for i in range(_outputs(m, inputs))]
    kw = dict(input_names=ins, output_names=outs)
    if opset:
        kw["opset_version"] = int(opset)
    if dynamic:
        kw["dynamic_axes"] = {n: {0: "batch"} for n in ins + outs}
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kw["dynamo"] = False  # the TorchScript exporter: the module is TorchScript
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(m, inputs, path, **kw)

def inductor_options(config, text):
    """ctorch_py_aoti_compile_options' KEY=VALUE items as inductor_configs, each
    KEY a setting of torch._inductor.config and each VALUE of that setting's type."""
    out = {}
    for item in re.split(r"[,\s]+", text.strip()):
        if not item:
            continue
        key, sep, val = item.partition("=")
        if not sep or not key or not val:
            raise ValueError(f"argument 'options': {item!r} is not KEY=VALUE")
        *parents, leaf = key.split(".")
        obj = config
        for p in parents:
            obj = getattr(obj, p, None)
        if obj is None or leaf.startswith("_") or not hasattr(obj, leaf):
            raise ValueError(f"argument 'options': {key!r} is not a torch._inductor.config setting")
        cur = getattr(obj, leaf)
        try:
            if isinstance(cur, bool):
                v = {"1": True, "true": True, "0": False, "false": False}[val.lower()]
            elif isinstance(cur, int):
                v = int(val)
            elif isinstance(cur, float):
                v = float(val)
            elif cur is None or isinstance(cur, str):
                v = val
            else:
                raise ValueError(f"argument 'options': {key!r} is a {type(cur).__name__}, which options cannot set")
        except (KeyError, ValueError) as e:
            if isinstance(e, ValueError) and str(e).startswith("argument"):
                raise
            raise ValueError(f"argument 'options': {key}={val!r} is not a {type(cur).__name__}") from None
        out[key] = v
    return out

def aoti_compile(ts_path, inputs, package_path, dynamic, max_batch, options=None):
    try:
        inductor = importlib.import_module("torch._inductor")
        from torch._export.converter import TS2EPConverter
    except ImportError as e:
        raise NotImplementedError(f"torch {torch.__version__} has no torch.export + AOTInductor packaging "
                                  f"(torch >= 2.6 has): {e}") from None
    if not hasattr(inductor, "aoti_compile_and_package"):
        raise NotImplementedError(f"torch {torch.__version__} has no torch._inductor.aoti_compile_and_package")
    user_configs = inductor_options(importlib.import_module("torch._inductor.config"), options) if options else {}
    m = torch.jit.load(ts_path)
    m.eval()
    inputs = tuple(inputs)
    # Size-oblivious shapes: without them export specializes sizes 0 and 1
    # and the package refuses a batch of 1 (seen on 2.15).
    try:
        import torch.fx.experimental._config as fx_config
        oblivious = fx_config.patch(backed_size_oblivious=True)
    except (ImportError, AttributeError):
        import contextlib
        oblivious = contextlib.nullcontext()
    # Autograd off: Inductor freezes (folds weights, lowers Linear and
    # convolution to prepacked oneDNN, fuses their activations) only when
    # grad is disabled (compile_fx's `config.freezing and not
    # torch.is_grad_enabled()`); with grad on, freezing=1 compiled the same
    # aten addmm/convolution calls as no options (seen on 2.15).
    with warnings.catch_warnings(), oblivious, torch.no_grad():
        warnings.simplefilter("ignore")
        ep = TS2EPConverter(m, inputs).convert()
        if dynamic:
            batch = torch.export.Dim("batch", min=1, max=int(max_batch))
            ep = torch.export.export(ep.module(), inputs, dynamic_shapes=tuple({0: batch} for _ in inputs))
        # ctorch's loader runs the package's input checks
        # (AOTI_RUNTIME_CHECK_INPUTS), whose lower bound for a dynamic size
        # is 2 even here: let a batch of 1 through (the upper bound stays).
        configs = {}
        if dynamic and hasattr(inductor.config.aot_inductor, "check_lowerbound"):
            configs["aot_inductor.check_lowerbound"] = False
        configs.update(user_configs)
        return inductor.aoti_compile_and_package(ep, package_path=package_path, inductor_configs=configs)
)PY";
