//! The header functions that take raw memory, C arrays of arrays or callbacks,
//! wrapped by hand (the generator's `capi` covers the plain ones): strides,
//! zero-copy tensors over a `Vec`, DLPack capsules, store values, TensorBoard
//! hparams, shape checks, the failure log, the CPU memory counter, batch frees,
//! and closures as optimizer closures, LambdaLR factors and loader transforms.
//!
//! Every closure runs behind `std::panic::catch_unwind`: a panic never unwinds
//! into C; it becomes a failure status (and, where the call is synchronous, its
//! message is appended to the returned [`Error`]).
//!
//! Not wrapped: `ctorch_nn_newf` / `ctorch_nn_newv` take a C format string and C varargs
//! (`...`, `va_list`), which stable Rust can neither build safely nor check against the
//! format; the `nn` builders pass the same arguments as keyword text to `ctorch_nn_new`.
use crate::{check, cstring, cstrings, sys, take_string, DataLoader, Element, Error, LrSchedule, LrScheduler, Optimizer,
            Result, Store, SummaryWriter, Tensor};
use std::ffi::c_void;
use std::os::raw::c_char;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::AtomicI64;
use std::sync::Mutex;

/// The text of a caught panic's payload.
fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        format!("Rust closure panicked: {s}")
    } else if let Some(s) = p.downcast_ref::<String>() {
        format!("Rust closure panicked: {s}")
    } else {
        "Rust closure panicked".into()
    }
}

/// Reads a text the C side copies into a caller buffer (`f(out_len, buf, cap)`), growing the buffer once.
fn copy_text(mut f: impl FnMut(*mut usize, *mut c_char, usize) -> sys::ctorch_status) -> Result<String> {
    let mut n = 0usize;
    check(f(&mut n, std::ptr::null_mut(), 0))?;
    loop {
        let mut buf = vec![0u8; n + 1];
        let mut m = 0usize;
        check(f(&mut m, buf.as_mut_ptr() as *mut c_char, buf.len()))?;
        if m <= n {
            buf.truncate(m);
            return Ok(String::from_utf8_lossy(&buf).into_owned());
        }
        n = m;
    }
}

/// Borrowed: this thread's last error message including libtorch's C++ backtrace when it had one; "" if none.
/// (C: `ctorch_last_error_backtrace`.)
pub fn last_error_backtrace() -> String {
    let p = unsafe { sys::ctorch_last_error_backtrace() };
    if p.is_null() {
        return String::new();
    }
    unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// This thread's last failure id (0 if none): every failing call gets a process-unique id,
/// and its message is kept with its status in a process-wide log of the last 1024 failures,
/// readable from any thread with [`error_message`]. (C: `ctorch_last_error_id`.)
pub fn last_error_id() -> u64 {
    unsafe { sys::ctorch_last_error_id() }
}

/// A copy of this thread's last message (C: `ctorch_last_error_copy`).
pub fn last_error_copy() -> Result<String> {
    copy_text(|n, b, c| unsafe { sys::ctorch_last_error_copy(n, b, c) })
}

/// Message and status of failure `id`, from any thread: a failure id ([`last_error_id`]) or a
/// ticket. `CTORCH_INDEX` when the failure is no longer in the log (or never was). The log keeps
/// the last 1,024 failures, each message cut to its first 4,096 bytes. (C: `ctorch_error_message`.)
pub fn error_message(id: u64) -> Result<Error> {
    let mut st = 0;
    let message = copy_text(|n, b, c| unsafe { sys::ctorch_error_message(&mut st, n, b, c, id) })?;
    Ok(Error { status: st & 0xff, message })
}

/// The CPU byte count of [`memory_cpu_counter`]: read-only (the library updates it).
#[derive(Clone, Copy, Debug)]
pub struct CpuMemoryCounter {
    c: &'static AtomicI64,
}

impl CpuMemoryCounter {
    /// Bytes of native memory held by live CPU tensor storages now (one relaxed atomic load,
    /// no foreign call).
    pub fn get(&self) -> i64 {
        self.c.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Bytes of native memory held by live CPU tensor storages, as a counter one can read
/// without a foreign call (C: `ctorch_memory_cpu_counter`: a borrowed address valid for the
/// life of the process, updated with relaxed atomic additions). Read-only on this side, so
/// safe code cannot corrupt the library's count.
pub fn memory_cpu_counter() -> Result<CpuMemoryCounter> {
    let mut p: *const i64 = std::ptr::null();
    check(unsafe { sys::ctorch_memory_cpu_counter(&mut p) })?;
    if p.is_null() || (p as usize) % std::mem::align_of::<AtomicI64>() != 0 {
        return Err(Error::binding("ctorch_memory_cpu_counter: NULL or misaligned counter"));
    }
    // The C side only ever updates it atomically and never frees it.
    Ok(CpuMemoryCounter { c: unsafe { &*(p as *const AtomicI64) } })
}

/// Drops one reference of each tensor, in one foreign call (C: `ctorch_tensor_free_many`:
/// for bindings that defer the frees and release them in batches).
pub fn tensor_free_many(tensors: Vec<Tensor>) {
    let hs: Vec<sys::ctorch_tensor> = tensors.into_iter().map(Tensor::into_raw).collect();
    unsafe { sys::ctorch_tensor_free_many(hs.as_ptr(), hs.len()) }
}

impl Tensor {
    /// The dim() strides, in elements (`t.stride()` for every dim; C: `ctorch_tensor_strides`).
    pub fn strides(&self) -> Result<Vec<i64>> {
        let mut v = vec![0i64; self.dim() as usize];
        check(unsafe { sys::ctorch_tensor_strides(v.as_mut_ptr(), v.len(), self.h) })?;
        Ok(v)
    }

    /// Pointer to the first element (storage offset applied), valid while the tensor (and
    /// its storage) lives; NULL for 0 elements (C: `ctorch_tensor_data_ptr`). Getting it is
    /// safe; reading or writing through it is `unsafe` and the caller's to get right (dtype,
    /// strides, device, other handles to the same storage).
    pub fn data_ptr(&self) -> Result<*mut c_void> {
        let mut p = std::ptr::null_mut();
        check(unsafe { sys::ctorch_tensor_data_ptr(&mut p, self.h) })?;
        Ok(p)
    }

    /// A CPU tensor OVER `data` without a copy (C: `ctorch_tensor_from_blob`): the tensor owns
    /// the `Vec`, which is dropped (from whichever thread drops the last reference) when the
    /// tensor's storage goes. `shape`'s product must equal `data.len()`.
    pub fn from_vec<T: Element + Send + 'static>(data: Vec<T>, shape: &[i64]) -> Result<Tensor> {
        let n = shape.iter().try_fold(1i64, |a, &d| if d < 0 { None } else { a.checked_mul(d) });
        if n != Some(data.len() as i64) {
            return Err(Error::binding(format!(
                "Tensor::from_vec: shape {shape:?} does not hold the {} elements of data", data.len())));
        }
        unsafe extern "C" fn release<T>(ctx: *mut c_void) { unsafe {
            drop(Box::from_raw(ctx as *mut Vec<T>));
        }}
        let mut b = Box::new(data);
        let ptr = b.as_mut_ptr() as *mut c_void;
        let ctx = Box::into_raw(b) as *mut c_void;
        let mut h = std::ptr::null_mut();
        let st = unsafe {
            sys::ctorch_tensor_from_blob(&mut h, ptr, shape.as_ptr(), std::ptr::null(), shape.len(), T::DTYPE.0,
                                         crate::Device::CPU.c(), Some(release::<T>), ctx)
        };
        if st != sys::CTORCH_OK {
            // On failure release is not called and the memory stays ours.
            unsafe { drop(Box::from_raw(ctx as *mut Vec<T>)) };
        }
        check(st)?;
        Tensor::own(h)
    }

    /// New tensor OVER the caller's memory, zero-copy (C: `ctorch_tensor_from_blob`).
    /// `strides` (in elements) `None` means contiguous. On success ctorch calls
    /// `release(ctx)` exactly once, from whichever thread drops the last reference; on
    /// failure release is not called and the caller keeps the memory.
    ///
    /// # Safety
    /// `data` must point to memory on `device` holding every element the sizes and strides
    /// address, aligned to the element size, that stays valid and is not accessed except
    /// through this tensor until `release(ctx)` runs (or for as long as the tensor lives, with
    /// `release` `None`); `release` must be callable from any thread with `ctx`.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn from_blob(data: *mut c_void, sizes: &[i64], strides: Option<&[i64]>, dtype: crate::DType,
                            device: crate::Device, release: Option<unsafe extern "C" fn(*mut c_void)>,
                            ctx: *mut c_void) -> Result<Tensor> { unsafe {
        if let Some(s) = strides {
            if s.len() != sizes.len() {
                return Err(Error::binding("Tensor::from_blob: strides and sizes differ in length"));
            }
        }
        let mut h = std::ptr::null_mut();
        check(sys::ctorch_tensor_from_blob(&mut h, data, sizes.as_ptr(), strides.map_or(std::ptr::null(), |s| s.as_ptr()),
                                           sizes.len(), dtype.0, device.c(), release, ctx))?;
        Tensor::own(h)
    }}

    /// Exports the tensor zero-copy as a DLPack capsule that keeps its memory alive
    /// (C: `ctorch_to_dlpack`). Autograd history is not carried. CPU and CUDA tensors only;
    /// tensors with the conjugate/negative bit set are rejected (VALUE).
    pub fn to_dlpack(&self) -> Result<DlPack> {
        let mut p = std::ptr::null_mut();
        check(unsafe { sys::ctorch_to_dlpack(&mut p, self.h) })?;
        if p.is_null() {
            return Err(Error::binding("ctorch_to_dlpack returned NULL"));
        }
        Ok(DlPack { p: p as *mut DLManagedTensor })
    }

    /// As [`Tensor::to_dlpack`] for DLPack >= 1.0's `DLManagedTensorVersioned`
    /// (C: `ctorch_to_dlpack_versioned`; NOT_IMPLEMENTED when ctorch was built without it).
    pub fn to_dlpack_versioned(&self) -> Result<DlPackVersioned> {
        let mut p = std::ptr::null_mut();
        check(unsafe { sys::ctorch_to_dlpack_versioned(&mut p, self.h) })?;
        if p.is_null() {
            return Err(Error::binding("ctorch_to_dlpack_versioned returned NULL"));
        }
        Ok(DlPackVersioned { p: p as *mut DLManagedTensorVersioned })
    }

    /// Imports a capsule zero-copy as a new tensor (C: `ctorch_from_dlpack`): the tensor takes
    /// the capsule over and calls its deleter when the data's last reference goes. On failure
    /// the capsule is dropped (its deleter runs).
    pub fn from_dlpack(capsule: DlPack) -> Result<Tensor> {
        let mut h = std::ptr::null_mut();
        check(unsafe { sys::ctorch_from_dlpack(&mut h, capsule.p as *mut sys::DLManagedTensor) })?;
        std::mem::forget(capsule);
        Tensor::own(h)
    }

    /// As [`Tensor::from_dlpack`] for a versioned capsule (C: `ctorch_from_dlpack_versioned`;
    /// read-only flagged inputs are rejected, VALUE).
    pub fn from_dlpack_versioned(capsule: DlPackVersioned) -> Result<Tensor> {
        let mut h = std::ptr::null_mut();
        check(unsafe { sys::ctorch_from_dlpack_versioned(&mut h, capsule.p as *mut sys::DLManagedTensorVersioned) })?;
        std::mem::forget(capsule);
        Tensor::own(h)
    }
}

// dlpack.h's layouts (stable since 0.6 / 1.0), for the fields a capsule's owner needs:
// the deleter, and the shape for a check.
#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: [i32; 2],
    ndim: i32,
    dtype: [u8; 4],
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}
#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}
#[repr(C)]
struct DLManagedTensorVersioned {
    version: [u32; 2],
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DLTensor,
}

fn dl_shape(t: &DLTensor) -> Vec<i64> {
    if t.shape.is_null() || t.ndim <= 0 {
        return Vec::new();
    }
    unsafe { std::slice::from_raw_parts(t.shape, t.ndim as usize) }.to_vec()
}

/// An owned DLPack capsule (`DLManagedTensor`): its deleter runs on Drop unless it was
/// handed to [`Tensor::from_dlpack`] or given up with [`DlPack::into_raw`].
pub struct DlPack {
    p: *mut DLManagedTensor,
}
// The header: the deleter may be called from any thread.
unsafe impl Send for DlPack {}

impl DlPack {
    /// The shape the capsule describes.
    pub fn shape(&self) -> Vec<i64> {
        dl_shape(unsafe { &(*self.p).dl_tensor })
    }
    /// The raw `DLManagedTensor *`, still owned by this capsule.
    pub fn as_raw(&self) -> *mut sys::DLManagedTensor {
        self.p as *mut sys::DLManagedTensor
    }
    /// Gives up ownership: the caller (or a consumer) calls its deleter exactly once.
    pub fn into_raw(self) -> *mut sys::DLManagedTensor {
        let p = self.p;
        std::mem::forget(self);
        p as *mut sys::DLManagedTensor
    }
    /// Takes ownership of a capsule from another producer.
    ///
    /// # Safety
    /// `p` must be NULL or a valid `DLManagedTensor` the caller owns (its deleter not yet
    /// called, not owned by anyone else), whose deleter may be called from any thread, and
    /// whose data stays valid until then. NULL gives `None`.
    pub unsafe fn from_raw(p: *mut sys::DLManagedTensor) -> Option<DlPack> {
        if p.is_null() { None } else { Some(DlPack { p: p as *mut DLManagedTensor }) }
    }
}

impl Drop for DlPack {
    fn drop(&mut self) {
        unsafe {
            if let Some(d) = (*self.p).deleter {
                d(self.p)
            }
        }
    }
}

/// An owned DLPack >= 1.0 capsule (`DLManagedTensorVersioned`), as [`DlPack`].
pub struct DlPackVersioned {
    p: *mut DLManagedTensorVersioned,
}
// The header: the deleter may be called from any thread.
unsafe impl Send for DlPackVersioned {}

impl DlPackVersioned {
    /// The shape the capsule describes.
    pub fn shape(&self) -> Vec<i64> {
        dl_shape(unsafe { &(*self.p).dl_tensor })
    }
    /// The raw `DLManagedTensorVersioned *`, still owned by this capsule.
    pub fn as_raw(&self) -> *mut sys::DLManagedTensorVersioned {
        self.p as *mut sys::DLManagedTensorVersioned
    }
    /// Gives up ownership: the caller (or a consumer) calls its deleter exactly once.
    pub fn into_raw(self) -> *mut sys::DLManagedTensorVersioned {
        let p = self.p;
        std::mem::forget(self);
        p as *mut sys::DLManagedTensorVersioned
    }
    /// Takes ownership of a versioned capsule from another producer.
    ///
    /// # Safety
    /// As [`DlPack::from_raw`], for a valid `DLManagedTensorVersioned`.
    pub unsafe fn from_raw(p: *mut sys::DLManagedTensorVersioned) -> Option<DlPackVersioned> {
        if p.is_null() { None } else { Some(DlPackVersioned { p: p as *mut DLManagedTensorVersioned }) }
    }
}

impl Drop for DlPackVersioned {
    fn drop(&mut self) {
        unsafe {
            if let Some(d) = (*self.p).deleter {
                d(self.p)
            }
        }
    }
}

/// Waits (up to the store's timeout) for `key` and returns its value (C: `ctorch_store_get`).
pub fn store_get(store: &Store, key: &str) -> Result<Vec<u8>> {
    let k = cstring(key)?;
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let mut n = 0usize;
        check(unsafe {
            sys::ctorch_store_get(&mut n, buf.as_mut_ptr() as *mut c_void, buf.len(), store.h, k.as_ptr())
        })?;
        if n <= buf.len() {
            buf.truncate(n);
            return Ok(buf);
        }
        buf = vec![0u8; n]; // the value grew (or this was the length probe): read again
    }
}

/// One hyper-parameter's value for [`add_hparams`]: a number or a text.
#[derive(Clone, Copy, Debug)]
pub enum HParam<'a> {
    /// A number.
    Num(f64),
    /// A text.
    Text(&'a str),
}

/// add_hparams(hparam_dict, metric_dict, run_name=run_name) as torch does it: a new event file
/// in <log_dir>/<run_name> (run_name None: the time as Python's str(time.time()) prints it)
/// holding the hparams plugin's experiment, session-start and session-end records, then one
/// scalar per metric; n >= 1 hyper-parameters (C: `ctorch_summary_writer_add_hparams`).
pub fn add_hparams(w: &SummaryWriter, hparams: &[(&str, HParam)], metrics: &[(&str, f64)],
                   run_name: Option<&str>) -> Result<()> {
    let names = cstrings(&hparams.iter().map(|h| h.0).collect::<Vec<_>>())?;
    let texts: Vec<Option<std::ffi::CString>> = hparams
        .iter()
        .map(|h| match h.1 { HParam::Text(t) => cstring(t).map(Some), HParam::Num(_) => Ok(None) })
        .collect::<Result<_>>()?;
    let values: Vec<f64> = hparams.iter().map(|h| match h.1 { HParam::Num(v) => v, HParam::Text(_) => 0.0 }).collect();
    let mnames = cstrings(&metrics.iter().map(|m| m.0).collect::<Vec<_>>())?;
    let mvalues: Vec<f64> = metrics.iter().map(|m| m.1).collect();
    let np: Vec<*const c_char> = names.iter().map(|s| s.as_ptr()).collect();
    let tp: Vec<*const c_char> = texts.iter().map(|s| s.as_ref().map_or(std::ptr::null(), |s| s.as_ptr())).collect();
    let mp: Vec<*const c_char> = mnames.iter().map(|s| s.as_ptr()).collect();
    let run = run_name.map(cstring).transpose()?;
    check(unsafe {
        sys::ctorch_summary_writer_add_hparams(w.h, np.as_ptr(), values.as_ptr(), tp.as_ptr(), np.len(), mp.as_ptr(),
                                               mvalues.as_ptr(), mp.len(), run.as_ref().map_or(std::ptr::null(), |s| s.as_ptr()))
    })
}

impl crate::nn::Module {
    /// Output shape of every submodule for inputs of the given shapes, without running the
    /// kernels (meta tensors): one line per module that ran ("conv1: [1, 6, 28, 28]"), or VALUE
    /// naming the first module whose input does not fit (C: `ctorch_nn_module_shape_check`).
    pub fn shape_check(&self, shapes: &[&[i64]]) -> Result<String> {
        let ps: Vec<*const i64> = shapes.iter().map(|s| s.as_ptr()).collect();
        let ns: Vec<usize> = shapes.iter().map(|s| s.len()).collect();
        let mut out = std::ptr::null_mut();
        check(unsafe { sys::ctorch_nn_module_shape_check(&mut out, self.h, ps.as_ptr(), ns.as_ptr(), ps.len()) })?;
        Ok(unsafe { take_string(out) })
    }

    /// [`forward_n`](crate::nn::Module::forward_n) on the submodule at dotted path `path` ("" =
    /// this module): every output, INDEX for no such submodule
    /// (C: `ctorch_nn_module_forward_child_n`).
    pub fn forward_child_n(&self, path: &str, inputs: &[Option<&Tensor>], kwargs: &str) -> Result<Vec<Option<Tensor>>> {
        const MAX: usize = 16;
        let hs: Vec<sys::ctorch_tensor> = inputs.iter().map(|t| t.map_or(std::ptr::null_mut(), |t| t.h)).collect();
        let (p, kw) = (cstring(path)?, cstring(kwargs)?);
        let mut outs = [std::ptr::null_mut(); MAX];
        let mut n = 0usize;
        check(unsafe {
            sys::ctorch_nn_module_forward_child_n(self.h, p.as_ptr(), hs.as_ptr(), hs.len(), kw.as_ptr(),
                                                  outs.as_mut_ptr(), MAX, &mut n)
        })?;
        Ok(outs[..n.min(MAX)].iter().map(|&h| Tensor::own_opt(h)).collect())
    }
}

/// A borrowed handle as a `Tensor` that is never dropped (the C side frees it).
fn borrowed(h: sys::ctorch_tensor) -> std::mem::ManuallyDrop<Tensor> {
    std::mem::ManuallyDrop::new(Tensor { h })
}

impl Optimizer {
    /// One step with a closure, as Python's `optimizer.step(closure)` (C:
    /// `ctorch_optimizer_step_closure`): the closure zeroes the grads, computes the loss, calls
    /// backward and returns the loss's value; LBFGS calls it as often as its options say, the
    /// others once. Returns the loss the first call returned. A closure that fails or panics
    /// stops the step; its error (or the panic's text) is in the returned [`Error`].
    pub fn step_closure<F: FnMut() -> Result<f64>>(&self, f: F) -> Result<f64> {
        struct St<F> { f: F, err: Option<String> }
        unsafe extern "C" fn tramp<F: FnMut() -> Result<f64>>(ud: *mut c_void, loss: *mut f64) -> sys::ctorch_status { unsafe {
            let st = &mut *(ud as *mut St<F>);
            match catch_unwind(AssertUnwindSafe(|| (st.f)())) {
                Ok(Ok(v)) => { *loss = v; sys::CTORCH_OK }
                Ok(Err(e)) => { let s = e.status; st.err = Some(e.to_string()); s }
                Err(p) => { st.err = Some(panic_text(p)); sys::CTORCH_RUNTIME }
            }
        }}
        let mut st = St { f, err: None };
        let mut loss = 0.0;
        let r = check(unsafe {
            sys::ctorch_optimizer_step_closure(&mut loss, self.h, Some(tramp::<F>), &mut st as *mut St<F> as *mut c_void)
        });
        match (r, st.err) {
            (Ok(()), _) => Ok(loss),
            (Err(mut e), Some(m)) => { e.message = format!("{}: {m}", e.message); Err(e) }
            (Err(e), None) => Err(e),
        }
    }
}

impl LrScheduler {
    /// LambdaLR (`multiplicative` false: lr = initial lr * f(epoch, group)) or
    /// MultiplicativeLR (true: lr = lr * f(epoch, group), from epoch 1), performing the
    /// initial step (C: `ctorch_lr_scheduler_lambda`). The C library keeps the closure for
    /// as long as any scheduler built on this one lives and never frees it, so it is leaked
    /// (one box per scheduler). A panic becomes a failing step (RUNTIME naming the callback,
    /// the groups' lrs unchanged).
    pub fn lambda<F: FnMut(i64, usize) -> f64 + Send + 'static>(opt: &Optimizer, multiplicative: bool, f: F)
                                                               -> Result<LrScheduler> {
        unsafe extern "C" fn tramp<F: FnMut(i64, usize) -> f64>(ud: *mut c_void, epoch: i64, group: usize,
                                                                factor: *mut f64) -> sys::ctorch_status { unsafe {
            let m = &*(ud as *const Mutex<F>);
            match catch_unwind(AssertUnwindSafe(|| {
                let mut g = m.lock().unwrap_or_else(|e| e.into_inner());
                (*g)(epoch, group)
            })) {
                Ok(v) => { *factor = v; sys::CTORCH_OK }
                Err(_) => sys::CTORCH_RUNTIME,
            }
        }}
        let kind = if multiplicative { LrSchedule::MULTIPLICATIVE } else { LrSchedule::LAMBDA };
        let ud = Box::into_raw(Box::new(Mutex::new(f))) as *mut c_void; // leaked: see above
        let mut h = std::ptr::null_mut();
        check(unsafe { sys::ctorch_lr_scheduler_lambda(&mut h, opt.h, kind.0, Some(tramp::<F>), ud) })?;
        unsafe { LrScheduler::from_raw(h) }.ok_or_else(|| Error::binding("ctorch_lr_scheduler_lambda returned NULL"))
    }
}

impl DataLoader {
    /// Sets the loader's per-item callback, run after the loader's transform, before the
    /// items are stacked (C: `ctorch_data_loader_set_transform_fn`). It gets the item's dataset
    /// index, its data and its target (None for a dataset without targets), both borrowed,
    /// and returns the new data and, to replace the target, `Some` new target. With workers it
    /// runs on several threads at once (hence `Fn + Send + Sync`); it must not call this
    /// loader's functions. An `Err` or a panic fails that batch in `next`. The closure is
    /// freed when replaced or removed ([`DataLoader::clear_transform_fn`]) or the loader freed.
    /// Rewinds the current epoch.
    pub fn set_transform_fn<F>(&self, f: F) -> Result<()>
    where F: Fn(i64, &Tensor, Option<&Tensor>) -> Result<(Tensor, Option<Tensor>)> + Send + Sync + 'static {
        type B<F> = Box<F>;
        unsafe extern "C" fn tramp<F: Fn(i64, &Tensor, Option<&Tensor>) -> Result<(Tensor, Option<Tensor>)>>(
            ud: *mut c_void, index: i64, data: sys::ctorch_tensor, target: sys::ctorch_tensor,
            data_out: *mut sys::ctorch_tensor, target_out: *mut sys::ctorch_tensor) -> sys::ctorch_status { unsafe {
            let f = &*(ud as *const F);
            let (d, t) = (borrowed(data), borrowed(target));
            let tgt = if target.is_null() { None } else { Some(&*t) };
            match catch_unwind(AssertUnwindSafe(|| f(index, &d, tgt))) {
                Ok(Ok((nd, nt))) => {
                    *data_out = nd.into_raw();
                    if let Some(nt) = nt { *target_out = nt.into_raw() }
                    sys::CTORCH_OK
                }
                Ok(Err(e)) => e.status,
                Err(_) => sys::CTORCH_RUNTIME,
            }
        }}
        unsafe extern "C" fn free<F>(ud: *mut c_void) { unsafe {
            drop(Box::from_raw(ud as *mut F));
        }}
        let ud = Box::into_raw(B::new(f)) as *mut c_void;
        let st = unsafe { sys::ctorch_data_loader_set_transform_fn(self.h, Some(tramp::<F>), ud, Some(free::<F>)) };
        // On INVALID_ARGUMENT for a dead loader user_data would stay ours; a `&self` loader
        // is live, and in doubt the box is leaked rather than freed twice.
        check(st)
    }

    /// Removes the per-item callback set with [`DataLoader::set_transform_fn`] (freeing it).
    /// (C: `ctorch_data_loader_set_transform_fn` with fn NULL.)
    pub fn clear_transform_fn(&self) -> Result<()> {
        check(unsafe { sys::ctorch_data_loader_set_transform_fn(self.h, None, std::ptr::null_mut(), None) })
    }
}

/// Turns the borrowed `inputs[0..n)` of a callback into `Tensor`s never dropped here.
unsafe fn borrowed_inputs(inputs: *const sys::ctorch_tensor, n: usize) -> Vec<Option<std::mem::ManuallyDrop<Tensor>>> { unsafe {
    if inputs.is_null() || n == 0 {
        return Vec::new();
    }
    std::slice::from_raw_parts(inputs, n).iter().map(|&h| if h.is_null() { None } else { Some(borrowed(h)) }).collect()
}}

impl crate::Dataset {
    /// A dataset whose items come from closures (C: `ctorch_dataset_from_callbacks`): `len`
    /// gives the number of items, `get_item(i)` item i's data and target (None for items
    /// without targets; every item must agree). With `num_workers > 0` loaders call
    /// `get_item` on worker threads, several at once (hence `Send + Sync`). An `Err` or a
    /// panic fails that item's batch. The closures are freed when the last reference to the
    /// dataset goes (the handle and every loader over it freed).
    pub fn from_fn<L, G>(len: L, get_item: G) -> Result<crate::Dataset>
    where L: Fn() -> Result<i64> + Send + Sync + 'static,
          G: Fn(i64) -> Result<(Tensor, Option<Tensor>)> + Send + Sync + 'static {
        type St<L, G> = (L, G);
        unsafe extern "C" fn len_t<L: Fn() -> Result<i64>, G>(ud: *mut c_void, out: *mut i64) -> sys::ctorch_status { unsafe {
            let st = &*(ud as *const St<L, G>);
            match catch_unwind(AssertUnwindSafe(|| (st.0)())) {
                Ok(Ok(n)) => { *out = n; sys::CTORCH_OK }
                Ok(Err(e)) => e.status,
                Err(_) => sys::CTORCH_RUNTIME,
            }
        }}
        unsafe extern "C" fn item_t<L, G: Fn(i64) -> Result<(Tensor, Option<Tensor>)>>(
            ud: *mut c_void, index: i64, data_out: *mut sys::ctorch_tensor, target_out: *mut sys::ctorch_tensor,
        ) -> sys::ctorch_status { unsafe {
            let st = &*(ud as *const St<L, G>);
            match catch_unwind(AssertUnwindSafe(|| (st.1)(index))) {
                Ok(Ok((d, t))) => {
                    *data_out = d.into_raw();
                    if let Some(t) = t { *target_out = t.into_raw() }
                    sys::CTORCH_OK
                }
                Ok(Err(e)) => e.status,
                Err(_) => sys::CTORCH_RUNTIME,
            }
        }}
        unsafe extern "C" fn free<L, G>(ud: *mut c_void) { unsafe {
            drop(Box::from_raw(ud as *mut St<L, G>));
        }}
        let ud = Box::into_raw(Box::new((len, get_item))) as *mut c_void;
        let mut h = std::ptr::null_mut();
        // On failure ctorch frees user_data itself once its arguments were checked (they always
        // are here); the box is never freed on this side then.
        check(unsafe {
            sys::ctorch_dataset_from_callbacks(&mut h, Some(len_t::<L, G>), Some(item_t::<L, G>), ud, Some(free::<L, G>))
        })?;
        unsafe { crate::Dataset::from_raw(h) }.ok_or_else(|| Error::binding("ctorch_dataset_from_callbacks returned NULL"))
    }
}

impl crate::nn::Module {
    /// A module whose forward is a closure (C: `ctorch_nn_custom_new`): it gets the module
    /// itself (borrowed: register parameters and children on it with the usual methods and
    /// call them with [`forward_child`](crate::nn::Module::forward_child)), the inputs
    /// (borrowed; None = None) and the keyword text, and returns the outputs (at most 16).
    /// `type_name` is Python's class name, shown by the repr. An `Err` or a panic is the
    /// forward's failure. The closure is freed when the last reference to the module goes;
    /// a module may be moved to and run on another thread, hence `Send + Sync`.
    pub fn custom<F>(type_name: &str, forward: F) -> Result<crate::nn::Module>
    where F: Fn(&crate::nn::Module, &[Option<&Tensor>], &str) -> Result<Vec<Option<Tensor>>> + Send + Sync + 'static {
        unsafe extern "C" fn fwd<F: Fn(&crate::nn::Module, &[Option<&Tensor>], &str) -> Result<Vec<Option<Tensor>>>>(
            ud: *mut c_void, this: sys::ctorch_nn_module, inputs: *const sys::ctorch_tensor, n_inputs: usize,
            kwargs: *const c_char, outputs: *mut sys::ctorch_tensor, max_outputs: usize, n_outputs: *mut usize,
        ) -> sys::ctorch_status { unsafe {
            let f = &*(ud as *const F);
            let m = std::mem::ManuallyDrop::new(crate::nn::Module { h: this });
            let ins = borrowed_inputs(inputs, n_inputs);
            let refs: Vec<Option<&Tensor>> = ins.iter().map(|t| t.as_deref()).collect();
            let kw = if kwargs.is_null() { String::new() } else { std::ffi::CStr::from_ptr(kwargs).to_string_lossy().into_owned() };
            match catch_unwind(AssertUnwindSafe(|| f(&m, &refs, &kw))) {
                Ok(Ok(outs)) if outs.len() <= max_outputs => {
                    *n_outputs = 0;
                    for (i, o) in outs.into_iter().enumerate() {
                        *outputs.add(i) = o.map_or(std::ptr::null_mut(), Tensor::into_raw);
                        *n_outputs = i + 1;
                    }
                    sys::CTORCH_OK
                }
                Ok(Ok(_)) => sys::CTORCH_INVALID_ARGUMENT, // more outputs than the caller takes (dropped)
                Ok(Err(e)) => e.status,
                Err(_) => sys::CTORCH_RUNTIME,
            }
        }}
        unsafe extern "C" fn free<F>(ud: *mut c_void) { unsafe {
            drop(Box::from_raw(ud as *mut F));
        }}
        let name = cstring(type_name)?;
        let ud = Box::into_raw(Box::new(forward)) as *mut c_void;
        let mut h = std::ptr::null_mut();
        // A failing call leaves the box leaked rather than risk freeing it twice.
        check(unsafe { sys::ctorch_nn_custom_new(&mut h, name.as_ptr(), Some(fwd::<F>), ud, Some(free::<F>)) })?;
        crate::nn::Module::own(h)
    }
}

/// Runs `f` for an autograd callback: its result, or the panic, as a status, the message
/// set on `ctx` (ctorch reports it from the call that ran the callback).
fn autograd_guard(ctx: &crate::AutogradCtx, f: impl FnOnce() -> Result<()>) -> sys::ctorch_status {
    let (st, msg) = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => return sys::CTORCH_OK,
        Ok(Err(e)) => (e.status, e.message),
        Err(p) => (sys::CTORCH_RUNTIME, panic_text(p)),
    };
    if let Ok(m) = cstring(&msg.replace('\0', " ")) {
        unsafe { sys::ctorch_autograd_ctx_set_error(ctx.h, m.as_ptr()) };
    }
    st
}

/// Applies a custom differentiable function, as Python's `torch.autograd.Function.apply`
/// (C: `ctorch_autograd_function_apply`): calls `forward(ctx, inputs)` now (it returns
/// exactly `n_outputs` tensors and may save tensors for backward through `ctx`) and records a
/// graph node whose backward is `backward(ctx, grad_outputs)`, returning one gradient per input
/// (None = no gradient). Inputs are borrowed. An `Err` or a panic in a callback comes back as
/// that callback's status and message, from this call (forward) or from the backward call.
/// The closures are freed when ctorch no longer needs them (the graph node freed); backward
/// may run on an autograd thread, hence `Send + Sync`.
pub fn autograd_function_apply<F, B>(inputs: &[&Tensor], n_outputs: usize, forward: F, backward: B) -> Result<Vec<Tensor>>
where F: Fn(&crate::AutogradCtx, &[Option<&Tensor>]) -> Result<Vec<Tensor>> + Send + Sync + 'static,
      B: Fn(&crate::AutogradCtx, &[Option<&Tensor>]) -> Result<Vec<Option<Tensor>>> + Send + Sync + 'static {
    type St<F, B> = (F, B);
    unsafe extern "C" fn fwd<F: Fn(&crate::AutogradCtx, &[Option<&Tensor>]) -> Result<Vec<Tensor>>, B>(
        ctx: sys::ctorch_autograd_ctx, ud: *mut c_void, inputs: *const sys::ctorch_tensor, n_inputs: usize,
        outputs: *mut sys::ctorch_tensor, n_outputs: usize,
    ) -> sys::ctorch_status { unsafe {
        let st = &*(ud as *const St<F, B>);
        let c = crate::AutogradCtx { h: ctx };
        autograd_guard(&c, || {
            let ins = borrowed_inputs(inputs, n_inputs);
            let refs: Vec<Option<&Tensor>> = ins.iter().map(|t| t.as_deref()).collect();
            let outs = (st.0)(&c, &refs)?;
            if outs.len() != n_outputs {
                return Err(Error::binding(format!("forward returned {} outputs, not {n_outputs}", outs.len())));
            }
            for (i, o) in outs.into_iter().enumerate() {
                *outputs.add(i) = o.into_raw();
            }
            Ok(())
        })
    }}
    unsafe extern "C" fn bwd<F, B: Fn(&crate::AutogradCtx, &[Option<&Tensor>]) -> Result<Vec<Option<Tensor>>>>(
        ctx: sys::ctorch_autograd_ctx, ud: *mut c_void, grads: *const sys::ctorch_tensor, n_outputs: usize,
        grad_inputs: *mut sys::ctorch_tensor, n_inputs: usize,
    ) -> sys::ctorch_status { unsafe {
        let st = &*(ud as *const St<F, B>);
        let c = crate::AutogradCtx { h: ctx };
        autograd_guard(&c, || {
            let gs = borrowed_inputs(grads, n_outputs);
            let refs: Vec<Option<&Tensor>> = gs.iter().map(|t| t.as_deref()).collect();
            let outs = (st.1)(&c, &refs)?;
            if outs.len() != n_inputs {
                return Err(Error::binding(format!("backward returned {} gradients, not {n_inputs}", outs.len())));
            }
            for (i, o) in outs.into_iter().enumerate() {
                *grad_inputs.add(i) = o.map_or(std::ptr::null_mut(), Tensor::into_raw);
            }
            Ok(())
        })
    }}
    unsafe extern "C" fn release<F, B>(ud: *mut c_void) { unsafe {
        drop(Box::from_raw(ud as *mut St<F, B>));
    }}
    let hs: Vec<sys::ctorch_tensor> = inputs.iter().map(|t| t.h).collect();
    let mut outs = vec![std::ptr::null_mut(); n_outputs];
    // ctorch calls release exactly once, failure included: the box is never freed here.
    let ud = Box::into_raw(Box::new((forward, backward))) as *mut c_void;
    let st = unsafe {
        sys::ctorch_autograd_function_apply(outs.as_mut_ptr(), n_outputs, Some(fwd::<F, B>), Some(bwd::<F, B>), ud,
                                            Some(release::<F, B>), hs.as_ptr(), hs.len())
    };
    // Take what was written whatever the status (all NULL on failure), so nothing leaks.
    let owned: Vec<Option<Tensor>> = outs.iter().map(|&h| Tensor::own_opt(h)).collect();
    check(st)?;
    owned.into_iter().map(|t| t.ok_or_else(|| Error::binding("ctorch_autograd_function_apply: NULL output"))).collect()
}
