// A short LeNet-5 training with the Rust binding's module builders (the
// architecture of examples/lenet5.py, in an nn::Sequential): 30 AdamW steps
// of 256 Fashion-MNIST images, then the test accuracy, which must be well
// above chance, and the loss must fall. Run by run_cargo.sh from a fresh
// cargo project that depends on the packaged crates.
// Usage: lenet5 DATA_DIR
use ctorch::nn::{self, Module};
use ctorch::optim::Optimizer;
use ctorch::{ops, DType, Reduction, Result, Tensor};

const STEPS: i64 = 30;
const BATCH: i64 = 256;

fn prepare(dir: &str, train: bool) -> Result<(Tensor, Tensor)> {
    let (images, labels) = ctorch::read_mnist(dir, train)?;
    let x = ops::reshape(&images.to_dtype(DType::FLOAT32)?, &[-1, 1, 28, 28])?;
    let x = &(&(&x / 255.0) - 0.2860) / 0.3530;
    Ok((x, labels))
}

fn lenet5() -> Result<Module> {
    let layers = [
        nn::Conv2d::new(1, 6, 5).build()?,
        nn::ReLU::new().build()?,
        nn::MaxPool2d::new(2).build()?,
        nn::Conv2d::new(6, 16, 5).build()?,
        nn::ReLU::new().build()?,
        nn::MaxPool2d::new(2).build()?,
        nn::Flatten::new().build()?,
        nn::Linear::new(256, 120).build()?,
        nn::ReLU::new().build()?,
        nn::Linear::new(120, 84).build()?,
        nn::ReLU::new().build()?,
        nn::Linear::new(84, 10).build()?,
    ];
    nn::Sequential::new(&layers.iter().collect::<Vec<_>>())
}

fn main() -> Result<()> {
    let dir = std::env::args().nth(1).expect("usage: lenet5 DATA_DIR");
    ctorch::manual_seed(0);
    let (x_train, y_train) = prepare(&dir, true)?;
    let (x_test, y_test) = prepare(&dir, false)?;
    let model = lenet5()?;
    let opt = Optimizer::adamw(&model.parameters()?, 2e-3)?;
    let perm = ops::randperm(x_train.size()[0], Some(DType::INT64), None, None, None)?;
    let (mut first, mut last) = (0.0, 0.0);
    for step in 0..STEPS {
        let idx = ops::narrow(&perm, 0, step * BATCH, BATCH)?;
        let (x, y) = (ops::index_select(&x_train, 0, &idx)?, ops::index_select(&y_train, 0, &idx)?);
        let loss = ops::cross_entropy_loss(&model.forward(&x)?, &y, None, Reduction::MEAN, -100, 0.0)?;
        opt.zero_grad(true)?;
        loss.backward()?;
        opt.step()?;
        last = loss.item()?;
        if step == 0 {
            first = last;
        }
    }
    model.eval()?;
    let accuracy = ctorch::no_grad(|| -> Result<f64> {
        let pred = ops::argmax(&model.forward(&x_test)?, Some(1), false)?;
        ops::mean(&ops::eq_Tensor(&pred, &y_test)?.to_dtype(DType::FLOAT32)?, None)?.item()
    })?;
    // The test loss through LogSoftmax (a module) and nll_loss: a second path through the binding.
    let logp = nn::LogSoftmax::new().dim(1).build()?.forward(&ctorch::no_grad(|| model.forward(&x_test))?)?;
    let check = ops::nll_loss(&logp, &y_test, None, Reduction::MEAN, -100)?.item()?;
    println!("LeNet-5 (Rust, nn builders): {STEPS} steps, loss {first:.4} -> {last:.4}, test accuracy {:.2}%, \
              test loss {check:.4}", accuracy * 100.0);
    if !(last < first) || accuracy < 0.5 || !check.is_finite() {
        eprintln!("FAIL: the loss did not fall or the accuracy is not above 50%");
        std::process::exit(1);
    }
    Ok(())
}
