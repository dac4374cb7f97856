/**
 * @defgroup python Python bridge (ctorch_python.h)
 *
 * ctorch_python.h: the Python bridge, an optional second library
 * (libctorch_python.so; pkg-config ctorch-python; CMake ctorch::python).
 *
 * It calls Python from a ctorch program: start an embedded interpreter (or
 * attach to the one already running in the process), import modules, call
 * any callable with ctorch values, and get ctorch values back. Tensors cross
 * both ways through DLPack without a copy. It is built only where the
 * libtorch ctorch was built against comes with a Python whose torch is that
 * same libtorch (CMake's CTORCH_TORCH_PYTHON), and linked against that
 * Python's libpython.
 *
 * Conventions are ctorch.h's, with two differences:
 *  - Errors.  Every function returns a ctorch_status; the message of a
 *    failure is in ctorch_py_last_error() (thread-local, this library's own:
 *    ctorch_last_error() keeps reporting libctorch's calls). A Python
 *    exception becomes TYPE (TypeError), VALUE (ValueError), INDEX
 *    (IndexError, KeyError), NOT_IMPLEMENTED, OUT_OF_MEMORY (MemoryError),
 *    IO (OSError) or RUNTIME (any other), and the message carries the
 *    exception and its Python traceback.
 *  - The GIL.  Every function takes the GIL for the time of the call and
 *    gives it back before returning, so any thread may call any function
 *    (calls from different threads run one at a time in Python, as Python
 *    threads do). No function of ctorch.h ever takes it, except where
 *    dropping the last reference to a tensor that Python made (torch's own
 *    DLPack deleter) releases a Python object.
 *
 * Ownership.  A ctorch_py_object is a strong reference to one Python object:
 * NEW through out-parameters (free with ctorch_py_object_free), BORROWED as
 * inputs. ctorch_value and ctorch_tensor outputs are NEW as in ctorch.h.
 * The interpreter is never finalized: it lives until the process exits.
 *
 * Tensors.  A ctorch tensor given to Python arrives as a torch.Tensor over
 * the same memory (no copy; requires_grad is not carried, as DLPack has no
 * place for it); a torch.Tensor returned to C arrives as a ctorch tensor over
 * the same memory (detached first). bool tensors cross as uint8 views, so
 * torch 1.13 (no DLPack bool) takes them too. Either side may drop its
 * reference first; the memory goes with the last.
 * @{
 */
#ifndef CTORCH_PYTHON_H
#define CTORCH_PYTHON_H

#include "ctorch.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A strong reference to a Python object. */
typedef struct ctorch_py_object_s *ctorch_py_object;

/** Borrowed: the message of this thread's last failed bridge call; "" if none. Valid until this thread's next failing call. */
CTORCH_API const char *ctorch_py_last_error(void);

/**
 * Starts the embedded interpreter, or attaches to the one running in the
 * process (ctorch loaded into Python). *started is 1 if this call started
 * it, 0 if it was running (started may be NULL). Calling it again returns
 * the first call's result.
 * python: the interpreter whose environment (a venv's site-packages,
 * PYTHONHOME) the embedded one takes, as a path to its executable; NULL
 * means $CTORCH_PYTHON, else the CTORCH_TORCH_PYTHON the library was built
 * with. It must be the Python version the library was built for (ignored
 * when attaching).
 * Before torch is imported, the interpreter's torch is compared with the
 * libtorch of this process (version, and the library file where torch
 * ships its own): a different one is refused with CTORCH_RUNTIME naming
 * both (importing it would load a second libtorch into the process), and
 * every later call fails the same way.
 * @nullable started python
 */
CTORCH_API ctorch_status ctorch_py_start(int *started, const char *python);
/** *out = 1 if ctorch_py_start succeeded in this process, else 0. */
CTORCH_API ctorch_status ctorch_py_is_started(int *out);

/** Frees a reference (takes the GIL). NULL-safe; returns nothing. */
CTORCH_API void ctorch_py_object_free(ctorch_py_object o);

/** New reference to the module `name` (dotted), importing it if needed. */
CTORCH_API ctorch_status ctorch_py_import(ctorch_py_object *out, const char *name);
/** New reference to o.name (name may be dotted: "nn.Linear"). */
CTORCH_API ctorch_status ctorch_py_getattr(ctorch_py_object *out, ctorch_py_object o, const char *name);
/** o.name = value (value borrowed). */
CTORCH_API ctorch_status ctorch_py_setattr(ctorch_py_object o, const char *name, ctorch_py_object value);
/**
 * Runs Python source (statements) in a new module namespace named
 * `name` (NULL: "__ctorch_exec__") and returns that module: its functions
 * and variables are then reached with ctorch_py_getattr. *out is NEW.
 * @nullable name
 */
CTORCH_API ctorch_status ctorch_py_exec(ctorch_py_object *out, const char *source, const char *name);

/**
 * *out = callable(*args, **kwargs). args: n borrowed objects (NULL when
 * n == 0); kwargs: a borrowed dict or NULL. *out is NEW (None is a real
 * object).
 * @nullable kwargs
 */
CTORCH_API ctorch_status ctorch_py_call(ctorch_py_object *out, ctorch_py_object callable, const ctorch_py_object *args,
                                        size_t n, ctorch_py_object kwargs);
/** *out = o.method(*args) (args as for ctorch_py_call). */
CTORCH_API ctorch_status ctorch_py_call_method(ctorch_py_object *out, ctorch_py_object o, const char *method,
                                               const ctorch_py_object *args, size_t n);
/**
 * The value form: *out = callable(*args) with ctorch values in and out,
 * converted as ctorch_py_from_value / ctorch_py_to_value do. *out is NEW.
 */
CTORCH_API ctorch_status ctorch_py_call_values(ctorch_value *out, ctorch_py_object callable, const ctorch_value *args,
                                               size_t n);

/**
 * New Python object from a ctorch value: None, bool, int, float, str,
 * torch.Tensor (zero-copy), list, tuple, dict (recursively). OTHER values
 * -> TYPE.
 */
CTORCH_API ctorch_status ctorch_py_from_value(ctorch_py_object *out, ctorch_value v);
/**
 * New ctorch value from a Python object: None, bool, int (64-bit; larger
 * -> VALUE), float, str, torch.Tensor (zero-copy), list, tuple, dict with
 * str or int keys (recursively). Anything else -> TYPE naming its type.
 */
CTORCH_API ctorch_status ctorch_py_to_value(ctorch_value *out, ctorch_py_object o);
/** New torch.Tensor over t's memory (t borrowed). */
CTORCH_API ctorch_status ctorch_py_from_tensor(ctorch_py_object *out, ctorch_tensor t);
/** New ctorch tensor over the memory of o, a torch.Tensor (TYPE otherwise). */
CTORCH_API ctorch_status ctorch_py_to_tensor(ctorch_tensor *out, ctorch_py_object o);
/** New Python str (s: NUL-terminated UTF-8; invalid UTF-8 -> VALUE). */
CTORCH_API ctorch_status ctorch_py_str(ctorch_py_object *out, const char *s);
/** New dict from n str keys (copied) and borrowed values. */
CTORCH_API ctorch_status ctorch_py_dict(ctorch_py_object *out, const char *const *keys, const ctorch_py_object *values,
                                        size_t n);
/** New string repr(o); free with ctorch_string_free. */
CTORCH_API ctorch_status ctorch_py_repr(char **out, ctorch_py_object o);

/* ---- uses: modules, ONNX, AOTInductor ---------------------------------- */

/**
 * A Python nn.Module into C as a TorchScript module: a ScriptModule is taken
 * as it is, any other module is traced with torch.jit.trace on the n
 * example inputs (borrowed). *out is NEW (ctorch_module_free); its
 * parameters are copies, in the module's current train/eval mode.
 */
CTORCH_API ctorch_status ctorch_py_module_to_c(ctorch_module *out, ctorch_py_object module,
                                               const ctorch_tensor *example_inputs, size_t n);
/** A ctorch TorchScript module (borrowed) into Python: *out is a NEW torch.jit.ScriptModule with copies of its parameters. */
CTORCH_API ctorch_status ctorch_py_module_from_c(ctorch_py_object *out, ctorch_module m);

/**
 * Writes m (a TorchScript module: loaded, traced from C with ctorch_tracer,
 * or from ctorch_py_module_to_c) as an ONNX file at path with
 * torch.onnx.export's TorchScript exporter, for the n example inputs
 * (borrowed). Inputs are named input0.., outputs output0..; dynamic_batch
 * nonzero makes dimension 0 of every input and output dynamic ("batch").
 * opset 0 = the exporter's default. Needs no onnx package on 1.13; on 2.x
 * it passes dynamo=False.
 */
CTORCH_API ctorch_status ctorch_py_onnx_export(ctorch_module m, const ctorch_tensor *example_inputs, size_t n,
                                               const char *path, int64_t opset, int dynamic_batch);

/**
 * Compiles m (a TorchScript module, as for ctorch_py_onnx_export) into an
 * AOTInductor package at package_path: torch._export.converter's
 * TorchScript-to-ExportedProgram converter, torch.export.export of the
 * result (dimension 0 of every input dynamic when dynamic_batch is
 * nonzero, 1..max_batch), then torch._inductor.aoti_compile_and_package.
 * Load it with ctorch_aoti_package_load. Runs the C++ compiler: tens of
 * seconds. torch < 2.6 has no such path: NOT_IMPLEMENTED.
 */
CTORCH_API ctorch_status ctorch_py_aoti_compile(ctorch_module m, const ctorch_tensor *example_inputs, size_t n,
                                                const char *package_path, int dynamic_batch, int64_t max_batch);

/**
 * ctorch_py_aoti_compile with AOTInductor's options: options
 * (borrowed; NULL or "" = none) is a list of KEY=VALUE items separated by
 * commas or spaces, each KEY a torch._inductor.config setting, dotted for a
 * sub-config ("freezing=1, max_autotune=1, cpp.threads=2"), each VALUE read
 * as that setting's type (a bool as 1/0/true/false). For CPU inference:
 * freezing=1 treats the weights as constants, folds them and lowers fp32
 * Linear and convolution to prepacked oneDNN kernels with their activations
 * fused; max_autotune=1 also times Inductor's C++ GEMM template against them
 * (minutes of compiling). An item that is not KEY=VALUE, a KEY that is not a
 * setting, or a VALUE not of its type is CTORCH_VALUE naming it, before
 * anything compiles. ctorch_py_aoti_compile is this with options NULL.
 */
CTORCH_API ctorch_status ctorch_py_aoti_compile_options(ctorch_module m, const ctorch_tensor *example_inputs,
                                                        size_t n, const char *package_path, int dynamic_batch,
                                                        int64_t max_batch, const char *options);

/** @} */

#ifdef __cplusplus
}
#endif
#endif /* CTORCH_PYTHON_H */
