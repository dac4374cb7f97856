#!/usr/bin/env node
'use strict';
// DQN on CartPole in Node.js with the ctorch binding's classes
// (ct.nn.Sequential, ct.nn.Linear, ct.optim.Adam, ct.Generator): examples/dqn.c
// and examples/dqn.py as a Node user would write them. CartPole-v1 in JS
// (float64, gymnasium's equations); every random draw from one generator
// seeded with --seed, in dqn.c's order, so that from the same seed it prints
// the same returns as the C program (tests/bindings/dqn_twins.py).
// cos and sin are the C library's (through koffi): V8's Math.cos/Math.sin
// are its own and may differ in the last bit, which parts the trajectories.
//
//   node examples/node/dqn.js [--episodes K] [--seed S] [--threads N] [--learning-starts N]
//                             [--eps-steps N] [--target-every N] [--solve 0|1] [--save PATH]
// The last line: episodes=<n> steps=<n> solved_at=<episode or 0> mean100=<return> last_loss=<mse> ...
/** @type {import('ctorch')} */ // a require(expression) is untyped: tsc --checkJs takes this
const ct = require(process.env.CTORCH_NODE_PKG || 'ctorch');
const { fixed } = require('./cformat');

const libm = ct.lib.koffi.load('libm.so.6');
const cos = libm.func('double cos(double)'), sin = libm.func('double sin(double)');

/** @type {Record<string, any>} */
const a = { episodes: 1000, seed: 1, threads: 0, learningStarts: 1000, epsSteps: 10000, targetEvery: 500, solve: 1, save: '' };
for (let i = 2; i < process.argv.length; i += 2) {
  const k = process.argv[i].replace(/^--/, '').replace(/-(.)/g, (_, c) => c.toUpperCase());
  if (!(k in a) || i + 1 >= process.argv.length) { console.error(`usage: see ${__filename}`); process.exit(2); }
  a[k] = typeof a[k] === 'number' ? Number(process.argv[i + 1]) : process.argv[i + 1];
}

// CartPole-v1 as gymnasium's cartpole.py, in its order of operations.
const GRAVITY = 9.8, MASSPOLE = 0.1, TOTAL_MASS = 0.1 + 1.0, LENGTH = 0.5, POLEMASS_LENGTH = 0.1 * 0.5;
const FORCE_MAG = 10.0, TAU = 0.02, X_THRESHOLD = 2.4, THETA_THRESHOLD = 12 * 2 * Math.PI / 360, MAX_STEPS = 500;
const CAPACITY = 50000, BATCH = 64, GAMMA = 0.99;

/** @param {Float64Array} s @param {number} action */
function cartpoleStep(s, action) { // s: Float64Array(4), updated; returns terminated
  const [x, xDot, theta, thetaDot] = s;
  const force = action === 1 ? FORCE_MAG : -FORCE_MAG;
  const costheta = cos(theta), sintheta = sin(theta);
  const temp = (force + POLEMASS_LENGTH * (thetaDot * thetaDot) * sintheta) / TOTAL_MASS;
  const thetaacc = (GRAVITY * sintheta - costheta * temp) /
    (LENGTH * (4.0 / 3.0 - MASSPOLE * (costheta * costheta) / TOTAL_MASS));
  const xacc = temp - POLEMASS_LENGTH * thetaacc * costheta / TOTAL_MASS;
  s.set([x + TAU * xDot, xDot + TAU * xacc, theta + TAU * thetaDot, thetaDot + TAU * thetaacc]);
  return s[0] < -X_THRESHOLD || s[0] > X_THRESHOLD || s[2] < -THETA_THRESHOLD || s[2] > THETA_THRESHOLD;
}

const g = new ct.Generator().manualSeed(a.seed);
/** @param {() => import('ctorch').Tensor} fn @returns {any} a typed array of the tensor's dtype */
const draw = (fn) => ct.scope(() => fn().toTypedArray());
const reset = () => draw(() => ct.rand([4], { generator: g, dtype: ct.float64 })).map((/** @type {number} */ u) => u * 0.1 - 0.05);
const uniform = () => draw(() => ct.rand([1], { generator: g }))[0];
/** @param {number} high @param {number} n */
const randint = (high, n) => draw(() => ct.randint(high, [n], { generator: g, dtype: ct.int64 }));

const qnet = () => new ct.nn.Sequential(new ct.nn.Linear(4, 128), new ct.nn.ReLU(), new ct.nn.Linear(128, 128),
  new ct.nn.ReLU(), new ct.nn.Linear(128, 2));
if (a.threads > 0) ct.setNumThreads(a.threads);
ct.manualSeed(a.seed);
const q = qnet(), target = qnet();
target.loadStateDict(q.stateDict());
const opt = ct.optim.Adam(q.parameters(), { lr: 1e-3 });

// The replay buffer in JS arrays; a batch's rows become tensors.
const buf = { obs: new Float32Array(CAPACITY * 4), next: new Float32Array(CAPACITY * 4),
  act: new BigInt64Array(CAPACITY), notdone: new Float32Array(CAPACITY), size: 0, pos: 0 };
/** @param {any} src @param {number} width @param {any} idx @param {any} C */
const rows = (src, width, idx, C = Float32Array) => {
  const out = new C(idx.length * width);
  idx.forEach((/** @type {bigint} */ i, /** @type {number} */ k) => out.set(src.subarray(Number(i) * width, (Number(i) + 1) * width), k * width));
  return ct.tensor(out, { shape: width === 1 ? [idx.length] : [idx.length, width] });
};

function update() {
  const idx = randint(buf.size, BATCH);
  return ct.scope(() => {
    const qa = ct.squeeze(ct.gather(q.forward(rows(buf.obs, 4, idx)), 1, ct.unsqueeze(rows(buf.act, 1, idx, BigInt64Array), 1)), 1);
    const y = ct.noGrad(() => {
      const qmax = ct.max(target.forward(rows(buf.next, 4, idx)), 1)[0];
      return ct.add(ct.ones([BATCH]), ct.mul(ct.mul(qmax, GAMMA), rows(buf.notdone, 1, idx)));
    });
    const loss = ct.nn.mse_loss(qa, y);
    opt.zeroGrad();
    loss.backward();
    opt.step();
    return Number(loss.item());
  });
}
/** @param {Float32Array} obs */
const greedy = (obs) => ct.scope(() => ct.noGrad(() => {
  const v = q.forward(ct.tensor(obs, { shape: [1, 4] })).toTypedArray();
  return v[1] > v[0] ? 1 : 0; // the first on a tie, as torch.argmax
}));

console.log(`DQN on CartPole-v1, up to ${a.episodes} episodes, ${ct.capi.get_num_threads()} thread(s), seed ${a.seed} [node]`);
const returns = [];
let t = 0, loss = 0, mean100 = 0, solvedAt = 0, ep;
const t0 = Date.now();
for (ep = 1; ep <= a.episodes; ep++) {
  const s = Float64Array.from(reset());
  let obs = Float32Array.from(s), ret = 0, done = false;
  while (!done) {
    const eps = 1.0 + (0.05 - 1.0) * (t < a.epsSteps ? t / a.epsSteps : 1.0);
    const act = uniform() < eps ? Number(randint(2, 1)[0]) : greedy(obs);
    const term = cartpoleStep(s, act);
    ret++;
    t++;
    done = term || ret === MAX_STEPS;
    const next = Float32Array.from(s);
    buf.obs.set(obs, buf.pos * 4);
    buf.next.set(next, buf.pos * 4);
    buf.act[buf.pos] = BigInt(act);
    buf.notdone[buf.pos] = term ? 0 : 1; // a truncated episode's last state is bootstrapped
    buf.pos = (buf.pos + 1) % CAPACITY;
    buf.size = Math.min(buf.size + 1, CAPACITY);
    obs = next;
    if (t >= a.learningStarts) loss = update();
    if (t % a.targetEvery === 0) target.loadStateDict(q.stateDict());
  }
  returns.push(ret);
  const last = returns.slice(-100);
  mean100 = last.reduce((x, y) => x + y, 0) / last.length;
  console.log(`episode ${ep} return ${ret} mean100 ${fixed(mean100, 2)} steps ${t} loss ${fixed(loss, 6)}`);
  if (ep >= 100 && mean100 >= 195 && !solvedAt) {
    solvedAt = ep;
    console.log(`solved at episode ${ep} (mean return of the last 100: ${fixed(mean100, 2)})`);
    if (a.solve) break;
  }
}
const dt = (Date.now() - t0) / 1000;
if (a.save) {
  ct.save(q.stateDict(), a.save); // torch.save(q.state_dict(), path)
  console.log(`saved weights to ${a.save}`);
}
console.log(`episodes=${Math.min(ep, a.episodes)} steps=${t} solved_at=${solvedAt} mean100=${fixed(mean100, 2)} ` +
  `last_loss=${fixed(loss, 6)} seconds=${dt.toFixed(1)} steps_per_s=${(t / dt).toFixed(1)}`);
