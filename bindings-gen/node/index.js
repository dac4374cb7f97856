'use strict';
// ctorch for Node.js: the runtime of the generated binding (capi.js and
// ops.js are generated from api.json by bindings-gen/ctorch_gen/emit_node.py).
// Node 18 lacks the explicit-resource-management symbols (Node 20 has them): the
// polyfill TypeScript's `using` and Node itself look up.
if (!Symbol.dispose) Object.defineProperty(Symbol, 'dispose', { value: Symbol('Symbol.dispose') });
if (!Symbol.asyncDispose) Object.defineProperty(Symbol, 'asyncDispose', { value: Symbol('Symbol.asyncDispose') });
const fs = require('fs');
const path = require('path');
const v8 = require('v8');
const vm = require('vm');
const koffi = require('koffi');
const capi = require('./capi');
const input = require('./input');

// Where libctorch is, in this order: $CTORCH_LIB; the build tree this package
// was generated in (build_config.json, which the npm tarball leaves out);
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
const { T, F } = capi.declare(lib);
input.guardIntegers(F); // integers range-checked before koffi would wrap them (input.js)
const E = capi.ENUMS;

// ---- errors: tickets (koffi's async calls run on worker threads) ----------
// With tickets on, a failing call's status carries a ticket that names its
// message in ctorch's failure log: the message is reachable from the JS
// thread whichever thread made the call.
const STATUS_NAMES = Object.fromEntries(Object.entries(E.ctorch_status).map(([k, v]) => [v, k]));
let msgBuf = Buffer.alloc(512);
const msgLen = new BigUint64Array(1);
const msgStatus = new Int32Array(1);
// The status macros as data (api.json's macros[].bits).
const bitsOf = (b) => (st) => ((st >>> 0) >>> b.shift) & b.mask;
const statusCode = bitsOf(capi.STATUS_BITS.CTORCH_STATUS_CODE);
const statusTicket = bitsOf(capi.STATUS_BITS.CTORCH_STATUS_TICKET);
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
function memoryBytes(deviceType) {
  flushFrees();
  return api.memory_bytes(deviceType === undefined ? 0 : deviceType);
}
// The CPU byte counter itself, read in place (no foreign call): its address
// comes from the generated api.memory_cpu_counter once api exists (below).
let counterAddr = 0n;
let baseline = 0;
let sinceCheck = 0;
function pressure() {
  sinceCheck = 0;
  if (!counterAddr) counterAddr = api.memory_cpu_counter();
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

// ---- argument conversions used by ops.js ----------------------------------
const EMPTY = Object.freeze({});
const OUTH0 = new BigUint64Array(1), OUTH1 = new BigUint64Array(1), OUTH2 = new BigUint64Array(1);
const OUTH3 = new BigUint64Array(1), OUTH4 = new BigUint64Array(1), OUTH5 = new BigUint64Array(1);
const OUTI64 = new BigInt64Array(1), OUTF64 = new Float64Array(1), OUTI32 = new Int32Array(1);
const EMPTY_I64 = new BigInt64Array(1), EMPTY_F64 = new Float64Array(1), EMPTY_H = new BigUint64Array(1);
const SC = E.ctorch_scalar_kind;

class FloatScalar { constructor(v) { this.v = v; } } // ct.float(2): a FLOAT Scalar although integral

// The enum values (ct.float32, ct.strided, ct.channels_last) are frozen plain
// objects too: not an options bag, so `ct.ops.view.dtype(u, ct.bool)` passes
// the dtype as the positional argument it is (issue 51: "missing argument 'dtype'").
const ENUM_VALUES = new WeakSet();
function enumValue(o) { ENUM_VALUES.add(Object.freeze(o)); return o; }
function isOpts(x) { return x !== null && typeof x === 'object' && x.constructor === Object && !ENUM_VALUES.has(x); }
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
  return input.remember(v, fn, name); // names a refused integer (input.js)
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
  for (let i = 0; i < v.length; i++) a[i] = elemOpt && (v[i] === null || v[i] === undefined) ? 0n : hh(v[i]);
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
  for (let i = 0; i < v.length; i++) a[i] = input.toI64(v[i], 'an int list');
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
// A list of int lists (api.json's array.element_length: shapes): C arrays
// (koffi.alloc) of their items, the outer one holding their addresses;
// [pointers, lengths, free].
function i64arrays(v) {
  const mem = v.map((x) => {
    const p = koffi.alloc('int64_t', Math.max(x.length, 1));
    if (x.length) koffi.encode(p, koffi.array('int64_t', x.length), x.map((e) => input.toI64(e, 'an int list')));
    return p;
  });
  const ptrs = BigUint64Array.from(mem, (p) => BigInt(koffi.address(p)));
  const lens = BigUint64Array.from(v, (x) => BigInt(x.length));
  return [ptrs.length ? ptrs : EMPTY_H, lens.length ? lens : EMPTY_H, () => mem.forEach((p) => koffi.free(p))];
}
function strs(v) { return v === null || v === undefined ? null : (typeof v === 'string' ? [v] : v); }
const scalarCache = new Map();
// The header's inline helpers (api.js, built from api.json's inline_body);
// api is defined below, once R exists, and before anything calls scalarOf.
function scalarOf(v, kind) {
  if (kind === 'BOOL') return api.scalar_bool(v);
  if (kind === 'INT') return api.scalar_int(v);
  return api.scalar_float(v);
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
  if (typeof v === 'bigint') return scalarOf(input.toI64(v, 'a Scalar'), 'INT');
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
function i64o(v) { return v === null || v === undefined ? null : BigInt64Array.of(input.toI64(v, 'an int')); }
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
// An enum argument: a number (the library checks its range), one of ct's
// enum values (ct.float32, ct.strided, ...), or, for the named enums
// (reduction, ...), its name. koffi took any other string or object as 0
// (ct.zeros([2], { dtype: 'float32' }) said "invalid ctorch_dtype value 0").
function enumv(v, en) {
  if (typeof v === 'string' && en) {
    const x = ENUM_NAMES[en][v];
    if (x === undefined) throw new RangeError(`invalid value '${v}' for ${en}`);
    return x;
  }
  if (typeof v === 'number' || typeof v === 'bigint') return v;
  if (v !== null && typeof v === 'object' && typeof v.value === 'number') return v.value;
  throw new TypeError(`expected an enum value such as ct.float32 or ct.strided, got ${
    typeof v === 'string' ? `the string '${v}'` : v === null ? 'null' : typeof v}`);
}
const DEVICE_TYPES = Object.fromEntries(Object.entries(E.ctorch_device_type).map(([k, v]) => [k.slice(14).toLowerCase(), v]));
// A DeviceLike ('cpu', 'cuda:1', or { type, index } with int32 fields) as the
// ctorch_device struct koffi passes by pointer. Anything else is a TypeError:
// koffi takes a number or a BigInt in a pointer's place as an address (issue
// 51: `{ device: -7 }` made ctorch read address -7 and killed the process).
const isInt32 = (x) => Number.isInteger(x) && x >= -(2 ** 31) && x < 2 ** 31;
function device(v) {
  if (typeof v === 'string') {
    const [name, idx] = v.split(':');
    if (!(name in DEVICE_TYPES)) throw new RangeError(`unknown device '${v}'`);
    const index = idx === undefined ? -1 : Number(idx);
    if (!isInt32(index) || idx === '') throw new RangeError(`device '${v}': the index is not an integer`);
    return { type: DEVICE_TYPES[name], index };
  }
  if (v !== null && typeof v === 'object' && !Array.isArray(v) && !ArrayBuffer.isView(v) && isInt32(v.type) &&
      (v.index === undefined || isInt32(v.index))) {
    return { type: v.type, index: v.index === undefined ? -1 : v.index };
  }
  throw new TypeError(`expected a device ('cpu', 'cuda:1' or { type, index } with integer fields), got ${
    v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object without them' : typeof v}`);
}
function deviceo(v) { return v === null || v === undefined ? null : device(v); }

function tensorOf(hv) { return hv === 0n ? null : new Tensor(hv); }
// A result api.json does not flag null_result: never NULL on success.
function tensorReq(hv) {
  if (hv === 0n) throw new CtorchError(E.ctorch_status.CTORCH_UNKNOWN, 'a result api.json says is never undefined came back NULL');
  return new Tensor(hv);
}
const DTYPES = {};
for (const [k, v] of Object.entries(E.ctorch_dtype)) {
  DTYPES[v] = enumValue({ value: v, name: k.slice(7).toLowerCase(), toString() { return `ctorch.${this.name}`; } });
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
  const at = kind.indexOf('@'); // "int@ctorch_reduction": an int or one of the enum's names ('sum')
  if (at > 0) {
    if (typeof v === 'string') return !!ENUM_NAMES[kind.slice(at + 1)] && v in ENUM_NAMES[kind.slice(at + 1)];
    kind = kind.slice(0, at);
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

// ---- what the generated header wrappers (api.js) call ---------------------
// Handles of types other than ctorch_tensor: freed by their type's free
// function (api.json handles[].free) on dispose() or when collected.
const handleRegistry = new FinalizationRegistry(([free, hv]) => free(hv));
class Handle {
  constructor(hv) {
    this._h = hv;
    if (this._free) handleRegistry.register(this, [this._free, hv], this);
  }
  get handle() { return this._h; }
  dispose() {
    const hv = this._h;
    if (hv) {
      busyCheck(this, 'dispose()');
      this._release();
      if (this._free) this._free(hv);
    }
  }
  [Symbol.dispose]() { this.dispose(); }
  // After the Promise calls pending on it (promise.js), then dispose().
  async [Symbol.asyncDispose]() { if (this._queue) await this._queue; this.dispose(); }
  _release() { this._h = 0n; handleRegistry.unregister(this); } // the C function freed it
  _take() { const hv = this._h; this._release(); return hv; } // the handle, no longer freed by this object
}
// An object with a Promise call in flight (promise.js sets _busy) is the
// worker thread's until the call ends: a synchronous call through it, or
// dispose(), would race with it, so it throws instead.
function busyCheck(x, what) {
  if (x._busy) {
    throw new Error(`ctorch: ${x.constructor.name}.${what} while a Promise call on it is pending; await it first`);
  }
}
function adopt(C, hv) { return hv === 0n ? null : new C(hv); }
function hh(x) {
  if (x instanceof Tensor) return h(x);
  if (x !== null && typeof x === 'object' && typeof x._h === 'bigint') {
    if (!x._h) throw new Error('ctorch: handle used after dispose()');
    if (x._busy) busyCheck(x, 'a call');
    return x._h;
  }
  throw new TypeError(`expected a ctorch handle object, got ${x === null ? 'null' : typeof x}`);
}
function hho(x) { return x === null || x === undefined ? null : hh(x); }
function text(p) { return p === 0n ? null : koffi.decode.string(p); }
function query(fn, Cell, ...args) { const c = new Cell(1); check(fn(c, ...args)); return Number(c[0]); }
function bytesLen(v) { return v === null || v === undefined ? 0 : v.byteLength; }
// One C length shared by several arrays, some of which may be null (api.json
// length_from): that of the given ones, which must agree.
function sharedLen(fname, items) {
  const given = items.filter(([, v]) => v !== null && v !== undefined);
  const ns = new Set(given.map(([, v]) => v.length));
  if (ns.size > 1) throw new RangeError(`${fname}: ${given.map(([n, v]) => `${n} has ${v.length}`).join(', ')} entries; they share one length`);
  return given.length ? given[0][1].length : 0;
}

const STRUCT_IN = { ctorch_device: (v) => device(v) };
function structIn(name, v) { return v === null || !STRUCT_IN[name] ? v : STRUCT_IN[name](v); }

const R = {
  EMPTY, OUTH0, OUTH1, OUTH2, OUTH3, OUTH4, OUTH5, OUTI64, OUTF64, OUTI32, isOpts, isT, isNum, h, ho, req, dflt,
  len, lenOf, handles, i64s, i64arrays, f64s, bools, strs, scalar, scalaro, scalars, scalarOf, scalarValue, i64o, f64o,
  boolo, i32o, enumv, device, deviceo, tensorOf, tensorReq, dtypeOf, dispatch, fail,
  Handle, adopt, hh, hho, text, query, bytesLen, structIn, sharedLen,
};
const api = require('./api')(R, F); // before ops.js: its Scalar defaults use the inline helpers
R.listOf = api.read_tensor_list; // Tensor[] results (ops.js): the generated reader (api.json handles[].elements)
const { ops, unchecked, PUBLIC, METHODS } = require('./ops')(R, F);
input.setCallers(function* () { // for error messages naming a refused integer's argument (input.js)
  yield* Object.entries(api);
  for (const [g, fn] of Object.entries(ops)) { yield [g, fn]; yield* Object.entries(fn); }
  for (const [g, fn] of Object.entries(unchecked)) { yield [g, fn]; yield* Object.entries(fn); }
});
api.set_error_tickets(true); // the tickets described above, from here on

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
ct.manualSeed = (s) => api.manual_seed(BigInt(s));
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
  manualSeed(s) { api.generator_set_seed(this, BigInt(s)); return this; }
  initialSeed() { return api.generator_initial_seed(this); }
}
ct.Generator = Generator;

// torch.save(stateDict, path) / torch.load(path) for dicts of tensors (a
// Module's stateDict(), a Map or a plain object): the files C and Python read.
ct.save = function (dict, path) {
  const entries = [...(dict instanceof Map ? dict : Object.entries(dict))];
  api.save_dict(path, entries.map(([k]) => k), entries.map(([, t]) => t));
};
function readDictMap(d) { // the entries of a NEW tensor dict as a Map; the dict is freed
  try {
    const n = api.tensor_dict_size(d);
    const out = new Map();
    for (let i = 0; i < n; i++) out.set(api.tensor_dict_key(d, i), api.tensor_dict_get(d, i));
    return out;
  } finally { d.dispose(); }
}
ct.load = (path) => readDictMap(api.load_dict(path));
// The same bytes in a Buffer (services keep models in object stores):
// ct.saveToBuffer(stateDict) / ct.loadFromBuffer(buf); NumPy's .npy/.npz.
function newDict(dict) {
  const d = api.tensor_dict_new();
  for (const [k, t] of (dict instanceof Map ? dict : Object.entries(dict))) api.tensor_dict_set(d, k, t);
  return d;
}
function withDict(dict, f) { const d = newDict(dict); try { return f(d); } finally { d.dispose(); } }
ct.saveToBuffer = (dict) => withDict(dict, (d) => api.tensor_dict_save_to_buffer(d));
ct.loadFromBuffer = (buf) => readDictMap(api.load_dict_from_buffer(buf));
ct.saveNpy = (t, path) => api.npy_save(path, t);
ct.loadNpy = (path) => api.npy_load(path);
ct.npyToBuffer = (t) => api.npy_save_to_buffer(t);
ct.npyFromBuffer = (buf) => api.npy_load_from_buffer(buf);
ct.saveNpz = (dict, path) => withDict(dict, (d) => api.npz_save(path, d));
ct.loadNpz = (path) => readDictMap(api.npz_load(path));
ct.npzToBuffer = (dict) => withDict(dict, (d) => api.npz_save_to_buffer(d));
ct.npzFromBuffer = (buf) => readDictMap(api.npz_load_from_buffer(buf));
// TorchScript modules (ct.capi.Module) as torch.jit.save(m, BytesIO) writes
// them, and back with every check ctorch_module_load makes (flags 0: bytes
// from strangers; else the CTORCH_MODULE_LOAD_ALLOW_* bits).
ct.moduleToBuffer = (m) => api.module_save_to_buffer(m);
ct.moduleFromBuffer = (buf, opts = {}) =>
  api.module_load_from_buffer(buf, opts.mapLocation ?? null, opts.flags ?? 0);

// ---- optimizers and data: the generated classes with JS constructors ---------
const OPT_KINDS = Object.fromEntries(Object.entries(E.ctorch_optimizer_kind).map(([k, v]) => [k.slice(13).toLowerCase(), v]));
class Optimizer extends api.Optimizer {
  constructor(kind, params, options = {}) {
    const opts = api.optim_options_default_v2(OPT_KINDS[kind]);
    for (const [k, v] of Object.entries(options)) {
      if (k === 'betas') { opts.beta1 = v[0]; opts.beta2 = v[1]; } else if (k in opts) opts[k] = v;
      else throw new TypeError(`unknown optimizer option '${k}'`);
    }
    // An nn.Module (its ._m handle): every parameter, recursive, in
    // parameters()'s order (ctorch_optimizer_new_from_module_v2); else a list.
    const module = params && !Array.isArray(params) && params._m instanceof api.NnModule ? params._m : null;
    super((module ? api.optimizer_new_from_module_v2(OPT_KINDS[kind], module, opts)
      : api.optimizer_new_v2(OPT_KINDS[kind], params, opts))._take());
  }
  zeroGrad(setToNone = true) { this.zero_grad(setToNone); }
}
ct.optim = {
  SGD: (p, o) => new Optimizer('sgd', p, o), Adam: (p, o) => new Optimizer('adam', p, o),
  AdamW: (p, o) => new Optimizer('adamw', p, o), RMSprop: (p, o) => new Optimizer('rmsprop', p, o),
  Adagrad: (p, o) => new Optimizer('adagrad', p, o),
};
class DataLoader extends api.DataLoader {
  constructor(data, targets, options = {}) {
    const opts = input.loaderOptions(options); // unknown options and batch sizes like 0 or 1.5 refused
    super(api.data_loader_new(data, targets || null, opts.batchSize, opts.shuffle, opts.seed, opts.dropLast)._take());
    if (opts.transform) this.set_transform(opts.transform); // per item; the loader keeps a reference
    this.epoch = 0;
  }
  // Each iteration is an epoch with a cursor of its own, as each iter() of a
  // PyTorch DataLoader: the C loader has one cursor, so an iterator that
  // finds it elsewhere (another iteration moved it) seeks back to its place
  // (ctorch_data_loader_seek replays the epoch's order). for await: promise.js.
  _cursor() {
    const c = { epoch: this.epoch++, batch: 0 };
    this.start_epoch(BigInt(c.epoch));
    return c;
  }
  _seekTo(c, hv) {
    const e = new BigUint64Array(1), b = new BigInt64Array(1);
    check(F.ctorch_data_loader_position(e, b, hv));
    if (e[0] !== BigInt(c.epoch) || b[0] !== BigInt(c.batch)) check(F.ctorch_data_loader_seek(hv, BigInt(c.epoch), c.batch));
  }
  * [Symbol.iterator]() {
    const c = this._cursor();
    for (;;) {
      this._seekTo(c, hh(this));
      const [has, x, y] = this.next();
      if (!has) return;
      c.batch++;
      yield [x, y];
    }
  }
}
ct.data = {
  readMnist(dir, train = true) { return api.data_mnist_read_dir(dir, train); },
  DataLoader,
};
ct.nn = ct.nn || {};
// torch.nn.utils' clipping over an nn.Module (ctorch_nn_module_clip_grad_*) or a list of parameters.
const asModule = (p) => (p && !Array.isArray(p) && p._m instanceof api.NnModule ? p._m : null);
ct.nn.utils = {
  clipGradNorm_(params, maxNorm, normType = 2.0, errorIfNonfinite = false) {
    const m = asModule(params);
    return m ? api.nn_module_clip_grad_norm_(m, maxNorm, normType, errorIfNonfinite)
      : api.clip_grad_norm_(params, maxNorm, normType, errorIfNonfinite);
  },
  clipGradValue_(params, clipValue) {
    const m = asModule(params);
    return m ? api.nn_module_clip_grad_value_(m, clipValue) : api.clip_grad_value_(params, clipValue);
  },
};
ct.nn.init = {
  uniform_(t, a, b) { api.init_uniform_(t, a, b); return t; },
  normal_(t, mean, std) { api.init_normal_(t, mean, std); return t; },
  zeros_(t) { api.init_zeros_(t); return t; },
};
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

// ABI check: this package was generated for one build of the C API.
{
  const got = api.abi_hash();
  if (got !== capi.ABI_HASH && !process.env.CTORCH_IGNORE_ABI) {
    throw new Error(`ctorch: ${LIB_PATH} has ABI ${got}, this package was generated for ${capi.ABI_HASH}`);
  }
}
