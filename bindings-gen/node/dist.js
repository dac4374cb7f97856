'use strict';
// ct.distributed: torch.distributed's vocabulary over ctorch's process groups
// (c10d's Gloo; NCCL where ctorch is built with it), for programs that
// torchrun starts or that meet at a TCPStore. The names are Python's in
// camelCase (init_process_group -> initProcessGroup), as the rest of the
// binding; the wire is c10d's own, so ranks of this binding, of ctorch's C
// API, of the Python binding and of PyTorch of the same generation share one
// group. What differs from torch.distributed: ReduceOp.AVG works on Gloo (a
// SUM, then a division); recv needs its src; averageGradients and
// broadcastParameters are ctorch's bucketed data-parallel helpers; timeouts
// are milliseconds; the Promise forms (allReduceAsync, ...) take the place of
// async_op=True. DistributedDataParallel is torch.nn.parallel's, over c10d's
// own Reducer as torch runs it.
module.exports = function defineDistributed(ct, rt) {
  const { api } = rt;

  /** The reductions (ctorch_reduce_op's values). */
  const ReduceOp = Object.freeze({ SUM: 1, AVG: 2, PRODUCT: 3, MIN: 4, MAX: 5 });
  const OPS = new Set(Object.values(ReduceOp));

  // A timeout in milliseconds (undefined/null: the C default, 30 minutes).
  function ms(fn, timeout) {
    if (timeout === undefined || timeout === null) return 0;
    if (typeof timeout !== 'number' || !(timeout > 0) || !Number.isFinite(timeout)) {
      throw new TypeError(`ct.distributed.${fn}: timeout ${String(timeout)} is not a positive number of milliseconds`);
    }
    return Math.max(1, Math.round(timeout));
  }
  function intArg(fn, name, v) {
    if (!Number.isInteger(v)) throw new TypeError(`ct.distributed.${fn}: ${name} must be an integer, got ${String(v)}`);
    return v;
  }
  function opArg(fn, op) {
    if (op === undefined) return ReduceOp.SUM;
    if (!OPS.has(op)) throw new TypeError(`ct.distributed.${fn}: op must be a ct.distributed.ReduceOp value, got ${String(op)}`);
    return op;
  }
  function tensors(fn, name, list) {
    const ts = Array.from(list || []);
    ts.forEach((t, i) => {
      if (!(t instanceof ct.Tensor)) throw new TypeError(`ct.distributed.${fn}: ${name}[${i}] is not a Tensor`);
    });
    return ts;
  }
  // A module's parameters, or the tensors themselves.
  function params(fn, p) {
    return tensors(fn, 'parameters', p && typeof p.parameters === 'function' ? p.parameters() : p);
  }

  /** A collective started by an ...Async function: wait() blocks, waitAsync() resolves on a worker thread. */
  class Work {
    constructor(handle) { this._w = handle; }
    wait(timeout) { api.work_wait(this._w, ms('Work.wait', timeout)); return true; }
    waitAsync(timeout) {
      let t;
      try { t = ms('Work.waitAsync', timeout); } catch (e) { return Promise.reject(e); }
      // ctorch_work_wait on a worker thread: the event loop runs meanwhile.
      return ct.callAsync('ctorch_work_wait', this._w._h, t).then(() => true);
    }
    isCompleted() { return api.work_is_completed(this._w); }
    dispose() { this._w.dispose(); }
    [Symbol.dispose]() { this.dispose(); }
  }

  /** torch.distributed.TCPStore: the master (isMaster) serves it (port 0: the OS picks one, see .port). */
  class TCPStore {
    constructor(hostName, port, opts = {}) {
      const ws = opts.worldSize === undefined || opts.worldSize === null ? -1 : intArg('TCPStore', 'worldSize', opts.worldSize);
      this._s = api.store_tcp_new(String(hostName), intArg('TCPStore', 'port', port), ws, !!opts.isMaster,
        ms('TCPStore', opts.timeout));
    }
    get port() { return api.store_port(this._s); }
    dispose() { this._s.dispose(); }
    [Symbol.dispose]() { this.dispose(); }
  }

  /** A group of ranks (a c10d process group); initProcessGroup makes the default one. */
  class ProcessGroup {
    constructor(handle, localRank = -1) { this._pg = handle; this._localRank = localRank; }
    rank() { return api.process_group_rank(this._pg); }
    size() { return api.process_group_size(this._pg); }
    backend() { return api.process_group_backend(this._pg); }
  }

  let defaultGroup = null;

  function initProcessGroup(opts = {}) {
    const fn = 'initProcessGroup';
    if (typeof opts === 'string') opts = { backend: opts };
    if (defaultGroup) throw new Error(`ct.distributed.${fn}: the default group exists already`);
    const backend = opts.backend === undefined ? 'gloo' : opts.backend;
    const timeout = ms(fn, opts.timeout);
    if (opts.store === undefined || opts.store === null) {
      if (opts.initMethod !== undefined && opts.initMethod !== null && opts.initMethod !== 'env://') {
        throw new TypeError(`ct.distributed.${fn}: initMethod '${opts.initMethod}': only 'env://' (torchrun's ` +
          'environment) or store are supported');
      }
      const [pg, localRank] = api.dist_init_from_env(backend, timeout);
      defaultGroup = new ProcessGroup(pg, localRank);
    } else {
      if (!(opts.store instanceof TCPStore)) throw new TypeError(`ct.distributed.${fn}: store must be a ct.distributed.TCPStore`);
      if (backend !== 'gloo' && backend !== null) throw new TypeError(`ct.distributed.${fn}: backend '${backend}' with store: only 'gloo'`);
      const rank = opts.rank === undefined ? -1 : intArg(fn, 'rank', opts.rank);
      const ws = opts.worldSize === undefined ? -1 : intArg(fn, 'worldSize', opts.worldSize);
      if (rank < 0 || ws < 1) throw new TypeError(`ct.distributed.${fn}: store needs rank and worldSize`);
      defaultGroup = new ProcessGroup(api.process_group_new_gloo(opts.store._s, rank, ws, timeout));
    }
    return defaultGroup;
  }

  function group(g) {
    const pg = g || defaultGroup;
    if (!pg) throw new Error('ct.distributed: no process group: call initProcessGroup first');
    if (!(pg instanceof ProcessGroup)) throw new TypeError('ct.distributed: group must be a ct.distributed.ProcessGroup');
    return pg._pg;
  }
  const grp = (opts) => group(opts && opts.group);

  /** Shuts the group down (the default one unless opts.group) and frees it. */
  function destroyProcessGroup(opts = {}) {
    const g = opts.group || defaultGroup;
    const h = group(g);
    api.process_group_destroy(h);
    h.dispose();
    if (g === defaultGroup) defaultGroup = null;
  }

  // Each collective: the blocking C call, and its Promise form (the _async C
  // call returns a Work at once, which keeps its tensors alive; the wait runs
  // on a worker thread).
  const promised = (start) => {
    let w;
    try { w = new Work(start()); } catch (e) { return Promise.reject(e); }
    return w.waitAsync().finally(() => w.dispose()); // w held (not collected) until the wait ended
  };

  // include/ctorch.h's CTORCH_DDP_* flags of ctorch_ddp_new (#defines: api.json has no enum for them).
  const FIND_UNUSED_PARAMETERS = 1, GRADIENT_AS_BUCKET_VIEW = 2, NO_BROADCAST_BUFFERS = 4;
  // The tensors in a forward's output (nested arrays and plain objects), as DDP's _find_tensors.
  function findTensors(out, acc = []) {
    if (out instanceof ct.Tensor) acc.push(out);
    else if (Array.isArray(out)) out.forEach((o) => findTensors(o, acc));
    else if (out && typeof out === 'object' && Object.getPrototypeOf(out) === Object.prototype) {
      Object.values(out).forEach((o) => findTensors(o, acc));
    }
    return acc;
  }
  // [group object, bucket_cap_bytes, flags] from a DistributedDataParallel options object.
  function ddpOptions(fn, opts) {
    if (opts === null || typeof opts !== 'object') throw new TypeError(`ct.distributed.${fn}: options must be an object`);
    const known = new Set(['group', 'bucketCapMb', 'findUnusedParameters', 'gradientAsBucketView', 'broadcastBuffers', 'buffers']);
    for (const k of Object.keys(opts)) if (!known.has(k)) throw new TypeError(`ct.distributed.${fn}: unknown option '${k}'`);
    const g = opts.group || defaultGroup;
    group(g); // a ProcessGroup, or the error saying there is none
    let cap = 0; // the C default: DDP's 25 MiB, with a first bucket of 1 MiB
    if (opts.bucketCapMb !== undefined && opts.bucketCapMb !== null) {
      const mb = opts.bucketCapMb;
      if (typeof mb !== 'number' || !(mb > 0) || !Number.isFinite(mb)) throw new TypeError(`ct.distributed.${fn}: bucketCapMb ${String(mb)} is not a positive number`);
      cap = Math.max(1, Math.floor(mb * (1 << 20)));
    }
    const flags = (opts.findUnusedParameters ? FIND_UNUSED_PARAMETERS : 0) |
      (opts.gradientAsBucketView ? GRADIENT_AS_BUCKET_VIEW : 0) |
      (opts.broadcastBuffers === undefined || opts.broadcastBuffers ? 0 : NO_BROADCAST_BUFFERS);
    return [g, cap, flags];
  }

  /**
   * torch.nn.parallel.DistributedDataParallel over a ct.nn.Module: rank 0's parameters and
   * buffers are copied to every rank here, and each backward through a forward of this wrapper
   * averages the gradients over the group in buckets, during backward, by c10d's own Reducer
   * (torch's buckets and collectives: torch DDP ranks of the same PyTorch version can join).
   * Collective: every rank constructs it. It keeps its module and group; close() frees the
   * Reducer (again: nothing). A model the binding does not own (a TorchScript module, tensors
   * of your own) goes through DistributedDataParallel.fromParameters, with preForward() and
   * postForward(output) around its forward.
   */
  class DistributedDataParallel {
    constructor(module, opts = {}) {
      if (!(module instanceof ct.nn.Module)) {
        throw new TypeError('ct.distributed.DistributedDataParallel: module must be a ct.nn.Module (a TorchScript ' +
          'module or tensors of your own: DistributedDataParallel.fromParameters)');
      }
      const [g, cap, flags] = ddpOptions('DistributedDataParallel', opts);
      this._init(api.ddp_new(g._pg, module._m, cap, flags), g, flags, module, null);
    }
    /** A wrapper over tensors of your own (opts.buffers: those rank 0 copies to the others); call
     * preForward(), your forward, then postForward(output) each step, in place of forward. */
    static fromParameters(parameters, opts = {}) {
      const [g, cap, flags] = ddpOptions('DistributedDataParallel.fromParameters', opts);
      const ps = params('DistributedDataParallel.fromParameters', parameters);
      const bs = tensors('DistributedDataParallel.fromParameters', 'buffers', opts.buffers);
      const self = Object.create(DistributedDataParallel.prototype);
      self._init(api.ddp_new_params(g._pg, ps, bs, cap, flags), g, flags, null, ps);
      return self;
    }
    _init(handle, g, flags, module, ps) {
      this._d = handle;
      this._flags = flags;
      this._sync = true;
      this._params = ps; // the wrapper's references, for parameters()
      this._module = module;
      this._group = g; // kept: the group must outlive the wrapper
    }
    /** The wrapped module (null for a wrapper from fromParameters). */
    get module() { return this._module; }
    /** The group it averages over. */
    get processGroup() { return this._group; }
    _handle(fn) {
      if (!this._d) throw new Error(`ct.distributed.DistributedDataParallel.${fn}: the wrapper is closed`);
      return this._d;
    }
    /** The module's forward between DDP's preForward and postForward. */
    forward(...inputs) {
      if (!this.module) {
        throw new Error('ct.distributed.DistributedDataParallel.forward: a wrapper from fromParameters has no module: ' +
          'call preForward(), your forward, then postForward(output)');
      }
      this.preForward();
      const out = this.module.forward(...inputs);
      this.postForward(out);
      return out;
    }
    call(...inputs) { return this.forward(...inputs); }
    /** Before the forward: the bucket rebuild after the first iteration, the Reducer's preparation,
     * rank 0's buffers copied to every rank (unless broadcastBuffers: false). Collective. */
    preForward() { api.ddp_pre_forward(this._handle('preForward')); }
    /** After the forward: arms the Reducer for the coming backward (findUnusedParameters: searches
     * the graph of output's tensors for the parameters the forward did not use). */
    postForward(output) {
      const h = this._handle('postForward');
      api.ddp_post_forward(h, this._flags & FIND_UNUSED_PARAMETERS ? findTensors(output) : []);
    }
    /** Runs fn with gradient synchronisation off: its backwards only accumulate each .grad locally;
     * the first backward after it averages what accumulated. A Promise from fn: off until it settles. */
    noSync(fn) {
      if (typeof fn !== 'function') throw new TypeError('ct.distributed.DistributedDataParallel.noSync: fn must be a function');
      const old = this._sync;
      this._setSync(false);
      let r;
      try { r = fn(); } catch (e) { this._setSync(old); throw e; }
      if (r && typeof r.then === 'function') {
        return Promise.resolve(r).finally(() => this._setSync(old));
      }
      this._setSync(old);
      return r;
    }
    _setSync(sync) { api.ddp_set_require_sync(this._handle('noSync'), sync ? 1 : 0); this._sync = sync; }
    /** The module's parameters (or those given to fromParameters), what ct.optim takes. */
    parameters() { return this._module ? this._module.parameters() : this._params.slice(); }
    /** How many buckets the Reducer has now (1 until the rebuild after the first iteration). */
    bucketCount() { return api.ddp_bucket_count(this._handle('bucketCount')); }
    /** The indices (into the parameters that require grad, in parameters() order) of a bucket's parameters; bucket 0 is reduced first. */
    bucketIndices(bucket) {
      const t = api.ddp_bucket_indices(this._handle('bucketIndices'), intArg('DistributedDataParallel.bucketIndices', 'bucket', bucket));
      try { return t.toArray().map(Number); } finally { t.dispose(); }
    }
    /** Frees the Reducer now (the module and the group stay); again: nothing. */
    close() {
      const h = this._d;
      this._d = null;
      if (h) h.dispose();
    }
    dispose() { this.close(); }
    [Symbol.dispose]() { this.close(); }
  }

  const d = {
    ReduceOp, Work, DistributedDataParallel, TCPStore, ProcessGroup, initProcessGroup, destroyProcessGroup,
    isInitialized: () => defaultGroup !== null,
    getRank: (opts) => api.process_group_rank(grp(opts)),
    getWorldSize: (opts) => api.process_group_size(grp(opts)),
    getBackend: (opts) => api.process_group_backend(grp(opts)),
    /** LOCAL_RANK as torchrun set it (-1 when unset or the group came from a store). */
    getLocalRank: () => (defaultGroup ? defaultGroup._localRank : -1),
    /** In place: tensor = op over every rank's tensor (op: ReduceOp.SUM unless given). */
    allReduce(tensor, op, opts) { api.dist_all_reduce(grp(opts), tensor, opArg('allReduce', op)); },
    allReduceAsync(tensor, op, opts) { return promised(() => api.dist_all_reduce_async(grp(opts), tensor, opArg('allReduceAsync', op))); },
    /** In place: every rank's tensor = rank src's. */
    broadcast(tensor, src, opts) { api.dist_broadcast(grp(opts), tensor, intArg('broadcast', 'src', src)); },
    broadcastAsync(tensor, src, opts) { return promised(() => api.dist_broadcast_async(grp(opts), tensor, intArg('broadcastAsync', 'src', src))); },
    /** tensorList[i] = rank i's tensor (one tensor per rank, written in place). */
    allGather(tensorList, tensor, opts) { api.dist_all_gather(grp(opts), tensors('allGather', 'tensorList', tensorList), tensor); },
    allGatherAsync(tensorList, tensor, opts) {
      return promised(() => api.dist_all_gather_async(grp(opts), tensors('allGatherAsync', 'tensorList', tensorList), tensor));
    },
    /** On rank dst, gatherList[i] = rank i's tensor; other ranks pass none. */
    gather(tensor, gatherList, dst = 0, opts) {
      api.dist_gather(grp(opts), tensors('gather', 'gatherList', gatherList), tensor, intArg('gather', 'dst', dst));
    },
    /** tensor = rank src's scatterList[rank]; other ranks pass none. */
    scatter(tensor, scatterList, src = 0, opts) {
      api.dist_scatter(grp(opts), tensor, tensors('scatter', 'scatterList', scatterList), intArg('scatter', 'src', src));
    },
    /** In place on rank dst: tensor = op over every rank's tensor (the others' are scratch afterwards). */
    reduce(tensor, dst, op, opts) { api.dist_reduce(grp(opts), tensor, opArg('reduce', op), intArg('reduce', 'dst', dst)); },
    /** output = op over every rank's inputList[rank]. */
    reduceScatter(output, inputList, op, opts) {
      api.dist_reduce_scatter(grp(opts), output, tensors('reduceScatter', 'inputList', inputList), opArg('reduceScatter', op));
    },
    /** Sends tensor to rank dst; a recv with the same tag takes it. */
    send(tensor, dst, opts = {}) {
      api.dist_send(grp(opts), tensor, intArg('send', 'dst', dst), intArg('send', 'tag', opts.tag === undefined ? 0 : opts.tag));
    },
    /** Receives into tensor what rank src sends with the same tag; returns src. */
    recv(tensor, src, opts = {}) {
      api.dist_recv(grp(opts), tensor, intArg('recv', 'src', src), intArg('recv', 'tag', opts.tag === undefined ? 0 : opts.tag));
      return src;
    },
    /** Returns when every rank reached it. */
    barrier(opts) { api.dist_barrier(grp(opts)); },
    barrierAsync(opts) { return promised(() => api.dist_barrier_async(grp(opts))); },
    /**
     * Averages each parameter's .grad over the group (a module or its parameters), in buckets
     * of opts.bucketCapMb (25, as DistributedDataParallel's); after backward, before the step.
     * A parameter without a gradient gets zeros first, so every rank issues the same collectives.
     */
    averageGradients(parameters, opts = {}) {
      const mb = opts.bucketCapMb === undefined ? 25 : opts.bucketCapMb;
      if (typeof mb !== 'number' || !(mb > 0)) throw new TypeError(`ct.distributed.averageGradients: bucketCapMb ${String(mb)} is not positive`);
      api.dist_average_gradients(grp(opts), params('averageGradients', parameters), Math.round(mb * (1 << 20)));
    },
    /** Copies rank src's parameter values (a module's, or the tensors) to every rank, before training. */
    broadcastParameters(parameters, src = 0, opts) {
      api.dist_broadcast_parameters(grp(opts), params('broadcastParameters', parameters), intArg('broadcastParameters', 'src', src));
    },
  };
  ct.distributed = d;
};
