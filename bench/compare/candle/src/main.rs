//! candle timing for bench/compare/run.
//!
//!   ctorch-compare-candle bert   DIR  INPUTS ITERS OUT.safetensors
//!   ctorch-compare-candle resnet FILE INPUTS ITERS OUT.safetensors
//!
//! INPUTS is compare.py's safetensors file of the model's inputs (in0, in1,
//! ...), the same every way reads, so outputs compare element by element. Threads:
//! candle's CPU kernels follow RAYON_NUM_THREADS (set by the driver). Prints
//! one line `ms=<t1>,<t2>,...` (per-call wall times) and writes the output
//! of the last call to OUT.
use anyhow::{bail, Result};
use candle_core::{DType, Device, Module, Tensor};
use candle_nn::VarBuilder;
use std::time::Instant;

fn time<F: FnMut() -> Result<Tensor>>(iters: usize, mut f: F) -> Result<(Vec<f64>, Tensor)> {
    let mut out = f()?; // warm-up
    let mut ms = Vec::new();
    for _ in 0..iters {
        let t0 = Instant::now();
        out = f()?;
        ms.push(t0.elapsed().as_secs_f64() * 1e3);
    }
    Ok((ms, out))
}

fn main() -> Result<()> {
    let a: Vec<String> = std::env::args().collect();
    let dev = Device::Cpu;
    if a.len() != 6 {
        bail!("usage: bert DIR INPUTS ITERS OUT | resnet FILE INPUTS ITERS OUT");
    }
    let inputs = candle_core::safetensors::load(&a[3], &dev)?;
    let iters = a[4].parse::<usize>()?;
    let (ms, out) = match a[1].as_str() {
        "bert" => {
            use candle_transformers::models::bert::{BertModel, Config};
            let dir = &a[2];
            let config: Config = serde_json::from_str(&std::fs::read_to_string(format!("{dir}/config.json"))?)?;
            let vb = unsafe { VarBuilder::from_mmaped_safetensors(&[format!("{dir}/model.safetensors")], DType::F32, &dev)? };
            let model = BertModel::load(vb, &config)?;
            // ids, mask, token types as compare.py orders them (int64 there; u32 here, candle's index type).
            let ids = inputs["in0"].to_dtype(DType::U32)?;
            let mask = inputs["in1"].to_dtype(DType::U32)?;
            let types = inputs["in2"].to_dtype(DType::U32)?;
            time(iters, || Ok(model.forward(&ids, &types, Some(&mask))?))?
        }
        "resnet" => {
            let vb = unsafe { VarBuilder::from_mmaped_safetensors(&[&a[2]], DType::F32, &dev)? };
            let model = candle_transformers::models::resnet::resnet50(1000, vb)?;
            let x = inputs["in0"].clone();
            time(iters, || Ok(model.forward(&x)?))?
        }
        m => bail!("unknown model {m}"),
    };
    let path = a.last().unwrap();
    out.save_safetensors("out", path)?;
    println!("ms={}", ms.iter().map(|m| format!("{m:.3}")).collect::<Vec<_>>().join(","));
    Ok(())
}
