//! torch.nn's modules over the C module layer (docs/modules.md): every built-in
//! kind as a builder named as torch.nn's class (kinds_gen.rs, generated from
//! api.json's catalogue), the containers, and [`Module`], the handle they make.
//!
//! ```
//! use ctorch::nn;
//! # fn main() -> ctorch::Result<()> {
//! let conv = nn::Conv2d::new(1, 6, 5).padding(2).build()?;   // torch.nn.Conv2d(1, 6, 5, padding=2)
//! let fc = nn::Linear::new(120, 84).bias(false).build()?;
//! let net = nn::Sequential::new(&[&conv, &nn::ReLU::new().build()?])?;
//! assert_eq!(net.forward(&ctorch::Tensor::from_slice(&[0f32; 28 * 28], &[1, 1, 28, 28])?)?.size(), [1, 6, 28, 28]);
//! assert_eq!(fc.num_parameters()?, 120 * 84);
//! # Ok(()) }
//! ```
//! Arguments left unset take PyTorch's defaults (the library applies them);
//! the same seed gives the same initial weights as torch.nn.

mod kinds_gen;
pub use kinds_gen::*;

use crate::{check, cstring, read_tensor_list, sys, take_string, DType, Device, Error, Result, Tensor, TensorDict};
use std::ffi::CString;
use std::fmt;
use std::os::raw::c_char;

/// A value written as constructor text (Python literal syntax, what ctorch_nn_new parses).
pub trait Lit {
    /// The Python literal text of the value.
    fn lit(&self) -> String;
}
impl Lit for i64 {
    fn lit(&self) -> String {
        self.to_string()
    }
}
impl Lit for f64 {
    fn lit(&self) -> String {
        if self.is_nan() {
            "float('nan')".into()
        } else if self.is_infinite() {
            if *self > 0.0 { "float('inf')".into() } else { "float('-inf')".into() }
        } else {
            format!("{self:?}")
        }
    }
}
impl Lit for bool {
    fn lit(&self) -> String {
        if *self { "True".into() } else { "False".into() }
    }
}
impl Lit for &str {
    fn lit(&self) -> String {
        let mut s = String::from("'");
        for c in self.chars() {
            match c {
                '\\' => s.push_str("\\\\"),
                '\'' => s.push_str("\\'"),
                '\n' => s.push_str("\\n"),
                c => s.push(c),
            }
        }
        s.push('\'');
        s
    }
}
impl Lit for DType {
    fn lit(&self) -> String {
        format!("torch.{}", self.python_name())
    }
}
impl Lit for Device {
    fn lit(&self) -> String {
        let t = match self.kind {
            crate::DeviceType::CPU => "cpu",
            crate::DeviceType::CUDA => "cuda",
            crate::DeviceType::META => "meta",
            crate::DeviceType::MPS => "mps",
            crate::DeviceType::XPU => "xpu",
            _ => "hip",
        };
        if self.index < 0 { format!("'{t}'") } else { format!("'{t}:{}'", self.index) }
    }
}

/// How a list of numbers is written: alone (one number), as a tuple (from a
/// Rust array, as Python code usually writes them) or as a list (from a slice or Vec).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// One number alone (`3`); more than one as a tuple.
    Lone,
    /// A tuple (`(3, 2)`).
    Tuple,
    /// A list (`[3, 2]`).
    List,
}

fn seq(items: Vec<String>, style: Style) -> String {
    match style {
        Style::Lone if items.len() == 1 => items[0].clone(),
        Style::List => format!("[{}]", items.join(", ")),
        _ if items.len() == 1 => format!("({},)", items[0]),
        _ => format!("({})", items.join(", ")),
    }
}

macro_rules! number_list {
    ($(#[$doc:meta])* $name:ident, $t:ty) => {
        $(#[$doc])*
        #[derive(Clone, Debug)]
        pub struct $name(pub Vec<$t>, pub Style);
        impl Lit for $name {
            fn lit(&self) -> String {
                seq(self.0.iter().map(|v| v.lit()).collect(), self.1)
            }
        }
        impl From<$t> for $name {
            fn from(v: $t) -> Self {
                $name(vec![v], Style::Lone)
            }
        }
        impl<const N: usize> From<[$t; N]> for $name {
            fn from(v: [$t; N]) -> Self {
                $name(v.to_vec(), Style::Tuple)
            }
        }
        impl<const N: usize> From<&[$t; N]> for $name {
            fn from(v: &[$t; N]) -> Self {
                $name(v.to_vec(), Style::Tuple)
            }
        }
        impl From<&[$t]> for $name {
            fn from(v: &[$t]) -> Self {
                $name(v.to_vec(), Style::List)
            }
        }
        impl From<Vec<$t>> for $name {
            fn from(v: Vec<$t>) -> Self {
                $name(v, Style::List)
            }
        }
    };
}
number_list!(
    /// An `int[N]` argument: one number (PyTorch repeats it N times), an array `[3, 2]`
    /// (written as the tuple `(3, 2)`) or a slice/Vec (written as a list).
    Ints, i64);
number_list!(
    /// An `int[]` argument: one number, an array (a tuple) or a slice/Vec (a list).
    IntList, i64);
number_list!(
    /// A `float[]` argument: one number, an array (a tuple) or a slice/Vec (a list).
    Floats, f64);

/// A `float` argument: an f64, or an integer written as one (`Dropout::new().p(0)`
/// keeps Python's `p=0` in the repr, as torch.nn keeps the value it was given).
#[derive(Clone, Copy, Debug)]
pub enum Float {
    /// An integer, written without a decimal point.
    Int(i64),
    /// A float.
    F(f64),
}
impl Lit for Float {
    fn lit(&self) -> String {
        match self {
            Float::Int(v) => v.lit(),
            Float::F(v) => v.lit(),
        }
    }
}
impl From<f64> for Float {
    fn from(v: f64) -> Self {
        Float::F(v)
    }
}
impl From<i32> for Float {
    fn from(v: i32) -> Self {
        Float::Int(v as i64)
    }
}
impl From<i64> for Float {
    fn from(v: i64) -> Self {
        Float::Int(v)
    }
}

/// None, for an optional argument whose default is not None (BatchNorm's `momentum`).
pub struct NoneLit;
impl Lit for NoneLit {
    fn lit(&self) -> String {
        "None".into()
    }
}

/// An `int[N]|str` argument (Conv's padding: `1`, `[1, 2]` or `"same"`).
#[derive(Clone, Debug)]
pub enum IntsOrStr {
    /// Numbers (`1`, `(1, 2)`).
    Ints(Ints),
    /// A string (`'same'`).
    Str(String),
}
impl Lit for IntsOrStr {
    fn lit(&self) -> String {
        match self {
            IntsOrStr::Ints(v) => v.lit(),
            IntsOrStr::Str(s) => s.as_str().lit(),
        }
    }
}
impl<T: Into<Ints>> From<T> for IntsOrStr {
    fn from(v: T) -> Self {
        IntsOrStr::Ints(v.into())
    }
}
impl From<&str> for IntsOrStr {
    fn from(v: &str) -> Self {
        IntsOrStr::Str(v.to_string())
    }
}

/// The constructor arguments a builder collected: text for values, handles for modules.
pub struct Args<'a> {
    kind: &'static str,
    parts: Vec<String>,
    names: Vec<&'static str>,
    mods: Vec<&'a Module>,
}

impl<'a> Args<'a> {
    pub(crate) fn new(kind: &'static str) -> Self {
        Args { kind, parts: Vec::new(), names: Vec::new(), mods: Vec::new() }
    }
    /// name=value (a later setting of the same name replaces the earlier one).
    pub(crate) fn set(&mut self, name: &'static str, v: &dyn Lit) {
        let prefix = format!("{name}=");
        self.parts.retain(|p| !p.starts_with(&prefix));
        self.parts.push(format!("{name}={}", v.lit()));
    }
    pub(crate) fn module(&mut self, name: &'static str, m: &'a Module) {
        if let Some(i) = self.names.iter().position(|n| *n == name) {
            self.names.remove(i);
            self.mods.remove(i);
        }
        self.names.push(name);
        self.mods.push(m);
    }
    pub(crate) fn text(&self) -> String {
        self.parts.join(", ")
    }
    pub(crate) fn build(self) -> Result<Module> {
        if self.mods.is_empty() {
            return Module::new(self.kind, &self.text());
        }
        crate::abi_once();
        let (k, a) = (cstring(self.kind)?, cstring(&self.text())?);
        let names: Vec<CString> = self.names.iter().map(|n| cstring(n)).collect::<Result<_>>()?;
        let np: Vec<*const c_char> = names.iter().map(|s| s.as_ptr()).collect();
        let hs: Vec<sys::ctorch_nn_module> = self.mods.iter().map(|m| m.h).collect();
        let mut h = std::ptr::null_mut();
        check(unsafe { sys::ctorch_nn_new_with_modules(&mut h, k.as_ptr(), a.as_ptr(), np.as_ptr(), hs.as_ptr(), hs.len()) })?;
        Module::own(h)
    }
}

/// A module (`ctorch_nn_module`): a built-in kind, a container, or one loaded.
/// Owns one reference; `Drop` frees it.
pub struct Module {
    pub(crate) h: sys::ctorch_nn_module,
}
unsafe impl Send for Module {}

impl Drop for Module {
    fn drop(&mut self) {
        unsafe { sys::ctorch_nn_module_free(self.h) }
    }
}

impl Module {
    /// Any built-in kind from its constructor text, as Python writes the call's
    /// arguments: `Module::new("Conv2d", "1, 6, 5, padding=2")`.
    pub fn new(kind: &str, args: &str) -> Result<Module> {
        crate::abi_once();
        let (k, a) = (cstring(kind)?, cstring(args)?);
        let mut h = std::ptr::null_mut();
        check(unsafe { sys::ctorch_nn_new(&mut h, k.as_ptr(), a.as_ptr()) })?;
        Module::own(h)
    }
    /// Takes ownership of a module handle (NULL is an error).
    ///
    /// # Safety
    /// `h` must be NULL or a module handle the caller owns (NEW from a `ctorch_*` call,
    /// not freed, not owned by another value): it is freed on Drop.
    pub unsafe fn from_raw(h: sys::ctorch_nn_module) -> Result<Module> {
        Module::own(h)
    }
    pub(crate) fn own(h: sys::ctorch_nn_module) -> Result<Module> {
        if h.is_null() {
            return Err(Error { status: sys::CTORCH_RUNTIME, message: "unexpected NULL module".into() });
        }
        Ok(Module { h })
    }
    /// The raw handle, still owned by this module.
    pub fn as_raw(&self) -> sys::ctorch_nn_module {
        self.h
    }

    /// `m(x)`: the first output.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let mut h = std::ptr::null_mut();
        check(unsafe { sys::ctorch_nn_module_forward(&mut h, self.h, x.h) })?;
        Tensor::own(h)
    }

    /// `m(*inputs, **kwargs)`: every output (None where Python returns None);
    /// `kwargs` as Python keyword text (`"need_weights=False"`, or "").
    pub fn forward_n(&self, inputs: &[Option<&Tensor>], kwargs: &str) -> Result<Vec<Option<Tensor>>> {
        const MAX: usize = 16;
        let hs: Vec<sys::ctorch_tensor> = inputs.iter().map(|t| t.map_or(std::ptr::null_mut(), |t| t.h)).collect();
        let kw = cstring(kwargs)?;
        let mut outs = [std::ptr::null_mut(); MAX];
        let mut n = 0usize;
        check(unsafe {
            sys::ctorch_nn_module_forward_n(self.h, hs.as_ptr(), hs.len(), kw.as_ptr(), outs.as_mut_ptr(), MAX, &mut n)
        })?;
        Ok(outs[..n].iter().map(|&h| Tensor::own_opt(h)).collect())
    }

    /// The submodule at a dotted path (`"fc1"`, `"layers.0"`) on one input: its
    /// first output (ctorch_nn_module_forward_child).
    pub fn forward_child(&self, path: &str, x: &Tensor) -> Result<Tensor> {
        let p = cstring(path)?;
        let mut h = std::ptr::null_mut();
        check(unsafe { sys::ctorch_nn_module_forward_child(&mut h, self.h, p.as_ptr(), x.h) })?;
        Tensor::own(h)
    }

    /// `torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm, norm_type)`:
    /// the total norm before clipping (ctorch_nn_module_clip_grad_norm_).
    pub fn clip_grad_norm_(&self, max_norm: f64, norm_type: f64, error_if_nonfinite: bool) -> Result<f64> {
        let mut total = 0.0;
        check(unsafe {
            sys::ctorch_nn_module_clip_grad_norm_(&mut total, self.h, max_norm, norm_type, error_if_nonfinite as i32)
        })?;
        Ok(total)
    }

    /// `torch.nn.utils.clip_grad_value_(model.parameters(), clip_value)`.
    pub fn clip_grad_value_(&self, clip_value: f64) -> Result<()> {
        check(unsafe { sys::ctorch_nn_module_clip_grad_value_(self.h, clip_value) })
    }

    /// The parameters, recursively, in Python's order (what an optimizer takes).
    pub fn parameters(&self) -> Result<Vec<Tensor>> {
        let mut l = std::ptr::null_mut();
        check(unsafe { sys::ctorch_nn_module_parameters(&mut l, self.h) })?;
        read_tensor_list(l)
    }

    /// `named_parameters()`: Python's dotted names, in its order.
    pub fn named_parameters(&self) -> Result<Vec<(String, Tensor)>> {
        let mut d = std::ptr::null_mut();
        check(unsafe { sys::ctorch_nn_module_named_parameters(&mut d, self.h, 1) })?;
        unsafe { TensorDict::from_raw(d) }.map_or(Ok(Vec::new()), |d| d.to_vec())
    }

    /// `state_dict()`: parameters and persistent buffers with Python's keys (sharing storage).
    pub fn state_dict(&self) -> Result<Vec<(String, Tensor)>> {
        let mut d = std::ptr::null_mut();
        check(unsafe { sys::ctorch_nn_module_state_dict(&mut d, self.h) })?;
        unsafe { TensorDict::from_raw(d) }.map_or(Ok(Vec::new()), |d| d.to_vec())
    }

    /// `load_state_dict(sd, strict)`; returns the library's report (missing/unexpected keys).
    pub fn load_state_dict(&self, sd: &TensorDict, strict: bool) -> Result<String> {
        let mut r: *mut c_char = std::ptr::null_mut();
        let st = unsafe { sys::ctorch_nn_module_load_state_dict(&mut r, self.h, sd.h, strict as i32) };
        let report = unsafe { take_string(r) };
        check(st).map(|_| report)
    }

    /// `train(mode)`; `eval()` is `train(false)`.
    pub fn train(&self, mode: bool) -> Result<()> {
        check(unsafe { sys::ctorch_nn_module_train(self.h, mode as i32) })
    }
    /// `eval()`: `train(false)`.
    pub fn eval(&self) -> Result<()> {
        self.train(false)
    }

    /// Python's `repr(module)`.
    pub fn repr(&self) -> Result<String> {
        let mut p: *mut c_char = std::ptr::null_mut();
        check(unsafe { sys::ctorch_nn_module_repr(&mut p, self.h) })?;
        Ok(unsafe { take_string(p) })
    }

    /// Registers a child under `name` (its parameters become this module's `name.*`).
    pub fn register_module(&self, name: &str, child: &Module) -> Result<()> {
        let n = cstring(name)?;
        check(unsafe { sys::ctorch_nn_module_register_module(self.h, n.as_ptr(), child.h) })
    }

    /// Appends a child to a Sequential or ModuleList ("0", "1", ...).
    pub fn push(&self, child: &Module) -> Result<()> {
        check(unsafe { sys::ctorch_nn_module_append(self.h, child.h) })
    }

    /// The submodule at a dotted path (`"features.0"`; `""` is this module), as
    /// `model.get_submodule(path)`: a new handle to the same module, so what is
    /// done through it (training, freezing) is done to the tree.
    ///
    /// ```
    /// # fn main() -> ctorch::Result<()> {
    /// use ctorch::nn::{Module, Sequential};
    /// let body = Sequential::named(&[("fc", "Linear", "4, 8"), ("act", "ReLU", "")])?;
    /// let net = Sequential::new(&[&body, &Module::new("Linear", "8, 2")?])?;
    /// let names: Vec<String> = net.named_parameters()?.into_iter().map(|(n, _)| n).collect();
    /// assert_eq!(names, ["0.fc.weight", "0.fc.bias", "1.weight", "1.bias"]); // named parameter paths
    /// net.get("0")?.set_requires_grad(false)?;                               // freeze a sub-tree
    /// let trainable: Vec<bool> = net.parameters()?.iter().map(|p| p.requires_grad()).collect();
    /// assert_eq!(trainable, [false, false, true, true]);
    /// assert_eq!(net.get("0.fc")?.num_parameters()?, 4 * 8 + 8);
    /// assert!(net.get("0.nope").is_err());
    /// # Ok(()) }
    /// ```
    pub fn get(&self, path: &str) -> Result<Module> {
        crate::capi::nn_module_get(self, path)
    }
    /// Sets `requires_grad` of every parameter of this module and its children,
    /// as `for p in m.parameters(): p.requires_grad_(on)`. Freezing a sub-tree:
    /// `net.get("features")?.set_requires_grad(false)?` (its parameters then get
    /// no gradient, so an optimizer over all of them leaves them unchanged).
    pub fn set_requires_grad(&self, on: bool) -> Result<()> {
        for p in self.parameters()? {
            p.requires_grad_(on)?;
        }
        Ok(())
    }
    /// The number of parameters' elements.
    pub fn num_parameters(&self) -> Result<i64> {
        Ok(self.parameters()?.iter().map(|p| p.numel()).sum())
    }
}

impl fmt::Display for Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.repr() {
            Ok(s) => f.write_str(&s),
            Err(e) => write!(f, "<module: {e}>"),
        }
    }
}

/// `torch.nn.Sequential(*modules)`: its forward runs them in order.
pub struct Sequential;
impl Sequential {
    /// `Sequential(*modules)` (children named "0", "1", ...).
    pub fn new(modules: &[&Module]) -> Result<Module> {
        let m = Module::new("Sequential", "")?;
        for c in modules {
            m.push(c)?;
        }
        Ok(m)
    }
}

/// `torch.nn.ModuleList(modules)`.
pub struct ModuleList;
impl ModuleList {
    /// `ModuleList(modules)`.
    pub fn new(modules: &[&Module]) -> Result<Module> {
        let m = Module::new("ModuleList", "")?;
        for c in modules {
            m.push(c)?;
        }
        Ok(m)
    }
}

/// `torch.nn.ModuleDict(dict)`: the entries in order.
pub struct ModuleDict;
impl ModuleDict {
    /// `ModuleDict(dict)`, in the given order.
    pub fn new(modules: &[(&str, &Module)]) -> Result<Module> {
        let m = Module::new("ModuleDict", "")?;
        for (n, c) in modules {
            m.register_module(n, c)?;
        }
        Ok(m)
    }
}
