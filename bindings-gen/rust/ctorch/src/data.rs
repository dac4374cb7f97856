//! Batches as an iterator (`torch.utils.data.DataLoader`) and the idiomatic
//! faces of a few header functions that `capi` has in C form.
//!
//! ```
//! # fn main() -> ctorch::Result<()> {
//! # // (ctorch::read_mnist(dir, true)? in a real program)
//! # let (x, y) = (ctorch::Tensor::from_slice(&[0u8; 600 * 4], &[600, 2, 2])?, ctorch::Tensor::from_slice(&[1i64; 600], &[600])?);
//! use ctorch::DataLoader;
//! let mut loader = DataLoader::new(&x, Some(&y), 256, true, 1, false)?;
//! for epoch in 0..2 {
//!     let mut seen = 0;
//!     for batch in loader.epoch(epoch)? {
//!         let (images, labels) = batch?;
//!         // ... a training step
//!         seen += labels.numel();
//!     }
//!     assert_eq!(seen, 600); // 256 + 256 + 88
//! }
//! # Ok(()) }
//! ```
use crate::{capi, nn, Device, Error, Result, Tensor};

impl crate::DataLoader {
    /// `DataLoader(TensorDataset(data, targets), batch_size, shuffle, drop_last)`: batches
    /// along dimension 0; shuffled per epoch with a generator seeded from `seed` and the
    /// epoch (ctorch_data_loader_new; the loader keeps its own references); seed: [`crate::IntoSeed`].
    pub fn new(data: &Tensor, targets: Option<&Tensor>, batch_size: i64, shuffle: bool, seed: impl crate::IntoSeed,
               drop_last: bool) -> Result<crate::DataLoader> {
        capi::data_loader_new(data, targets, batch_size, shuffle, seed, drop_last)
    }
    /// Starts epoch `epoch` (reshuffles, rewinds) and iterates its batches.
    pub fn epoch(&mut self, epoch: u64) -> Result<Batches<'_>> {
        capi::data_loader_start_epoch(self, epoch)?;
        Ok(Batches { loader: self, done: false })
    }
    /// The remaining batches of the current epoch (epoch 0 on a new loader).
    pub fn batches(&mut self) -> Batches<'_> {
        Batches { loader: self, done: false }
    }
    /// Batches per epoch.
    pub fn num_batches(&self) -> Result<i64> {
        capi::data_loader_num_batches(self)
    }
}

/// The batches of one epoch: `(data, targets)`, or the error that ended it. A loader
/// made without targets yields an error (use [`capi::data_loader_next`] for data alone).
pub struct Batches<'a> {
    loader: &'a mut crate::DataLoader,
    done: bool,
}

impl Iterator for Batches<'_> {
    type Item = Result<(Tensor, Tensor)>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let r = match capi::data_loader_next(self.loader) {
            Ok((false, _, _)) => None,
            Ok((true, Some(x), Some(y))) => Some(Ok((x, y))),
            Ok((true, _, _)) => Some(Err(Error::binding("the loader has no targets: use capi::data_loader_next"))),
            Err(e) => Some(Err(e)),
        };
        self.done = !matches!(r, Some(Ok(_)));
        r
    }
}

impl<'a> IntoIterator for &'a mut crate::DataLoader {
    type Item = Result<(Tensor, Tensor)>;
    type IntoIter = Batches<'a>;
    fn into_iter(self) -> Batches<'a> {
        self.batches()
    }
}

impl Tensor {
    /// `t.to(device)`: a copy on `device` (this tensor itself when it is already there).
    pub fn to_device(&self, device: Device) -> Result<Tensor> {
        capi::tensor_to_device(self, device)
    }
    /// `torch.save(t, path)` (ctorch_save).
    pub fn save(&self, path: &str) -> Result<()> {
        capi::save(path, self)
    }
    /// `torch.load(path)` of a file holding one tensor (ctorch_load).
    pub fn load(path: &str) -> Result<Tensor> {
        capi::load(path)
    }
}

impl nn::Module {
    /// `m.to(device)`: moves the parameters and buffers in place.
    pub fn to_device(&self, device: Device) -> Result<()> {
        capi::nn_module_to(self, Some(device), None)
    }
    /// `torch.save(m.state_dict(), path)`.
    pub fn save(&self, path: &str) -> Result<()> {
        let sd = self.state_dict()?;
        let names: Vec<&str> = sd.iter().map(|(n, _)| n.as_str()).collect();
        let ts: Vec<&Tensor> = sd.iter().map(|(_, t)| t).collect();
        capi::save_dict(path, &names, &ts)
    }
    /// `m.load_state_dict(torch.load(path))`, strict; returns the library's report.
    pub fn load(&self, path: &str) -> Result<String> {
        self.load_state_dict(&capi::load_dict(path)?, true)
    }
}

/// `torch.cuda.is_available()`.
pub fn cuda_is_available() -> bool {
    capi::cuda_is_available().unwrap_or(false)
}

/// `torch.set_num_threads(n)`.
pub fn set_num_threads(n: i32) -> Result<()> {
    capi::set_num_threads(n)
}

// ---- bytes and streams: torch.save and NumPy files through
// std::io::Write / Read, with the bytes of the file forms ----

/// The bytes a `ctorch_*_to_buffer` function copies out: asks for the
/// length, then fills a buffer of that size (the C convention).
fn copy_out(f: impl Fn(*mut usize, *mut std::ffi::c_void, usize) -> crate::sys::ctorch_status) -> Result<Vec<u8>> {
    let mut len = 0usize;
    crate::check(f(&mut len, std::ptr::null_mut(), 0))?;
    let mut v = vec![0u8; len];
    let mut len2 = 0usize;
    crate::check(f(&mut len2, v.as_mut_ptr().cast(), v.len()))?;
    v.truncate(len2.min(len));
    Ok(v)
}

fn io_error(e: std::io::Error) -> Error {
    Error { status: crate::sys::CTORCH_IO, message: e.to_string() }
}

fn read_all<R: std::io::Read>(mut r: R) -> Result<Vec<u8>> {
    let mut v = Vec::new();
    r.read_to_end(&mut v).map_err(io_error)?;
    Ok(v)
}

/// Bytes and streams: `torch.save`/`torch.load` and NumPy's `.npy`/`.npz`
/// through any `std::io::Write`/`Read` (a `Vec<u8>`, a file, a socket).
///
/// ```
/// # fn main() -> ctorch::Result<()> {
/// use ctorch::{capi, Tensor, TensorDict};
/// let t = Tensor::try_from(vec![vec![1.0f32, 2.0], vec![3.0, 4.0]])?;
/// let mut bytes = Vec::new();
/// t.save_to(&mut bytes)?;                         // torch.save(t, f)
/// assert!(Tensor::load_from(&bytes[..])? == t);   // torch.load(f)
/// let mut npy = Vec::new();
/// t.write_npy(&mut npy)?;                         // numpy.save(f, t): NumPy's bytes
/// assert_eq!(&npy[..6], b"\x93NUMPY");
/// assert!(Tensor::read_npy(&npy[..])? == t);
/// let d: TensorDict = capi::tensor_dict_new()?;   // a state dict
/// capi::tensor_dict_set(&d, "weight", &t)?;
/// let mut sd = Vec::new();
/// d.save_to(&mut sd)?;
/// let back = TensorDict::load_from(std::io::Cursor::new(sd))?;
/// assert_eq!(back.entry(0)?.0, "weight");
/// # Ok(()) }
/// ```
impl Tensor {
    /// `torch.save(t, w)`: the bytes [`Tensor::save`] writes, to any writer.
    pub fn save_to<W: std::io::Write>(&self, mut w: W) -> Result<()> {
        let b = copy_out(|l, p, c| unsafe { crate::sys::ctorch_save_to_buffer(l, p, c, self.h) })?;
        w.write_all(&b).map_err(io_error)
    }
    /// `torch.load(r)` of one tensor (r is read to its end).
    pub fn load_from<R: std::io::Read>(r: R) -> Result<Tensor> {
        capi::load_from_buffer(&read_all(r)?)
    }
    /// `numpy.save(w, t)`: the same bytes NumPy writes.
    pub fn write_npy<W: std::io::Write>(&self, mut w: W) -> Result<()> {
        let b = copy_out(|l, p, c| unsafe { crate::sys::ctorch_npy_save_to_buffer(l, p, c, self.h) })?;
        w.write_all(&b).map_err(io_error)
    }
    /// `numpy.load(r)` of a .npy array (r is read to its end).
    pub fn read_npy<R: std::io::Read>(r: R) -> Result<Tensor> {
        capi::npy_load_from_buffer(&read_all(r)?)
    }
    /// `numpy.save(path, t)`.
    pub fn save_npy(&self, path: &str) -> Result<()> {
        capi::npy_save(path, self)
    }
    /// `numpy.load(path)` of a .npy file.
    pub fn load_npy(path: &str) -> Result<Tensor> {
        capi::npy_load(path)
    }
    /// Python's `str(t)` under `torch.set_printoptions(precision, threshold,
    /// edgeitems, linewidth, sci_mode)`; `None` takes PyTorch's default
    /// (`Display` prints with every default).
    ///
    /// ```
    /// # fn main() -> ctorch::Result<()> {
    /// use ctorch::Tensor;
    /// let t = Tensor::try_from(vec![vec![1.0f32, 2.5], vec![-3.0, 4.0]])?;
    /// assert_eq!(t.to_string(), "tensor([[ 1.0000,  2.5000],\n        [-3.0000,  4.0000]])");
    /// assert_eq!(t.format(Some(1), None, None, None, None)?, "tensor([[ 1.0,  2.5],\n        [-3.0,  4.0]])");
    /// assert_eq!(format!("{t:?}"), "Tensor([2, 2], FLOAT32)");     // Debug: shape and dtype
    /// let long = ctorch::ops::arange(11000.into(), None, None, None, None)?;
    /// assert_eq!(long.to_string(), "tensor([    0,     1,     2,  ..., 10997, 10998, 10999])"); // summarised
    /// # Ok(()) }
    /// ```
    pub fn format(&self, precision: Option<i64>, threshold: Option<i64>, edgeitems: Option<i64>,
                  linewidth: Option<i64>, sci_mode: Option<bool>) -> Result<String> {
        capi::tensor_format(self, precision.unwrap_or(-1), threshold.unwrap_or(-1), edgeitems.unwrap_or(-1),
                            linewidth.unwrap_or(-1), sci_mode.map_or(-1, |s| s as std::os::raw::c_int))
    }
}

impl crate::TensorDict {
    /// `torch.save(state_dict, w)`.
    pub fn save_to<W: std::io::Write>(&self, mut w: W) -> Result<()> {
        let b = copy_out(|l, p, c| unsafe { crate::sys::ctorch_tensor_dict_save_to_buffer(l, p, c, self.h) })?;
        w.write_all(&b).map_err(io_error)
    }
    /// `torch.load(r)` of a dict of tensors (a state dict; r is read to its end).
    pub fn load_from<R: std::io::Read>(r: R) -> Result<crate::TensorDict> {
        capi::load_dict_from_buffer(&read_all(r)?)
    }
    /// `numpy.savez(w, **d)`.
    pub fn write_npz<W: std::io::Write>(&self, mut w: W) -> Result<()> {
        let b = copy_out(|l, p, c| unsafe { crate::sys::ctorch_npz_save_to_buffer(l, p, c, self.h) })?;
        w.write_all(&b).map_err(io_error)
    }
    /// `numpy.load(r)` of a .npz archive (savez or savez_compressed).
    pub fn read_npz<R: std::io::Read>(r: R) -> Result<crate::TensorDict> {
        capi::npz_load_from_buffer(&read_all(r)?)
    }
}

impl nn::Module {
    /// `torch.save(m.state_dict(), w)`: the state dict as [`nn::Module::save`]
    /// writes it, to any writer (a `Vec<u8>`, an object store's upload).
    ///
    /// ```
    /// # fn main() -> ctorch::Result<()> {
    /// use ctorch::nn::Module;
    /// let (a, b) = (Module::new("Linear", "3, 2")?, Module::new("Linear", "3, 2")?);
    /// let mut bytes = Vec::new();
    /// a.save_to(&mut bytes)?;
    /// b.load_from(&bytes[..])?;                       // strict: every key must match
    /// assert!(a.parameters()?[0] == b.parameters()?[0]);
    /// assert!(Module::new("Linear", "3, 4")?.load_from(&bytes[..]).is_err()); // shapes differ
    /// # Ok(()) }
    /// ```
    pub fn save_to<W: std::io::Write>(&self, w: W) -> Result<()> {
        let d = capi::tensor_dict_new()?;
        for (name, t) in self.state_dict()? {
            capi::tensor_dict_set(&d, &name, &t)?;
        }
        d.save_to(w)
    }
    /// `m.load_state_dict(torch.load(r))`, strict (r is read to its end);
    /// returns the library's report.
    pub fn load_from<R: std::io::Read>(&self, r: R) -> Result<String> {
        self.load_state_dict(&crate::TensorDict::load_from(r)?, true)
    }
}

impl crate::Optimizer {
    /// `torch.save(opt.state_dict(), w)` (the bytes of `capi::optimizer_save_state_dict`).
    pub fn save_to<W: std::io::Write>(&self, mut w: W) -> Result<()> {
        let b = copy_out(|l, p, c| unsafe { crate::sys::ctorch_optimizer_save_state_dict_to_buffer(l, p, c, self.h) })?;
        w.write_all(&b).map_err(io_error)
    }
    /// `opt.load_state_dict(torch.load(r))` (r is read to its end).
    pub fn load_from<R: std::io::Read>(&self, r: R) -> Result<()> {
        capi::optimizer_load_state_dict_from_buffer(self, &read_all(r)?)
    }
}
