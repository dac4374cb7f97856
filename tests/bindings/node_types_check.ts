// A TypeScript program over the Node package's declarations (index.d.ts):
// compiled, never run, by tests/bindings/node_tsc.sh (tsc --strict --noEmit).
// The calls below must type-check; each line after @ts-expect-error must be
// refused (tsc fails when such a line compiles), so the declarations are
// checked both to accept what the runtime takes and to reject what it throws on.
import ct = require('ctorch');
import type { Tensor, DType } from 'ctorch';

const a: Tensor = ct.tensor([[1, 2], [3, 4]], { dtype: ct.float32, requiresGrad: true });
const loss: Tensor = ct.sum(ct.mul(a, a));
loss.backward();
const g: Tensor | null = a.grad;
const shape: number[] = a.shape;
const dt: DType = a.dtype;
const v: number = loss.item(); // a number for every dtype
const vb: boolean = loss.itemBool();
const sum2: number = loss.item() * 2 + v;
const [values, indices]: [Tensor, Tensor] = ct.max(a, 1, { keepdim: true });
const m1: Tensor = ct.mean(a, [0], true);
const m2: Tensor = a.mean([0], { keepdim: true, dtype: ct.float64 });
const s1: Tensor = a.add(a, { alpha: 2 }).sub(1).mul(ct.float(2));
const ce: Tensor = ct.nn.cross_entropy_loss(ct.randn([4, 3]), ct.tensor([0, 1, 2, 0]), { reduction: 'sum' });
const lin: Tensor = ct.nn.linear(a, a);
const kept: Tensor = ct.scope(() => ct.relu(a));
const later: Promise<number> = ct.scope(async () => { await null; return ct.relu(a).numel(); });
const ng: Tensor = ct.noGrad(() => ct.relu(a));
const gen = new ct.Generator().manualSeed(1);
const r: Tensor = ct.randn([2, 3], { generator: gen, dtype: ct.float64 });
{
  using t = ct.randn([2]);
  void t.shape;
}

class Net extends ct.nn.Module {
  fc1 = new ct.nn.Linear(4, 8);
  fc2 = new ct.nn.Linear(8, 2, { bias: false });
  forward(x: Tensor): Tensor { return this.fc2.forward(ct.relu(this.fc1.forward(x))); }
}
const net = new Net();
const y: Tensor = net.forward(ct.randn([3, 4]));
const seq = new ct.nn.Sequential(new ct.nn.Linear(4, 2), new ct.nn.ReLU());
const conv = new ct.nn.Conv2d(1, 6, 5, { padding: 2 });
const opt = ct.optim.AdamW(net, { lr: 1e-3, betas: [0.9, 0.999], weight_decay: 0.01 });
const sgd = ct.optim.SGD(seq.parameters(), { lr: 0.1, momentum: 0.9 });
const sd: Map<string, Tensor> = net.stateDict();
const res: { missingKeys: string[]; unexpectedKeys: string[] } = net.loadStateDict(sd, { strict: false });
ct.save(sd, '/tmp/ctorch-never-written.pt');

async function promises(): Promise<number> {
  const [images, labels]: [Tensor, Tensor] = ct.data.readMnist('/nonexistent');
  const loader = new ct.data.DataLoader(images, labels, { batchSize: 64, shuffle: true, seed: 1 });
  let total = 0;
  for await (const [x, t] of loader) {
    const out: Tensor = await seq.forwardAsync(ct.flatten(x.to(ct.float32), { start_dim: 1 }));
    const l = ct.nn.cross_entropy_loss(out, t); // t: Tensor, the loader having targets
    await l.backwardAsync();
    await sgd.stepAsync();
    sgd.zeroGrad();
    total += Number(l.item());
  }
  const batch: [Tensor, Tensor] | null = await loader.nextAsync();
  for (const [x, none] of new ct.data.DataLoader(images, null)) {
    // @ts-expect-error a loader without targets yields null targets
    none.dispose();
    x.dispose();
  }
  await ct.saveAsync(net.stateDict(), '/tmp/ctorch-never-written.pt');
  const back: Map<string, Tensor> = await ct.loadAsync('/tmp/ctorch-never-written.pt');
  await using m = new Net();
  void batch; void back; void m;
  return total;
}

// @ts-expect-error a string is no Tensor
ct.relu('x');
// @ts-expect-error no option 'nope'
ct.sum(a, { nope: 1 });
// @ts-expect-error reduction takes 'none' | 'mean' | 'sum' or its number
ct.nn.cross_entropy_loss(a, a, { reduction: 'average' });
// @ts-expect-error Linear's sizes are numbers
new ct.nn.Linear('4', 2);
// @ts-expect-error noGrad takes a function
ct.noGrad(1);
// @ts-expect-error noGrad refuses an async function
ct.noGrad(async () => ct.relu(a));
// @ts-expect-error inferenceMode refuses a function returning a Promise
ct.inferenceMode(() => net.forwardAsync(a));
// @ts-expect-error the result of max over a dim is a pair
const notOne: Tensor = ct.max(a, 1);
// @ts-expect-error shape is read-only
a.shape = [1];
// @ts-expect-error an optimizer option that does not exist
ct.optim.SGD(seq.parameters(), { learningRate: 0.1 });
// A function never called: constructing a DistributedDataParallel needs a process group.
function dataParallel(model: ct.nn.Sequential): number[] {
  const ddp = new ct.distributed.DistributedDataParallel(model, { bucketCapMb: 25, findUnusedParameters: true });
  const out: Tensor = ddp.forward(a);
  const n: number = ddp.noSync(() => { ct.sum(ddp.forward(a)).backward(); return 1; });
  const own = ct.distributed.DistributedDataParallel.fromParameters([a], { buffers: [], broadcastBuffers: false });
  own.preForward();
  own.postForward(ct.relu(a));
  // @ts-expect-error a DistributedDataParallel option that does not exist (torch's snake_case)
  new ct.distributed.DistributedDataParallel(model, { bucket_cap_mb: 25 });
  // @ts-expect-error module is read-only
  ddp.module = null;
  ddp.close();
  return [n, out.numel(), ...ddp.bucketIndices(0)];
}

void [dataParallel, vb, sum2, g, shape, dt, v, values, indices, m1, m2, s1, ce, lin, kept, later, ng, r, y, conv, opt, res, promises, notOne];
