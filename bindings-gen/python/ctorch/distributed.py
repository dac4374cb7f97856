"""Training past one process: torch.distributed's functions over ctorch's
process groups (c10d's Gloo; NCCL where ctorch is built with it), for
programs that torchrun starts or that meet at a TCPStore.

    import ctorch
    import ctorch.distributed as dist

    dist.init_process_group("gloo")        # torchrun's environment (env://)
    t = ctorch.tensor([dist.get_rank() + 1.0])
    dist.all_reduce(t)                      # the sum over the ranks, in place
    ...
    dist.average_gradients(model.parameters())   # after backward, before the step
    ...
    ddp = dist.DistributedDataParallel(model)    # or ctorch.nn.parallel's, as torch's
    loss_fn(ddp(x), y).backward()           # the gradients are averaged during backward
    dist.destroy_process_group()

The names, arguments and defaults are torch.distributed's, so a function
written against torch.distributed runs here as it is (tests/dist/interop.py
runs one such function in C, torch and ctorch ranks of one group: the wire
is c10d's own, so ranks of ctorch's C API, of this binding and of PyTorch of
the same generation share a group). What differs:

- ReduceOp.AVG works on Gloo (a SUM, then a division), where torch refuses it;
- recv needs its src (no receive from any rank);
- average_gradients and broadcast_parameters are ctorch's data-parallel
  helpers (bucketed collectives, include/ctorch.h), not torch.distributed's;
- DistributedDataParallel is torch.nn.parallel's (also there as
  ctorch.nn.parallel.DistributedDataParallel): c10d's own Reducer, as torch
  runs it, over a ctorch.nn.Module, or over parameters of your own
  (from_parameters, with pre_forward/post_forward around your forward);
- the default group is this module's, not torch's: a process that also
  imports torch keeps the two apart.

A collective with async_op=True returns a Work whose wait() finishes it;
every call that fails raises ctorch.CtorchError naming the C function.
"""
import contextlib as _contextlib
import datetime as _datetime

from . import _api
from ._rt import Tensor as _Tensor
from .nn_modules import Module as _Module

__all__ = ["ReduceOp", "Work", "TCPStore", "ProcessGroup", "init_process_group", "is_initialized",
           "destroy_process_group", "get_rank", "get_world_size", "get_backend", "all_reduce", "broadcast",
           "all_gather", "gather", "scatter", "reduce", "reduce_scatter", "send", "recv", "barrier",
           "average_gradients", "broadcast_parameters", "DistributedDataParallel"]


class ReduceOp:
    """The reductions (ctorch_reduce_op's values)."""
    SUM, AVG, PRODUCT, MIN, MAX = 1, 2, 3, 4, 5


def _ms(timeout):
    """A timeout (a timedelta, seconds, or None: the C default) in milliseconds."""
    if timeout is None:
        return 0
    if isinstance(timeout, _datetime.timedelta):
        timeout = timeout.total_seconds()
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not timeout > 0:
        raise ValueError(f"ctorch.distributed: timeout {timeout!r} is not a positive duration")
    return max(1, int(timeout * 1000))


class Work:
    """A collective started with async_op=True."""

    def __init__(self, handle):
        self._w = handle

    def wait(self, timeout=None):
        """Blocks until the collective finished (or raises: a peer died, the
        timeout passed; after a timeout it may be waited for again)."""
        _api.work_wait(self._w, _ms(timeout))
        return True

    def is_completed(self):
        return bool(_api.work_is_completed(self._w))


class TCPStore:
    """torch.distributed.TCPStore: a key-value store that ranks meet at; the
    master (is_master=True) serves it (port 0: the OS picks one, see .port)."""

    def __init__(self, host_name, port, world_size=None, is_master=False, timeout=None):
        self._s = _api.store_tcp_new(host_name, int(port), -1 if world_size is None else int(world_size),
                                     1 if is_master else 0, _ms(timeout))

    @property
    def port(self):
        return _api.store_port(self._s)


class ProcessGroup:
    """A group of ranks (a c10d process group); init_process_group makes the
    default one, which every function uses when group is None."""

    def __init__(self, handle):
        self._pg = handle

    def rank(self):
        return _api.process_group_rank(self._pg)

    def size(self):
        return _api.process_group_size(self._pg)

    def backend(self):
        return _api.process_group_backend(self._pg)


_default = None
_local_rank = -1


def init_process_group(backend="gloo", init_method=None, timeout=None, world_size=-1, rank=-1, store=None):
    """Makes the default group: from torchrun's environment (MASTER_ADDR,
    MASTER_PORT, RANK, WORLD_SIZE; init_method None or "env://"), or at a
    TCPStore (store=, rank=, world_size=). timeout bounds the rendezvous and
    every collective (default: 30 minutes, as torch's)."""
    global _default, _local_rank
    if _default is not None:
        raise RuntimeError("ctorch.distributed: init_process_group: the default group exists already")
    if store is None:
        if init_method not in (None, "env://"):
            raise ValueError(f"ctorch.distributed: init_process_group: init_method {init_method!r}: only 'env://' "
                             "(torchrun's environment) or store= are supported")
        handle, _local_rank = _api.dist_init_from_env(backend, _ms(timeout))
    else:
        if backend not in (None, "gloo"):
            raise ValueError(f"ctorch.distributed: init_process_group: backend {backend!r} with store=: only 'gloo'")
        if rank < 0 or world_size < 1:
            raise ValueError("ctorch.distributed: init_process_group: store= needs rank= and world_size=")
        handle = _api.process_group_new_gloo(store._s, int(rank), int(world_size), _ms(timeout))
    _default = ProcessGroup(handle)
    return _default


def is_initialized():
    return _default is not None


def _group(group):
    g = group if group is not None else _default
    if g is None:
        raise RuntimeError("ctorch.distributed: no process group: call init_process_group first")
    return g._pg


def destroy_process_group(group=None):
    """Shuts the group down (the default one when group is None)."""
    global _default
    _api.process_group_destroy(_group(group))
    if group is None or group is _default:
        _default = None


def get_rank(group=None):
    return _api.process_group_rank(_group(group))


def get_world_size(group=None):
    return _api.process_group_size(_group(group))


def get_backend(group=None):
    return _api.process_group_backend(_group(group))


def get_local_rank():
    """LOCAL_RANK as torchrun set it (-1 when unset or the group came from a store)."""
    return _local_rank


def _run(async_op, sync, start, *args):
    if async_op:
        return Work(start(*args))
    sync(*args)
    return None


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """In place: tensor = op over every rank's tensor."""
    return _run(async_op, _api.dist_all_reduce, _api.dist_all_reduce_async, _group(group), tensor, op)


def broadcast(tensor, src, group=None, async_op=False):
    """In place: every rank's tensor = rank src's."""
    return _run(async_op, _api.dist_broadcast, _api.dist_broadcast_async, _group(group), tensor, src)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """tensor_list[i] = rank i's tensor (one tensor per rank, written in place)."""
    return _run(async_op, _api.dist_all_gather, _api.dist_all_gather_async, _group(group), list(tensor_list), tensor)


def gather(tensor, gather_list=None, dst=0, group=None, async_op=False):
    """On rank dst, gather_list[i] = rank i's tensor; other ranks pass None."""
    return _run(async_op, _api.dist_gather, _api.dist_gather_async, _group(group), list(gather_list or []), tensor,
                dst)


def scatter(tensor, scatter_list=None, src=0, group=None, async_op=False):
    """tensor = rank src's scatter_list[rank]; other ranks pass None."""
    return _run(async_op, _api.dist_scatter, _api.dist_scatter_async, _group(group), tensor,
                list(scatter_list or []), src)


def reduce(tensor, dst, op=ReduceOp.SUM, group=None, async_op=False):
    """In place on rank dst: tensor = op over every rank's tensor (the others'
    tensors are scratch afterwards)."""
    return _run(async_op, _api.dist_reduce, _api.dist_reduce_async, _group(group), tensor, op, dst)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """output = op over every rank's input_list[rank]."""
    return _run(async_op, _api.dist_reduce_scatter, _api.dist_reduce_scatter_async, _group(group), output,
                list(input_list), op)


def send(tensor, dst, group=None, tag=0):
    """Sends tensor to rank dst; a recv with the same tag takes it."""
    _api.dist_send(_group(group), tensor, dst, tag)


def recv(tensor, src, group=None, tag=0):
    """Receives into tensor what rank src sends with the same tag."""
    _api.dist_recv(_group(group), tensor, src, tag)
    return src


def barrier(group=None, async_op=False):
    """Returns when every rank reached it."""
    return _run(async_op, _api.dist_barrier, _api.dist_barrier_async, _group(group))


def _tensors(parameters):
    ts = list(parameters)
    for t in ts:
        if not isinstance(t, _Tensor):
            raise TypeError(f"ctorch.distributed: expected Tensors, got {type(t).__name__}")
    return ts


def average_gradients(parameters, group=None, bucket_cap_mb=25):
    """Averages each parameter's .grad over the group, in buckets of
    bucket_cap_mb (as DistributedDataParallel's); call it after backward and
    before the optimizer's step. A parameter without a gradient gets zeros
    first, so that every rank issues the same collectives."""
    _api.dist_average_gradients(_group(group), _tensors(parameters), int(bucket_cap_mb * (1 << 20)))


def broadcast_parameters(parameters, src=0, group=None):
    """Copies rank src's parameter values to every rank (before training, so
    that all ranks start equal)."""
    _api.dist_broadcast_parameters(_group(group), _tensors(parameters), src)


# include/ctorch.h's CTORCH_DDP_* flags of ctorch_ddp_new (#defines: api.json has no enum for them).
_FIND_UNUSED_PARAMETERS, _GRADIENT_AS_BUCKET_VIEW, _NO_BROADCAST_BUFFERS = 1, 2, 4


def _find_tensors(obj):
    """The tensors in a forward's output (nested tuples, lists, dicts), as
    DDP's _find_tensors: the graph the Reducer searches for unused parameters."""
    if isinstance(obj, _Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in _find_tensors(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in _find_tensors(o)]
    return []


class DistributedDataParallel(_Module):
    """torch.nn.parallel.DistributedDataParallel over a ctorch.nn.Module:
    rank 0's parameters and buffers are copied to every rank here, and each
    backward through a forward of this wrapper averages the gradients over
    the group in buckets, during backward, by c10d's own Reducer (the same
    buckets and the same collectives as torch's, so torch DDP ranks of the
    same PyTorch version can join the job). Collective: every rank of the
    group constructs it. The module and the group are kept (self.module,
    self.process_group) for as long as the wrapper lives; the group must not
    be used by other calls between a forward and the end of its backward.

    A model the binding does not own (a TorchScript module, tensors of your
    own) goes through from_parameters, with pre_forward() and
    post_forward(output) around its forward."""

    # Keyword-only: torch's positional order has device_ids, output_device
    # and dim (GPU-per-process arguments) before these.
    def __init__(self, module, *, process_group=None, bucket_cap_mb=None, find_unused_parameters=False,
                 gradient_as_bucket_view=False, broadcast_buffers=True):
        if not isinstance(module, _Module):
            raise TypeError(f"DistributedDataParallel: module must be a ctorch.nn.Module, got {type(module).__name__}"
                            " (a TorchScript module or tensors of your own: DistributedDataParallel.from_parameters)")
        pg, cap, flags = self._options(process_group, bucket_cap_mb, find_unused_parameters,
                                       gradient_as_bucket_view, broadcast_buffers)
        handle = _api.ddp_new(pg._pg, module, cap, flags)
        super().__init__()
        self._setup(handle, pg, flags)
        self.module = module  # a child: state_dict's keys are "module.<name>", as torch's

    @classmethod
    def from_parameters(cls, parameters, buffers=(), *, process_group=None, bucket_cap_mb=None,
                        find_unused_parameters=False, gradient_as_bucket_view=False, broadcast_buffers=True):
        """A wrapper over tensors of your own (leaf tensors that require grad,
        and the buffers rank 0 copies to the others): call pre_forward(), your
        forward, then post_forward(output) each step, in place of forward."""
        pg, cap, flags = cls._options(process_group, bucket_cap_mb, find_unused_parameters,
                                      gradient_as_bucket_view, broadcast_buffers)
        params, bufs = _tensors(parameters), _tensors(buffers)
        handle = _api.ddp_new_params(pg._pg, params, bufs, cap, flags)
        self = cls.__new__(cls)
        _Module.__init__(self)
        self._setup(handle, pg, flags)
        object.__setattr__(self, "module", None)
        object.__setattr__(self, "_params", params)  # the wrapper's references, for parameters()
        return self

    @staticmethod
    def _options(process_group, bucket_cap_mb, find_unused_parameters, gradient_as_bucket_view, broadcast_buffers):
        pg = process_group if process_group is not None else _default
        if pg is None:
            raise RuntimeError("DistributedDataParallel: no process group: call init_process_group first")
        if not isinstance(pg, ProcessGroup):
            raise TypeError(f"DistributedDataParallel: process_group must be a ctorch.distributed.ProcessGroup, "
                            f"got {type(pg).__name__}")
        cap = 0  # the C default: DDP's 25 MiB, with a first bucket of 1 MiB
        if bucket_cap_mb is not None:
            if isinstance(bucket_cap_mb, bool) or not isinstance(bucket_cap_mb, (int, float)) or not bucket_cap_mb > 0:
                raise ValueError(f"DistributedDataParallel: bucket_cap_mb {bucket_cap_mb!r} is not a positive number")
            cap = max(1, int(bucket_cap_mb * (1 << 20)))
        flags = ((_FIND_UNUSED_PARAMETERS if find_unused_parameters else 0)
                 | (_GRADIENT_AS_BUCKET_VIEW if gradient_as_bucket_view else 0)
                 | (0 if broadcast_buffers else _NO_BROADCAST_BUFFERS))
        return pg, cap, flags

    def _setup(self, handle, pg, flags):
        object.__setattr__(self, "_ddp", handle)
        object.__setattr__(self, "process_group", pg)
        object.__setattr__(self, "find_unused_parameters", bool(flags & _FIND_UNUSED_PARAMETERS))
        object.__setattr__(self, "require_backward_grad_sync", True)

    def _handle(self):
        d = self.__dict__.get("_ddp")
        if d is None:
            raise RuntimeError("DistributedDataParallel: the wrapper was disposed")
        return d

    def forward(self, *inputs, **kwargs):
        """The module's forward between DDP's pre- and post-forward steps."""
        if self.module is None:
            raise RuntimeError("DistributedDataParallel.forward: a wrapper from from_parameters has no module: "
                               "call pre_forward(), your forward, then post_forward(output)")
        self.pre_forward()
        out = self.module(*inputs, **kwargs)
        self.post_forward(out)
        return out

    def pre_forward(self):
        """What DDP does before the module's forward: the bucket rebuild after
        the first iteration, the Reducer's preparation, rank 0's buffers
        copied to every rank (unless broadcast_buffers=False). Collective."""
        _api.ddp_pre_forward(self._handle())

    def post_forward(self, output):
        """What DDP does after the module's forward: arms the Reducer for the
        coming backward (with find_unused_parameters, it searches the graph
        of output's tensors for the parameters the forward did not use)."""
        _api.ddp_post_forward(self._handle(), _find_tensors(output) if self.find_unused_parameters else [])

    @_contextlib.contextmanager
    def no_sync(self):
        """Within it, backward only accumulates each .grad locally (no
        communication); the first backward after it averages the gradients
        accumulated since (gradient accumulation)."""
        old = self.require_backward_grad_sync
        self._set_sync(False)
        try:
            yield
        finally:
            self._set_sync(old)

    def _set_sync(self, sync):
        _api.ddp_set_require_sync(self._handle(), int(bool(sync)))
        object.__setattr__(self, "require_backward_grad_sync", bool(sync))

    def parameters(self, recurse=True):
        if self.module is None:
            return iter(self._params)
        return super().parameters(recurse)

    def bucket_count(self):
        """How many buckets the Reducer has now (1 until the rebuild after the first iteration)."""
        return _api.ddp_bucket_count(self._handle())

    def bucket_indices(self, bucket):
        """The indices (into the parameters that require grad, in
        parameters() order) of bucket's parameters; bucket 0 is reduced first."""
        return _api.ddp_bucket_indices(self._handle(), bucket).tolist()

    def dispose(self):
        """Frees the Reducer now (the module and the group stay); again: nothing."""
        d = self.__dict__.get("_ddp")
        if d is not None:
            object.__setattr__(self, "_ddp", None)
            d.dispose()
        super().dispose()
