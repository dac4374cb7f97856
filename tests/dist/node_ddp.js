'use strict';
// One rank of a data-parallel training in Node (ct.distributed), started by
// torchrun (scripts/ddp -n 2): a collective sanity check (allReduce of
// rank + 1 over 2 ranks is 3; the Promise form; send/recv; a refused call is
// a CtorchError and the group goes on), then 20 SGD steps of a 2-layer MLP,
// each rank on its half of a fixed global batch with averageGradients after
// backward. Both ranks must end with bit-identical parameters (allGather),
// and rank 0 then trains the same model alone on the whole batch: the
// parameters must agree within 1e-5. Then the same training through
// ct.distributed.DistributedDataParallel (c10d's Reducer) from the same
// initial parameters on the same data: both divide sums of 2 gradients by 2,
// exactly, so its parameters must equal averageGradients' bit for bit; and one
// step of gradient accumulation: under noSync a rank's gradient is its own,
// the synced micro-batch after it gives the average of both ranks' sums.
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
// STEPS SGD steps on (x, y), the forward through net (the model, or a
// DistributedDataParallel over it); averageGradients between backward and step when distributed.
function train(model, x, y, distributed, net = model) {
  const opt = ct.optim.SGD(model.parameters(), { lr: LR });
  for (let i = 0; i < STEPS; i++) {
    ct.scope(() => {
      opt.zeroGrad();
      ct.nn.mse_loss(net.forward(x), y).backward();
      if (distributed) dist.averageGradients(model);
      opt.step();
    });
  }
}
// Every parameter's values (or gradients), in order, as one float32 vector.
function flat(model, what = (p) => p) {
  const parts = model.parameters().map((p) => what(p).toTypedArray());
  const out = new Float32Array(parts.reduce((n, a) => n + a.length, 0));
  let o = 0;
  for (const a of parts) { out.set(a, o); o += a.length; }
  return out;
}
// The first element where two float32 vectors differ in their bits, or -1.
function firstDiff(a, b) {
  const x = new Uint32Array(a.buffer, a.byteOffset, a.length), y = new Uint32Array(b.buffer, b.byteOffset, b.length);
  if (x.length !== y.length) return 0;
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return i;
  return -1;
}

// The same training through DistributedDataParallel; `ref` is the model
// averageGradients trained, whose final parameters are `want`.
function dataParallel(rank, ref, want, xs, ys) {
  const model = makeModel();
  // 209-byte buckets: several after the rebuild with 2.x; 1.x keeps a first
  // bucket of 1 MiB, which holds this whole model.
  const ddp = new dist.DistributedDataParallel(model, { bucketCapMb: 0.0002 });
  if (ddp.module !== model || ddp.parameters().length !== 4) fail('ddp.module / ddp.parameters() are not the model\'s');
  train(model, xs, ys, false, ddp);
  const i = firstDiff(flat(model), want);
  if (i >= 0) fail(`DistributedDataParallel vs averageGradients: parameter element ${i} differs`);
  const buckets = Array.from({ length: ddp.bucketCount() }, (_, b) => ddp.bucketIndices(b));
  if (buckets.length < 1 || buckets.flat().sort().join() !== '0,1,2,3') fail(`buckets ${JSON.stringify(buckets)}`);

  // Gradient accumulation: micro-batch a under noSync, then b synchronised.
  const half = BATCH / 4;
  const [xa, ya, xb, yb] = [xs.narrow(0, 0, half), ys.narrow(0, 0, half), xs.narrow(0, half, half), ys.narrow(0, half, half)];
  const local = (xx, yy) => { // ref's parameters are model's (above): its gradients are this rank's own
    ref.zeroGrad();
    ct.nn.mse_loss(ref.forward(xx), yy).backward();
    return ref.parameters().map((p) => p.grad.clone());
  };
  const ga = local(xa, ya), gb = local(xb, yb);
  model.zeroGrad();
  const r = ddp.noSync(() => { ct.nn.mse_loss(ddp.forward(xa), ya).backward(); return 7; });
  if (r !== 7) fail(`noSync returned ${r}, not fn's value`);
  const own = flat({ parameters: () => ga });
  if (firstDiff(flat(model, (p) => p.grad), own) >= 0) fail('under noSync the gradient is not the rank\'s own');
  ct.nn.mse_loss(ddp.forward(xb), yb).backward();
  const avg = ga.map((g, k) => {
    const t = ct.add(g, gb[k]);
    dist.allReduce(t);
    return ct.div(t, 2);
  });
  const want2 = flat({ parameters: () => avg });
  if (firstDiff(flat(model, (p) => p.grad), want2) >= 0) fail('after noSync the gradient is not the average of the accumulated ones');
  if (firstDiff(own, want2) < 0) fail('the ranks\' local gradients are equal: the noSync check proves nothing');
  ddp.close();
  ddp.close(); // again: nothing
  let err = null;
  try { ddp.forward(xa); } catch (e) { err = e; }
  if (!err || !/closed/.test(err.message)) fail(`forward after close gave ${err}`);

  // Tensors of one's own (fromParameters), a layer the forward never uses
  // (findUnusedParameters: without it the Reducer waits for gradients that
  // never come and averages nothing), 2 steps: the gradients averaged.
  ct.manualSeed(0);
  const used = new ct.nn.Linear(4, 2), unused = new ct.nn.Linear(4, 2);
  const byParams = dist.DistributedDataParallel.fromParameters([...used.parameters(), ...unused.parameters()],
    { findUnusedParameters: true });
  for (let s = 0; s < 2; s++) {
    used.zeroGrad();
    unused.zeroGrad();
    byParams.preForward();
    const out = used.forward(xs);
    byParams.postForward(out);
    ct.nn.mse_loss(out, ct.mul(ys, s + 1)).backward();
    for (const p of used.parameters()) { // each rank's own data: equal on both ranks only when averaged
      const g = flat({ parameters: () => [p.grad] }), t = p.grad.clone();
      dist.allReduce(t);
      if (firstDiff(g, flat({ parameters: () => [ct.div(t, 2)] })) >= 0) fail(`findUnusedParameters, step ${s}: the gradients differ`);
    }
  }
  byParams.close();
  console.log(`rank ${rank}: DistributedDataParallel equal to averageGradients bit for bit (${STEPS} steps, ` +
    `${buckets.length} bucket(s)), noSync accumulation averaged, unused parameters found`);
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
  const xs = x.narrow(0, rank * (BATCH / 2), BATCH / 2), ys = y.narrow(0, rank * (BATCH / 2), BATCH / 2);
  train(model, xs, ys, true);
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
  dataParallel(rank, model, mine, xs, ys);
  dist.barrier();
  dist.destroyProcessGroup();
  if (dist.isInitialized()) fail('still initialized after destroyProcessGroup');
  err = null;
  try { dist.barrier(); } catch (e) { err = e; }
  if (!err || !/initProcessGroup/.test(err.message)) fail(`barrier after destroy gave ${err}`);
  console.log(`rank ${rank}: ok`);
}
main().catch((e) => fail(e.stack || String(e)));
