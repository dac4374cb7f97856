'use strict';
// ctorch for Node.js: the runtime of the generated binding (capi.js and
// ops.js are generated from api.json by bindings-gen/ctorch_gen/emit_node.py).
// This file finds and loads libctorch, wires the runtime's parts together and
// defines the module's exports: errors.js (statuses as CtorchError),
// tensor.js (the Tensor class, memory, scopes), convert.js (what api.js and
// ops.js call: conversions, dispatch, handles), serialize.js (save and load),
// training.js (optimizers, data), nn.js (modules), promise.js (Promises),
// lm.js (language models), dist.js (process groups).
// Node 18 lacks the explicit-resource-management symbols (Node 20 has them): the
// polyfill TypeScript's `using` and Node itself look up.
if (!Symbol.dispose) Object.defineProperty(Symbol, 'dispose', { value: Symbol('Symbol.dispose') });
if (!Symbol.asyncDispose) Object.defineProperty(Symbol, 'asyncDispose', { value: Symbol('Symbol.asyncDispose') });
const fs = require('fs');
const path = require('path');
const koffi = require('koffi');
const capi = require('./capi');
const input = require('./input');

// Where libctorch is, in this order (docs/packages.md): $CTORCH_LIB; the build
// tree this package was generated in (build_config.json, which the npm tarball
// leaves out); the library the install script built (native/lib.json);
// pkg-config's libdir for ctorch plus the SONAME file (a prefix on
// PKG_CONFIG_PATH, or Debian's libctorch-dev); else the bare SONAME, which
// the system's loader resolves (Debian's libctorch0-torch1.13, ldconfig,
// LD_LIBRARY_PATH). The SONAME names the libtorch the generated functions
// were made from, so no other build's library is picked up. Every place
// looked at is recorded: when nothing loads, the error lists them all.
function findLibrary(tried) {
  if (process.env.CTORCH_LIB) return process.env.CTORCH_LIB;
  tried.push('$CTORCH_LIB: not set');
  const cfgFile = path.join(__dirname, 'build_config.json');
  try {
    const cfg = JSON.parse(fs.readFileSync(cfgFile, 'utf8'));
    if (cfg.lib && fs.existsSync(cfg.lib)) return cfg.lib;
    tried.push(`${cfgFile}: names ${cfg.lib}, which does not exist`);
  } catch (e) { tried.push(`${cfgFile}: absent (a package not generated in a build tree)`); }
  const built = path.join(__dirname, 'native', 'lib.json');
  if (fs.existsSync(built)) {
    const file = path.join(JSON.parse(fs.readFileSync(built, 'utf8')).libdir, capi.SONAME);
    if (fs.existsSync(file)) return file;
    tried.push(`${built}: names ${file}, which does not exist`);
  } else tried.push(`${built}: absent (the install script built no library)`);
  try {
    const libdir = require('child_process').execFileSync('pkg-config', ['--variable=libdir', 'ctorch'],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const file = libdir && path.join(libdir, capi.SONAME);
    if (file && fs.existsSync(file)) return file;
    tried.push(`pkg-config --variable=libdir ctorch: ${file || '(empty)'} does not exist`);
  } catch (e) { tried.push('pkg-config --variable=libdir ctorch: no pkg-config, or no ctorch.pc on PKG_CONFIG_PATH'); }
  return capi.SONAME;
}

// koffi runs an async call on a stack of its own, 128 KiB by default: too
// little for libtorch (Adam's step overflowed it: a segfault), so as much as
// the calls get on the JS thread's side, twice koffi's synchronous 2 MiB.
{
  const cfg = koffi.config();
  if (cfg.async_stack_size < 4 << 20) koffi.config({ ...cfg, async_stack_size: 4 << 20 });
}

const triedPlaces = [];
const LIB_PATH = findLibrary(triedPlaces);
let lib;
try {
  lib = koffi.load(LIB_PATH);
} catch (e) {
  const last = process.env.CTORCH_LIB ? `$CTORCH_LIB=${LIB_PATH}` : `${LIB_PATH} through the system's loader (ld.so.cache, LD_LIBRARY_PATH)`;
  throw new Error(`ctorch: cannot load libctorch. Tried, in order:\n  ${[...triedPlaces, `${last}: ${e.message}`].join('\n  ')}\n` +
    'Install ctorch (its Debian packages or cmake --install), or set CTORCH_LIB to the path of libctorch.so.');
}
// The load check every binding makes (docs/packages.md, "The load check"),
// before the declarations (a library of another API lacks some of their
// symbols): the library refuses when a libtorch of another release is loaded
// beside it; its ctorch and libtorch versions must be those this package was
// generated for, then its ABI hash. CTORCH_IGNORE_ABI=1 skips the two
// comparisons, never the library's own refusal.
{
  const lastError = lib.func('const char *ctorch_last_error(void)');
  const got = ['ctorch_version', 'ctorch_torch_version', 'ctorch_abi_hash'].map((name) => {
    const out = [null];
    if (lib.func(`int32_t ${name}(_Out_ const char **out)`)(out) !== 0) {
      throw new Error(`ctorch: ${LIB_PATH}: ${lastError()}`);
    }
    return out[0];
  });
  if (!process.env.CTORCH_IGNORE_ABI) {
    if (got[0] !== capi.CTORCH_VERSION || got[1] !== capi.TORCH_VERSION) {
      throw new Error(`ctorch: ${LIB_PATH} is libctorch ${got[0]} built for libtorch ${got[1]}; this package was ` +
        `generated for libctorch ${capi.CTORCH_VERSION} built for libtorch ${capi.TORCH_VERSION} (load that library: ` +
        'CTORCH_LIB, or install the package generated with it)');
    }
    if (got[2] !== capi.ABI_HASH) {
      throw new Error(`ctorch: ${LIB_PATH} has ABI ${got[2]}, this package was generated for ${capi.ABI_HASH}`);
    }
  }
}
const { T, F } = capi.declare(lib);
input.guardIntegers(F); // integers range-checked before koffi would wrap them (input.js)
const E = capi.ENUMS;

// ---- errors: tickets (koffi's async calls run on worker threads): errors.js ---
const { CtorchError, errorOf, fail, check } = require('./errors')(F, capi);

// The generated api.js, for the parts made before it (set once it exists, below).
const late = {};
// ---- tensors, native memory, garbage collection, scopes: tensor.js -------------
const { config, memoryBytes, flushFrees, registry, Tensor, isThenable, scope, keep } = require('./tensor')(F, late);
// ---- argument conversions and handles used by api.js and ops.js: convert.js ----
const { R, DTYPES, enumValue, FloatScalar, isOpts, hh } =
  require('./convert')(E, Tensor, CtorchError, fail, check, late);
const api = require('./api')(R, F); // before ops.js: its Scalar defaults use the inline helpers
late.api = api;
R.listOf = api.read_tensor_list; // Tensor[] results (ops.js): the generated reader (api.json handles[].elements)
const { ops, unchecked, PUBLIC, METHODS } = require('./ops')(R, F);
input.setCallers(function* () { // for error messages naming a refused integer's argument (input.js)
  yield* Object.entries(api);
  for (const [g, fn] of Object.entries(ops)) { yield [g, fn]; yield* Object.entries(fn); }
  for (const [g, fn] of Object.entries(unchecked)) { yield [g, fn]; yield* Object.entries(fn); }
});
api.set_error_tickets(true); // the tickets (errors.js), from here on

// ---- the module ------------------------------------------------------------
const ct = module.exports;
ct.CtorchError = CtorchError;
ct.Tensor = Tensor;
ct.ops = ops;
// The operators api.json marks unsafe (ops_json.unsafe: bad input can crash the process,
// Rust's `unsafe fn`) exist only here, never as ct.X, ct.ops.X or a Tensor method.
ct.unchecked = unchecked;
ct.capi = api; // every hand-written C function of api.json, typed (ct.capi.tensor_dim(t), ...)
ct.lib = { path: LIB_PATH, F, T, koffi };
ct.config = config;
ct.version = capi.CTORCH_VERSION;
ct.abiHash = capi.ABI_HASH;
ct.scope = scope;
ct.keep = keep;
ct.memoryBytes = memoryBytes;
ct.flushFrees = flushFrees;
ct.float = (v) => new FloatScalar(v);
for (const d of Object.values(DTYPES)) ct[d.name] = d;
const wrapEnum = (name, prefix, values) => {
  for (const [k, v] of Object.entries(values)) ct[k.slice(prefix.length).toLowerCase() + name] = enumValue({ value: v });
};
ct.strided = enumValue({ value: E.ctorch_layout.CTORCH_LAYOUT_STRIDED });
ct.contiguous_format = enumValue({ value: E.ctorch_memory_format.CTORCH_MEMORY_CONTIGUOUS });
ct.preserve_format = enumValue({ value: E.ctorch_memory_format.CTORCH_MEMORY_PRESERVE });
ct.channels_last = enumValue({ value: E.ctorch_memory_format.CTORCH_MEMORY_CHANNELS_LAST });
void wrapEnum;
for (const [mod, names] of Object.entries(PUBLIC)) {
  const target = mod ? (ct[mod] = ct[mod] || {}) : ct;
  for (const [pub, g] of Object.entries(names)) if (!(pub in target)) target[pub] = ops[g];
}
for (const [g, selfFirst] of METHODS) {
  const fn = ops[g];
  Tensor.prototype[g] = selfFirst ? function (...a) { return fn(this, ...a); }
    : function (...a) {
      const n = a.length;
      if (n && isOpts(a[n - 1])) return fn(...a.slice(0, -1), Object.assign({ self: this }, a[n - 1]));
      return fn(...a, { self: this });
    };
}

// ---- the Tensor API: generated functions (api.js) under JS names --------------
Object.defineProperties(Tensor.prototype, {
  shape: { get() { return api.tensor_sizes(this); } },
  dtype: { get() { return api.tensor_dtype(this); } },
  requiresGrad: {
    get() { return api.tensor_requires_grad(this); },
    set(v) { api.tensor_set_requires_grad(this, v); },
  },
  grad: { get() { return api.tensor_grad(this); } },
});
Tensor.prototype.stride = function () { return api.tensor_strides(this); };
Tensor.prototype.numel = function () { return api.tensor_numel(this); };
// item() is a number for every dtype (a ct.bool tensor's: 1 or 0), so
// `loss.item()` is a number to TypeScript; itemBool() is the bool getter.
Tensor.prototype.item = function () {
  const dt = this.dtype.name;
  if (dt === 'bool') return Number(api.tensor_item_bool(this));
  if (dt.startsWith('int') || dt === 'uint8') return api.tensor_item_int64(this);
  return api.tensor_item_double(this);
};
Tensor.prototype.itemBool = function () {
  return this.dtype.name === 'bool' ? api.tensor_item_bool(this) : this.item() !== 0;
};
const TYPED = { float32: Float32Array, float64: Float64Array, int64: BigInt64Array, int32: Int32Array, int16: Int16Array,
  int8: Int8Array, uint8: Uint8Array, bool: Uint8Array };
Tensor.prototype.toTypedArray = function () {
  const C = TYPED[this.dtype.name];
  if (!C) throw new TypeError(`no typed array for ${this.dtype}`);
  const bytes = api.tensor_copy_to(this); // a fresh Uint8Array at offset 0: aligned for C
  return new C(bytes.buffer, 0, bytes.length / C.BYTES_PER_ELEMENT);
};
Tensor.prototype.toArray = function () {
  const flat = Array.from(this.toTypedArray(), (x) => (typeof x === 'bigint' ? Number(x) : x));
  const shape = this.shape;
  const nest = (off, d) => {
    if (d === shape.length) return this.dtype.name === 'bool' ? flat[off] !== 0 : flat[off];
    const step = shape.slice(d + 1).reduce((a, b) => a * b, 1);
    return Array.from({ length: shape[d] }, (_, i) => nest(off + i * step, d + 1));
  };
  return nest(0, 0);
};
Tensor.prototype.backward = function (opts = {}) { // PyTorch's defaults: retainGraph = createGraph
  const create = !!opts.createGraph;
  api.tensor_backward(this, opts.gradient || null, opts.retainGraph === undefined ? create : opts.retainGraph,
    create, opts.inputs || null);
};
Tensor.prototype.detach = function () { return api.tensor_detach(this); };
Tensor.prototype.to = function (dt) { return api.tensor_to_dtype(this, dt.value); };
Tensor.prototype.requiresGrad_ = function (v = true) { this.requiresGrad = v; return this; };
// torch.set_printoptions for toString/inspect (null: PyTorch's default);
// the text is Python's str(tensor) (ctorch_tensor_format).
const printOpts = { precision: null, threshold: null, edgeitems: null, linewidth: null, sciMode: null };
ct.setPrintOptions = function (opts = {}) {
  for (const [k, v] of Object.entries(opts)) {
    if (!(k in printOpts)) throw new TypeError(`setPrintOptions: unknown option '${k}'`);
    printOpts[k] = v;
  }
};
const printArg = (v) => (v === null || v === undefined ? -1n : v === Infinity ? 2n ** 63n - 1n : BigInt(v));
Tensor.prototype.toString = function () {
  if (!this._h) return 'Tensor(<disposed>)';
  try {
    return api.tensor_format(this, printArg(printOpts.precision), printArg(printOpts.threshold),
      printArg(printOpts.edgeitems), printArg(printOpts.linewidth),
      printOpts.sciMode === null || printOpts.sciMode === undefined ? -1 : printOpts.sciMode ? 1 : 0);
  } catch (e) { return api.tensor_to_string(this); } // sparse, quantized: libtorch's printing
};
Tensor.prototype[Symbol.for('nodejs.util.inspect.custom')] = function () { return this.toString(); };

// ---- creation (the checks of the data: input.js) ----------------------------
ct.tensor = function (data, opts = {}) {
  const [flat, shape, inferred] = input.tensorData(data, opts);
  const dt = opts.dtype || ct[inferred];
  if (!dt || DTYPES[dt.value] !== dt) throw new TypeError(`ct.tensor: dtype must be a ct dtype (ct.float32, ...), got ${String(opts.dtype)}`);
  const C = TYPED[dt.name];
  if (!C) throw new TypeError(`ct.tensor: no typed array for ${dt}; make the tensor in another dtype and convert it with .to()`);
  const arr = flat instanceof C && !(flat instanceof Uint8ClampedArray) && dt.name !== 'bool' ? flat : input.typedFor(flat, dt.name, C);
  const t = api.tensor_from_data(arr, shape, dt.value);
  if (opts.requiresGrad) t.requiresGrad = true;
  return t;
};
ct.manualSeed = (s) => api.manual_seed(s); // PyTorch's range for a seed (input.js, toSeed)
ct.setNumThreads = api.set_num_threads;
// Grad mode is libtorch's per-thread state. An async function cannot hold
// it across `await`: while it waits, other callbacks run on the same thread
// and would run without a graph too, and the Promise calls (promise.js) run
// on koffi's worker threads, which the mode of this thread does not reach.
// So an async function (or one returning a Promise) is refused: run the
// synchronous part inside the mode, `await` outside it.
function autogradScope(kind, name, fn) {
  if (typeof fn !== 'function') throw new TypeError(`ct.${name}(fn): fn must be a function`);
  const refuse = (why) => new TypeError(`ct.${name}(fn): fn ${why}; grad mode is per thread and cannot hold across ` +
    `await (other callbacks would run inside it). Call it around synchronous code: ` +
    `const y = ct.${name}(() => model.forward(x)), and await outside it`);
  if (fn.constructor && fn.constructor.name === 'AsyncFunction') throw refuse('is an async function');
  const s = api.autograd_scope_enter(kind);
  let r;
  try { r = fn(); } finally { api.autograd_scope_leave(s); }
  if (isThenable(r)) throw refuse('returned a Promise (its code after the first await ran with grad enabled)');
  return r;
}
ct.noGrad = (fn) => autogradScope(E.ctorch_autograd_scope_kind.CTORCH_SCOPE_NO_GRAD, 'noGrad', fn);
ct.inferenceMode = (fn) => autogradScope(E.ctorch_autograd_scope_kind.CTORCH_SCOPE_INFERENCE_MODE, 'inferenceMode', fn);

// torch.Generator(device).manualSeed(s): accepted by every operator's
// `generator` option (ct.randn([2, 3], { generator: g })), as are the
// handles ct.capi.generator_new/generator_default return.
api.Generator.prototype._is_generator = true;
class Generator extends api.Generator {
  constructor(device = 'cpu') { super(api.generator_new(device, 67280421310721n)._take()); } // torch's default seed
  manualSeed(s) { api.generator_set_seed(this, s); return this; }
  initialSeed() { return api.generator_initial_seed(this); }
}
ct.Generator = Generator;

// ---- saving and loading: serialize.js ------------------------------------------
const { readDictMap } = require('./serialize')(ct, { api });

// ---- optimizers and data, torch.nn.utils and torch.nn.init: training.js --------
const { DataLoader } = require('./training')(ct, { api, E, F, check, hh });
// The module classes (nn.js; nn_classes.js is generated from api.json's "nn_modules").
// steal: a tensor's handle taken from its object (ownership passes to C).
const steal = (t) => { const hv = t._h; t._h = 0n; registry.unregister(t); return hv; };
const nnRt = { api, R, F, T, koffi, E, steal, check };
require('./nn')(ct, nnRt);

// ---- asynchronous calls ------------------------------------------------------
// ct.callAsync('ctorch_<name>', ...C arguments) runs one C function (koffi's
// declaration, raw handles and out-arrays) on a koffi worker thread and
// resolves once it returned 0; errors come back through tickets. The Promise
// API built on it (model.forwardAsync, t.backwardAsync, opt.stepAsync,
// loader.nextAsync / for await, ct.saveAsync / ct.loadAsync) is promise.js.
ct.callAsync = function (cName, ...args) {
  const fn = F[cName];
  if (!fn) return Promise.reject(new TypeError(`ct.callAsync: no C function '${cName}'`));
  return new Promise((resolve, reject) => {
    fn.async(...args, (err, st) => {
      if (err) reject(err);
      else if (st !== 0) reject(errorOf(st));
      else resolve();
    });
  });
};
require('./promise')(ct, { api, R, F, check, Tensor, DataLoader, readDictMap, kwText: nnRt.kwText,
  takePending: nnRt.takePending });
ct.errorOf = errorOf;
// ---- language models (ct.lm): lm.js --------------------------------------------
require('./lm')(ct, { api, R, F });
// ---- training past one process (ct.distributed): dist.js ------------------------
require('./dist')(ct, { api });

