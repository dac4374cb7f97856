#!/usr/bin/env node
'use strict';
// LeNet-5 on Fashion-MNIST, one epoch: examples/lenet5.c in Node.js, trained
// through the Promise API (the batches, forward, backward and step run off
// the event loop). The same seed gives the C program's output and weights
// bit for bit (tests/bindings/go_lenet5_twin.py); the last line's accuracies
// are those of the saved weights loaded into a fresh model.
//   node examples/node/lenet5.js [--data DIR] [--seed S] [--save PATH]
/** @type {import('ctorch')} */ // a require(expression) is untyped: tsc --checkJs takes this
const ct = require(process.env.CTORCH_NODE_PKG || 'ctorch');
const { fixed } = require('./cformat');
/** @typedef {import('ctorch').Tensor} Tensor */

const a = { data: '/usr/share/datasets/fashion-mnist', seed: '1', save: 'lenet5.pt' };
for (let i = 2; i + 1 < process.argv.length; i += 2) Object.assign(a, { [process.argv[i].slice(2)]: process.argv[i + 1] });
const seed = Number(a.seed);

function lenet5() { // named children: the state-dict keys of lenet5.c and lenet5.py (conv1.weight, ...)
  const net = new ct.nn.Sequential(), nn = ct.nn;
  Object.entries({ conv1: new nn.Conv2d(1, 6, 5), relu1: new nn.ReLU(), pool1: new nn.MaxPool2d(2),
    conv2: new nn.Conv2d(6, 16, 5), relu2: new nn.ReLU(), pool2: new nn.MaxPool2d(2), flatten: new nn.Flatten(),
    fc1: new nn.Linear(256, 120), relu3: new nn.ReLU(), fc2: new nn.Linear(120, 84), relu4: new nn.ReLU(),
    fc3: new nn.Linear(84, 10) }).forEach(([k, m]) => net.registerModule(k, m));
  return net;
}
/** Rows whose label is among the k highest logits. @param {Tensor} logits @param {Tensor} y @param {number} k */
const hits = (logits, y, k) => Number(ct.sum(ct.eq(ct.topk(logits, k, 1)[1], ct.unsqueeze(y, 1))).item());
/** @param {import('ctorch').nn.Module} net @param {import('ctorch').data.DataLoader<Tensor>} test */
const evaluate = (net, test) => ct.scope(() => ct.inferenceMode(() => {
  const c = [0, 0, 0];
  for (const [x, y] of test) {
    const logits = net.forward(x);
    c[0] += hits(logits, y, 1); c[1] += hits(logits, y, 5); c[2] += y.numel();
  }
  return [c[0] / c[2], c[1] / c[2]];
}));

async function main() {
  const [trainImg, trainY] = ct.data.readMnist(a.data, true), [testImg, testY] = ct.data.readMnist(a.data, false);
  const scaled = (/** @type {Tensor} */ img) => ct.div(img.to(ct.float32), ct.float(255));
  const mean = ct.mean(scaled(trainImg)), std = ct.std(scaled(trainImg), true); // lenet5.c's standardisation
  const prep = (/** @type {Tensor} */ img) => ct.reshape(ct.div(ct.sub(scaled(img), mean), std), [-1, 1, 28, 28]);
  const train = new ct.data.DataLoader(prep(trainImg), trainY, { batchSize: 256, shuffle: true, seed });
  const test = new ct.data.DataLoader(prep(testImg), testY, { batchSize: 1000 });
  ct.manualSeed(seed);
  const net = lenet5(), opt = ct.optim.AdamW(net); // torch's defaults: lr 1e-3, weight decay 0.01
  console.log(`LeNet-5 on Fashion-MNIST (${trainY.numel()} training images), 1 epoch(s), batch 256, ` +
    `${ct.capi.get_num_threads()} thread(s), seed ${seed}`);
  const t0 = Date.now();
  let lossSum = 0, correct = 0, seen = 0;
  for await (const [x, y] of train) {
    await ct.scope(async () => {
      const logits = await net.forwardAsync(x), loss = ct.nn.cross_entropy_loss(logits, y, { reduction: 'mean' });
      opt.zeroGrad();
      await loss.backwardAsync();
      await opt.stepAsync();
      lossSum += Number(loss.item()) * y.numel(); seen += y.numel();
      correct += ct.noGrad(() => hits(logits, y, 1));
    });
    x.dispose(); y.dispose();
  }
  const dt = (Date.now() - t0) / 1000;
  let [acc, top5] = evaluate(net, test);
  console.log(`epoch 1/1 loss=${fixed(lossSum / seen, 4)} train_acc=${fixed(correct / seen, 4)} test_acc=${fixed(acc, 4)} ` +
    `top5=${fixed(top5, 4)} images_per_s=${(seen / dt).toFixed(1)} time=${dt.toFixed(1)}s`);
  await ct.saveAsync(net.stateDict(), a.save);
  console.log(`saved weights to ${a.save}`);
  const again = lenet5();
  again.loadStateDict(await ct.loadAsync(a.save));
  [acc, top5] = evaluate(again, test); // the reloaded weights: the last line must still be lenet5.c's
  console.log(`test_accuracy=${fixed(acc, 4)} top5=${fixed(top5, 4)} images_per_s=${(seen / dt).toFixed(1)}`);
}
if (!require('fs').existsSync(`${a.data}/train-images-idx3-ubyte.gz`)) {
  console.log(`skipped: Fashion-MNIST not found in ${a.data} (package dataset-fashion-mnist)`);
  process.exit(77);
}
main().catch((e) => { console.error('lenet5:', e); process.exit(1); });
