//! The tch-rs side of bench/peers/run: the same work as bench/peers/ops.cpp
//! (per call) and bench/train_*.c|cpp|py (a LeNet-5 training step), written
//! as a tch user writes it (tch's own Tensor methods, nn modules and
//! optimizer), printing the same numbers as the other sides.
//!   peers-tch ops ITERS ROUNDS     -> JSON {"op_<case>_tch": {"median","min","max"}} (ns per call)
//!   peers-tch lenet STEPS THREADS zero|none  -> "<img/s whole run> <img/s at the median step>"
//!     zero: the gradients are zeroed each step, as bench/train_*'s default;
//!     none: tch's own zero_grad (libtorch's Optimizer::zero_grad(), which
//!     sets them to None on 2.x).
use std::time::Instant;
use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Reduction, Tensor};

fn time_loop(f: &dyn Fn(&Tensor, &Tensor) -> Tensor, a: &Tensor, b: &Tensor, n: usize) -> f64 {
    let t0 = Instant::now();
    for _ in 0..n {
        // The result is dropped at once (at_free), as a binding's temporary is.
        let _r = f(a, b);
    }
    t0.elapsed().as_secs_f64() * 1e9 / n as f64
}

fn stats(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(|x, y| x.partial_cmp(y).unwrap());
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

fn ops(iters: usize, rounds: usize) {
    tch::set_num_threads(1);
    let one = (Tensor::ones([1], (Kind::Float, Device::Cpu)), Tensor::ones([1], (Kind::Float, Device::Cpu)));
    let one_mm = (Tensor::ones([1, 1], (Kind::Float, Device::Cpu)), Tensor::ones([1, 1], (Kind::Float, Device::Cpu)));
    let sq = (Tensor::ones([64, 64], (Kind::Float, Device::Cpu)), Tensor::ones([64, 64], (Kind::Float, Device::Cpu)));
    type Op = fn(&Tensor, &Tensor) -> Tensor;
    let add: Op = |a, b| a.g_add(b);
    let mul: Op = |a, b| a.g_mul(b);
    let relu: Op = |a, _| a.relu();
    let mm: Op = |a, b| a.matmul(b);
    // Same names, tensors and calls per loop as bench/peers/ops.cpp and ops.py.
    let cases: Vec<(&str, Op, &(Tensor, Tensor), usize)> = vec![
        ("add_1", add, &one, iters),
        ("mul_1", mul, &one, iters),
        ("relu_1", relu, &one, iters),
        ("matmul_1", mm, &one_mm, iters),
        ("add_64x64", add, &sq, iters / 2),
        ("mul_64x64", mul, &sq, iters / 2),
        ("relu_64x64", relu, &sq, iters / 2),
        ("matmul_64x64", mm, &sq, iters / 20),
    ];
    for (_, f, t, n) in &cases {
        time_loop(f, &t.0, &t.1, n / 10 + 1);
    }
    let mut samples = vec![Vec::new(); cases.len()];
    for _ in 0..rounds {
        for (k, (_, f, t, n)) in cases.iter().enumerate() {
            samples[k].push(time_loop(f, &t.0, &t.1, *n));
        }
    }
    let rows: Vec<String> = cases
        .iter()
        .zip(samples)
        .map(|((name, ..), s)| {
            let (med, min, max) = stats(s);
            format!("  \"op_{name}_tch\": {{\"median\": {med:.4}, \"min\": {min:.4}, \"max\": {max:.4}}}")
        })
        .collect();
    println!("{{\n{}\n}}", rows.join(",\n"));
}

// LeNet-5 as bench/lenet_cpp.h and examples/lenet5.py: conv(6,k5) relu pool2,
// conv(16,k5) relu pool2, flatten, 120 relu, 84 relu, 10.
fn lenet(steps: usize, threads: i32, set_to_none: bool) {
    tch::set_num_threads(threads);
    tch::manual_seed(0);
    let vs = nn::VarStore::new(Device::Cpu);
    let root = vs.root();
    let conv1 = nn::conv2d(&root / "conv1", 1, 6, 5, Default::default());
    let conv2 = nn::conv2d(&root / "conv2", 6, 16, 5, Default::default());
    let fc1 = nn::linear(&root / "fc1", 256, 120, Default::default());
    let fc2 = nn::linear(&root / "fc2", 120, 84, Default::default());
    let fc3 = nn::linear(&root / "fc3", 84, 10, Default::default());
    let net = nn::func(move |x| {
        let x = conv1.forward(x).relu().max_pool2d_default(2);
        let x = conv2.forward(&x).relu().max_pool2d_default(2);
        let x = x.flatten(1, -1);
        let x = fc1.forward(&x).relu();
        let x = fc2.forward(&x).relu();
        fc3.forward(&x)
    });
    // tch's AdamW defaults are PyTorch's (betas 0.9/0.999, eps 1e-8, weight decay 0.01).
    let mut opt = nn::AdamW::default().build(&vs, 1e-3).unwrap();
    let x = Tensor::randn([256, 1, 28, 28], (Kind::Float, Device::Cpu));
    let y = Tensor::randint(10, [256], (Kind::Int64, Device::Cpu));
    let vars = vs.trainable_variables();
    let mut step = || {
        let loss = net.forward(&x).cross_entropy_loss::<Tensor>(&y, None, Reduction::Mean, -100, 0.0);
        if set_to_none {
            opt.backward_step(&loss); // zero_grad (to None), backward, step
        } else {
            // tch has no zero_grad(set_to_none=false): zero each gradient by
            // hand, as torch::optim's zero_grad(false) does.
            for v in &vars {
                let mut g = v.grad();
                if g.defined() {
                    let _ = g.zero_();
                }
            }
            loss.backward();
            opt.step();
        }
    };
    for _ in 0..5 {
        step();
    }
    let mut dt = Vec::with_capacity(steps);
    let t0 = Instant::now();
    for _ in 0..steps {
        let ts = Instant::now();
        step();
        dt.push(ts.elapsed().as_secs_f64());
    }
    let total = t0.elapsed().as_secs_f64();
    let (med, _, _) = stats(dt);
    println!("{:.3} {:.3}", 256.0 * steps as f64 / total, 256.0 / med);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let num = |i: usize| -> usize { args.get(i).and_then(|s| s.parse().ok()).unwrap_or_else(|| usage()) };
    match args.get(1).map(String::as_str) {
        Some("ops") => ops(num(2), num(3)),
        Some("lenet") => match args.get(4).map(String::as_str) {
            Some("zero") => lenet(num(2), num(3) as i32, false),
            Some("none") => lenet(num(2), num(3) as i32, true),
            _ => usage(),
        },
        _ => usage(),
    }
}

fn usage() -> ! {
    eprintln!("usage: peers-tch ops ITERS ROUNDS | lenet STEPS THREADS zero|none");
    std::process::exit(2)
}
