'use strict';
// ctorch for Node.js: the runtime of the generated binding (capi.js and
// ops.js are generated from api.json by bindings-gen/ctorch_gen/emit_node.py).
const fs = require('fs');
const path = require('path');
const v8 = require('v8');
const vm = require('vm');
const koffi = require('koffi');
const capi = require('./capi');

function findLibrary() {
  if (process.env.CTORCH_LIB) return process.env.CTORCH_LIB;
  try {
    const cfg = JSON.parse(fs.readFileSync(path.join(__dirname, 'build_config.json'), 'utf8'));
    if (cfg.lib && fs.existsSync(cfg.lib)) return cfg.lib;
  } catch (e) { /* not generated in a build tree */ }
  return capi.SONAME;
}

const LIB_PATH = findLibrary();
const lib = koffi.load(LIB_PATH);
const { T, F } = capi.declare(lib);
const E = capi.ENUMS;

// ---- errors: tickets (koffi's async calls run on worker threads) ----------
// With tickets on, a failing call's status carries a ticket that names its
// message in ctorch's failure log: the message is reachable from the JS
// thread whichever thread made the call.
F.ctorch_set_error_tickets(null, 1);
const STATUS_NAMES = Object.fromEntries(Object.entries(E.ctorch_status).map(([k, v]) => [v, k]));
let msgBuf = Buffer.alloc(512);
const msgLen = new BigUint64Array(1);
const msgStatus = new Int32Array(1);
// The status macros as data (api.json's macros[].bits).
const bitsOf = (b) => (st) => ((st >>> 0) >>> b.shift) & b.mask;
const statusCode = bitsOf(capi.STATUS_BITS.CTORCH_STATUS_CODE);
const statusTicket = bitsOf(capi.STATUS_BITS.CTORCH_STATUS_TICKET);
// How large a caller buffer must be (api.json's buffer_size): "query" rules
// multiply the results of the functions they name, called with this call's
// arguments (args: parameter name -> value).
const qOut = { int64_t: BigInt64Array, size_t: BigUint64Array, ctorch_dtype: Int32Array };
function bufferSize(fn, param, args) {
  const rule = capi.BUFFER_SIZES[fn][param];
  const call = (c) => {
    const f = capi.FUNCTIONS_BY_NAME[c.call];
    const outT = f.out.replace(/ \*$/, '');
    const cell = new qOut[outT](1);
    const vals = f.in.map((n) => (typeof c.args[n] === 'object' ? call(c.args[n]) : args[c.args[n]]));
    check(F[c.call](cell, ...vals));
    return Number(cell[0]);
  };
  return rule.product.reduce((n, c) => n * call(c), 1);
}

class CtorchError extends Error {
  constructor(status, message) {
    super(`${STATUS_NAMES[status] || 'CTORCH_?'}: ${message}`);
    this.name = 'CtorchError';
    this.status = status;
    this.statusName = STATUS_NAMES[status] || 'CTORCH_?';
  }
}

function errorOf(st) {
  const code = statusCode(st);
  const ticket = statusTicket(st);
  let msg = '(no message)';
  const plus = capi.BUFFER_SIZES.ctorch_error_message.buf.plus;
  while (ticket && F.ctorch_error_message(msgStatus, msgLen, msgBuf, msgBuf.length, ticket) === 0) {
    const need = Number(msgLen[0]) + plus;
    if (need > msgBuf.length) { msgBuf = Buffer.alloc(need); continue; } // truncated: again, as large as reported
    msg = msgBuf.toString('utf8', 0, Number(msgLen[0]));
    break;
  }
  return new CtorchError(code, msg);
}

function fail(st) { throw errorOf(st); }
function check(st) { if (st !== 0) throw errorOf(st); }

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
const memOut = new BigInt64Array(1);
function memoryBytes(deviceType) {
  flushFrees();
  check(F.ctorch_memory_bytes(memOut, deviceType === undefined ? 0 : deviceType));
  return Number(memOut[0]);
}
// The CPU byte counter itself, read in place (no foreign call).
const counterAddr = (() => { const a = new BigUint64Array(1); check(F.ctorch_memory_cpu_counter(a)); return a[0]; })();
let baseline = 0;
let sinceCheck = 0;
function pressure() {
  sinceCheck = 0;
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
// except the values returned (tensors, or arrays/objects of tensors).
const scopes = [];

class Tensor {
  constructor(h) {
    this._h = h;
    registry.register(this, h, this);
    if (scopes.length) scopes[scopes.length - 1].push(this);
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
}

function scope(fn) {
  const mine = [];
  scopes.push(mine);
  let result;
  try {
    result = fn();
  } finally {
    scopes.pop();
    const keep = new Set();
    (function mark(v) {
      if (v instanceof Tensor) keep.add(v);
      else if (Array.isArray(v)) v.forEach(mark);
      else if (v && typeof v === 'object' && v.constructor === Object) Object.values(v).forEach(mark);
    })(result);
    for (const t of mine) {
      if (keep.has(t)) {
        if (scopes.length) scopes[scopes.length - 1].push(t); // survives into the enclosing scope
      } else t.dispose();
    }
  }
  return result;
}

function keep(t) { // leaves the current scope alive
  if (scopes.length) {
    const s = scopes[scopes.length - 1];
    const i = s.indexOf(t);
    if (i >= 0) s.splice(i, 1);
  }
  return t;
}

// ---- argument conversions used by ops.js ----------------------------------
const EMPTY = Object.freeze({});
const OUTH0 = new BigUint64Array(1), OUTH1 = new BigUint64Array(1), OUTH2 = new BigUint64Array(1);
const OUTH3 = new BigUint64Array(1), OUTH4 = new BigUint64Array(1), OUTH5 = new BigUint64Array(1);
const OUTI64 = new BigInt64Array(1), OUTF64 = new Float64Array(1), OUTI32 = new Int32Array(1);
const EMPTY_I64 = new BigInt64Array(1), EMPTY_F64 = new Float64Array(1), EMPTY_H = new BigUint64Array(1);
const SC = E.ctorch_scalar_kind;

class FloatScalar { constructor(v) { this.v = v; } } // ct.float(2): a FLOAT Scalar although integral

function isOpts(x) { return x !== null && typeof x === 'object' && x.constructor === Object; }
function isT(x) { return x instanceof Tensor; }
function isNum(x) { return typeof x === 'number' || typeof x === 'boolean' || typeof x === 'bigint' || x instanceof FloatScalar; }
function h(x) {
  if (x instanceof Tensor) {
    if (!x._h) throw new Error('ctorch: tensor used after dispose()');
    return x._h;
  }
  throw new TypeError(`expected a Tensor, got ${x === null ? 'null' : typeof x}`);
}
function ho(x) { return x === null || x === undefined ? null : (x._is_generator ? x._h : h(x)); }
function req(v, fn, name) {
  if (v === undefined) throw new TypeError(`${fn}: missing argument '${name}'`);
  return v;
}
function dflt(v, d) { return v === undefined ? d : v; }
function len(v) { return v === null || v === undefined ? 0 : v.length; }
function lenOf(v, size) {
  if (v === null || v === undefined) return 0;
  return Array.isArray(v) || ArrayBuffer.isView(v) ? v.length : (size || 1);
}
function handles(v, elemOpt, opt) {
  if (v === null || v === undefined) {
    if (!opt) throw new TypeError('expected a list of tensors');
    return null;
  }
  if (v.length === 0) return EMPTY_H; // [] is a non-NULL pointer with length 0
  const a = new BigUint64Array(v.length);
  for (let i = 0; i < v.length; i++) a[i] = elemOpt && (v[i] === null || v[i] === undefined) ? 0n : h(v[i]);
  return a;
}
function i64s(v, size, opt) {
  if (v === null || v === undefined) {
    if (!opt) throw new TypeError('expected a list of integers');
    return null;
  }
  if (typeof v === 'number' || typeof v === 'bigint') v = new Array(size || 1).fill(v);
  if (v.length === 0) return EMPTY_I64;
  const a = new BigInt64Array(v.length);
  for (let i = 0; i < v.length; i++) a[i] = BigInt(v[i]);
  return a;
}
function f64s(v, size, opt) {
  if (v === null || v === undefined) {
    if (!opt) throw new TypeError('expected a list of numbers');
    return null;
  }
  if (typeof v === 'number') v = new Array(size || 1).fill(v);
  return v.length ? Float64Array.from(v) : EMPTY_F64;
}
function bools(v, size, opt) {
  if (v === null || v === undefined) return null;
  if (typeof v === 'boolean') v = new Array(size).fill(v);
  return Int32Array.from(v, (x) => (x ? 1 : 0));
}
function strs(v) { return v === null || v === undefined ? null : (typeof v === 'string' ? [v] : v); }
const scalarCache = new Map();
function scalarOf(v, kind) {
  if (kind === 'BOOL') return { kind: SC.CTORCH_SCALAR_BOOL, reserved: 0, i: v ? 1 : 0, f: 0, imag: 0 };
  if (kind === 'INT') return { kind: SC.CTORCH_SCALAR_INT, reserved: 0, i: v, f: 0, imag: 0 };
  return { kind: SC.CTORCH_SCALAR_FLOAT, reserved: 0, i: 0, f: v, imag: 0 };
}
function scalar(v) {
  if (typeof v === 'number') {
    let s = scalarCache.get(v);
    if (s === undefined) {
      s = Number.isInteger(v) && Math.abs(v) <= Number.MAX_SAFE_INTEGER ? scalarOf(v, 'INT') : scalarOf(v, 'FLOAT');
      if (scalarCache.size < 1024) scalarCache.set(v, s);
    }
    return s;
  }
  if (typeof v === 'boolean') return scalarOf(v, 'BOOL');
  if (typeof v === 'bigint') return scalarOf(v, 'INT');
  if (v instanceof FloatScalar) return scalarOf(v.v, 'FLOAT');
  if (v && v.kind !== undefined && v.reserved !== undefined) return v; // already a ctorch_scalar
  if (v instanceof Tensor) return scalar(v.item());
  throw new TypeError(`expected a number for a Scalar argument, got ${typeof v}`);
}
function scalaro(v) { return v === null || v === undefined ? null : scalar(v); }
function scalars(v, size, opt) {
  if (v === null || v === undefined) return null;
  return v.map(scalar);
}
function scalarValue(s) {
  if (s.kind === SC.CTORCH_SCALAR_INT) return Number(s.i);
  if (s.kind === SC.CTORCH_SCALAR_BOOL) return Number(s.i) !== 0;
  return s.f;
}
function i64o(v) { return v === null || v === undefined ? null : BigInt64Array.of(BigInt(v)); }
function f64o(v) { return v === null || v === undefined ? null : Float64Array.of(v); }
function boolo(v) { return v === null || v === undefined ? null : Int32Array.of(v ? 1 : 0); }
function i32o(v) { return v === null || v === undefined ? null : Int32Array.of(enumv(v)); }
const ENUM_NAMES = {};
for (const e of ['ctorch_reduction', 'ctorch_grid_sampler_interpolation', 'ctorch_grid_sampler_padding',
  'ctorch_embedding_bag_mode']) {
  const names = Object.keys(E[e]);
  let pre = names[0];
  for (const n of names) while (!n.startsWith(pre)) pre = pre.slice(0, -1);
  pre = pre.slice(0, pre.lastIndexOf('_') + 1);
  ENUM_NAMES[e] = Object.fromEntries(names.map((n) => [n.slice(pre.length).toLowerCase(), E[e][n]]));
}
function enumv(v, en) {
  if (typeof v === 'string' && en) {
    const x = ENUM_NAMES[en][v];
    if (x === undefined) throw new RangeError(`invalid value '${v}' for ${en}`);
    return x;
  }
  return typeof v === 'object' && v !== null ? v.value : v;
}
const DEVICE_TYPES = Object.fromEntries(Object.entries(E.ctorch_device_type).map(([k, v]) => [k.slice(14).toLowerCase(), v]));
function device(v) {
  if (typeof v === 'string') {
    const [name, idx] = v.split(':');
    if (!(name in DEVICE_TYPES)) throw new RangeError(`unknown device '${v}'`);
    return { type: DEVICE_TYPES[name], index: idx === undefined ? -1 : Number(idx) };
  }
  return v;
}
function deviceo(v) { return v === null || v === undefined ? null : device(v); }

function tensorOf(hv) { return hv === 0n ? null : new Tensor(hv); }
// A result api.json does not flag null_result: never NULL on success.
function tensorReq(hv) {
  if (hv === 0n) throw new CtorchError(E.ctorch_status.CTORCH_UNKNOWN, 'a result api.json says is never undefined came back NULL');
  return new Tensor(hv);
}
const listSize = new BigUint64Array(1), listElem = new BigUint64Array(1);
function listOf(lh) {
  try {
    check(F.ctorch_tensor_list_size(listSize, lh));
    const n = Number(listSize[0]);
    const out = new Array(n);
    for (let i = 0; i < n; i++) {
      check(F.ctorch_tensor_list_get(listElem, lh, i));
      out[i] = tensorOf(listElem[0]);
    }
    return out;
  } finally {
    F.ctorch_tensor_list_free(lh);
  }
}
const DTYPES = {};
for (const [k, v] of Object.entries(E.ctorch_dtype)) {
  DTYPES[v] = Object.freeze({ value: v, name: k.slice(7).toLowerCase(), toString() { return `ctorch.${this.name}`; } });
}
function dtypeOf(v) { return DTYPES[v]; }

function accepts(kind, v) {
  if (kind.endsWith('?')) {
    if (v === null || v === undefined) return true;
    kind = kind.slice(0, -1);
  }
  if (kind.endsWith('[]')) {
    const el = kind.slice(0, -2);
    if ((el === 'int' || el === 'float') && typeof v === 'number') return true;
    if (el === 'bool' && typeof v === 'boolean') return true;
    if (!Array.isArray(v)) return false;
    return v.every((x) => accepts(el, x));
  }
  switch (kind) {
    case 'Tensor': return v instanceof Tensor;
    case 'Scalar': return isNum(v);
    case 'int': return Number.isInteger(v) || typeof v === 'bigint';
    case 'float': return typeof v === 'number';
    case 'bool': return typeof v === 'boolean';
    case 'str': case 'Dimname': return typeof v === 'string';
    case 'ScalarType': return v !== null && typeof v === 'object' && DTYPES[v.value] === v;
    case 'Layout': case 'MemoryFormat': return v !== null && typeof v === 'object' && 'value' in v;
    case 'Device': return typeof v === 'string' || (v !== null && typeof v === 'object' && 'type' in v);
    case 'Generator': return v !== null && typeof v === 'object' && v._is_generator === true;
    default: return false;
  }
}
function binds(sig, args) {
  let n = args.length, o = EMPTY;
  if (n > 0 && isOpts(args[n - 1])) { o = args[n - 1]; n--; }
  const pos = sig.filter((p) => !p[3]);
  if (n > pos.length) return false;
  const names = new Set(sig.map((p) => p[0]));
  for (const k of Object.keys(o)) if (!names.has(k)) return false;
  for (let i = 0; i < pos.length; i++) {
    const [name, kind, hasDefault] = pos[i];
    const v = i < n ? args[i] : o[name];
    if (v === undefined) { if (!hasDefault) return false; } else if (!accepts(kind, v)) return false;
  }
  for (const [name, kind, hasDefault, kw] of sig) {
    if (!kw) continue;
    const v = o[name];
    if (v === undefined) { if (!hasDefault) return false; } else if (!accepts(kind, v)) return false;
  }
  return true;
}
function dispatch(name, group, args) {
  for (const [fn, sig] of group) if (binds(sig, args)) return fn.apply(null, args);
  throw new TypeError(`${name}(): no overload accepts these arguments; the overloads are:\n  ` +
    group.map((g) => g[2]).join('\n  '));
}

const R = {
  EMPTY, OUTH0, OUTH1, OUTH2, OUTH3, OUTH4, OUTH5, OUTI64, OUTF64, OUTI32, isOpts, isT, isNum, h, ho, req, dflt,
  len, lenOf, handles, i64s, f64s, bools, strs, scalar, scalaro, scalars, scalarOf, scalarValue, i64o, f64o,
  boolo, i32o, enumv, device, deviceo, tensorOf, tensorReq, listOf, dtypeOf, dispatch, fail,
};
const { ops, PUBLIC, METHODS } = require('./ops')(R, F);

// ---- the module ------------------------------------------------------------
const ct = module.exports;
ct.CtorchError = CtorchError;
ct.Tensor = Tensor;
ct.ops = ops;
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
  for (const [k, v] of Object.entries(values)) ct[k.slice(prefix.length).toLowerCase() + name] = Object.freeze({ value: v });
};
ct.strided = Object.freeze({ value: E.ctorch_layout.CTORCH_LAYOUT_STRIDED });
ct.contiguous_format = Object.freeze({ value: E.ctorch_memory_format.CTORCH_MEMORY_CONTIGUOUS });
ct.preserve_format = Object.freeze({ value: E.ctorch_memory_format.CTORCH_MEMORY_PRESERVE });
ct.channels_last = Object.freeze({ value: E.ctorch_memory_format.CTORCH_MEMORY_CHANNELS_LAST });
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

// ---- hand-written Tensor API -----------------------------------------------
const i64 = new BigInt64Array(1), i32 = new Int32Array(1), f64 = new Float64Array(1), szt = new BigUint64Array(1);
const hOut = new BigUint64Array(1);
Object.defineProperties(Tensor.prototype, {
  shape: { get() { return sizesOf(this, F.ctorch_tensor_sizes, 'ctorch_tensor_sizes'); } },
  dtype: { get() { check(F.ctorch_tensor_dtype(i32, h(this))); return DTYPES[i32[0]]; } },
  requiresGrad: {
    get() { check(F.ctorch_tensor_requires_grad(i32, h(this))); return i32[0] !== 0; },
    set(v) { check(F.ctorch_tensor_set_requires_grad(h(this), v ? 1 : 0)); },
  },
  grad: { get() { check(F.ctorch_tensor_grad(hOut, h(this))); return tensorOf(hOut[0]); } },
});
function sizesOf(t, fn, name) {
  const n = bufferSize(name, 'out', { t: h(t) });
  const buf = new BigInt64Array(Math.max(n, 1));
  check(fn(buf, n, h(t)));
  return Array.from(buf.subarray(0, n), Number);
}
Tensor.prototype.stride = function () { return sizesOf(this, F.ctorch_tensor_strides, 'ctorch_tensor_strides'); };
Tensor.prototype.numel = function () { check(F.ctorch_tensor_numel(i64, h(this))); return Number(i64[0]); };
Tensor.prototype.item = function () {
  const dt = this.dtype.name;
  if (dt === 'bool') { check(F.ctorch_tensor_item_bool(i32, h(this))); return i32[0] !== 0; }
  if (dt.startsWith('int') || dt === 'uint8') { check(F.ctorch_tensor_item_int64(i64, h(this))); return Number(i64[0]); }
  check(F.ctorch_tensor_item_double(f64, h(this)));
  return f64[0];
};
const TYPED = { float32: Float32Array, float64: Float64Array, int64: BigInt64Array, int32: Int32Array, int16: Int16Array,
  int8: Int8Array, uint8: Uint8Array, bool: Uint8Array };
Tensor.prototype.toTypedArray = function () {
  const C = TYPED[this.dtype.name];
  if (!C) throw new TypeError(`no typed array for ${this.dtype}`);
  const out = new C(bufferSize('ctorch_tensor_copy_to', 'dst', { t: h(this) }) / C.BYTES_PER_ELEMENT);
  check(F.ctorch_tensor_copy_to(out, out.byteLength, h(this)));
  return out;
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
Tensor.prototype.backward = function (opts = {}) {
  const g = opts.gradient ? h(opts.gradient) : null;
  const create = opts.createGraph ? 1 : 0;
  const retain = opts.retainGraph === undefined ? create : (opts.retainGraph ? 1 : 0);
  check(F.ctorch_tensor_backward(h(this), g, retain, create, null, 0));
};
Tensor.prototype.detach = function () { check(F.ctorch_tensor_detach(hOut, h(this))); return tensorOf(hOut[0]); };
Tensor.prototype.to = function (dt) { check(F.ctorch_tensor_to_dtype(hOut, h(this), dt.value)); return tensorOf(hOut[0]); };
Tensor.prototype.requiresGrad_ = function (v = true) { this.requiresGrad = v; return this; };
Tensor.prototype.toString = function () {
  const out = new BigUint64Array(1);
  check(F.ctorch_tensor_to_string(out, h(this)));
  const s = koffi.decode.string(out[0]);
  F.ctorch_string_free(out[0]);
  return s;
};
Tensor.prototype[Symbol.for('nodejs.util.inspect.custom')] = function () {
  return this._h ? `Tensor(${JSON.stringify(this.shape)}, ${this.dtype})` : 'Tensor(<disposed>)';
};

// ---- creation --------------------------------------------------------------
function flatten(data, shape = []) {
  if (!Array.isArray(data)) return [[data], shape];
  shape.push(data.length);
  if (!data.length) return [[], shape];
  const out = [];
  let inner = null;
  for (const x of data) {
    const [f, s] = flatten(x, []);
    if (inner && JSON.stringify(inner) !== JSON.stringify(s)) throw new RangeError('ragged nested array');
    inner = s;
    out.push(...f);
  }
  return [out, shape.concat(inner)];
}
ct.tensor = function (data, opts = {}) {
  let flat, shape;
  if (ArrayBuffer.isView(data)) { flat = data; shape = opts.shape || [data.length]; } else [flat, shape] = flatten(data);
  let dt = opts.dtype;
  if (!dt) dt = ArrayBuffer.isView(data) ? ({ Float32Array: ct.float32, Float64Array: ct.float64,
    BigInt64Array: ct.int64, Int32Array: ct.int32, Uint8Array: ct.uint8 })[data.constructor.name]
    : flat.every((x) => typeof x === 'boolean') && flat.length ? ct.bool
      : flat.every((x) => Number.isInteger(x)) ? ct.int64 : ct.float32;
  const C = TYPED[dt.name];
  const arr = C === BigInt64Array ? BigInt64Array.from(flat, (x) => BigInt(x)) : C.from(flat, (x) => Number(x));
  check(F.ctorch_tensor_from_data(hOut, arr, arr.byteLength, BigInt64Array.from(shape, BigInt), shape.length, dt.value));
  const t = tensorOf(hOut[0]);
  if (opts.requiresGrad) t.requiresGrad = true;
  return t;
};
ct.manualSeed = (s) => check(F.ctorch_manual_seed(BigInt(s)));
ct.setNumThreads = (n) => check(F.ctorch_set_num_threads(n));
ct.noGrad = function (fn) {
  const s = new BigUint64Array(1);
  check(F.ctorch_autograd_scope_enter(s, E.ctorch_autograd_scope_kind.CTORCH_SCOPE_NO_GRAD));
  try { return fn(); } finally { check(F.ctorch_autograd_scope_leave(s[0])); }
};

// ---- optimizers and data ---------------------------------------------------
const OPT_KINDS = Object.fromEntries(Object.entries(E.ctorch_optimizer_kind).map(([k, v]) => [k.slice(13).toLowerCase(), v]));
class Optimizer {
  constructor(kind, params, options = {}) {
    const opts = {};
    check(F.ctorch_optim_options_default(opts, OPT_KINDS[kind]));
    for (const [k, v] of Object.entries(options)) {
      if (k === 'betas') { opts.beta1 = v[0]; opts.beta2 = v[1]; } else if (k in opts) opts[k] = v;
      else throw new TypeError(`unknown optimizer option '${k}'`);
    }
    const out = new BigUint64Array(1);
    check(F.ctorch_optimizer_new(out, OPT_KINDS[kind], BigUint64Array.from(params, h), params.length, opts));
    this._h = out[0];
    optRegistry.register(this, this._h);
  }
  step() { check(F.ctorch_optimizer_step(this._h)); }
  zeroGrad(setToNone = true) { check(F.ctorch_optimizer_zero_grad(this._h, setToNone ? 1 : 0)); }
  dispose() { if (this._h) { optRegistry.unregister(this); F.ctorch_optimizer_free(this._h); this._h = 0n; } }
}
const optRegistry = new FinalizationRegistry((x) => F.ctorch_optimizer_free(x));
ct.optim = {
  SGD: (p, o) => new Optimizer('sgd', p, o), Adam: (p, o) => new Optimizer('adam', p, o),
  AdamW: (p, o) => new Optimizer('adamw', p, o), RMSprop: (p, o) => new Optimizer('rmsprop', p, o),
  Adagrad: (p, o) => new Optimizer('adagrad', p, o),
};
class DataLoader {
  constructor(data, targets, opts = {}) {
    const out = new BigUint64Array(1);
    check(F.ctorch_data_loader_new(out, h(data), targets ? h(targets) : null, opts.batchSize || 1,
      opts.shuffle ? 1 : 0, BigInt(opts.seed || 0), opts.dropLast ? 1 : 0));
    this._h = out[0];
    this.epoch = 0;
  }
  * [Symbol.iterator]() {
    check(F.ctorch_data_loader_start_epoch(this._h, BigInt(this.epoch++)));
    const has = new Int32Array(1), x = new BigUint64Array(1), y = new BigUint64Array(1);
    for (;;) {
      check(F.ctorch_data_loader_next(has, x, y, this._h));
      if (!has[0]) return;
      yield [tensorOf(x[0]), tensorOf(y[0])];
    }
  }
  dispose() { if (this._h) { F.ctorch_data_loader_free(this._h); this._h = 0n; } }
}
ct.data = {
  readMnist(dir, train = true) {
    const a = new BigUint64Array(1), b = new BigUint64Array(1);
    check(F.ctorch_data_mnist_read_dir(a, b, dir, train ? 1 : 0));
    return [tensorOf(a[0]), tensorOf(b[0])];
  },
  DataLoader,
};
ct.nn = ct.nn || {};
ct.nn.init = {
  uniform_(t, a, b) { check(F.ctorch_init_uniform_(h(t), a, b)); return t; },
  normal_(t, mean, std) { check(F.ctorch_init_normal_(h(t), mean, std)); return t; },
  zeros_(t) { check(F.ctorch_init_zeros_(h(t))); return t; },
};

// ---- asynchronous calls ------------------------------------------------------
// ct.async.<group>.<overload>(...) runs one generated operator on a koffi
// worker thread and resolves to its result; errors come back through tickets.
ct.callAsync = function (cName, ...args) {
  const fn = F[cName];
  return new Promise((resolve, reject) => {
    fn.async(...args, (err, st) => {
      if (err) reject(err);
      else if (st !== 0) reject(errorOf(st));
      else resolve();
    });
  });
};
ct.errorOf = errorOf;

// ABI check: this package was generated for one build of the C API.
{
  const out = new BigUint64Array(1);
  check(F.ctorch_abi_hash(out));
  const got = koffi.decode.string(out[0]);
  if (got !== capi.ABI_HASH && !process.env.CTORCH_IGNORE_ABI) {
    throw new Error(`ctorch: ${LIB_PATH} has ABI ${got}, this package was generated for ${capi.ABI_HASH}`);
  }
}
