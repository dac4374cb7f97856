//! examples/classify_image.c in Rust: one image through torchvision's eval
//! transforms and a ResNet-18 loaded from a state dict Python saved, printing the
//! C program's lines bit for bit (tests/bindings/classify_image_twin.py).
//! The BasicBlocks are ModuleDicts (torchvision's state-dict keys); their forward is Rust.
//!
//! Usage: classify_image --image PATH --weights PATH [--antialias 0|1] [--threads T] [--logits PATH]
use ctorch::{capi, nn::Module, nn::Sequential, AutogradScopeKind, DType, ImageReadMode, Interpolation};
use ctorch::{MemoryFormat, Result, Tensor};

fn conv(cin: i64, cout: i64, k: i64, stride: i64, pad: i64) -> Result<Module> {
    Module::new("Conv2d", &format!("{cin}, {cout}, {k}, {stride}, {pad}, bias=False"))
}
fn bn(c: i64) -> Result<Module> { Module::new("BatchNorm2d", &c.to_string()) }

/// torchvision.models.resnet18's parameters and buffers (layers without any are ops in `forward`).
fn resnet18() -> Result<Module> {
    let net = Module::new("ModuleDict", "")?;
    net.register_module("conv1", &conv(3, 64, 7, 2, 3)?)?;
    net.register_module("bn1", &bn(64)?)?;
    let mut cin = 64;
    for (l, cout) in [64, 128, 256, 512].into_iter().enumerate() {
        let layer = Module::new("Sequential", "")?;
        for _ in 0..2 {
            let stride = cout / cin; // 2 where the channels double: the first block of layer2..4
            let block = Module::new("ModuleDict", "")?;
            block.register_module("conv1", &conv(cin, cout, 3, stride, 1)?)?;
            block.register_module("bn1", &bn(cout)?)?;
            block.register_module("conv2", &conv(cout, cout, 3, 1, 1)?)?;
            block.register_module("bn2", &bn(cout)?)?;
            if cin != cout {
                block.register_module("downsample", &Sequential::new(&[&conv(cin, cout, 1, stride, 0)?, &bn(cout)?])?)?;
            }
            layer.push(&block)?;
            cin = cout;
        }
        net.register_module(&format!("layer{}", l + 1), &layer)?;
    }
    net.register_module("fc", &Module::new("Linear", "512, 1000")?)?;
    Ok(net)
}

/// resnet18's forward; a BasicBlock is relu(bn2(conv2(relu(bn1(conv1(x))))) + downsample(x) or x).
fn forward(net: &Module, x: &Tensor) -> Result<Tensor> {
    let f = |path: &str, x: &Tensor| net.forward_child(path, x);
    let mut x = f("bn1", &f("conv1", x)?)?.relu()?;
    x = ctorch::ops::max_pool2d(&x, &[3, 3], &[2, 2], &[1, 1], &[1, 1], false)?;
    for l in 1..=4 {
        for b in 0..2 {
            let p = |name: &str| format!("layer{l}.{b}.{name}");
            let y = f(&p("bn1"), &f(&p("conv1"), &x)?)?.relu()?;
            let y = f(&p("bn2"), &f(&p("conv2"), &y)?)?;
            let identity = if l > 1 && b == 0 { f(&p("downsample"), &x)? } else { x };
            x = y.add(&identity)?.relu()?;
        }
    }
    f("fc", &ctorch::ops::flatten_using_ints(&x.adaptive_avg_pool2d(&[1, 1])?, 1, -1)?)
}

/// C's printf("%.9g") of a float: 9 significant digits, trailing zeros dropped.
fn g9(v: f32) -> String {
    let trim = |s: &str| if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s.into() };
    let e = format!("{:.8e}", v as f64); // the exponent after rounding to 9 digits decides, as in C
    let x: i32 = e.split_once('e').map_or(0, |(_, x)| x.parse().unwrap_or(0));
    if (-4..9).contains(&x) { return trim(&format!("{:.*}", (8 - x) as usize, v as f64)); }
    format!("{}e{}{:02}", trim(&e[..e.find('e').unwrap_or(0)]), if x < 0 { '-' } else { '+' }, x.abs())
}

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let arg = |k: &str| std::env::args().skip_while(|a| a != k).nth(1);
    let (Some(image), Some(weights)) = (arg("--image"), arg("--weights")) else {
        eprintln!("usage: classify_image --image PATH --weights PATH [--antialias 0|1] [--threads T] [--logits PATH]");
        std::process::exit(2)
    };
    let (antialias, threads): (i32, i32) = (arg("--antialias").map_or(Ok(1), |s| s.parse())?, arg("--threads").map_or(Ok(0), |s| s.parse())?);
    if threads > 0 {
        ctorch::set_num_threads(threads)?;
    }
    let img = capi::image_read(&image, ImageReadMode::RGB)?;
    // The decoder's pixels stay channels last (as read_image keeps them): the resize rounds alike.
    let batch = ctorch::ops::contiguous(&img.unsqueeze(0)?, MemoryFormat::CHANNELS_LAST)?;
    let (mean, std) = (Tensor::from_slice(&[0.485, 0.456, 0.406], &[3])?, Tensor::from_slice(&[0.229, 0.224, 0.225], &[3])?);
    let steps = [
        capi::transform_resize(&[256], Interpolation::BILINEAR, 0, antialias != 0)?,
        capi::transform_center_crop(224, 224)?,
        capi::transform_convert_image_dtype(DType::FLOAT32)?,
        capi::transform_normalize(&mean, &std)?,
    ];
    let x = capi::transform_apply(&capi::transform_compose(&steps.iter().collect::<Vec<_>>())?, &batch, None)?;
    let net = resnet18()?;
    net.load(&weights)?;
    net.eval()?;
    let inference = capi::autograd_scope_enter(AutogradScopeKind::INFERENCE_MODE)?;
    let logits = forward(&net, &x)?;
    let probs = logits.softmax(1)?;
    let top = probs.topk(5)?.1.to_vec::<i64>()?;
    drop(inference);
    let (logits, probs, shape) = (logits.to_vec::<f32>()?, probs.to_vec::<f32>()?, img.size());
    println!("resnet18 on {image} ({}x{}), antialias {antialias}", shape[1], shape[2]);
    for (rank, &c) in top.iter().enumerate() {
        println!("rank={} class={c} prob={} logit={}", rank + 1, g9(probs[c as usize]), g9(logits[c as usize]));
    }
    if let Some(path) = arg("--logits") {
        std::fs::write(path, logits.iter().map(|&v| g9(v) + "\n").collect::<String>())?;
    }
    Ok(())
}
