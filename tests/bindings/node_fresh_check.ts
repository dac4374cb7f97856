// The README's first program and a training step, as a TypeScript user
// writes them in a fresh project: `npm install ctorch typescript`, no
// @types/node, then tsc (tests/bindings/node_tsc.sh, "fresh project"). Compiled,
// never run. index.d.ts must need nothing but itself,
// and loss.item() is a number.
import ct = require('ctorch');

const a = ct.tensor([[1, 2], [3, 4]], { dtype: ct.float32, requiresGrad: true });
ct.scope(() => {
  const loss = ct.sum(ct.mul(a, a));
  loss.backward();
});
const net = new ct.nn.Sequential(new ct.nn.Flatten(), new ct.nn.Linear(784, 10));
const opt = ct.optim.AdamW(net.parameters(), { lr: 1e-3 });
const loader = new ct.data.DataLoader(ct.randn([8, 1, 28, 28]), ct.tensor([0, 1, 2, 3, 4, 5, 6, 7]), { batchSize: 4 });
let total = 0;
for (const [x, y] of loader) {
  opt.zero_grad(true);
  const loss = ct.nn.cross_entropy_loss(net.forward(x), y);
  loss.backward();
  opt.step();
  total += loss.item();
}
const bytes: Uint8Array = ct.capi.tensor_copy_to(a);
{
  using t = ct.randn([2]);
  void t.shape;
}
void [total, bytes, a.grad];
