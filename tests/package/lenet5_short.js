'use strict';
// A short LeNet-5 training with the Node package's module classes (the
// architecture of examples/lenet5.py): 30 AdamW steps of 256 images, then
// the test accuracy, which must be well above chance. Run by run_npm.sh from
// a fresh npm project that installed the packed tarball (require('ctorch')).
// Usage: node lenet5_short.js DATA_DIR
const ct = require('ctorch');
const data = process.argv[2];
const STEPS = 30;

ct.manualSeed(0);
function prepare(train) {
  return ct.scope(() => {
    const [images, labels] = ct.data.readMnist(data, train);
    const x = ct.div(ct.reshape(images.to(ct.float32), [-1, 1, 28, 28]), 255);
    return [ct.div(ct.sub(x, 0.2860), 0.3530), labels];
  });
}
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
    return this.fc3.forward(ct.relu(this.fc2.forward(ct.relu(this.fc1.forward(x)))));
  }
}
const [xTrain, yTrain] = prepare(true);
const [xTest, yTest] = prepare(false);
const model = new LeNet5();
const opt = ct.optim.AdamW(model.parameters(), { lr: 2e-3 });
const loader = new ct.data.DataLoader(xTrain, yTrain, { batchSize: 256, shuffle: true, seed: 1 });
let steps = 0, first = 0, last = 0;
for (const [x, y] of loader) {
  last = ct.scope(() => {
    const loss = ct.nn.cross_entropy_loss(model.forward(x), y);
    opt.zeroGrad();
    loss.backward();
    opt.step();
    return loss.item();
  });
  if (steps === 0) first = last;
  x.dispose();
  y.dispose();
  if (++steps === STEPS) break;
}
model.eval();
const accuracy = ct.scope(() => ct.noGrad(() =>
  ct.mean(ct.eq(ct.argmax(model.forward(xTest), { dim: 1 }), yTest).to(ct.float32)).item()));
console.log(`LeNet-5 (ct.nn modules, ${ct.lib.path}): ${steps} steps, loss ${first.toFixed(4)} -> ${last.toFixed(4)}, ` +
  `test accuracy ${(accuracy * 100).toFixed(2)}%`);
if (!(last < first) || accuracy < 0.3) {
  console.log('FAIL: the loss did not fall or the accuracy is not above 30%');
  process.exit(1);
}
