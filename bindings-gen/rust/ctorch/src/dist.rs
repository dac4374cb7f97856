//! Training past one process: torch.distributed's vocabulary over ctorch's
//! process groups (c10d's Gloo; NCCL where ctorch is built with it), for
//! programs that torchrun starts or that meet at a TCPStore.
//!
//! [`init_process_group`] reads torchrun's environment (`MASTER_ADDR`,
//! `MASTER_PORT`, `RANK`, `WORLD_SIZE`, `LOCAL_RANK`), as Python's
//! `init_process_group(init_method="env://")`; [`init_process_group_with_store`]
//! joins the ranks that meet at a [`TcpStore`]. The [`ProcessGroup`] it returns
//! has the collectives as methods (`all_reduce`, `broadcast`, `all_gather`,
//! `barrier`, `send`, `recv`) and ctorch's data-parallel helpers
//! (`average_gradients` after backward, `broadcast_parameters` before training).
//! The wire is c10d's own: ranks of this crate, of ctorch's C API, of the other
//! bindings and of PyTorch's `torch.distributed` of the same generation share a
//! group. Every call that fails returns an [`Error`] naming the C
//! function; dropping the group closes it ([`ProcessGroup::destroy`] reports
//! how the shutdown went).
//!
//! [`DistributedDataParallel`] is torch.nn.parallel.DistributedDataParallel
//! over c10d's own Reducer: its forward arms the Reducer, so that the buckets'
//! all-reduces run during backward and every `.grad` holds the group's average
//! when backward returns (no `average_gradients` call);
//! [`DistributedDataParallel::no_sync`] is `no_sync()`, for gradient
//! accumulation.
//!
//! What differs from torch.distributed: there is no default group (the methods
//! are the group's); `ReduceOp::AVG` works on Gloo (a SUM, then a division);
//! `recv` needs its `src`.
use crate::nn::Module;
use crate::{capi, Error, Result, Tensor};
use std::cell::Cell;
use std::os::raw::c_int;
use std::time::Duration;

pub use crate::ReduceOp;

/// Milliseconds for the C calls: `None` is 0, the C default (30 minutes for a
/// group, 300 s for a store); a zero duration is refused (C would read it as
/// the default, not as "no wait").
fn millis(what: &str, timeout: Option<Duration>) -> Result<i64> {
    match timeout {
        None => Ok(0),
        Some(d) if d.is_zero() => Err(Error::binding(format!("ctorch::dist::{what}: timeout 0 is not a positive duration"))),
        Some(d) => Ok(i64::try_from(d.as_millis()).unwrap_or(i64::MAX).max(1)),
    }
}

/// A rank or count as the C `int` the functions take.
fn c_int_arg(what: &str, arg: &str, v: usize) -> Result<c_int> {
    c_int::try_from(v).map_err(|_| Error::binding(format!("ctorch::dist::{what}: {arg} {v} is out of range")))
}

/// torch.distributed.TCPStore: the key-value store ranks meet at. The master
/// (`is_master`) serves it; port 0 lets the OS pick one (read it with
/// [`TcpStore::port`]). Freed on drop (groups built on it keep their own
/// reference).
pub struct TcpStore {
    store: crate::Store,
}

impl TcpStore {
    /// Connects to (`is_master`: serves) the store at `host:port`. `world_size`
    /// is the number of ranks (`None`: unknown); `timeout` bounds the connection
    /// and every later call on the store (`None`: 300 s).
    pub fn new(host: &str, port: u16, world_size: Option<usize>, is_master: bool, timeout: Option<Duration>)
               -> Result<TcpStore> {
        let ws = match world_size {
            None => -1,
            Some(n) => c_int_arg("TcpStore::new", "world_size", n)?,
        };
        let store = capi::store_tcp_new(host, c_int::from(port), ws, is_master, millis("TcpStore::new", timeout)?)?;
        Ok(TcpStore { store })
    }

    /// The TCP port the store listens at (the OS's pick when made with port 0).
    pub fn port(&self) -> Result<u16> {
        let p = capi::store_port(&self.store)?;
        u16::try_from(p).map_err(|_| Error::binding(format!("ctorch::dist::TcpStore::port: port {p} is out of range")))
    }
}

/// A group of ranks (a c10d process group). Its rank and size are read once,
/// when it is made. Dropping it shuts it down and frees it.
pub struct ProcessGroup {
    pg: crate::ProcessGroup,
    rank: usize,
    world_size: usize,
    local_rank: Option<usize>,
}

/// Makes a group from torchrun's environment (Python's `init_process_group`
/// with `init_method="env://"`): `MASTER_ADDR`, `MASTER_PORT`, `RANK`,
/// `WORLD_SIZE`, and `LOCAL_RANK` when set. `backend` is `"gloo"` (or
/// `"nccl"` where [`capi::dist_nccl_available`] says so); `timeout` bounds the
/// rendezvous and every collective (`None`: 30 minutes, torch's default).
pub fn init_process_group(backend: &str, timeout: Option<Duration>) -> Result<ProcessGroup> {
    let (pg, local) = capi::dist_init_from_env(Some(backend), millis("init_process_group", timeout)?)?;
    ProcessGroup::new(pg, usize::try_from(local).ok())
}

/// Makes a Gloo group of `world_size` ranks that meet at `store`; this
/// process is `rank`. Blocks until every rank joined or `timeout` passed.
pub fn init_process_group_with_store(store: &TcpStore, rank: usize, world_size: usize, timeout: Option<Duration>)
                                     -> Result<ProcessGroup> {
    const F: &str = "init_process_group_with_store";
    let pg = capi::process_group_new_gloo(&store.store, c_int_arg(F, "rank", rank)?,
                                          c_int_arg(F, "world_size", world_size)?, millis(F, timeout)?)?;
    ProcessGroup::new(pg, None)
}

impl ProcessGroup {
    fn new(pg: crate::ProcessGroup, local_rank: Option<usize>) -> Result<ProcessGroup> {
        // The C calls return a non-negative rank and a positive size.
        let rank = capi::process_group_rank(&pg)?.max(0) as usize;
        let world_size = capi::process_group_size(&pg)?.max(0) as usize;
        Ok(ProcessGroup { pg, rank, world_size, local_rank })
    }

    /// This process's rank, 0 to `world_size() - 1` (torch's `get_rank`).
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks (torch's `get_world_size`).
    pub fn world_size(&self) -> usize {
        self.world_size
    }

    /// `LOCAL_RANK` as torchrun set it (the rank's GPU is `cuda:LOCAL_RANK`);
    /// `None` when unset or for a group made at a store.
    pub fn local_rank(&self) -> Option<usize> {
        self.local_rank
    }

    /// `"gloo"` or `"nccl"` (torch's `get_backend`).
    pub fn backend(&self) -> Result<String> {
        capi::process_group_backend(&self.pg)
    }

    /// The group's handle, for the `capi::dist_*` functions this type has no
    /// method for (gather, scatter, reduce, reduce_scatter, the async forms).
    pub fn handle(&self) -> &crate::ProcessGroup {
        &self.pg
    }

    fn peer(&self, what: &str, arg: &str, r: usize) -> Result<c_int> {
        if r >= self.world_size {
            return Err(Error::binding(format!(
                "ctorch::dist::ProcessGroup::{what}: {arg} {r} is not a rank of this group of {}", self.world_size)));
        }
        c_int_arg(what, arg, r)
    }

    /// In place: `tensor` = `op` over every rank's `tensor`.
    pub fn all_reduce(&self, tensor: &Tensor, op: ReduceOp) -> Result<()> {
        capi::dist_all_reduce(&self.pg, tensor, op)
    }

    /// In place: every rank's `tensor` = rank `src`'s.
    pub fn broadcast(&self, tensor: &Tensor, src: usize) -> Result<()> {
        capi::dist_broadcast(&self.pg, tensor, self.peer("broadcast", "src", src)?)
    }

    /// `outputs[i]` = rank i's `tensor`, written in place (one output per rank,
    /// each shaped like `tensor`).
    pub fn all_gather(&self, outputs: &[Tensor], tensor: &Tensor) -> Result<()> {
        let outs: Vec<&Tensor> = outputs.iter().collect();
        capi::dist_all_gather(&self.pg, &outs, tensor)
    }

    /// Every rank's `tensor` as new tensors, element i from rank i.
    pub fn all_gather_new(&self, tensor: &Tensor) -> Result<Vec<Tensor>> {
        capi::dist_all_gather_list(&self.pg, tensor)
    }

    /// Returns when every rank reached it.
    pub fn barrier(&self) -> Result<()> {
        capi::dist_barrier(&self.pg)
    }

    /// Sends `tensor` to rank `dst` (not this one); the `recv` with the same
    /// `tag` there takes it.
    pub fn send(&self, tensor: &Tensor, dst: usize, tag: u32) -> Result<()> {
        let tag = c_int_arg("send", "tag", tag as usize)?;
        capi::dist_send(&self.pg, tensor, self.peer("send", "dst", dst)?, tag)
    }

    /// Receives into `tensor` (the sender's shape and dtype) what rank `src`
    /// sends with `tag`.
    pub fn recv(&self, tensor: &Tensor, src: usize, tag: u32) -> Result<()> {
        let tag = c_int_arg("recv", "tag", tag as usize)?;
        capi::dist_recv(&self.pg, tensor, self.peer("recv", "src", src)?, tag)
    }

    /// Averages each parameter's gradient over the group, in buckets of 25 MiB
    /// (DistributedDataParallel's default): call it after backward and before
    /// the optimizer's step. A parameter without a gradient gets zeros first,
    /// so that every rank issues the same collectives.
    pub fn average_gradients(&self, parameters: &[Tensor]) -> Result<()> {
        self.average_gradients_bucketed(parameters, 0)
    }

    /// [`average_gradients`](Self::average_gradients) with buckets of at most
    /// `bucket_bytes` (0: 25 MiB); one collective per bucket.
    pub fn average_gradients_bucketed(&self, parameters: &[Tensor], bucket_bytes: usize) -> Result<()> {
        let ps: Vec<&Tensor> = parameters.iter().collect();
        capi::dist_average_gradients(&self.pg, &ps, bucket_bytes)
    }

    /// Copies rank `src`'s parameter values to every rank (before training, so
    /// that all ranks start equal).
    pub fn broadcast_parameters(&self, parameters: &[Tensor], src: usize) -> Result<()> {
        let ps: Vec<&Tensor> = parameters.iter().collect();
        capi::dist_broadcast_parameters(&self.pg, &ps, self.peer("broadcast_parameters", "src", src)?)
    }

    /// Shuts the group down (waits for queued work, bounded by the group's
    /// timeout) and frees it (torch's `destroy_process_group`). Dropping the
    /// group does the same without the result.
    pub fn destroy(self) -> Result<()> {
        capi::process_group_destroy(&self.pg)
    }
}

/// torch.nn.parallel.DistributedDataParallel's keywords; `Default` is its
/// defaults.
#[derive(Clone, Debug)]
pub struct DdpOptions {
    /// `bucket_cap_mb`: the buckets' cap in MiB (`None`: DDP's 25). As in DDP,
    /// the buckets rebuilt after the first iteration start with one of 1 MiB.
    pub bucket_cap_mb: Option<f64>,
    /// `find_unused_parameters`: parameters the forward did not use are marked
    /// ready rather than waited for (default false).
    pub find_unused_parameters: bool,
    /// `gradient_as_bucket_view`: each `.grad` is a view into its bucket, with
    /// no copy back (default false).
    pub gradient_as_bucket_view: bool,
    /// `broadcast_buffers`: rank 0's buffers are copied to every rank before
    /// each forward (default true).
    pub broadcast_buffers: bool,
}

impl Default for DdpOptions {
    fn default() -> Self {
        DdpOptions { bucket_cap_mb: None, find_unused_parameters: false, gradient_as_bucket_view: false,
                     broadcast_buffers: true }
    }
}

impl DdpOptions {
    /// `ctorch_ddp_new`'s `bucket_cap_bytes` and `flags`.
    fn c_args(&self, what: &str) -> Result<(usize, u32)> {
        let bytes = match self.bucket_cap_mb {
            None => 0,
            Some(mb) if mb > 0.0 && mb.is_finite() => ((mb * (1u64 << 20) as f64) as usize).max(1),
            Some(mb) => return Err(Error::binding(format!(
                "ctorch::dist::DistributedDataParallel::{what}: bucket_cap_mb {mb} is not a positive size"))),
        };
        let mut flags = 0u32;
        if self.find_unused_parameters {
            flags |= crate::sys::CTORCH_DDP_FIND_UNUSED_PARAMETERS as u32;
        }
        if self.gradient_as_bucket_view {
            flags |= crate::sys::CTORCH_DDP_GRADIENT_AS_BUCKET_VIEW as u32;
        }
        if !self.broadcast_buffers {
            flags |= crate::sys::CTORCH_DDP_NO_BROADCAST_BUFFERS as u32;
        }
        Ok((bytes, flags))
    }
}

/// torch.nn.parallel.DistributedDataParallel over c10d's own Reducer
/// (`ctorch_ddp_*`): the parameters are put in buckets whose all-reduce starts
/// during backward, as each bucket's gradients become ready, so that when
/// backward returns every `.grad` holds the group's average. Making one is
/// collective (every rank makes one over the same shapes) and copies rank 0's
/// parameters and buffers to every rank. Between a forward through it and the
/// end of that forward's backward the group must not be used by other calls.
/// It borrows its module and group, so both outlive it; dropping it frees the
/// Reducer (the module and group stay).
pub struct DistributedDataParallel<'a> {
    ddp: crate::Ddp,
    module: Option<&'a Module>,
    group: &'a ProcessGroup,
    sync: Cell<bool>,
}

impl<'a> DistributedDataParallel<'a> {
    /// Wraps `module` (`DistributedDataParallel(module, process_group=group,
    /// ...)`): the Reducer covers its parameters that require grad, in
    /// `named_parameters` order.
    pub fn new(module: &'a Module, group: &'a ProcessGroup, options: &DdpOptions) -> Result<Self> {
        let (bytes, flags) = options.c_args("new")?;
        let ddp = capi::ddp_new(&group.pg, module, bytes, flags)?;
        Ok(DistributedDataParallel { ddp, module: Some(module), group, sync: Cell::new(true) })
    }

    /// The wrapper over parameters (leaf tensors that require grad) and
    /// buffers of a model this crate does not hold (a TorchScript module's):
    /// its forward is then [`pre_forward`](Self::pre_forward), your own call,
    /// and [`post_forward`](Self::post_forward). The Reducer keeps its own
    /// references to the tensors.
    pub fn with_parameters(group: &'a ProcessGroup, parameters: &[Tensor], buffers: &[Tensor], options: &DdpOptions)
                           -> Result<Self> {
        let (bytes, flags) = options.c_args("with_parameters")?;
        let ps: Vec<&Tensor> = parameters.iter().collect();
        let bs: Vec<&Tensor> = buffers.iter().collect();
        let ddp = capi::ddp_new_params(&group.pg, &ps, Some(&bs), bytes, flags)?;
        Ok(DistributedDataParallel { ddp, module: None, group, sync: Cell::new(true) })
    }

    /// DDP's forward: [`pre_forward`](Self::pre_forward), the module's forward
    /// on `x`, [`post_forward`](Self::post_forward) on its output. Only for a
    /// wrapper made by [`new`](Self::new).
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        capi::ddp_forward(&self.ddp, x)
    }

    /// What DDP does before the module's forward: the buckets' rebuild after
    /// the first iteration, preparing the Reducer, and (with
    /// `broadcast_buffers`) copying rank 0's buffers. Collective.
    pub fn pre_forward(&self) -> Result<()> {
        capi::ddp_pre_forward(&self.ddp)
    }

    /// What DDP does after the module's forward: it arms the Reducer for the
    /// coming backward; with `find_unused_parameters` it walks the graph from
    /// `outputs` to find the parameters the forward did not use.
    pub fn post_forward(&self, outputs: &[&Tensor]) -> Result<()> {
        capi::ddp_post_forward(&self.ddp, outputs)
    }

    /// DDP's `no_sync()`: the backwards of the forwards that `f` runs only
    /// accumulate `.grad` locally, with no communication; the first
    /// synchronised backward after it averages what accumulated. The previous
    /// state comes back when `f` returns or panics, so calls nest. `f`'s error
    /// type only needs to hold this crate's [`Error`].
    pub fn no_sync<T, E: From<Error>>(&self, f: impl FnOnce() -> std::result::Result<T, E>)
                                      -> std::result::Result<T, E> {
        /// Restores the previous state on every way out of `f`.
        struct Restore<'g, 'a> {
            d: &'g DistributedDataParallel<'a>,
            prev: bool,
        }
        impl Drop for Restore<'_, '_> {
            fn drop(&mut self) {
                self.d.sync.set(self.prev);
                if self.prev {
                    // Only fails for a freed handle, which a live borrow rules out.
                    let _ = capi::ddp_set_require_sync(&self.d.ddp, 1);
                }
            }
        }
        capi::ddp_set_require_sync(&self.ddp, 0)?;
        let restore = Restore { d: self, prev: self.sync.replace(false) };
        let out = f();
        drop(restore);
        out
    }

    /// The number of buckets the Reducer has now (1 until the rebuild after
    /// the first iteration).
    pub fn bucket_count(&self) -> Result<usize> {
        capi::ddp_bucket_count(&self.ddp)
    }

    /// Bucket `i`'s parameters as indices into the wrapper's parameters (the
    /// module's that require grad, in `named_parameters` order, or those given
    /// to [`with_parameters`](Self::with_parameters)), in the bucket's order;
    /// bucket 0 is reduced first.
    pub fn bucket_indices(&self, i: usize) -> Result<Vec<i64>> {
        capi::ddp_bucket_indices(&self.ddp, i)?.to_vec::<i64>()
    }

    /// The wrapped module (`None` for a wrapper made by
    /// [`with_parameters`](Self::with_parameters)).
    pub fn module(&self) -> Option<&'a Module> {
        self.module
    }

    /// The group the gradients are averaged over.
    pub fn process_group(&self) -> &'a ProcessGroup {
        self.group
    }

    /// The wrapper's handle, for the `capi::ddp_*` functions.
    pub fn handle(&self) -> &crate::Ddp {
        &self.ddp
    }
}
