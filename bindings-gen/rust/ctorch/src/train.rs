//! Shortcuts for a training loop, as tch-rs and the C examples have them:
//! an optimizer step from a loss, a named `Sequential` from
//! constructor texts, accuracy counts and loader-wide top-k accuracy, and
//! `inference_mode`.
//!
//! ```
//! # fn main() -> ctorch::Result<()> {
//! use ctorch::{nn, optim::Optimizer, DataLoader, Tensor};
//! # let (x, y) = (Tensor::from_slice(&[0f32; 4], &[1, 4])?, Tensor::from_slice(&[0i64], &[1])?);
//! let net = nn::Sequential::named(&[("fc1", "Linear", "4, 8"), ("relu", "ReLU", ""), ("fc2", "Linear", "8, 3")])?;
//! let opt = Optimizer::adamw(&net.parameters()?, 1e-3)?;
//! let mut loader = DataLoader::new(&x, Some(&y), 1, true, 1, false)?;
//! for batch in loader.epoch(0)? {
//!     let (x, y) = batch?;
//!     let logits = net.forward(&x)?;
//!     opt.backward_step(&logits.cross_entropy_loss(&y)?)?;   // zero_grad, backward, step
//!     let _right = logits.top_k_hits(&y, 1)?;                 // rows predicted right
//! }
//! let acc = net.top_k_accuracy(&mut loader, &[1])?[0];
//! assert!((0.0..=1.0).contains(&acc));
//! # Ok(()) }
//! ```
use crate::{capi, nn, ops, AutogradScopeKind, DataLoader, Error, Optimizer, Result, Tensor};

impl Optimizer {
    /// `opt.zero_grad(); loss.backward(); opt.step()` (tch-rs's `backward_step`):
    /// gradients set to None first (PyTorch 2's default), so only this loss's count.
    pub fn backward_step(&self, loss: &Tensor) -> Result<()> {
        self.zero_grad(true)?;
        loss.backward()?;
        self.step()
    }
}

/// Runs `f` under `torch.inference_mode()` on this thread (no graph, no version
/// counters; tensors made inside cannot be used in autograd later).
pub fn inference_mode<T>(f: impl FnOnce() -> T) -> T {
    let _scope = capi::autograd_scope_enter(AutogradScopeKind::INFERENCE_MODE)
        .unwrap_or_else(|e| panic!("inference_mode: {e}"));
    f()
}

impl Tensor {
    /// The number of rows of these scores `[N, C]` whose `target` class (int64 `[N]`)
    /// is among the `k` highest (`k` = 1: the argmax, as accuracy counts it), without
    /// recording a graph. Ties among equal scores are broken as argmax and topk break them.
    pub fn top_k_hits(&self, target: &Tensor, k: i64) -> Result<i64> {
        crate::no_grad(|| {
            let hit = if k == 1 {
                ops::eq_Tensor(&ops::argmax(self, Some(1), false)?, target)?
            } else {
                ops::eq_Tensor(&ops::topk(self, k, 1, true, true)?.1, &ops::unsqueeze(target, 1)?)?
            };
            capi::tensor_item_int64(&ops::sum(&hit, None)?)
        })
    }
}

impl nn::Module {
    /// Top-k accuracy for each `k` in `ks` over one pass of `loader` (epoch 0; batches of
    /// `(inputs, int64 labels)`), from the counts of [`Tensor::top_k_hits`], under
    /// [`inference_mode`], in the module's current mode (call `eval()` first for
    /// dropout or batch norm). The C examples' `nn_count_on`.
    pub fn top_k_accuracy(&self, loader: &mut DataLoader, ks: &[i64]) -> Result<Vec<f64>> {
        inference_mode(|| {
            let (mut hits, mut rows) = (vec![0i64; ks.len()], 0i64);
            for batch in loader.epoch(0)? {
                let (x, y) = batch?;
                let logits = self.forward(&x)?;
                for (h, &k) in hits.iter_mut().zip(ks) {
                    *h += logits.top_k_hits(&y, k)?;
                }
                rows += y.numel();
            }
            if rows == 0 {
                return Err(Error::binding("top_k_accuracy: the loader has no rows"));
            }
            Ok(hits.iter().map(|&h| h as f64 / rows as f64).collect())
        })
    }
}

impl nn::Sequential {
    /// `torch.nn.Sequential(OrderedDict(...))` from `(name, kind, constructor arguments)`:
    /// each child is `Module::new(kind, args)`, made in order (the order of the random
    /// draws), registered under `name` (the state-dict keys: `name.weight`, ...).
    pub fn named(layers: &[(&str, &str, &str)]) -> Result<nn::Module> {
        let net = nn::Module::new("Sequential", "")?;
        for (name, kind, args) in layers {
            net.register_module(name, &nn::Module::new(kind, args)?)?;
        }
        Ok(net)
    }
}
