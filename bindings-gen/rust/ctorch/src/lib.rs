//! ctorch for Rust: PyTorch's operators, autograd, `torch.nn` modules,
//! optimizers and schedules through libctorch's C API.
//!
//! Generated from the `api.json` of a ctorch build (bindings-gen/ctorch_gen/emit_rust*.py);
//! this file and `data.rs`, `nn/mod.rs`, `optim.rs` are the hand-written runtime.
//!
//! - [`Tensor`] methods for every operator taking `self` first, with torch's defaults for
//!   the arguments that have one: `x.relu()?`, `a.matmul(&b)?`, `logits.cross_entropy_loss(&y)?`.
//! - [`ops`]: every ATen operator, one function per overload named as in C without
//!   `ctorch_` (`ops::add_Tensor`, `ops::add__Tensor`, `ops::sum`), every argument explicit
//!   in the schema's order (`Option` = None; a slice `&[]` is `[]`).
//! - [`capi`]: the header's own functions (devices, threads, data, checkpoints,
//!   safetensors, TorchScript, TensorBoard, dist, ...) as safe functions.
//! - [`Tensor`] owns one handle and frees it on `Drop`; every other handle type
//!   ([`Generator`], [`TensorDict`], [`ScriptModule`], [`DataLoader`], ...) likewise.
//! - Failures are [`Error`]s: the C status and the library's message for this thread.
//! - [`nn`]: the module kinds of torch.nn as builders (`nn::Conv2d::new(1, 6, 5).padding(2).build()?`).
//! - [`optim`]: optimizers and learning-rate schedules.
//! - [`dist`]: torch.distributed's vocabulary over ctorch's process groups (torchrun, TCPStore,
//!   collectives, `average_gradients`).
//! - [`no_grad`]`(|| ...)`, [`DataLoader::epoch`] (an iterator of batches).
//! - Bytes and streams: `save_to(w)` / `load_from(r)` of a [`Tensor`], a [`TensorDict`],
//!   an [`nn::Module`]'s state dict and an [`Optimizer`]'s state (any `std::io::Write` / `Read`).
//! - Feature `ndarray`: `Tensor::try_from(&array)?`, `ndarray::ArrayD::<f32>::try_from(&t)?`
//!   for `f32`, `f64`, `i64`, `i32`, `i16`, `i8`, `u8`, `bool` (another dtype is an `Err`).
//!
//! # Safety
//!
//! No safe function of this crate can crash the process on bad arguments: an operator
//! the library cannot check fully (api.json's `unsafe`, bindings-gen/unsafe_ops.txt) is
//! an `unsafe fn` with a `# Safety` section; `from_raw` constructors are `unsafe fn`.
//!
//! # Threads
//!
//! The C contract (ctorch.h, "Threads"): any thread may call any function and use or
//! free any handle; distinct objects may be used concurrently. The handle types are
//! `Send` (move a tensor, module, optimizer, loader, ... to another thread) and not
//! `Sync` (share one through a `Mutex`). Handles bound to the thread that made them
//! are neither: the scopes (grad mode, autocast, streams, handle scopes), profiler
//! and tracer sessions, and the autograd ctx a callback borrows.
//!
//! Two `Tensor`s may share one storage (`shallow_clone`, a view, `detach`,
//! `ops::alias`), and each may go to its own thread. So the library checks tensor
//! writes per storage: while a call writes a tensor (an in-place or `out=` operator,
//! an optimizer's step writing its parameters), another thread's call writing the
//! same storage returns an [`Error`] with status `sys::CTORCH_BUSY` naming the
//! function and argument, and changes nothing. Writes to storages of their own never
//! get BUSY. Reads are not checked: a read of a storage another thread is writing at
//! that moment computes from some elements before the write and some after (values
//! unspecified, no crash). Optimizers, loaders, schedulers and grad scalers are
//! exclusive, checked the same way.
#![allow(non_snake_case)]

pub use ctorch_sys as sys;

/// The header's C functions as safe Rust functions (generated; see emit_rust_capi.py).
#[path = "capi_gen.rs"]
pub mod capi;
mod data;
pub mod dist;
mod enums_gen;
mod extra;
mod handles_gen;
mod methods_gen;
#[cfg(feature = "ndarray")]
mod nd;
pub mod lm;
pub mod nn;
pub mod ops;
pub mod optim;
#[cfg(doctest)]
mod readme_doctests;
mod sugar;
mod train;

pub use data::{cuda_is_available, set_num_threads, Batches};
pub use enums_gen::*;
pub use extra::{add_hparams, autograd_function_apply, error_message, last_error_backtrace, last_error_copy, last_error_id,
                memory_cpu_counter, store_get, tensor_free_many, CpuMemoryCounter, DlPack, DlPackVersioned, HParam};
pub use handles_gen::*;
pub use sugar::{IndexSpec, IntoIndex, TensorIndex};
pub use train::inference_mode;

use std::ffi::{CStr, CString};
use std::fmt;
use std::os::raw::c_char;

/// A failed call: the C status and the message the library recorded for this thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// The `ctorch_status` (a `sys::CTORCH_*` status value, never `CTORCH_OK`).
    pub status: i32,
    /// `ctorch_last_error()` right after the failing call.
    pub message: String,
}

impl Error {
    /// The status's name (`"CTORCH_INVALID_ARGUMENT"`, ...).
    pub fn status_name(&self) -> &'static str {
        let p = unsafe { sys::ctorch_status_name(self.status) };
        if p.is_null() {
            return "CTORCH_UNKNOWN";
        }
        unsafe { CStr::from_ptr(p) }.to_str().unwrap_or("CTORCH_UNKNOWN")
    }
    fn binding(message: impl Into<String>) -> Error {
        Error { status: sys::CTORCH_INVALID_ARGUMENT, message: message.into() }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status_name(), self.message)
    }
}

impl std::error::Error for Error {}

/// `Result<T, ctorch::Error>`.
pub type Result<T> = std::result::Result<T, Error>;

/// Turns a status into a Result, reading this thread's message on failure
/// (a Rust call runs on the calling thread, so the thread-local message is the call's).
#[inline]
pub fn check(st: sys::ctorch_status) -> Result<()> {
    if st == sys::CTORCH_OK {
        return Ok(());
    }
    Err(Error { status: st & 0xff, message: last_error() })
}

/// This thread's last failure message ("" if none).
pub fn last_error() -> String {
    let p = unsafe { sys::ctorch_last_error() };
    if p.is_null() {
        return String::new();
    }
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

pub(crate) fn cstring(s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::binding(format!("string {s:?} contains a NUL byte")))
}

pub(crate) fn cstrings(v: &[&str]) -> Result<Vec<CString>> {
    v.iter().map(|s| cstring(s)).collect()
}

/// Takes a `char **` result (new, freed with ctorch_string_free).
pub(crate) unsafe fn take_string(p: *mut c_char) -> String { unsafe {
    if p.is_null() {
        return String::new();
    }
    let s = CStr::from_ptr(p).to_string_lossy().into_owned();
    sys::ctorch_string_free(p);
    s
}}

/// The load check every binding makes (docs/packages.md, "The load check"):
/// the library refuses when a libtorch of another release is loaded beside
/// it; its ctorch and libtorch versions must be those this crate was
/// generated for (compiled in from api.json), then its ABI hash.
pub fn check_abi() -> Result<()> {
    type Query = unsafe extern "C" fn(*mut *const c_char) -> sys::ctorch_status;
    let ask = |f: Query| -> Result<String> {
        let mut p: *const c_char = std::ptr::null();
        check(unsafe { f(&mut p) })?;
        Ok(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    };
    let (version, torch, hash) =
        (ask(sys::ctorch_version)?, ask(sys::ctorch_torch_version)?, ask(sys::ctorch_abi_hash)?);
    let refuse = |message: String| Err(Error { status: sys::CTORCH_RUNTIME, message });
    if version != sys::VERSION || torch != sys::TORCH_VERSION {
        return refuse(format!(
            "libctorch {version} built for libtorch {torch} is loaded; this crate was generated for \
             libctorch {} built for libtorch {} (build against that library: CTORCH_LIB or pkg-config, see ctorch-sys)",
            sys::VERSION,
            sys::TORCH_VERSION
        ));
    }
    if hash != sys::ABI_HASH {
        return refuse(format!(
            "libctorch's ABI hash {hash} is not the {} this crate was generated for (ctorch {}, torch {})",
            sys::ABI_HASH,
            sys::VERSION,
            sys::TORCH_VERSION
        ));
    }
    Ok(())
}

static ABI_ONCE: std::sync::Once = std::sync::Once::new();

/// Checks the ABI once per process (from the entry points a program starts with).
pub(crate) fn abi_once() {
    ABI_ONCE.call_once(|| {
        if let Err(e) = check_abi() {
            panic!("ctorch: {e}");
        }
    });
}

// ---- Scalar, Device ------------------------------------------------------------------------

/// A number passed by value (`ctorch_scalar`). The kind matters as in PyTorch:
/// an integer tensor plus `Scalar::Int(2)` stays integer, plus `Scalar::Float(2.0)` becomes float.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    /// An integer (`ctorch_scalar_int`).
    Int(i64),
    /// A float (`ctorch_scalar_float`).
    Float(f64),
    /// A boolean (`ctorch_scalar_bool`).
    Bool(bool),
    /// A complex number: real and imaginary parts (`ctorch_scalar_complex`).
    Complex(f64, f64),
}

impl Scalar {
    /// The C value (`ctorch_scalar`).
    pub fn c(&self) -> sys::ctorch_scalar {
        let mut s = sys::ctorch_scalar { kind: 0, reserved: 0, i: 0, f: 0.0, imag: 0.0 };
        match *self {
            Scalar::Int(v) => {
                s.kind = sys::CTORCH_SCALAR_INT;
                s.i = v;
            }
            Scalar::Float(v) => {
                s.kind = sys::CTORCH_SCALAR_FLOAT;
                s.f = v;
            }
            Scalar::Bool(v) => {
                s.kind = sys::CTORCH_SCALAR_BOOL;
                s.i = v as i64;
            }
            Scalar::Complex(re, im) => {
                s.kind = sys::CTORCH_SCALAR_COMPLEX;
                s.f = re;
                s.imag = im;
            }
        }
        s
    }
    /// From the C value (an unknown kind reads as a float).
    pub fn from_c(s: sys::ctorch_scalar) -> Scalar {
        match s.kind {
            k if k == sys::CTORCH_SCALAR_INT => Scalar::Int(s.i),
            k if k == sys::CTORCH_SCALAR_BOOL => Scalar::Bool(s.i != 0),
            k if k == sys::CTORCH_SCALAR_COMPLEX => Scalar::Complex(s.f, s.imag),
            _ => Scalar::Float(s.f),
        }
    }
    /// The value as f64 (a complex number's real part).
    pub fn to_f64(&self) -> f64 {
        match *self {
            Scalar::Int(v) => v as f64,
            Scalar::Float(v) => v,
            Scalar::Bool(v) => v as i64 as f64,
            Scalar::Complex(re, _) => re,
        }
    }
}

impl From<i64> for Scalar {
    fn from(v: i64) -> Self {
        Scalar::Int(v)
    }
}
impl From<i32> for Scalar {
    fn from(v: i32) -> Self {
        Scalar::Int(v as i64)
    }
}
impl From<f64> for Scalar {
    fn from(v: f64) -> Self {
        Scalar::Float(v)
    }
}
impl From<f32> for Scalar {
    fn from(v: f32) -> Self {
        Scalar::Float(v as f64)
    }
}
impl From<bool> for Scalar {
    fn from(v: bool) -> Self {
        Scalar::Bool(v)
    }
}

/// A device (`ctorch_device`): `Device::CPU`, `Device::cuda(0)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Device {
    /// The device type (CPU, CUDA, ...).
    pub kind: DeviceType,
    /// -1: the current device of that type.
    pub index: i32,
}

impl Device {
    /// The CPU.
    pub const CPU: Device = Device { kind: DeviceType::CPU, index: -1 };
    /// CUDA device `index` (-1: the current one).
    pub fn cuda(index: i32) -> Device {
        Device { kind: DeviceType::CUDA, index }
    }
    /// The C value (`ctorch_device`).
    pub fn c(&self) -> sys::ctorch_device {
        sys::ctorch_device { r#type: self.kind.0, index: self.index }
    }
}

impl fmt::Display for Device {
    /// As `str(torch.device(...))`: `cpu`, `cuda:0` (no index when it is -1, the current one).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.index < 0 { write!(f, "{}", self.kind) } else { write!(f, "{}:{}", self.kind, self.index) }
    }
}

// ---- Tensor --------------------------------------------------------------------------------

/// Owns one `ctorch_tensor` reference; `Drop` frees it. Operators are in [`ops`];
/// `&a + &b`, `&a * &b`, ... call them and panic on failure (use `ops::` for a `Result`).
pub struct Tensor {
    pub(crate) h: sys::ctorch_tensor,
}

// A handle is a reference-counted TensorImpl: any thread may use or free it
// (concurrent mutation of one tensor is the caller's to serialise, as in PyTorch).
unsafe impl Send for Tensor {}

impl Drop for Tensor {
    fn drop(&mut self) {
        unsafe { sys::ctorch_tensor_free(self.h) }
    }
}

/// Element types a tensor can be made from and read into.
pub trait Element: Copy + Default {
    /// The tensor dtype of this element type.
    const DTYPE: DType;
}
impl Element for f32 {
    const DTYPE: DType = DType::FLOAT32;
}
impl Element for f64 {
    const DTYPE: DType = DType::FLOAT64;
}
impl Element for i64 {
    const DTYPE: DType = DType::INT64;
}
impl Element for i32 {
    const DTYPE: DType = DType::INT32;
}
impl Element for i16 {
    const DTYPE: DType = DType::INT16;
}
impl Element for i8 {
    const DTYPE: DType = DType::INT8;
}
impl Element for u8 {
    const DTYPE: DType = DType::UINT8;
}
impl Element for bool {
    const DTYPE: DType = DType::BOOL;
}

impl Tensor {
    /// Takes ownership of a handle a C call returned; NULL is an error.
    ///
    /// # Safety
    /// `h` must be NULL or a tensor handle the caller owns (a NEW handle from a
    /// `ctorch_*` call, not freed, not owned by another value): it is freed on Drop.
    #[inline]
    pub unsafe fn from_raw_checked(h: sys::ctorch_tensor) -> Result<Tensor> {
        Tensor::own(h)
    }
    /// Takes ownership of a handle a C call returned; NULL (an undefined tensor) is None.
    ///
    /// # Safety
    /// As [`Tensor::from_raw_checked`].
    #[inline]
    pub unsafe fn from_raw_opt(h: sys::ctorch_tensor) -> Option<Tensor> {
        Tensor::own_opt(h)
    }
    /// The crate's own: `h` is a NEW handle a ctorch call just returned.
    #[doc(hidden)]
    #[inline]
    pub(crate) fn own(h: sys::ctorch_tensor) -> Result<Tensor> {
        if h.is_null() {
            return Err(Error { status: sys::CTORCH_RUNTIME, message: "unexpected NULL tensor".into() });
        }
        Ok(Tensor { h })
    }
    #[inline]
    pub(crate) fn own_opt(h: sys::ctorch_tensor) -> Option<Tensor> {
        if h.is_null() { None } else { Some(Tensor { h }) }
    }
    /// The raw handle, still owned by this tensor.
    pub fn as_raw(&self) -> sys::ctorch_tensor {
        self.h
    }
    /// Gives up ownership: the caller frees the handle.
    pub fn into_raw(self) -> sys::ctorch_tensor {
        let h = self.h;
        std::mem::forget(self);
        h
    }

    /// A new CPU tensor holding a copy of `data`, of shape `shape`.
    pub fn from_slice<T: Element>(data: &[T], shape: &[i64]) -> Result<Tensor> {
        abi_once();
        let mut h = std::ptr::null_mut();
        check(unsafe {
            sys::ctorch_tensor_from_data(
                &mut h,
                data.as_ptr() as *const std::ffi::c_void,
                std::mem::size_of_val(data),
                shape.as_ptr(),
                shape.len(),
                T::DTYPE.0,
            )
        })?;
        Tensor::own(h)
    }

    /// A new handle to the same tensor (as Python's `b = a`).
    pub fn shallow_clone(&self) -> Result<Tensor> {
        let mut h = std::ptr::null_mut();
        check(unsafe { sys::ctorch_tensor_ref(&mut h, self.h) })?;
        Tensor::own(h)
    }

    /// The number of dimensions (0 when the handle cannot be read).
    pub fn dim(&self) -> i64 {
        let mut n = 0;
        check(unsafe { sys::ctorch_tensor_dim(&mut n, self.h) }).map(|_| n).unwrap_or(0)
    }

    /// The sizes (`t.shape`).
    pub fn size(&self) -> Vec<i64> {
        let mut v = vec![0i64; self.dim() as usize];
        match check(unsafe { sys::ctorch_tensor_sizes(v.as_mut_ptr(), v.len(), self.h) }) {
            Ok(()) => v,
            Err(_) => Vec::new(),
        }
    }

    /// The number of elements (0 when the handle cannot be read).
    pub fn numel(&self) -> i64 {
        let mut n = 0;
        check(unsafe { sys::ctorch_tensor_numel(&mut n, self.h) }).map(|_| n).unwrap_or(0)
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        let mut d = 0;
        let _ = check(unsafe { sys::ctorch_tensor_dtype(&mut d, self.h) });
        DType(d)
    }

    /// The layout (strided, sparse, ...).
    pub fn layout(&self) -> Layout {
        let mut d = 0;
        let _ = check(unsafe { sys::ctorch_tensor_layout(&mut d, self.h) });
        Layout(d)
    }

    /// `t.is_floating_point()`: float16, bfloat16, float32 or float64.
    pub fn is_floating_point(&self) -> bool {
        matches!(self.dtype(), DType::FLOAT16 | DType::BFLOAT16 | DType::FLOAT32 | DType::FLOAT64)
    }

    /// The elements in row-major order, as `T` (the tensor is converted to `T`'s dtype first).
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        let t = if self.dtype() == T::DTYPE { self.shallow_clone()? } else { self.to_dtype(T::DTYPE)? };
        let n = t.numel() as usize;
        let mut v = vec![T::default(); n];
        check(unsafe {
            sys::ctorch_tensor_copy_to(v.as_mut_ptr() as *mut std::ffi::c_void, n * std::mem::size_of::<T>(), t.h)
        })?;
        Ok(v)
    }

    /// The value of a one-element tensor.
    pub fn item(&self) -> Result<f64> {
        let mut v = 0.0;
        check(unsafe { sys::ctorch_tensor_item_double(&mut v, self.h) })?;
        Ok(v)
    }

    /// `t.to(dtype)`: a copy converted to `dtype` (this tensor itself when it has it).
    pub fn to_dtype(&self, dtype: DType) -> Result<Tensor> {
        let mut h = std::ptr::null_mut();
        check(unsafe { sys::ctorch_tensor_to_dtype(&mut h, self.h, dtype.0) })?;
        Tensor::own(h)
    }

    /// `t.backward()`: accumulates gradients into the leaves' `.grad`.
    pub fn backward(&self) -> Result<()> {
        check(unsafe { sys::ctorch_tensor_backward(self.h, std::ptr::null_mut(), 0, 0, std::ptr::null(), 0) })
    }

    /// `t.grad` (None when there is none yet).
    pub fn grad(&self) -> Result<Option<Tensor>> {
        let mut h = std::ptr::null_mut();
        check(unsafe { sys::ctorch_tensor_grad(&mut h, self.h) })?;
        Ok(Tensor::own_opt(h))
    }

    /// `t.requires_grad`.
    pub fn requires_grad(&self) -> bool {
        let mut v = 0;
        check(unsafe { sys::ctorch_tensor_requires_grad(&mut v, self.h) }).map(|_| v != 0).unwrap_or(false)
    }

    /// `t.requires_grad_(on)`; returns the tensor for chaining.
    pub fn requires_grad_(self, on: bool) -> Result<Tensor> {
        check(unsafe { sys::ctorch_tensor_set_requires_grad(self.h, on as i32) })?;
        Ok(self)
    }

    /// `t.detach()`: the same data, out of the graph.
    pub fn detach(&self) -> Result<Tensor> {
        let mut h = std::ptr::null_mut();
        check(unsafe { sys::ctorch_tensor_detach(&mut h, self.h) })?;
        Tensor::own(h)
    }
}

impl fmt::Display for Tensor {
    /// As Python's `str(tensor)` (summarised beyond 1,000 elements; see
    /// [`Tensor::format`]); libtorch's printing for sparse and quantized tensors.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Ok(s) = self.format(None, None, None, None, None) {
            return f.write_str(&s);
        }
        let mut p: *mut c_char = std::ptr::null_mut();
        match check(unsafe { sys::ctorch_tensor_to_string(&mut p, self.h) }) {
            Ok(()) => f.write_str(&unsafe { take_string(p) }),
            Err(e) => write!(f, "<tensor: {e}>"),
        }
    }
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tensor({:?}, {:?})", self.size(), self.dtype())
    }
}

macro_rules! binop {
    ($tr:ident, $m:ident, $op:ident, $sop:ident $(, $alpha:expr)?) => {
        impl std::ops::$tr<&Tensor> for &Tensor {
            type Output = Tensor;
            fn $m(self, o: &Tensor) -> Tensor {
                ops::$op(self, o $(, $alpha)?).unwrap_or_else(|e| panic!("{}: {e}", stringify!($op)))
            }
        }
        impl<S: Into<Scalar>> std::ops::$tr<S> for &Tensor {
            type Output = Tensor;
            fn $m(self, o: S) -> Tensor {
                ops::$sop(self, o.into() $(, $alpha)?).unwrap_or_else(|e| panic!("{}: {e}", stringify!($sop)))
            }
        }
    };
}
binop!(Add, add, add_Tensor, add_Scalar, Scalar::Int(1));
binop!(Sub, sub, sub_Tensor, sub_Scalar, Scalar::Int(1));
binop!(Mul, mul, mul_Tensor, mul_Scalar);
binop!(Div, div, div_Tensor, div_Scalar);

// ---- lists, dicts, seeds, grad mode ---------------------------------------------------------

/// Reads a tensor list handle into a Vec and frees the list (api.json: handles[].elements).
pub(crate) fn read_tensor_list(l: sys::ctorch_tensor_list) -> Result<Vec<Tensor>> {
    read_tensor_list_opt(l)?.into_iter().map(|t| t.ok_or_else(|| Error::binding("unexpected NULL element"))).collect()
}

pub(crate) fn read_tensor_list_opt(l: sys::ctorch_tensor_list) -> Result<Vec<Option<Tensor>>> {
    struct Guard(sys::ctorch_tensor_list);
    impl Drop for Guard {
        fn drop(&mut self) {
            unsafe { sys::ctorch_tensor_list_free(self.0) }
        }
    }
    let g = Guard(l);
    let mut n = 0usize;
    check(unsafe { sys::ctorch_tensor_list_size(&mut n, g.0) })?;
    let mut v = Vec::with_capacity(n);
    for i in 0..n {
        let mut h = std::ptr::null_mut();
        check(unsafe { sys::ctorch_tensor_list_get(&mut h, g.0, i) })?;
        v.push(Tensor::own_opt(h));
    }
    Ok(v)
}

impl TensorDict {
    /// The number of entries.
    pub fn len(&self) -> usize {
        let mut n = 0usize;
        check(unsafe { sys::ctorch_tensor_dict_size(&mut n, self.h) }).map(|_| n).unwrap_or(0)
    }
    /// No entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Entry i: (key, a new handle to its tensor).
    pub fn entry(&self, i: usize) -> Result<(String, Tensor)> {
        let mut k: *const c_char = std::ptr::null();
        check(unsafe { sys::ctorch_tensor_dict_key(&mut k, self.h, i) })?;
        let key = unsafe { CStr::from_ptr(k) }.to_string_lossy().into_owned();
        let mut h = std::ptr::null_mut();
        check(unsafe { sys::ctorch_tensor_dict_get(&mut h, self.h, i) })?;
        Ok((key, Tensor::own(h)?))
    }
    /// Every entry, in order.
    pub fn to_vec(&self) -> Result<Vec<(String, Tensor)>> {
        (0..self.len()).map(|i| self.entry(i)).collect()
    }
}

/// A seed in PyTorch's range, [-2^63, 2^64-1]: an unsigned seed as it is, a
/// negative one s as 2^64 + s, as `torch.manual_seed(s)` takes it (so
/// `manual_seed(-1)` seeds with 18446744073709551615, PyTorch's `initial_seed()`).
pub trait IntoSeed {
    /// The seed as the library takes it (C's `uint64_t`).
    fn into_seed(self) -> u64;
}
macro_rules! into_seed {
    ($($t:ty),*) => {$(
        impl IntoSeed for $t {
            #[inline]
            fn into_seed(self) -> u64 {
                // Sign-extended to 64 bits, then 2^64 + s for a negative s.
                self as i64 as u64
            }
        }
    )*};
}
into_seed!(i8, i16, i32, i64, isize, u8, u16, u32);
impl IntoSeed for u64 {
    #[inline]
    fn into_seed(self) -> u64 {
        self
    }
}
impl IntoSeed for usize {
    #[inline]
    fn into_seed(self) -> u64 {
        self as u64
    }
}

impl Generator {
    /// `torch.Generator(device).manual_seed(seed)` (ctorch_generator_new); seed: [`IntoSeed`].
    pub fn new(device: Device, seed: impl IntoSeed) -> Result<Generator> {
        abi_once();
        let mut h = std::ptr::null_mut();
        check(unsafe { sys::ctorch_generator_new(&mut h, device.c(), seed.into_seed()) })?;
        unsafe { Generator::from_raw(h) }.ok_or_else(|| Error::binding("ctorch_generator_new returned NULL"))
    }
}

/// Seeds every default generator (`torch.manual_seed`); seed: [`IntoSeed`].
pub fn manual_seed(seed: impl IntoSeed) {
    abi_once();
    unsafe { sys::ctorch_manual_seed(seed.into_seed()) };
}

/// Runs `f` with gradient recording off on this thread (`with torch.no_grad():`).
pub fn no_grad<T>(f: impl FnOnce() -> T) -> T {
    struct Scope(sys::ctorch_autograd_scope);
    impl Drop for Scope {
        fn drop(&mut self) {
            unsafe { sys::ctorch_autograd_scope_leave(self.0) };
        }
    }
    let mut h = std::ptr::null_mut();
    check(unsafe { sys::ctorch_autograd_scope_enter(&mut h, sys::CTORCH_SCOPE_NO_GRAD) })
        .unwrap_or_else(|e| panic!("no_grad: {e}"));
    let _s = Scope(h);
    f()
}

/// Reads the MNIST-format IDX files in `dir` (`train` or t10k): (images uint8 `[N, 28, 28]`, labels int64 `[N]`).
pub fn read_mnist(dir: &str, train: bool) -> Result<(Tensor, Tensor)> {
    abi_once();
    let d = cstring(dir)?;
    let (mut x, mut y) = (std::ptr::null_mut(), std::ptr::null_mut());
    check(unsafe { sys::ctorch_data_mnist_read_dir(&mut x, &mut y, d.as_ptr(), train as i32) })?;
    Ok((Tensor::own(x)?, Tensor::own(y)?))
}

/// Loads a safetensors file into a dict (tensors on the CPU).
pub fn safetensors_load(path: &str) -> Result<TensorDict> {
    let p = cstring(path)?;
    let mut h = std::ptr::null_mut();
    check(unsafe { sys::ctorch_safetensors_load(&mut h, p.as_ptr(), std::ptr::null()) })?;
    unsafe { TensorDict::from_raw(h) }.ok_or_else(|| Error::binding("safetensors_load returned NULL"))
}

/// Writes named tensors and string metadata as a safetensors file.
pub fn safetensors_save(path: &str, tensors: &[(String, Tensor)], meta: &[(&str, &str)]) -> Result<()> {
    let p = cstring(path)?;
    let names: Vec<CString> = tensors.iter().map(|(n, _)| cstring(n)).collect::<Result<_>>()?;
    let np: Vec<*const c_char> = names.iter().map(|s| s.as_ptr()).collect();
    let hs: Vec<sys::ctorch_tensor> = tensors.iter().map(|(_, t)| t.h).collect();
    let mk: Vec<CString> = meta.iter().map(|(k, _)| cstring(k)).collect::<Result<_>>()?;
    let mv: Vec<CString> = meta.iter().map(|(_, v)| cstring(v)).collect::<Result<_>>()?;
    let mkp: Vec<*const c_char> = mk.iter().map(|s| s.as_ptr()).collect();
    let mvp: Vec<*const c_char> = mv.iter().map(|s| s.as_ptr()).collect();
    check(unsafe {
        sys::ctorch_safetensors_save(p.as_ptr(), np.as_ptr(), hs.as_ptr(), hs.len(), mkp.as_ptr(), mvp.as_ptr(), mkp.len())
    })
}
