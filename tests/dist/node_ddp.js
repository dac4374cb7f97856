'use strict';
// One rank of a data-parallel training in Node (ct.distributed), started by
// torchrun (scripts/ddp -n 2): a collective sanity check (allReduce of
// rank + 1 over 2 ranks is 3; the Promise form; send/recv; a refused call is
// a CtorchError and the group goes on), then 20 SGD steps of a 2-layer MLP,
// each rank on its half of a fixed global batch with averageGradients after
// backward. Both ranks must end with bit-identical parameters (allGather),
// and rank 0 then trains the same model alone on the whole batch: the
// parameters must agree within 1e-5.
const ct = require(process.env.CTORCH_NODE_PKG);
const dist = ct.distributed;

const STEPS = 20, BATCH = 16, LR = 0.1;
let rankTag = '?';
function fail(msg) { console.error(`FAIL (rank ${rankTag}): ${msg}`); process.exit(1); }

function makeModel() {
  ct.manualSeed(0); // the same initial weights on every rank and in the reference
  return new ct.nn.Sequential(new ct.nn.Linear(4, 8), new ct.nn.Tanh(), new ct.nn.Linear(8, 2));
}
function batch() {
  ct.manualSeed(1);
  return [ct.randn([BATCH, 4]), ct.randn([BATCH, 2])];
}
// One SGD step on (x, y); averageGradients between backward and step when distributed.
function train(model, x, y, distributed) {
  const opt = ct.optim.SGD(model.parameters(), { lr: LR });
  for (let i = 0; i < STEPS; i++) {
    ct.scope(() => {
      opt.zeroGrad();
      ct.nn.mse_loss(model.forward(x), y).backward();
      if (distributed) dist.averageGradients(model);
      opt.step();
    });
  }
}
// Every parameter's values, in order, as one float32 vector.
function flat(model) {
  const parts = model.parameters().map((p) => p.toTypedArray());
  const out = new Float32Array(parts.reduce((n, a) => n + a.length, 0));
  let o = 0;
  for (const a of parts) { out.set(a, o); o += a.length; }
  return out;
}

async function main() {
  dist.initProcessGroup({ backend: 'gloo', timeout: 60000 });
  const rank = dist.getRank(), world = dist.getWorldSize();
  rankTag = String(rank);
  if (world !== 2) fail(`world size ${world}, expected 2`);
  if (dist.getBackend() !== 'gloo') fail(`backend ${dist.getBackend()}`);

  // Collectives.
  const t = ct.tensor([rank + 1], { dtype: ct.float32 });
  dist.allReduce(t, dist.ReduceOp.SUM);
  if (t.item() !== 3) fail(`allReduce(rank + 1) = ${t.item()}, expected 3`);
  const m = ct.tensor([rank + 1], { dtype: ct.float32 });
  await dist.allReduceAsync(m, dist.ReduceOp.MAX);
  if (m.item() !== 2) fail(`allReduceAsync(rank + 1, MAX) = ${m.item()}, expected 2`);
  const b = ct.tensor([rank * 10 + 7], { dtype: ct.float32 });
  dist.broadcast(b, 1);
  if (b.item() !== 17) fail(`broadcast from 1 = ${b.item()}, expected 17`);
  const p2p = ct.tensor([0, 0], { dtype: ct.float32 });
  if (rank === 0) dist.send(ct.tensor([5, 6], { dtype: ct.float32 }), 1, { tag: 3 });
  else {
    dist.recv(p2p, 0, { tag: 3 });
    if (p2p.toArray().join() !== '5,6') fail(`recv got ${p2p.toArray()}`);
  }
  // A refused call throws the C function's error; the group stays usable.
  let err = null;
  try { dist.broadcast(b, world); } catch (e) { err = e; }
  if (!(err instanceof ct.CtorchError) || !/ctorch_dist_broadcast/.test(err.message)) {
    fail(`broadcast from rank ${world} gave ${err}, expected a CtorchError naming ctorch_dist_broadcast`);
  }
  err = null;
  try { dist.allReduce(t, 99); } catch (e) { err = e; }
  if (!(err instanceof TypeError)) fail(`allReduce with op 99 gave ${err}, expected a TypeError`);
  await dist.barrierAsync();

  // Data-parallel training: each rank its half of the global batch.
  const [x, y] = batch();
  const model = makeModel();
  dist.broadcastParameters(model, 0);
  const t0 = Date.now();
  train(model, x.narrow(0, rank * (BATCH / 2), BATCH / 2), y.narrow(0, rank * (BATCH / 2), BATCH / 2), true);
  const mine = flat(model);
  const gathered = [0, 1].map(() => ct.zeros([mine.length]));
  dist.allGather(gathered, ct.tensor(mine, { dtype: ct.float32 }));
  const bits = gathered.map((g) => new Uint32Array(g.toTypedArray().buffer));
  for (let i = 0; i < mine.length; i++) {
    if (bits[0][i] !== bits[1][i]) fail(`parameter element ${i} differs between the ranks`);
  }
  if (rank === 0) {
    const alone = makeModel();
    train(alone, x, y, false);
    const ref = flat(alone);
    let maxDiff = 0;
    for (let i = 0; i < ref.length; i++) maxDiff = Math.max(maxDiff, Math.abs(ref[i] - mine[i]));
    if (!(maxDiff <= 1e-5)) fail(`2 ranks vs one process on the whole batch: max |diff| ${maxDiff} > 1e-5`);
    console.log(`rank 0: ${STEPS} steps on 2 ranks, ${mine.length} parameters bit-identical across ranks, ` +
      `max |diff| to one process ${maxDiff.toExponential(2)} (${Date.now() - t0} ms)`);
  }
  dist.barrier();
  dist.destroyProcessGroup();
  if (dist.isInitialized()) fail('still initialized after destroyProcessGroup');
  err = null;
  try { dist.barrier(); } catch (e) { err = e; }
  if (!err || !/initProcessGroup/.test(err.message)) fail(`barrier after destroy gave ${err}`);
  console.log(`rank ${rank}: ok`);
}
main().catch((e) => fail(e.stack || String(e)));
