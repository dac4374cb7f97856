'use strict';
// The Node binding's bad-input sweep, as py_sweep.py is
// Python's: every operator overload of ct.ops that api.json does not mark
// unsafe (ct.unchecked's are left out) with bad arguments through the
// package's own functions; each new tensor read back (toDense, coalesce, add,
// toArray, toString). Besides the Rust sweep's bad values it passes what only
// JavaScript can: undefined and null for required arguments, BigInts past
// int64, numbers that are not integers, objects of the wrong type, enum
// values as bare numbers or strings. Every call must return or throw; a
// process death is a crash of that operator.
//   node node_sweep.js START   the child: operators START.. ("B i name" before operator i, "DONE ..." at the end)
//   node node_sweep.js         the parent: runs the children through rust_sweep.py (restarts past a crash, fails on any)
// With CTORCH_SWEEP_UNSAFE=1 ct.unchecked's operators are swept too (the sweep must then report crashes).
const { spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const R = 6;

function child(start) {
  const ct = require(process.env.CTORCH_NODE_PKG);
  const api = JSON.parse(fs.readFileSync(process.env.CTORCH_API_JSON, 'utf8'));
  const withUnsafe = process.env.CTORCH_SWEEP_UNSAFE === '1';
  const isUnsafe = (f) => !!(f.ops_json && f.ops_json.unsafe);
  const ops = api.functions.filter((f) => f.origin === 'generated' && (withUnsafe || !isUnsafe(f)));
  const t = (r, k) => {
    switch ((r + k) % R) {
      case 0: return k % 3 === 2 ? undefined : ct.tensor([], { dtype: ct.float32 });
      case 1: return ct.tensor([[0, 1, 2], [3, 4, 5]], { dtype: ct.int64 });
      case 2: return k % 4 === 3 ? 7 : ct.tensor(1.5);
      case 3: return k === 0 ? ct.tensor([[0.5, -1, 2], [3, NaN, 0]], { dtype: ct.float32 })
        : ct.tensor([1, 2, 3], { dtype: ct.float64 });
      case 4: return ct.tensor([[[[true], [false]], [[true], [true]]]], { dtype: ct.bool });
      default:
        if (k % 5 === 4) return 'tensor';
        return ct.tensor([[0.5, -1], [2, 3], [NaN, 0]], { dtype: ct.float32 }).to(k % 2 === 0 ? ct.complex64 : ct.float16);
    }
  };
  const some = (r, k) => (r + k) % 3 !== 0;
  const ints = [0, -1, 2n ** 63n - 1n, 2n ** 70n, -(2 ** 40), 2.5];
  const floats = [0, -1, NaN, 1e300, Infinity, 0.5];
  const scalars = [0, NaN, 2n ** 63n - 1n, true, ct.float(2), 2n ** 70n];
  const dtypes = [99, ct.bool, ct.int64, 'float32', ct.complex64, ct.float16];
  const layouts = [ct.strided, 42, -1, { value: 1 }, 'strided', null];
  const formats = [ct.contiguous_format, 42, -1, ct.channels_last, 'x', null];
  const devices = ['cpu', 'cuda:0', 'bogus', 'cpu:7', 'meta', -7];
  const strs = ['', 'garbage', 'x'.repeat(9000), 'sum', 'ij->ji', '\u{1F600}'];
  const lst = (r, k, pick, n) => [[], [pick(r, k)], Array.from({ length: n }, (_, m) => pick(r, k + m)),
    k % 2 ? null : [2n ** 70n]][(r + k) % 4];
  const value = (a, r, k) => {
    const b = a.base;
    if (a.list) {
      if (b === 'Tensor') {
        const ts = lst(r, k, t, 3);
        return ts && a.elements_optional ? ts.map((x, m) => (some(r, m) ? x : null)) : ts;
      }
      const pick = {
        int: (r, k) => ints[(r + k) % R], SymInt: (r, k) => ints[(r + k) % R], float: (r, k) => floats[(r + k) % R],
        bool: (r, k) => (r + k) % 2 === 1, Scalar: (r, k) => scalars[(r + k) % R], Dimname: (r, k) => strs[(r + k) % R],
      }[b];
      return lst(r, k, pick, b === 'int' || b === 'SymInt' ? 9 : 3);
    }
    if (b === 'Tensor') return t(r, k);
    if (b === 'Generator') return some(r, k) ? new ct.Generator().manualSeed(7) : null;
    if (a.enum) return [0, -1, 99, 1, 2 ** 31 - 1, 2][(r + k) % R];
    const tab = {
      int: ints, SymInt: ints, DeviceIndex: ints, float: floats, Scalar: scalars, ScalarType: dtypes, Layout: layouts,
      MemoryFormat: formats, Device: devices, str: strs, Dimname: strs, bool: [false, true, 1, 0, null, 'yes'],
    }[b];
    return tab[(r + k) % R];
  };
  const follow = (x) => {
    if (Array.isArray(x)) { x.forEach(follow); return; }
    if (!(x instanceof ct.Tensor)) return;
    try { if (x.numel() > 1 << 16) return; } catch (e) { return; }
    for (const read of [() => x.toDense(), () => x.coalesce(), () => ct.add(x, x), () => x.toArray(), () => String(x)]) {
      try { read(); } catch (e) { /* refusals are the expected outcome */ }
    }
  };
  let ok = 0, err = 0, missing = 0;
  for (let i = start; i < ops.length; i++) {
    const f = ops[i], op = f.op;
    fs.writeSync(1, `B ${i} ${f.name}\n`);
    const g = (isUnsafe(f) ? ct.unchecked : ct.ops)[op.name];
    const fn = g && g[op.overload || 'default'];
    if (!fn) missing++;
    for (let r = 0; r < R; r++) {
      const args = [], kw = {};
      op.args.forEach((a, k) => {
        const v = a.optional && !some(r, k) ? undefined : value(a, r, k);
        if (a.kwarg_only && (r + k) % 2) kw[a.name] = v;
        else if (Object.keys(kw).length) kw[a.name] = v;
        else args.push(v);
      });
      if (Object.keys(kw).length) args.push(kw);
      try {
        if (!fn) throw new Error('no such overload');
        follow(fn(...args));
        ok++;
      } catch (e) {
        err++;
      }
    }
    if (i % 64 === 63) ct.flushFrees && ct.flushFrees();
  }
  fs.writeSync(1, `DONE ${ops.length} ok=${ok} err=${err} missing=${missing}\n`);
}

if (process.argv.length > 2) {
  child(Number(process.argv[2]));
} else {
  const r = spawnSync('python3', [path.join(__dirname, 'rust_sweep.py'), '--lang', 'node', '--', process.execPath,
    __filename], { stdio: 'inherit' });
  process.exit(r.status === null ? 1 : r.status);
}
