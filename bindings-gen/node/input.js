'use strict';
// Input checks of the Node binding: what JS
// values may cross into C, refused with an error naming the argument
// instead of wrapped, truncated or turned into NaN on the way.

// ---- integers at the C boundary -------------------------------------------
// koffi converts a JS number or BigInt to a C integer without a range check
// (2n ** 64n + 5n passes as 5, 1.5 as 1). Every C function of the API with
// integer parameters is wrapped (guardIntegers) by one that checks them
// first; the wrapper keeps koffi's .async and .info. Floats are refused for
// integer parameters (torch refuses 1.5 for an int argument), booleans pass
// (0/1). The argument's name: the generated functions (ops.js) name each
// argument they read (R.req); the last few are remembered here, and an error
// names the one holding the refused value, else the C parameter's position.
const RANGES = {
  Int8: [-128n, 127n], UInt8: [0n, 255n], Int16: [-32768n, 32767n], UInt16: [0n, 65535n],
  Int32: [-(2n ** 31n), 2n ** 31n - 1n], UInt32: [0n, 2n ** 32n - 1n],
  Int64: [-(2n ** 63n), 2n ** 63n - 1n], UInt64: [0n, 2n ** 64n - 1n],
};
const C_NAMES = { Int8: 'int8_t', UInt8: 'uint8_t', Int16: 'int16_t', UInt16: 'uint16_t', Int32: 'int32_t',
  UInt32: 'uint32_t', Int64: 'int64_t', UInt64: 'uint64_t' };
const NUM_RANGES = Object.fromEntries(Object.entries(RANGES).map(([k, [lo, hi]]) => [k, [Number(lo), Number(hi)]]));

const recent = { names: new Array(16).fill(''), fns: new Array(16).fill(''), values: new Array(16), next: 0 };
function remember(v, fn, name) { // R.req: the generated functions' named arguments
  const i = recent.next;
  recent.names[i] = name; recent.fns[i] = fn; recent.values[i] = v;
  recent.next = (i + 1) & 15;
  return v;
}
// The generated callers of C functions (api.js's wrappers, ops.js's
// overloads) as [name, function] pairs, set by index.js: on an error path,
// the caller of cName is found by its source text, and the argument at C
// position pos read from its call (`$F.ctorch_narrow(SH[0], $R.h(v_0), v_1, ...)`).
let callers = () => [];
function setCallers(f) { callers = f; }
function callArgs(src, at) { // the top-level arguments of the call whose '(' is at src[at]
  const args = [];
  let depth = 0, start = at + 1, quote = null;
  for (let i = at; i < src.length; i++) {
    const ch = src[i];
    if (quote) { if (ch === quote && src[i - 1] !== '\\') quote = null; continue; }
    if (ch === '"' || ch === "'") quote = ch;
    else if (ch === '(' || ch === '[' || ch === '{') depth++;
    else if (ch === ')' || ch === ']' || ch === '}') {
      if (--depth === 0) { args.push(src.slice(start, i)); return args; }
    } else if (ch === ',' && depth === 1) { args.push(src.slice(start, i)); start = i + 1; }
  }
  return args;
}
function nameFromSource(cName, pos) {
  for (const [fname, f] of callers()) {
    if (typeof f !== 'function') continue;
    const src = Function.prototype.toString.call(f);
    const at = src.indexOf(`$F.${cName}(`);
    if (at < 0) continue;
    const arg = (callArgs(src, at + cName.length + 3)[pos] || '').trim();
    const m = arg.match(/^(?:\$R\.\w+\()?([A-Za-z_$][\w$]*)\b/);
    if (!m) continue;
    let name = m[1];
    const v = name.match(/^v_\d+$/) && src.match(new RegExp(`const ${name} = [^;]*?\\$o\\["(\\w+)"\\]`));
    if (v) name = v[1];
    const op = src.match(/\$R\.req\([^;]*?, "([\w.]+)", "\w+"\)/);
    return `${op ? op[1] : fname}(): argument '${name}'`;
  }
  return null;
}
// The operator argument R.req last remembered holding v ("add(): argument
// 'self'"), or null.
function remembered(v) {
  for (let k = 1; k <= 16; k++) {
    const i = (recent.next - k) & 15;
    if (Object.is(recent.values[i], v)) return `${recent.fns[i]}(): argument '${recent.names[i]}'`;
  }
  return null;
}
function argName(cName, pos, v) {
  if (pos >= 0) {
    const named = nameFromSource(cName, pos);
    if (named) return named;
  }
  for (let k = 1; k <= 16; k++) {
    const i = (recent.next - k) & 15;
    const x = recent.values[i];
    if (Object.is(x, v) || (Array.isArray(x) && x.some((e) => Object.is(e, v)))) {
      return `${recent.fns[i]}(): argument '${recent.names[i]}'`;
    }
  }
  return pos >= 0 ? `${cName}: argument ${pos + 1}` : cName;
}
function intError(cName, pos, kind, v) {
  const shown = typeof v === 'bigint' ? `${v}n` : typeof v === 'string' ? `'${v}'` : String(v);
  if (typeof v === 'number' && !Number.isInteger(v)) {
    return new TypeError(`${argName(cName, pos, v)} must be an integer (${C_NAMES[kind]}), got ${shown}`);
  }
  if (typeof v !== 'number' && typeof v !== 'bigint') {
    return new TypeError(`${argName(cName, pos, v)} must be an integer (${C_NAMES[kind]}), got ${typeof v} ${shown}`);
  }
  const [lo, hi] = RANGES[kind];
  return new RangeError(`${argName(cName, pos, v)} = ${shown} is out of range for ${C_NAMES[kind]} [${lo}, ${hi}]`);
}
// The check of one integer argument (true: koffi may have it).
function intOk(v, kind) {
  if (typeof v === 'number') {
    const r = NUM_RANGES[kind];
    // 2 ** 63 is Number(2n ** 63n - 1n): a number must be below it, not at it.
    return Number.isInteger(v) && v >= r[0] && (kind.endsWith('64') ? v < r[1] : v <= r[1]);
  }
  if (typeof v === 'bigint') { const r = RANGES[kind]; return v >= r[0] && v <= r[1]; }
  return typeof v === 'boolean';
}
// A seed parameter (capi.SEEDS, from api.json) takes PyTorch's range,
// [-2^63, 2^64-1]; a negative seed s is 2^64 + s, as torch.manual_seed(s)
// takes it (initial_seed() after manual_seed(-1) is 2^64 - 1).
const SEED_RANGE = [-(2n ** 63n), 2n ** 64n - 1n];
function toSeed(v, cName, pos) {
  let b;
  if (typeof v === 'bigint') b = v;
  else if (typeof v === 'number' && Number.isInteger(v)) b = BigInt(v);
  else if (typeof v === 'boolean') b = v ? 1n : 0n;
  else {
    const shown = typeof v === 'string' ? `'${v}'` : String(v);
    throw new TypeError(`${argName(cName, pos, v)} must be an integer (a seed), got ${typeof v} ${shown}`);
  }
  if (b < SEED_RANGE[0] || b > SEED_RANGE[1]) {
    throw new RangeError(`${argName(cName, pos, v)} = ${b}n is out of range for a seed [${SEED_RANGE[0]}, ${SEED_RANGE[1]}]`);
  }
  return b < 0n ? b + 2n ** 64n : b;
}
// A string parameter (koffi: 'String') takes a string, a buffer (the
// functions that fill one), null, or a BigInt (text the library returned,
// handed back to ctorch_string_free); a pointer parameter (handles, arrays,
// buffers) anything but a number or a boolean: koffi would pass the number
// 42 as the address 42, and the C function would read it (a crash).
function strOk(v) { return typeof v === 'string' || v === null || ArrayBuffer.isView(v) || typeof v === 'bigint'; }
function ptrOk(v) { return typeof v !== 'number' && typeof v !== 'boolean'; }
function kindError(cName, pos, what, v) {
  const shown = typeof v === 'string' ? `'${v}'` : typeof v === 'bigint' ? `${v}n` : String(v);
  const where = argName(cName, pos, v);
  return new TypeError(`${where.startsWith(cName) ? '' : `${cName}: `}${where} must be ${what}, got ${describe(v)} ${shown}`);
}
// koffi's own refusal of a value ("Unexpected Object value, expected number")
// names no function: the C function's name goes in front.
function named(e, cName) {
  if (e instanceof TypeError && /^(Unexpected \w+ value|Expected \d+ arguments)/.test(e.message)) {
    e.message = `${cName}: ${e.message}`;
  }
  return e;
}
// Every C function of the API is wrapped by one that checks its integer,
// seed, string and pointer arguments first (the wrapper keeps koffi's .async
// and .info).
function guardIntegers(F) {
  const capi = require('./capi');
  const SEEDS = capi.SEEDS || {}, CONTEXT = capi.CONTEXT_ARGS || {};
  for (const [name, fn] of Object.entries(F)) {
    const seeds = SEEDS[name] || [], context = CONTEXT[name] || [];
    const prims = fn.info.arguments.map((a) => a.type.primitive);
    const tests = [];
    prims.forEach((p, i) => {
      if (seeds.includes(i)) tests.push(`a${i} = toSeed(a${i}, name, ${i});`);
      else if (p in RANGES) tests.push(`if (!intOk(a${i}, '${p}')) throw intError(name, ${i}, '${p}', a${i});`);
      else if (p === 'String') tests.push(`if (!strOk(a${i})) throw kindError(name, ${i}, 'a string', a${i});`);
      else if (p === 'Pointer' && !context.includes(i)) tests.push(`if (!ptrOk(a${i})) throw kindError(name, ${i}, 'an object, array or buffer', a${i});`);
    });
    const n = prims.length;
    const params = Array.from({ length: n }, (_, i) => `a${i}`).join(', ');
    // A function of the same arity (no rest parameters): V8 inlines it into the caller.
    const make = new Function('fn', 'name', 'intOk', 'intError', 'toSeed', 'strOk', 'ptrOk', 'kindError', 'named',
      `return function ${name}(${params}) {\n  ${tests.join('\n  ')}\n` +
      `  try { return fn(${params}); } catch (e) { throw named(e, name); }\n};`);
    const g = make(fn, name, intOk, intError, toSeed, strOk, ptrOk, kindError, named);
    g.info = fn.info;
    const check = new Function('name', 'intOk', 'intError', 'toSeed', 'strOk', 'ptrOk', 'kindError',
      `return function (${params}) {\n  ${tests.join('\n  ')}\n  return [${params}];\n};`)(
      name, intOk, intError, toSeed, strOk, ptrOk, kindError);
    g.async = function (...args) {
      const checked = check(...args.slice(0, n));
      return fn.async(...checked, ...args.slice(n));
    };
    F[name] = g;
  }
}
// A JS value for an int64_t output or array element (R.i64s, R.i64o).
function toI64(v, what) {
  if (typeof v === 'boolean') return v ? 1n : 0n;
  if (!intOk(v, 'Int64')) throw intError(what, -1, 'Int64', v);
  return BigInt(v);
}

// ---- ct.tensor's data -------------------------------------------------------
// What torch.tensor takes: numbers, booleans, BigInts in nested arrays, and
// typed arrays (each its dtype; Buffer and Uint8ClampedArray are uint8,
// Uint16Array int32 and Uint32Array / BigUint64Array int64 (widened, values
// kept); a DataView is its bytes (uint8). Anything else is refused, as is a
// value outside the dtype's range ([300] as uint8), as torch refuses.
const VIEW_DTYPE = [[Float32Array, 'float32'], [Float64Array, 'float64'], [BigInt64Array, 'int64'],
  [BigUint64Array, 'int64'], [Int32Array, 'int32'], [Uint32Array, 'int64'], [Int16Array, 'int16'],
  [Uint16Array, 'int32'], [Int8Array, 'int8'], [Uint8Array, 'uint8'], [Uint8ClampedArray, 'uint8']];
const INT_DTYPE_RANGE = { uint8: [0, 255], int8: [-128, 127], int16: [-32768, 32767],
  int32: [-(2 ** 31), 2 ** 31 - 1], int64: [-(2n ** 63n), 2n ** 63n - 1n] };
function describe(v) { return v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v === 'object' ? (v.constructor ? v.constructor.name : 'object') : typeof v; }

function flatten(data, shape, out, depth) {
  if (Array.isArray(data)) {
    if (shape.length === depth) shape.push(data.length);
    else if (shape[depth] !== data.length) throw new RangeError('ct.tensor: ragged nested array');
    for (const x of data) flatten(x, shape, out, depth + 1);
    if (!data.length && shape.length > depth + 1) throw new RangeError('ct.tensor: ragged nested array');
    return;
  }
  if (depth < shape.length) throw new RangeError('ct.tensor: ragged nested array');
  if (typeof data === 'number' || typeof data === 'boolean' || typeof data === 'bigint') { out.push(data); return; }
  throw new TypeError(`ct.tensor: invalid data: ${describe(data)} ${typeof data === 'string' ? `'${data}'` : ''}`.trim() +
    ' (a number, boolean or BigInt, nested arrays of them, or a typed array)');
}
// [flat values (array or typed array), shape, dtype name]
function tensorData(data, opts) {
  if (ArrayBuffer.isView(data)) {
    if (data instanceof DataView) data = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    const hit = VIEW_DTYPE.find(([C]) => data instanceof C);
    if (!hit) throw new TypeError(`ct.tensor: unsupported typed array ${describe(data)}`);
    return [data, opts.shape || [data.length], hit[1]];
  }
  if (data === undefined) throw new TypeError('ct.tensor: missing data (a number, nested arrays or a typed array)');
  const shape = [];
  const flat = [];
  flatten(data, shape, flat, 0);
  let dt = null;
  if (flat.length && flat.every((x) => typeof x === 'boolean')) dt = 'bool';
  else if (flat.every((x) => typeof x === 'bigint' || Number.isInteger(x))) dt = 'int64';
  else dt = 'float32';
  return [flat, shape, dt];
}
// The typed array of dtype `dt` (TYPED's constructor C) holding flat, range-checked.
function typedFor(flat, dt, C) {
  const range = INT_DTYPE_RANGE[dt];
  if (C === BigInt64Array) {
    return BigInt64Array.from(flat, (x) => {
      const v = typeof x === 'bigint' ? x : typeof x === 'boolean' ? BigInt(x) : BigInt(Math.trunc(x));
      if (typeof x === 'number' && !Number.isFinite(x)) throw new RangeError(`ct.tensor: ${x} cannot be converted to int64`);
      if (v < range[0] || v > range[1]) throw new RangeError(`ct.tensor: value ${v} cannot be converted to type int64 without overflow`);
      return v;
    });
  }
  return C.from(flat, (x) => {
    const v = typeof x === 'boolean' ? Number(x) : dt === 'bool' ? Number(x !== 0 && x !== 0n) : Number(x);
    if (range) {
      const t = Math.trunc(v);
      if (!(t >= range[0] && t <= range[1])) {
        throw new RangeError(`ct.tensor: value ${typeof x === 'bigint' ? `${x}n` : x} cannot be converted to type ${dt} without overflow`);
      }
      return t;
    }
    return v;
  });
}

// ---- DataLoader options -----------------------------------------------------
const LOADER_OPTIONS = ['batchSize', 'shuffle', 'seed', 'dropLast', 'transform'];
function loaderOptions(opts) {
  if (opts === null || typeof opts !== 'object') throw new TypeError(`DataLoader: options must be an object, got ${describe(opts)}`);
  for (const k of Object.keys(opts)) {
    if (!LOADER_OPTIONS.includes(k)) {
      const camel = k.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
      throw new TypeError(`DataLoader: unknown option '${k}'${LOADER_OPTIONS.includes(camel) ? ` (did you mean '${camel}'?)` : ''}; ` +
        `the options are ${LOADER_OPTIONS.join(', ')}`);
    }
  }
  const bs = opts.batchSize === undefined ? 1 : opts.batchSize;
  if (!((typeof bs === 'number' && Number.isSafeInteger(bs)) || typeof bs === 'bigint') || bs < 1) {
    throw new RangeError(`DataLoader: batchSize must be a positive integer, got ${typeof bs === 'bigint' ? `${bs}n` : String(bs)}`);
  }
  const seed = opts.seed === undefined ? 0n : opts.seed;
  if (!((typeof seed === 'number' && Number.isSafeInteger(seed)) || typeof seed === 'bigint')) {
    throw new TypeError(`DataLoader: seed must be an integer, got ${describe(seed)} ${String(seed)}`);
  }
  // The range (PyTorch's for a seed, a negative one meaning 2^64 + s): the C call's check (toSeed).
  return { batchSize: bs, shuffle: !!opts.shuffle, seed: BigInt(seed), dropLast: !!opts.dropLast, transform: opts.transform };
}

module.exports = { describe, guardIntegers, remember, remembered, setCallers, toI64, tensorData, typedFor, loaderOptions };
