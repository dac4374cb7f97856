'use strict';
// Trains a 784-128-10 MLP on Fashion-MNIST through the generated Node.js
// binding (ctorch's loader, autograd and Adam), one epoch, and checks the
// test accuracy; then runs steps that free nothing by hand and checks that
// the native-memory counter and the finalizers keep memory bounded.
// Exit 77 (skipped) without the data set.
const fs = require('fs');
const path = require('path');
const ct = require(process.env.CTORCH_NODE_PKG);

const DATA = process.env.CTORCH_FASHION_MNIST || '/usr/share/datasets/fashion-mnist';
const MIN_ACCURACY = 0.80;
if (!fs.existsSync(path.join(DATA, 'train-images-idx3-ubyte.gz'))) {
  console.log(`skipped: Fashion-MNIST not found in ${DATA} (package dataset-fashion-mnist)`);
  process.exit(77);
}

ct.manualSeed(0);
ct.setNumThreads(1);
const t0 = Date.now();

function prepare(train) {
  return ct.scope(() => {
    const [images, labels] = ct.data.readMnist(DATA, train);
    const x = ct.div(ct.reshape(images.to(ct.float32), [-1, 784]), 255);
    return [ct.div(ct.sub(x, 0.2860), 0.3530), labels];
  });
}
const [xTrain, yTrain] = prepare(true);
const [xTest, yTest] = prepare(false);

function param(shape, fanIn) {
  const t = ct.empty(shape);
  const b = 1 / Math.sqrt(fanIn);
  ct.nn.init.uniform_(t, -b, b);
  return t.requiresGrad_();
}
const w1 = param([128, 784], 784), b1 = param([128], 784), w2 = param([10, 128], 128), b2 = param([10], 128);
const model = (x) => ct.nn.linear(ct.relu(ct.nn.linear(x, w1, b1)), w2, b2);

const opt = ct.optim.Adam([w1, b1, w2, b2], { lr: 1e-3 });
const loader = new ct.data.DataLoader(xTrain, yTrain, { batchSize: 64, shuffle: true, seed: 1 });
let steps = 0, last = 0;
for (const [x, y] of loader) {
  last = ct.scope(() => {
    const loss = ct.nn.cross_entropy_loss(model(x), y);
    opt.zeroGrad();
    loss.backward();
    opt.step();
    return loss.item();
  });
  x.dispose();
  y.dispose();
  steps++;
}
const trainS = (Date.now() - t0) / 1000;
const accuracy = ct.scope(() => ct.noGrad(() => {
  const pred = ct.argmax(model(xTest), { dim: 1 });
  return ct.mean(ct.eq(pred, yTest).to(ct.float32)).item();
}));
console.log(`node binding: MLP 784-128-10, 1 epoch (${steps} steps of 64) in ${trainS.toFixed(1)} s, ` +
  `final loss ${last.toFixed(4)}, test accuracy ${(accuracy * 100).toFixed(2)}%`);
if (accuracy < MIN_ACCURACY) {
  console.log(`FAIL: accuracy below ${MIN_ACCURACY * 100}%`);
  process.exit(1);
}

// Finalizers only: 300 steps on batches of 512 that dispose nothing. Each
// live loss pins its graph (~1.5 MiB); with the native counter driving
// collections (gcThresholdBytes) and finalizers running between event-loop
// turns, memory must stay bounded.
(async () => {
  ct.config.gcThresholdBytes = 64 << 20;
  const big = new ct.data.DataLoader(xTrain, yTrain, { batchSize: 512, shuffle: true, seed: 2 });
  const start = ct.memoryBytes();
  let peak = start, n = 0;
  for (const [x, y] of big) {
    const loss = ct.nn.cross_entropy_loss(model(x), y);
    opt.zeroGrad();
    loss.backward();
    opt.step();
    if (++n % 10 === 0) {
      await new Promise((r) => setImmediate(r)); // let finalizers run
      peak = Math.max(peak, ct.memoryBytes());
    }
    if (n === 100) break;
  }
  const grew = (peak - start) / (1 << 20);
  console.log(`node binding, finalizers only: ${n} steps of 512 without dispose(), native memory peak ` +
    `+${grew.toFixed(0)} MiB over the start (gc threshold 64 MiB)`);
  if (grew > 512) {
    console.log('FAIL: native memory grew without bound');
    process.exit(1);
  }
})();
