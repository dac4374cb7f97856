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
//! What differs from torch.distributed: there is no default group (the methods
//! are the group's); `ReduceOp::AVG` works on Gloo (a SUM, then a division);
//! `recv` needs its `src`.
use crate::{capi, Error, Result, Tensor};
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
