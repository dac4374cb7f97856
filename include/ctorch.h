/**
 * @mainpage ctorch.h - a C ABI over LibTorch
 *
 * THE CONTRACT (read this once; every function below follows it)
 *
 * Status.  Every function returns a ctorch_status; CTORCH_OK (0) is success.
 *   Results come back through out-parameters, which come first in the
 *   argument list. On failure an out-handle is set to NULL (when the out
 *   pointer itself is valid) and the calling thread's last error is set.
 *   Exceptions to "returns a status", all documented where declared:
 *   ctorch_last_error*, ctorch_status_name, the *_free functions (void,
 *   NULL-safe) and the static inline ctorch_scalar_* constructors.
 *
 * Errors.  ctorch_last_error() returns the calling thread's last failure
 *   message, starting with the name of the ctorch function that failed and
 *   the argument at fault where there is one. It is thread-local, borrowed,
 *   valid until the same thread's next failing call, and "" (never NULL) if
 *   the thread never failed. A successful call does not clear it (as errno).
 *   No C++ exception ever crosses this boundary. A binding whose FFI runs
 *   calls on worker threads reads a failure's message from any thread by
 *   its id or ticket (ctorch_error_message, near the end of this header).
 *
 * Ownership.  A ctorch_tensor returned through an out-parameter is NEW: the
 *   caller owns it and frees it with ctorch_tensor_free. A ctorch_tensor
 *   passed as an input is BORROWED: ctorch never frees it and keeps no
 *   reference past the call unless documented (e.g. autograd graphs and
 *   optimizers keep their own references). Each new handle is a distinct
 *   value holding one reference, even when it is a tensor the caller
 *   already has a handle to (an op that returns its input): free each one
 *   once, and compare tensors with ctorch_tensor_is_same. NULL is the
 *   undefined tensor: accepted where the schema says "Tensor?", rejected
 *   with CTORCH_INVALID_ARGUMENT elsewhere. The same rule holds for every
 *   other handle type (lists, generators, ...): new through out-params,
 *   borrowed as inputs. Strings returned as `char **` are new (free with
 *   ctorch_string_free); `const char **` outputs are borrowed static text.
 *
 * Enums and values.  ctorch owns its enums (dtype, device type, layout,
 *   memory format, scalar kind); their numeric values are stable ABI and do
 *   not follow c10's internal numbering. Out-of-range values are rejected
 *   with CTORCH_INVALID_ARGUMENT. Booleans are `int` (0 false, nonzero true).
 *   Optional by-value arguments are pointers (NULL = none). Lists are a
 *   pointer plus a length (pointer may be NULL only when length is 0).
 *   Length 0 is the empty list, exactly PyTorch's [] whatever the pointer;
 *   for an optional list (schema T[]?) NULL is None and any non-NULL
 *   pointer with length 0 is [].
 *
 * Handle checks.  Every handle except ctorch_tensor is recorded by ctorch
 *   from its creation to its free. A function given one that is NULL (where
 *   not optional), already freed (or a scope already left), never returned
 *   by ctorch, or of another handle type returns CTORCH_INVALID_ARGUMENT
 *   naming the argument, without reading the memory it points to. A *_free
 *   given such a pointer frees nothing and sets the thread's last error (so
 *   a double free is harmless). Guaranteed for a handle freed BEFORE the
 *   call; not for one another thread frees during a call using it (do not
 *   free a handle in use), nor for a freed handle whose address a new
 *   handle of the same type has taken. ctorch_tensor handles are checked the
 *   same way, by every entry point, generated operators included: a tensor
 *   handle is a slot number and a generation, not an address, so a freed
 *   one is refused until its slot has been reused 65,535 times; two threads
 *   freeing one tensor handle at the same instant is not caught
 *   (shim/core/README.md). As a handle is not a pointer, LeakSanitizer
 *   reports a tensor whose handle is still live at exit as leaked, even
 *   when the handle is in a global: free handles before exit.
 *
 * Threads.  Functions may be called from any thread. Distinct tensors may
 *   be used concurrently. Tensor data writes are exclusive per storage,
 *   enforced: while a call writes a tensor (an in-place or out= argument,
 *   Tensor(a!) in its schema, also by name through ctorch_op_call; an
 *   optimizer's step writing its parameters), a call on another thread that
 *   writes the same storage, through any handle that shares it (the same
 *   tensor, ctorch_tensor_ref, a view, detach, alias), returns CTORCH_BUSY
 *   naming the function and argument and does nothing. The thread holding
 *   the storage may write it again inside that call (a step closure). Writes
 *   to different storages never get BUSY; two threads writing disjoint
 *   slices of one storage do (the storage is the unit). Reads are not held:
 *   a read of a storage during another thread's write of it computes from
 *   values before or after that write, element by element (unspecified
 *   results, no crash); a write that reallocates the storage (resize_ past
 *   its capacity, set_) while another thread reads it is a use of freed
 *   memory, so the caller serialises such writes with readers. Two storages
 *   made from one memory (two from_blob or DLPack imports of one buffer) are
 *   two storages. Metadata (.grad, requires_grad): below.
 *   The last error, handle scopes and grad-mode scopes are per thread.
 *
 * Sharing one handle between threads (serving one model from N threads).
 *   "Concurrent" below means any number of threads at once on the SAME
 *   handle; "exclusive" means no other call may use that handle meanwhile.
 *   - ctorch_tensor: reads are concurrent (an input to any op, metadata,
 *     copy_to, data_ptr, to_dlpack); a write of its data (in-place or out=
 *     op) is exclusive per storage, enforced (Threads above); a write of its
 *     metadata (resize_, requires_grad, grad, zero_grad, a backward
 *     accumulating into it) is exclusive. Free a handle only once no other
 *     thread uses it.
 *   - ctorch_nn_module: forward (ctorch_nn_module_forward, _forward_n,
 *     _forward_first, _forward_child) is concurrent in eval mode, under
 *     no_grad, inference mode or with grad recording (each call records its
 *     own graph), and in training mode too: the running statistics a
 *     BatchNorm or InstanceNorm forward writes are updated one thread at a
 *     time inside (none is lost). Anything that changes the module
 *     (train/eval, to, load_state_dict, register_*, append, an optimizer
 *     step on its parameters) is exclusive. A custom module's forward
 *     callback runs on each calling thread, concurrently: it must be
 *     thread-safe.
 *   - ctorch_module (TorchScript): forward, forward_tensors and run_method
 *     are concurrent (libtorch compiles a method's graph once, under its own
 *     lock), unless the module's own code assigns its attributes; train,
 *     eval and to_device are exclusive.
 *   - ctorch_aoti_package: run is concurrent and safe, but the package
 *     holds one model instance, so runs on one package take turns; load a
 *     package once per thread to run in parallel. Metadata reads are
 *     concurrent.
 *   - ctorch_optimizer, LR schedulers, grad scalers, ctorch_data_loader,
 *     distributed groups and DDP wrappers: exclusive (every call changes their state; a
 *     loader's own workers are internal). Summary writers and early
 *     stopping: concurrent (serialised inside).
 *     Enforced: every call on a ctorch_optimizer, ctorch_lr_scheduler,
 *     ctorch_data_loader, ctorch_grad_scaler, ctorch_process_group or ctorch_ddp (and
 *     ctorch_work_wait on one ctorch_work) made while another thread's call
 *     on the same handle runs returns CTORCH_BUSY (the error names the
 *     function and the handle) and does nothing; a scheduler's step holds
 *     its optimizer too, a data-parallel helper (ctorch_dist_average_*,
 *     _broadcast_parameters) its group for all its collectives. A call from inside the handle's own callback on the same thread
 *     (a step closure calling ctorch_optimizer_zero_grad) is allowed. The
 *     check is one atomic compare-exchange per call; a free of a handle in
 *     use is refused (recorded as the last error, nothing freed).
 *     An optimizer's step and zero_grad (and ctorch_nn_module_zero_grad,
 *     ctorch_tensor_grad, _set_grad and _zero_grad, ctorch_clip_grad_norm_
 *     and _value_, ctorch_dist_average_gradients) take each parameter's
 *     gradient-accumulator lock, the one a backward takes to write .grad,
 *     so a backward on another thread waits for them instead of racing on
 *     the gradient (libtorch's own race; Python's GIL hides it from
 *     PyTorch).
 *   - ctorch_generator: concurrent (random ops lock it), but which thread
 *     draws which numbers then depends on scheduling: use one generator per
 *     thread for reproducible draws.
 *   - lists, dicts, values, transforms: reads are concurrent.
 *   - Process-wide settings (ctorch_set_num_threads, ctorch_manual_seed,
 *     limits): set them before other threads run ops. libtorch 2.x applies
 *     the intra-op thread count to a new thread lazily: a serving thread's
 *     first MKL/oneDNN kernel may run with the default count (the same
 *     values up to rounding), so a thread that needs the results bit for
 *     bit calls ctorch_set_num_threads itself first.
 *   Tested: tests/test_threads_shared.c (4 threads, one nn module, one
 *   TorchScript module or one AOTI package, outputs bit for bit those of
 *   one thread);
 *   docs/guarantees.md, "What may be shared between threads".
 *
 * Generated operators.  Every ATen operator is declared in ctorch_ops.h
 *   (included at the end of this header), named `ctorch_<name>_<overload>`,
 *   with its schema as its doc comment; the naming and type mapping are
 *   described there and in the README.
 *
 * CONTENTS.  The declarations are grouped by area, in this order; each
 *   group opens with what it owns and, where they differ from the contract
 *   above, its threads, errors and ownership:
 *   - @ref macros "Version and declaration macros"
 *   - @ref status "Status codes and errors"
 *   - @ref types "Enums and value types"
 *   - @ref handles "Handle types"
 *   - @ref library "Library: versions, threads, seeds"
 *   - @ref tensors "Tensors: creation, data, metadata, printing"
 *   - @ref tensor_lists "Tensor lists"
 *   - @ref scopes "Handle scopes"
 *   - @ref generators "Generators"
 *   - @ref autograd "Autograd"
 *   - @ref optim "Optimizers, schedules, initialisation, clipping, TensorBoard"
 *   - @ref transforms "Transforms and metrics"
 *   - @ref images "Images: JPEG and PNG"
 *   - @ref data "Data: datasets and loaders"
 *   - @ref io "Saving and loading: DLPack, torch.save, safetensors, NumPy"
 *   - @ref nn "Modules (torch.nn)"
 *   - @ref train_state "Training checkpoints"
 *   - @ref train_utils "Training utilities"
 *   - @ref dist "Distributed"
 *   - @ref torchscript "TorchScript modules and values"
 *   - @ref models "Models in and out: tracing, AOTInductor, inference"
 *   - @ref gpu "GPU: CUDA devices, streams, graphs, mixed precision"
 *   - @ref bindings "For language bindings"
 *   - @ref dispatcher "Operators by name (the dispatcher)"
 *   - @ref ops "Generated operators"
 *
 * The reference generated from this header (scripts/reference) shows the
 * same groups; docs/reference.md says how to build it.
 */
#ifndef CTORCH_H
#define CTORCH_H

/**
 * @file ctorch.h
 * @brief The C API: every hand-written function, grouped by area; the
 * generated operators come from ctorch_ops.h, included at the end.
 */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* ================================================================== */
/**
 * @defgroup macros Version and declaration macros
 *
 * The version of ctorch as numbers for the preprocessor (ctorch_version() gives
 * the text at run time; ctorch_ops.h adds CTORCH_TORCH_VERSION_*, the
 * libtorch's), and the macros the declarations below are written with.
 * @{
 */

/** ctorch's major version (ctorch_version() gives the whole version as text at run time). */
#define CTORCH_VERSION_MAJOR 0
/** ctorch's minor version. */
#define CTORCH_VERSION_MINOR 2
/** ctorch's patch version. */
#define CTORCH_VERSION_PATCH 0

/** Marks a function of the C API (exported from libctorch). */
#if defined(__GNUC__)
#define CTORCH_API __attribute__((visibility("default")))
#else
#define CTORCH_API
#endif

/* Enums are int32_t-sized in C (every supported ABI) and declared so in C++:
 * with a fixed underlying type, any int32 value a C caller passes is a valid
 * C++ value that ctorch can check and reject, not undefined behaviour. */
/** Gives every enum int32_t as its underlying type in C++ (nothing in C). */
#ifdef __cplusplus
#define CTORCH_ENUM_BASE : int32_t
#else
#define CTORCH_ENUM_BASE
#endif

/** @} */

#ifdef __cplusplus
extern "C" {
#endif

/* ================================================================== */
/**
 * @defgroup status Status codes and errors
 *
 * Owns the status codes every call returns and the calling thread's last
 * error message. Threads: the last error is per thread. These functions
 * cannot fail: they return text, not a status (the exceptions the contract
 * names).
 * @{
 */

/** Result of every call. Values are stable. */
typedef enum ctorch_status CTORCH_ENUM_BASE {
  CTORCH_OK = 0,               /**< success */
  CTORCH_INVALID_ARGUMENT = 1, /**< NULL/undefined handle, bad enum value, bad length */
  CTORCH_INDEX = 2,            /**< index out of range (c10::IndexError) */
  CTORCH_VALUE = 3,            /**< bad value (c10::ValueError), corrupt data */
  CTORCH_TYPE = 4,             /**< wrong dtype or type (c10::TypeError) */
  CTORCH_NOT_IMPLEMENTED = 5,  /**< no kernel for these inputs (c10::NotImplementedError) */
  CTORCH_OUT_OF_MEMORY = 6,    /**< allocation failed (CPU or device) */
  CTORCH_LINALG = 7,           /**< linear algebra failure (c10::LinAlgError) */
  CTORCH_IO = 8,               /**< file or stream error */
  CTORCH_RUNTIME = 9,          /**< any other libtorch error (shape mismatch, ...) */
  CTORCH_UNKNOWN = 10,         /**< an exception of unknown type */
  CTORCH_BUSY = 11             /**< an exclusive handle is in use by another thread's call: nothing was done */
} ctorch_status;

/** Borrowed static name of a status ("CTORCH_OK", ...); "CTORCH_?" if out of range. Returns the text, not a status. */
CTORCH_API const char *ctorch_status_name(ctorch_status status);

/** Borrowed: this thread's last error message without backtrace; "" if none. Valid until this thread's next failing call. */
CTORCH_API const char *ctorch_last_error(void);

/** Borrowed: this thread's last error message including libtorch's C++ backtrace when it had one; "" if none. Valid until this thread's next failing call. */
CTORCH_API const char *ctorch_last_error_backtrace(void);

/** @} */

/* ================================================================== */
/**
 * @defgroup types Enums and value types
 *
 * Plain values passed by value: dtype, device, layout, memory format and
 * scalars. Their numeric values are stable ABI and do not follow c10's
 * numbering; an out-of-range value is refused with CTORCH_INVALID_ARGUMENT
 * by every function that takes one. The static inline ctorch_scalar_*
 * constructors return the value itself.
 * @{
 */

/** Element type. 0 is deliberately invalid so zeroed memory is caught. */
typedef enum ctorch_dtype CTORCH_ENUM_BASE {
  CTORCH_BOOL = 1,
  CTORCH_UINT8 = 2,
  CTORCH_INT8 = 3,
  CTORCH_INT16 = 4,
  CTORCH_INT32 = 5,
  CTORCH_INT64 = 6,
  CTORCH_FLOAT16 = 7,
  CTORCH_BFLOAT16 = 8,
  CTORCH_FLOAT32 = 9,
  CTORCH_FLOAT64 = 10,
  CTORCH_COMPLEX32 = 11,  /**< complex of two float16 */
  CTORCH_COMPLEX64 = 12,  /**< complex of two float32 */
  CTORCH_COMPLEX128 = 13, /**< complex of two float64 */
  CTORCH_QINT8 = 14,
  CTORCH_QUINT8 = 15,
  CTORCH_QINT32 = 16,
  CTORCH_QUINT4X2 = 17,
  CTORCH_QUINT2X4 = 18,
  /* Types newer than libtorch 1.13: with an older libtorch every call given
   * one returns CTORCH_NOT_IMPLEMENTED naming the version that has it. */
  CTORCH_UINT16 = 19,          /**< libtorch >= 2.3 (limited kernel support) */
  CTORCH_UINT32 = 20,          /**< libtorch >= 2.3 (limited kernel support) */
  CTORCH_UINT64 = 21,          /**< libtorch >= 2.3 (limited kernel support) */
  CTORCH_FLOAT8_E5M2 = 22,     /**< libtorch >= 2.1 */
  CTORCH_FLOAT8_E4M3FN = 23,   /**< libtorch >= 2.1 */
  CTORCH_FLOAT8_E5M2FNUZ = 24, /**< libtorch >= 2.2 */
  CTORCH_FLOAT8_E4M3FNUZ = 25, /**< libtorch >= 2.2 */
  CTORCH_FLOAT8_E8M0FNU = 26   /**< libtorch >= 2.7 (exponent only) */
} ctorch_dtype;

/** Kind of device. */
typedef enum ctorch_device_type CTORCH_ENUM_BASE {
  CTORCH_DEVICE_CPU = 0,
  CTORCH_DEVICE_CUDA = 1,
  CTORCH_DEVICE_META = 2, /**< shapes and dtypes only, no data */
  CTORCH_DEVICE_MPS = 3,
  CTORCH_DEVICE_XPU = 4,
  CTORCH_DEVICE_HIP = 5
} ctorch_device_type;

/** A device: its type (ctorch_device_type) and index (-1 = the current/default one). */
typedef struct ctorch_device {
  int32_t type;  /**< a ctorch_device_type value */
  int32_t index; /**< device ordinal, or -1 */
} ctorch_device;

/** Memory layout of a tensor. */
typedef enum ctorch_layout CTORCH_ENUM_BASE {
  CTORCH_LAYOUT_STRIDED = 0,
  CTORCH_LAYOUT_SPARSE_COO = 1,
  CTORCH_LAYOUT_SPARSE_CSR = 2,
  CTORCH_LAYOUT_SPARSE_CSC = 3,
  CTORCH_LAYOUT_SPARSE_BSR = 4,
  CTORCH_LAYOUT_SPARSE_BSC = 5,
  CTORCH_LAYOUT_MKLDNN = 6
} ctorch_layout;

/** Requested memory format of a strided tensor. */
typedef enum ctorch_memory_format CTORCH_ENUM_BASE {
  CTORCH_MEMORY_CONTIGUOUS = 0,
  CTORCH_MEMORY_PRESERVE = 1,
  CTORCH_MEMORY_CHANNELS_LAST = 2,
  CTORCH_MEMORY_CHANNELS_LAST_3D = 3
} ctorch_memory_format;

/** What a ctorch_scalar holds. */
typedef enum ctorch_scalar_kind CTORCH_ENUM_BASE {
  CTORCH_SCALAR_FLOAT = 0,   /**< value in f */
  CTORCH_SCALAR_INT = 1,     /**< value in i */
  CTORCH_SCALAR_BOOL = 2,    /**< value in i (0 or 1) */
  CTORCH_SCALAR_COMPLEX = 3  /**< value in f (real) and imag */
} ctorch_scalar_kind;

/** A number passed by value (no allocation). No union, so every FFI can build one. */
typedef struct ctorch_scalar {
  int32_t kind;     /**< a ctorch_scalar_kind value */
  int32_t reserved; /**< must be 0 */
  int64_t i;        /**< INT and BOOL values */
  double f;         /**< FLOAT value, real part of COMPLEX */
  double imag;      /**< imaginary part of COMPLEX */
} ctorch_scalar;

/** Builds a float scalar (inline helper, not a library symbol). */
static inline ctorch_scalar ctorch_scalar_float(double v) {
  ctorch_scalar s = {CTORCH_SCALAR_FLOAT, 0, 0, 0.0, 0.0};
  s.f = v;
  return s;
}
/** Builds an integer scalar (inline helper). */
static inline ctorch_scalar ctorch_scalar_int(int64_t v) {
  ctorch_scalar s = {CTORCH_SCALAR_INT, 0, 0, 0.0, 0.0};
  s.i = v;
  return s;
}
/** Builds a boolean scalar (inline helper). */
static inline ctorch_scalar ctorch_scalar_bool(int v) {
  ctorch_scalar s = {CTORCH_SCALAR_BOOL, 0, 0, 0.0, 0.0};
  s.i = v ? 1 : 0;
  return s;
}
/** Builds a complex scalar (inline helper). */
static inline ctorch_scalar ctorch_scalar_complex(double re, double im) {
  ctorch_scalar s = {CTORCH_SCALAR_COMPLEX, 0, 0, 0.0, 0.0};
  s.f = re;
  s.imag = im;
  return s;
}
/** The CPU device (inline helper). */
static inline ctorch_device ctorch_device_cpu(void) {
  ctorch_device d = {CTORCH_DEVICE_CPU, -1};
  return d;
}

/** @} */

/* ================================================================== */
/**
 * @defgroup handles Handle types
 *
 * The three handle types every other group uses: tensors, tensor lists and
 * generators. A handle returned through an out-parameter is new (the caller
 * frees it with its type's *_free); a handle passed in is borrowed.
 * @{
 */

/** A tensor (one counted reference; an opaque value, not a pointer). NULL = undefined tensor. */
typedef struct ctorch_tensor_s *ctorch_tensor;
/** An owned list of tensors, returned by ops whose schema returns Tensor[]. */
typedef struct ctorch_tensor_list_s *ctorch_tensor_list;
/** A random number generator; NULL wherever one is optional = the default generator. */
typedef struct ctorch_generator_s *ctorch_generator;

/** @} */

/* ================================================================== */
/**
 * @defgroup library Library: versions, threads, seeds
 *
 * Process-wide settings and facts. Set the thread counts and seeds before
 * other threads run operators (see the contract's Threads); the version
 * strings are borrowed static text.
 * @{
 */

/**
 * Borrowed static ctorch version string, e.g. "0.2.0". This, ctorch_torch_version
 * and ctorch_abi_hash fail with CTORCH_RUNTIME, naming both versions, when the
 * libtorch loaded in the process is another release (major.minor) than the one
 * ctorch was built against (the library also prints that line to stderr when it
 * loads): a program that calls ctorch_torch_version first is refused, as every
 * binding is (docs/packages.md, "The load check").
 */
CTORCH_API ctorch_status ctorch_version(const char **out);
/** Borrowed static version of the libtorch ctorch was built against, e.g. "1.13.0"; fails as ctorch_version does. */
CTORCH_API ctorch_status ctorch_torch_version(const char **out);
/** Frees a string returned through a `char **` out-parameter. NULL-safe; returns nothing. */
CTORCH_API void ctorch_string_free(char *s);
/** Seeds every default generator (CPU and, where present, CUDA). */
CTORCH_API ctorch_status ctorch_manual_seed(uint64_t seed);
/** Number of intra-op threads libtorch uses. */
CTORCH_API ctorch_status ctorch_get_num_threads(int *out);
/** Sets the number of intra-op threads (n >= 1). */
CTORCH_API ctorch_status ctorch_set_num_threads(int n);
/** Number of inter-op threads. */
CTORCH_API ctorch_status ctorch_get_num_interop_threads(int *out);
/** Sets the number of inter-op threads (n >= 1; only before any inter-op work started). */
CTORCH_API ctorch_status ctorch_set_num_interop_threads(int n);
/** 1 if a CUDA device is usable, else 0. */
CTORCH_API ctorch_status ctorch_cuda_is_available(int *out);
/** Number of CUDA devices (0 without CUDA). */
CTORCH_API ctorch_status ctorch_cuda_device_count(int *out);
/** Size in bytes of one element of dtype. */
CTORCH_API ctorch_status ctorch_dtype_size(size_t *out, ctorch_dtype dtype);

/** @} */

/* ================================================================== */
/**
 * @defgroup tensors Tensors: creation, data, metadata, printing
 *
 * Owns ctorch_tensor handles: each new handle holds one reference and is
 * freed once with ctorch_tensor_free. Reads of one tensor may run on many
 * threads at once; a write (an in-place operator, requires_grad, a .grad
 * change) is exclusive. Arithmetic on tensors is in the generated operators
 * (ctorch_ops.h).
 * @{
 */

/**
 * Drops one reference. NULL-safe; returns nothing. The handle is invalid
 * afterwards. A handle already freed (or a value ctorch never returned)
 * frees nothing and sets the thread's last error.
 */
CTORCH_API void ctorch_tensor_free(ctorch_tensor t);

/** New handle to the same tensor (shares data and autograd identity). */
CTORCH_API ctorch_status ctorch_tensor_ref(ctorch_tensor *out, ctorch_tensor t);

/**
 * Whether handles `a` and `b` are the same tensor: *out = 1 if they are
 * one tensor object, as Python's `a is b` (ctorch_tensor_ref, or an op
 * that returns its input, gives a new handle to the same tensor), 0
 * otherwise (views of one storage are different tensors). Two handles are never equal as values, so this is
 * how to compare them. Both borrowed, neither may be NULL.
 */
CTORCH_API ctorch_status ctorch_tensor_is_same(int *out, ctorch_tensor a, ctorch_tensor b);

/**
 * New CPU tensor holding a COPY of `data`. `sizes` has `ndim` entries (may be
 * NULL when ndim is 0: a 0-dim tensor); `nbytes` must equal
 * numel * ctorch_dtype_size(dtype). The caller keeps `data`.
 */
CTORCH_API ctorch_status ctorch_tensor_from_data(ctorch_tensor *out, const void *data, size_t nbytes,
                                                 const int64_t *sizes, size_t ndim, ctorch_dtype dtype);

/**
 * New tensor OVER the caller's memory (zero-copy). `strides` (in elements) may
 * be NULL for contiguous. On success ctorch owns the memory's lifetime: it
 * calls release(ctx) exactly once, from whichever thread drops the last
 * reference (release may be NULL if the caller manages lifetime itself).
 * On failure release is not called and the caller keeps the memory.
 * `data` must be aligned to the element size; quantized dtypes are refused
 * (TYPE). A later resize_ past the buffer moves the tensor to new memory and
 * releases the caller's buffer then.
 */
CTORCH_API ctorch_status ctorch_tensor_from_blob(ctorch_tensor *out, void *data, const int64_t *sizes,
                                                 const int64_t *strides, size_t ndim, ctorch_dtype dtype,
                                                 ctorch_device device, void (*release)(void *ctx), void *ctx);

/**
 * Copies the tensor's elements, in row-major (contiguous) order, to `dst`,
 * converting device and layout as needed but not dtype. `dst_bytes` must be
 * at least numel * element size. The tensor is borrowed. A bool tensor's
 * elements are written as bytes 0 and 1 whatever it holds (a view_dtype of
 * uint8 may hold 5 or 255, which no language's bool may; the item getters
 * read it the same way).
 */
CTORCH_API ctorch_status ctorch_tensor_copy_to(void *dst, size_t dst_bytes, ctorch_tensor t);

/** Number of dimensions. */
CTORCH_API ctorch_status ctorch_tensor_dim(int64_t *out, ctorch_tensor t);
/** Writes the dim() sizes into out[0..cap); fails with INVALID_ARGUMENT if cap < dim(). */
CTORCH_API ctorch_status ctorch_tensor_sizes(int64_t *out, size_t cap, ctorch_tensor t);
/** Writes the dim() strides (in elements) into out[0..cap); fails if cap < dim(). */
CTORCH_API ctorch_status ctorch_tensor_strides(int64_t *out, size_t cap, ctorch_tensor t);
/** Number of elements. */
CTORCH_API ctorch_status ctorch_tensor_numel(int64_t *out, ctorch_tensor t);
/** Element type. */
CTORCH_API ctorch_status ctorch_tensor_dtype(ctorch_dtype *out, ctorch_tensor t);
/** Device the tensor lives on. */
CTORCH_API ctorch_status ctorch_tensor_device(ctorch_device *out, ctorch_tensor t);
/** Layout (strided, sparse, ...). */
CTORCH_API ctorch_status ctorch_tensor_layout(ctorch_layout *out, ctorch_tensor t);
/** 1 if contiguous in row-major order, else 0. */
CTORCH_API ctorch_status ctorch_tensor_is_contiguous(int *out, ctorch_tensor t);
/** Borrowed pointer to the first element (storage offset applied); valid while the tensor lives. NULL for 0 elements. */
CTORCH_API ctorch_status ctorch_tensor_data_ptr(void **out, ctorch_tensor t);
/** 1 if autograd records operations on this tensor. */
CTORCH_API ctorch_status ctorch_tensor_requires_grad(int *out, ctorch_tensor t);

/** Value of a one-element tensor as double. */
CTORCH_API ctorch_status ctorch_tensor_item_double(double *out, ctorch_tensor t);
/** Value of a one-element tensor as int64 (truncated toward zero for floats). */
CTORCH_API ctorch_status ctorch_tensor_item_int64(int64_t *out, ctorch_tensor t);
/** Value of a one-element tensor as 0/1. */
CTORCH_API ctorch_status ctorch_tensor_item_bool(int *out, ctorch_tensor t);

/** New tensor converted to dtype (a new handle to t itself if already that dtype). */
CTORCH_API ctorch_status ctorch_tensor_to_dtype(ctorch_tensor *out, ctorch_tensor t, ctorch_dtype dtype);
/** New tensor moved to device (a new handle to t itself if already there). */
CTORCH_API ctorch_status ctorch_tensor_to_device(ctorch_tensor *out, ctorch_tensor t, ctorch_device device);
/** New tensor with its own copy of the data (differentiable, like torch.clone). */
CTORCH_API ctorch_status ctorch_tensor_clone(ctorch_tensor *out, ctorch_tensor t);
/** New contiguous tensor (a new handle to t itself if already contiguous). */
CTORCH_API ctorch_status ctorch_tensor_contiguous(ctorch_tensor *out, ctorch_tensor t);

/** New NUL-terminated rendering of the tensor as libtorch prints it; free with ctorch_string_free. */
CTORCH_API ctorch_status ctorch_tensor_to_string(char **out, ctorch_tensor t);

/**
 * NEW text (free with ctorch_string_free) equal to Python's str(t) under
 * torch.set_printoptions(precision, threshold, edgeitems, linewidth,
 * sci_mode) of the libtorch built against: "tensor([...])" with the
 * summarised "..." rows and items beyond threshold elements, the dtype,
 * device, size, grad_fn and requires_grad suffixes. Each integer argument
 * < 0 takes PyTorch's default (precision 4, threshold 1000, edgeitems 3,
 * linewidth 80; INT64_MAX as threshold prints everything, as
 * profile='full'); precision above 1000, edgeitems above 2^20 and
 * sci_mode other than -1 (automatic, Python's None), 0 (off) or 1 (on): INVALID_ARGUMENT.
 * Sparse and quantized tensors: NOT_IMPLEMENTED (ctorch_tensor_to_string
 * prints them). On PyTorch 1.13, edgeitems 0 with a summarised tensor is
 * refused (VALUE): that Python fails on it.
 */
CTORCH_API ctorch_status ctorch_tensor_format(char **out, ctorch_tensor t, int64_t precision, int64_t threshold,
                                              int64_t edgeitems, int64_t linewidth, int sci_mode);

/** @} */

/* ================================================================== */
/**
 * @defgroup tensor_lists Tensor lists
 *
 * Lists of tensors returned by the operators whose schema returns Tensor[]:
 * the list owns a reference to each element; ctorch_tensor_list_get returns
 * a new handle to one of them; ctorch_tensor_list_free drops them all.
 * @{
 */

/** Number of tensors in the list. */
CTORCH_API ctorch_status ctorch_tensor_list_size(size_t *out, ctorch_tensor_list list);
/** New handle to element i (0 <= i < size; INDEX otherwise); NULL if that element is undefined. */
CTORCH_API ctorch_status ctorch_tensor_list_get(ctorch_tensor *out, ctorch_tensor_list list, size_t i);
/** Frees the list and its references. NULL-safe; returns nothing. */
CTORCH_API void ctorch_tensor_list_free(ctorch_tensor_list list);

/** @} */

/* ================================================================== */
/**
 * @defgroup scopes Handle scopes
 *
 * While a scope is open on a thread, every NEW tensor handle that a
 * ctorch call returns on that thread (operators, forward, accessors)
 * is recorded in the innermost scope; leaving the scope frees every
 * handle still recorded. ctorch_tensor_free on a recorded handle
 * frees it at once and forgets it (no double free); keeping a handle
 * moves it to the enclosing scope, or out of all scopes. Only tensor
 * handles are recorded (lists, dicts, modules are freed as usual).
 * Autograd is unaffected: a graph keeps its own references to what
 * backward needs, so results freed by a scope can still be
 * differentiated through the handles kept. A binding whose garbage
 * collector frees handles must keep (ctorch_handle_scope_keep) each
 * handle it hands to the collector, or not open scopes around them.
 *
 * Threads: scopes are per thread; a scope is left on the thread that opened
 * it.
 * @{
 */

/** An open handle scope. */
typedef struct ctorch_handle_scope_s *ctorch_handle_scope;
/** Opens a scope on the calling thread (scopes nest) and returns a NEW scope handle, released by ctorch_handle_scope_leave. */
CTORCH_API ctorch_status ctorch_handle_scope_enter(ctorch_handle_scope *out);
/**
 * Frees every tensor handle still recorded in the scope and releases the
 * scope handle (invalid afterwards). Scopes opened inside it and still open
 * are left first (their handles freed too). Called on another thread than
 * the one that opened it, or twice: INVALID_ARGUMENT, nothing freed.
 */
CTORCH_API ctorch_status ctorch_handle_scope_leave(ctorch_handle_scope scope);
/**
 * Keeps t past the innermost scope that recorded it: the record moves to
 * the enclosing scope, or, with none, the caller owns t as usual. A handle
 * no scope recorded: no-op (CTORCH_OK).
 */
CTORCH_API ctorch_status ctorch_handle_scope_keep(ctorch_tensor t);
/** Number of tensor handles the calling thread's innermost scope holds (0 without a scope). */
CTORCH_API ctorch_status ctorch_handle_scope_size(size_t *out);

/** @} */

/* ================================================================== */
/**
 * @defgroup generators Generators
 *
 * Random number generators, passed to the random operators (NULL = the
 * default generator). Threads: random operators lock the generator they use,
 * so one generator may be shared, but which thread draws which numbers then
 * depends on scheduling: use one generator per thread for reproducible
 * draws.
 * @{
 */

/** New generator for device (CPU, or CUDA where available) seeded with seed. */
CTORCH_API ctorch_status ctorch_generator_new(ctorch_generator *out, ctorch_device device, uint64_t seed);
/** Reseeds a generator. */
CTORCH_API ctorch_status ctorch_generator_set_seed(ctorch_generator g, uint64_t seed);
/** Frees a generator. NULL-safe; returns nothing. */
CTORCH_API void ctorch_generator_free(ctorch_generator g);

/** @} */

/* ================================================================== */
/**
 * @defgroup autograd Autograd
 *
 * Gradients are recorded on tensors that require grad, as in PyTorch.
 * A graph keeps its own references to the tensors it needs, so inputs
 * may be freed by the caller while a graph still uses them.
 *
 * Owns the grad-mode scopes (per thread, like ctorch_handle_scope) and the
 * custom functions written in C. Errors in a backward pass come back as the
 * status of the call that ran it (ctorch_tensor_backward,
 * ctorch_autograd_grad).
 * @{
 */

/** Sets whether autograd records operations on t (t must be a leaf to turn it on; floating/complex dtype). t is borrowed. */
CTORCH_API ctorch_status ctorch_tensor_set_requires_grad(ctorch_tensor t, int requires_grad);
/** 1 if t is a leaf of the graph (created by the user, not by a recorded op). */
CTORCH_API ctorch_status ctorch_tensor_is_leaf(int *out, ctorch_tensor t);
/** Makes a non-leaf t keep its .grad after backward (like Tensor.retain_grad()). */
CTORCH_API ctorch_status ctorch_tensor_retain_grad(ctorch_tensor t);
/** 1 if t keeps its .grad (a leaf that requires grad, or retain_grad was called). */
CTORCH_API ctorch_status ctorch_tensor_retains_grad(int *out, ctorch_tensor t);
/** NEW handle to t's accumulated gradient, or *out = NULL (and CTORCH_OK) when t has none. */
CTORCH_API ctorch_status ctorch_tensor_grad(ctorch_tensor *out, ctorch_tensor t);
/** Replaces t's .grad with grad (borrowed; t keeps its own reference). grad NULL clears it. Shape/dtype must match t. */
CTORCH_API ctorch_status ctorch_tensor_set_grad(ctorch_tensor t, ctorch_tensor grad);
/** Clears t's .grad: drops it if set_to_none, else zeroes it in place (no-op when there is none). */
CTORCH_API ctorch_status ctorch_tensor_zero_grad(ctorch_tensor t, int set_to_none);
/** NEW tensor sharing t's data, cut from the graph (requires_grad 0), like Tensor.detach(). */
CTORCH_API ctorch_status ctorch_tensor_detach(ctorch_tensor *out, ctorch_tensor t);
/** Borrowed static name of the node that produced t (e.g. "MulBackward0"), or "" for a leaf / no graph. */
CTORCH_API ctorch_status ctorch_tensor_grad_fn_name(const char **out, ctorch_tensor t);

/**
 * Like Tensor.backward(): accumulates d(t)/d(leaf) into the .grad of the
 * leaves (or only of `inputs`, when n_inputs > 0). `gradient` (borrowed, may
 * be NULL only when t has one element) is the gradient of the final result
 * with respect to t. retain_graph keeps the graph for another backward;
 * create_graph records the backward pass itself so its gradients can be
 * differentiated again (higher order); PyTorch defaults retain_graph to
 * create_graph, so pass both set for its behaviour. All handles are borrowed.
 */
CTORCH_API ctorch_status ctorch_tensor_backward(ctorch_tensor t, ctorch_tensor gradient, int retain_graph,
                                                int create_graph, const ctorch_tensor *inputs, size_t n_inputs);

/**
 * Like torch.autograd.grad(): *out is a NEW list of n_inputs gradients of
 * sum(outputs[i] * grad_outputs[i]) with respect to inputs[j]; .grad fields
 * are not touched. grad_outputs may be NULL (n_grad_outputs 0) when every
 * output has one element; otherwise n_grad_outputs == n_outputs and a NULL
 * entry means "ones" for a one-element output. With allow_unused, an input
 * not reached by the graph gets a NULL entry in the list (else an error).
 * create_graph makes the results differentiable (higher-order gradients).
 */
CTORCH_API ctorch_status ctorch_autograd_grad(ctorch_tensor_list *out, const ctorch_tensor *outputs, size_t n_outputs,
                                              const ctorch_tensor *inputs, size_t n_inputs,
                                              const ctorch_tensor *grad_outputs, size_t n_grad_outputs,
                                              int retain_graph, int create_graph, int allow_unused);

/* ---- grad-mode scopes -------------------------------------------- */

/** Kind of scope opened by ctorch_autograd_scope_enter. */
typedef enum ctorch_autograd_scope_kind CTORCH_ENUM_BASE {
  CTORCH_SCOPE_NO_GRAD = 0,       /**< like `with torch.no_grad()` */
  CTORCH_SCOPE_ENABLE_GRAD = 1,   /**< like `with torch.enable_grad()` */
  CTORCH_SCOPE_INFERENCE_MODE = 2 /**< like `with torch.inference_mode()`: no grad, no version counters */
} ctorch_autograd_scope_kind;

/** An open grad-mode scope (see ctorch_autograd_scope_enter). */
typedef struct ctorch_autograd_scope_s *ctorch_autograd_scope;

/**
 * Opens a scope on the CALLING THREAD (grad mode is thread-local, as in
 * PyTorch) and returns a NEW scope handle. Scopes nest; each is closed with
 * ctorch_autograd_scope_leave, which releases it whatever the order.
 */
CTORCH_API ctorch_status ctorch_autograd_scope_enter(ctorch_autograd_scope *out, ctorch_autograd_scope_kind kind);
/**
 * Leaves the scope and ALWAYS releases the handle (it is invalid afterwards,
 * whatever the status), so a binding whose destructors run in any order
 * neither leaks a scope nor leaves a mode on:
 * - the innermost open scope of this thread: restores exactly the modes in
 *   force when it was opened, then closes each scope below it that was
 *   already left;
 * - a scope that is not the innermost: succeeds; its modes stay in force
 *   until the scopes opened after it are left too (then they are restored,
 *   innermost first), so once every scope is left, in any order, the thread
 *   is back where it started;
 * - from another thread: fails with CTORCH_RUNTIME but releases the handle
 *   too; the scope closes on its own thread at that thread's next enter or
 *   leave of a scope of this kind.
 * NULL, or a handle that is no live scope (already left, wherever; never
 * returned by ctorch; another handle type), fails with INVALID_ARGUMENT
 * (the handle checks above) and changes nothing. A thread that ends with
 * scopes open leaks them.
 */
CTORCH_API ctorch_status ctorch_autograd_scope_leave(ctorch_autograd_scope scope);
/** 1 if gradients are being recorded on this thread. */
CTORCH_API ctorch_status ctorch_autograd_is_grad_enabled(int *out);
/** 1 if this thread is in inference mode. */
CTORCH_API ctorch_status ctorch_autograd_is_inference_mode(int *out);
/** 1 if t was created in inference mode (an "inference tensor"). */
CTORCH_API ctorch_status ctorch_tensor_is_inference(int *out, ctorch_tensor t);

/* ---- custom functions written in C ------------------------------- */

/** The context of one application of a custom function; BORROWED, valid only during the callback it is passed to. */
typedef struct ctorch_autograd_ctx_s *ctorch_autograd_ctx;

/**
 * Forward callback: compute outputs[0..n_outputs) (write NEW handles; the
 * shim takes them) from inputs (borrowed). Runs with grad recording off.
 * May call ctorch_autograd_ctx_save_for_backward. Return CTORCH_OK, or a
 * failure status (after ctorch_autograd_ctx_set_error, or straight after a
 * failing ctorch call, whose message is then used).
 */
typedef ctorch_status (*ctorch_autograd_forward_fn)(ctorch_autograd_ctx ctx, void *user_data,
                                                    const ctorch_tensor *inputs, size_t n_inputs,
                                                    ctorch_tensor *outputs, size_t n_outputs);
/**
 * Backward callback: given grad_outputs (borrowed, one per output, zeros
 * where the output got no gradient), write grad_inputs[0..n_inputs) as NEW
 * handles (NULL = no gradient for that input; preset to NULL). Runs with
 * grad recording on when the caller asked for create_graph, so the ops it
 * uses are differentiable again. Same error convention as forward.
 */
typedef ctorch_status (*ctorch_autograd_backward_fn)(ctorch_autograd_ctx ctx, void *user_data,
                                                     const ctorch_tensor *grad_outputs, size_t n_outputs,
                                                     ctorch_tensor *grad_inputs, size_t n_inputs);

/**
 * Applies a custom differentiable function: calls forward now and records a
 * graph node whose backward is `backward`. outputs[0..n_outputs) receive NEW
 * handles (all NULL on failure). inputs are borrowed. user_data is passed to
 * both callbacks and must stay valid while the node can run; `release` (may
 * be NULL) is called with it exactly once when ctorch no longer needs it (the
 * graph node was freed, or at once when no graph was recorded or on failure).
 * An error inside a callback comes back as that callback's status and
 * message, from this call (forward) or from the backward/grad call: the
 * message set with ctorch_autograd_ctx_set_error, else that of a ctorch call
 * that failed inside the callback, else a fixed text naming the callback
 * (cut to 1 KiB). outputs[] is written (NULLs) only once every argument
 * has been checked; an invalid argument leaves it untouched. A tensor given
 * to ctorch_autograd_ctx_mark_non_differentiable that is not among forward's
 * outputs fails the call (INVALID_ARGUMENT).
 */
CTORCH_API ctorch_status ctorch_autograd_function_apply(ctorch_tensor *outputs, size_t n_outputs,
                                                        ctorch_autograd_forward_fn forward,
                                                        ctorch_autograd_backward_fn backward, void *user_data,
                                                        void (*release)(void *user_data),
                                                        const ctorch_tensor *inputs, size_t n_inputs);
/** In forward only: saves tensors (borrowed; the node keeps references) for backward. Call at most once. */
CTORCH_API ctorch_status ctorch_autograd_ctx_save_for_backward(ctorch_autograd_ctx ctx, const ctorch_tensor *tensors,
                                                               size_t n);
/** In backward only: NEW list of the tensors saved in forward (fails if one was modified in place since). */
CTORCH_API ctorch_status ctorch_autograd_ctx_saved_tensors(ctorch_tensor_list *out, ctorch_autograd_ctx ctx);
/** In backward only: 1 if input i needs a gradient in this backward pass. */
CTORCH_API ctorch_status ctorch_autograd_ctx_needs_input_grad(int *out, ctorch_autograd_ctx ctx, size_t i);
/** In forward only: marks outputs (borrowed, each one of this call's outputs) as not differentiable. */
CTORCH_API ctorch_status ctorch_autograd_ctx_mark_non_differentiable(ctorch_autograd_ctx ctx,
                                                                     const ctorch_tensor *outputs, size_t n);
/** Sets the message reported when the current callback returns a failure status (copied). */
CTORCH_API ctorch_status ctorch_autograd_ctx_set_error(ctorch_autograd_ctx ctx, const char *message);

/** @} */

/* ================================================================== */
/**
 * @defgroup optim Optimizers, schedules, initialisation, clipping, TensorBoard
 *
 * Optimizers wrap libtorch's torch::optim. They keep their own
 * references to the parameters, so the caller may free its handles.
 *
 * Threads: optimizers and LR schedulers are exclusive handles: a call made
 * while another thread's call on the same handle runs returns CTORCH_BUSY
 * and does nothing. Summary writers serialise their calls inside and may be
 * shared.
 * @{
 */

/** Which optimizer (the update rules are PyTorch's). */
typedef enum ctorch_optimizer_kind CTORCH_ENUM_BASE {
  CTORCH_OPTIM_SGD = 0,
  CTORCH_OPTIM_ADAM = 1,
  CTORCH_OPTIM_ADAMW = 2,
  CTORCH_OPTIM_RMSPROP = 3,
  CTORCH_OPTIM_ADAGRAD = 4,
  CTORCH_OPTIM_NADAM = 5,    /**< written as the installed PyTorch's Python NAdam (single-tensor form) */
  CTORCH_OPTIM_RADAM = 6,    /**< likewise RAdam */
  CTORCH_OPTIM_ADAMAX = 7,   /**< likewise Adamax */
  CTORCH_OPTIM_ADADELTA = 8, /**< likewise Adadelta */
  CTORCH_OPTIM_LBFGS = 9     /**< one parameter group; steps only with ctorch_optimizer_step_closure */
} ctorch_optimizer_kind;

/** LBFGS's line search (Python's line_search_fn). */
typedef enum ctorch_line_search CTORCH_ENUM_BASE {
  CTORCH_LINE_SEARCH_NONE = 0,        /**< None: fixed step lr */
  CTORCH_LINE_SEARCH_STRONG_WOLFE = 1 /**< 'strong_wolfe' */
} ctorch_line_search;

/**
 * Hyper-parameters of one parameter group, as of ctorch's first release
 * (96 bytes, frozen: docs/abi.md's ABI policy; a caller-allocated struct
 * never grows). Fill it with ctorch_optim_options_default, then change what
 * you need; fields that the kind does not use are ignored. The functions
 * taking it read and write these 96 bytes only; for the kinds and fields
 * added later (NAdam's momentum_decay, Adadelta's rho, LBFGS's max_iter ...)
 * use ctorch_optim_options_v2 and the _v2 functions. Given to a kind that
 * has fields beyond it, the missing fields take their defaults.
 */
typedef struct ctorch_optim_options {
  double lr;            /**< all */
  double weight_decay;  /**< all (AdamW: decoupled) */
  double momentum;      /**< SGD, RMSprop */
  double dampening;     /**< SGD */
  int nesterov;         /**< SGD: needs momentum > 0 and dampening 0 */
  int amsgrad;          /**< Adam, AdamW */
  int centered;         /**< RMSprop */
  double beta1;         /**< Adam, AdamW */
  double beta2;         /**< Adam, AdamW */
  double eps;           /**< Adam, AdamW, RMSprop, Adagrad */
  double alpha;         /**< RMSprop smoothing constant */
  double lr_decay;      /**< Adagrad */
  double initial_accumulator_value; /**< Adagrad */
} ctorch_optim_options;

/**
 * Every optimizer's hyper-parameters (168 bytes, frozen like
 * ctorch_optim_options): its fields first, in the same order (so a pointer
 * to a ctorch_optim_options_v2 may be passed where a ctorch_optim_options is
 * read), then the fields of NAdam, RAdam, Adamax, Adadelta and LBFGS. Fill
 * it with ctorch_optim_options_default_v2.
 */
typedef struct ctorch_optim_options_v2 {
  double lr;            /**< all */
  double weight_decay;  /**< all (AdamW: decoupled) */
  double momentum;      /**< SGD, RMSprop */
  double dampening;     /**< SGD */
  int nesterov;         /**< SGD: needs momentum > 0 and dampening 0 */
  int amsgrad;          /**< Adam, AdamW */
  int centered;         /**< RMSprop */
  double beta1;         /**< Adam, AdamW, NAdam, RAdam, Adamax */
  double beta2;         /**< Adam, AdamW, NAdam, RAdam, Adamax */
  double eps;           /**< Adam, AdamW, RMSprop, Adagrad, NAdam, RAdam, Adamax, Adadelta */
  double alpha;         /**< RMSprop smoothing constant */
  double lr_decay;      /**< Adagrad */
  double initial_accumulator_value; /**< Adagrad */
  double momentum_decay;      /**< NAdam (default 4e-3) */
  int decoupled_weight_decay; /**< NAdam, RAdam: AdamW-style decay (PyTorch >= 2.1; a 1.13 build refuses it) */
  double rho;                 /**< Adadelta (default 0.9) */
  int64_t max_iter;           /**< LBFGS: iterations per step (default 20) */
  int64_t max_eval;           /**< LBFGS: closure calls per step; 0 = max_iter * 5 / 4 (Python's None) */
  double tolerance_grad;      /**< LBFGS (default 1e-7) */
  double tolerance_change;    /**< LBFGS (default 1e-9) */
  int64_t history_size;       /**< LBFGS (default 100) */
  int line_search;            /**< LBFGS: a ctorch_line_search (default CTORCH_LINE_SEARCH_NONE) */
} ctorch_optim_options_v2;

/** An optimizer (owns its state and references to its parameters). */
typedef struct ctorch_optimizer_s *ctorch_optimizer;

/** Writes PyTorch's defaults for kind into *out (SGD lr, which PyTorch requires, defaults to 0.01). */
CTORCH_API ctorch_status ctorch_optim_options_default(ctorch_optim_options *out, ctorch_optimizer_kind kind);
/**
 * NEW optimizer over params[0..n) (borrowed; must be leaves, floating
 * point). options NULL = ctorch_optim_options_default(kind). Free with
 * ctorch_optimizer_free.
 */
CTORCH_API ctorch_status ctorch_optimizer_new(ctorch_optimizer *out, ctorch_optimizer_kind kind,
                                              const ctorch_tensor *params, size_t n,
                                              const ctorch_optim_options *options);
/** Frees the handle. NULL-safe; returns nothing. Schedulers made from it keep it alive until they are freed. */
CTORCH_API void ctorch_optimizer_free(ctorch_optimizer opt);
/** Adds a parameter group with its own options (NULL = the optimizer's defaults). params are borrowed; none may already be in the optimizer. */
CTORCH_API ctorch_status ctorch_optimizer_add_param_group(ctorch_optimizer opt, const ctorch_tensor *params, size_t n,
                                                          const ctorch_optim_options *options);
/** Number of parameter groups. */
CTORCH_API ctorch_status ctorch_optimizer_num_param_groups(size_t *out, ctorch_optimizer opt);
/** NEW list of the parameters of group `group`. */
CTORCH_API ctorch_status ctorch_optimizer_params(ctorch_tensor_list *out, ctorch_optimizer opt, size_t group);
/** Options of group `group` (lr as currently set). */
CTORCH_API ctorch_status ctorch_optimizer_get_options(ctorch_optim_options *out, ctorch_optimizer opt, size_t group);
/** As ctorch_optim_options_default, writing every field of the larger struct. */
CTORCH_API ctorch_status ctorch_optim_options_default_v2(ctorch_optim_options_v2 *out, ctorch_optimizer_kind kind);
/** As ctorch_optimizer_new, with every option (options NULL = ctorch_optim_options_default_v2(kind)). */
CTORCH_API ctorch_status ctorch_optimizer_new_v2(ctorch_optimizer *out, ctorch_optimizer_kind kind,
                                                 const ctorch_tensor *params, size_t n,
                                                 const ctorch_optim_options_v2 *options);
/** As ctorch_optimizer_add_param_group, with every option (NULL = the optimizer's defaults). */
CTORCH_API ctorch_status ctorch_optimizer_add_param_group_v2(ctorch_optimizer opt, const ctorch_tensor *params, size_t n,
                                                             const ctorch_optim_options_v2 *options);
/** As ctorch_optimizer_get_options, writing every field of the larger struct. */
CTORCH_API ctorch_status ctorch_optimizer_get_options_v2(ctorch_optim_options_v2 *out, ctorch_optimizer opt, size_t group);
/** Learning rate of group `group`. */
CTORCH_API ctorch_status ctorch_optimizer_get_lr(double *out, ctorch_optimizer opt, size_t group);
/** Sets the learning rate of group `group` (lr >= 0). */
CTORCH_API ctorch_status ctorch_optimizer_set_lr(ctorch_optimizer opt, size_t group, double lr);
/** Clears every parameter's .grad: drops it if set_to_none (PyTorch 2's default), else zeroes it. */
CTORCH_API ctorch_status ctorch_optimizer_zero_grad(ctorch_optimizer opt, int set_to_none);
/** One update of every parameter that has a .grad. LBFGS refuses (INVALID_ARGUMENT): it needs ctorch_optimizer_step_closure. */
CTORCH_API ctorch_status ctorch_optimizer_step(ctorch_optimizer opt);
/**
 * The closure of ctorch_optimizer_step_closure (Python's step(closure)):
 * typically zero the grads, compute the loss, call backward, and write the
 * loss's value to *loss. Return CTORCH_OK, or a failure status, which the
 * step returns (its own status when it is one, else RUNTIME) with a message
 * naming the callback. Grad mode is on while it runs.
 */
typedef ctorch_status (*ctorch_optimizer_closure_fn)(void *user_data, double *loss);
/**
 * One step with a closure, as Python's optimizer.step(closure): any kind;
 * LBFGS calls it as often as its options say (max_iter, max_eval), the
 * others once before the update. *loss_out: the loss the first call
 * returned (what Python's step returns). A failing closure stops the step
 * (LBFGS's parameters and state may then be part way through an
 * iteration; the other kinds are unchanged). The optimizer is held for
 * the whole call, the closure included (another thread's call on it:
 * BUSY), so a training step written as the closure is never interleaved
 * with another thread's; the update (of every kind but LBFGS) takes the
 * gradients' locks as ctorch_optimizer_step does. Errors: INVALID_ARGUMENT
 * (NULL opt, closure or loss_out), the closure's status.
 */
CTORCH_API ctorch_status ctorch_optimizer_step_closure(double *loss_out, ctorch_optimizer opt,
                                                       ctorch_optimizer_closure_fn closure, void *user_data);
/** Writes the optimizer's state (per-parameter buffers, step counts, group options) to a file (libtorch archive). */
CTORCH_API ctorch_status ctorch_optimizer_save(ctorch_optimizer opt, const char *path);
/**
 * Restores state written by ctorch_optimizer_save for an optimizer of the same
 * kind and parameter shapes. The file (a TorchScript archive) passes every
 * check ctorch_module_load makes before libtorch reads it; what is not a
 * regular file (a FIFO, a device) is refused without blocking. Errors: IO
 * (missing, not a regular file, or not such an archive: corrupt or crafted),
 * VALUE (state of another optimizer kind or size; the optimizer is unchanged).
 */
CTORCH_API ctorch_status ctorch_optimizer_load(ctorch_optimizer opt, const char *path);
/**
 * Writes the state in the format of Python's optimizer.state_dict(), as
 * torch.save does ({'state': {index: {...}}, 'param_groups': [{options...,
 * 'params': [index...]}]}). Python continues the run with
 * `torch.optim.<Kind>(params).load_state_dict(torch.load(path))` (PyTorch >= 1.13;
 * loadable with weights_only=True). SGD, Adam and AdamW only (others:
 * NOT_IMPLEMENTED). Parameters are numbered across the groups in order, as
 * Python does. Atomic like ctorch_save. Errors: IO, NOT_IMPLEMENTED.
 */
CTORCH_API ctorch_status ctorch_optimizer_save_state_dict(ctorch_optimizer opt, const char *path);
/**
 * Loads a state dict written by Python's torch.save(optimizer.state_dict())
 * (PyTorch 1.13 or 2.x; 'step' a tensor or a number) or by
 * ctorch_optimizer_save_state_dict into opt: group options (lr, betas, ...)
 * and per-parameter state. The file's groups must match opt's in number and
 * sizes, its parameter numbers map onto opt's parameters in order (Python's
 * rule), state tensors must have their parameter's shape (cast to its dtype
 * and device). On any error opt is left unchanged. Errors: IO; TYPE (not a
 * state dict); VALUE (groups or shapes differ, another optimizer's state,
 * corrupt file); NOT_IMPLEMENTED (maximize=True, Adam with
 * decoupled_weight_decay=True, a kind other than SGD/Adam/AdamW).
 */
CTORCH_API ctorch_status ctorch_optimizer_load_state_dict(ctorch_optimizer opt, const char *path);

/**
 * How an optimizer's step runs its arithmetic (Python's foreach= and
 * fused= constructor arguments). The state (buffers, step counts), its
 * files and state dicts are the same whichever runs a step, so the
 * implementation may change between steps.
 */
typedef enum ctorch_optim_impl CTORCH_ENUM_BASE {
  CTORCH_OPTIM_IMPL_DEFAULT = 0,  /**< PyTorch's default (foreach=None, fused=None): FOREACH when every parameter is on CUDA (so on CUDA the default is foreach), else FOR_LOOP */
  CTORCH_OPTIM_IMPL_FOR_LOOP = 1, /**< foreach=False: one parameter at a time (with libtorch 2.x, Adam, AdamW and RMSprop on CPU parameters take torch.optim's order of operations, not libtorch's C++ optimizers', which round differently) */
  CTORCH_OPTIM_IMPL_FOREACH = 2,  /**< foreach=True: the multi-tensor (_foreach_*) form, parameters grouped by device and dtype as torch.optim groups them */
  CTORCH_OPTIM_IMPL_FUSED = 3     /**< fused=True: one fused kernel per group (_fused_adam_, ...): only where the libtorch has it for the kind and device */
} ctorch_optim_impl;
/**
 * Chooses how opt's later steps run (initially CTORCH_OPTIM_IMPL_DEFAULT).
 * FOREACH computes what Python's `torch.optim.<Kind>(..., foreach=True)`
 * computes, op for op (bit-identical on the CPU); FUSED what fused=True
 * does. Refusals, opt unchanged: INVALID_ARGUMENT (NULL opt, impl not a
 * ctorch_optim_impl); NOT_IMPLEMENTED (FOREACH or FUSED for LBFGS, which
 * PyTorch has only one-at-a-time; FUSED where this libtorch has no fused
 * kernel for the kind (libtorch 1.13 has none on the CPU; 2.x has Adam,
 * AdamW, SGD and Adagrad) or for a parameter's device or dtype; the
 * message names what is missing). A parameter added later on a device the
 * fused kernel lacks makes the step fail with NOT_IMPLEMENTED.
 */
CTORCH_API ctorch_status ctorch_optimizer_set_implementation(ctorch_optimizer opt, ctorch_optim_impl impl);
/** What ctorch_optimizer_set_implementation last chose (CTORCH_OPTIM_IMPL_DEFAULT if never called). Errors: INVALID_ARGUMENT (NULL opt or out). */
CTORCH_API ctorch_status ctorch_optimizer_get_implementation(ctorch_optim_impl *out, ctorch_optimizer opt);
/** What the next step runs: DEFAULT resolved against the parameters' devices now (FOR_LOOP, FOREACH or FUSED). Errors: INVALID_ARGUMENT (NULL opt or out). */
CTORCH_API ctorch_status ctorch_optimizer_resolved_implementation(ctorch_optim_impl *out, ctorch_optimizer opt);

/* ---- learning-rate schedules ------------------------------------- */

/**
 * A schedule that sets every group's lr from its base lr (the group's lr
 * when the scheduler was made) and an epoch counter, with the closed forms
 * of PyTorch's StepLR and CosineAnnealingLR. Creating one sets epoch 0 (lr =
 * base lr); each ctorch_lr_scheduler_step advances one epoch.
 */
typedef struct ctorch_lr_scheduler_s *ctorch_lr_scheduler;

/** NEW StepLR: lr = base * gamma^floor(epoch / step_size) (step_size >= 1). Keeps opt alive. */
CTORCH_API ctorch_status ctorch_lr_scheduler_step_lr(ctorch_lr_scheduler *out, ctorch_optimizer opt, int64_t step_size,
                                                     double gamma);
/** NEW CosineAnnealingLR: lr = eta_min + (base - eta_min) * (1 + cos(pi * epoch / t_max)) / 2 (t_max >= 1). Keeps opt alive. */
CTORCH_API ctorch_status ctorch_lr_scheduler_cosine(ctorch_lr_scheduler *out, ctorch_optimizer opt, int64_t t_max,
                                                    double eta_min);
/** Advances one epoch and writes the new lr into every group (any kind but REDUCE_ON_PLATEAU). */
CTORCH_API ctorch_status ctorch_lr_scheduler_step(ctorch_lr_scheduler s);
/** The current epoch (PyTorch's last_epoch: 0 after creation). */
CTORCH_API ctorch_status ctorch_lr_scheduler_epoch(int64_t *out, ctorch_lr_scheduler s);
/** The lr this scheduler last set for group `group`. */
CTORCH_API ctorch_status ctorch_lr_scheduler_get_last_lr(double *out, ctorch_lr_scheduler s, size_t group);
/** Frees the scheduler (and its reference to the optimizer). NULL-safe; returns nothing. */
CTORCH_API void ctorch_lr_scheduler_free(ctorch_lr_scheduler s);

/**
 * The schedules of torch.optim.lr_scheduler, computed as PyTorch computes
 * them: each step reads the groups' current lr (the chainable forms), so
 * schedules on one optimizer compose as in Python, and the lrs equal
 * Python's step for step. Made with ctorch_lr_scheduler_new from options
 * (ctorch_lr_schedule_options_default gives PyTorch's defaults); making one
 * performs PyTorch's initial step (epoch 0) and records each group's
 * initial lr the first time (Python's group['initial_lr']).
 */
typedef enum ctorch_lr_schedule CTORCH_ENUM_BASE {
  CTORCH_LR_STEP = 0,                 /**< StepLR(step_size, gamma) */
  CTORCH_LR_MULTI_STEP = 1,           /**< MultiStepLR(milestones, gamma) */
  CTORCH_LR_CONSTANT = 2,             /**< ConstantLR(factor, total_iters) */
  CTORCH_LR_LINEAR = 3,               /**< LinearLR(start_factor, end_factor, total_iters) */
  CTORCH_LR_EXPONENTIAL = 4,          /**< ExponentialLR(gamma) */
  CTORCH_LR_POLYNOMIAL = 5,           /**< PolynomialLR(total_iters, power) */
  CTORCH_LR_COSINE = 6,               /**< CosineAnnealingLR(t_max, eta_min) */
  CTORCH_LR_COSINE_WARM_RESTARTS = 7, /**< CosineAnnealingWarmRestarts(t_0, t_mult, eta_min) */
  CTORCH_LR_CYCLIC = 8,               /**< CyclicLR(base_lr, max_lr, step_size_up, step_size_down, mode, gamma, cycle_momentum, base/max_momentum) */
  CTORCH_LR_ONE_CYCLE = 9,            /**< OneCycleLR(max_lr, total_steps, pct_start, anneal_strategy, cycle_momentum, base/max_momentum, div_factor, final_div_factor, three_phase) */
  CTORCH_LR_LAMBDA = 10,              /**< LambdaLR(lr_lambda): lr = initial lr * lambda(epoch) */
  CTORCH_LR_MULTIPLICATIVE = 11,      /**< MultiplicativeLR(lr_lambda): lr = lr * lambda(epoch) from epoch 1 */
  CTORCH_LR_REDUCE_ON_PLATEAU = 12    /**< ReduceLROnPlateau: stepped with ctorch_lr_scheduler_step_metric */
} ctorch_lr_schedule;

/**
 * The factor of LambdaLR / MultiplicativeLR for `epoch` and parameter group
 * `group` (Python's lambda, or its list of lambdas, one per group): write
 * it to *factor and return CTORCH_OK, or return a failure status, which the
 * stepping call returns (the groups' lrs unchanged), with a message naming
 * the callback, the epoch and the group.
 */
typedef ctorch_status (*ctorch_lr_lambda_fn)(void *user_data, int64_t epoch, size_t group, double *factor);

/** CyclicLR's mode. */
typedef enum ctorch_cyclic_mode CTORCH_ENUM_BASE {
  CTORCH_CYCLIC_TRIANGULAR = 0,  /**< 'triangular' */
  CTORCH_CYCLIC_TRIANGULAR2 = 1, /**< 'triangular2': the amplitude halves each cycle */
  CTORCH_CYCLIC_EXP_RANGE = 2    /**< 'exp_range': the amplitude times gamma^iteration */
} ctorch_cyclic_mode;

/**
 * Options of the schedules made by ctorch_lr_scheduler_new; fill with
 * ctorch_lr_schedule_options_default, then change what the schedule uses
 * (the others are ignored). Names and defaults are PyTorch's; a value
 * PyTorch's constructor refuses is refused (INVALID_ARGUMENT naming the
 * field). MULTI_STEP, LAMBDA and MULTIPLICATIVE take a list or a callback
 * and have their own constructors.
 */
typedef struct ctorch_lr_schedule_options {
  int64_t step_size;             /**< STEP (no default in PyTorch: 1 here; set it) */
  double gamma;                  /**< STEP (0.1); EXPONENTIAL (no default: 0.1 here); CYCLIC exp_range (1.0) */
  double factor;                 /**< CONSTANT (1/3); REDUCE_ON_PLATEAU (0.1) */
  double start_factor;           /**< LINEAR (1/3) */
  double end_factor;             /**< LINEAR (1.0) */
  int64_t total_iters;           /**< CONSTANT, LINEAR, POLYNOMIAL (5) */
  double power;                  /**< POLYNOMIAL (1.0) */
  int64_t t_max;                 /**< COSINE (no default: 1 here; set it) */
  double eta_min;                /**< COSINE, COSINE_WARM_RESTARTS (0) */
  int64_t t_0;                   /**< COSINE_WARM_RESTARTS (no default: 1 here; set it) */
  int64_t t_mult;                /**< COSINE_WARM_RESTARTS (1) */
  double base_lr;                /**< CYCLIC (no default: set it; every group) */
  double max_lr;                 /**< CYCLIC, ONE_CYCLE (no default: set it; every group) */
  int64_t step_size_up;          /**< CYCLIC (2000) */
  int64_t step_size_down;        /**< CYCLIC (0 = step_size_up, PyTorch's None) */
  int32_t mode;                  /**< CYCLIC: a ctorch_cyclic_mode value (CTORCH_CYCLIC_TRIANGULAR) */
  int cycle_momentum;            /**< CYCLIC, ONE_CYCLE (1): needs SGD/RMSprop momentum or Adam/AdamW betas */
  double base_momentum;          /**< CYCLIC (0.8), ONE_CYCLE (0.85) */
  double max_momentum;           /**< CYCLIC (0.9), ONE_CYCLE (0.95) */
  int64_t total_steps;           /**< ONE_CYCLE (no default: set it) */
  double pct_start;              /**< ONE_CYCLE (0.3) */
  int anneal_linear;             /**< ONE_CYCLE: 0 'cos' (default), 1 'linear' */
  double div_factor;             /**< ONE_CYCLE (25) */
  double final_div_factor;       /**< ONE_CYCLE (1e4) */
  int three_phase;               /**< ONE_CYCLE (0) */
  int mode_max;                  /**< REDUCE_ON_PLATEAU: 0 'min' (default), 1 'max' */
  int64_t patience;              /**< REDUCE_ON_PLATEAU (10) */
  double threshold;              /**< REDUCE_ON_PLATEAU (1e-4) */
  int threshold_abs;             /**< REDUCE_ON_PLATEAU: 0 'rel' (default), 1 'abs' */
  int64_t cooldown;              /**< REDUCE_ON_PLATEAU (0) */
  double min_lr;                 /**< REDUCE_ON_PLATEAU (0; every group) */
  double eps;                    /**< REDUCE_ON_PLATEAU (1e-8) */
} ctorch_lr_schedule_options;

/** Writes PyTorch's defaults for `kind` into *out (see each field). */
CTORCH_API ctorch_status ctorch_lr_schedule_options_default(ctorch_lr_schedule_options *out, ctorch_lr_schedule kind);
/**
 * NEW scheduler of `kind` on opt (borrowed; the scheduler keeps it alive)
 * with options (NULL = the defaults, which STEP, COSINE, COSINE_WARM_RESTARTS,
 * CYCLIC and ONE_CYCLE do not accept: they need a value PyTorch has no
 * default for). Not MULTI_STEP, LAMBDA, MULTIPLICATIVE (INVALID_ARGUMENT:
 * see the two constructors below). Performs PyTorch's initial step: the
 * groups' lrs are those of epoch 0 on return (CYCLIC and ONE_CYCLE also set
 * momentum / beta1 when cycle_momentum). Free with ctorch_lr_scheduler_free.
 */
CTORCH_API ctorch_status ctorch_lr_scheduler_new(ctorch_lr_scheduler *out, ctorch_optimizer opt, ctorch_lr_schedule kind,
                                                 const ctorch_lr_schedule_options *options);
/** NEW MultiStepLR: milestones[0..n_milestones) (borrowed during the call; sorted as Python does; repeats multiply), gamma. Keeps opt alive. */
CTORCH_API ctorch_status ctorch_lr_scheduler_multi_step(ctorch_lr_scheduler *out, ctorch_optimizer opt,
                                                        const int64_t *milestones, size_t n_milestones, double gamma);
/**
 * NEW LambdaLR (kind CTORCH_LR_LAMBDA: lr = initial lr * fn) or
 * MultiplicativeLR (CTORCH_LR_MULTIPLICATIVE: lr = lr * fn, from epoch 1).
 * fn is called with user_data, which must outlive the scheduler (ctorch
 * does not free it). Performs the initial step (which calls fn for LAMBDA).
 */
CTORCH_API ctorch_status ctorch_lr_scheduler_lambda(ctorch_lr_scheduler *out, ctorch_optimizer opt,
                                                    ctorch_lr_schedule kind, ctorch_lr_lambda_fn fn, void *user_data);
/**
 * NEW SequentialLR: schedulers[0..n) (borrowed; kept alive) run one after
 * another, scheduler i+1 from epoch milestones[i] (n - 1 increasing
 * milestones). All on opt; none REDUCE_ON_PLATEAU. As in PyTorch, the
 * groups' lrs go back to their initial lrs and only the first scheduler's
 * initial step is performed. Step only the sequence afterwards.
 */
CTORCH_API ctorch_status ctorch_lr_scheduler_sequential(ctorch_lr_scheduler *out, ctorch_optimizer opt,
                                                        const ctorch_lr_scheduler *schedulers, size_t n,
                                                        const int64_t *milestones, size_t n_milestones);
/** NEW ChainedScheduler: each step steps schedulers[0..n) in order (borrowed; kept alive; one optimizer; none REDUCE_ON_PLATEAU). */
CTORCH_API ctorch_status ctorch_lr_scheduler_chained(ctorch_lr_scheduler *out, const ctorch_lr_scheduler *schedulers,
                                                     size_t n);
/** ReduceLROnPlateau's step with the epoch's metric (other kinds: INVALID_ARGUMENT; plateau with ctorch_lr_scheduler_step: INVALID_ARGUMENT). */
CTORCH_API ctorch_status ctorch_lr_scheduler_step_metric(ctorch_lr_scheduler s, double metric);
/**
 * Writes s's state to path (torch.save format, atomically) as Python's
 * scheduler.state_dict() of the same class and PyTorch version: its keys in
 * its order; SequentialLR and ChainedScheduler hold their schedulers' dicts
 * under "_schedulers". Python continues it with
 * sched.load_state_dict(torch.load(path)). What is code rather than data
 * is written as Python writes it or left out: LambdaLR/MultiplicativeLR's
 * lr_lambdas are None; torch 1.13's CyclicLR weak method and OneCycleLR
 * anneal_func are left out (Python keeps its own). MultiStepLR's milestones
 * are a collections.Counter, which torch 1.13's weights_only loader refuses
 * (2.x's accepts it).
 */
CTORCH_API ctorch_status ctorch_lr_scheduler_save_state_dict(ctorch_lr_scheduler s, const char *path);
/**
 * Restores into s a state written by ctorch_lr_scheduler_save_state_dict or
 * by Python's torch.save(sched.state_dict(), path) for a scheduler of the
 * same class (sequences and chains: of the same schedulers): epoch, step
 * count, base and last lrs and every option Python's load_state_dict
 * overwrites. The optimizer's lrs are not changed (they are the optimizer's
 * state). Another class, a key missing or of the wrong type: CTORCH_VALUE
 * naming the key, and s unchanged.
 */
CTORCH_API ctorch_status ctorch_lr_scheduler_load_state_dict(ctorch_lr_scheduler s, const char *path);

/* ---- parameter initialisation (torch::nn::init; in place, no grad) -- */

/** Non-linearity for gains (torch.nn.init.calculate_gain). */
typedef enum ctorch_nonlinearity CTORCH_ENUM_BASE {
  CTORCH_NONLINEARITY_LINEAR = 0,
  CTORCH_NONLINEARITY_CONV1D = 1,
  CTORCH_NONLINEARITY_CONV2D = 2,
  CTORCH_NONLINEARITY_CONV3D = 3,
  CTORCH_NONLINEARITY_CONV_TRANSPOSE1D = 4,
  CTORCH_NONLINEARITY_CONV_TRANSPOSE2D = 5,
  CTORCH_NONLINEARITY_CONV_TRANSPOSE3D = 6,
  CTORCH_NONLINEARITY_SIGMOID = 7,
  CTORCH_NONLINEARITY_TANH = 8,
  CTORCH_NONLINEARITY_RELU = 9,
  CTORCH_NONLINEARITY_LEAKY_RELU = 10 /**< param = negative slope */
} ctorch_nonlinearity;

/** Which fan kaiming init preserves. */
typedef enum ctorch_fan_mode CTORCH_ENUM_BASE {
  CTORCH_FAN_IN = 0,
  CTORCH_FAN_OUT = 1
} ctorch_fan_mode;

/** Recommended gain for a non-linearity (param: leaky_relu slope; ignored otherwise). */
CTORCH_API ctorch_status ctorch_init_calculate_gain(double *out, ctorch_nonlinearity nonlinearity, double param);
/** fan_in and fan_out of a weight tensor (dim >= 2), as nn.init computes them. */
CTORCH_API ctorch_status ctorch_init_calculate_fan_in_and_fan_out(int64_t *fan_in, int64_t *fan_out, ctorch_tensor t);
/** t ~ U(a, b), in place. All init functions use the default generator (ctorch_manual_seed) and record no graph. */
CTORCH_API ctorch_status ctorch_init_uniform_(ctorch_tensor t, double a, double b);
/** t ~ N(mean, std^2), in place. */
CTORCH_API ctorch_status ctorch_init_normal_(ctorch_tensor t, double mean, double std);
/** Fills t with value, in place. */
CTORCH_API ctorch_status ctorch_init_constant_(ctorch_tensor t, double value);
/** Fills t with 0, in place. */
CTORCH_API ctorch_status ctorch_init_zeros_(ctorch_tensor t);
/** Fills t with 1, in place. */
CTORCH_API ctorch_status ctorch_init_ones_(ctorch_tensor t);
/** Glorot uniform: U(-b, b), b = gain * sqrt(6 / (fan_in + fan_out)). */
CTORCH_API ctorch_status ctorch_init_xavier_uniform_(ctorch_tensor t, double gain);
/** Glorot normal: N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out)). */
CTORCH_API ctorch_status ctorch_init_xavier_normal_(ctorch_tensor t, double gain);
/** He uniform: U(-b, b), b = gain(nonlinearity, a) * sqrt(3 / fan(mode)). PyTorch's layers use a = sqrt(5), FAN_IN, LEAKY_RELU. */
CTORCH_API ctorch_status ctorch_init_kaiming_uniform_(ctorch_tensor t, double a, ctorch_fan_mode mode,
                                                      ctorch_nonlinearity nonlinearity);
/** He normal: N(0, std^2), std = gain(nonlinearity, a) / sqrt(fan(mode)). */
CTORCH_API ctorch_status ctorch_init_kaiming_normal_(ctorch_tensor t, double a, ctorch_fan_mode mode,
                                                     ctorch_nonlinearity nonlinearity);

/* ---- gradient clipping (torch.nn.utils) ------------------------------ */

/**
 * torch.nn.utils.clip_grad_norm_: scales the .grad of params[0..n)
 * (borrowed; parameters without a gradient are skipped) in place by
 * min(max_norm / (total + 1e-6), 1), where total is the norm of order
 * norm_type (inf allowed) of all the gradients taken as one vector,
 * computed op for op as the installed PyTorch does (bit-identical results).
 * *total_norm (may be NULL) gets total before clipping (0 with no
 * gradient). error_if_nonfinite: a NaN or infinite total fails with VALUE
 * and leaves the gradients unchanged. NaN max_norm or norm_type:
 * INVALID_ARGUMENT; a sparse gradient: NOT_IMPLEMENTED.
 * @nullable total_norm
 */
CTORCH_API ctorch_status ctorch_clip_grad_norm_(double *total_norm, const ctorch_tensor *params, size_t n,
                                                double max_norm, double norm_type, int error_if_nonfinite);
/** torch.nn.utils.clip_grad_value_: clamps every .grad of params[0..n) (borrowed) to [-clip_value, clip_value] in place. */
CTORCH_API ctorch_status ctorch_clip_grad_value_(const ctorch_tensor *params, size_t n, double clip_value);

/* ---- TensorBoard (torch.utils.tensorboard.SummaryWriter) ------------- */
/* Event files that TensorBoard reads (tensorboard --logdir DIR). Each add_*
 * appends one record with the record of torch's SummaryWriter for the same
 * call (docs/training.md says how each is built) and writes it to the file
 * before returning: a process killed afterwards, even by SIGKILL, leaves it
 * readable. wall_time <= 0 means now; step is the global step. A writer
 * may be used from several threads (records are written whole, in turn).
 * Every string that goes into a record or a file name (tags, text,
 * hyper-parameter names and text values, metric names, run_name,
 * filename_suffix) must be valid UTF-8: truncated or overlong sequences,
 * code points above U+10FFFF and encoded surrogates (U+D800..U+DFFF) are
 * refused with INVALID_ARGUMENT naming the argument and the byte, and
 * nothing is written (TensorBoard's reader stops at such a string with
 * "String field had bad UTF-8"). */

/** An open event file. */
typedef struct ctorch_summary_writer_s *ctorch_summary_writer;
/**
 * NEW writer of a new event file in log_dir (created with its parents if
 * missing). Its name is torch's:
 * `events.out.tfevents.<time>.<host>.<pid>.<n><filename_suffix>`. filename_suffix may be NULL (none); it may
 * not contain '/'. Errors: IO (the directory or file cannot be made).
 * Free with ctorch_summary_writer_free.
 * @nullable filename_suffix
 */
CTORCH_API ctorch_status ctorch_summary_writer_new(ctorch_summary_writer *out, const char *log_dir,
                                                   const char *filename_suffix);
/** Borrowed path of the writer's event file, valid while w lives. */
CTORCH_API ctorch_status ctorch_summary_writer_path(const char **out, ctorch_summary_writer w);
/** add_scalar(tag, value, step): stored as float32, as TensorBoard's simple_value. */
CTORCH_API ctorch_status ctorch_summary_writer_add_scalar(ctorch_summary_writer w, const char *tag, double value,
                                                          int64_t step, double wall_time);
/**
 * add_histogram(tag, values, step) with torch's default bins ("tensorflow":
 * 0 and +-1e-12 * 1.1^k up to 1e20). values (borrowed) is any real tensor
 * with at least one element, all finite (INVALID_ARGUMENT otherwise,
 * naming the first non-finite element's index).
 */
CTORCH_API ctorch_status ctorch_summary_writer_add_histogram(ctorch_summary_writer w, const char *tag,
                                                             ctorch_tensor values, int64_t step, double wall_time);
/**
 * add_image(tag, image, step) for a (channels, height, width) image
 * (borrowed; channels 1, 3 or 4; height and width 1..65536): uint8 as is,
 * other real types scaled by 255 and clipped to [0, 255]; one channel is
 * shown grey (stored RGB, as torch does); PNG-encoded.
 */
CTORCH_API ctorch_status ctorch_summary_writer_add_image(ctorch_summary_writer w, const char *tag, ctorch_tensor image,
                                                         int64_t step, double wall_time);
/** add_text(tag, text, step): text (UTF-8, copied) shown under tag + "/text_summary" (Markdown). */
CTORCH_API ctorch_status ctorch_summary_writer_add_text(ctorch_summary_writer w, const char *tag, const char *text,
                                                        int64_t step, double wall_time);
/**
 * add_hparams(hparam_dict, metric_dict, run_name=run_name) as torch does it:
 * a new event file in `<log_dir>/<run_name>` (run_name NULL: the time as
 * Python's str(time.time()) prints it) holding the hparams plugin's
 * experiment, session-start and session-end records, then one scalar per
 * metric. Hyper-parameter i is named names[i] and is the string texts[i]
 * when texts and texts[i] are non-NULL, else the number values[i]. All
 * arrays are borrowed; n >= 1 hyper-parameters, n_metrics >= 0.
 * @nullable values
 * @nullable texts
 * @nullable metric_names
 * @nullable metric_values
 * @nullable run_name
 */
CTORCH_API ctorch_status ctorch_summary_writer_add_hparams(ctorch_summary_writer w, const char *const *names,
                                                           const double *values, const char *const *texts, size_t n,
                                                           const char *const *metric_names,
                                                           const double *metric_values, size_t n_metrics,
                                                           const char *run_name);
/** Forces the records written so far to the disk (fsync). */
CTORCH_API ctorch_status ctorch_summary_writer_flush(ctorch_summary_writer w);
/** Closes the file and frees the writer (records are already written). NULL-safe; returns nothing. */
CTORCH_API void ctorch_summary_writer_free(ctorch_summary_writer w);

/** @} */

/* ================================================================== */
/**
 * @defgroup transforms Transforms and metrics
 *
 * Batch transforms on images [N, C, H, W] as torchvision's transforms
 * would give applied per image by a DataLoader, each image drawing
 * its own random numbers; and classification metrics equal to
 * scikit-learn's (docs/training-data.md, docs/training.md "Metrics").
 *
 * Transforms are handles (free with ctorch_transform_free) that a data
 * loader applies or a caller runs; reads of one transform are concurrent.
 * Metrics are plain functions of borrowed tensors.
 * @{
 */

/**
 * A transform of a batch of images. Handles are reference counted: a
 * compose keeps references to its parts, so the caller may free its own
 * handles after making one. A transform has no mutable state and may be
 * applied from several threads at once (with distinct generators, or the
 * default one).
 *
 * Draw order (what makes a run reproducible in Python): images are taken
 * in order 0..N-1; for each image, the transforms of a compose run in
 * order, each drawing from the generator as torchvision's does, through
 * the same torch calls (so torch.Generator().manual_seed(s) passed to them
 * replays a ctorch generator made with seed s):
 *   random crop: when the (padded) image is larger than the crop,
 *     i = randint(0, H' - h + 1, (1,)), then j = randint(0, W' - w + 1, (1,));
 *     no draw when it has the crop's size;
 *   random horizontal flip: rand(1) (float32); flipped when < p;
 *   random resized crop: up to 10 tries of
 *     empty(1).uniform_(scale_min, scale_max) (float32),
 *     exp(empty(1).uniform_(log(ratio_min), log(ratio_max))) (log and
 *     exp in float32), and on the first fitting try
 *     randint(0, H - h + 1, (1,)), randint(0, W - w + 1, (1,));
 *     after 10 misses the central crop, no more draws;
 *   normalize: no draws.
 */
typedef struct ctorch_transform_s *ctorch_transform;

/**
 * NEW transforms.functional.normalize: out[:, c] = (x[:, c] - mean[c]) /
 * std[c]. mean and std (borrowed, read once: their values are copied as
 * float64) are 1-D real tensors of the same length n >= 1, n = C of the
 * batch at apply time; they are cast to the batch's dtype before use, as
 * torchvision does. Floating point batches only (TYPE otherwise). A std
 * entry of 0, a NaN entry, or lengths that differ: INVALID_ARGUMENT naming
 * `std` or `mean`.
 */
CTORCH_API ctorch_status ctorch_transform_normalize(ctorch_transform *out, ctorch_tensor mean, ctorch_tensor std);
/**
 * NEW RandomCrop((height, width), padding, fill=fill,
 * padding_mode="constant"): pads every image with fill, then crops
 * height x width at a random place. padding (copied) has n_padding = 0
 * (none), 1 (all sides), 2 (left/right, top/bottom) or 4 (left, top,
 * right, bottom) entries, each >= 0, as torchvision reads it. height and
 * width >= 1. A padded image smaller than the crop fails at apply time
 * (VALUE naming `height`/`width`). Any dtype.
 * @nullable padding
 */
CTORCH_API ctorch_status ctorch_transform_random_crop(ctorch_transform *out, int64_t height, int64_t width,
                                                      const int64_t *padding, size_t n_padding, double fill);
/** NEW RandomHorizontalFlip(p): each image is mirrored (last dimension) with probability p in [0, 1]. Any dtype. */
CTORCH_API ctorch_status ctorch_transform_random_horizontal_flip(ctorch_transform *out, double p);
/**
 * NEW RandomResizedCrop((height, width), scale=(scale_min, scale_max),
 * ratio=(ratio_min, ratio_max), interpolation=BILINEAR, antialias=False):
 * crops a random area and aspect ratio (torchvision's get_params, Python's
 * round-half-even included), then resizes it to height x width with
 * upsample_bilinear2d (align_corners=False). Floating point and UINT8
 * batches (UINT8: resized in float32, rounded, cast back, as torchvision
 * does). Errors: height or width < 1, 0 < scale_min <= scale_max and
 * 0 < ratio_min <= ratio_max not holding (NaN included): INVALID_ARGUMENT
 * naming the argument.
 */
CTORCH_API ctorch_status ctorch_transform_random_resized_crop(ctorch_transform *out, int64_t height, int64_t width,
                                                              double scale_min, double scale_max, double ratio_min,
                                                              double ratio_max);
/**
 * NEW Compose(ts[0..n)): applies the transforms in order to each image.
 * The entries (borrowed; none NULL; composes allowed) are kept alive by
 * the new transform. n == 0 is the identity.
 */
CTORCH_API ctorch_status ctorch_transform_compose(ctorch_transform *out, const ctorch_transform *ts, size_t n);
/**
 * Applies t to batch (borrowed; [N, C, H, W], N >= 0; CPU or any device
 * the ops support) and writes the NEW result to *out (a new tensor, never
 * a view of batch). Random numbers come from generator (a CPU generator;
 * NULL = the default CPU generator), in the draw order described at
 * ctorch_transform. Errors: rank other than 4 (INVALID_ARGUMENT naming
 * `batch`), and each transform's own (naming the transform's argument).
 * On failure the generator may have advanced.
 * @nullable generator
 */
CTORCH_API ctorch_status ctorch_transform_apply(ctorch_tensor *out, ctorch_transform t, ctorch_tensor batch,
                                                ctorch_generator generator);
/** Drops the caller's reference to t (composes holding it keep it alive). NULL-safe; returns nothing. */
CTORCH_API void ctorch_transform_free(ctorch_transform t);

/*
 * Eval transforms (torchvision.transforms' Resize, CenterCrop and
 * ConvertImageDtype on tensors). They draw no random numbers; they are
 * applied image by image like the others (ctorch_transform_apply) and
 * compose with them. Each equals torchvision's tensor functional
 * (F.resize, F.center_crop, F.convert_image_dtype) on the same image, bit
 * for bit: the same ATen kernels run (tests/image/image_vs_torchvision.py).
 */

/** Interpolation of ctorch_transform_resize (torchvision's InterpolationMode). 0 is invalid. */
typedef enum ctorch_interpolation CTORCH_ENUM_BASE {
  CTORCH_INTERPOLATION_BILINEAR = 1, /**< upsample_bilinear2d (align_corners=False) */
  CTORCH_INTERPOLATION_BICUBIC = 2   /**< upsample_bicubic2d (align_corners=False); UINT8 results clamped to [0, 255] */
} ctorch_interpolation;

/**
 * NEW Resize(size, interpolation, max_size, antialias) on tensors. size
 * (copied) has n_size = 1 entry (the shorter side becomes size[0], the
 * longer one int(size[0] * long / short), as torchvision computes it; an
 * image already of that size is returned unchanged) or 2 entries (height,
 * width). max_size (0 = None; only with n_size == 1, and then > size[0]):
 * when the longer side would exceed it, the longer side becomes max_size
 * and the shorter int(max_size * short / long). antialias (nonzero = true)
 * uses _upsample_bilinear2d_aa / _upsample_bicubic2d_aa, torchvision's
 * antialias=True (its default from 0.17; 0.14's default was False).
 * Floating point batches are resized in their dtype; other real dtypes
 * (UINT8 ...) in float32, then (bicubic UINT8: clamped to [0, 255])
 * rounded and cast back, as torchvision does. Errors: sizes < 1, n_size
 * other than 1 or 2, max_size < 0 or <= size[0] or given with two sizes,
 * a bad interpolation: INVALID_ARGUMENT naming the argument; at apply
 * time a BOOL or complex batch (TYPE) and an empty image (VALUE).
 */
CTORCH_API ctorch_status ctorch_transform_resize(ctorch_transform *out, const int64_t *size, size_t n_size,
                                                 ctorch_interpolation interpolation, int64_t max_size,
                                                 int antialias);
/**
 * NEW CenterCrop((height, width)): the central height x width region,
 * top = round((H - height) / 2) and left = round((W - width) / 2) (Python's
 * round, half to even). An image smaller than the crop is first padded
 * with zeros as torchvision pads it (left/top get the floor of half the
 * missing size, right/bottom the rest). Any dtype. height, width >= 1
 * (INVALID_ARGUMENT naming the argument).
 */
CTORCH_API ctorch_status ctorch_transform_center_crop(ctorch_transform *out, int64_t height, int64_t width);
/**
 * NEW ConvertImageDtype(dtype) (and ToTensor's scaling of UINT8 images):
 * integer -> floating: x.to(dtype) / max of the input dtype (UINT8: /255);
 * floating -> integer: (x * (max + 1 - 0.001)).to(dtype); floating ->
 * floating: a cast; integer -> integer: scaled by the ratio of the
 * (max + 1)s (floor division when narrowing). dtype is UINT8, INT8, INT16,
 * INT32, INT64, FLOAT16, BFLOAT16, FLOAT32 or FLOAT64 (else
 * INVALID_ARGUMENT naming `dtype`). At apply time FLOAT32 -> INT32/INT64
 * and FLOAT64 -> INT64 are refused (VALUE: "cannot be performed safely",
 * as torchvision), and so are BOOL and complex batches (TYPE).
 */
CTORCH_API ctorch_status ctorch_transform_convert_image_dtype(ctorch_transform *out, ctorch_dtype dtype);

/*
 * Metrics. `pred` is either labels (INT64 [N]) or scores (floating [N, C],
 * a row's label being its argmax, the first on ties, as numpy's); `target`
 * is INT64 [N] labels. Inputs are borrowed (any device; read on the CPU).
 * N >= 1. With num_classes, labels must lie in [0, num_classes) (VALUE
 * naming the argument and the index otherwise) and scores must have
 * num_classes columns: sklearn's results with labels=range(num_classes).
 */

/** Averages of per-class precision, recall and F1 (sklearn's `average`). */
typedef enum ctorch_metric_average CTORCH_ENUM_BASE {
  CTORCH_METRIC_MICRO = 1,    /**< from the summed counts of all classes */
  CTORCH_METRIC_MACRO = 2,    /**< unweighted mean over the classes */
  CTORCH_METRIC_WEIGHTED = 3  /**< mean weighted by each class's support (its count in target) */
} ctorch_metric_average;

/** sklearn accuracy_score(target, pred): the fraction of pred equal to target. Labels need no range here. */
CTORCH_API ctorch_status ctorch_metric_accuracy(double *out, ctorch_tensor pred, ctorch_tensor target);
/**
 * sklearn top_k_accuracy_score(target, scores, k=k, labels=range(C)) for
 * scores [N, C]: the fraction of rows whose target is among the k highest
 * scores, ties ranked as sklearn ranks them (the higher class index
 * first). k >= 1 (k >= C: 1.0).
 */
CTORCH_API ctorch_status ctorch_metric_top_k_accuracy(double *out, ctorch_tensor scores, ctorch_tensor target,
                                                      int64_t k);
/** NEW INT64 [num_classes, num_classes] sklearn confusion_matrix: out[t][p] counts samples of target t predicted p. */
CTORCH_API ctorch_status ctorch_metric_confusion_matrix(ctorch_tensor *out, ctorch_tensor pred, ctorch_tensor target,
                                                        int64_t num_classes);
/**
 * sklearn precision_recall_fscore_support(target, pred,
 * labels=range(num_classes), average=..., zero_division=zero_division):
 * precision tp/(tp+fp), recall tp/(tp+fn), F1 2tp/(2tp+fp+fn), each
 * zero_division where its denominator is 0 (per class; micro: of the
 * sums). zero_division is 0 (the default to use: sklearn's "warn" without
 * the warning), 1, or NaN (sklearn >= 1.3; a NaN class is left out of a
 * macro/weighted mean, as sklearn does). Any output may be NULL.
 * @nullable precision, recall, f1
 */
CTORCH_API ctorch_status ctorch_metric_precision_recall_f1(double *precision, double *recall, double *f1,
                                                           ctorch_tensor pred, ctorch_tensor target,
                                                           int64_t num_classes, ctorch_metric_average average,
                                                           double zero_division);
/**
 * The same per class (sklearn's average=None): NEW FLOAT64 [num_classes]
 * precision, recall and F1, and NEW INT64 [num_classes] support (count of
 * each class in target). Any output may be NULL (not computed).
 * @nullable precision, recall, f1, support
 */
CTORCH_API ctorch_status ctorch_metric_precision_recall_f1_per_class(ctorch_tensor *precision, ctorch_tensor *recall,
                                                                     ctorch_tensor *f1, ctorch_tensor *support,
                                                                     ctorch_tensor pred, ctorch_tensor target,
                                                                     int64_t num_classes, double zero_division);

/** @} */

/* ================================================================== */
/**
 * @defgroup images Images: JPEG and PNG
 *
 * Decoded with the system's libjpeg (libjpeg-turbo) and libpng, as
 * torchvision.io.decode_jpeg / decode_png do: the same pixels where
 * both use the same libraries (tests/image/image_vs_torchvision.py).
 * Hostile input is safe: truncated or corrupt data gives VALUE and a
 * message naming the library's complaint; the image's size is checked
 * from its header before any pixel memory is taken (see
 * ctorch_image_set_max_pixels); libjpeg's and libpng's errors never
 * exit the process and their warnings are not printed.
 * @{
 */

/** How to convert the decoded pixels (torchvision.io.ImageReadMode; numbered from 1 here, 0 is invalid). */
typedef enum ctorch_image_read_mode CTORCH_ENUM_BASE {
  CTORCH_IMAGE_READ_UNCHANGED = 1, /**< the file's channels (a palette PNG: its indices, one byte each) */
  CTORCH_IMAGE_READ_GRAY = 2,      /**< 1 channel (PNG colour -> gray with libpng's 0.2989/0.587/0.114) */
  CTORCH_IMAGE_READ_GRAY_ALPHA = 3, /**< 2 channels (PNG only) */
  CTORCH_IMAGE_READ_RGB = 4,       /**< 3 channels */
  CTORCH_IMAGE_READ_RGB_ALPHA = 5  /**< 4 channels (PNG only); an image without alpha gets an opaque one */
} ctorch_image_read_mode;

/**
 * Decodes a JPEG or PNG image held in memory (told apart by its first
 * bytes) into a NEW contiguous CPU tensor [C, H, W]: UINT8 for 8-bit (and
 * 1/2/4-bit, expanded) images; INT32 holding 0..65535 for 16-bit PNGs (as
 * torchvision 0.14's decode_png with 16-bit support; torchvision >= 0.19
 * gives the same values as uint16, which libtorch 1.13 lacks; divide by
 * 65535 for [0, 1], ConvertImageDtype would divide by 2^31 - 1). data
 * (borrowed, read during the call only) holds nbytes bytes. A JPEG in
 * GRAY_ALPHA or RGB_ALPHA mode is refused (NOT_IMPLEMENTED, as torchvision
 * 0.14); a CMYK JPEG decodes only UNCHANGED (4 channels; GRAY and RGB:
 * VALUE, libjpeg's "Unsupported color conversion request", as 0.14, where
 * newer torchvision converts it itself). Where torchvision 0.14 leaves
 * pixels unwritten (a palette PNG without transparency, or 1/2/4-bit
 * images, read with alpha; 1/2/4-bit palette indices; 16-bit Adam7 PNGs)
 * or writes a filler alpha of (1 << depth) - 1, ctorch gives the decoded
 * pixels and an opaque alpha.
 * Errors: NULL out or data, nbytes 0, a bad mode: INVALID_ARGUMENT; neither
 * JPEG nor PNG, truncated or corrupt data, more than 16 bits: VALUE naming
 * the library's message; an image larger than the pixel limit or whose
 * tensor exceeds ctorch_set_load_limit: OUT_OF_MEMORY before allocating.
 */
CTORCH_API ctorch_status ctorch_image_decode(ctorch_tensor *out, const void *data, size_t nbytes,
                                             ctorch_image_read_mode mode);
/**
 * ctorch_image_decode of the file at path (torchvision.io.read_image). A
 * missing or unreadable file, or one that is not a regular file: IO naming
 * the path; a file larger than ctorch_set_load_limit (when set):
 * OUT_OF_MEMORY; decoding errors as ctorch_image_decode, naming the path.
 */
CTORCH_API ctorch_status ctorch_image_read(ctorch_tensor *out, const char *path, ctorch_image_read_mode mode);
/**
 * The largest image (width x height, in pixels) the decoders accept
 * (process-wide). The default, 178,956,970, is Pillow's decompression-bomb
 * error threshold (2 x Image.MAX_IMAGE_PIXELS); 0 means no limit of its
 * own (libjpeg's 65,500 and libpng's 1,000,000 per side still hold). The
 * check is made from the header, before memory for pixels is taken;
 * libjpeg's own working memory is bounded by the same limit (a
 * progressive JPEG's coefficient buffers) and by ctorch_set_load_limit.
 * *previous (may be NULL) gets the previous limit.
 * @nullable previous
 */
CTORCH_API ctorch_status ctorch_image_set_max_pixels(uint64_t *previous, uint64_t max_pixels);

/** @} */

/* ================================================================== */
/**
 * @defgroup data Data: datasets and loaders
 *
 * Datasets, files of the usual formats (IDX, CIFAR) and loaders with worker
 * threads. Threads: a ctorch_data_loader is exclusive (CTORCH_BUSY for a
 * second thread's call); its own workers are internal.
 * @{
 */

/**
 * Reads an IDX file (plain, or gzip-compressed: told apart by its first
 * bytes, not its name) into a NEW CPU tensor of the file's shape and element
 * type (0x08 ubyte -> UINT8, 0x09 byte -> INT8, 0x0B short -> INT16,
 * 0x0C int -> INT32, 0x0D float -> FLOAT32, 0x0E double -> FLOAT64).
 * Missing/unreadable files give CTORCH_IO; corrupt, truncated or
 * inconsistent contents give CTORCH_VALUE; both name the file.
 */
CTORCH_API ctorch_status ctorch_data_idx_read(ctorch_tensor *out, const char *path);

/**
 * Reads an MNIST-style pair of IDX files: *images is a NEW UINT8 tensor
 * [N, rows, cols], *labels a NEW INT64 tensor [N]. The files must hold ubyte
 * data of 3 and 1 dimensions with the same N (else CTORCH_VALUE).
 */
CTORCH_API ctorch_status ctorch_data_mnist_read(ctorch_tensor *images, ctorch_tensor *labels, const char *images_path,
                                                const char *labels_path);

/**
 * As ctorch_data_mnist_read for the standard file names in dir:
 * "train-images-idx3-ubyte" / "train-labels-idx1-ubyte" when train, else
 * "t10k-...", each tried with ".gz" first and then without.
 */
CTORCH_API ctorch_status ctorch_data_mnist_read_dir(ctorch_tensor *images, ctorch_tensor *labels, const char *dir,
                                                    int train);

/**
 * A batch iterator over examples along dimension 0 of `data` (and of
 * `targets`, when given). It keeps its own references to both.
 *
 * Order: without shuffling, 0..N-1 (batches are views, no copy). With
 * shuffling, epoch e visits randperm(N) drawn from a fresh CPU generator
 * seeded with ctorch_data_epoch_seed(seed, e), so Python reproduces it with
 *   torch.randperm(N, generator=torch.Generator().manual_seed(epoch_seed)).
 * drop_last skips a final batch smaller than batch_size.
 */
typedef struct ctorch_data_loader_s *ctorch_data_loader;

/** The generator seed used for epoch `epoch`: (seed * 1000003 + epoch) mod 2^64. Pure arithmetic (see the loader). */
CTORCH_API ctorch_status ctorch_data_epoch_seed(uint64_t *out, uint64_t seed, uint64_t epoch);
/** NEW loader. data (and targets, may be NULL) are borrowed; their dim 0 sizes must agree; batch_size >= 1. Starts at epoch 0. */
CTORCH_API ctorch_status ctorch_data_loader_new(ctorch_data_loader *out, ctorch_tensor data, ctorch_tensor targets,
                                                int64_t batch_size, int shuffle, uint64_t seed, int drop_last);
/** Starts epoch `epoch`: reshuffles (when shuffling) and rewinds to the first batch. */
CTORCH_API ctorch_status ctorch_data_loader_start_epoch(ctorch_data_loader loader, uint64_t epoch);
/**
 * Next batch of the current epoch. *has_batch = 1 and NEW handles in *data
 * and *targets (NULL when the loader has no targets; `targets` itself may be
 * NULL then), or *has_batch = 0 and NULL handles at the end of the epoch.
 */
CTORCH_API ctorch_status ctorch_data_loader_next(int *has_batch, ctorch_tensor *data, ctorch_tensor *targets,
                                                 ctorch_data_loader loader);
/** Number of batches in one epoch. */
CTORCH_API ctorch_status ctorch_data_loader_num_batches(int64_t *out, ctorch_data_loader loader);
/** Number of examples N. */
CTORCH_API ctorch_status ctorch_data_loader_size(int64_t *out, ctorch_data_loader loader);
/**
 * Where the loader is: *epoch (of the last start_epoch) and *batch (batches
 * of that epoch already returned). Either may be NULL.
 * @nullable epoch
 * @nullable batch
 */
CTORCH_API ctorch_status ctorch_data_loader_position(uint64_t *epoch, int64_t *batch, ctorch_data_loader loader);
/** Moves to batch `batch` (0..num_batches) of epoch `epoch`: start_epoch(epoch), then skips `batch` batches without making them. */
CTORCH_API ctorch_status ctorch_data_loader_seek(ctorch_data_loader loader, uint64_t epoch, int64_t batch);
/** Frees the loader and its references. NULL-safe; returns nothing. */
CTORCH_API void ctorch_data_loader_free(ctorch_data_loader loader);

/* ---- CIFAR files, datasets, loaders with workers ------------------ */

/** Which CIFAR binary format a file holds (and, for CIFAR-100, which label is returned). Values are stable. */
typedef enum ctorch_data_cifar_kind CTORCH_ENUM_BASE {
  CTORCH_DATA_CIFAR10 = 0,          /**< records of 1 label byte (0..9) + 3072 image bytes */
  CTORCH_DATA_CIFAR100_FINE = 1,    /**< records of coarse (0..19) + fine (0..99) label bytes + 3072; fine returned */
  CTORCH_DATA_CIFAR100_COARSE = 2   /**< the same records; the coarse label returned */
} ctorch_data_cifar_kind;

/**
 * Reads a CIFAR binary file ("data_batch_1.bin", "train.bin", ...): *images
 * is a NEW UINT8 tensor [N, 3, 32, 32] (the records' CHW bytes as stored),
 * *labels a NEW INT64 tensor [N]. A file whose size is not a positive
 * multiple of the record size, or a label out of range (both labels are
 * checked for CIFAR-100), gives CTORCH_VALUE naming the file and the record;
 * a missing or unreadable file CTORCH_IO; a bad kind CTORCH_INVALID_ARGUMENT.
 */
CTORCH_API ctorch_status ctorch_data_cifar_read(ctorch_tensor *images, ctorch_tensor *labels, const char *path,
                                                ctorch_data_cifar_kind kind);

/**
 * The indices rank `rank` of `world_size` visits in epoch `epoch`, exactly
 * as torch.utils.data.DistributedSampler(dataset of dataset_len items,
 * num_replicas=world_size, rank=rank, shuffle=shuffle, seed=seed,
 * drop_last=drop_last) after set_epoch(epoch): randperm(dataset_len) from a
 * generator seeded with seed + epoch (mod 2^64) when shuffling, else
 * 0..dataset_len-1; without drop_last padded by repeating the order from its
 * start up to a multiple of world_size, with drop_last cut down to one;
 * then every world_size-th index from rank. *out is a NEW INT64 tensor.
 * dataset_len >= 0, world_size >= 1, 0 <= rank < world_size (else
 * CTORCH_INVALID_ARGUMENT).
 */
CTORCH_API ctorch_status ctorch_data_distributed_indices(ctorch_tensor *out, int64_t dataset_len, int64_t rank,
                                                         int64_t world_size, int shuffle, uint64_t seed,
                                                         uint64_t epoch, int drop_last);

/**
 * A dataset: items (data, target) by index, from tensors, files or the
 * host's callbacks. Datasets are reference counted internally: a loader made
 * over one keeps it alive, so the handle may be freed at once.
 */
typedef struct ctorch_dataset_s *ctorch_dataset;

/**
 * Callbacks of a host-defined dataset. len writes the number of items to
 * *out. get_item writes the item at `index` (0 <= index < len) as NEW
 * handles: *data_out (required) and *target_out (NULL for a dataset without
 * targets; every item must agree); both are preset to NULL and ctorch takes
 * whatever was written, whatever the status. Return CTORCH_OK, or a failure
 * status, which the loader reports for that item's batch with a message
 * naming the item index, followed by the calling thread's last error when a
 * ctorch call inside the callback failed.
 *
 * Threads: with num_workers > 0, get_item runs on the loader's worker
 * threads, several at once (distinct indices), so it and user_data must be
 * thread-safe; len runs on the thread that starts an epoch. ctorch calls
 * may be made from the callbacks (the contract's thread rules hold); the
 * last error is per thread, and handle scopes are per thread: a scope open
 * on the thread that drives the loader does not record the handles a
 * callback makes on a worker (ctorch takes those anyway).
 */
typedef ctorch_status (*ctorch_dataset_len_fn)(void *user_data, int64_t *out);
/** Callback of ctorch_dataset_from_callbacks: item index into *data_out and *target_out (NEW tensors; see above). */
typedef ctorch_status (*ctorch_dataset_get_item_fn)(void *user_data, int64_t index, ctorch_tensor *data_out,
                                                    ctorch_tensor *target_out);

/**
 * NEW dataset over examples along dimension 0 of `data` and of `targets`
 * (targets may be NULL: items without targets): item i is (data[i],
 * targets[i]). Both borrowed; the dataset keeps its own references. Their
 * dim 0 sizes must agree (else INVALID_ARGUMENT).
 * Loaders over it batch with one index_select (or a view when the order is
 * sequential) instead of stacking items.
 * @nullable targets
 */
CTORCH_API ctorch_status ctorch_dataset_from_tensors(ctorch_dataset *out, ctorch_tensor data, ctorch_tensor targets);
/**
 * NEW dataset of CIFAR files: paths[0..n_paths) (n_paths >= 1) read with
 * ctorch_data_cifar_read and concatenated in order; items are UINT8
 * [3, 32, 32] images with INT64 labels. Errors as ctorch_data_cifar_read.
 */
CTORCH_API ctorch_status ctorch_dataset_cifar(ctorch_dataset *out, const char *const *paths, size_t n_paths,
                                              ctorch_data_cifar_kind kind);
/** NEW dataset of the MNIST-style files in dir (as ctorch_data_mnist_read_dir): UINT8 [28, 28]-like images, INT64 labels. */
CTORCH_API ctorch_status ctorch_dataset_mnist_dir(ctorch_dataset *out, const char *dir, int train);
/**
 * NEW dataset whose items come from the host's callbacks (see
 * ctorch_dataset_get_item_fn for threads and errors). free_user_data (may be
 * NULL) is called once with user_data when the last reference to the
 * dataset goes (the handle and every loader over it freed), or at once if
 * this call fails after its arguments were checked.
 * @nullable user_data
 * @nullable free_user_data
 */
CTORCH_API ctorch_status ctorch_dataset_from_callbacks(ctorch_dataset *out, ctorch_dataset_len_fn len,
                                                       ctorch_dataset_get_item_fn get_item, void *user_data,
                                                       void (*free_user_data)(void *));
/** Number of items (calls the len callback of a host-defined dataset). */
CTORCH_API ctorch_status ctorch_dataset_len(int64_t *out, ctorch_dataset ds);
/** Frees the handle; loaders over the dataset keep it alive. NULL-safe; returns nothing. */
CTORCH_API void ctorch_dataset_free(ctorch_dataset ds);

/**
 * NEW loader over a dataset (borrowed; the loader keeps its own reference),
 * used with the ctorch_data_loader_* functions above. A batch stacks the
 * items of batch_size consecutive indices of the epoch's order along a new
 * dimension 0 (data and targets alike), as torch's default collate does.
 * The order is that of ctorch_data_loader_new (randperm from
 * ctorch_data_epoch_seed(seed, epoch) when shuffling), or, after
 * ctorch_data_loader_set_distributed, DistributedSampler's. It never depends
 * on the number of workers. The length of a host-defined dataset is read at
 * each epoch start. Starts at epoch 0, no workers, no pinning.
 */
CTORCH_API ctorch_status ctorch_data_loader_from_dataset(ctorch_data_loader *out, ctorch_dataset ds,
                                                         int64_t batch_size, int shuffle, uint64_t seed,
                                                         int drop_last);
/**
 * Background workers: num_workers threads (0: batches are made inside
 * ctorch_data_loader_next, on the caller's thread; at most 64) each keep up
 * to prefetch_factor batches ahead (>= 1; torch's default is 2), taken in
 * turn as torch does. ctorch_data_loader_next delivers batches in order;
 * a worker's failure is returned by the next call that reaches that batch
 * (with the message naming the item index), and the call after it goes on
 * with the following batch. Freeing the loader, starting an epoch or any
 * setter stops and joins the workers (after the items being made), never
 * waiting for the rest of the epoch. Rewinds the current epoch.
 */
CTORCH_API ctorch_status ctorch_data_loader_set_workers(ctorch_data_loader loader, int num_workers,
                                                        int prefetch_factor);
/**
 * pin_memory: batches on the CPU are copied into page-locked memory (by the
 * worker that made them) so a later non_blocking copy to CUDA can overlap.
 * Needs CUDA: without it (no CUDA build or no device) enabling fails with
 * CTORCH_NOT_IMPLEMENTED saying so, and the loader is unchanged. Disabling
 * always succeeds. Rewinds the current epoch.
 */
CTORCH_API ctorch_status ctorch_data_loader_set_pin_memory(ctorch_data_loader loader, int pin_memory);
/**
 * Visits only rank's share of each epoch, in the order of
 * ctorch_data_distributed_indices(len, rank, world_size, shuffle, seed,
 * epoch, drop_last) with the loader's shuffle and seed (so the seed is used
 * as DistributedSampler uses it: seed + epoch), drop_last being the
 * sampler's; the loader's own drop_last still applies to the last batch.
 * world_size 1 with rank 0 and shuffle off is the plain order. Rewinds the
 * current epoch.
 */
CTORCH_API ctorch_status ctorch_data_loader_set_distributed(ctorch_data_loader loader, int64_t rank,
                                                            int64_t world_size, int drop_last);

/*
 * The transform stage (torch.utils.data's Dataset transform, then default
 * collate): each item of a batch goes through the loader's transform
 * (ctorch_data_loader_set_transform) and then its callback
 * (ctorch_data_loader_set_transform_fn), and only then are the items stacked
 * into the batch. It runs per item, not per batch, as a Dataset's
 * `transform` does in torch: random transforms draw per image, and items of
 * different sizes (a callback dataset's photos) may be resized or cropped to
 * one size before they are stacked. With num_workers > 0 it runs on the
 * worker threads, never on the thread calling ctorch_data_loader_next; with
 * 0 workers, inside ctorch_data_loader_next. Without a transform and a
 * callback, batches are made as before (no per-item work).
 *
 * Float conversion (ToTensor's scaling): make the transform
 * ctorch_transform_convert_image_dtype(FLOAT32) (UINT8 -> float32 / 255), or
 * put it first in a compose before normalize.
 *
 * Random numbers: the items of batch k (0-based, in the epoch's order) of
 * epoch e draw, in item order, from a fresh CPU generator seeded with
 * ctorch_data_epoch_seed(seed, e) + 1 + k (mod 2^64; seed is the loader's),
 * so the batches never depend on the number of workers, and Python replays
 * them with torch.manual_seed(that seed) before the first item of each batch
 * (tests/loader/transform_vs_torch.py).
 */

/**
 * Sets the loader's per-item transform (NULL removes it). t is borrowed: the
 * loader keeps its own reference (transforms are reference counted), so the
 * caller may free t at once. Each item's data is one image: [C, H, W], or
 * [H, W], which is taken as [1, H, W] (a gray image, as ToTensor makes
 * one); the transform runs on it as ctorch_transform_apply runs on one
 * image of a batch, drawing from the batch's generator (see above). Targets
 * are not transformed (use the callback). A failure (an item of another
 * rank, a dtype the transform refuses: TYPE or VALUE, ...) is returned by
 * ctorch_data_loader_next for that batch with a message naming the dataset
 * item and the transform's argument. Rewinds the current epoch (and stops
 * the workers, as the other setters). Errors: a loader or t that is not a
 * live handle (INVALID_ARGUMENT naming it).
 * @nullable t
 */
CTORCH_API ctorch_status ctorch_data_loader_set_transform(ctorch_data_loader loader, ctorch_transform t);

/**
 * A per-item callback of the transform stage. data (and target, NULL for a
 * dataset without targets) are the item after the loader's transform,
 * borrowed for the call (ctorch frees them after it; do not free them).
 * Write the NEW transformed data to *data_out (required) and, to replace
 * the target (a target transform), a NEW handle to *target_out; leave
 * *target_out NULL to keep the target. Both are preset to NULL; writing the
 * borrowed handle itself back (*data_out = data) keeps it unchanged.
 * ctorch takes whatever was written, whatever the status. index is the
 * item's dataset index. Return CTORCH_OK or a failure status, which
 * ctorch_data_loader_next reports for that batch with a message naming the
 * callback and the item, followed by the worker thread's last error when a
 * ctorch call inside the callback failed. Threads: with num_workers > 0 it
 * runs on the worker threads, several at once, so it and user_data must be
 * thread-safe (as ctorch_dataset_get_item_fn). It must not call the
 * functions of the loader it runs in (a setter would wait for its own
 * worker).
 */
typedef ctorch_status (*ctorch_data_transform_fn)(void *user_data, int64_t index, ctorch_tensor data,
                                                  ctorch_tensor target, ctorch_tensor *data_out,
                                                  ctorch_tensor *target_out);

/**
 * Sets the loader's per-item callback (fn NULL removes it), run after the
 * loader's transform (ctorch_data_loader_set_transform), before the items
 * are stacked. The stacked items must agree in dtype, shape and device
 * (else TYPE or VALUE naming the item, from ctorch_data_loader_next).
 * free_user_data (may be NULL) is called once with user_data when the
 * callback is replaced or removed, or the loader freed, after any worker
 * still running it has stopped; or at once if this call fails after its
 * arguments were checked (with fn NULL, it is called at once). Errors: a
 * loader that is not a live handle (INVALID_ARGUMENT naming `loader`;
 * user_data stays the caller's). Rewinds the current epoch.
 * @nullable fn
 * @nullable user_data
 * @nullable free_user_data
 */
CTORCH_API ctorch_status ctorch_data_loader_set_transform_fn(ctorch_data_loader loader, ctorch_data_transform_fn fn,
                                                             void *user_data, void (*free_user_data)(void *));

/** @} */

/* ================================================================== */
/**
 * @defgroup io Saving and loading: DLPack, torch.save, safetensors, NumPy
 *
 * Tensors in and out of the process: DLPack (zero-copy exchange with other
 * libraries), PyTorch's torch.save format for tensors, dicts and optimizer
 * states (files, memory and streams), safetensors files and NumPy's
 * .npy/.npz (files and memory). A loader never trusts a size in the data:
 * hostile or truncated input gives a status (VALUE or IO) and a message,
 * and ctorch_set_load_limit bounds what one load may allocate. TorchScript
 * archives are in the TorchScript group.
 * @{
 */

/* ---- DLPack ------------------------------------------------------- */
/* The structs come from <dlpack/dlpack.h> (Debian libdlpack-dev 0.6, the
 * version libtorch 1.13 speaks); include it yourself to read them. Bool is
 * exchanged as {code 6, bits 8, lanes 1}, the numbering of kDLBool in
 * DLPack >= 0.8 (0.6 has no bool code). torch 1.13 rejects that code, so
 * python/ctorch.py passes bool through a uint8 view. */
struct DLManagedTensor;
struct DLManagedTensorVersioned;

/** Type code used for bool tensors (kDLBool of DLPack >= 0.8). */
#define CTORCH_DLPACK_BOOL_CODE 6

/**
 * Exports t zero-copy: *out points at t's data (storage offset applied,
 * byte_offset 0) and keeps t's memory alive. The caller owns *out and must
 * call (*out)->deleter(*out) exactly once (any thread), or hand it to a
 * consumer that does. Autograd history is not carried (the data is shared).
 * CPU and CUDA tensors only; tensors with the conjugate/negative bit set
 * are rejected (VALUE) rather than silently copied.
 */
CTORCH_API ctorch_status ctorch_to_dlpack(struct DLManagedTensor **out, ctorch_tensor t);

/**
 * Imports src zero-copy as a new tensor (same data pointer, plus
 * byte_offset). On success ctorch owns src and calls src->deleter(src)
 * exactly once, from whichever thread drops the last reference to the
 * data. On failure nothing is called and the caller still owns src.
 * src is validated first: NULL src, NULL deleter, negative ndim, NULL
 * shape with ndim > 0, negative sizes or strides, NULL data with elements
 * -> INVALID_ARGUMENT; unknown code/bits or lanes != 1 -> TYPE; a device
 * other than CPU (or CUDA when available) -> NOT_IMPLEMENTED. NULL strides
 * mean row-major contiguous.
 */
CTORCH_API ctorch_status ctorch_from_dlpack(ctorch_tensor *out, struct DLManagedTensor *src);

/**
 * The same two operations for DLManagedTensorVersioned (DLPack >= 1.0).
 * Only implemented when ctorch was built against headers that define it;
 * otherwise they return CTORCH_NOT_IMPLEMENTED (and own nothing). The
 * symbols always exist so the ABI does not depend on the build machine.
 */
CTORCH_API ctorch_status ctorch_to_dlpack_versioned(struct DLManagedTensorVersioned **out, ctorch_tensor t);
/** See ctorch_to_dlpack_versioned; ownership rules as ctorch_from_dlpack. Read-only flagged inputs are rejected (VALUE). */
CTORCH_API ctorch_status ctorch_from_dlpack_versioned(ctorch_tensor *out, struct DLManagedTensorVersioned *src);

/* ---- Checkpoints (torch.save / torch.load zip format) -------------- */
/* Files written here are read by Python's torch.load; files written by
 * Python's torch.save (zip format, the default since 1.6) of a tensor or of
 * a dict/OrderedDict of tensors (model.state_dict()) are read here. Legacy
 * non-zip files are rejected with VALUE. Tensors load onto the CPU, with
 * the requires_grad flag they were saved with. Writes are atomic: the data
 * goes to a temporary file in the same directory, is fsync'ed and renamed
 * over `path`, so a failing save leaves any previous file intact. Errors:
 * a file that cannot be opened/written -> CTORCH_IO; a truncated, corrupt
 * or unsupported file -> CTORCH_VALUE; a file holding something else than
 * asked (e.g. a dict for ctorch_load) -> CTORCH_TYPE. */

/** A loaded name -> tensor dictionary, in file order. */
typedef struct ctorch_tensor_dict_s *ctorch_tensor_dict;

/** Saves one tensor (borrowed) to path, torch.save compatible. Conjugate/negative views are saved resolved; sparse tensors are refused (NOT_IMPLEMENTED). */
CTORCH_API ctorch_status ctorch_save(const char *path, ctorch_tensor t);
/** New tensor loaded from a file holding one tensor (torch.save(tensor)). */
CTORCH_API ctorch_status ctorch_load(ctorch_tensor *out, const char *path);
/**
 * Saves n named tensors as a dict[str, Tensor] (torch.load gives a dict that
 * model.load_state_dict accepts). names and tensors are borrowed, n entries
 * each; names must be distinct and non-NULL, tensors non-NULL.
 */
CTORCH_API ctorch_status ctorch_save_dict(const char *path, const char *const *names, const ctorch_tensor *tensors,
                                          size_t n);
/** New dict loaded from a file holding a dict/OrderedDict of str -> Tensor (a state dict). Free with ctorch_tensor_dict_free. */
CTORCH_API ctorch_status ctorch_load_dict(ctorch_tensor_dict *out, const char *path);
/**
 * Memory a load may take (process-wide; 0, the default, for no limit). Every
 * loader refuses what is not a regular file (a FIFO, a device, a directory)
 * with CTORCH_IO before reading it, so none blocks on one. The torch.save
 * reader (ctorch_load, ctorch_load_dict, ctorch_optimizer_load_state_dict)
 * counts what it allocates: the tensors the file declares (at most the
 * file's size) plus at most 64 bytes per byte of its pickle and 4 MiB; a
 * file that needs more than that, or more than max_bytes in all, is refused
 * with CTORCH_OUT_OF_MEMORY before the memory is allocated. With a limit
 * set, ctorch_data_idx_read and ctorch_data_mnist_read* refuse data larger
 * than it, and ctorch_module_load (and its buffer and stream forms) and
 * ctorch_optimizer_load archives whose records add up to more than it. The
 * safetensors loaders count the tensors a file declares (shared with its
 * mapping or not) and at most 64 bytes per byte of its header plus 4 MiB.
 * *previous (may be NULL) gets the previous limit. Loads already running
 * keep the limit they started with.
 * @nullable previous
 */
CTORCH_API ctorch_status ctorch_set_load_limit(uint64_t *previous, uint64_t max_bytes);
/** Number of entries. */
CTORCH_API ctorch_status ctorch_tensor_dict_size(size_t *out, ctorch_tensor_dict d);
/** Borrowed name of entry i (INDEX if i >= size); valid while d lives. */
CTORCH_API ctorch_status ctorch_tensor_dict_key(const char **out, ctorch_tensor_dict d, size_t i);
/** New handle to the tensor of entry i (INDEX if i >= size). */
CTORCH_API ctorch_status ctorch_tensor_dict_get(ctorch_tensor *out, ctorch_tensor_dict d, size_t i);
/** New handle to the tensor named name; CTORCH_INDEX (and *out = NULL) if there is none. */
CTORCH_API ctorch_status ctorch_tensor_dict_find(ctorch_tensor *out, ctorch_tensor_dict d, const char *name);
/** Frees the dict and its references. NULL-safe; returns nothing. */
CTORCH_API void ctorch_tensor_dict_free(ctorch_tensor_dict d);
/** NEW empty dict (to build a state dict or a set of tensors to save). */
CTORCH_API ctorch_status ctorch_tensor_dict_new(ctorch_tensor_dict *out);
/** Sets name -> t (borrowed; the dict keeps a reference): replaces the entry of that name in place, else appends. */
CTORCH_API ctorch_status ctorch_tensor_dict_set(ctorch_tensor_dict d, const char *name, ctorch_tensor t);
/** Saves the dict as torch.save(OrderedDict) does (what ctorch_save_dict writes). Atomic like ctorch_save. */
CTORCH_API ctorch_status ctorch_tensor_dict_save(const char *path, ctorch_tensor_dict d);

/* ---- safetensors ---------------------------------------------------- */
/* Hugging Face's safetensors format, read and written by ctorch itself (no
 * Python, no pickle: a file holds data only). Loading memory-maps the file
 * (private, copy-on-write: writing to a loaded tensor never changes the
 * file) and each CPU tensor whose data offset is a multiple of its element
 * size shares the mapping, which lives until the last such tensor is freed;
 * the others are copied (files written by the Python package or by
 * ctorch_safetensors_save are always aligned). Do not truncate a file while
 * tensors share its mapping (reading them then raises SIGBUS, as with any
 * mapped file). Dtypes: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL C64 on every
 * libtorch; U16 U32 U64 (libtorch >= 2.3) and F8_E5M2 F8_E4M3 (2.1),
 * F8_E5M2FNUZ F8_E4M3FNUZ (2.2), F8_E8M0 (2.7): with an older libtorch a
 * file holding one is refused with NOT_IMPLEMENTED naming the dtype and the
 * version. A file is checked as the Python package checks it before any
 * tensor is made, and refused with VALUE naming the file and the tensor:
 * header length past the file or above 100,000,000 bytes; a header that is
 * not valid UTF-8, not strict JSON (nested over 128 levels, duplicate keys,
 * trailing text) or not an object of {"dtype", "shape", "data_offsets"};
 * an unknown dtype; negative or overflowing shapes; offsets that do not
 * cover the data buffer exactly, contiguously, without gap or overlap;
 * end - begin != numel * element size. The tensors the file declares count
 * against ctorch_set_load_limit (OUT_OF_MEMORY beyond it), mapped or not.
 * What is not a regular file -> IO. */

/**
 * New dict of the tensors of the safetensors file at path, in the order of
 * their data in the file, with the file's "__metadata__" (see
 * ctorch_tensor_dict_metadata_*). device: NULL = the CPU (tensors share the
 * file's mapping where they can); else each tensor is copied there. Free
 * with ctorch_tensor_dict_free.
 * @nullable device
 */
CTORCH_API ctorch_status ctorch_safetensors_load(ctorch_tensor_dict *out, const char *path,
                                                 const ctorch_device *device);
/**
 * New dict of a sharded checkpoint from its index (Hugging Face's
 * model.safetensors.index.json: {"metadata": {...}, "weight_map": {name:
 * shard file}}). Shards are resolved relative to the index's folder (an
 * absolute path or a ".." component is refused: VALUE), and each with its
 * symbolic links resolved (realpath) must lie inside the index's real
 * folder: a shard that is a link to a file elsewhere, or is reached through
 * a linked folder pointing out, is refused with VALUE naming the entry, the
 * shard and where it leads (links that stay inside are fine). Each is loaded
 * once as by ctorch_safetensors_load (the load limit applies to each
 * shard); the dict holds exactly the weight map's names, in its order (a
 * name whose shard lacks it -> VALUE), and the index's "metadata" (strings,
 * numbers and booleans as their text). device as for ctorch_safetensors_load.
 * Free with ctorch_tensor_dict_free.
 * @nullable device
 */
CTORCH_API ctorch_status ctorch_safetensors_load_sharded(ctorch_tensor_dict *out, const char *index_path,
                                                         const ctorch_device *device);
/**
 * Writes n named tensors and n_meta metadata entries (meta_keys[i] ->
 * meta_values[i]) to path as a safetensors file, byte for byte what the
 * Python package's safetensors.torch.save_file writes for the same tensors
 * and metadata (tensors ordered by dtype then name, header padded with
 * spaces to 8 bytes, contiguous little-endian data), except that metadata
 * keys are written sorted where Python writes them in its hash map's
 * order (so files with two or more metadata entries are equal as JSON, not
 * byte for byte); n_meta = 0 writes no "__metadata__". All arrays are
 * borrowed. Names and metadata keys must be distinct, non-NULL, valid
 * UTF-8; a name may not be "__metadata__"; tensors non-NULL and dense
 * (sparse -> NOT_IMPLEMENTED); a dtype the format lacks (complex128,
 * quantized, ...) -> TYPE. Tensors on another device are copied to the
 * CPU, views written contiguously. Atomic like ctorch_save.
 */
CTORCH_API ctorch_status ctorch_safetensors_save(const char *path, const char *const *names,
                                                 const ctorch_tensor *tensors, size_t n,
                                                 const char *const *meta_keys, const char *const *meta_values,
                                                 size_t n_meta);
/** Number of metadata entries of a dict (a safetensors file's "__metadata__"; 0 for a torch.save dict). */
CTORCH_API ctorch_status ctorch_tensor_dict_metadata_size(size_t *out, ctorch_tensor_dict d);
/** Borrowed key of metadata entry i (INDEX if i >= size); valid while d lives. */
CTORCH_API ctorch_status ctorch_tensor_dict_metadata_key(const char **out, ctorch_tensor_dict d, size_t i);
/** Borrowed value of metadata entry i (INDEX if i >= size); valid while d lives. */
CTORCH_API ctorch_status ctorch_tensor_dict_metadata_value(const char **out, ctorch_tensor_dict d, size_t i);
/** Borrowed value of the metadata entry named key; CTORCH_INDEX (and *out = NULL) if there is none. Valid while d lives. */
CTORCH_API ctorch_status ctorch_tensor_dict_metadata_find(const char **out, ctorch_tensor_dict d, const char *key);

/* ---- Saving and loading through memory and streams ---- */
/*
 * Every torch.save form above has a buffer form and a stream form with the
 * same bytes (one writer and one reader per format: the file form is the
 * buffer/stream form plus the file's I/O) and the same checks of hostile
 * input (a loader never trusts a size in the data; ctorch_set_load_limit
 * applies). What Python's torch.save(obj, io.BytesIO()) writes loads here and
 * the other way round.
 *
 * The *_to_buffer forms copy out as ctorch_store_get does: *out_len gets
 * the full length of the bytes and buf (the caller's, cap bytes; NULL when
 * cap is 0) the first min(length, cap) of them. A caller that does not know
 * a bound calls twice (cap 0 for the length, then a buffer of that size: the
 * bytes are the same each time); the length-only call writes nothing but
 * still computes the records' CRC-32s. An input buffer (const void *data,
 * size_t len) is borrowed for the call; data may be NULL only when len is 0.
 *
 * Streams: a write callback gets the bytes in order, in chunks, and returns
 * CTORCH_OK, or another status to stop the save (which then fails with
 * CTORCH_IO naming that status; the callback may already have been given
 * part of the bytes). A read callback fills buf with up to cap bytes, sets
 * *n_read and returns CTORCH_OK; *n_read = 0 is the end of the stream;
 * another status fails the load with CTORCH_IO. A load reads its stream to
 * the end into memory first (the zip format's directory is at the end), at
 * most ctorch_set_load_limit bytes when a limit is set (OUT_OF_MEMORY beyond
 * it). Callbacks run on the calling thread, before the function returns.
 */
/** Write callback of the stream forms: consume len bytes of data (borrowed for the call). */
typedef ctorch_status (*ctorch_write_fn)(void *user_data, const void *data, size_t len);
/** Read callback of the stream forms: up to cap bytes into buf, their count into *n_read (0 = end). */
typedef ctorch_status (*ctorch_read_fn)(void *user_data, void *buf, size_t cap, size_t *n_read);

/** ctorch_save's bytes (torch.save(tensor, BytesIO)) copied out (see above). @nullable buf */
CTORCH_API ctorch_status ctorch_save_to_buffer(size_t *out_len, void *buf, size_t cap, ctorch_tensor t);
/** New tensor from torch.save bytes holding one tensor (as ctorch_load). */
CTORCH_API ctorch_status ctorch_load_from_buffer(ctorch_tensor *out, const void *data, size_t len);
/** ctorch_tensor_dict_save's bytes (torch.save(OrderedDict)) copied out (see above). @nullable buf */
CTORCH_API ctorch_status ctorch_tensor_dict_save_to_buffer(size_t *out_len, void *buf, size_t cap, ctorch_tensor_dict d);
/** New dict from torch.save bytes holding a dict of str -> Tensor (as ctorch_load_dict). Free with ctorch_tensor_dict_free. */
CTORCH_API ctorch_status ctorch_load_dict_from_buffer(ctorch_tensor_dict *out, const void *data, size_t len);
/** ctorch_optimizer_save_state_dict's bytes copied out (see above). @nullable buf */
CTORCH_API ctorch_status ctorch_optimizer_save_state_dict_to_buffer(size_t *out_len, void *buf, size_t cap,
                                                                    ctorch_optimizer opt);
/** As ctorch_optimizer_load_state_dict, from torch.save(optimizer.state_dict()) bytes. */
CTORCH_API ctorch_status ctorch_optimizer_load_state_dict_from_buffer(ctorch_optimizer opt, const void *data, size_t len);
/** ctorch_save through a write callback. */
CTORCH_API ctorch_status ctorch_save_to_stream(ctorch_write_fn write, void *user_data, ctorch_tensor t);
/** ctorch_load through a read callback (read to its end first). */
CTORCH_API ctorch_status ctorch_load_from_stream(ctorch_tensor *out, ctorch_read_fn read, void *user_data);
/** ctorch_tensor_dict_save through a write callback. */
CTORCH_API ctorch_status ctorch_tensor_dict_save_to_stream(ctorch_write_fn write, void *user_data, ctorch_tensor_dict d);
/** ctorch_load_dict through a read callback (read to its end first). Free with ctorch_tensor_dict_free. */
CTORCH_API ctorch_status ctorch_load_dict_from_stream(ctorch_tensor_dict *out, ctorch_read_fn read, void *user_data);
/** ctorch_optimizer_save_state_dict through a write callback. */
CTORCH_API ctorch_status ctorch_optimizer_save_state_dict_to_stream(ctorch_write_fn write, void *user_data,
                                                                    ctorch_optimizer opt);
/** ctorch_optimizer_load_state_dict through a read callback (read to its end first). */
CTORCH_API ctorch_status ctorch_optimizer_load_state_dict_from_stream(ctorch_optimizer opt, ctorch_read_fn read,
                                                                      void *user_data);
/* ---- NumPy files (.npy, .npz) ---- */
/*
 * Read and written by ctorch itself, as numpy.save / numpy.savez write them
 * (format 1.0; 2.0 and 3.0 are read too). Dtypes: bool, int8/16/32/64,
 * uint8, float16/32/64, complex64/128 on every libtorch; uint16/32/64 where
 * the libtorch has them (>= 2.3; NOT_IMPLEMENTED naming the version
 * otherwise); bfloat16 and the float8 types have no NumPy dtype: refused
 * with NOT_IMPLEMENTED on save. Reading takes little- and big-endian
 * descrs ('<', '>', '|', '='), C and Fortran order (a Fortran array loads
 * as a C-contiguous tensor of the same values); writing is C order, little
 * endian, byte-identical to numpy.save. A file is checked before any tensor
 * is made and refused with VALUE naming why: a bad magic or version, a
 * header longer than the data or than 10,000 bytes (NumPy's own bound),
 * a header that is not the dict NumPy writes (parsed, never evaluated),
 * an unknown or object dtype, negative sizes or a shape whose product
 * overflows, data shorter than the shape needs. .npz archives are zip files
 * (zip/: stored or deflated, as savez and savez_compressed write them,
 * CRC-checked); each NAME.npy member is one dict entry NAME, in archive
 * order; other members are refused (VALUE); a deflated member may claim at
 * most 1,032 times the archive's size (deflate's own bound), and
 * ctorch_set_load_limit applies. Saves are atomic like ctorch_save; tensors
 * on other devices are copied to the CPU; autograd flags are not stored.
 * .npz archives are written as plain stored zips (members byte-identical to
 * numpy.save's; the zip fields, e.g. timestamps, are not Python zipfile's).
 */
/** Saves t (borrowed) as numpy.save(path, t.numpy()) writes it (the same bytes). */
CTORCH_API ctorch_status ctorch_npy_save(const char *path, ctorch_tensor t);
/** New tensor read from a .npy file. */
CTORCH_API ctorch_status ctorch_npy_load(ctorch_tensor *out, const char *path);
/** ctorch_npy_save's bytes copied out (see above). @nullable buf */
CTORCH_API ctorch_status ctorch_npy_save_to_buffer(size_t *out_len, void *buf, size_t cap, ctorch_tensor t);
/** New tensor read from .npy bytes. */
CTORCH_API ctorch_status ctorch_npy_load_from_buffer(ctorch_tensor *out, const void *data, size_t len);
/** Saves d's tensors (borrowed) as numpy.savez(path, **d) does: a stored zip of NAME.npy members, in d's order. */
CTORCH_API ctorch_status ctorch_npz_save(const char *path, ctorch_tensor_dict d);
/** New dict read from a .npz file (numpy.savez or savez_compressed). Free with ctorch_tensor_dict_free. */
CTORCH_API ctorch_status ctorch_npz_load(ctorch_tensor_dict *out, const char *path);
/** ctorch_npz_save's bytes copied out (see above). @nullable buf */
CTORCH_API ctorch_status ctorch_npz_save_to_buffer(size_t *out_len, void *buf, size_t cap, ctorch_tensor_dict d);
/** New dict read from .npz bytes. Free with ctorch_tensor_dict_free. */
CTORCH_API ctorch_status ctorch_npz_load_from_buffer(ctorch_tensor_dict *out, const void *data, size_t len);

/** @} */

/* ================================================================== */
/**
 * @defgroup nn Modules (torch.nn)
 *
 * One handle type for anything with parameters and a forward: a
 * built-in module (torch.nn's classes, same names, constructor
 * arguments, defaults, initialisation and state-dict keys), a
 * container (Sequential, ModuleList, ModuleDict) or a module whose
 * forward the host language computes (ctorch_nn_custom_new). See
 * docs/modules.md for the catalogue.
 *
 * Ownership: module handles are references to a shared module. A
 * parent keeps its own reference to each child, so a child handle
 * may be freed at once after registering it; a handle to a child
 * (ctorch_nn_module_child, ctorch_nn_module_get) keeps that child alive, not its
 * parent. Tensors returned by the accessors share storage with the
 * module (Python's semantics): writing into them changes the module.
 * Random initialisation draws from the default CPU generator in
 * torch.nn's order, so after ctorch_manual_seed(s) a module's
 * parameters equal Python's after torch.manual_seed(s) bit for bit;
 * a module built with device=cuda draws on that device's generator.
 * @{
 */

/** A module (reference counted; free with ctorch_nn_module_free). */
typedef struct ctorch_nn_module_s *ctorch_nn_module;

/**
 * NEW built-in module of class `kind` ("Linear", "Conv2d", "LSTM",
 * "Sequential", ...: the class names of torch.nn) from `args`, the
 * constructor's arguments written as in Python: positional arguments
 * first, then keyword arguments, e.g. "784, 10", "1, 6, kernel_size=5,
 * padding=2, bias=False", "8, 2, dim_feedforward=32, dropout=0.0,
 * batch_first=True", "p=0.5". Values: integers, floats (1e-5, inf, nan),
 * True/False/None, strings in quotes ('zeros'), tuples and lists ((3, 3),
 * [2, 4]), dtypes (torch.float64 or 'float64') and devices ('cuda:0').
 * args NULL or "" = no arguments. Every option not given takes PyTorch's
 * default. Errors: INVALID_ARGUMENT naming the option (unknown kind,
 * unknown or repeated option, a required option missing, a value of the
 * wrong type or out of range, text that does not parse); OUT_OF_MEMORY,
 * before anything is allocated, when the module (with the modules its text
 * builds) would hold more parameter and buffer elements than
 * ctorch_nn_set_max_parameters allows (2^31 by default) or more than 2^16
 * tensors and modules: the message names the kind and its largest size
 * argument ("LSTM num_layers=4611686018427387904 would need ...").
 * @nullable args
 */
CTORCH_API ctorch_status ctorch_nn_new(ctorch_nn_module *out, const char *kind, const char *args);
/**
 * ctorch_nn_new for the constructors that take modules (TransformerEncoder's
 * encoder_layer and norm, TransformerDecoder's decoder_layer and norm; the
 * catalogue's type "Module"). Such an argument is either written in args as
 * Python would, "torch.nn.TransformerEncoderLayer(8, 2), 2,
 * norm=torch.nn.LayerNorm(8)" (built while args is read, left to right, so
 * the random draws come in Python's order), or passed here by name:
 * modules[i] is the argument names[i], borrowed, counted as a keyword
 * argument. Each is used as Python uses the object passed: the stacks keep
 * deep copies of the layer (the caller's layer stays its own) and the norm
 * itself (the caller's handle and the new module's "norm" are one module).
 * Errors: as ctorch_nn_new, and INVALID_ARGUMENT for a name that is not a
 * module argument of kind, a name given twice, a NULL or dead module, or a
 * module of the wrong kind.
 * @nullable args names modules
 */
CTORCH_API ctorch_status ctorch_nn_new_with_modules(ctorch_nn_module *out, const char *kind, const char *args,
                                                    const char *const *names, const ctorch_nn_module *modules,
                                                    size_t n_modules);
/**
 * The most parameter and buffer elements (any dtype; 2^31 by default: 8 GiB
 * in float32) one ctorch_nn_new or ctorch_nn_new_with_modules may make,
 * counted from the arguments before anything is allocated (the layers of a
 * stack, hidden sizes, embedding rows, heads: every kind); a module over it
 * is refused with OUT_OF_MEMORY. Process-wide; 0 = no bound (the count of
 * tensors and modules stays bounded at 2^16). *previous (may be NULL) gets
 * the previous bound. Constructions already running keep the bound they
 * started with. Never fails.
 * @nullable previous
 */
CTORCH_API ctorch_status ctorch_nn_set_max_parameters(uint64_t *previous, uint64_t max_elements);
/** Drops this handle's reference. NULL-safe; returns nothing. */
CTORCH_API void ctorch_nn_module_free(ctorch_nn_module m);
/** Borrowed class name ("Linear", or a custom module's type name); valid while m lives. */
CTORCH_API ctorch_status ctorch_nn_module_kind(const char **out, ctorch_nn_module m);

/**
 * Runs forward with the module's positional inputs (NULL entries = None,
 * e.g. LSTM's missing hx) and keyword arguments written as in Python
 * (kwargs NULL or "" = none; e.g. "need_weights=False" for
 * MultiheadAttention). Up to max_outputs NEW handles go to
 * outputs[0..*n_outputs); an output that is None is NULL. A module with
 * more outputs than max_outputs fails with INVALID_ARGUMENT and returns
 * nothing. Structured values are flattened in Python's order: LSTM takes
 * (input, h_0, c_0) and returns (output, h_n, c_n); MultiheadAttention takes
 * (query, key, value, key_padding_mask, attn_mask) and returns
 * (attn_output, attn_output_weights). Inputs are borrowed. Autograd records
 * the call as Python's would. Errors: INVALID_ARGUMENT (wrong number of
 * inputs, a required input NULL, an unknown keyword), and whatever the
 * kernels raise (a shape mismatch names the module and its path).
 * @nullable kwargs
 */
CTORCH_API ctorch_status ctorch_nn_module_forward_n(ctorch_nn_module m, const ctorch_tensor *inputs, size_t n_inputs,
                                             const char *kwargs, ctorch_tensor *outputs, size_t max_outputs,
                                             size_t *n_outputs);
/** forward with one input; *out is a NEW handle to the first output (the usual case: model(x)). */
CTORCH_API ctorch_status ctorch_nn_module_forward(ctorch_tensor *out, ctorch_nn_module m, ctorch_tensor input);

/* ---- modules the host language defines ---- */

/**
 * The forward of a custom module: reads inputs[0..n_inputs) (borrowed; NULL
 * = None) and kwargs (the text given to ctorch_nn_module_forward_n, or ""), writes
 * up to max_outputs NEW handles (ownership passes to ctorch) and their count
 * to *n_outputs, and returns CTORCH_OK, or a failure status, which the
 * forward returns with a message naming the module, followed by the
 * thread's last error when a ctorch call inside the callback failed.
 */
typedef ctorch_status (*ctorch_nn_forward_fn)(void *user_data, ctorch_nn_module self, const ctorch_tensor *inputs,
                                              size_t n_inputs, const char *kwargs, ctorch_tensor *outputs,
                                              size_t max_outputs, size_t *n_outputs);
/**
 * NEW module whose forward is `forward` (NULL: a module that only holds
 * parameters and children; calling it fails with NOT_IMPLEMENTED).
 * type_name is copied (Python's class name, shown by ctorch_nn_module_repr).
 * free_user_data (may be NULL) is called once with user_data when the last
 * reference to the module goes. `self` in the callback is borrowed.
 * @nullable forward
 * @nullable user_data
 * @nullable free_user_data
 */
CTORCH_API ctorch_status ctorch_nn_custom_new(ctorch_nn_module *out, const char *type_name, ctorch_nn_forward_fn forward,
                                              void *user_data, void (*free_user_data)(void *));
/**
 * Registers a parameter under `name` (an identifier without '.'), as
 * Python's register_parameter: a parameter of that name is replaced in its
 * place; a buffer or child of that name is refused (INVALID_ARGUMENT,
 * Python's KeyError). t (borrowed; NULL = None, a placeholder
 * state_dict skips) must be a floating-point or complex leaf; the module
 * keeps t itself (shared, not copied) and sets requires_grad on it.
 * @nullable t
 */
CTORCH_API ctorch_status ctorch_nn_module_register_parameter(ctorch_nn_module m, const char *name, ctorch_tensor t);
/**
 * Registers a buffer (t borrowed, kept itself; NULL = None). persistent = 0
 * leaves it out of state_dict (Python's persistent=False). As Python's
 * register_buffer, a buffer of that name is replaced in its place (with
 * this persistent flag); a parameter or child of that name is refused
 * (INVALID_ARGUMENT).
 * @nullable t
 */
CTORCH_API ctorch_status ctorch_nn_module_register_buffer(ctorch_nn_module m, const char *name, ctorch_tensor t,
                                                   int persistent);
/**
 * Registers `child` (borrowed; m keeps a reference) under `name`. Also how
 * ModuleDict entries are added. A module cannot contain itself
 * (INVALID_ARGUMENT). Registering an existing child name replaces it.
 */
CTORCH_API ctorch_status ctorch_nn_module_register_module(ctorch_nn_module m, const char *name, ctorch_nn_module child);
/** Appends `child` to a Sequential or ModuleList under the next index ("0", "1", ...). */
CTORCH_API ctorch_status ctorch_nn_module_append(ctorch_nn_module m, ctorch_nn_module child);
/**
 * Replaces the value of an existing parameter or buffer (dotted name, e.g.
 * "0.weight") by t (borrowed, kept itself), as Python's setattr does; a
 * parameter stays a parameter (t must then be a leaf). NULL sets None.
 * @nullable t
 */
CTORCH_API ctorch_status ctorch_nn_module_set_tensor(ctorch_nn_module m, const char *name, ctorch_tensor t);

/* ---- what every module can do ---- */

/**
 * NEW dict of the parameters, recursively, with Python's dotted names
 * ("encoder.layers.0.self_attn.in_proj_weight") in named_parameters()'s
 * order (a parameter shared by two modules appears once). recurse = 0: this
 * module's own only. The tensors are the parameters themselves.
 */
CTORCH_API ctorch_status ctorch_nn_module_named_parameters(ctorch_tensor_dict *out, ctorch_nn_module m, int recurse);
/** NEW dict of the buffers (persistent or not), as ctorch_nn_module_named_parameters. */
CTORCH_API ctorch_status ctorch_nn_module_named_buffers(ctorch_tensor_dict *out, ctorch_nn_module m, int recurse);
/** NEW list of the parameters (recursive, Python's order): what ctorch_optimizer_new takes. */
CTORCH_API ctorch_status ctorch_nn_module_parameters(ctorch_tensor_list *out, ctorch_nn_module m);
/**
 * NEW dict as Python's state_dict(): parameters and persistent buffers,
 * recursively, in Python's order and with its keys, detached and sharing
 * storage with the module. Save it with ctorch_tensor_dict_save (torch.save
 * format) or ctorch_safetensors_save.
 */
CTORCH_API ctorch_status ctorch_nn_module_state_dict(ctorch_tensor_dict *out, ctorch_nn_module m);
/**
 * Copies the entries of sd (borrowed; e.g. from ctorch_load_dict or
 * ctorch_safetensors_load) into the module's parameters and buffers, as
 * Python's load_state_dict: values are copied into the existing tensors
 * (cast to their dtype and device), without recording autograd. A key
 * whose shape differs is an error in both modes. strict: a missing or
 * unexpected key is an error too. On any error nothing is changed and the
 * status is VALUE with a message listing every missing, unexpected and
 * mis-shaped key by name (shapes given). report (may be NULL) receives a
 * NEW string (free with ctorch_string_free) listing the missing and
 * unexpected keys (one per line, "missing: NAME" / "unexpected: NAME"),
 * "" when there are none; non-strict loads succeed with them.
 * @nullable report
 */
CTORCH_API ctorch_status ctorch_nn_module_load_state_dict(char **report, ctorch_nn_module m, ctorch_tensor_dict sd,
                                                   int strict);
/** Sets training mode (1) or evaluation mode (0) on m and every submodule (train()/eval()). */
CTORCH_API ctorch_status ctorch_nn_module_train(ctorch_nn_module m, int mode);
/** Whether m is in training mode. */
CTORCH_API ctorch_status ctorch_nn_module_is_training(int *out, ctorch_nn_module m);
/**
 * Moves and/or casts every parameter and buffer in place, as Python's
 * module.to(device, dtype): device NULL = keep; dtype < 0 = keep, else a
 * floating-point ctorch_dtype applied to floating-point tensors only
 * (integer buffers such as num_batches_tracked keep theirs). Parameters
 * stay the same handles' tensors only if nothing changed: take new handles
 * (ctorch_nn_module_parameters) after a move, and make optimizers after it.
 * @nullable device
 */
CTORCH_API ctorch_status ctorch_nn_module_to(ctorch_nn_module m, const ctorch_device *device, int dtype);
/** Sets requires_grad on every parameter (0 freezes the module, as requires_grad_(False)). */
CTORCH_API ctorch_status ctorch_nn_module_requires_grad(ctorch_nn_module m, int requires_grad);
/** Clears every parameter's .grad: drops it if set_to_none (PyTorch 2's default), else zeroes it. */
CTORCH_API ctorch_status ctorch_nn_module_zero_grad(ctorch_nn_module m, int set_to_none);
/** Number of parameter elements (recursive); only_trainable = 1 counts those requiring grad only. */
CTORCH_API ctorch_status ctorch_nn_module_num_parameters(int64_t *out, ctorch_nn_module m, int only_trainable);
/** NEW string equal to Python's repr(module) for the same module (free with ctorch_string_free). */
CTORCH_API ctorch_status ctorch_nn_module_repr(char **out, ctorch_nn_module m);
/**
 * NEW deep copy (copy.deepcopy): its own parameters and buffers (values and
 * requires_grad copied, no autograd history), children copied recursively,
 * a tensor shared inside m shared alike in the copy. A custom module's copy
 * shares user_data (free_user_data runs when the last of them goes).
 */
CTORCH_API ctorch_status ctorch_nn_module_clone(ctorch_nn_module *out, ctorch_nn_module m);
/** Number of direct children. */
CTORCH_API ctorch_status ctorch_nn_module_num_children(size_t *out, ctorch_nn_module m);
/** NEW handle to child i (INDEX if i >= count) and its borrowed name, valid while m lives (name may be NULL).
 * @nullable name
 */
CTORCH_API ctorch_status ctorch_nn_module_child(ctorch_nn_module *out, const char **name, ctorch_nn_module m, size_t i);
/** NEW handle to the submodule at a dotted path ("encoder.layers.0"; "" = m itself); INDEX if none. */
CTORCH_API ctorch_status ctorch_nn_module_get(ctorch_nn_module *out, ctorch_nn_module m, const char *path);
/** NEW handle to the parameter or buffer at a dotted path ("0.weight"); INDEX if none, *out NULL if it is None. */
CTORCH_API ctorch_status ctorch_nn_module_tensor(ctorch_tensor *out, ctorch_nn_module m, const char *name);
/**
 * NEW JSON text describing every built-in kind (free with
 * ctorch_string_free): for each, its constructor arguments (name, type,
 * default as Python writes it, or required), forward inputs, keyword
 * arguments and outputs. The same catalogue is in api.json ("nn_modules").
 */
CTORCH_API ctorch_status ctorch_nn_catalogue(char **out);
/**
 * Output shape of every submodule for inputs of the given shapes, without
 * running the kernels (meta tensors): NEW text, one line per module that ran
 * ("conv1: [1, 6, 28, 28]"), or VALUE naming the first module whose input
 * does not fit with both shapes. shapes[i] points to ndims[i] sizes.
 * libtorch 1.13 lacks meta kernels for some ops: NOT_IMPLEMENTED naming the op.
 */
CTORCH_API ctorch_status ctorch_nn_module_shape_check(char **out, ctorch_nn_module m, const int64_t *const *shapes,
                                               const size_t *ndims, size_t n_inputs);

/* ---- shortcuts: what a training program otherwise writes by hand ---- */

/**
 * torch.optim.X(model.parameters(), ...): NEW optimizer over every parameter
 * of m (recursive, Python's order and de-duplication: the list
 * ctorch_nn_module_parameters gives), exactly as ctorch_optimizer_new over
 * that list (the same steps, bit for bit). m is borrowed; the optimizer keeps
 * its own references to the parameters, not to m. options NULL =
 * ctorch_optim_options_default(kind). Free with ctorch_optimizer_free.
 * Errors: INVALID_ARGUMENT (NULL out or m, a dead module, a module without
 * parameters), and ctorch_optimizer_new's, whose message it quotes.
 * @nullable options
 */
CTORCH_API ctorch_status ctorch_optimizer_new_from_module(ctorch_optimizer *out, ctorch_optimizer_kind kind,
                                                          ctorch_nn_module m, const ctorch_optim_options *options);
/**
 * As ctorch_optimizer_new_from_module, with every option, as
 * ctorch_optimizer_new_v2 (options NULL = ctorch_optim_options_default_v2(kind)).
 * @nullable options
 */
CTORCH_API ctorch_status ctorch_optimizer_new_from_module_v2(ctorch_optimizer *out, ctorch_optimizer_kind kind,
                                                             ctorch_nn_module m,
                                                             const ctorch_optim_options_v2 *options);
/**
 * torch.nn.utils.clip_grad_norm_(model.parameters(), ...): ctorch_clip_grad_norm_
 * over every parameter of m (borrowed; ctorch_nn_module_parameters' list),
 * with its arguments, results and errors (bit-identical to it).
 * @nullable total_norm
 */
CTORCH_API ctorch_status ctorch_nn_module_clip_grad_norm_(double *total_norm, ctorch_nn_module m, double max_norm,
                                                          double norm_type, int error_if_nonfinite);
/** torch.nn.utils.clip_grad_value_(model.parameters(), v): ctorch_clip_grad_value_ over every parameter of m (borrowed). */
CTORCH_API ctorch_status ctorch_nn_module_clip_grad_value_(ctorch_nn_module m, double clip_value);
/**
 * ctorch_nn_new with args formatted as printf formats fmt and the values
 * after it (sizes computed at run time: "%d, %d, kernel_size=%d"). C only:
 * a binding formats the text with its own language and calls ctorch_nn_new.
 * The formatted text may be at most 65535 bytes. Errors: INVALID_ARGUMENT
 * (NULL out, kind or fmt; formatting failed; text too long, with its
 * length), and ctorch_nn_new's, whose message it quotes after the text.
 * @c_only variadic: a binding formats the text itself and calls ctorch_nn_new
 */
CTORCH_API ctorch_status ctorch_nn_newf(ctorch_nn_module *out, const char *kind, const char *fmt, ...);
/**
 * ctorch_nn_newf with the values as a va_list (for a caller's own variadic
 * function); ap is read as vsnprintf reads it (its state is then
 * indeterminate, as after vsnprintf).
 * @c_only va_list: a binding formats the text itself and calls ctorch_nn_new
 */
CTORCH_API ctorch_status ctorch_nn_newv(ctorch_nn_module *out, const char *kind, const char *fmt, va_list ap);
/**
 * Forward of the submodule at dotted path `path` of m ("head",
 * "encoder.layers.0"; "" = m itself) with one input: *out is a NEW handle
 * to its first output (ctorch_nn_module_get + ctorch_nn_module_forward in
 * one call, no child handle to free; what a custom module's forward does
 * for each child). input is borrowed. Errors: INDEX (no such submodule,
 * named in the message), and ctorch_nn_module_forward's.
 */
CTORCH_API ctorch_status ctorch_nn_module_forward_child(ctorch_tensor *out, ctorch_nn_module m, const char *path,
                                                        ctorch_tensor input);
/**
 * ctorch_nn_module_forward_n on the submodule at dotted path `path` of m
 * ("" = m itself): same inputs, kwargs, outputs and errors, and INDEX for
 * no such submodule.
 * @nullable kwargs
 */
CTORCH_API ctorch_status ctorch_nn_module_forward_child_n(ctorch_nn_module m, const char *path,
                                                          const ctorch_tensor *inputs, size_t n_inputs,
                                                          const char *kwargs, ctorch_tensor *outputs,
                                                          size_t max_outputs, size_t *n_outputs);
/**
 * ctorch_nn_module_forward_n keeping only the first output: *out is a NEW
 * handle to it (NULL if it is None), the others are dropped inside (an
 * LSTM's output without taking and freeing h_n and c_n: Python's
 * `out, _ = lstm(x, (h, c))`). Inputs as ctorch_nn_module_forward_n
 * (borrowed; NULL entries = None). Errors: as ctorch_nn_module_forward_n,
 * VALUE for a forward that returns nothing.
 * @nullable kwargs
 */
CTORCH_API ctorch_status ctorch_nn_module_forward_first(ctorch_tensor *out, ctorch_nn_module m,
                                                        const ctorch_tensor *inputs, size_t n_inputs,
                                                        const char *kwargs);

/** @} */

/* ================================================================== */
/**
 * @defgroup train_state Training checkpoints
 *
 * Saves and restores what a training run needs to resume exactly (model,
 * optimizer, scheduler, loader position, default generators, counters) in
 * one torch.save file that Python reads too, atomically; keeps the last few
 * and the best. See docs/training.md.
 * @{
 */

/** Which kept checkpoint is the best (ctorch_train_state_save_kept). */
typedef enum ctorch_best_mode CTORCH_ENUM_BASE {
  CTORCH_BEST_NONE = 0, /**< keep no best checkpoint */
  CTORCH_BEST_MIN = 1,  /**< a lower metric is better (a loss) */
  CTORCH_BEST_MAX = 2   /**< a higher metric is better (an accuracy) */
} ctorch_best_mode;

/**
 * Saves what a run needs to continue to path, as one torch.save dict laid
 * out as PyTorch users lay theirs out, which Python reads with
 * torch.load(path, weights_only=True) (2.x; torch 1.13's weights_only
 * loader reads no float, so plain torch.load there):
 *   "model"      model.state_dict() (an OrderedDict of tensors)
 *   "optimizer"  optimizer.state_dict() (SGD, Adam, AdamW: the kinds whose
 *                Python layout ctorch writes; others NOT_IMPLEMENTED)
 *   "scheduler"  scheduler.state_dict() (ctorch_lr_scheduler_save_state_dict)
 *   "epoch", "step"  the caller's counters; "metric" a float, None when NaN
 *   "loader"     {"epoch": int, "batch": int} (ctorch_data_loader_position)
 *   "rng_state"  {"cpu": torch.get_rng_state(), "cuda": [per device]}
 * The handles are borrowed; a NULL one's key is left out. Atomic: a
 * temporary file in the same directory, fsync, rename, fsync of the
 * directory; a crash at any point leaves the previous file or the new one.
 * @nullable model
 * @nullable optimizer
 * @nullable scheduler
 * @nullable loader
 */
CTORCH_API ctorch_status ctorch_train_state_save(const char *path, ctorch_nn_module model, ctorch_optimizer optimizer,
                                                 ctorch_lr_scheduler scheduler, ctorch_data_loader loader,
                                                 int64_t epoch, int64_t step, double metric);
/**
 * Restores a file written by ctorch_train_state_save into the non-NULL
 * handles (borrowed; the file must hold their keys) and the default
 * generators, and returns its epoch, step and metric (NaN for None) through
 * the out-parameters (each may be NULL). Everything is read and checked
 * before anything changes: a file that does not fit (a key missing, another
 * model, optimizer or scheduler, a loader position out of range) is
 * CTORCH_VALUE naming what, and nothing is changed. Files are data: nothing
 * in them is run.
 * @nullable epoch
 * @nullable step
 * @nullable metric
 * @nullable model
 * @nullable optimizer
 * @nullable scheduler
 * @nullable loader
 */
CTORCH_API ctorch_status ctorch_train_state_load(int64_t *epoch, int64_t *step, double *metric, const char *path,
                                                 ctorch_nn_module model, ctorch_optimizer optimizer,
                                                 ctorch_lr_scheduler scheduler, ctorch_data_loader loader);
/**
 * ctorch_train_state_save to dir/checkpoint-<step, 12 digits>.pt (dir made
 * if missing; step >= 0), then removes the older such files beyond the
 * newest keep_last (>= 1). With CTORCH_BEST_MIN or _MAX, a state whose
 * metric (not NaN) beats the one in dir/best.pt, or when there is none, is
 * also saved as dir/best.pt.
 * @nullable model
 * @nullable optimizer
 * @nullable scheduler
 * @nullable loader
 */
CTORCH_API ctorch_status ctorch_train_state_save_kept(const char *dir, int keep_last, ctorch_best_mode best,
                                                      ctorch_nn_module model, ctorch_optimizer optimizer,
                                                      ctorch_lr_scheduler scheduler, ctorch_data_loader loader,
                                                      int64_t epoch, int64_t step, double metric);
/** NEW path of the newest dir/checkpoint-*.pt (free with ctorch_string_free), or *out = NULL when there is none. */
CTORCH_API ctorch_status ctorch_train_state_latest(char **out, const char *dir);

/** @} */

/* ================================================================== */
/**
 * @defgroup train_utils Training utilities
 *
 * Training utilities: gradient checkpointing, early stopping, the
 * autograd profiler (torch.utils.checkpoint, Lightning's
 * EarlyStopping, torch.autograd.profiler). See docs/training-utils.md.
 * @{
 */

/** Flag of ctorch_nn_checkpoint: preserve_rng_state=False (the recompute draws fresh random numbers). */
#define CTORCH_CHECKPOINT_NO_RNG_STATE 1u
/**
 * Like torch.utils.checkpoint.checkpoint(m, input, use_reentrant=False):
 * *out is a NEW handle to m's first output, computed WITHOUT keeping m's
 * intermediate activations; backward runs m's forward again (with grad
 * recording on) to get them, then its backward. Gradients, of input and of
 * m's parameters, are the ones the plain forward would give (bit for bit on
 * the same kernels); they flow through the outer graph, so
 * ctorch_tensor_backward and ctorch_autograd_grad both work, as with
 * Python's use_reentrant=False (the reentrant variant is not offered).
 * Unless flags has CTORCH_CHECKPOINT_NO_RNG_STATE, the CPU generator's state
 * (and that of the CUDA devices of input) is saved before the forward and
 * restored for the recompute, so Dropout draws the same mask
 * (preserve_rng_state=True, Python's default); the generators' states after
 * backward are those before it. The autocast state in force is also used
 * for the recompute. With grad recording off (no_grad) this is m's plain
 * forward. m (borrowed; kept by the graph until backward has run or the
 * graph is freed) must not change its parameters between forward and
 * backward. Errors: INVALID_ARGUMENT (NULL or dead handles, other flag
 * bits), and whatever m's forward raises, here or during backward.
 */
CTORCH_API ctorch_status ctorch_nn_checkpoint(ctorch_tensor *out, ctorch_nn_module m, ctorch_tensor input,
                                              uint32_t flags);
/**
 * Like torch.utils.checkpoint.checkpoint_sequential(seq, segments, input,
 * use_reentrant=False): the children of seq (a Sequential, or any module
 * whose direct children run one after the other on one tensor) are split
 * into `segments` runs of len/segments children; every run but the last is
 * checkpointed as ctorch_nn_checkpoint, the last runs plainly (as
 * Python's). 1 <= segments <= number of children, else INVALID_ARGUMENT.
 * *out is a NEW handle. flags as ctorch_nn_checkpoint.
 */
CTORCH_API ctorch_status ctorch_nn_checkpoint_sequential(ctorch_tensor *out, ctorch_nn_module seq, size_t segments,
                                                         ctorch_tensor input, uint32_t flags);

/** Early stopping on a monitored value (see ctorch_early_stopping_new). */
typedef struct ctorch_early_stopping_s *ctorch_early_stopping;
/**
 * NEW early-stopping rule, Lightning's EarlyStopping(monitor, min_delta,
 * patience, mode, check_finite, stopping_threshold, divergence_threshold)
 * applied to the values given to ctorch_early_stopping_step, in double:
 * mode CTORCH_BEST_MIN (a loss) or CTORCH_BEST_MAX (an accuracy); NONE is
 * INVALID_ARGUMENT. A value improves when value - min_delta > best (MAX) or
 * value + min_delta < best (MIN) (Lightning negates min_delta in "min"
 * mode); best starts at +inf (MIN) or -inf (MAX). patience >= 0 values in
 * a row without improvement stop. check_finite (nonzero = true): a NaN or
 * infinite value stops at once. stopping_threshold (may be NULL = None):
 * stop once a value is better than it; divergence_threshold (may be NULL =
 * None): stop once a value is worse than it. model (may be NULL, borrowed,
 * kept by the handle) gets its state dict copied at every improvement
 * (Keras's restore_best_weights), for ctorch_early_stopping_restore.
 * min_delta must be finite, else INVALID_ARGUMENT.
 * @nullable stopping_threshold
 * @nullable divergence_threshold
 * @nullable model
 */
CTORCH_API ctorch_status ctorch_early_stopping_new(ctorch_early_stopping *out, ctorch_best_mode mode, int64_t patience,
                                                   double min_delta, int check_finite,
                                                   const double *stopping_threshold,
                                                   const double *divergence_threshold, ctorch_nn_module model);
/**
 * Feeds one epoch's monitored value. Outputs as 0/1: *should_stop, whether
 * training should stop now (Lightning's rule, in its order: non-finite,
 * stopping threshold, divergence threshold, improvement, then patience);
 * *improved (may be NULL), whether value became the new best (the model's
 * state was then copied). Steps after a stop are evaluated by the same rule.
 * @nullable improved
 */
CTORCH_API ctorch_status ctorch_early_stopping_step(int *should_stop, int *improved, ctorch_early_stopping es,
                                                    double value);
/**
 * The rule's state: best value so far (+-inf before any improvement), the
 * count of values since the last improvement (Lightning's wait_count), and
 * the 0-based index of the step that gave the best (-1 if none). Each
 * output may be NULL.
 * @nullable best
 * @nullable wait_count
 * @nullable best_step
 */
CTORCH_API ctorch_status ctorch_early_stopping_best(double *best, int64_t *wait_count, int64_t *best_step,
                                                    ctorch_early_stopping es);
/**
 * Copies the best state saved so far back into the model given to
 * ctorch_early_stopping_new (values bit-identical, no autograd recorded).
 * CTORCH_VALUE if no model was given or no value has improved yet.
 */
CTORCH_API ctorch_status ctorch_early_stopping_restore(ctorch_early_stopping es);
/** Frees the rule and its saved state. NULL-safe; returns nothing. */
CTORCH_API void ctorch_early_stopping_free(ctorch_early_stopping es);

/** A profiling session (see ctorch_profiler_start). */
typedef struct ctorch_profiler_s *ctorch_profiler;
/**
 * Starts recording the operators the CALLING THREAD runs (and the autograd
 * engine runs for it) until ctorch_profiler_stop, as torch.autograd.profiler
 * .profile() does on the CPU: libtorch's legacy profiler on both libtorch
 * versions (no Kineto: no CUDA kernel timeline). record_shapes (nonzero =
 * true) also records input shapes. One session per thread at a time: a
 * second start on a thread with one open is CTORCH_RUNTIME. *out is NEW.
 */
CTORCH_API ctorch_status ctorch_profiler_start(ctorch_profiler *out, int record_shapes);
/**
 * Stops recording (on the thread that started it, else CTORCH_RUNTIME);
 * the events are kept in p for export and table. Stopping twice is
 * CTORCH_RUNTIME.
 */
CTORCH_API ctorch_status ctorch_profiler_stop(ctorch_profiler p);
/**
 * Writes the stopped session's events to path as a Chrome trace (JSON
 * object {"traceEvents": [...]} of complete "X" events with microsecond
 * ts/dur, what export_chrome_trace writes; Perfetto, chrome://tracing and
 * TensorBoard open it). CTORCH_RUNTIME if p is still recording, IO if the
 * file cannot be written.
 */
CTORCH_API ctorch_status ctorch_profiler_export_chrome_trace(ctorch_profiler p, const char *path);
/**
 * NEW text (free with ctorch_string_free): the events averaged by name, as
 * key_averages().table(sort_by, row_limit): Name, Self CPU %, Self CPU,
 * CPU total %, CPU total, CPU time avg, # of Calls (and the first call's
 * Input Shapes when recorded). sort_by (may be NULL = first-seen order):
 * "cpu_time_total", "self_cpu_time_total", "cpu_time" (average) or "count",
 * descending; other text INVALID_ARGUMENT. row_limit < 0 = all rows.
 * @nullable sort_by
 */
CTORCH_API ctorch_status ctorch_profiler_table(char **out, ctorch_profiler p, const char *sort_by, int64_t row_limit);
/**
 * Frees a session. NULL-safe; returns nothing. One still recording is
 * stopped first when freed on its own thread; freed from another thread,
 * its thread's profiler stays on until that thread's next
 * ctorch_profiler_start, which switches it off.
 */
CTORCH_API void ctorch_profiler_free(ctorch_profiler p);

/** @} */

/* ================================================================== */
/**
 * @defgroup dist Distributed
 *
 * Distributed: torch.distributed (c10d) stores, process groups,
 * collectives and data-parallel helpers. See docs/distributed.md.
 *
 * Every rank must issue the same collectives in the same order (as
 * in PyTorch). Every blocking call is bounded: store calls by the
 * store's timeout, collectives by the group's timeout (or the one
 * given to ctorch_work_wait). A dead or silent peer makes the others
 * return CTORCH_RUNTIME with a message, never hang. timeout_ms <= 0
 * everywhere means "the default" stated at that function.
 * Tensors passed to collectives are BORROWED; their memory is read
 * or written in place, not recorded by autograd (as in PyTorch).
 *
 * Threads: a ctorch_process_group is exclusive (CTORCH_BUSY for a second
 * thread's call), as is one ctorch_work's wait.
 * @{
 */

/** A c10d key-value store used for rendezvous (TCPStore, FileStore or PrefixStore). */
typedef struct ctorch_store_s *ctorch_store;
/** A process group (c10d::ProcessGroup; Gloo on CPU). */
typedef struct ctorch_process_group_s *ctorch_process_group;
/** A pending asynchronous collective (c10d::Work). */
typedef struct ctorch_work_s *ctorch_work;

/** Reduction operator. AVG is computed as SUM followed by a division by the group size (Gloo has no AVG). */
typedef enum ctorch_reduce_op CTORCH_ENUM_BASE {
  CTORCH_REDUCE_SUM = 1,
  CTORCH_REDUCE_AVG = 2, /**< floating-point and complex tensors only (CTORCH_TYPE otherwise) */
  CTORCH_REDUCE_PRODUCT = 3,
  CTORCH_REDUCE_MIN = 4,
  CTORCH_REDUCE_MAX = 5
} ctorch_reduce_op;

/**
 * New TCPStore client, and server too when is_master is nonzero (torch.distributed.TCPStore).
 * port 0 is allowed for the master only: the OS picks a free port (read it with
 * ctorch_store_port). The master does not wait for workers here (the group's
 * rendezvous does); a client registers itself as Python's does, which a Python
 * master waits for, so pass the real world_size (<= 0 means unknown). Connecting retries until timeout_ms
 * (<= 0: 300 s, which is also the timeout of every later call on this store). A client first
 * checks that the server speaks the TCPStore protocol of this ctorch's libtorch generation:
 * a server of libtorch 1.x vs 2.x gives CTORCH_RUNTIME naming both versions.
 * A store on a loopback host (127.x, localhost, ::1) makes Gloo groups built on it
 * bind 127.0.0.1. Free with ctorch_store_free.
 */
CTORCH_API ctorch_status ctorch_store_tcp_new(ctorch_store *out, const char *host, int port, int world_size,
                                              int is_master, int64_t timeout_ms);
/**
 * New FileStore on `path` shared by world_size processes (torch.distributed.FileStore); timeout_ms <= 0: 300 s.
 * When the last handle on it goes (this store's, a prefix store's or a group's), the store appends this
 * process's exit to the file, as torch's does; where the file system has no room left for that, the store
 * is left undestroyed (its file stays, as a crashed rank's would) with a warning, never an abort.
 */
CTORCH_API ctorch_status ctorch_store_file_new(ctorch_store *out, const char *path, int world_size, int64_t timeout_ms);
/** New store that prefixes every key of `base` with "prefix/" (torch.distributed.PrefixStore). base stays the caller's. */
CTORCH_API ctorch_status ctorch_store_prefix_new(ctorch_store *out, ctorch_store base, const char *prefix);
/** The TCP port of a TCPStore (the one picked by the OS when created with port 0); INVALID_ARGUMENT for other stores. */
CTORCH_API ctorch_status ctorch_store_port(int *out, ctorch_store store);
/** Sets key to the `len` bytes at value (value may be NULL when len is 0). */
CTORCH_API ctorch_status ctorch_store_set(ctorch_store store, const char *key, const void *value, size_t len);
/**
 * Waits (up to the store's timeout) for key, then copies min(len, cap) bytes of its value
 * into buf and writes the full value length to *out_len. buf may be NULL when cap is 0.
 */
CTORCH_API ctorch_status ctorch_store_get(size_t *out_len, void *buf, size_t cap, ctorch_store store, const char *key);
/** Atomically adds delta to the integer stored at key (created as 0) and returns the new value in *out. */
CTORCH_API ctorch_status ctorch_store_add(int64_t *out, ctorch_store store, const char *key, int64_t delta);
/** Waits until all n keys exist; fails with CTORCH_RUNTIME after timeout_ms (<= 0: the store's timeout). */
CTORCH_API ctorch_status ctorch_store_wait(ctorch_store store, const char *const *keys, size_t n, int64_t timeout_ms);
/** Drops this handle's reference to the store (groups built on it keep theirs). NULL-safe; returns nothing. */
CTORCH_API void ctorch_store_free(ctorch_store store);

/**
 * New Gloo process group of `size` ranks; this process is `rank`. Blocks until all ranks
 * joined or timeout_ms (<= 0: 30 min, torch's default) passed; the same timeout bounds every
 * collective of the group. Wire-compatible with Python's
 * torch.distributed.init_process_group("gloo", store=S, rank=r, world_size=size) of the
 * same PyTorch version: group n (n = groups this process created before) uses that
 * version's store prefixes, store-based barrier and sequence numbers, so C and Python
 * ranks can share a group. Every rank first shows its libtorch version: a rank of another
 * version (a ctorch built against another libtorch, or a Python rank of the other 1.x/2.x
 * generation) gives CTORCH_RUNTIME naming both versions, not a hang. Gloo binds the
 * interfaces in GLOO_SOCKET_IFNAME when set, else 127.0.0.1 for a loopback TCPStore, else
 * the host's default address (as Python does). The store is borrowed (the group keeps its
 * own reference). Free with ctorch_process_group_free.
 */
CTORCH_API ctorch_status ctorch_process_group_new_gloo(ctorch_process_group *out, ctorch_store store, int rank,
                                                       int size, int64_t timeout_ms);
/**
 * New process group from the variables torchrun sets: MASTER_ADDR, MASTER_PORT, RANK,
 * WORLD_SIZE (required) and LOCAL_RANK (optional; *local_rank = -1 when unset; local_rank
 * may be NULL; below LOCAL_WORLD_SIZE when that is set). Rank 0 hosts the TCPStore, except
 * under torchrun's TORCHELASTIC_USE_AGENT_STORE=True, where its agent hosts it and every
 * rank is a client and attempt TORCHELASTIC_RESTART_COUNT=n keeps its keys under
 * "/worker/attempt_<n>" (libtorch 1.x: every attempt; 2.x: from the first restart on;
 * docs/distributed.md). backend: "gloo" or NULL (= "gloo"), or "nccl"
 * (CTORCH_NOT_IMPLEMENTED unless ctorch_dist_nccl_available says 1). Same wire protocol as
 * Python's init_process_group(backend, init_method="env://") of the same PyTorch version
 * (store prefix "default_pg/"), so a group can mix C and Python ranks; versions checked as
 * in ctorch_process_group_new_gloo and ctorch_store_tcp_new. timeout_ms as in
 * ctorch_process_group_new_gloo.
 */
CTORCH_API ctorch_status ctorch_dist_init_from_env(ctorch_process_group *out, int *local_rank, const char *backend,
                                                   int64_t timeout_ms);
/** 1 if an NCCL group can be made here (ctorch built against a libtorch with NCCL, and a CUDA device visible), else 0. */
CTORCH_API ctorch_status ctorch_dist_nccl_available(int *out);
/** This process's rank in the group. */
CTORCH_API ctorch_status ctorch_process_group_rank(int *out, ctorch_process_group pg);
/** Number of ranks in the group. */
CTORCH_API ctorch_status ctorch_process_group_size(int *out, ctorch_process_group pg);
/** Borrowed static backend name ("gloo" or "nccl"). */
CTORCH_API ctorch_status ctorch_process_group_backend(const char **out, ctorch_process_group pg);
/** libtorch's sequence number of the group: agreed at creation, +1 per collective issued. */
CTORCH_API ctorch_status ctorch_process_group_sequence_number(uint64_t *out, ctorch_process_group pg);
/**
 * Shuts the group down (waits for queued work, bounded by the group's timeout) and closes its
 * connections. The handle stays valid for ctorch_process_group_free; other calls then fail.
 */
CTORCH_API ctorch_status ctorch_process_group_destroy(ctorch_process_group pg);
/** Destroys (if not yet) and frees the handle. NULL-safe; returns nothing. */
CTORCH_API void ctorch_process_group_free(ctorch_process_group pg);

/*
 * Collectives. Each blocks until done (bounded by the group's timeout); the _async form
 * returns a NEW ctorch_work at once: results are guaranteed only after ctorch_work_wait
 * returns CTORCH_OK (it also runs the AVG division and copies back into non-contiguous
 * tensors). The work keeps its tensors alive (the caller may free its handles); their
 * contents are undefined until then.
 */

/** In place: tensor = op over all ranks' tensors. */
CTORCH_API ctorch_status ctorch_dist_all_reduce(ctorch_process_group pg, ctorch_tensor tensor, ctorch_reduce_op op);
/** ctorch_dist_all_reduce as an asynchronous call: a NEW ctorch_work at once (see Collectives above). */
CTORCH_API ctorch_status ctorch_dist_all_reduce_async(ctorch_work *out, ctorch_process_group pg, ctorch_tensor tensor,
                                                      ctorch_reduce_op op);
/** In place: every rank's tensor = root's tensor. */
CTORCH_API ctorch_status ctorch_dist_broadcast(ctorch_process_group pg, ctorch_tensor tensor, int root);
/** ctorch_dist_broadcast as an asynchronous call: a NEW ctorch_work at once (see Collectives above). */
CTORCH_API ctorch_status ctorch_dist_broadcast_async(ctorch_work *out, ctorch_process_group pg, ctorch_tensor tensor,
                                                     int root);
/** outputs[i] = rank i's input; n_outputs must be the group size; outputs are borrowed, written in place. */
CTORCH_API ctorch_status ctorch_dist_all_gather(ctorch_process_group pg, const ctorch_tensor *outputs,
                                                size_t n_outputs, ctorch_tensor input);
/** ctorch_dist_all_gather as an asynchronous call: a NEW ctorch_work at once (see Collectives above). */
CTORCH_API ctorch_status ctorch_dist_all_gather_async(ctorch_work *out, ctorch_process_group pg,
                                                      const ctorch_tensor *outputs, size_t n_outputs,
                                                      ctorch_tensor input);
/** NEW list of group-size tensors, element i = rank i's input (allocated like input). */
CTORCH_API ctorch_status ctorch_dist_all_gather_list(ctorch_tensor_list *out, ctorch_process_group pg,
                                                     ctorch_tensor input);
/** On root, outputs[i] = rank i's input (n_outputs = group size); other ranks pass n_outputs 0. */
CTORCH_API ctorch_status ctorch_dist_gather(ctorch_process_group pg, const ctorch_tensor *outputs, size_t n_outputs,
                                            ctorch_tensor input, int root);
/** ctorch_dist_gather as an asynchronous call: a NEW ctorch_work at once (see Collectives above). */
CTORCH_API ctorch_status ctorch_dist_gather_async(ctorch_work *out, ctorch_process_group pg,
                                                  const ctorch_tensor *outputs, size_t n_outputs, ctorch_tensor input,
                                                  int root);
/** output = root's inputs[rank]; root passes n_inputs = group size, other ranks 0. */
CTORCH_API ctorch_status ctorch_dist_scatter(ctorch_process_group pg, ctorch_tensor output,
                                             const ctorch_tensor *inputs, size_t n_inputs, int root);
/** ctorch_dist_scatter as an asynchronous call: a NEW ctorch_work at once (see Collectives above). */
CTORCH_API ctorch_status ctorch_dist_scatter_async(ctorch_work *out, ctorch_process_group pg, ctorch_tensor output,
                                                   const ctorch_tensor *inputs, size_t n_inputs, int root);
/** In place on root: tensor = op over all ranks' tensors. Other ranks' tensors are undefined afterwards (Gloo uses them as scratch). */
CTORCH_API ctorch_status ctorch_dist_reduce(ctorch_process_group pg, ctorch_tensor tensor, ctorch_reduce_op op,
                                            int root);
/** ctorch_dist_reduce as an asynchronous call: a NEW ctorch_work at once (see Collectives above). */
CTORCH_API ctorch_status ctorch_dist_reduce_async(ctorch_work *out, ctorch_process_group pg, ctorch_tensor tensor,
                                                  ctorch_reduce_op op, int root);
/**
 * output = op over all ranks of inputs[rank]; n_inputs = group size, all shaped like output.
 * Gloo 1.13 has no reduce_scatter: ctorch stacks the inputs, all-reduces them (one
 * collective moving group-size times the data) and keeps its slice.
 */
CTORCH_API ctorch_status ctorch_dist_reduce_scatter(ctorch_process_group pg, ctorch_tensor output,
                                                    const ctorch_tensor *inputs, size_t n_inputs,
                                                    ctorch_reduce_op op);
/** ctorch_dist_reduce_scatter as an asynchronous call: a NEW ctorch_work at once (see Collectives above). */
CTORCH_API ctorch_status ctorch_dist_reduce_scatter_async(ctorch_work *out, ctorch_process_group pg,
                                                          ctorch_tensor output, const ctorch_tensor *inputs,
                                                          size_t n_inputs, ctorch_reduce_op op);
/** Returns when every rank reached the barrier. */
CTORCH_API ctorch_status ctorch_dist_barrier(ctorch_process_group pg);
/** ctorch_dist_barrier as an asynchronous call: a NEW ctorch_work at once (see Collectives above). */
CTORCH_API ctorch_status ctorch_dist_barrier_async(ctorch_work *out, ctorch_process_group pg);
/** Sends tensor to rank dst (!= own rank) with tag >= 0; matched by a recv with the same tag. */
CTORCH_API ctorch_status ctorch_dist_send(ctorch_process_group pg, ctorch_tensor tensor, int dst, int tag);
/** ctorch_dist_send as an asynchronous call: a NEW ctorch_work at once (see Collectives above). */
CTORCH_API ctorch_status ctorch_dist_send_async(ctorch_work *out, ctorch_process_group pg, ctorch_tensor tensor,
                                                int dst, int tag);
/** Receives into tensor (shape and dtype must match the sender's) from rank src with tag. */
CTORCH_API ctorch_status ctorch_dist_recv(ctorch_process_group pg, ctorch_tensor tensor, int src, int tag);
/** ctorch_dist_recv as an asynchronous call: a NEW ctorch_work at once (see Collectives above). */
CTORCH_API ctorch_status ctorch_dist_recv_async(ctorch_work *out, ctorch_process_group pg, ctorch_tensor tensor,
                                                int src, int tag);

/**
 * Waits for the work, at most timeout_ms (<= 0: the group's timeout). CTORCH_RUNTIME with a
 * message if it failed (e.g. a peer died) or timed out; after a timeout the work is still
 * pending and may be waited for again. Waiting again after success returns CTORCH_OK.
 */
CTORCH_API ctorch_status ctorch_work_wait(ctorch_work work, int64_t timeout_ms);
/** 1 if the communication finished (successfully or not), else 0. Never blocks. */
CTORCH_API ctorch_status ctorch_work_is_completed(int *out, ctorch_work work);
/** Frees the handle; a pending operation continues in the background (its tensors are kept alive). NULL-safe; returns nothing. */
CTORCH_API void ctorch_work_free(ctorch_work work);

/*
 * Data-parallel helpers. Buckets: tensors are taken in order and packed into one flat
 * buffer while they share dtype and device and the buffer stays <= bucket_bytes (a tensor
 * larger than bucket_bytes gets a bucket of its own); bucket_bytes 0 means 25 MiB (DDP's
 * default). One collective is issued per bucket, all before waiting for any.
 */

/** In place: each tensor = its average over the group (SUM then divide); floating-point only. */
CTORCH_API ctorch_status ctorch_dist_average_tensors(ctorch_process_group pg, const ctorch_tensor *tensors, size_t n,
                                                     size_t bucket_bytes);
/**
 * Averages the .grad of each parameter over the group (call after backward, before the
 * optimizer step). A parameter without a gradient gets a zero one first, so every rank
 * issues the same collectives. params are borrowed.
 */
CTORCH_API ctorch_status ctorch_dist_average_gradients(ctorch_process_group pg, const ctorch_tensor *params, size_t n,
                                                       size_t bucket_bytes);
/** Copies root's parameter values to every rank (bucketed broadcasts, no autograd recording). */
CTORCH_API ctorch_status ctorch_dist_broadcast_parameters(ctorch_process_group pg, const ctorch_tensor *params,
                                                          size_t n, int root);

/*
 * Data-parallel training through c10d's own Reducer, as
 * torch.nn.parallel.DistributedDataParallel runs it: parameters are put in
 * buckets (one bucket for the first iteration, then rebuilt in the order
 * their gradients became ready, a first bucket of 1 MiB and the rest of
 * bucket_cap_bytes), and each bucket's all-reduce starts from the autograd
 * hooks during backward, while the rest of backward runs. When backward
 * returns, each parameter's .grad holds the group's average. The
 * collectives are Python DDP's, so Python DDP ranks of the same PyTorch
 * version can join the job (docs/distributed.md). The group must not be
 * used by other calls between a forward through the wrapper and the end of
 * its backward.
 */

/** A data-parallel wrapper (torch.nn.parallel.DistributedDataParallel). */
typedef struct ctorch_ddp_s *ctorch_ddp;

/** Flag of ctorch_ddp_new: find_unused_parameters=True, parameters the forward did not use are marked ready, not waited for. */
#define CTORCH_DDP_FIND_UNUSED_PARAMETERS 1u
/** Flag of ctorch_ddp_new: gradient_as_bucket_view=True, each .grad is a view into its bucket (no copy back). */
#define CTORCH_DDP_GRADIENT_AS_BUCKET_VIEW 2u
/** Flag of ctorch_ddp_new: broadcast_buffers=False, buffers are not copied from rank 0 before each forward. */
#define CTORCH_DDP_NO_BROADCAST_BUFFERS 4u

/**
 * NEW wrapper over m (DistributedDataParallel(m, process_group=pg, ...)):
 * checks that every rank's parameters have the same count, shapes and
 * dtypes (CTORCH_RUNTIME naming the first difference), copies rank 0's
 * parameters and buffers to every rank, and builds the Reducer over m's
 * parameters that require grad. bucket_cap_bytes: 0 for DDP's default
 * (bucket_cap_mb=25, with a first bucket of 1 MiB), else the cap of every
 * bucket (libtorch 1.x: every bucket but the first, which stays 1 MiB, as
 * its DDP does). flags: an OR of CTORCH_DDP_*. m and pg are borrowed and
 * must outlive the wrapper (a freed one gives INVALID_ARGUMENT, not a
 * crash). Collective: every rank calls it. Threads: a ctorch_ddp is
 * exclusive (CTORCH_BUSY for a second thread's call).
 */
CTORCH_API ctorch_status ctorch_ddp_new(ctorch_ddp *out, ctorch_process_group pg, ctorch_nn_module m,
                                        size_t bucket_cap_bytes, uint32_t flags);
/**
 * As ctorch_ddp_new over parameters and buffers of your own (a TorchScript
 * module's, a hand-written model's); forward then goes through
 * ctorch_ddp_pre_forward and ctorch_ddp_post_forward around your own call.
 * params (leaf tensors that require grad) and buffers (may be NULL when
 * n_buffers is 0) are borrowed; the wrapper keeps its own references.
 * bucket_cap_bytes and flags as ctorch_ddp_new.
 */
CTORCH_API ctorch_status ctorch_ddp_new_params(ctorch_ddp *out, ctorch_process_group pg, const ctorch_tensor *params,
                                               size_t n_params, const ctorch_tensor *buffers, size_t n_buffers,
                                               size_t bucket_cap_bytes, uint32_t flags);
/**
 * DDP's forward on a wrapper made by ctorch_ddp_new: ctorch_ddp_pre_forward,
 * the module's forward (ctorch_nn_module_forward), then
 * ctorch_ddp_post_forward on its output. *out is a NEW handle.
 */
CTORCH_API ctorch_status ctorch_ddp_forward(ctorch_tensor *out, ctorch_ddp ddp, ctorch_tensor input);
/**
 * What DDP does before the module's forward: rebuilds the buckets once,
 * after the first iteration, and prepares the Reducer when gradients are
 * recorded and synchronised; copies rank 0's buffers unless
 * CTORCH_DDP_NO_BROADCAST_BUFFERS. Collective.
 */
CTORCH_API ctorch_status ctorch_ddp_pre_forward(ctorch_ddp ddp);
/**
 * What DDP does after the module's forward: when gradients are recorded and
 * synchronised, arms the Reducer for the coming backward; with
 * CTORCH_DDP_FIND_UNUSED_PARAMETERS it walks the graph from outputs
 * (borrowed; n may be 0 otherwise) to find the parameters not used.
 */
CTORCH_API ctorch_status ctorch_ddp_post_forward(ctorch_ddp ddp, const ctorch_tensor *outputs, size_t n);
/**
 * 0: the next forwards' backwards only accumulate .grad locally, with no
 * communication (DDP's no_sync(), for gradient accumulation); 1 (the
 * default): the next forward's backward averages the accumulated gradients.
 */
CTORCH_API ctorch_status ctorch_ddp_set_require_sync(ctorch_ddp ddp, int sync);
/** Number of buckets the Reducer has now (1 before the rebuild after the first iteration). */
CTORCH_API ctorch_status ctorch_ddp_bucket_count(size_t *out, ctorch_ddp ddp);
/**
 * NEW 1-D int64 tensor: the indices (into the wrapper's parameters: those of
 * m that require grad, in named_parameters order, or params) of bucket i's
 * parameters, in the bucket's order. Bucket 0 is reduced first.
 */
CTORCH_API ctorch_status ctorch_ddp_bucket_indices(ctorch_tensor *out, ctorch_ddp ddp, size_t bucket);
/** Frees the wrapper (the module and group stay). NULL-safe; returns nothing. */
CTORCH_API void ctorch_ddp_free(ctorch_ddp ddp);

/** @} */

/* ================================================================== */
/**
 * @defgroup torchscript TorchScript modules and values
 *
 * TorchScript archives (torch.jit.save) loaded, run, inspected and saved,
 * from files, memory and streams, and the values (IValues) their methods
 * take and return. Loading is checked: code that would touch the system or
 * loop without bound while it loads is refused unless a flag allows it.
 * Threads: forward, forward_tensors and run_method on one module are
 * concurrent; train, eval and to_device are exclusive. Values are new
 * through out-parameters (free with ctorch_value_free), borrowed as inputs.
 * @{
 */

/** A loaded TorchScript module (torch.jit.save of a scripted or traced model). */
typedef struct ctorch_module_s *ctorch_module;
/** A TorchScript value (IValue): argument or result of a module method. */
typedef struct ctorch_value_s *ctorch_value;

/** What a ctorch_value holds. Values are stable. */
typedef enum ctorch_value_kind CTORCH_ENUM_BASE {
  CTORCH_VALUE_NONE = 0,
  CTORCH_VALUE_BOOL = 1,
  CTORCH_VALUE_INT = 2,
  CTORCH_VALUE_DOUBLE = 3,
  CTORCH_VALUE_STRING = 4,
  CTORCH_VALUE_TENSOR = 5,
  CTORCH_VALUE_LIST = 6,
  CTORCH_VALUE_TUPLE = 7,
  CTORCH_VALUE_DICT = 8,
  CTORCH_VALUE_OTHER = 9 /**< anything else (objects, devices, ...): pass-through only */
} ctorch_value_kind;

/** Frees a value. NULL-safe; returns nothing. */
CTORCH_API void ctorch_value_free(ctorch_value v);
/** New None value. */
CTORCH_API ctorch_status ctorch_value_none(ctorch_value *out);
/** New bool value (nonzero = true). */
CTORCH_API ctorch_status ctorch_value_bool(ctorch_value *out, int v);
/** New int value. */
CTORCH_API ctorch_status ctorch_value_int(ctorch_value *out, int64_t v);
/** New float (double) value. */
CTORCH_API ctorch_status ctorch_value_double(ctorch_value *out, double v);
/** New string value (s is copied; NUL-terminated UTF-8). */
CTORCH_API ctorch_status ctorch_value_string(ctorch_value *out, const char *s);
/** New tensor value holding its own reference to t (borrowed, non-NULL). */
CTORCH_API ctorch_status ctorch_value_tensor(ctorch_value *out, ctorch_tensor t);
/**
 * New list of n values (borrowed; their contents are shared, not deep
 * copied). TorchScript lists are typed: the element type is unified from
 * the items (all tensors -> List[Tensor], ints -> List[int], ...; items of
 * incompatible types -> TYPE, use a tuple). An empty list is retyped to
 * the parameter's type when passed to a method.
 */
CTORCH_API ctorch_status ctorch_value_list(ctorch_value *out, const ctorch_value *items, size_t n);
/** New tuple of n values (borrowed). */
CTORCH_API ctorch_status ctorch_value_tuple(ctorch_value *out, const ctorch_value *items, size_t n);
/** New Dict[str, V] from n keys (copied) and values (borrowed; V unified as for lists). Duplicate keys: the last wins. */
CTORCH_API ctorch_status ctorch_value_dict_str(ctorch_value *out, const char *const *keys, const ctorch_value *values,
                                               size_t n);
/** New Dict[int, V] from n keys and values (borrowed). Duplicate keys: the last wins. */
CTORCH_API ctorch_status ctorch_value_dict_int(ctorch_value *out, const int64_t *keys, const ctorch_value *values,
                                               size_t n);

/** Kind of the value. */
CTORCH_API ctorch_status ctorch_value_kind_of(ctorch_value_kind *out, ctorch_value v);
/** New tensor handle from a TENSOR value (TYPE otherwise; NULL for an undefined tensor). */
CTORCH_API ctorch_status ctorch_value_to_tensor(ctorch_tensor *out, ctorch_value v);
/** An INT (or BOOL) value's integer (TYPE otherwise). */
CTORCH_API ctorch_status ctorch_value_to_int(int64_t *out, ctorch_value v);
/** A DOUBLE or INT value as double (TYPE otherwise). */
CTORCH_API ctorch_status ctorch_value_to_double(double *out, ctorch_value v);
/** A BOOL value as 0/1 (TYPE otherwise). */
CTORCH_API ctorch_status ctorch_value_to_bool(int *out, ctorch_value v);
/** Borrowed text of a STRING value (TYPE otherwise); valid while v lives. */
CTORCH_API ctorch_status ctorch_value_to_string(const char **out, ctorch_value v);
/** Number of elements of a LIST, TUPLE or DICT value (TYPE otherwise). */
CTORCH_API ctorch_status ctorch_value_size(size_t *out, ctorch_value v);
/** New value holding element i of a LIST or TUPLE (INDEX if out of range). Lists share their elements. */
CTORCH_API ctorch_status ctorch_value_get(ctorch_value *out, ctorch_value v, size_t i);
/** New value holding the key of entry i of a DICT, in insertion order (INDEX if out of range). */
CTORCH_API ctorch_status ctorch_value_dict_key(ctorch_value *out, ctorch_value v, size_t i);
/** New value holding the value of entry i of a DICT, in insertion order (INDEX if out of range). */
CTORCH_API ctorch_status ctorch_value_dict_value(ctorch_value *out, ctorch_value v, size_t i);
/** New NUL-terminated description of the value's TorchScript type, e.g. "Dict[str, Tensor]"; free with ctorch_string_free. */
CTORCH_API ctorch_status ctorch_value_type_str(char **out, ctorch_value v);

/**
 * Loads a module saved by torch.jit.save. map_location: NULL = the devices
 * it was saved on, else every tensor is loaded onto that device. Missing
 * or unreadable file -> IO; not a TorchScript archive, or code that does
 * not compile -> VALUE. Before libtorch reads it, the archive is checked,
 * its code scanned for the class bodies libtorch's importer crashes on and
 * its pickles replayed for what libtorch's unpickler does not check (VALUE,
 * naming the record); libtorch's compiler may still crash on other crafted
 * code: load trusted files only (checkpoints, read by ctorch's own code,
 * are the format for untrusted data).
 *
 * A TorchScript archive is code, and loading it runs some (each object's
 * __setstate__). So before any of it runs, every function and method in
 * the archive is compiled (not run) and the archive is refused (VALUE,
 * naming the operator, the function and the source line) if its code calls
 * an operator that reads or writes files or talks to other processes:
 * aten::save, aten::from_file, debugprims::load_tensor, prim::rpc_async,
 * prim::rpc_sync, prim::rpc_remote, any c10d::, _c10d_functional::,
 * _c10d_functional_autograd:: or symm_mem:: operator, and any operator with
 * a string argument named as a file (filename, path, file, ...). Printing
 * (print, warnings) is allowed. Code that cannot be compiled is refused, as
 * are the model.json and flatbuffer formats, built-in classes and load-time
 * loops (see below). Same as ctorch_module_load_ex(.., 0).
 */
CTORCH_API ctorch_status ctorch_module_load(ctorch_module *out, const char *path, const ctorch_device *map_location);
/** Flag of ctorch_module_load_ex: skip the side-effect check (trusted files only). */
#define CTORCH_MODULE_LOAD_ALLOW_IO 1u
/**
 * ctorch_module_load with flags, an OR of CTORCH_MODULE_LOAD_ALLOW_IO (skips
 * every check of the code: trusted files only), _ALLOW_UNBOUNDED_LOOPS and
 * _ALLOW_CLASSES (below). Other bits -> INVALID_ARGUMENT.
 */
CTORCH_API ctorch_status ctorch_module_load_ex(ctorch_module *out, const char *path, const ctorch_device *map_location,
                                               uint32_t flags);
/*
 * ---- TorchScript loads: built-in classes and load-time loops ----
 *
 * ctorch_module_load also refuses (VALUE, naming the class, why and where)
 * an archive whose code constructs a built-in (C++) TorchScript class
 * (torch.classes.NS.NAME), calls its methods or handles a value of its type,
 * has a class attribute of its type, or whose pickles name it, unless the
 * class is on the allow-list of classes that only compute:
 * quantized.{Linear,Conv2d,Conv3d,Embedding}PackedParamsBase,
 * sparse.LinearPackedParamsBase, xnnpack.{Linear,Conv2d,TransposeConv2d}OpContext,
 * mkldnn.ConvOpContext, rnn.CellParamsBase and profiler._RecordFunction
 * (e.g. _nnapi.Compilation is refused: its init dlopens a library).
 *
 * A load returns in bounded time: code that runs during it (every
 * __setstate__, with the TorchScript it calls inlined) may only loop a
 * constant number of times (range of constants; at most 2^24 iterations,
 * nested loops together); a while loop, a loop over data or a call whose
 * target is not known before it runs there is refused (VALUE, naming the
 * function and line). PyTorch's flatbuffer files (.ff/.ptl written with
 * flatbuffers) hold bytecode, not checkable source: refused (VALUE)
 * whatever the flags. See docs/interop-models.md, "What loading a file can do".
 */
/** Flag of ctorch_module_load_ex: load code that loops without a constant bound while it loads (may never return). */
#define CTORCH_MODULE_LOAD_ALLOW_UNBOUNDED_LOOPS 2u
/** Flag of ctorch_module_load_ex: load code that uses built-in (torch.classes) classes off the allow-list. */
#define CTORCH_MODULE_LOAD_ALLOW_CLASSES 4u
/** Frees a module. NULL-safe; returns nothing. Tensors obtained from it stay valid. */
CTORCH_API void ctorch_module_free(ctorch_module m);
/** Sets training mode on (nonzero) or off, recursively, like Module.train(on). */
CTORCH_API ctorch_status ctorch_module_train(ctorch_module m, int on);
/** Same as ctorch_module_train(m, 0). */
CTORCH_API ctorch_status ctorch_module_eval(ctorch_module m);
/** 1 if the module is in training mode. */
CTORCH_API ctorch_status ctorch_module_is_training(int *out, ctorch_module m);
/** Moves every parameter and buffer to device, in place. */
CTORCH_API ctorch_status ctorch_module_to_device(ctorch_module m, ctorch_device device);
/** 1 if the module has a method called name (e.g. "forward"). */
CTORCH_API ctorch_status ctorch_module_has_method(int *out, ctorch_module m, const char *name);
/**
 * Runs forward(*args). args: nargs borrowed values (may be NULL when nargs
 * is 0). *out is a new value. Wrong number or types of arguments -> TYPE
 * or RUNTIME with TorchScript's message; errors raised inside the model
 * -> RUNTIME (or the status matching the libtorch error).
 */
CTORCH_API ctorch_status ctorch_module_forward(ctorch_value *out, ctorch_module m, const ctorch_value *args,
                                               size_t nargs);
/** Runs the method called method (INDEX if there is none); otherwise as ctorch_module_forward. */
CTORCH_API ctorch_status ctorch_module_run_method(ctorch_value *out, ctorch_module m, const char *method,
                                                  const ctorch_value *args, size_t nargs);
/** Tensor-only forward: n borrowed input tensors, *out a new tensor (TYPE if forward returns something else). */
CTORCH_API ctorch_status ctorch_module_forward_tensors(ctorch_tensor *out, ctorch_module m, const ctorch_tensor *inputs,
                                                       size_t n);
/**
 * New dict of the module's parameters named as in Python ("fc.weight"),
 * recursive. The tensors are the module's own (shared storage, autograd
 * leaves): in-place writes change the module. Free with ctorch_tensor_dict_free.
 */
CTORCH_API ctorch_status ctorch_module_named_parameters(ctorch_tensor_dict *out, ctorch_module m);
/** New dict of the module's buffers ("bn.running_mean"), recursive; shared as for parameters. */
CTORCH_API ctorch_status ctorch_module_named_buffers(ctorch_tensor_dict *out, ctorch_module m);
/** New handle to the parameter with this dotted name (INDEX if none). Shares storage with the module. */
CTORCH_API ctorch_status ctorch_module_parameter(ctorch_tensor *out, ctorch_module m, const char *name);
/** New handle to the buffer with this dotted name (INDEX if none). Shares storage with the module. */
CTORCH_API ctorch_status ctorch_module_buffer(ctorch_tensor *out, ctorch_module m, const char *name);

/*
 * TorchScript modules in memory: the bytes ctorch_module_save writes (what
 * Python's torch.jit.save(m, io.BytesIO()) writes; torch.jit.load(BytesIO)
 * reads them) and back. A load from memory makes every check
 * ctorch_module_load_ex makes of a file, with the same flags and bounds:
 * with flags 0, code that reads or writes files, talks to other processes,
 * uses built-in classes off the allow-list or loops without a constant
 * bound while it loads is refused (VALUE) before any of it runs; the
 * flatbuffer format is refused whatever the flags; ctorch_set_load_limit
 * applies to the bytes and to what the archive's records hold. Bytes that
 * are not such an archive (truncated, garbage) -> VALUE.
 */
/** ctorch_module_save's bytes (torch.jit.save(m, BytesIO)) copied out (see above); m is borrowed. @nullable buf */
CTORCH_API ctorch_status ctorch_module_save_to_buffer(size_t *out_len, void *buf, size_t cap, ctorch_module m);
/**
 * New module (free with ctorch_module_free) from torch.jit.save bytes (data,
 * len: borrowed for the call), checked as ctorch_module_load_ex checks a
 * file, flags as ctorch_module_load_ex (0: every check; pass 0 for bytes
 * from a stranger). map_location: NULL = the devices it was saved on, else
 * every tensor is loaded onto that device. Unknown flag bits ->
 * INVALID_ARGUMENT; refused or unreadable bytes -> VALUE.
 */
CTORCH_API ctorch_status ctorch_module_load_from_buffer(ctorch_module *out, const void *data, size_t len,
                                                        const ctorch_device *map_location, uint32_t flags);
/** ctorch_module_save through a write callback; m is borrowed. */
CTORCH_API ctorch_status ctorch_module_save_to_stream(ctorch_write_fn write, void *user_data, ctorch_module m);
/**
 * ctorch_module_load_from_buffer through a read callback (read to its end
 * first, at most ctorch_set_load_limit bytes), flags as
 * ctorch_module_load_ex. map_location: NULL = the saved devices. Free the
 * module with ctorch_module_free.
 */
CTORCH_API ctorch_status ctorch_module_load_from_stream(ctorch_module *out, ctorch_read_fn read, void *user_data,
                                                        const ctorch_device *map_location, uint32_t flags);

/** @} */

/* ================================================================== */
/**
 * @defgroup models Models in and out: tracing, AOTInductor, inference
 *
 * Models in and out: tracing C code into TorchScript modules, and
 * AOTInductor packages (.pt2). See docs/interop-models.md.
 *
 * Also the inference optimiser, which rewrites a module (torch.nn or
 * TorchScript) into its inference form, and the thread policy it reports.
 * Threads: an AOTInductor package runs one call at a time (load one per
 * thread to run in parallel).
 * @{
 */

/**
 * A trace: records the ops that C code runs on one thread into the forward
 * method of a new TorchScript module, as torch.jit.trace does in Python.
 *
 *   ctorch_tracer_new(&tr, "LeNet5");
 *   ctorch_tracer_add_parameter(tr, "conv1.weight", w);   (and every other one)
 *   ctorch_tracer_begin(tr, &x, 1);                        (x: an example input)
 *   ... any ctorch ops on x and the parameters, on this thread ...
 *   ctorch_tracer_finish(&module, tr, &logits, 1);
 *   ctorch_tracer_free(tr);
 *
 * The module's forward(x0, x1, ...) replays the recorded graph in one call;
 * ctorch_module_save writes it for Python's torch.jit.load. Only the ops
 * are recorded, with every other value fixed as it was during the trace:
 * sizes, numbers and flags passed from C, branches and loops taken in C on
 * tensor contents, and tensors that are neither inputs, parameters or
 * buffers nor computed from them (they become constants). See "What a trace
 * cannot capture" in docs/interop-models.md.
 *
 * Threads: between begin and finish the beginning thread is in tracing
 * mode (libtorch's tracer state is thread-local): every op it runs is
 * recorded, ops on other threads are not. Finish or abandon a trace on the
 * thread that began it. Statuses common to the trace functions: a NULL
 * handle or a call in the wrong phase (adding a parameter after begin,
 * finishing before begin, beginning twice, ...) -> INVALID_ARGUMENT naming
 * the phase; the calling thread is not the trace's, or is already tracing
 * -> RUNTIME.
 */
typedef struct ctorch_tracer_s *ctorch_tracer;

/**
 * New, empty trace. name: the module's class name (an identifier; NULL =
 * "Traced"), which Python shows as original_name. Free with ctorch_tracer_free.
 */
CTORCH_API ctorch_status ctorch_tracer_new(ctorch_tracer *out, const char *name);
/**
 * Adds a parameter before ctorch_tracer_begin. name is its state_dict name:
 * identifiers joined by dots ("fc1.weight" makes a submodule fc1), not a
 * Python keyword, self, training, forward or a __dunder__ name
 * (INVALID_ARGUMENT). The same name twice, a name that is a prefix of
 * another, or the same tensor twice -> INVALID_ARGUMENT. tensor is borrowed;
 * the trace and then the module keep their own reference to it: the
 * module's parameter IS this tensor (an optimizer over it trains the module).
 */
CTORCH_API ctorch_status ctorch_tracer_add_parameter(ctorch_tracer trace, const char *name, ctorch_tensor tensor);
/** Adds a buffer (e.g. "bn.running_mean"); as ctorch_tracer_add_parameter. */
CTORCH_API ctorch_status ctorch_tracer_add_buffer(ctorch_tracer trace, const char *name, ctorch_tensor tensor);
/**
 * Starts recording on the calling thread. inputs: n_inputs borrowed example
 * tensors (may be NULL when n_inputs is 0), the forward's arguments x0, x1,
 * ... in order; the trace keeps a reference to each until it ends. Ops must
 * then be run on these very handles (or tensors computed from them).
 * Errors: a NULL element, the same tensor twice, or an input that is also a
 * parameter or buffer -> INVALID_ARGUMENT (the tracer tells tensors apart by
 * identity: pass a clone); the thread is already tracing (this or another
 * trace, or Python's torch.jit.trace) -> RUNTIME. On failure nothing is
 * recording and the trace may be begun again.
 */
CTORCH_API ctorch_status ctorch_tracer_begin(ctorch_tracer trace, const ctorch_tensor *inputs, size_t n_inputs);
/**
 * Stops recording and returns the NEW module (free with ctorch_module_free)
 * whose forward returns outputs[0] when n_outputs is 1, else the tuple of
 * the n_outputs tensors (borrowed). Checked before anything changes, leaving
 * the trace recording: n_outputs 0 or a NULL element -> INVALID_ARGUMENT; an
 * output that no op of the trace computed and that is not an input,
 * parameter or buffer -> INVALID_ARGUMENT. An op that failed during the
 * trace (any status) stopped libtorch's tracer on this thread: finishing
 * then gives RUNTIME and the trace is abandoned (trace again). A failure
 * while building the method also abandons it. The trace is not freed.
 */
CTORCH_API ctorch_status ctorch_tracer_finish(ctorch_module *out, ctorch_tracer trace, const ctorch_tensor *outputs,
                                             size_t n_outputs);
/**
 * As ctorch_tracer_finish with a structured output (borrowed): a TENSOR value
 * or a (nested) TUPLE of them. Any other kind anywhere in it (int, list,
 * dict, ...) -> TYPE, leaving the trace recording.
 */
CTORCH_API ctorch_status ctorch_tracer_finish_value(ctorch_module *out, ctorch_tracer trace, ctorch_value output);
/**
 * Stops recording without making a module (OK in any phase; a finished trace
 * stays finished). A trace recording on another thread -> RUNTIME.
 */
CTORCH_API ctorch_status ctorch_tracer_abandon(ctorch_tracer trace);
/**
 * Frees a trace in any phase. NULL-safe; returns nothing. A trace still
 * recording is abandoned first when freed on its thread; freed on another
 * thread, its thread goes on recording (into a graph nobody reads) until it
 * next calls ctorch_tracer_begin or ctorch_tracer_active, which clear it.
 */
CTORCH_API void ctorch_tracer_free(ctorch_tracer trace);
/** 1 if the calling thread is recording a trace (a ctorch trace or Python's torch.jit.trace), else 0. */
CTORCH_API ctorch_status ctorch_tracer_active(int *out);
/**
 * Writes the module as torch.jit.save does (a zip archive that Python's
 * torch.jit.load and ctorch_module_load read), replacing path. Cannot open
 * or write the file -> IO.
 */
CTORCH_API ctorch_status ctorch_module_save(ctorch_module m, const char *path);
/**
 * New NUL-terminated text of a method's TorchScript graph (as graph.str() in
 * Python; free with ctorch_string_free): the ops a trace recorded, for one.
 * No such method -> INDEX.
 */
CTORCH_API ctorch_status ctorch_module_graph_str(char **out, ctorch_module m, const char *method);

/**
 * An AOTInductor package: a .pt2 file written by
 * torch._inductor.aoti_compile_and_package(torch.export.export(model, args)),
 * loaded with libtorch's AOTIModelPackageLoader and run from C. Needs
 * libtorch 2.6 or newer: against an older libtorch (Debian's 1.13) every
 * ctorch_aoti_* function but ctorch_aoti_available returns
 * CTORCH_NOT_IMPLEMENTED, saying so. Use a package made by the same PyTorch
 * version as the libtorch, for this machine's CPU (or a device it has).
 *
 * A package holds compiled code (a shared library the loader dlopens):
 * load trusted files only. ctorch checks each file before libtorch reads it
 * and refuses (CTORCH_VALUE) what the loader mishandles: not a zip, entries
 * whose names escape the extraction directory, corrupt contents (CRC), no or
 * several libraries for the model, a library for another machine, missing
 * metadata. Packages with C++ sources and no library (package_cpp_only)
 * would make libtorch run a compiler command read from the package:
 * refused with CTORCH_NOT_IMPLEMENTED.
 *
 * Loading sets AOTI_RUNTIME_CHECK_INPUTS=1 in the process environment unless
 * it is already set: AOTInductor then checks every run's inputs (dtype,
 * sizes, strides, device) against the export and fails the run instead of
 * reading out of bounds. Set it to 0 before the first load to skip the
 * checks at your own risk. (Like any setenv, the first load should not race
 * with other threads reading or changing the environment.)
 */
typedef struct ctorch_aoti_package_s *ctorch_aoti_package;

/** 1 if this ctorch can load AOTInductor packages (libtorch >= 2.6), else 0. Never NOT_IMPLEMENTED. */
CTORCH_API ctorch_status ctorch_aoti_available(int *out);
/**
 * Loads model model_name (NULL = "model", the default of
 * aoti_compile_and_package) from the package at path. *out is NEW: free it
 * with ctorch_aoti_package_free. Missing or unreadable file -> IO; not a
 * loadable package (see above), a model name not in the package, or a
 * library libtorch cannot load (the reason is in the message) -> VALUE;
 * a package without a compiled library -> NOT_IMPLEMENTED. A failed load
 * leaves no temporary files behind. Loads are serialised process-wide;
 * runs are not.
 */
CTORCH_API ctorch_status ctorch_aoti_package_load(ctorch_aoti_package *out, const char *path, const char *model_name);
/** Frees a loaded package (and its extracted files). NULL-safe; returns nothing. Its outputs stay valid. */
CTORCH_API void ctorch_aoti_package_free(ctorch_aoti_package package);
/**
 * Runs the model: inputs are the n_inputs borrowed tensors of the exported
 * call's flattened arguments, in order (may be NULL when n_inputs is 0);
 * *out is a NEW list of its flattened outputs (free with
 * ctorch_tensor_list_free). No autograd graph is recorded. Wrong number,
 * dtype, shape, stride or device of inputs, or a failure inside the model
 * -> RUNTIME (AOTInductor prints the detail on stderr). A NULL element ->
 * INVALID_ARGUMENT. May be called from several threads at once (runs are
 * queued on the model).
 */
CTORCH_API ctorch_status ctorch_aoti_package_run(ctorch_tensor_list *out, ctorch_aoti_package package,
                                                 const ctorch_tensor *inputs, size_t n_inputs);
/** Number of entries in the package's metadata (AOTI_DEVICE_KEY, AOTI_PLATFORM, ..., and the user's aot_inductor.metadata). */
CTORCH_API ctorch_status ctorch_aoti_package_metadata_size(size_t *out, ctorch_aoti_package package);
/** Entry i of the metadata in key order: *key and *value are borrowed, valid while package lives. i out of range -> INDEX. */
CTORCH_API ctorch_status ctorch_aoti_package_metadata_entry(const char **key, const char **value,
                                                            ctorch_aoti_package package, size_t i);
/** Borrowed value of metadata key (valid while package lives); no such key -> INDEX. */
CTORCH_API ctorch_status ctorch_aoti_package_metadata_find(const char **value, ctorch_aoti_package package,
                                                           const char *key);
/**
 * Borrowed pytree specs (JSON text, torch.utils._pytree format) of the
 * exported call's inputs and outputs, valid while package lives: how the
 * flat tensor arrays of ctorch_aoti_package_run map onto the model's
 * arguments and results.
 */
CTORCH_API ctorch_status ctorch_aoti_package_call_spec(const char **in_spec, const char **out_spec,
                                                       ctorch_aoti_package package);
/* ---- the inference optimiser and the thread policy ---- */
/* One call turns a module into its inference form; another reports the
 * thread and spin policy. See docs/modules.md, "Optimising a module for
 * inference", and docs/inference-benchmarks.md. */

/**
 * A NEW module (free with ctorch_nn_module_free) that computes what m does
 * in eval mode, rewritten for inference: BatchNorms folded into the
 * convolution or Linear before them and activations fused with it (the
 * structure and state-dict keys torch.ao.quantization.fuse_modules gives),
 * Conv2d through oneDNN with its weight prepacked, each float32 Linear by
 * its input's shape through ctorch's one-row kernels, a BLAS call split
 * across the intra-op threads or oneDNN, and the reduced precisions. m is
 * not changed: the result is a deep copy, in eval mode, its tensors not
 * requiring grad. An input a rewrite does not take (not float32, not on the
 * CPU, requiring grad) runs the plain ops, with their errors. What each
 * rewrite does, when it applies and the memory it adds: docs/modules.md,
 * "Optimising a module for inference".
 * @param out *out = the NEW module.
 * @param report NULL, or *report = a NEW string (ctorch_string_free) with
 *   one line per rewrite applied or refused: "fold_bn PATH into PATH",
 *   "fuse_relu|fuse_gelu|fuse_silu PATH into PATH (KIND)", "prepack PATH OP",
 *   "split PATH columns", "gemv PATH one-row kernel (ISA, a packed copy of
 *   the weight)", "onednn_resnet (root): N blocks, M convolutions ...",
 *   "bf16 PATH OP", "int8 PATH quantized::linear_dynamic (ENGINE engine,
 *   reduce_range=0|1)" (then "; ENGINE engine from N rows" where calls of
 *   N rows or more take a second engine), "skip LEVER PATH: why" (LEVER
 *   fold_bn, prepack, split, gemv, linear, bf16, int8-dynamic, int8-static,
 *   onednn_resnet),
 *   "note PATH: ..."; PATH "(root)" for m itself.
 * @param m the module (borrowed).
 * @param options NULL or "" for the defaults, else comma-separated
 *   key=value: fold, fuse, prepack, channels_last, linear, split_rows,
 *   linear_onednn, linear_gemv (each 0 or 1, default 1; 0 turns that
 *   rewrite off); precision=float32|bf16|int8-dynamic (default float32;
 *   int8-static needs ctorch_nn_module_optimize_for_inference_calibrated);
 *   int8_engine=auto|x86|fbgemm|onednn (default auto: libtorch's quantized
 *   engine chosen per CPU and, for int8-dynamic, per call's row count;
 *   a name pins that engine for every call);
 *   bf16_emulate=0|1 and onednn_resnet=0|1 (default 0; 1 declares that m
 *   is torchvision's ResNet, its children named and shaped as
 *   torchvision's, and its forward torchvision's).
 * @return CTORCH_OK; INVALID_ARGUMENT naming options for a key or value it
 *   does not know, and for precision=int8-static; NOT_IMPLEMENTED, saying
 *   why, for bf16 on a CPU without AVX512_BF16 or AMX_BF16 (unless
 *   bf16_emulate=1), for int8-dynamic on a libtorch without its
 *   quantized engines or ops, and for an int8_engine it lacks.
 */
CTORCH_API ctorch_status ctorch_nn_module_optimize_for_inference(ctorch_nn_module *out, char **report,
                                                                 ctorch_nn_module m, const char *options);
/**
 * ctorch_nn_module_optimize_for_inference with precision=int8-static:
 * PyTorch's eager static quantisation, calibrated on the caller's batches.
 * Each Conv2d (a ConvReLU2d pair as one) and each Linear becomes an island,
 * float32 in and out, quantized::conv2d(_relu) or quantized::linear(_relu)
 * inside with int8 weights per output channel; with onednn_resnet=1 and
 * ctorch built with oneDNN 3.x, the oneDNN ResNet plan in int8 instead. An
 * island no calibration batch reached stays float32 (reported). The recipe,
 * its equality with torch.ao.quantization's prepare/convert and the memory
 * it adds: docs/modules.md, "Optimising a module for inference".
 * @param out *out = the NEW module (free with ctorch_nn_module_free).
 * @param report NULL, or *report = a NEW string (ctorch_string_free), the
 *   lines of ctorch_nn_module_optimize_for_inference's report, with
 *   "int8 PATH OP (ENGINE engine, reduce_range=0|1)" per island (OP
 *   quantized::conv2d, conv2d_relu, linear or linear_relu).
 * @param m the module (borrowed, not changed).
 * @param options NULL or "" is refused: precision=int8-static is required
 *   (any other precision -> INVALID_ARGUMENT naming options), beside
 *   ctorch_nn_module_optimize_for_inference's other keys.
 * @param calibration n_calibration borrowed tensors: batch b's forward
 *   inputs are calibration[b * inputs_per_batch .. (b + 1) *
 *   inputs_per_batch). Choose batches like the inputs served: a range never
 *   seen is clamped.
 * @param n_calibration a positive multiple of inputs_per_batch (else
 *   INVALID_ARGUMENT naming it).
 * @param inputs_per_batch the number of inputs of one forward call.
 * @return CTORCH_OK; INVALID_ARGUMENT as above; a calibration forward's
 *   error, as that forward returned it; NOT_IMPLEMENTED, naming what is
 *   missing, on a libtorch without the quantized engines or ops.
 */
CTORCH_API ctorch_status ctorch_nn_module_optimize_for_inference_calibrated(ctorch_nn_module *out, char **report,
                                                                            ctorch_nn_module m, const char *options,
                                                                            const ctorch_tensor *calibration,
                                                                            size_t n_calibration,
                                                                            size_t inputs_per_batch);
/**
 * A NEW TorchScript module (free with ctorch_module_free): m (borrowed,
 * unchanged) cloned, set to eval, frozen (torch::jit::freeze: parameters
 * and attributes become constants, conv/linear-BatchNorm folding and the
 * other frozen-graph optimisations) and then optimised for inference
 * (torch::jit::optimize_for_inference: conv-add-relu fusion, conversion of
 * convolutions and the ops around them to oneDNN's layout with prepacked
 * weights). The result has no parameters, only forward (and the methods
 * options' "methods" names) and cannot be trained; outputs are m's in eval
 * mode up to rounding.
 * options: NULL or "" for the defaults, else comma-separated key=value:
 * mkldnn=0|1 (default 1; 0: freeze only), methods=NAME[:NAME...] (more
 * methods to keep and optimise), precision=float32 (the only one taken
 * here; bf16, int8-dynamic and int8-static -> NOT_IMPLEMENTED: module
 * trees take them). Others -> INVALID_ARGUMENT.
 * report: NULL, or *report = a NEW string (ctorch_string_free): the passes
 * run, then "OP: BEFORE -> AFTER" for each operator whose count in forward's
 * graph changed. A module whose code freezing cannot handle -> RUNTIME
 * with libtorch's message.
 */
CTORCH_API ctorch_status ctorch_module_optimize_for_inference(ctorch_module *out, char **report, ctorch_module m,
                                                              const char *options);
/**
 * *out = a NEW string (ctorch_string_free): the thread and spin policy in
 * effect, one "key=value" a line: intra_op_threads, inter_op_threads,
 * parallel_backend (libtorch's at::get_parallel_info()), and the
 * environment OpenMP read when it was loaded (OMP_WAIT_POLICY,
 * GOMP_SPINCOUNT, OMP_NUM_THREADS, MKL_NUM_THREADS; "unset" when absent),
 * and CTORCH_HEAP as ctorch read it at its own load ("keep": glibc keeps
 * freed activations for the next call; docs/modules.md, "Memory between
 * calls").
 * Whether idle OpenMP threads spin cannot be changed after libgomp is
 * loaded (it reads the environment once, before main for a program linked
 * to ctorch): set OMP_WAIT_POLICY=PASSIVE (idle threads sleep: better
 * under load) or ACTIVE in the environment that starts the process.
 */
CTORCH_API ctorch_status ctorch_thread_policy(char **out);

/** @} */

/* ================================================================== */
/**
 * @defgroup gpu GPU: CUDA devices, streams, graphs, mixed precision
 *
 * GPUs: CUDA devices, memory, streams, events, CUDA graphs, mixed
 * precision (autocast, loss scaling). See docs/gpu.md.
 *
 * Device arguments: an `int device` is a CUDA ordinal, -1 = the
 * calling thread's current CUDA device. Every CUDA call made where
 * no CUDA device is usable (a libtorch built without CUDA, or no
 * device visible) fails with CTORCH_NOT_IMPLEMENTED and a message
 * naming the device and saying which of the two it is; an ordinal
 * that does not exist, or a non-CUDA device where CUDA is required,
 * fails with CTORCH_INVALID_ARGUMENT. Nothing here crashes or
 * initialises CUDA where there is none. Generators: ctorch_generator_new
 * also accepts CUDA devices; ctorch_manual_seed seeds every CUDA
 * device's default generator, as torch.manual_seed does.
 * @{
 */

/** The calling thread's current CUDA device (torch.cuda.current_device()). */
CTORCH_API ctorch_status ctorch_cuda_current_device(int *out);
/** Sets the calling thread's current CUDA device (torch.cuda.set_device); device >= 0. */
CTORCH_API ctorch_status ctorch_cuda_set_device(int device);
/** Waits until all work queued on every stream of device (-1 = current) has finished (torch.cuda.synchronize). */
CTORCH_API ctorch_status ctorch_cuda_synchronize(int device);
/** ctorch_cuda_synchronize on every CUDA device. */
CTORCH_API ctorch_status ctorch_cuda_synchronize_all(void);

/** Properties of a CUDA device (subset of cudaDeviceProp). */
typedef struct ctorch_cuda_device_properties {
  char name[256];                /**< NUL-terminated, e.g. "NVIDIA H100 80GB HBM3" */
  uint64_t total_memory;         /**< bytes of device memory */
  int32_t major;                 /**< compute capability major (9 on an H100) */
  int32_t minor;                 /**< compute capability minor */
  int32_t multi_processor_count; /**< streaming multiprocessors */
  int32_t reserved;              /**< 0 */
} ctorch_cuda_device_properties;

/** Fills *out with the properties of device (-1 = current). */
CTORCH_API ctorch_status ctorch_cuda_get_device_properties(ctorch_cuda_device_properties *out, int device);

/** Counters of libtorch's CUDA caching allocator for one device (torch.cuda.memory_stats, "all" pools). */
typedef struct ctorch_cuda_memory_stats {
  uint64_t allocated_bytes;      /**< held by live tensors now (torch.cuda.memory_allocated) */
  uint64_t reserved_bytes;       /**< obtained from the driver and cached (torch.cuda.memory_reserved) */
  uint64_t peak_allocated_bytes; /**< max of allocated_bytes since start or the last reset */
  uint64_t peak_reserved_bytes;  /**< max of reserved_bytes since start or the last reset */
  uint64_t num_alloc_retries;    /**< cudaMalloc failures that freed the cache and retried */
  uint64_t num_ooms;             /**< out-of-memory errors raised */
} ctorch_cuda_memory_stats;

/** Reads the allocator's counters for device (-1 = current). */
CTORCH_API ctorch_status ctorch_cuda_memory_stats_get(ctorch_cuda_memory_stats *out, int device);
/** Resets the peaks of device (-1 = current) to the current values (torch.cuda.reset_peak_memory_stats). */
CTORCH_API ctorch_status ctorch_cuda_reset_peak_memory_stats(int device);
/** Returns the cached, unused blocks of every device to the driver (torch.cuda.empty_cache). Tensors stay valid. */
CTORCH_API ctorch_status ctorch_cuda_empty_cache(void);

/* ---- generators, pinned memory, asynchronous copies ---------------- */

/** NEW handle sharing device's default generator (CPU or CUDA): reseeding it changes what NULL-generator ops draw. */
CTORCH_API ctorch_status ctorch_generator_default(ctorch_generator *out, ctorch_device device);
/** The seed the generator was last seeded with (Generator.initial_seed()). */
CTORCH_API ctorch_status ctorch_generator_initial_seed(uint64_t *out, ctorch_generator g);
/** The generator's device (a CUDA generator has its ordinal). */
CTORCH_API ctorch_status ctorch_generator_device(ctorch_device *out, ctorch_generator g);

/**
 * NEW CPU tensor with t's contents in page-locked (pinned) host memory, which
 * CUDA copies read and write asynchronously (Tensor.pin_memory()). t must be
 * a CPU tensor (INVALID_ARGUMENT otherwise); needs a CUDA device.
 */
CTORCH_API ctorch_status ctorch_tensor_pin_memory(ctorch_tensor *out, ctorch_tensor t);
/** 1 if t's memory is pinned host memory (always 0 where there is no CUDA device). */
CTORCH_API ctorch_status ctorch_tensor_is_pinned(int *out, ctorch_tensor t);
/**
 * As ctorch_tensor_to_device with non_blocking=True: a copy between pinned
 * host memory and a CUDA device is queued on the current stream and the call
 * returns at once; read the result only after synchronising (or on the same
 * stream). From pageable memory the copy is synchronous, as in PyTorch.
 */
CTORCH_API ctorch_status ctorch_tensor_to_device_async(ctorch_tensor *out, ctorch_tensor t, ctorch_device device);

/* ---- streams and events ------------------------------------------- */

/** A CUDA stream (c10::Stream). Handles are values: freeing one never destroys the stream (libtorch pools them). */
typedef struct ctorch_stream_s *ctorch_stream;
/** A CUDA event (c10::Event). */
typedef struct ctorch_event_s *ctorch_event;
/** An open stream scope (see ctorch_stream_scope_enter). */
typedef struct ctorch_stream_scope_s *ctorch_stream_scope;

/** NEW handle to a stream from libtorch's pool on device (CUDA; index -1 = current); high_priority nonzero for a high-priority one. */
CTORCH_API ctorch_status ctorch_stream_new(ctorch_stream *out, ctorch_device device, int high_priority);
/** NEW handle to the calling thread's current stream on device (torch.cuda.current_stream). */
CTORCH_API ctorch_status ctorch_stream_current(ctorch_stream *out, ctorch_device device);
/** NEW handle to device's default (legacy NULL) stream (torch.cuda.default_stream). */
CTORCH_API ctorch_status ctorch_stream_default(ctorch_stream *out, ctorch_device device);
/** The stream's device. */
CTORCH_API ctorch_status ctorch_stream_device(ctorch_device *out, ctorch_stream s);
/** libtorch's id of the stream: two handles with equal device and id are the same stream. */
CTORCH_API ctorch_status ctorch_stream_id(int64_t *out, ctorch_stream s);
/** 1 if all work queued on s has finished, else 0. Never blocks. */
CTORCH_API ctorch_status ctorch_stream_query(int *out, ctorch_stream s);
/** Waits until all work queued on s has finished. */
CTORCH_API ctorch_status ctorch_stream_synchronize(ctorch_stream s);
/** Makes work queued on s from now on wait until e completes (returns at once; no-op if e was never recorded). */
CTORCH_API ctorch_status ctorch_stream_wait_event(ctorch_stream s, ctorch_event e);
/** Makes work queued on s from now on wait for all work queued on other so far (Stream.wait_stream). */
CTORCH_API ctorch_status ctorch_stream_wait_stream(ctorch_stream s, ctorch_stream other);
/** Frees the handle (not the stream). NULL-safe; returns nothing. */
CTORCH_API void ctorch_stream_free(ctorch_stream s);

/**
 * Opens a scope on the CALLING THREAD in which s is the current stream of its
 * device and its device the current device (`with torch.cuda.stream(s)`),
 * and returns a NEW scope handle. s is borrowed (the scope keeps a copy).
 * Scopes nest and follow the rules of ctorch_autograd_scope_enter/leave:
 * leaving always releases the handle, in any order (the previous device and
 * stream come back once the scopes opened after it are left too).
 */
CTORCH_API ctorch_status ctorch_stream_scope_enter(ctorch_stream_scope *out, ctorch_stream s);
/** Leaves the scope and always releases the handle (rules of ctorch_autograd_scope_leave). */
CTORCH_API ctorch_status ctorch_stream_scope_leave(ctorch_stream_scope scope);

/**
 * NEW event for device_type (CTORCH_DEVICE_CUDA). enable_timing nonzero lets
 * ctorch_event_elapsed_ms measure it (slightly costlier to record). The event
 * binds to a device when first recorded.
 */
CTORCH_API ctorch_status ctorch_event_new(ctorch_event *out, ctorch_device_type device_type, int enable_timing);
/** Records e on stream s (borrowed; NULL = the current stream of the current device). Re-recording replaces the previous record. */
CTORCH_API ctorch_status ctorch_event_record(ctorch_event e, ctorch_stream s);
/** 1 if the work recorded before e has finished (or e was never recorded), else 0. Never blocks. */
CTORCH_API ctorch_status ctorch_event_query(int *out, ctorch_event e);
/** Waits until the work recorded before e has finished. */
CTORCH_API ctorch_status ctorch_event_synchronize(ctorch_event e);
/**
 * Milliseconds between the completion of start and of end (both created with
 * enable_timing, recorded, and end finished: synchronise it first).
 * CTORCH_NOT_IMPLEMENTED with libtorch 1.x, whose device-generic events
 * cannot be timed.
 */
CTORCH_API ctorch_status ctorch_event_elapsed_ms(double *out, ctorch_event start, ctorch_event end);
/** Frees the event. NULL-safe; returns nothing. Streams already waiting on it are unaffected. */
CTORCH_API void ctorch_event_free(ctorch_event e);

/* ---- CUDA graphs --------------------------------------------------- */

/**
 * A captured CUDA graph (at::cuda::CUDAGraph, torch.cuda.CUDAGraph). Capture
 * records every kernel queued between capture_begin and capture_end, on the
 * calling thread, without running them; replay launches them all at once.
 * Caveats (as in PyTorch; docs/gpu.md): shapes, devices and every tensor the
 * captured work reads or writes are fixed at capture: feed new inputs by
 * copying into the captured input tensors, read outputs from the tensors
 * made during capture; memory allocated during capture comes from a private
 * pool that stays reserved until the graph is reset or freed; no CPU work,
 * synchronisation or host-device copy may happen during capture (they fail,
 * and the capture is abandoned); run a few warm-up iterations first, so
 * lazily created state (optimizer buffers, cuBLAS handles) exists. Random
 * ops of the default CUDA generators replay with fresh numbers.
 */
typedef struct ctorch_cuda_graph_s *ctorch_cuda_graph;

/** NEW empty graph. Free with ctorch_cuda_graph_free. */
CTORCH_API ctorch_status ctorch_cuda_graph_new(ctorch_cuda_graph *out);
/**
 * Synchronises the current device and starts capturing the calling thread's
 * work into g on a side stream (made current until capture_end). share_pool
 * (borrowed, may be NULL) is an already captured graph whose memory pool g
 * shares (to be replayed in capture order). Fails if g is capturing or
 * captured (reset it first).
 */
CTORCH_API ctorch_status ctorch_cuda_graph_capture_begin(ctorch_cuda_graph g, ctorch_cuda_graph share_pool);
/** Ends the capture begun on this thread and instantiates the graph; restores the previous stream. */
CTORCH_API ctorch_status ctorch_cuda_graph_capture_end(ctorch_cuda_graph g);
/** Launches the captured work on the current stream (returns at once). */
CTORCH_API ctorch_status ctorch_cuda_graph_replay(ctorch_cuda_graph g);
/** Drops the captured graph and its memory pool; g can capture again. */
CTORCH_API ctorch_status ctorch_cuda_graph_reset(ctorch_cuda_graph g);
/** Frees the graph (ending a capture still open). NULL-safe; returns nothing. */
CTORCH_API void ctorch_cuda_graph_free(ctorch_cuda_graph g);

/* ---- autocast (automatic mixed precision) ------------------------- */

/** An open autocast scope (see ctorch_autocast_scope_enter). */
typedef struct ctorch_autocast_scope_s *ctorch_autocast_scope;

/**
 * Opens an autocast region on the CALLING THREAD (`with torch.autocast(
 * device_type, dtype, enabled, cache_enabled)`) and returns a NEW scope
 * handle. Inside it, ops that autocast lists (matmul, linear, conv, ...)
 * on device_type's tensors run in dtype, and precision-sensitive ones in
 * float32; every generated ctorch op goes through it. device_type: CPU
 * (dtype BFLOAT16; FLOAT16 where the libtorch supports it, 2.x) or CUDA
 * (FLOAT16 or BFLOAT16; needs a CUDA device). enabled 0 opens a region with
 * autocast off (e.g. a float32 island inside an autocast region).
 * cache_enabled caches the low-precision copies of leaf weights until the
 * outermost scope closes (PyTorch's default: 1). Scopes nest, are
 * thread-local, and follow the rules of ctorch_autograd_scope_enter/leave.
 * Run backward outside the scope, as PyTorch recommends.
 */
CTORCH_API ctorch_status ctorch_autocast_scope_enter(ctorch_autocast_scope *out, ctorch_device_type device_type,
                                                     ctorch_dtype dtype, int enabled, int cache_enabled);
/** Leaves the scope and always releases the handle, restoring the state in force when it opened (rules of ctorch_autograd_scope_leave). */
CTORCH_API ctorch_status ctorch_autocast_scope_leave(ctorch_autocast_scope scope);
/** 1 if autocast is on for device_type (CPU or CUDA) on this thread. */
CTORCH_API ctorch_status ctorch_autocast_is_enabled(int *out, ctorch_device_type device_type);
/** The dtype autocast casts to on device_type on this thread (defaults: CPU BFLOAT16, CUDA FLOAT16). */
CTORCH_API ctorch_status ctorch_autocast_get_dtype(ctorch_dtype *out, ctorch_device_type device_type);

/* ---- loss scaling (torch.amp.GradScaler) -------------------------- */

/** A dynamic loss scaler with the semantics of torch.amp.GradScaler. */
typedef struct ctorch_grad_scaler_s *ctorch_grad_scaler;

/** Options of a loss scaler; fill with ctorch_grad_scaler_options_default. */
typedef struct ctorch_grad_scaler_options {
  double init_scale;       /**< first scale (65536.0) */
  double growth_factor;    /**< scale *= this after growth_interval steps without inf/NaN (2.0; > 1) */
  double backoff_factor;   /**< scale *= this after a step with inf/NaN (0.5; in (0, 1)) */
  int64_t growth_interval; /**< steps without inf/NaN before growing (2000; >= 1) */
  int enabled;             /**< 0: every call passes through (scale returns the loss, step just steps) (1) */
} ctorch_grad_scaler_options;

/** Writes GradScaler's defaults into *out. */
CTORCH_API ctorch_status ctorch_grad_scaler_options_default(ctorch_grad_scaler_options *out);
/**
 * NEW scaler whose scale and growth tracker live on device (CUDA, or CPU).
 * options NULL = the defaults. Not thread-safe: one scaler per training
 * loop. It keeps no reference to the optimizers it is given.
 */
CTORCH_API ctorch_status ctorch_grad_scaler_new(ctorch_grad_scaler *out, ctorch_device device,
                                                const ctorch_grad_scaler_options *options);
/** Frees the scaler. NULL-safe; returns nothing. */
CTORCH_API void ctorch_grad_scaler_free(ctorch_grad_scaler s);
/** NEW tensor loss * scale (differentiable: call backward on it). loss is borrowed. */
CTORCH_API ctorch_status ctorch_grad_scaler_scale(ctorch_tensor *out, ctorch_grad_scaler s, ctorch_tensor loss);
/**
 * Divides the .grad of opt's parameters by the scale in place and records
 * whether any is inf/NaN (GradScaler.unscale_). Optional before step (e.g. to
 * clip gradients); at most once per optimizer between updates
 * (CTORCH_RUNTIME otherwise). FLOAT16 gradients are refused (VALUE), as in
 * PyTorch: keep parameters in float32 and let autocast cast.
 */
CTORCH_API ctorch_status ctorch_grad_scaler_unscale(ctorch_grad_scaler s, ctorch_optimizer opt);
/**
 * As ctorch_grad_scaler_unscale for gradient tensors of your own (borrowed,
 * unscaled in place), for training loops that do not use ctorch_optimizer:
 * then read ctorch_grad_scaler_found_inf and skip your update when it is 1.
 */
CTORCH_API ctorch_status ctorch_grad_scaler_unscale_tensors(ctorch_grad_scaler s, const ctorch_tensor *grads, size_t n);
/**
 * Unscales opt's gradients (unless done since the last update), then runs
 * ctorch_optimizer_step unless a gradient was inf/NaN (GradScaler.step).
 * *stepped (may be NULL) = 1 if the step ran, 0 if skipped. Once per
 * optimizer between updates. Reads found_inf from the device (a sync).
 */
CTORCH_API ctorch_status ctorch_grad_scaler_step(int *stepped, ctorch_grad_scaler s, ctorch_optimizer opt);
/**
 * Ends the iteration (GradScaler.update): with new_scale NULL, the scale is
 * multiplied by backoff_factor if any unscale since the last update found
 * inf/NaN (and the growth tracker reset), else the tracker counts one more
 * good step and the scale grows by growth_factor every growth_interval of
 * them (unless that overflows float32). With new_scale, the scale is set to
 * *new_scale. Needs an unscale or step since the last update (RUNTIME).
 */
CTORCH_API ctorch_status ctorch_grad_scaler_update(ctorch_grad_scaler s, const double *new_scale);
/** The current scale (reads the device: a sync). 1.0 when disabled. */
CTORCH_API ctorch_status ctorch_grad_scaler_get_scale(double *out, ctorch_grad_scaler s);
/** Good steps counted towards the next growth (0 after growth or backoff). */
CTORCH_API ctorch_status ctorch_grad_scaler_get_growth_tracker(int64_t *out, ctorch_grad_scaler s);
/** 1 if an unscale since the last update found an inf/NaN gradient, else 0 (reads the device). */
CTORCH_API ctorch_status ctorch_grad_scaler_found_inf(int *out, ctorch_grad_scaler s);
/** Number of optimizer steps ctorch_grad_scaler_step skipped since the scaler was made. */
CTORCH_API ctorch_status ctorch_grad_scaler_skipped_steps(int64_t *out, ctorch_grad_scaler s);

/* ---- NCCL ---------------------------------------------------------- */

/**
 * New NCCL process group (CUDA tensors only), otherwise as
 * ctorch_process_group_new_gloo: same store protocol as Python's
 * init_process_group("nccl", store=S, rank=r, world_size=size), so C and
 * Python ranks can share a group. Each rank must have made its CUDA device
 * current (ctorch_cuda_set_device) before. CTORCH_NOT_IMPLEMENTED unless
 * ctorch_dist_nccl_available says 1. Free with ctorch_process_group_free.
 */
CTORCH_API ctorch_status ctorch_process_group_new_nccl(ctorch_process_group *out, ctorch_store store, int rank,
                                                       int size, int64_t timeout_ms);

/** @} */

/* ================================================================== */
/**
 * @defgroup bindings For language bindings
 *
 * For language bindings: errors across threads, native memory, the
 * API's identity, and enums for schema ints. See docs/api-json.md;
 * api.json (installed beside ops.json) describes this whole header.
 *
 * Doc-comment tags read by the api.json generator where the rules of
 * the contract (outs new, inputs borrowed) do not say it all:
 * `@nullable p` (p may be NULL), `@borrowed p` (output p is not to be
 * freed), `@consumes p` (ctorch owns p after success), `@frees p`.
 * @{
 */

/**
 * Failure ids. Every failing call gets a process-unique id (increasing from
 * 1) and its message is also kept, with its status, in a process-wide log of
 * the last 1024 failures and with the failing thread's own last 32 (while
 * that thread lives), readable from any thread: a failure stays readable
 * until its own thread has failed 32 more times, however often other
 * threads fail. This is what a binding
 * whose FFI runs calls on worker threads (koffi's async calls, a Go
 * goroutine that may change OS threads) uses: the thread-local
 * ctorch_last_error() of a pool thread is out of its reach.
 * Returns this thread's last failure id (0 if none), not a status.
 */
CTORCH_API uint64_t ctorch_last_error_id(void);
/**
 * Copies this thread's last message into buf (NUL-terminated, truncated to
 * cap - 1 bytes; buf may be NULL when cap is 0) and its full length (without
 * the NUL) into *out_len (may be NULL). The caller owns the copy.
 * @nullable out_len, buf
 */
CTORCH_API ctorch_status ctorch_last_error_copy(size_t *out_len, char *buf, size_t cap);
/**
 * Message and status of failure `id`, from any thread: a failure id
 * (ctorch_last_error_id) or a ticket (CTORCH_STATUS_TICKET of a status).
 * Copies as ctorch_last_error_copy; *status (may be NULL) gets its status.
 * CTORCH_INDEX when the failure is no longer in the log (or never was).
 * The log keeps the last 1,024 failures and each live thread's last 32,
 * each message cut to its first 4,096 bytes (so at most 4 MiB of text, and
 * 128 KiB per thread, whatever the messages).
 * @nullable status, out_len, buf
 */
CTORCH_API ctorch_status ctorch_error_message(ctorch_status *status, size_t *out_len, char *buf, size_t cap,
                                              uint64_t id);
/**
 * Error tickets (off by default; process-wide). When on, a failing call
 * returns its status in the low 8 bits and a ticket (1..0x7FFFFF) above
 * them, so a binding that only gets the return value of a call made on
 * another thread can fetch that call's message: ctorch_error_message(...,
 * CTORCH_STATUS_TICKET(st)). Compare CTORCH_STATUS_CODE(st) to the status
 * names then. Only a binding that owns the process's use of ctorch should
 * turn them on. *previous (may be NULL) gets the previous setting.
 * @nullable previous
 */
CTORCH_API ctorch_status ctorch_set_error_tickets(int *previous, int on);
/** The ctorch_status of a returned status, with or without a ticket. */
#define CTORCH_STATUS_CODE(st) ((ctorch_status)((uint32_t)(st) & 0xFFu))
/** The ticket of a returned status (0: none). */
#define CTORCH_STATUS_TICKET(st) (((uint32_t)(st) >> 8) & 0x7FFFFFu)

/**
 * Bytes of native memory held by live tensor storages on devices of `type`,
 * for garbage-collected languages to weigh their handles (trigger a
 * collection when it grows). CPU: every storage allocated through libtorch's
 * default CPU allocator after ctorch was loaded (from any library in the
 * process), counted as the C allocator sized it; one atomic read. CUDA: the
 * bytes the caching allocator has handed out to tensors over all devices
 * (0 without CUDA). Other types: NOT_IMPLEMENTED.
 */
CTORCH_API ctorch_status ctorch_memory_bytes(int64_t *out, ctorch_device_type type);
/**
 * Borrowed address of the CPU byte count ctorch_memory_bytes reads, valid
 * for the life of the process: a binding may look at it from its garbage
 * collector's hooks without a foreign call (an aligned 64-bit load; it is
 * updated with relaxed atomic additions).
 */
CTORCH_API ctorch_status ctorch_memory_cpu_counter(const int64_t **out);

/**
 * Drops one reference of each of handles[0..n) (NULL entries are skipped),
 * as n calls of ctorch_tensor_free would: for bindings that defer the frees
 * their garbage collector asks for and release them in batches, one
 * foreign call per batch. handles may be NULL when n is 0. Returns nothing.
 * @nullable handles
 * @frees handles
 */
CTORCH_API void ctorch_tensor_free_many(const ctorch_tensor *handles, size_t n);

/**
 * Borrowed static hex digest identifying this build's C API: every
 * function's name and C signature, every enum value, every struct layout.
 * api.json carries the same string as "abi_hash": a binding generated from
 * one description checks it against the library it loads. Fails as
 * ctorch_version does.
 */
CTORCH_API ctorch_status ctorch_abi_hash(const char **out);

/*
 * Schema `int` arguments that are enums in PyTorch, with PyTorch's values
 * (the generated functions take them as int64_t; api.json names the enum of
 * each such argument and of its default).
 */

/** `int reduction` of the loss functions (at::Reduction). */
typedef enum ctorch_reduction CTORCH_ENUM_BASE {
  CTORCH_REDUCTION_NONE = 0,
  CTORCH_REDUCTION_MEAN = 1,
  CTORCH_REDUCTION_SUM = 2
} ctorch_reduction;

/** `int interpolation_mode` of grid_sampler* (at::native::GridSamplerInterpolation). */
typedef enum ctorch_grid_sampler_interpolation CTORCH_ENUM_BASE {
  CTORCH_GRID_SAMPLER_BILINEAR = 0,
  CTORCH_GRID_SAMPLER_NEAREST = 1,
  CTORCH_GRID_SAMPLER_BICUBIC = 2
} ctorch_grid_sampler_interpolation;

/** `int padding_mode` of grid_sampler* (at::native::GridSamplerPadding). */
typedef enum ctorch_grid_sampler_padding CTORCH_ENUM_BASE {
  CTORCH_GRID_SAMPLER_PADDING_ZEROS = 0,
  CTORCH_GRID_SAMPLER_PADDING_BORDER = 1,
  CTORCH_GRID_SAMPLER_PADDING_REFLECTION = 2
} ctorch_grid_sampler_padding;

/** `int mode` of embedding_bag and its helpers. */
typedef enum ctorch_embedding_bag_mode CTORCH_ENUM_BASE {
  CTORCH_EMBEDDING_BAG_SUM = 0,
  CTORCH_EMBEDDING_BAG_MEAN = 1,
  CTORCH_EMBEDDING_BAG_MAX = 2
} ctorch_embedding_bag_mode;


/** @} */

/* ================================================================== */
/**
 * @defgroup dispatcher Operators by name (the dispatcher)
 *
 * Every operator libtorch's dispatcher knows at run time, called by name with
 * ctorch_value arguments (a boxed call): aten:: ones, the ones registered
 * outside native_functions.yaml (mkldnn::_linear_pointwise,
 * mkl::_mkl_linear, quantized::...), torchvision:: once its library is
 * loaded, and a user's own torch.library operators.
 *
 * Arguments. Positional values in schema order, then keyword values by
 * schema name (required for keyword-only parameters, e.g. the out= of a
 * .out overload); parameters not given take the schema's default. Every
 * value is checked against its parameter's type before anything runs: a
 * wrong count, an unknown or repeated keyword, a missing argument without a
 * default, a value of the wrong type, or an undefined tensor where the
 * schema says Tensor is CTORCH_INVALID_ARGUMENT naming the argument by
 * position and schema name ("argument 2 'alpha' of aten::add.Tensor(...)").
 * An INT value is taken where the schema says float or Scalar; an empty list
 * takes the parameter's element type. Parameters of type ScalarType, Layout
 * and MemoryFormat take ctorch's numbering (ctorch_value_int(CTORCH_FLOAT32)),
 * checked and translated to c10's, as every other ctorch function does;
 * Device and Generator parameters take ctorch_value_device /
 * ctorch_value_generator (or None).
 *
 * Results. No return: a NONE value. One return: that value. Several: a
 * TUPLE of them in schema order. A returned ScalarType, Layout or
 * MemoryFormat is an INT in ctorch's numbering. The result is NEW (free with
 * ctorch_value_free); tensors inside it share storage with what libtorch
 * returned (an in-place or out= operator returns its argument: a new handle
 * to the same tensor). Arguments are borrowed.
 *
 * Safety (docs/ops.md, "Operators by name"). ctorch_op_call applies, by
 * operator name, the checks the generated typed function of the same
 * operator applies: the hand-written guards (shim/ops/guards.h) and the
 * enum ranges (reduction, grid-sampler modes, ...). An operator flagged
 * unsafe (api.json "unsafe": bindings-gen/unsafe_ops.txt), or whose name
 * says _unsafe, is refused (INVALID_ARGUMENT naming the reason); only
 * ctorch_op_call_unchecked runs it (and skips the guards). Operators outside
 * native_functions.yaml (mkldnn::, mkl::, quantized::, torchvision::, user
 * ops) have no ctorch guards: they get the schema checks above, and their
 * kernels' own checks; the bad-input sweep's boxed mode (scripts/sweep
 * --boxed) exercises the mkldnn:: and mkl:: ones this library's
 * optimiser uses. A kernel's C++ exception is a status, as everywhere.
 *
 * Handles. A ctorch_op names one operator schema; it stays valid while the
 * operator is registered (a library unloaded, or a Python torch.library
 * registration deleted, leaves the handle naming nothing: do not call it
 * then). Handles may be shared between threads; calls are as thread-safe
 * as the operator itself.
 * @{
 */
/** One operator schema found by name (ctorch_op_find); free with ctorch_op_free. */
typedef struct ctorch_op_s *ctorch_op;

/**
 * Finds an operator: name with its namespace ("aten::add",
 * "mkldnn::_linear_pointwise"), overload ("Tensor", "out"; NULL or "" = the
 * overload without a name). NEW handle; free with ctorch_op_free.
 * CTORCH_INDEX (and *out = NULL) when no such operator is registered.
 */
CTORCH_API ctorch_status ctorch_op_find(ctorch_op *out, const char *name, const char *overload);
/** Frees an operator handle. NULL-safe; returns nothing. */
CTORCH_API void ctorch_op_free(ctorch_op op);
/** New text of the operator's schema, as libtorch prints it ("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"); free with ctorch_string_free. */
CTORCH_API ctorch_status ctorch_op_schema(char **out, ctorch_op op);
/**
 * Safety class of the operator: 0 = checked like its generated function
 * (guarded or needing no guard), 1 = flagged unsafe (ctorch_op_call refuses
 * it; *why, when why is not NULL, is NEW text of the reason, free with
 * ctorch_string_free; else NULL), 2 = not from native_functions.yaml (schema
 * checks only, see above).
 */
CTORCH_API ctorch_status ctorch_op_safety(int *out, char **why, ctorch_op op);
/**
 * Every operator registered at run time whose qualified name starts with
 * prefix (NULL or "" = all; "mkldnn::" = one namespace): a NEW LIST value of
 * TUPLEs (str name, str overload, str schema), sorted by name then overload.
 */
CTORCH_API ctorch_status ctorch_op_list(ctorch_value *out, const char *prefix);
/**
 * Calls the operator (see the section comment for arguments, results and
 * the checks). args: nargs positional values (borrowed; NULL only when
 * nargs is 0). kw_names / kw_values: nkw keyword arguments (borrowed). *out
 * is NEW.
 */
CTORCH_API ctorch_status ctorch_op_call(ctorch_value *out, ctorch_op op, const ctorch_value *args, size_t nargs,
                                        const char *const *kw_names, const ctorch_value *kw_values, size_t nkw);
/**
 * UNSAFE: ctorch_op_call without the hand-written guards, the enum ranges
 * and the unsafe-operator refusal (the schema's type checks still run).
 * Bad input to an operator flagged unsafe may crash the process.
 */
CTORCH_API ctorch_status ctorch_op_call_unchecked(ctorch_value *out, ctorch_op op, const ctorch_value *args,
                                                  size_t nargs, const char *const *kw_names,
                                                  const ctorch_value *kw_values, size_t nkw);
/** New Device value (for a schema's Device parameter); d is checked. */
CTORCH_API ctorch_status ctorch_value_device(ctorch_value *out, ctorch_device d);
/** New Generator value holding its own reference to g (borrowed, non-NULL). */
CTORCH_API ctorch_status ctorch_value_generator(ctorch_value *out, ctorch_generator g);
/** New Scalar value: an INT, DOUBLE or BOOL value, or a complex number for CTORCH_SCALAR_COMPLEX (kind OTHER). */
CTORCH_API ctorch_status ctorch_value_scalar(ctorch_value *out, ctorch_scalar s);
/** New List[int] of n ints (copied; p may be NULL when n is 0). */
CTORCH_API ctorch_status ctorch_value_int_list(ctorch_value *out, const int64_t *p, size_t n);

/** @} */

/* ================================================================== */
/**
 * @defgroup lm Language models
 *
 * Causal language models as a task: load a model (a Hugging Face folder
 * as save_pretrained writes it, or a GGUF file), tokenize, apply its chat
 * template, decode in a session that holds a preallocated KV cache, and
 * sample through a chain of samplers. The computation is libtorch's
 * operators, equal to transformers' on the same weights (docs/llm.md).
 *
 * Handles: a ctorch_lm_model is read-only once loaded: any number of
 * threads may tokenize, apply templates and run sessions of one model at
 * once. A ctorch_lm_session, ctorch_lm_sampler, ctorch_lm_stream and
 * ctorch_lm_detokenizer are exclusive: one thread at a time (CTORCH_BUSY
 * otherwise). Sessions, streams and detokenizers keep their model alive:
 * a model may be freed before them.
 *
 * Token ids are int64_t everywhere. Files are data: a truncated, garbage
 * or hostile file is refused with CTORCH_INVALID_ARGUMENT (or
 * CTORCH_OUT_OF_MEMORY past the load budget), naming the file and what is
 * wrong with it; an architecture or config key the loader does not know
 * is refused by name, never run wrong.
 * @{
 */

/** A loaded language model: weights, configuration, tokenizer, chat template. */
typedef struct ctorch_lm_model_s *ctorch_lm_model;
/** A KV cache of n_seq sequences of up to n_ctx positions each, over one model. */
typedef struct ctorch_lm_session_s *ctorch_lm_session;
/** A sampler chain (penalties, temperature, top-k, top-p, min-p, draw) with its own seeded generator. */
typedef struct ctorch_lm_sampler_s *ctorch_lm_sampler;
/** A generation in progress: one sequence of a session, a sampler, stop conditions; pulled piece by piece. */
typedef struct ctorch_lm_stream_s *ctorch_lm_stream;
/** A streaming decoder: token ids in, text out, never splitting a UTF-8 character. */
typedef struct ctorch_lm_detokenizer_s *ctorch_lm_detokenizer;

/**
 * Loads a causal language model from `path`: a folder (config.json, model.safetensors or a sharded
 * model.safetensors.index.json, tokenizer.json, tokenizer_config.json, generation_config.json) or a
 * GGUF file (version 2 or 3). Weights are memory-mapped; architectures: llama (Llama 2/3, SmolLM2,
 * TinyLlama), mistral, qwen2, gpt2.
 * options: NULL, or "key=value,..." with keys
 *   dtype=float32|bfloat16|float16   the arithmetic (default float32);
 *   device=cpu|cuda|cuda:N           where the weights and the cache live (default cpu);
 *   weights=packed|dequantize        a GGUF's quantised matrices (Q8_0, Q4_0, Q4_1, Q4_K, Q6_K): kept packed
 *                                    and multiplied by the CPU's packed kernels (default on the CPU), or
 *                                    dequantised to dtype as they load (always so on a GPU);
 *   quantize=q8_0|q4_0|q4_1|bf16|none  float matrices quantised at load and run packed (CPU only; default
 *                                    none): q8_0, q4_0, q4_1 in groups of 32 with their scales; bf16 rounds
 *                                    them to bfloat16 (weight-only: half the bytes, float32 arithmetic);
 *   activations=float|int8           what the packed Q8/Q4 matrices multiply (CPU, weights=packed; default
 *                                    float): float32 activations, or (int8) each row rounded to 8 bits per
 *                                    group of 32 values and multiplied in integers with AVX-512 VNNI, as
 *                                    llama.cpp does: faster prompts, logits no longer equal to the float
 *                                    product; float32 where the CPU lacks VNNI (the report says which);
 *   init=random,seed=N               ignore any weights and draw them from the configuration with a seeded
 *                                    generator (for speed measurements: only config.json is read, or a GGUF's
 *                                    metadata; the tokenizer is loaded where present).
 * Free with ctorch_lm_model_free.
 */
CTORCH_API ctorch_status ctorch_lm_load(ctorch_lm_model *out, const char *path, const char *options);
/** Frees a model (sessions, streams and detokenizers made from it keep it alive until they go). NULL-safe. */
CTORCH_API void ctorch_lm_model_free(ctorch_lm_model m);
/**
 * A new JSON object describing the model: "architecture", "source" ("folder" or "gguf"), "n_layer",
 * "n_embd", "n_head", "n_head_kv", "n_vocab", "n_ctx_train", "dtype", "device", "bos" (id or null),
 * "eos" (array of ids), "has_chat_template", "parameters", and "report": what the loader did (weights
 * converted, tied head, matrices packed and their formats, kernels chosen). Free with ctorch_string_free.
 */
CTORCH_API ctorch_status ctorch_lm_describe(char **out_json, ctorch_lm_model m);

/**
 * Tokenizes UTF-8 `text` into a new 1-D int64 tensor of ids: a folder's tokenizer.json as
 * transformers' tokenizer does, a GGUF file's vocabulary as llama.cpp's llama_tokenize does (where
 * the two differ, docs/llm.md says how). add_special: add the tokenizer's own specials (BOS, and EOS
 * where the tokenizer adds one), as transformers' add_special_tokens=True; parse_special: special and
 * added tokens written in the text are single ids (transformers' default); with 0 they are tokenized
 * as plain text (llama.cpp's parse_special=false). Text that is not valid UTF-8 is refused.
 */
CTORCH_API ctorch_status ctorch_lm_tokenize(ctorch_tensor *out_ids, ctorch_lm_model m, const char *text,
                                            int add_special, int parse_special);
/**
 * The text of n ids, as transformers' decode(ids, skip_special_tokens=skip_special) for a folder and
 * as llama.cpp's pieces for a GGUF file; bytes that do not form valid UTF-8 become U+FFFD. An id
 * outside the vocabulary is refused.
 */
CTORCH_API ctorch_status ctorch_lm_detokenize(char **out_text, ctorch_lm_model m, const int64_t *ids, size_t n,
                                              int skip_special);
/** The string form of one vocabulary entry (as in tokenizer.json / the GGUF vocabulary). Free with ctorch_string_free. */
CTORCH_API ctorch_status ctorch_lm_token_text(char **out_text, ctorch_lm_model m, int64_t id);

/** New streaming decoder over m's tokenizer (skip_special: leave special tokens out of the text). */
CTORCH_API ctorch_status ctorch_lm_detokenizer_new(ctorch_lm_detokenizer *out, ctorch_lm_model m, int skip_special);
/**
 * Adds one id and returns in *out_text the text that is now complete (possibly ""): the
 * concatenation of every piece returned equals ctorch_lm_detokenize of all ids pushed, once
 * ctorch_lm_detokenizer_flush has returned the rest. Free *out_text with ctorch_string_free.
 */
CTORCH_API ctorch_status ctorch_lm_detokenizer_push(char **out_text, ctorch_lm_detokenizer d, int64_t id);
/** Returns what is held back (an incomplete UTF-8 sequence, as U+FFFD) and empties the decoder. */
CTORCH_API ctorch_status ctorch_lm_detokenizer_flush(char **out_text, ctorch_lm_detokenizer d);
/** NULL-safe. */
CTORCH_API void ctorch_lm_detokenizer_free(ctorch_lm_detokenizer d);

/**
 * Renders a conversation through a chat template, as transformers' apply_chat_template(messages,
 * tokenize=False, add_generation_prompt=...). messages_json: a JSON array of objects with at least
 * "role" and "content" (strings); other members are visible to the template. template_text: NULL for
 * the model's own template (tokenizer_config.json's chat_template or GGUF's tokenizer.chat_template),
 * a template's text, or a built-in name: "chatml", "llama2", "llama3", "mistral", "zephyr".
 * A model without a template and no template given is refused. Rendering is bounded (loops, output
 * size, recursion): a template that exceeds the bounds is refused. Free *out_text with ctorch_string_free.
 */
CTORCH_API ctorch_status ctorch_lm_chat_apply(char **out_text, ctorch_lm_model m, const char *messages_json,
                                              int add_generation_prompt, const char *template_text);

/**
 * New session: a KV cache of n_seq sequences (ids 0..n_seq-1) of up to n_ctx positions each,
 * allocated now on the model's device in the model's dtype. n_ctx <= 0 means the model's
 * training context (n_ctx_train). Free with ctorch_lm_session_free.
 */
CTORCH_API ctorch_status ctorch_lm_session_new(ctorch_lm_session *out, ctorch_lm_model m, int64_t n_ctx,
                                               int64_t n_seq);
/** NULL-safe. */
CTORCH_API void ctorch_lm_session_free(ctorch_lm_session s);
/**
 * Appends n tokens to sequence `seq` and runs them through the model. *out_logits: a new float32
 * tensor [n, n_vocab] of every new position's logits when all_logits is nonzero, else [1, n_vocab]
 * of the last one. Past the session's n_ctx: CTORCH_INVALID_ARGUMENT, nothing appended.
 */
CTORCH_API ctorch_status ctorch_lm_decode(ctorch_tensor *out_logits, ctorch_lm_session s, int64_t seq,
                                          const int64_t *tokens, size_t n, int all_logits);
/**
 * Appends tokens to several sequences in one forward: sequence seqs[i] gets counts[i] tokens,
 * taken in order from `tokens` (n_tokens = the sum of counts). *out_logits: a new float32 tensor
 * [n_seqs, n_vocab], row i the logits of seqs[i]'s last new token. Each row equals what
 * ctorch_lm_decode of that sequence alone gives (up to float rounding). A sequence may appear once.
 */
CTORCH_API ctorch_status ctorch_lm_decode_batch(ctorch_tensor *out_logits, ctorch_lm_session s,
                                                const int64_t *seqs, const int64_t *counts, size_t n_seqs,
                                                const int64_t *tokens, size_t n_tokens);
/** The number of positions sequence seq holds. */
CTORCH_API ctorch_status ctorch_lm_session_length(int64_t *out, ctorch_lm_session s, int64_t seq);
/** Forgets sequence seq's positions from pos on (0 <= pos <= its length): the next decode continues at pos. */
CTORCH_API ctorch_status ctorch_lm_session_rewind(ctorch_lm_session s, int64_t seq, int64_t pos);
/** Makes sequence dst a copy of the first pos positions of sequence src (pos <= src's length; dst's old positions are dropped). */
CTORCH_API ctorch_status ctorch_lm_session_fork(ctorch_lm_session s, int64_t dst, int64_t src, int64_t pos);

/**
 * New sampler chain. options: NULL (greedy), or "key=value,..." with keys, applied in transformers'
 * order: repetition_penalty (transformers' RepetitionPenaltyLogitsProcessor; 1 = off),
 * frequency_penalty and presence_penalty (the OpenAI API's definitions; 0 = off), temperature
 * (0 = greedy), top_k (0 = off), top_p (1 = off), min_p (0 = off), seed (the draw's generator;
 * default 0). With temperature > 0 the draw is torch.multinomial of the softmax on the seeded
 * generator, as transformers' sampling after torch.manual_seed(seed). Free with ctorch_lm_sampler_free.
 */
CTORCH_API ctorch_status ctorch_lm_sampler_new(ctorch_lm_sampler *out, const char *options);
/** NULL-safe. */
CTORCH_API void ctorch_lm_sampler_free(ctorch_lm_sampler s);
/**
 * The scores after the chain's processors (penalties given the n ids of `history`, then temperature,
 * top-k, top-p, min-p; filtered entries -inf), as a new float32 tensor shaped as logits ([V] or [1, V]):
 * the scores transformers' processors compute, for testing and for callers with their own draw.
 */
CTORCH_API ctorch_status ctorch_lm_sampler_apply(ctorch_tensor *out_scores, ctorch_lm_sampler s, ctorch_tensor logits,
                                                 const int64_t *history, size_t n);
/** Chooses one id from logits ([V] or [1, V]) given the ids generated so far (for the penalties). */
CTORCH_API ctorch_status ctorch_lm_sampler_sample(int64_t *out_id, ctorch_lm_sampler s, ctorch_tensor logits,
                                                  const int64_t *history, size_t n);

/**
 * Starts a generation on sequence `seq` of session s: the prompt's n ids are decoded at the first
 * ctorch_lm_stream_next, then one id per call is sampled with the sampler (borrowed: the stream
 * keeps its own reference) and decoded. options: NULL or "key=value,..." with max_tokens (new ids at
 * most; default: until the context is full) and skip_special (0/1, default 1: special tokens give no
 * text). Generation stops at the model's end-of-sequence ids (generation_config.json's eos_token_id or
 * the GGUF's), at an id or string added with ctorch_lm_stream_stop_*, at max_tokens, or when the
 * session's context is full. The sampler's penalties see the prompt and the ids generated so far
 * (transformers' input_ids). The stream keeps its own references to s and the sampler; each
 * ctorch_lm_stream_next holds both for its call (CTORCH_BUSY for another thread's call on them
 * meanwhile). Other calls on sequence seq between two ctorch_lm_stream_next change what the stream
 * continues from: leave the sequence to the stream until it is done.
 */
CTORCH_API ctorch_status ctorch_lm_stream_new(ctorch_lm_stream *out, ctorch_lm_session s, int64_t seq,
                                              ctorch_lm_sampler sampler, const int64_t *prompt, size_t n,
                                              const char *options);
/** Adds a stop string: generation ends before the first occurrence of text in the output (not returned). */
CTORCH_API ctorch_status ctorch_lm_stream_stop_string(ctorch_lm_stream st, const char *text);
/** Adds a stop id (returned as the last id, its text not). */
CTORCH_API ctorch_status ctorch_lm_stream_stop_token(ctorch_lm_stream st, int64_t id);
/**
 * Generates the next id. *out_text: the new text that is complete (may be ""; never a split UTF-8
 * character, never a part of a possible stop string), *out_id the id (-1 once done), *out_done
 * nonzero when the generation has ended (*out_text then holds what was held back). Calling again
 * after done returns done with "". Free *out_text with ctorch_string_free.
 */
CTORCH_API ctorch_status ctorch_lm_stream_next(char **out_text, int64_t *out_id, int *out_done, ctorch_lm_stream st);
/**
 * Why the stream ended: "stop" (an end-of-sequence id, a stop id or a stop string), "length"
 * (max_tokens or the context), or "" while it runs (the OpenAI API's finish_reason). Borrowed static text.
 */
CTORCH_API ctorch_status ctorch_lm_stream_finish_reason(const char **out, ctorch_lm_stream st);
/** NULL-safe. */
CTORCH_API void ctorch_lm_stream_free(ctorch_lm_stream st);

/** @} */

/* ================================================================== */
/**
 * @defgroup ops Generated operators
 *
 * Every ATen operator of the libtorch ctorch was built against, one C
 * function per schema overload, declared in ctorch_ops.h (generated from
 * native_functions.yaml; this header includes it at its end). Each
 * function's documentation is its schema. The naming, the type mapping and
 * the results' ownership are described at the top of ctorch_ops.h and in
 * docs/ops.md; the set differs between libtorch versions (docs/abi.md).
 */
/**
 * @file ctorch_ops.h
 * @ingroup ops
 * @brief Every wrapped ATen operator as a C function (generated).
 */
#ifdef __cplusplus
} /* extern "C" */
#endif

#include "ctorch_ops.h"

#endif /* CTORCH_H */
