//! Optimizers (`torch.optim`) and learning-rate schedules (`torch.optim.lr_scheduler`)
//! over ctorch_optimizer_* / ctorch_lr_scheduler_*.
//!
//! ```
//! # fn main() -> ctorch::Result<()> {
//! # let params = vec![ctorch::Tensor::from_slice(&[1f32, 2.0], &[2])?.requires_grad_(true)?];
//! use ctorch::optim::{Optimizer, OptimOptions, LrScheduler};
//! use ctorch::{OptimizerKind, LrSchedule};
//! let opt = Optimizer::new(OptimizerKind::ADAMW, &params, OptimOptions::new(OptimizerKind::ADAMW).lr(1e-3))?;
//! let sched = LrScheduler::step_lr(&opt, 10, 0.5)?;       // StepLR(opt, step_size=10, gamma=0.5)
//! for _ in 0..10 { opt.step()?; sched.step()?; }
//! assert_eq!(opt.lr(0)?, 5e-4);
//! # Ok(()) }
//! ```
use crate::{check, sys, Error, LrSchedule, OptimizerKind, Result, Tensor};

pub use crate::{LrScheduler, Optimizer};

/// An optimizer's hyper-parameters (`ctorch_optim_options`), starting from PyTorch's
/// defaults for a kind; set what you change (`.lr(1e-3).weight_decay(0.01)`).
#[derive(Clone, Copy, Debug)]
pub struct OptimOptions(pub sys::ctorch_optim_options);

macro_rules! setters {
    ($t:ident; $($f:ident: $ty:ty),*) => {
        impl $t {
            $(
                #[doc = concat!("Sets `", stringify!($f), "`.")]
                pub fn $f(mut self, v: $ty) -> Self { self.0.$f = v as _; self }
            )*
        }
    };
}

impl OptimOptions {
    /// PyTorch's defaults for `kind` (ctorch_optim_options_default).
    pub fn new(kind: OptimizerKind) -> OptimOptions {
        let mut o = unsafe { std::mem::zeroed::<sys::ctorch_optim_options>() };
        unsafe { sys::ctorch_optim_options_default(&mut o, kind.0) };
        OptimOptions(o)
    }
}
setters!(OptimOptions; lr: f64, weight_decay: f64, momentum: f64, dampening: f64, nesterov: bool, amsgrad: bool,
         centered: bool, beta1: f64, beta2: f64, eps: f64, alpha: f64, lr_decay: f64, initial_accumulator_value: f64);

impl Optimizer {
    /// An optimizer of `kind` over `params` (leaves; the optimizer keeps references).
    pub fn new(kind: OptimizerKind, params: &[Tensor], options: OptimOptions) -> Result<Optimizer> {
        let hs: Vec<sys::ctorch_tensor> = params.iter().map(|t| t.h).collect();
        let mut h = std::ptr::null_mut();
        check(unsafe { sys::ctorch_optimizer_new(&mut h, kind.0, hs.as_ptr(), hs.len(), &options.0) })?;
        unsafe { Optimizer::from_raw(h) }.ok_or_else(|| Error { status: sys::CTORCH_RUNTIME, message: "NULL optimizer".into() })
    }
    /// `torch.optim.X(model.parameters(), ...)`: an optimizer of `kind` over every
    /// parameter of `module`, recursive, in Python's order (ctorch_optimizer_new_from_module).
    pub fn from_module(kind: OptimizerKind, module: &crate::nn::Module, options: OptimOptions) -> Result<Optimizer> {
        let mut h = std::ptr::null_mut();
        check(unsafe { sys::ctorch_optimizer_new_from_module(&mut h, kind.0, module.h, &options.0) })?;
        unsafe { Optimizer::from_raw(h) }.ok_or_else(|| Error { status: sys::CTORCH_RUNTIME, message: "NULL optimizer".into() })
    }
    /// `torch.optim.SGD(params, lr, momentum)`.
    pub fn sgd(params: &[Tensor], lr: f64, momentum: f64) -> Result<Optimizer> {
        Self::new(OptimizerKind::SGD, params, OptimOptions::new(OptimizerKind::SGD).lr(lr).momentum(momentum))
    }
    /// `torch.optim.Adam(params, lr)`.
    pub fn adam(params: &[Tensor], lr: f64) -> Result<Optimizer> {
        Self::new(OptimizerKind::ADAM, params, OptimOptions::new(OptimizerKind::ADAM).lr(lr))
    }
    /// `torch.optim.AdamW(params, lr)` (weight_decay 0.01 as PyTorch's default).
    pub fn adamw(params: &[Tensor], lr: f64) -> Result<Optimizer> {
        Self::new(OptimizerKind::ADAMW, params, OptimOptions::new(OptimizerKind::ADAMW).lr(lr))
    }
    /// One update of every parameter that has a gradient.
    pub fn step(&self) -> Result<()> {
        check(unsafe { sys::ctorch_optimizer_step(self.h) })
    }
    /// Clears the gradients (set_to_none: drops them, PyTorch 2's default).
    pub fn zero_grad(&self, set_to_none: bool) -> Result<()> {
        check(unsafe { sys::ctorch_optimizer_zero_grad(self.h, set_to_none as i32) })
    }
    /// `opt.add_param_group({"params": params, ...})`: a new param group with options
    /// of its own (a smaller lr for a pretrained backbone, no weight decay for
    /// biases), after the optimizer was made; groups are numbered from 0 in order.
    ///
    /// ```
    /// # fn main() -> ctorch::Result<()> {
    /// use ctorch::{nn::Sequential, optim::{OptimOptions, Optimizer}, OptimizerKind};
    /// let net = Sequential::named(&[("backbone", "Linear", "4, 8"), ("head", "Linear", "8, 2")])?;
    /// let opt = Optimizer::sgd(&net.get("head")?.parameters()?, 0.1, 0.9)?;
    /// opt.add_param_group(&net.get("backbone")?.parameters()?, OptimOptions::new(OptimizerKind::SGD).lr(1e-3))?;
    /// assert_eq!((opt.num_param_groups()?, opt.lr(0)?, opt.lr(1)?), (2, 0.1, 1e-3));
    /// # Ok(()) }
    /// ```
    pub fn add_param_group(&self, params: &[Tensor], options: OptimOptions) -> Result<()> {
        let hs: Vec<sys::ctorch_tensor> = params.iter().map(|t| t.h).collect();
        check(unsafe { sys::ctorch_optimizer_add_param_group(self.h, hs.as_ptr(), hs.len(), &options.0) })
    }
    /// Number of param groups.
    pub fn num_param_groups(&self) -> Result<usize> {
        let mut n = 0usize;
        check(unsafe { sys::ctorch_optimizer_num_param_groups(&mut n, self.h) })?;
        Ok(n)
    }
    /// Learning rate of param group `group`.
    pub fn lr(&self, group: usize) -> Result<f64> {
        let mut v = 0.0;
        check(unsafe { sys::ctorch_optimizer_get_lr(&mut v, self.h, group) })?;
        Ok(v)
    }
    /// Sets the learning rate of param group `group`.
    pub fn set_lr(&self, group: usize, lr: f64) -> Result<()> {
        check(unsafe { sys::ctorch_optimizer_set_lr(self.h, group, lr) })
    }
}

/// A schedule's options (`ctorch_lr_schedule_options`), from PyTorch's defaults for a kind.
#[derive(Clone, Copy, Debug)]
pub struct LrScheduleOptions(pub sys::ctorch_lr_schedule_options);

impl LrScheduleOptions {
    /// PyTorch's defaults for `kind` (ctorch_lr_schedule_options_default).
    pub fn new(kind: LrSchedule) -> LrScheduleOptions {
        let mut o = unsafe { std::mem::zeroed::<sys::ctorch_lr_schedule_options>() };
        unsafe { sys::ctorch_lr_schedule_options_default(&mut o, kind.0) };
        LrScheduleOptions(o)
    }
}
setters!(LrScheduleOptions; step_size: i64, gamma: f64, factor: f64, start_factor: f64, end_factor: f64,
         total_iters: i64, power: f64, t_max: i64, eta_min: f64, t_0: i64, t_mult: i64, base_lr: f64, max_lr: f64,
         step_size_up: i64, step_size_down: i64, cycle_momentum: bool, base_momentum: f64, max_momentum: f64,
         total_steps: i64, pct_start: f64, anneal_linear: bool, div_factor: f64, final_div_factor: f64,
         three_phase: bool, patience: i64, threshold: f64, cooldown: i64, min_lr: f64, eps: f64);

impl LrScheduler {
    /// A schedule of `kind` on `opt` (the scheduler keeps the optimizer alive).
    pub fn new(opt: &Optimizer, kind: LrSchedule, options: LrScheduleOptions) -> Result<LrScheduler> {
        let mut h = std::ptr::null_mut();
        check(unsafe { sys::ctorch_lr_scheduler_new(&mut h, opt.h, kind.0, &options.0) })?;
        unsafe { LrScheduler::from_raw(h) }.ok_or_else(|| Error { status: sys::CTORCH_RUNTIME, message: "NULL scheduler".into() })
    }
    /// `StepLR(opt, step_size, gamma)`.
    pub fn step_lr(opt: &Optimizer, step_size: i64, gamma: f64) -> Result<LrScheduler> {
        Self::new(opt, LrSchedule::STEP, LrScheduleOptions::new(LrSchedule::STEP).step_size(step_size).gamma(gamma))
    }
    /// `CosineAnnealingLR(opt, T_max, eta_min)`.
    pub fn cosine(opt: &Optimizer, t_max: i64, eta_min: f64) -> Result<LrScheduler> {
        Self::new(opt, LrSchedule::COSINE, LrScheduleOptions::new(LrSchedule::COSINE).t_max(t_max).eta_min(eta_min))
    }
    /// `OneCycleLR(opt, max_lr, total_steps)`.
    pub fn one_cycle(opt: &Optimizer, max_lr: f64, total_steps: i64) -> Result<LrScheduler> {
        Self::new(opt, LrSchedule::ONE_CYCLE,
                  LrScheduleOptions::new(LrSchedule::ONE_CYCLE).max_lr(max_lr).total_steps(total_steps))
    }
    /// Advances one step (an epoch for most schedules) and writes the new lr into the groups.
    pub fn step(&self) -> Result<()> {
        check(unsafe { sys::ctorch_lr_scheduler_step(self.h) })
    }
}
