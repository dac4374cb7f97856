// The module shortcuts through the Node binding's classes:
// ct.optim.Adam(model) (ctorch_optimizer_new_from_module_v2) and
// ct.nn.utils.clipGradNorm_/clipGradValue_(model) against the same calls over
// model.parameters(): from one seed, the same norms and bit-identical
// parameters after every step; and their failures.
'use strict';
const assert = require('assert');
const ct = require(process.env.CTORCH_NODE_PKG);

const net = (seed) => {
  ct.manualSeed(seed);
  return new ct.nn.Sequential(new ct.nn.Linear(6, 16), new ct.nn.Tanh(), new ct.nn.Linear(16, 3));
};
const a = net(4); // Adam(model), clipping over the module
const b = net(4); // Adam(list), clipping over the list
ct.manualSeed(9);
const x = ct.randn([32, 6]);
const y = ct.tensor([...Array(32).keys()].map((i) => i % 3), { dtype: ct.int64 });
const oa = ct.optim.Adam(a, { lr: 0.05, weight_decay: 0.01 });
const ob = ct.optim.Adam(b.parameters(), { lr: 0.05, weight_decay: 0.01 });
assert.strictEqual(oa.params(0).length, 4);
for (let step = 0; step < 4; step++) {
  const norms = [];
  for (const [m, o, over] of [[a, oa, a], [b, ob, null]]) {
    ct.scope(() => {
      const loss = ct.mul(ct.nn.cross_entropy_loss(m.forward(x), y), 20);
      o.zeroGrad();
      loss.backward();
      norms.push(ct.nn.utils.clipGradNorm_(over || m.parameters(), 0.5));
      ct.nn.utils.clipGradValue_(over || m.parameters(), 0.02);
      o.step();
    });
  }
  assert.ok(norms[0] === norms[1] && norms[0] > 0.5, `step ${step}: norms ${norms}`);
}
const pa = a.parameters();
const pb = b.parameters();
for (let i = 0; i < pa.length; i++) assert.deepStrictEqual(pa[i].toArray(), pb[i].toArray(), `parameter ${i}`);

assert.throws(() => ct.optim.SGD(new ct.nn.ReLU(), { lr: 0.1 }), /no parameters/);
assert.throws(() => ct.nn.utils.clipGradNorm_(a, NaN), /max_norm/);
console.log('node_shortcuts: Adam(model) and clipping over the module equal to the list form (4 steps)');
