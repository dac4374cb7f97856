'use strict';
// The Promise API: the long calls of a training or inference loop run on
// koffi's worker threads (ct.callAsync), off the event loop, and resolve on
// it with their results. What may run at once (README.md, "Promises"):
// - Promise calls on one object (a module, an optimizer, a loader) queue:
//   each starts when the previous one on that object settled. While one is
//   in flight the object is marked busy, and a synchronous call through it
//   or its dispose() throws instead of racing with the worker thread.
// - The tensors a call reads are pinned (a new handle each, freed when the
//   call ends), so disposing them meanwhile (ct.scope) is safe.
// - Calls on different objects run concurrently, under the C API's rules
//   (include/ctorch.h, "Threads"): a tensor read by several at once is fine;
//   mutating one (an optimizer step, a backward accumulating .grad) while
//   another call reads it is a race the caller must avoid by awaiting,
//   as a training loop does (forward, backward, step in turn).
// - Grad mode is per thread: the worker threads run with libtorch's default
//   (grad enabled) whatever ct.noGrad does on the JS thread.
module.exports = function definePromises(ct, rt) {
  const { api, R, F, check, Tensor, DataLoader, readDictMap, kwText, takePending } = rt;

  // One C call on a worker thread; rejects with the CtorchError of its status.
  const raw = (cName, args) => ct.callAsync(cName, ...args);

  // Runs job(handle) once the previous Promise call on obj settled. obj is
  // busy from now (not only once the job starts) until this call settles.
  function onObject(obj, job) {
    if (!obj._h) return Promise.reject(new Error(`ctorch: ${obj.constructor.name} used after dispose()`));
    obj._busy = (obj._busy || 0) + 1;
    const run = (obj._queue || Promise.resolve()).then(() => job(obj._h)).finally(() => { obj._busy--; });
    obj._queue = run.then(() => undefined, () => undefined);
    return run;
  }

  // New handles to the tensors (null stays 0n), taken now, in the caller's
  // turn (disposing a tensor, or closing a scope, right after the call is
  // then safe), released by unpin once the call settled.
  function pin(tensors) {
    const hs = [];
    try {
      for (const t of tensors) {
        if (t === null || t === undefined) { hs.push(0n); continue; }
        const o = new BigUint64Array(1);
        check(F.ctorch_tensor_ref(o, R.h(t)));
        hs.push(o[0]);
      }
    } catch (e) {
      unpin(hs);
      throw e;
    }
    return hs;
  }
  function unpin(hs) { for (const x of hs) if (x) F.ctorch_tensor_free(x); }
  // job(handles) with the tensors pinned (a rejection if one is disposed already).
  function pinned(tensors, job) {
    let hs;
    try { hs = pin(tensors); } catch (e) { return Promise.reject(e); }
    return Promise.resolve().then(() => job(hs)).finally(() => unpin(hs));
  }

  // A rejection's stack gets the frames of the call that made the Promise
  // (the C call itself runs later, on a worker thread, with none of them).
  function traced(promise, fn) {
    const site = {};
    Error.captureStackTrace(site, fn);
    return promise.catch((e) => {
      if (e instanceof Error && typeof site.stack === 'string') {
        e.stack = `${e.stack}\n    --- the Promise call was made at ---${site.stack.slice(site.stack.indexOf('\n'))}`;
      }
      throw e;
    });
  }
  const handleArray = (hs) => (hs.length ? BigUint64Array.from(hs) : new BigUint64Array(1));

  // loss.backwardAsync({ retainGraph, createGraph, gradient, inputs }): as backward().
  Tensor.prototype.backwardAsync = function backwardAsync(opts = {}) {
    const create = !!opts.createGraph;
    const retain = opts.retainGraph === undefined ? create : !!opts.retainGraph;
    const inputs = opts.inputs || null;
    return traced(pinned([this, opts.gradient || null, ...(inputs || [])], ([t, g, ...ins]) =>
      raw('ctorch_tensor_backward', [t, g || null, retain ? 1 : 0, create ? 1 : 0,
        inputs ? handleArray(ins) : null, ins.length])).then(() => undefined), backwardAsync);
  };

  // opt.stepAsync(): one update, as step().
  api.Optimizer.prototype.stepAsync = function stepAsync() {
    return traced(onObject(this, (hv) => raw('ctorch_optimizer_step', [hv])).then(() => undefined), stepAsync);
  };

  // loader.nextAsync(): [data, targets] (targets null without them), or null at the end of the epoch.
  // for await (const [x, y] of loader) runs one epoch with it.
  // cursor (for await's own, training.js's DataLoader._cursor): the batch is
  // that iteration's next, wherever another iteration left the loader.
  api.DataLoader.prototype.nextAsync = function nextAsync(cursor) {
    return traced(onObject(this, async (hv) => {
      if (cursor) this._seekTo(cursor, hv);
      const has = new Int32Array(1), x = new BigUint64Array(1), y = new BigUint64Array(1);
      await raw('ctorch_data_loader_next', [has, x, y, hv]);
      if (has[0] && cursor) cursor.batch++;
      return has[0] ? [R.tensorOf(x[0]), R.tensorOf(y[0])] : null;
    }), nextAsync);
  };
  DataLoader.prototype[Symbol.asyncIterator] = async function* () {
    if (this._queue) await this._queue;
    const cursor = this._cursor();
    for (;;) {
      const b = await this.nextAsync(cursor);
      if (!b) return;
      yield b;
    }
  };

  // model.forwardAsync(...inputs[, kwargs]): what forward returns, computed on a worker
  // thread. A module defined in JS runs its forward on this thread (the library calls it back).
  const MAX_OUT = 16;
  ct.nn.Module.prototype.forwardAsync = function forwardAsync(...inputs) {
    const n = inputs.length;
    const kw = n && R.isOpts(inputs[n - 1]) ? inputs.pop() : null;
    const flat = inputs.flat(Infinity);
    const structure = this.constructor.structure;
    // Pinned now, and the module busy from now (not once its queue reaches this call).
    let hs;
    try { hs = pin(flat); } catch (e) { return Promise.reject(e); }
    return traced(onObject(this._m, async () => {
      const outs = new BigUint64Array(MAX_OUT), nOut = new BigUint64Array(1);
      takePending();
      try {
        await raw('ctorch_nn_module_forward_n', [this._m._h, handleArray(hs), hs.length,
          kw === null ? null : kwText(kw), outs, MAX_OUT, nOut]);
      } catch (e) {
        throw takePending() || e; // a JS forward's own exception, as forward() rethrows it
      }
      const res = Array.from(outs.subarray(0, Number(nOut[0])), R.tensorOf);
      if (structure) return structure(res);
      return res.length === 1 ? res[0] : res;
    }).finally(() => unpin(hs)), forwardAsync);
  };

  // ct.saveAsync(stateDict, path) / ct.loadAsync(path): ct.save / ct.load off the event loop.
  ct.saveAsync = function saveAsync(dict, path) {
    const entries = [...(dict instanceof Map ? dict : Object.entries(dict))];
    const names = entries.map(([k]) => String(k));
    return traced(pinned(entries.map(([, t]) => t), (hs) =>
      raw('ctorch_save_dict', [path, names, handleArray(hs), hs.length])).then(() => undefined), saveAsync);
  };
  ct.loadAsync = function loadAsync(path) {
    const o = new BigUint64Array(1);
    return traced(raw('ctorch_load_dict', [o, path]).then(() => readDictMap(R.adopt(api.TensorDict, o[0]))), loadAsync);
  };
};
