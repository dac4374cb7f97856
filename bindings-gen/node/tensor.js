'use strict';
// Tensor objects and their lifetime (the runtime's index.js wires it): the
// Tensor class, native memory and V8's garbage collection, the batched
// release of collected tensors' handles, and scopes (ct.scope, ct.keep).
// `late.api` is the generated api.js, which index.js makes after this file.
const v8 = require('v8');
const vm = require('vm');
const koffi = require('koffi');

module.exports = function makeTensors(F, late) {
  // ---- native memory and garbage collection ---------------------------------
  const config = {
    // Force a V8 collection when native tensor memory grew this much since the last one.
    gcThresholdBytes: Number(process.env.CTORCH_GC_THRESHOLD || 256 * 1024 * 1024),
    checkEvery: 256, // tensors created between two looks at the native counter
  };
  let gc = typeof global.gc === 'function' ? global.gc : null;
  if (!gc) {
    try {
      v8.setFlagsFromString('--expose_gc');
      gc = vm.runInNewContext('gc');
    } catch (e) { gc = null; }
  }
  function memoryBytes(deviceType) {
    flushFrees();
    return late.api.memory_bytes(deviceType === undefined ? 0 : deviceType);
  }
  // The CPU byte counter itself, read in place (no foreign call): its address
  // comes from the generated api.memory_cpu_counter once api exists (late.api).
  let counterAddr = 0n;
  let baseline = 0;
  let sinceCheck = 0;
  function pressure() {
    sinceCheck = 0;
    if (!counterAddr) counterAddr = late.api.memory_cpu_counter();
    const now = Number(koffi.decode.int64(counterAddr));
    if (gc && now - baseline > config.gcThresholdBytes) {
      gc();
      baseline = now;
    }
  }

  // Handles of collected tensors, released in batches (one foreign call each).
  let pending = [];
  function flushFrees() {
    const batch = pending;
    pending = [];
    if (batch.length) F.ctorch_tensor_free_many(BigUint64Array.from(batch), batch.length);
  }
  const registry = new FinalizationRegistry((h) => {
    pending.push(h);
    if (pending.length >= 64) flushFrees();
  });

  // Scopes: every tensor created while one is open is disposed when it closes,
  // except the values returned (tensors, or arrays/objects of tensors). A
  // synchronous scope is the top of `scopes` while its function runs (nothing
  // else runs then). A scope whose function returns a Promise stays open until
  // the Promise settles and follows its own async context (AsyncLocalStorage):
  // tensors made after an `await` belong to it, tensors made meanwhile by
  // unrelated callbacks do not. The store is read only while such a scope is
  // pending (asyncOpen > 0), so synchronous code pays nothing for it.
  const { AsyncLocalStorage } = require('async_hooks');
  const scopes = [];
  const asyncScope = new AsyncLocalStorage();
  let asyncOpen = 0;
  function currentScope() {
    if (scopes.length) return scopes[scopes.length - 1];
    return asyncOpen ? asyncScope.getStore() : undefined;
  }

  class Tensor {
    constructor(h) {
      this._h = h;
      registry.register(this, h, this);
      const s = scopes.length ? scopes[scopes.length - 1] : asyncOpen ? asyncScope.getStore() : undefined;
      if (s) s.push(this);
      if (++sinceCheck >= config.checkEvery) pressure();
    }
    get handle() { return this._h; }
    dispose() {
      const h = this._h;
      if (h) {
        this._h = 0n;
        registry.unregister(this);
        F.ctorch_tensor_free(h);
      }
    }
    get disposed() { return !this._h; }
    [Symbol.dispose]() { this.dispose(); } // `using t = ct.randn([2])` (TypeScript 5.2+, Node 24+)
  }

  function isThenable(v) { return v !== null && typeof v === 'object' && typeof v.then === 'function'; }
  function scope(fn) {
    const mine = [];
    scopes.push(mine);
    let result;
    let done = false;
    const finish = (v) => {
      const keep = new Set();
      (function mark(x) {
        if (x instanceof Tensor) keep.add(x);
        else if (Array.isArray(x)) x.forEach(mark);
        else if (x && typeof x === 'object' && x.constructor === Object) Object.values(x).forEach(mark);
      })(v);
      const outer = currentScope();
      for (const t of mine) {
        if (keep.has(t)) {
          if (outer) outer.push(t); // survives into the enclosing scope
        } else t.dispose();
      }
    };
    try {
      result = asyncScope.run(mine, fn);
      done = !isThenable(result);
    } finally {
      scopes.pop();
      if (done || !isThenable(result)) finish(done ? result : undefined);
    }
    if (done) return result;
    // An async function: the scope closes when its Promise settles, in the
    // caller's context (an enclosing async scope takes what it returns).
    asyncOpen++;
    return Promise.resolve(result).then((v) => { asyncOpen--; finish(v); return v; },
      (e) => { asyncOpen--; finish(undefined); throw e; });
  }

  function keep(t) { // leaves the current scope alive
    const s = currentScope();
    if (s) {
      const i = s.indexOf(t);
      if (i >= 0) s.splice(i, 1);
    }
    return t;
  }

  return { config, memoryBytes, flushFrees, registry, Tensor, isThenable, scope, keep };
};
