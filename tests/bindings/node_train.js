'use strict';
// Trains LeNet-5 (examples/lenet5.py's architecture, written with the
// binding's module classes: a ct.nn.Module subclass holding Conv2d and Linear
// children) on Fashion-MNIST, 2 epochs of AdamW at batch 256, and checks the
// test accuracy and that the state-dict keys are Python's; then runs steps
// that free nothing by hand and checks that the native-memory counter and the
// finalizers keep memory bounded. Exit 77 (skipped) without the data set.
// CTORCH_TRAIN_STEPS=N stops after N steps, and then the loss must also have
// fallen; CTORCH_TRAIN_MIN_ACCURACY sets the floor (as py_train.py).
const fs = require('fs');
const path = require('path');
const ct = require(process.env.CTORCH_NODE_PKG);

const DATA = process.env.CTORCH_FASHION_MNIST || '/usr/share/datasets/fashion-mnist';
const MIN_ACCURACY = Number(process.env.CTORCH_TRAIN_MIN_ACCURACY || '0.80');
const EPOCHS = 2;
const MAX_STEPS = Number(process.env.CTORCH_TRAIN_STEPS || '0'); // 0: all EPOCHS
if (!fs.existsSync(path.join(DATA, 'train-images-idx3-ubyte.gz'))) {
  console.log(`skipped: Fashion-MNIST not found in ${DATA} (package dataset-fashion-mnist)`);
  process.exit(77);
}
function fail(msg) { console.log(`FAIL: ${msg}`); process.exit(1); }

ct.manualSeed(0);
ct.setNumThreads(1);
const t0 = Date.now();

function prepare(train) {
  return ct.scope(() => {
    const [images, labels] = ct.data.readMnist(DATA, train);
    const x = ct.div(ct.reshape(images.to(ct.float32), [-1, 1, 28, 28]), 255);
    return [ct.div(ct.sub(x, 0.2860), 0.3530), labels];
  });
}
const [xTrain, yTrain] = prepare(true);
const [xTest, yTest] = prepare(false);

class LeNet5 extends ct.nn.Module {
  constructor() {
    super();
    this.conv1 = new ct.nn.Conv2d(1, 6, 5);
    this.conv2 = new ct.nn.Conv2d(6, 16, 5);
    this.fc1 = new ct.nn.Linear(256, 120);
    this.fc2 = new ct.nn.Linear(120, 84);
    this.fc3 = new ct.nn.Linear(84, 10);
  }
  forward(x) {
    x = ct.max_pool2d(ct.relu(this.conv1.forward(x)), [2]);
    x = ct.max_pool2d(ct.relu(this.conv2.forward(x)), [2]);
    x = ct.flatten(x, { start_dim: 1 });
    x = ct.relu(this.fc1.forward(x));
    x = ct.relu(this.fc2.forward(x));
    return this.fc3.forward(x);
  }
}
const model = new LeNet5();
const keys = [...model.stateDict().keys()].join(' ');
const want = ['conv1', 'conv2', 'fc1', 'fc2', 'fc3'].map((m) => `${m}.weight ${m}.bias`).join(' ');
if (keys !== want) fail(`state_dict keys ${keys}, Python's are ${want}`);
if (model.numParameters() !== 44426) fail(`${model.numParameters()} parameters, Python's LeNet-5 has 44426`);

const opt = ct.optim.AdamW(model.parameters(), { lr: 2e-3 });
const loader = new ct.data.DataLoader(xTrain, yTrain, { batchSize: 256, shuffle: true, seed: 1 });
let steps = 0, last = 0, first = 0;
const more = () => MAX_STEPS === 0 || steps < MAX_STEPS;
for (let e = 0; e < EPOCHS && more(); e++) {
  for (const [x, y] of loader) {
    if (!more()) { x.dispose(); y.dispose(); break; }
    last = ct.scope(() => {
      const loss = ct.nn.cross_entropy_loss(model.forward(x), y);
      opt.zeroGrad();
      loss.backward();
      opt.step();
      return loss.item();
    });
    x.dispose();
    y.dispose();
    if (steps++ === 0) first = last;
  }
}
const trainS = (Date.now() - t0) / 1000;
model.eval();
const accuracy = ct.scope(() => ct.noGrad(() => {
  const pred = ct.argmax(model.forward(xTest), { dim: 1 });
  return ct.mean(ct.eq(pred, yTest).to(ct.float32)).item();
}));
console.log(`node binding: LeNet-5 (ct.nn modules), ${steps} steps of 256 in ${trainS.toFixed(1)} s, ` +
  `loss ${first.toFixed(4)} -> ${last.toFixed(4)}, test accuracy ${(accuracy * 100).toFixed(2)}%`);
if (MAX_STEPS && !(last < first)) fail('the loss did not fall');
if (accuracy < MIN_ACCURACY) fail(`accuracy below ${MIN_ACCURACY * 100}%`);

// Finalizers only: 100 steps on batches of 128 that dispose nothing. Each
// live loss pins its graph; with the native counter driving collections
// (gcThresholdBytes) and finalizers running between event-loop turns,
// memory must stay bounded.
(async () => {
  model.train();
  ct.config.gcThresholdBytes = 64 << 20;
  const big = new ct.data.DataLoader(xTrain, yTrain, { batchSize: 128, shuffle: true, seed: 2 });
  const start = ct.memoryBytes();
  let peak = start, n = 0;
  for (const [x, y] of big) {
    const loss = ct.nn.cross_entropy_loss(model.forward(x), y);
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
  console.log(`node binding, finalizers only: ${n} steps of 128 without dispose(), native memory peak ` +
    `+${grew.toFixed(0)} MiB over the start (gc threshold 64 MiB)`);
  if (grew > 512) fail('native memory grew without bound');
})();
