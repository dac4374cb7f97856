#!/usr/bin/env node
'use strict';
// A variational autoencoder on Fashion-MNIST in Node.js with the ctorch
// binding's classes (ct.nn.Module, ct.nn.Linear, ct.optim.Adam,
// ct.data.DataLoader): examples/vae.c and examples/vae.py written as a Node
// user would. From the same seed: the same weights, batches, eps draws and
// losses as the C program, bit for bit (tests/bindings/vae_twins.py checks
// it on both libtorch versions), the same test loss (z = mu) and the same
// 8x8 grid of samples (z ~ N(0, 1) from a generator seeded with --seed),
// written as a grey PNG with Node's zlib.
//
//   node examples/node/vae.js [--steps K] [--batch B] [--seed S] [--threads T] [--data DIR]
//                             [--test-images N] [--samples PNG] [--save PATH] [--load PATH]
// The last line: initial_loss=<nats/image> final_loss=<nats/image> test_loss=<nats/image> images_per_s=<n>
const fs = require('fs');
const zlib = require('zlib');
/** @type {import('ctorch')} */ // a require(expression) is untyped: tsc --checkJs takes this
const ct = require(process.env.CTORCH_NODE_PKG || 'ctorch');
const { fixed } = require('./cformat');
/** @typedef {import('ctorch').Tensor} Tensor */

const LATENT = 20, GRID = 8;
/** @type {Record<string, any>} */
const a = { steps: 4690, batch: 128, seed: 1, threads: 0, data: '/usr/share/datasets/fashion-mnist',
  testImages: 0, samples: 'vae_samples.png', save: '', load: '' };
for (let i = 2; i < process.argv.length; i += 2) {
  const k = process.argv[i].replace(/^--/, '').replace(/-(.)/g, (_, c) => c.toUpperCase());
  if (!(k in a) || i + 1 >= process.argv.length) { console.error(`usage: see ${__filename}`); process.exit(2); }
  a[k] = typeof a[k] === 'number' ? Number(process.argv[i + 1]) : process.argv[i + 1];
}
if (!fs.existsSync(`${a.data}/train-images-idx3-ubyte.gz`)) {
  console.log(`skipped: Fashion-MNIST not found in ${a.data} (package dataset-fashion-mnist)`);
  process.exit(77);
}
if (a.threads > 0) ct.setNumThreads(a.threads);

class VAE extends ct.nn.Module {
  constructor() {
    super();
    this.fc1 = new ct.nn.Linear(784, 400);
    this.fc21 = new ct.nn.Linear(400, LATENT);
    this.fc22 = new ct.nn.Linear(400, LATENT);
    this.fc3 = new ct.nn.Linear(LATENT, 400);
    this.fc4 = new ct.nn.Linear(400, 784);
  }
  /** @param {Tensor} x @returns {[Tensor, Tensor]} */
  encode(x) {
    const h1 = ct.relu(this.fc1.forward(x));
    return [this.fc21.forward(h1), this.fc22.forward(h1)];
  }
  /** @param {Tensor} mu @param {Tensor} logvar */
  reparameterize(mu, logvar) {
    const std = ct.exp(ct.mul(logvar, 0.5));
    return ct.add(mu, ct.mul(ct.randn_like(std), std));
  }
  /** @param {Tensor} z */
  decode(z) { return ct.sigmoid(this.fc4.forward(ct.relu(this.fc3.forward(z)))); }
  /** @param {Tensor} x */
  forward(x) {
    const [mu, logvar] = this.encode(x);
    return [this.decode(this.reparameterize(mu, logvar)), mu, logvar];
  }
}

// BCE(sum) + KL, op for op as vae.py's loss_function.
/** @param {Tensor} recon @param {Tensor} x @param {Tensor} mu @param {Tensor} logvar */
function lossFunction(recon, x, mu, logvar) {
  const bce = ct.nn.binary_cross_entropy(recon, x, { reduction: 'sum' });
  const kld = ct.mul(ct.sum(ct.sub(ct.sub(ct.add(logvar, 1), ct.pow(mu, 2)), ct.exp(logvar))), -0.5);
  return ct.add(bce, kld);
}

// uint8 [240, 240]: 64 decoded draws in an 8x8 grid of white-framed 28x28 tiles.
/** @param {VAE} model @param {number} seed */
function sampleGrid(model, seed) {
  return ct.inferenceMode(() => {
    const z = ct.randn([GRID * GRID, LATENT], { generator: new ct.Generator().manualSeed(seed) });
    let x = ct.constant_pad_nd(ct.reshape(model.decode(z), [GRID * GRID, 28, 28]), [1, 1, 1, 1], ct.float(1));
    x = ct.reshape(ct.permute(ct.reshape(x, [GRID, GRID, 30, 30]), [0, 2, 1, 3]), [GRID * 30, GRID * 30]);
    return ct.clamp(ct.add(ct.mul(x, ct.float(255)), 0.5), 0, 255).to(ct.uint8); // save_image's rounding
  });
}

/** @param {string} path @param {Tensor} grey */
function writePng(path, grey) {
  const [h, w] = grey.shape, px = /** @type {Uint8Array} */ (grey.toTypedArray()); // uint8
  const rows = Buffer.alloc(h * (w + 1)); // filter byte 0 before each row
  for (let y = 0; y < h; y++) rows.set(px.subarray(y * w, (y + 1) * w), y * (w + 1) + 1);
  /** @param {string} kind @param {Buffer} data */
  const chunk = (kind, data) => {
    const head = Buffer.alloc(4), tail = Buffer.alloc(4), body = Buffer.concat([Buffer.from(kind), data]);
    head.writeUInt32BE(data.length);
    tail.writeUInt32BE(zlib.crc32(body));
    return Buffer.concat([head, body, tail]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr[8] = 8; // 8-bit grey
  fs.writeFileSync(path, Buffer.concat([Buffer.from('\x89PNG\r\n\x1a\n', 'latin1'), chunk('IHDR', ihdr),
    chunk('IDAT', zlib.deflateSync(rows, { level: 9 })), chunk('IEND', Buffer.alloc(0))]));
}

/** @param {boolean} train */
const images = (train) => ct.scope(() => {
  let x = ct.reshape(ct.div(ct.data.readMnist(a.data, train)[0].to(ct.float32), 255), [-1, 784]);
  if (!train && a.testImages > 0) x = ct.narrow(x, 0, 0, a.testImages);
  return x;
});
const trainX = images(true), testX = images(false);
const loader = new ct.data.DataLoader(trainX, null, { batchSize: a.batch, shuffle: true, seed: a.seed });

ct.manualSeed(a.seed);
const model = new VAE();
if (a.load) model.loadStateDict(ct.load(a.load));
const opt = ct.optim.Adam(model.parameters(), { lr: 1e-3 });
console.log(`VAE (784-400-${LATENT}) on Fashion-MNIST, ${a.steps} steps, batch ${a.batch}, ` +
  `${ct.capi.get_num_threads()} thread(s), seed ${a.seed} [node]`);

let first = 0, last = 0, seen = 0, step = 0;
const t0 = process.hrtime.bigint();
while (step < a.steps) {
  for (const [x] of loader) { // one epoch: a new permutation each time, as vae.py's
    last = ct.scope(() => {
      opt.zeroGrad();
      const [recon, mu, logvar] = model.forward(x);
      const loss = lossFunction(recon, x, mu, logvar);
      loss.backward();
      opt.step();
      return Number(loss.item()) / x.shape[0];
    });
    seen += x.shape[0];
    x.dispose();
    if (step === 0) first = last;
    step++;
    if (step === 1 || step % 50 === 0 || step === a.steps) console.log(`step ${step}/${a.steps} loss ${fixed(last, 6)}`);
    if (step === a.steps) break;
  }
}
const dt = Number(process.hrtime.bigint() - t0) / 1e9;

const testLoss = ct.scope(() => ct.inferenceMode(() => {
  const [mu, logvar] = model.encode(testX);
  return Number(lossFunction(model.decode(mu), testX, mu, logvar).item()) / testX.shape[0];
}));
console.log(`test loss ${fixed(testLoss, 6)} (${testX.shape[0]} images, z = mu)`);
if (a.samples) {
  ct.scope(() => writePng(a.samples, sampleGrid(model, a.seed)));
  console.log(`saved samples to ${a.samples}`);
}
if (a.save) {
  ct.save(model.stateDict(), a.save);
  console.log(`saved weights to ${a.save}`);
}
/** @param {number} v */
const g9 = (v) => String(Number(v.toPrecision(9))); // C's %.9g for these magnitudes
console.log(`initial_loss=${g9(first)} final_loss=${g9(last)} test_loss=${g9(testLoss)} ` +
  `images_per_s=${(a.steps ? seen / dt : 0).toFixed(1)}`);
