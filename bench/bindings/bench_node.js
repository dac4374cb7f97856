'use strict';
// bench/bindings, Node.js: per-call add on 1 element (disposed at once, and
// left to the finalizers) and an MLP training step through the generated
// binding. Prints JSON. Usage: node bench_node.js PKG ITERS STEPS
const ct = require(process.argv[2]);
const ITERS = Number(process.argv[3]), STEPS = Number(process.argv[4]);

function bestOf(n, fn, iters) {
  let best = Infinity;
  for (let r = 0; r < n; r++) {
    const t0 = process.hrtime.bigint();
    fn(iters);
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / iters);
  }
  return best;
}
ct.setNumThreads(1);
ct.manualSeed(0);
const a = ct.ones([1]);
const out = { binding: 'node' };
out.add_ns = bestOf(5, (n) => { for (let i = 0; i < n; i++) ct.add(a, a).dispose(); }, ITERS);
out.add_finalizers_ns = bestOf(5, (n) => { for (let i = 0; i < n; i++) ct.add(a, a); }, ITERS);
const F = ct.lib.F, o = new BigUint64Array(1), one = { kind: 1, reserved: 0, i: 1, f: 0, imag: 0 };
out.add_raw_koffi_ns = bestOf(5, (n) => {
  for (let i = 0; i < n; i++) { F.ctorch_add_Tensor(o, a.handle, a.handle, one); F.ctorch_tensor_free(o[0]); }
}, ITERS);

const param = (shape, fan) => ct.nn.init.uniform_(ct.empty(shape), -1 / Math.sqrt(fan), 1 / Math.sqrt(fan)).requiresGrad_();
const w1 = param([128, 784], 784), b1 = param([128], 784), w2 = param([10, 128], 128), b2 = param([10], 128);
const x = ct.randn([64, 784]), y = ct.randint(10, [64]);
const opt = ct.optim.Adam([w1, b1, w2, b2], { lr: 1e-3 });
out.train_step_us = bestOf(3, (n) => {
  for (let i = 0; i < n; i++) {
    ct.scope(() => {
      const loss = ct.nn.cross_entropy_loss(ct.nn.linear(ct.relu(ct.nn.linear(x, w1, b1)), w2, b2), y);
      opt.zeroGrad();
      loss.backward();
      opt.step();
    });
  }
}, STEPS) / 1000;
console.log(JSON.stringify(out));
