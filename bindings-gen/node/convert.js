'use strict';
// What the generated api.js and ops.js call (the runtime's index.js wires it):
// the argument conversions (tensors, lists, Scalars, enums, devices), the
// overload dispatch, and the handle objects of types other than ctorch_tensor;
// all gathered in R. `late.api` is the generated api.js, made from R.
const koffi = require('koffi');
const input = require('./input');

module.exports = function makeConversions(E, Tensor, CtorchError, fail, check, late) {
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
  // the dtype as the positional argument it is ("missing argument 'dtype'").
  const ENUM_VALUES = new WeakSet();
  function enumValue(o) { ENUM_VALUES.add(Object.freeze(o)); return o; }
  function isOpts(x) { return x !== null && typeof x === 'object' && x.constructor === Object && !ENUM_VALUES.has(x); }
  function isT(x) { return x instanceof Tensor; }
  function isNum(x) { return typeof x === 'number' || typeof x === 'boolean' || typeof x === 'bigint' || x instanceof FloatScalar; }
  // An operator's tensor argument (ops.js): a refusal names the operator and
  // argument its R.req remembered (input.js).
  function h(x) {
    if (x instanceof Tensor) {
      if (!x._h) throw new Error(`ctorch: ${input.remembered(x) || 'a tensor argument'}: tensor used after dispose()`);
      return x._h;
    }
    const where = x !== null && typeof x === 'object' ? input.remembered(x) : null;
    throw new TypeError(`${where ? `${where}: ` : ''}expected a Tensor, got ${input.describe(x)}`);
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
  // fn, arg: the C function and parameter (api.js passes them; ops.js's
  // operators are named by their dispatch instead).
  function listWhere(fn, arg) { return fn ? `${fn}: argument '${arg}': ` : ''; }
  function handles(v, elemOpt, opt, fn, arg) {
    if (v === null || v === undefined) {
      if (!opt) throw new TypeError(`${listWhere(fn, arg)}expected a list of tensors`);
      return null;
    }
    if (!Array.isArray(v)) throw new TypeError(`${listWhere(fn, arg)}expected a list of tensors, got ${input.describe(v)}`);
    if (v.length === 0) return EMPTY_H; // [] is a non-NULL pointer with length 0
    const a = new BigUint64Array(v.length);
    const where = fn ? `${fn}: argument '${arg}'` : input.remembered(v) || 'a tensor list';
    for (let i = 0; i < v.length; i++) a[i] = elemOpt && (v[i] === null || v[i] === undefined) ? 0n : hh(v[i], `${where}[${i}]`);
    return a;
  }
  function i64s(v, size, opt, fn, arg) {
    if (v === null || v === undefined) {
      if (!opt) throw new TypeError(`${listWhere(fn, arg)}expected a list of integers`);
      return null;
    }
    if (typeof v === 'number' || typeof v === 'bigint') v = new Array(size || 1).fill(v);
    if (v.length === 0) return EMPTY_I64;
    const a = new BigInt64Array(v.length);
    for (let i = 0; i < v.length; i++) a[i] = input.toI64(v[i], fn ? `${fn}: argument '${arg}'` : 'an int list');
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
  // late.api is set by index.js once R exists, and before anything calls scalarOf.
  function scalarOf(v, kind) {
    if (kind === 'BOOL') return late.api.scalar_bool(v);
    if (kind === 'INT') return late.api.scalar_int(v);
    return late.api.scalar_float(v);
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
        busyCheck(this, null);
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
  // dispose(), would race with it, so it throws instead. where: the C
  // function and parameter the object was passed as (null: its dispose()).
  function busyCheck(x, where) {
    if (x._busy) {
      const name = x.constructor.name;
      throw new Error(where ? `ctorch: ${where}: the ${name} has a Promise call pending; await it first`
        : `ctorch: ${name}.dispose() while a Promise call on it is pending; await it first`);
    }
  }
  function adopt(C, hv) { return hv === 0n ? null : new C(hv); }
  // A handle argument of C function fn's parameter arg (the generated api.js
  // passes both, so that a refusal names them; a list passes its element's
  // place as fn alone).
  function hh(x, fn, arg) {
    const where = arg === undefined ? fn : `${fn}: argument '${arg}'`;
    if (x instanceof Tensor) {
      if (!x._h) throw new Error(`ctorch: ${where}: tensor used after dispose()`);
      return x._h;
    }
    if (x !== null && typeof x === 'object' && typeof x._h === 'bigint') {
      if (!x._h) throw new Error(`ctorch: ${where}: ${x.constructor.name} used after dispose()`);
      if (x._busy) busyCheck(x, where);
      return x._h;
    }
    throw new TypeError(`${where}: expected a ctorch handle object, got ${input.describe(x)}`);
  }
  function hho(x, fn, arg) { return x === null || x === undefined ? null : hh(x, fn, arg); }
  function text(p) { return p === 0n ? null : koffi.decode.string(p); }
  function query(fn, Cell, ...args) { const c = new Cell(1); check(fn(c, ...args)); return Number(c[0]); }
  function bytesLen(v) { return v === null || v === undefined ? 0 : v.byteLength; }
  // One C length shared by several arrays, some of which may be null (api.json
  // length_of, Function.shared_length_arrays): that of the given ones, which
  // must agree.
  function sharedLen(fname, items) {
    const given = items.filter(([, v]) => v !== null && v !== undefined).map(([n, v]) => [n, lenOf(v)]);
    if (new Set(given.map(([, k]) => k)).size > 1) {
      throw new RangeError(`${fname}: ${given.map(([n, k]) => `${n} has ${k}`).join(', ')} entries; they share one length`);
    }
    return given.length ? given[0][1] : 0;
  }

  const STRUCT_IN = { ctorch_device: (v) => device(v) };
  function structIn(name, v) { return v === null || !STRUCT_IN[name] ? v : STRUCT_IN[name](v); }

  const R = {
    EMPTY, OUTH0, OUTH1, OUTH2, OUTH3, OUTH4, OUTH5, OUTI64, OUTF64, OUTI32, isOpts, isT, isNum, h, ho, req, dflt,
    len, lenOf, handles, i64s, i64arrays, f64s, bools, strs, scalar, scalaro, scalars, scalarOf, scalarValue, i64o, f64o,
    boolo, i32o, enumv, device, deviceo, tensorOf, tensorReq, dtypeOf, dispatch, fail,
    Handle, adopt, hh, hho, text, query, bytesLen, structIn, sharedLen,
  };

  return { R, DTYPES, enumValue, FloatScalar, isOpts, hh };
};
