//! Batches as an iterator (`torch.utils.data.DataLoader`) and the idiomatic
//! faces of a few header functions that `capi` has in C form.
//!
//! ```no_run
//! # fn main() -> ctorch::Result<()> {
//! # let (x, y) = ctorch::read_mnist("/usr/share/datasets/fashion-mnist", true)?;
//! use ctorch::DataLoader;
//! let mut loader = DataLoader::new(&x, Some(&y), 256, true, 1, false)?;
//! for epoch in 0..2 {
//!     for batch in loader.epoch(epoch)? {
//!         let (images, labels) = batch?;
//!         // ... a training step
//!     }
//! }
//! # Ok(()) }
//! ```
use crate::{capi, nn, Device, Error, Result, Tensor};

impl crate::DataLoader {
    /// `DataLoader(TensorDataset(data, targets), batch_size, shuffle, drop_last)`: batches
    /// along dimension 0; shuffled per epoch with a generator seeded from `seed` and the
    /// epoch (ctorch_data_loader_new; the loader keeps its own references).
    pub fn new(data: &Tensor, targets: Option<&Tensor>, batch_size: i64, shuffle: bool, seed: u64,
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
