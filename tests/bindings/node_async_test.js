'use strict';
// The Node Promise API at run time: training through the Promise API gives
// the losses of the synchronous path, bit for bit, with the event loop free
// while a long call runs; saveAsync/loadAsync round-trip; ct.scope holds
// across await; noGrad/inferenceMode refuse async functions; Symbol.dispose /
// asyncDispose on the handle classes; Promise calls on one object queue and
// lock it; the library-lookup error names every place tried.
const assert = require('assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');
const ct = require(process.env.CTORCH_NODE_PKG);

ct.setNumThreads(1);
const N = 512, D = 20, C = 4;

function setup(kind = 'SGD') {
  ct.manualSeed(0);
  const net = new ct.nn.Sequential(new ct.nn.Linear(D, 64), new ct.nn.ReLU(), new ct.nn.Linear(64, C));
  const opt = kind === 'SGD' ? ct.optim.SGD(net, { lr: 0.05, momentum: 0.9 }) : ct.optim[kind](net, { lr: 1e-2 });
  const g = new ct.Generator().manualSeed(1);
  const X = ct.randn([N, D], { generator: g });
  const Y = ct.randint(C, [N], { generator: g });
  const loader = new ct.data.DataLoader(X, Y, { batchSize: 64, shuffle: true, seed: 3 });
  return { net, opt, loader };
}

function trainSync(epochs, kind) {
  const { net, opt, loader } = setup(kind);
  const losses = [];
  for (let e = 0; e < epochs; e++) {
    for (const [x, y] of loader) {
      ct.scope(() => {
        const loss = ct.nn.cross_entropy_loss(net.forward(x), y);
        loss.backward();
        opt.step();
        opt.zeroGrad();
        losses.push(loss.item());
      });
      x.dispose(); y.dispose();
    }
  }
  return { losses, net };
}

async function trainAsync(epochs, kind) {
  const { net, opt, loader } = setup(kind);
  const losses = [];
  for (let e = 0; e < epochs; e++) {
    for await (const [x, y] of loader) {
      await ct.scope(async () => {
        const out = await net.forwardAsync(x);
        const loss = ct.nn.cross_entropy_loss(out, y);
        await loss.backwardAsync();
        await opt.stepAsync();
        opt.zeroGrad();
        losses.push(loss.item());
      });
    }
  }
  return { losses, net, opt, loader };
}

async function main() {
  // 1. The same losses through both paths.
  const s = trainSync(3);
  const a = await trainAsync(3);
  assert.strictEqual(a.losses.length, 24);
  assert.deepStrictEqual(a.losses, s.losses, 'Promise-API training must give the synchronous losses');
  assert.ok(s.losses[23] < s.losses[0], `the loss went down (${s.losses[0]} -> ${s.losses[23]})`);
  console.log(`async training: ${a.losses.length} steps, loss ${a.losses[0].toFixed(6)} -> ${a.losses[23].toFixed(6)}, equal to the sync path`);
  // Adam's step needs more stack than koffi's default for async calls (128 KiB: it crashed).
  for (const kind of ['Adam', 'AdamW']) {
    const [ls, la] = [trainSync(1, kind).losses, (await trainAsync(1, kind)).losses];
    assert.deepStrictEqual(la, ls, `${kind}: Promise-API losses`);
    console.log(`${kind}: ${la.length} steps through stepAsync, equal to the sync path`);
  }

  // 2. The event loop runs while a long call is on a worker thread.
  const big = new ct.nn.Linear(1500, 1500);
  const xb = ct.randn([1500, 1500]);
  let ticks = 0;
  const timer = setInterval(() => { ticks++; }, 1);
  const t0 = Date.now();
  for (let i = 0; i < 5; i++) (await big.forwardAsync(xb)).dispose();
  const ms = Date.now() - t0;
  clearInterval(timer);
  console.log(`5 forwardAsync of 1500x1500: ${ms} ms, ${ticks} timer ticks meanwhile`);
  assert.ok(ticks > 0, 'timers fired while forwardAsync ran');

  // A module defined in JS (its forward called back from the worker thread), alone and inside a C Sequential.
  class Mlp extends ct.nn.Module {
    constructor() { super(); this.fc = new ct.nn.Linear(4, 3); }
    forward(x) { if (x.shape[1] !== 4) throw new RangeError('Mlp wants 4 features'); return ct.relu(this.fc.forward(x)); }
  }
  const mlp = new Mlp(), x4 = ct.randn([5, 4]);
  assert.deepStrictEqual((await mlp.forwardAsync(x4)).toArray(), mlp.forward(x4).toArray());
  const seqJs = new ct.nn.Sequential(mlp, new ct.nn.Linear(3, 2));
  assert.deepStrictEqual((await seqJs.forwardAsync(x4)).toArray(), seqJs.forward(x4).toArray());
  await assert.rejects(seqJs.forwardAsync(ct.randn([5, 6])), /Mlp wants 4 features/);

  // The input is pinned at the call (disposing it, or a
  // scope closing, right after the call is safe, as the README says).
  const early = ct.randn([5, 4]);
  const wantEarly = mlp.forward(early).toArray();
  const pending = mlp.forwardAsync(early);
  early.dispose();
  assert.deepStrictEqual((await pending).toArray(), wantEarly);
  const scoped = await ct.scope(() => mlp.forwardAsync(ct.randn([5, 4])));
  assert.deepStrictEqual(scoped.shape, [5, 3]);
  // A rejection carries the frames of the call that made the Promise.
  const callerFrame = async function theCallerOfForwardAsync() { return seqJs.forwardAsync(ct.randn([5, 6])); };
  await assert.rejects(callerFrame(), (e) => /the Promise call was made at[\s\S]*theCallerOfForwardAsync/.test(e.stack));
  // Item 15: two concurrent `for await` over one loader each see the whole epoch once.
  const loader100 = new ct.data.DataLoader(ct.arange(100), null, { batchSize: 10 });
  const drain = async () => { const got = []; for await (const [xb2] of loader100) got.push(...xb2.toArray()); return got; };
  const [d1, d2] = await Promise.all([drain(), drain()]);
  const all100 = Array.from({ length: 100 }, (_, i) => i);
  assert.deepStrictEqual([d1, d2], [all100, all100]);
  console.log('forwardAsync pins at the call; rejections name the caller; two for-await loops: 100 items each');

  // 3. saveAsync / loadAsync give what save / load give.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ctorch-node-async-'));
  const file = path.join(dir, 'sd.pt');
  await ct.saveAsync(a.net.stateDict(), file);
  const back = await ct.loadAsync(file);
  const want = s.net.stateDict();
  assert.deepStrictEqual([...back.keys()], [...want.keys()]);
  for (const [k, t] of back) assert.deepStrictEqual(t.toArray(), want.get(k).toArray(), k);
  await assert.rejects(ct.loadAsync(path.join(dir, 'missing.pt')), ct.CtorchError);

  // 4. Promise calls on one object queue, in order; the object is locked meanwhile.
  const { loader } = setup();
  loader.start_epoch(0n);
  const p1 = loader.nextAsync(), p2 = loader.nextAsync();
  assert.throws(() => loader.next(), /pending; await it first/);
  assert.throws(() => loader.dispose(), /dispose\(\) while a Promise call on it is pending/);
  const [b1, b2] = await Promise.all([p1, p2]);
  loader.start_epoch(0n);
  const [c1] = loader.next().slice(1), [c2] = loader.next().slice(1);
  assert.deepStrictEqual(b1[0].toArray(), c1.toArray());
  assert.deepStrictEqual(b2[0].toArray(), c2.toArray());
  const step = a.opt.stepAsync();
  await a.opt[Symbol.asyncDispose](); // waits for the step, then frees
  await step;
  assert.strictEqual(a.opt.handle, 0n);

  // 5. ct.scope across await (a scope must not leak into other tasks), other async work left alone.
  const w = ct.randn([3]);
  let inner = null;
  const outside = [];
  const interleaved = (async () => { for (let i = 0; i < 3; i++) { await null; outside.push(ct.randn([2])); } })();
  const r = await ct.scope(async () => {
    inner = ct.mul(w, 2);
    await null;
    await new Promise((res) => setTimeout(res, 1));
    const u = ct.add(inner, 1); // "tensor used after dispose()" before
    return ct.mul(u, 1);
  });
  await interleaved;
  assert.deepStrictEqual(r.toArray(), w.toArray().map((x) => Math.fround(Math.fround(x * 2) + 1)));
  assert.ok(inner.disposed, 'a tensor the async scope made and did not return is disposed when it settles');
  assert.ok(outside.every((t) => !t.disposed), 'tensors of other async work are not the scope\'s');
  const nested = await ct.scope(async () => { const t = await ct.scope(async () => { await null; return ct.ones([1]); }); return t; });
  assert.ok(!nested.disposed);

  // 6. noGrad / inferenceMode refuse async functions (grad mode is per thread).
  w.requiresGrad = true;
  assert.throws(() => ct.noGrad(async () => { await null; return w.mul(2).requiresGrad; }), /async function/);
  assert.throws(() => ct.inferenceMode(() => Promise.resolve(1)), /returned a Promise/);
  assert.strictEqual(ct.noGrad(() => w.mul(2).requiresGrad), false);
  assert.strictEqual(w.mul(2).requiresGrad, true, 'grad mode is back on after the refusal');

  // 7. Symbol.dispose on every handle class.
  const t = ct.ones([2]);
  t[Symbol.dispose]();
  assert.ok(t.disposed);
  const objs = { Generator: new ct.Generator(), Module: new ct.nn.Linear(2, 2), Optimizer: ct.optim.Adam([ct.ones([1])]),
    DataLoader: new ct.data.DataLoader(ct.ones([4, 1]), null, { batchSize: 2 }), TensorDict: ct.capi.tensor_dict_new() };
  for (const [name, o] of Object.entries(objs)) {
    assert.strictEqual(typeof o[Symbol.dispose], 'function', name);
    assert.strictEqual(typeof o[Symbol.asyncDispose], 'function', name);
    o[Symbol.dispose]();
    assert.strictEqual(name === 'Module' ? o._m.handle : o.handle, 0n, `${name} freed by Symbol.dispose`);
  }
  for (const [k, v] of Object.entries(ct.capi)) {
    if (typeof v === 'function' && /^[A-Z]/.test(k)) assert.strictEqual(typeof v.prototype[Symbol.dispose], 'function', k);
  }

  // 8. No library: the error names every place tried and CTORCH_LIB.
  const bare = path.join(dir, 'pkg');
  fs.mkdirSync(bare);
  for (const f of fs.readdirSync(process.env.CTORCH_NODE_PKG)) {
    if (f.endsWith('.js') || f === 'package.json') fs.copyFileSync(path.join(process.env.CTORCH_NODE_PKG, f), path.join(bare, f));
  }
  fs.symlinkSync(path.join(process.env.CTORCH_NODE_PKG, 'node_modules'), path.join(bare, 'node_modules'));
  const env = { ...process.env, PKG_CONFIG_PATH: dir, PKG_CONFIG_LIBDIR: dir, LD_LIBRARY_PATH: dir };
  delete env.CTORCH_LIB;
  let msg = '';
  try {
    execFileSync(process.execPath, ['-e', `require(${JSON.stringify(bare)})`], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) { msg = String(e.stderr); }
  if (msg) {
    for (const want of ['$CTORCH_LIB: not set', 'build_config.json: absent', 'pkg-config --variable=libdir ctorch',
      'through the system\'s loader', 'set CTORCH_LIB']) assert.ok(msg.includes(want), `the error names '${want}':\n${msg}`);
    console.log('no library: the error lists $CTORCH_LIB, build_config.json, pkg-config and the system loader');
  } else console.log('no library: not checked (a libctorch is installed system-wide, and it loaded)');
  let msg2 = '';
  try {
    execFileSync(process.execPath, ['-e', `require(${JSON.stringify(bare)})`],
      { env: { ...env, CTORCH_LIB: path.join(dir, 'nope.so') }, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) { msg2 = String(e.stderr); }
  assert.ok(msg2.includes(`$CTORCH_LIB=${path.join(dir, 'nope.so')}`), msg2);
  fs.rmSync(dir, { recursive: true, force: true });
  console.log('node async: all checks passed');
}

main().catch((e) => { console.error(e); process.exit(1); });
