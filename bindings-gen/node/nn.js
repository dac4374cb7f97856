'use strict';
// torch.nn's modules for Node.js (ct.nn.Module, ct.nn.Parameter, the
// containers and, from nn_classes.js, generated from api.json's
// "nn_modules", one class per built-in kind: new ct.nn.Linear(784, 128,
// {bias: false})). Every module is a ctorch_nn_module underneath
// (include/ctorch.h, "Modules"): stateDict, loadStateDict, train/eval, to,
// zeroGrad, toString (Python's repr) and parameters are the C library's, so a
// model built here has the same names, values and behaviour as the same
// model built from C, Python or Go. A subclass's forward runs in JS; when a C
// container (Sequential) calls it, the library calls back into JS through a
// koffi callback. Memory: a module handle is freed by dispose() or by a
// FinalizationRegistry (the generated handle class); the tensors its methods
// return are ordinary tensors (dispose, ct.scope, finalizers).
module.exports = function defineNn(ct, rt) {
  const { api, R, F, T, koffi, E, steal, check } = rt;
  const OK = 0;
  const RUNTIME = E.ctorch_status.CTORCH_RUNTIME;

  // ---- values as the Python literal text ctorch_nn_new and forward's kwargs parse ----
  function text(v) {
    if (v === null || v === undefined) return 'None';
    if (typeof v === 'boolean') return v ? 'True' : 'False';
    if (typeof v === 'bigint') return v.toString();
    if (typeof v === 'number') {
      if (Number.isNaN(v)) return 'nan';
      if (!Number.isFinite(v)) return v > 0 ? 'inf' : '-inf';
      return String(v);
    }
    if (typeof v === 'string') return `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
    if (Array.isArray(v)) return `(${v.map(text).join(', ')}${v.length === 1 ? ',' : ''})`;
    if (v && typeof v === 'object' && typeof v.name === 'string' && 'value' in v) return `'${v.name}'`; // ct.float64
    throw new TypeError(`cannot pass ${typeof v} ${v} as a module option`);
  }
  const snake = (k) => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
  const kwText = (opts) => Object.entries(opts).map(([k, v]) => `${snake(k)}=${text(v)}`).join(', ');

  // ---- JS forwards called by the library (a custom module inside a C container) ----
  const live = new Map(); // key (user_data) -> WeakRef to the JS module, until the library releases the key
  let nextKey = 1;
  let pending = null; // the JS exception a callback caught, rethrown by the call that ran it

  function kwargsOf(s) { // "need_weights=False, dim=1" -> {need_weights: false, dim: 1}
    const out = {};
    if (!s || !s.trim()) return out;
    for (const part of s.split(/,(?![^([]*[)\]])/)) {
      const [k, v] = part.split('=').map((x) => x.trim());
      out[k] = v === 'True' ? true : v === 'False' ? false : v === 'None' ? null
        : /^'.*'$/.test(v) ? v.slice(1, -1) : Number(v);
    }
    return out;
  }
  const U64 = 'uint64_t';
  const forwardCb = koffi.register((userData, self, inputs, nIn, kwargs, outputs, maxOut, nOut) => {
    try {
      const ref = live.get(Number(koffi.address(userData)));
      const mod = ref && ref.deref();
      if (!mod) throw new Error('the JS module behind this ctorch module is gone');
      const n = Number(nIn);
      const hs = n ? koffi.decode(inputs, koffi.array(U64, n)) : [];
      const ins = Array.from(hs, (hv) => (BigInt(hv) === 0n ? null : api.tensor_ref({ _h: BigInt(hv) })));
      const kw = kwargsOf(kwargs);
      let res = Object.keys(kw).length ? mod.forward(...ins, kw) : mod.forward(...ins);
      res = Array.isArray(res) ? res.flat(Infinity) : [res];
      if (res.length > Number(maxOut)) {
        throw new RangeError(`${mod.constructor.name}.forward returned ${res.length} values; the caller takes ${maxOut}`);
      }
      // NEW handles: ownership passes to ctorch.
      const outs = res.map((t) => (t === null || t === undefined ? 0n : steal(api.tensor_ref(t))));
      if (outs.length) koffi.encode(outputs, koffi.array(U64, outs.length), outs);
      koffi.encode(nOut, U64, BigInt(outs.length));
      for (const t of ins) if (t) t.dispose();
      return OK;
    } catch (e) {
      pending = e;
      return e instanceof ct.CtorchError ? e.status : RUNTIME;
    }
  }, koffi.pointer(T.ctorch_nn_forward_fn));

  // The library calls this once the last reference to a JS-defined module
  // goes (its clones share the key): the key's entry is dropped then.
  const releaseCb = koffi.register((userData) => { live.delete(Number(koffi.address(userData))); },
    koffi.pointer('ctorch_nn_custom_new_free_user_data_fn'));

  // For forwardAsync (promise.js): the kwargs text, and the JS exception a
  // callback caught during the call (rethrown instead of the status).
  rt.kwText = kwText;
  rt.takePending = () => { const js = pending; pending = null; return js; };

  // forward through the generated wrapper (api.json: outputs filled into a
  // caller's array); an exception a JS forward raised inside it wins.
  function forwardN(m, inputs, kwargs) {
    const flat = inputs.flat(Infinity); // LSTM's [h0, c0] -> h0, c0
    try {
      const res = api.nn_module_forward_n(m, flat, kwargs === null ? null : kwText(kwargs));
      pending = null;
      return res;
    } catch (e) {
      const js = pending;
      pending = null;
      throw js || e;
    }
  }

  // ---- Module ----------------------------------------------------------------------------
  const MODULES = Symbol('modules');
  // Subclass it as torch.nn.Module: call super(), then assign modules and
  // ct.nn.Parameter values to properties (registered under that name, in
  // that order: Python's state-dict names), and define forward(...inputs).
  class Module {
    constructor(handle) {
      this[MODULES] = new Map();
      if (handle) { this._m = handle; return; } // a built-in kind or a module the library made
      const key = nextKey++;
      const out = new BigUint64Array(1);
      check(F.ctorch_nn_custom_new(out, this.constructor.name, forwardCb, key, releaseCb));
      this._m = R.adopt(api.NnModule, out[0]);
      live.set(key, new WeakRef(this));
      // Assignments to properties register children and parameters, as Python's __setattr__.
      return new Proxy(this, {
        set(target, name, value, receiver) {
          if (typeof name === 'string' && !name.startsWith('_')) {
            if (value instanceof Module) { target.registerModule(name, value); return true; }
            if (value instanceof Parameter) {
              if (name in target) api.nn_module_set_tensor(target._m, name, value); // self.w = new Parameter(...) again
              else target.registerParameter(name, value);
              return true;
            }
          }
          return Reflect.set(target, name, value, receiver);
        },
      });
    }
    get handle() { return this._m.handle; }
    registerModule(name, m) {
      api.nn_module_register_module(this._m, String(name), m._m);
      this[MODULES].set(String(name), m);
      Object.defineProperty(this, name, { value: m, enumerable: true, configurable: true, writable: false });
      return m;
    }
    registerParameter(name, p) {
      api.nn_module_register_parameter(this._m, name, p === null ? null : p);
      Object.defineProperty(this, name, { get: () => this.tensor(name), enumerable: true, configurable: true });
      return p;
    }
    registerBuffer(name, t, persistent = true) {
      api.nn_module_register_buffer(this._m, name, t, !!persistent);
      Object.defineProperty(this, name, { get: () => this.tensor(name), enumerable: true, configurable: true });
      return t;
    }
    tensor(name) { return api.nn_module_tensor(this._m, name); } // a parameter or buffer by dotted name
    get(path) { return adoptModule(api.nn_module_get(this._m, path)); } // a submodule by dotted path
    forward() { throw new Error(`${this.constructor.name} has no forward`); }
    call(...inputs) { return this.forward(...inputs); }
    namedParameters(recurse = true) { return readDict(api.nn_module_named_parameters(this._m, !!recurse)); }
    parameters() { return api.nn_module_parameters(this._m); } // what ct.optim takes
    namedBuffers(recurse = true) { return readDict(api.nn_module_named_buffers(this._m, !!recurse)); }
    buffers() { return this.namedBuffers().map(([, t]) => t); }
    namedChildren() {
      const n = api.nn_module_num_children(this._m);
      const out = [];
      for (let i = 0; i < n; i++) {
        const [h, name] = api.nn_module_child(this._m, i);
        const known = this[MODULES].get(name);
        if (known) { h.dispose(); out.push([name, known]); } else out.push([name, adoptModule(h)]);
      }
      return out;
    }
    children() { return this.namedChildren().map(([, m]) => m); }
    // Python's state_dict(): [[name, tensor], ...] in its order (a Map keeps it).
    stateDict() { return new Map(readDict(api.nn_module_state_dict(this._m))); }
    // Python's load_state_dict: {missingKeys, unexpectedKeys}; strict throws on either (and on shapes).
    loadStateDict(sd, { strict = true } = {}) {
      const d = api.tensor_dict_new();
      try {
        for (const [k, t] of (sd instanceof Map ? sd : Object.entries(sd))) api.tensor_dict_set(d, k, t);
        const missingKeys = [], unexpectedKeys = [];
        for (const line of (api.nn_module_load_state_dict(this._m, d, !!strict) || '').split('\n')) {
          const i = line.indexOf(': ');
          if (i > 0) (line.startsWith('missing') ? missingKeys : unexpectedKeys).push(line.slice(i + 2));
        }
        return { missingKeys, unexpectedKeys };
      } finally { d.dispose(); }
    }
    train(mode = true) { api.nn_module_train(this._m, !!mode); return this; }
    eval() { return this.train(false); }
    get training() { return api.nn_module_is_training(this._m); }
    // to('cuda'), to(ct.float64), to('cpu', ct.float64)
    to(...args) {
      let device = null, dtype = -1;
      for (const a of args) if (typeof a === 'string' || (a && 'type' in a)) device = a; else if (a) dtype = a.value;
      api.nn_module_to(this._m, device, dtype);
      return this;
    }
    requiresGrad_(v = true) { api.nn_module_requires_grad(this._m, v); return this; }
    zeroGrad(setToNone = true) { api.nn_module_zero_grad(this._m, setToNone); }
    numParameters({ onlyTrainable = false } = {}) { return Number(api.nn_module_num_parameters(this._m, !!onlyTrainable)); }
    toString() { return api.nn_module_repr(this._m); } // Python's repr(module)
    [Symbol.for('nodejs.util.inspect.custom')]() { return this._m.handle ? this.toString() : 'Module(<disposed>)'; }
    clone() { return adoptModule(api.nn_module_clone(this._m)); } // copy.deepcopy
    // Output shapes of every submodule for inputs of these shapes, without computing (meta tensors).
    shapeCheck(...shapes) { return api.nn_module_shape_check(this._m, shapes); }
    dispose() { this._m.dispose(); }
    [Symbol.dispose]() { this.dispose(); }
    // After the Promise calls pending on it (forwardAsync), then dispose().
    async [Symbol.asyncDispose]() { await this._m[Symbol.asyncDispose](); }
  }

  function readDict(d) {
    try {
      const n = api.tensor_dict_size(d);
      const out = new Array(n);
      for (let i = 0; i < n; i++) out[i] = [api.tensor_dict_key(d, i), api.tensor_dict_get(d, i)];
      return out;
    } finally { d.dispose(); }
  }

  // nn.Parameter(data, requiresGrad): the tensor itself (a new handle to it), marked so that
  // assigning it to a Module property registers it as a parameter.
  class Parameter extends ct.Tensor {
    constructor(data, requiresGrad = true) {
      super(steal(api.tensor_ref(data)));
      this.requiresGrad = requiresGrad;
    }
  }

  // A module of one of the library's built-in kinds: positional arguments in
  // torch.nn's order, then an options object (camelCase or Python's names).
  // Every argument goes by name; module-valued ones (TransformerEncoder's
  // encoder_layer and norm: the catalogue's type "Module") cannot be text,
  // so they go by handle through ctorch_nn_new_with_modules, which copies or
  // keeps each as torch.nn does (the layer deep-copied, the norm shared).
  class Builtin extends Module {
    constructor(...args) {
      const spec = new.target.spec;
      const opts = args.length && R.isOpts(args[args.length - 1]) ? args.pop() : {};
      if (args.length > spec.init.length) throw new TypeError(`${spec.kind}: too many arguments`);
      const named = [...args.map((v, i) => [spec.init[i].name, v]),
        ...Object.entries(opts).map(([k, v]) => [snake(k), v])];
      const mods = named.filter(([, v]) => v instanceof Module);
      const rest = named.filter(([, v]) => !(v instanceof Module)).map(([k, v]) => `${k}=${text(v)}`).join(', ');
      super(mods.length
        ? api.nn_new_with_modules(spec.kind, rest, mods.map(([k]) => k), mods.map(([, m]) => m._m))
        : api.nn_new(spec.kind, rest));
    }
    forward(...inputs) {
      const n = inputs.length;
      const kw = n && R.isOpts(inputs[n - 1]) ? inputs.pop() : null;
      const res = forwardN(this._m, inputs, kw);
      const s = this.constructor.structure;
      if (s) return s(res);
      return res.length === 1 ? res[0] : res;
    }
  }

  // Containers (hand-written: their constructors take modules).
  class Sequential extends Builtin {
    constructor(...modules) {
      super();
      for (const m of modules) this.append(m);
    }
    append(m) {
      api.nn_module_append(this._m, m._m);
      this[MODULES].set(String(this[MODULES].size), m);
      return this;
    }
    get length() { return Number(api.nn_module_num_children(this._m)); }
    at(i) { return this.children()[i < 0 ? this.length + i : i]; }
    [Symbol.iterator]() { return this.children()[Symbol.iterator](); }
  }
  class ModuleList extends Sequential {}
  class ModuleDict extends Builtin {
    constructor(modules = {}) {
      super();
      for (const [k, m] of Object.entries(modules)) this.set(k, m);
    }
    set(k, m) { api.nn_module_register_module(this._m, k, m._m); this[MODULES].set(k, m); return this; }
    get(k) { return this.namedChildren().find(([n]) => n === k)?.[1]; }
    keys() { return this.namedChildren().map(([k]) => k); }
    entries() { return this.namedChildren(); }
  }

  const BUILTINS = {};
  // A JS object for a NEW module handle the library made (a child, a clone): its kind's class.
  function adoptModule(h) {
    const C = BUILTINS[api.nn_module_kind(h)] || Builtin;
    const o = Object.create(C.prototype);
    o[MODULES] = new Map();
    o._m = h;
    return o;
  }

  const nn = ct.nn;
  Object.assign(nn, { Module, Parameter, Sequential, ModuleList, ModuleDict });
  const kinds = require('./nn_classes')(Builtin); // generated: {Linear: class ..., ...}
  Object.assign(BUILTINS, kinds);
  for (const [k, C] of Object.entries({ Sequential, ModuleList, ModuleDict })) {
    C.spec = { kind: k, init: [] };
    BUILTINS[k] = C;
  }
  Object.assign(nn, kinds, { Sequential, ModuleList, ModuleDict });
};
