//! Data-parallel training with the Rust binding's `ctorch::dist` under torchrun
//! (ctest dist_torchrun_rust_binding: `scripts/ddp -n 2 -- <this program>`).
//! Checks, on every rank: the collectives (all_reduce of rank + 1 is the sum
//! 1 + ... + n, broadcast, all_gather, send/recv, barrier); a 2-layer MLP
//! trained 20 SGD steps, each rank on its share of a fixed global batch with
//! average_gradients after backward, ends with parameters bit-identical on
//! every rank; and, on rank 0, those parameters equal within 1e-5 one process
//! training the same model on the whole global batch. Then the same model,
//! from the same initial parameters on the same data, trained through
//! dist::DistributedDataParallel (gradients averaged by c10d's Reducer during
//! backward) ends bit-identical to the average_gradients run (2 ranks: both
//! divide by 2 exactly); and one step of gradient accumulation (the first
//! micro-batch under no_sync) leaves the local gradient after the no_sync
//! backward and, after the synchronised one, the sum of the two micro-batches'
//! synchronised gradients. `--build-only`: exits at once (the test builds the
//! program before torchrun starts the ranks).
use ctorch::dist::{self, DdpOptions, DistributedDataParallel, ReduceOp};
use ctorch::nn::{Module, Sequential};
use ctorch::optim::Optimizer;
use ctorch::Tensor;
use std::time::Duration;

const GLOBAL_BATCH: usize = 16;
const IN: usize = 4;
const STEPS: usize = 20;
const LR: f64 = 0.1;
const SEED: u64 = 7;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// The fixed global batch: inputs and targets from a 64-bit LCG (the same on every rank).
fn global_batch() -> Res<(Tensor, Tensor)> {
    let mut s: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    };
    let x: Vec<f32> = (0..GLOBAL_BATCH * IN).map(|_| next()).collect();
    let y: Vec<f32> = (0..GLOBAL_BATCH).map(|_| next()).collect();
    Ok((Tensor::from_slice(&x, &[GLOBAL_BATCH as i64, IN as i64])?, Tensor::from_slice(&y, &[GLOBAL_BATCH as i64, 1])?))
}

/// The MLP, its initial weights from the seed.
fn model() -> Res<Module> {
    ctorch::manual_seed(SEED);
    let (l1, act, l2) = (Module::new("Linear", "4, 8")?, Module::new("Tanh", "")?, Module::new("Linear", "8, 1")?);
    Ok(Sequential::new(&[&l1, &act, &l2])?)
}

/// The model's call on one input (its own forward, or a wrapper's).
type Forward<'f> = &'f dyn Fn(&Tensor) -> ctorch::Result<Tensor>;

/// STEPS steps of SGD on (x, y); with a group, gradients averaged over it after backward.
fn train(net: &Module, x: &Tensor, y: &Tensor, group: Option<&dist::ProcessGroup>) -> Res<f64> {
    train_with(net, &|x| net.forward(x), x, y, group)
}

/// [`train`] with `forward` as the model's call.
fn train_with(net: &Module, forward: Forward, x: &Tensor, y: &Tensor, group: Option<&dist::ProcessGroup>)
              -> Res<f64> {
    let params = net.parameters()?;
    let opt = Optimizer::sgd(&params, LR, 0.0)?;
    let mut loss_value = 0.0;
    for _ in 0..STEPS {
        opt.zero_grad(true)?;
        let loss = forward(x)?.mse_loss(y)?;
        loss.backward()?;
        if let Some(pg) = group {
            pg.average_gradients(&params)?;
        }
        opt.step()?;
        loss_value = loss.item()?;
    }
    Ok(loss_value)
}

/// Every parameter's values, in order, as one vector.
fn flat(net: &Module) -> Res<Vec<f32>> {
    let mut v = Vec::new();
    for p in net.parameters()? {
        v.extend(p.detach()?.to_vec::<f32>()?);
    }
    Ok(v)
}

/// Every parameter's gradient, in order, as one vector (zeros for none).
fn grads(net: &Module) -> Res<Vec<f32>> {
    let mut v = Vec::new();
    for p in net.parameters()? {
        match p.grad()? {
            Some(g) => v.extend(g.to_vec::<f32>()?),
            None => v.extend(vec![0f32; p.detach()?.to_vec::<f32>()?.len()]),
        }
    }
    Ok(v)
}

/// The backward of the mean squared error of forward(x) against y.
fn backward(forward: Forward, x: &Tensor, y: &Tensor) -> Res<()> {
    Ok(forward(x)?.mse_loss(y)?.backward()?)
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(p, q)| (p - q).abs()).fold(0f32, f32::max)
}

/// DistributedDataParallel against the average_gradients run (`avg`: its final
/// parameters) on the same model, data (this rank's rows) and initial parameters.
fn check_ddp(pg: &dist::ProcessGroup, avg: &[f32], xs: &Tensor, ys: &Tensor) -> Res<()> {
    let r = pg.rank();
    let net = model()?;
    let ddp = DistributedDataParallel::new(&net, pg, &DdpOptions::default())?;
    train_with(&net, &|x| ddp.forward(x), xs, ys, None)?;
    let got = flat(&net)?;
    let same = got.len() == avg.len() && got.iter().zip(avg).all(|(a, b)| a.to_bits() == b.to_bits());
    check(same, format!("rank {r}: DistributedDataParallel's parameters differ from average_gradients' \
                         (max |difference| {:e})", max_diff(&got, avg)))?;
    let buckets = ddp.bucket_count()?;
    check(buckets >= 1, format!("rank {r}: {buckets} buckets"))?;
    let mut held = 0;
    for b in 0..buckets {
        held += ddp.bucket_indices(b)?.len();
    }
    let n_params = net.parameters()?.len();
    check(held == n_params, format!("rank {r}: the buckets hold {held} parameters, the model {n_params}"))?;

    // Gradient accumulation: two micro-batches of this rank's rows, the first under no_sync.
    let q = xs.size()[0] / 2;
    let (x1, y1, x2, y2) = (xs.narrow(0, 0, q)?, ys.narrow(0, 0, q)?, xs.narrow(0, q, q)?, ys.narrow(0, q, q)?);
    let (plain, wrapped): (Forward, Forward) = (&|x| net.forward(x), &|x| ddp.forward(x));
    ctorch::capi::nn_module_zero_grad(&net, true)?;
    backward(plain, &x1, &y1)?;
    let local = grads(&net)?;
    let mut synced = Vec::new();
    for (x, y) in [(&x1, &y1), (&x2, &y2)] {
        ctorch::capi::nn_module_zero_grad(&net, true)?;
        backward(wrapped, x, y)?;
        synced.push(grads(&net)?);
    }
    check(local != synced[0], format!("rank {r}: the synchronised gradient is the local one: nothing averaged"))?;
    ctorch::capi::nn_module_zero_grad(&net, true)?;
    ddp.no_sync(|| backward(wrapped, &x1, &y1))?;
    let under = grads(&net)?;
    check(under.iter().zip(&local).all(|(a, b)| a.to_bits() == b.to_bits()),
          format!("rank {r}: under no_sync the gradient is not the local one (max |difference| {:e})",
                  max_diff(&under, &local)))?;
    backward(wrapped, &x2, &y2)?;
    let sum: Vec<f32> = synced[0].iter().zip(&synced[1]).map(|(a, b)| a + b).collect();
    let diff = max_diff(&grads(&net)?, &sum);
    check(diff <= 1e-6, format!("rank {r}: the accumulated gradient vs the sum of the two micro-batches' \
                                 synchronised gradients: max |difference| {diff:e} > 1e-6"))?;
    println!("rank {r}: DistributedDataParallel: {STEPS} steps bit-identical to average_gradients, \
              buckets: {buckets}; accumulation under no_sync max |difference| {diff:e}");
    Ok(())
}

fn check(ok: bool, what: String) -> Res<()> {
    if ok { Ok(()) } else { Err(what.into()) }
}

fn collectives(pg: &dist::ProcessGroup) -> Res<()> {
    let (r, n) = (pg.rank(), pg.world_size());
    let t = Tensor::from_slice(&[r as f32 + 1.0], &[1])?;
    pg.all_reduce(&t, ReduceOp::SUM)?;
    let want = (n * (n + 1) / 2) as f32;
    check(t.to_vec::<f32>()? == [want], format!("all_reduce of rank + 1 gave {:?}, not [{want}]", t.to_vec::<f32>()?))?;
    let b = Tensor::from_slice(&[r as f32 * 10.0 + 5.0], &[1])?;
    pg.broadcast(&b, 0)?;
    check(b.to_vec::<f32>()? == [5.0], format!("broadcast from 0 gave {:?}", b.to_vec::<f32>()?))?;
    let outs = (0..n).map(|_| Tensor::from_slice(&[0i64], &[1])).collect::<ctorch::Result<Vec<_>>>()?;
    pg.all_gather(&outs, &Tensor::from_slice(&[r as i64], &[1])?)?;
    for (i, o) in outs.iter().enumerate() {
        check(o.to_vec::<i64>()? == [i as i64], format!("all_gather[{i}] = {:?}", o.to_vec::<i64>()?))?;
    }
    if n >= 2 && r < 2 {
        let m = Tensor::from_slice(&[0f64; 3], &[3])?;
        if r == 0 {
            pg.send(&Tensor::from_slice(&[1.5f64, 2.5, 3.5], &[3])?, 1, 7)?;
        } else {
            pg.recv(&m, 0, 7)?;
            check(m.to_vec::<f64>()? == [1.5, 2.5, 3.5], format!("recv from 0 gave {:?}", m.to_vec::<f64>()?))?;
        }
    }
    match pg.broadcast(&b, n) {
        Err(e) => check(e.message.contains("src"), format!("broadcast from rank {n}: the error names no src: {e}"))?,
        Ok(()) => return Err(format!("broadcast from rank {n} of {n} succeeded").into()),
    }
    pg.barrier()?;
    println!("rank {r}: all_reduce of rank + 1 = {want}, broadcast, all_gather, send/recv, barrier ok");
    Ok(())
}

fn run() -> Res<()> {
    if std::env::args().any(|a| a == "--build-only") {
        return Ok(());
    }
    ctorch::set_num_threads(1)?;
    let pg = dist::init_process_group("gloo", Some(Duration::from_secs(60)))?;
    let (r, n) = (pg.rank(), pg.world_size());
    check(pg.backend()? == "gloo", format!("backend {}", pg.backend()?))?;
    check(GLOBAL_BATCH % n == 0, format!("{n} ranks do not divide the global batch of {GLOBAL_BATCH}"))?;
    collectives(&pg)?;

    let (x, y) = global_batch()?;
    let share = (GLOBAL_BATCH / n) as i64;
    let (xs, ys) = (x.narrow(0, r as i64 * share, share)?, y.narrow(0, r as i64 * share, share)?);
    let net = model()?;
    pg.broadcast_parameters(&net.parameters()?, 0)?;
    let loss = train(&net, &xs, &ys, Some(&pg))?;
    let mine = flat(&net)?;

    // (a) Every rank's parameters, gathered, bit for bit those of rank 0.
    let gathered = pg.all_gather_new(&Tensor::from_slice(&mine, &[mine.len() as i64])?)?;
    for (i, g) in gathered.iter().enumerate() {
        let theirs = g.to_vec::<f32>()?;
        let same = theirs.len() == mine.len() && theirs.iter().zip(&mine).all(|(a, b)| a.to_bits() == b.to_bits());
        check(same, format!("rank {r}: rank {i}'s parameters differ from this rank's"))?;
    }
    println!("rank {r}: {STEPS} steps on {share} of {GLOBAL_BATCH} rows, last local loss {loss:.6}; \
              {} parameters bit-identical on all {n} ranks", mine.len());

    // (b) On rank 0: one process on the whole global batch.
    if r == 0 {
        let single = model()?;
        let single_loss = train(&single, &x, &y, None)?;
        let want = flat(&single)?;
        let diff = want.iter().zip(&mine).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
        check(diff <= 1e-5, format!("max |data parallel - single process| = {diff:e} > 1e-5"))?;
        let moved = want.iter().zip(&flat(&model()?)?).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
        check(moved > 1e-3, format!("training moved the parameters by only {moved:e}"))?;
        println!("rank 0: single process on {GLOBAL_BATCH} rows (last loss {single_loss:.6}): \
                  max |difference| {diff:e} <= 1e-5 (training moved them by up to {moved:.4})");
    }
    check_ddp(&pg, &mine, &xs, &ys)?;
    pg.barrier()?;
    pg.destroy()?;
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("FAIL: {e}");
        std::process::exit(1);
    }
}
