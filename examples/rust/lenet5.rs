//! LeNet-5 on Fashion-MNIST, one epoch: examples/lenet5.c in Rust, safe code only.
//! The same seed gives the C program's output and weights bit for bit
//! (tests/bindings/go_lenet5_twin.py); the last line's accuracies are those of the
//! saved weights loaded into a fresh model.
use ctorch::{nn::Sequential, optim::Optimizer, DType, DataLoader, Scalar, Tensor};

// Named children: the state-dict keys of lenet5.c and lenet5.py (conv1.weight, ...).
const LENET5: [(&str, &str, &str); 12] = [("conv1", "Conv2d", "1, 6, 5"), ("relu1", "ReLU", ""),
    ("pool1", "MaxPool2d", "2"), ("conv2", "Conv2d", "6, 16, 5"), ("relu2", "ReLU", ""), ("pool2", "MaxPool2d", "2"),
    ("flatten", "Flatten", ""), ("fc1", "Linear", "256, 120"), ("relu3", "ReLU", ""), ("fc2", "Linear", "120, 84"),
    ("relu4", "ReLU", ""), ("fc3", "Linear", "84, 10")];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let arg = |k: &str, d: &str| std::env::args().skip_while(|a| a != k).nth(1).unwrap_or(d.into());
    let (dir, save) = (arg("--data", "/usr/share/datasets/fashion-mnist"), arg("--save", "lenet5.pt"));
    let seed: u64 = arg("--seed", "1").parse()?;
    let ((train_img, train_y), (test_img, test_y)) = (ctorch::read_mnist(&dir, true)?, ctorch::read_mnist(&dir, false)?);
    let scaled = |img: &Tensor| img.to_dtype(DType::FLOAT32)?.div_Scalar(Scalar::Float(255.0));
    // Standardised with the training set's mean and (unbiased) std, as lenet5.c.
    let (mean, std) = (scaled(&train_img)?.mean()?, scaled(&train_img)?.std()?);
    let prep = |img: &Tensor| scaled(img)?.sub(&mean)?.div(&std)?.reshape(&[-1, 1, 28, 28]);
    let mut train = DataLoader::new(&prep(&train_img)?, Some(&train_y), 256, true, seed, false)?;
    let mut test = DataLoader::new(&prep(&test_img)?, Some(&test_y), 1000, false, 0, false)?;
    ctorch::manual_seed(seed);
    let net = Sequential::named(&LENET5)?;
    let opt = Optimizer::adamw(&net.parameters()?, 1e-3)?; // weight decay 0.01, torch's default
    println!("LeNet-5 on Fashion-MNIST ({} training images), 1 epoch(s), batch 256, {} thread(s), seed {seed}",
             train_y.numel(), ctorch::capi::get_num_threads()?);
    let (t0, mut loss_sum, mut correct, mut seen) = (std::time::Instant::now(), 0.0, 0, 0);
    for batch in train.epoch(0)? {
        let (x, y) = batch?;
        let logits = net.forward(&x)?;
        let loss = logits.cross_entropy_loss(&y)?;
        opt.backward_step(&loss)?;
        (loss_sum, seen) = (loss_sum + loss.item()? * y.numel() as f64, seen + y.numel());
        correct += logits.top_k_hits(&y, 1)?;
    }
    let (dt, acc) = (t0.elapsed().as_secs_f64(), net.top_k_accuracy(&mut test, &[1, 5])?); // dt: training only
    println!("epoch 1/1 loss={:.4} train_acc={:.4} test_acc={:.4} top5={:.4} images_per_s={:.1} time={dt:.1}s",
             loss_sum / seen as f64, correct as f64 / seen as f64, acc[0], acc[1], seen as f64 / dt);
    net.save(&save)?;
    println!("saved weights to {save}");
    let again = Sequential::named(&LENET5)?;
    again.load(&save)?;
    let acc = again.top_k_accuracy(&mut test, &[1, 5])?; // the reloaded weights: the last line must be lenet5.c's
    println!("test_accuracy={:.4} top5={:.4} images_per_s={:.1}", acc[0], acc[1], seen as f64 / dt);
    Ok(())
}
