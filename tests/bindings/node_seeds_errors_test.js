'use strict';
// Seeds and error messages of the Node binding.
// - Seeds take PyTorch's range [-2^63, 2^64-1], a negative seed s meaning
//   2^64 + s (torch.manual_seed(-1).initial_seed() is 2^64 - 1; the Python
//   binding's test compares the draws with PyTorch's): ct.manualSeed,
//   Generator.manualSeed and the loader's seed give for s what they give for
//   2^64 + s; outside the range a RangeError, not an integer a TypeError.
// - Refusals name the ctorch function and argument: a lock refusal while a
//   Promise call is pending, a disposed handle, a wrong type for a string or
//   pointer parameter (koffi would have passed the number 42 as an address:
//   a crash), a missing argument, a wrong optimizer option (and a boolean
//   one, which koffi turned into an abort), a disposed list element.
const assert = require('assert');
const ct = require(process.env.CTORCH_NODE_PKG);

const TOP = 2n ** 64n - 1n;
const draws = () => [...ct.rand([4]).toArray(), ...ct.randn([3]).toArray()];

// ---- seeds ------------------------------------------------------------------
const g0 = ct.capi.generator_default('cpu');
for (const [s, mapped] of [[-1, TOP], [-1n, TOP], [-(2n ** 63n), 2n ** 63n], [0, 0n], [TOP, TOP]]) {
  ct.manualSeed(s);
  assert.strictEqual(ct.capi.generator_initial_seed(g0), mapped, `manualSeed(${s}): initial seed`);
  const a = draws();
  ct.manualSeed(mapped);
  assert.deepStrictEqual(a, draws(), `manualSeed(${s}) draws as manualSeed(${mapped})`);
  const g = new ct.Generator().manualSeed(s);
  assert.strictEqual(g.initialSeed(), mapped, `Generator.manualSeed(${s})`);
  const gd = ct.randn([5], { generator: g }).toArray();
  assert.deepStrictEqual(gd, ct.randn([5], { generator: new ct.Generator().manualSeed(mapped) }).toArray());
}
const order = (seed) => {
  const out = [];
  for (const [b] of new ct.data.DataLoader(ct.arange(10), null, { batchSize: 3, shuffle: true, seed })) out.push(...b.toArray());
  return out;
};
assert.deepStrictEqual(order(-1), order(TOP), 'DataLoader seed -1 is 2^64 - 1');
assert.notDeepStrictEqual(order(-1), order(1), 'the seed matters');
assert.throws(() => ct.manualSeed(2n ** 64n), (e) => e instanceof RangeError && /seed/.test(e.message));
assert.throws(() => ct.manualSeed(-(2n ** 63n) - 1n), (e) => e instanceof RangeError && /seed/.test(e.message));
assert.throws(() => ct.manualSeed(1.5), (e) => e instanceof TypeError && /seed/.test(e.message));
assert.throws(() => ct.manualSeed('1'), (e) => e instanceof TypeError && /seed/.test(e.message));
assert.throws(() => new ct.data.DataLoader(ct.arange(4), null, { seed: 2n ** 64n }), /seed/);
console.log('ok   seeds: -1, -2^63, 0, 2^64-1 as PyTorch maps them; out of range refused');

// ---- messages name the ctorch function and argument --------------------------
// Every refusal below: a TypeError/Error/RangeError whose text names fn and arg.
function names(fn, arg, call, Kind = Error) {
  assert.throws(call, (e) => {
    assert.ok(e instanceof Kind, `${fn}: ${e.constructor.name}: ${e.message}`);
    assert.ok(e.message.includes(fn) && e.message.includes(`'${arg}'`), `names ${fn} and '${arg}': ${e.message}`);
    return true;
  });
}
(async () => {
  // A lock refusal while a Promise call on the object is pending.
  const net = new ct.nn.Linear(3, 2);
  const x = ct.ones([1, 3]);
  const pending = net.forwardAsync(x);
  names('ctorch_nn_module_forward', 'm', () => net.forward(x));
  await pending;
  const opt = ct.optim.SGD(net.parameters(), { lr: 0.1 });
  const step = opt.stepAsync();
  names('ctorch_optimizer_step', 'opt', () => opt.step());
  await step;
  // A disposed handle.
  opt.dispose();
  names('ctorch_optimizer_step', 'opt', () => opt.step());
  // Wrong types for string and pointer parameters: refused before koffi.
  names('ctorch_load', 'path', () => ct.capi.load(42), TypeError);
  names('ctorch_load', 'path', () => ct.capi.load({}), TypeError);
  names('ctorch_tensor_from_data', 'data', () => ct.capi.tensor_from_data(7, [1], ct.float32), TypeError);
  // Optimizer options: a wrong type is named; a boolean for an int field
  // works (koffi aborted the process on one).
  const w = ct.ones([2]).requiresGrad_();
  names('ctorch_optimizer_new_v2', 'options', () => ct.optim.SGD([w], { lr: 'a' }), TypeError);
  ct.optim.SGD([w], { lr: 0.1, momentum: 0.9, nesterov: true }).dispose();
  // Lists: a disposed element and a non-list are named.
  const gone = ct.ones([1]);
  gone.dispose();
  names('ctorch_optimizer_new_v2', 'params', () => ct.optim.SGD([w, gone], { lr: 0.1 }));
  names('ctorch_optimizer_new_v2', 'params', () => ct.optim.SGD('x', { lr: 0.1 }), TypeError);
  // An operator's disposed tensor: the operator and argument.
  assert.throws(() => ct.add(gone, 1), /add\.Scalar\(\): argument 'self': tensor used after dispose\(\)/);
  // A missing handle argument.
  names('ctorch_tensor_dim', 't', () => ct.capi.tensor_dim(), TypeError);
  names('ctorch_tensor_dim', 't', () => ct.capi.tensor_dim('t'), TypeError);
  console.log('ok   refusals name the ctorch function and argument (locks, disposed handles, wrong types, missing)');
  console.log('all passed');
})().catch((e) => { console.log(`FAIL ${e.stack}`); process.exit(1); });
